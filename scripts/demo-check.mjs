// Drives the demo in headless Chromium the way a person would: opens the host page, starts the slow job,
// watches the progress bar move, clicks Stop, and checks that both sides saw the cancellation; then runs a
// short job to completion. Saves screenshots to target/demo-running.png and target/demo-stopped.png.
// Needs `npm run build` first (pkg/) and /usr/bin/chromium.
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const server = await serve(0);
const { port } = server.address();
const url = `http://127.0.0.1:${port}/www/`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    // The app offers its capability to the browser's own agents too (app.exposeWebMCP()).
    '--enable-features=WebMCP'],
});
const fail = (msg) => { throw new Error(`demo-check: ${msg}`); };
try {
  const page = await browser.newPage({ viewport: { width: 980, height: 560 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector('#start:not([disabled])', { timeout: 15000 });
  const session = await page.textContent('#session');
  console.log(`demo-check: connected (${session.trim()})`);

  // The app follows the ABP checklist: discover() finds its manifest, and the manifest served is the one the
  // app's registry makes (app.manifest()).
  await page.waitForFunction(() => window.discovered, null, { timeout: 10000 });
  const discovered = await page.evaluate(() => window.discovered);
  const made = await page.frame({ url: /app\.html/ }).evaluate(() => window.app.manifest());
  const canonical = (v) => JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x)
    ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x));
  if (!discovered.supported) fail(`discover() did not find the app's manifest: ${discovered.reason}`);
  if (canonical(discovered.manifest) !== canonical(made)) {
    fail(`www/abp.json differs from app.manifest():\n${canonical(discovered.manifest)}\n${canonical(made)}`);
  }
  console.log(`demo-check: discover() found ${discovered.manifestUrl}, the same manifest as app.manifest()`);

  await page.click('#start');
  await page.waitForFunction(() => document.getElementById('bar').value >= 5, null, { timeout: 10000 });
  mkdirSync('target', { recursive: true });
  await page.screenshot({ path: 'target/demo-running.png' });
  await page.click('#stop');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('cancelled'), null, { timeout: 5000 });
  const status = await page.textContent('#status');
  const app = page.frameLocator('#app');
  await app.locator('#state').filter({ hasText: 'stopped' }).waitFor({ timeout: 5000 });
  const appState = await app.locator('#state').textContent();
  await page.screenshot({ path: 'target/demo-stopped.png' });
  console.log(`demo-check: agent says "${status}"; app says "${appState}"`);
  if (!status.includes('CANCELLED')) fail(`expected CANCELLED, got ${status}`);
  if (!appState.includes('user clicked stop')) fail(`the app did not see the reason: ${appState}`);

  // The same capability, called by the browser's own WebMCP (document.modelContext) in the app's frame.
  const frame = page.frame({ url: /app\.html/ });
  await frame.evaluate(async () => {
    for (let t0 = Date.now(); Date.now() - t0 < 10000; await new Promise((r) => setTimeout(r, 20))) {
      if ((await document.modelContext.getTools()).some((t) => t.name === 'report.render')) return;
    }
    throw new Error('the tool report.render never appeared in document.modelContext.getTools()');
  });
  const viaWebMCP = await frame.evaluate(async () => {
    const tool = (await document.modelContext.getTools()).find((t) => t.name === 'report.render');
    return JSON.parse(await document.modelContext.executeTool(tool, { pages: 2 }));
  });
  if (viaWebMCP.structuredContent?.pages !== 2) fail(`WebMCP executeTool: ${JSON.stringify(viaWebMCP)}`);
  console.log(`demo-check: WebMCP executeTool(report.render) → ${viaWebMCP.content[0].text}`);

  await page.fill('#pages', '3');
  await page.click('#start');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('done'), null, { timeout: 10000 });
  console.log(`demo-check: short job: "${await page.textContent('#status')}"`);
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('demo-check: ok (screenshots in target/demo-running.png, target/demo-stopped.png)');
} finally {
  await browser.close();
  server.close();
}
