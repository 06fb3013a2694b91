// Checks that connecting to an app in a cross-origin iframe leaves the browser console clean. The agent re-sends
// `initialize` until the app answers; while the frame still holds its first `about:blank` (same origin as the host
// page), a message to the app's origin is dropped and Chromium logs "Failed to execute 'postMessage' … does not
// match the recipient window's origin" for each one. Page scripts cannot see those messages, so this drives the
// demo host page (www/index.html: agent on 127.0.0.1, app on localhost) from Node and listens to the console,
// with the app page held back 800 ms so that many re-sends fall in the about:blank window.
// Chromium only: playwright-core cannot drive Firefox here. Needs `npm run build` first (pkg/).
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const HOLD_MS = 800;
const server = await serve(0);
const { port } = server.address();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const fail = (msg) => { throw new Error(`console-check: ${msg}`); };
try {
  const page = await browser.newPage();
  const logged = [];
  // Everything the console shows: console.* calls and the browser's own entries (Log domain), from every frame.
  page.on('console', (m) => logged.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => logged.push(`uncaught: ${e}`));
  const cdp = await page.context().newCDPSession(page);
  cdp.on('Log.entryAdded', ({ entry }) => logged.push(`log ${entry.level} (${entry.source}): ${entry.text}`));
  await cdp.send('Log.enable');
  let held = 0;
  await page.route('**/www/app.html*', async (route) => {
    // Only the frame's navigation is held; the host page's discover() also fetches the page.
    if (route.request().resourceType() === 'document') {
      held++;
      await new Promise((r) => setTimeout(r, HOLD_MS));
    }
    await route.continue();
  });
  const t0 = Date.now();
  await page.goto(`http://127.0.0.1:${port}/www/`);
  await page.waitForSelector('#start:not([disabled])', { timeout: 15000 });
  const session = (await page.textContent('#session')).trim();
  console.log(`console-check: connected after ${Date.now() - t0} ms (${session}); the app page was held ${HOLD_MS} ms`);
  if (held !== 1) fail(`expected the app page to be loaded once, saw ${held}`);
  // Re-sends happen every 50 ms, so a clean console means none of them went to about:blank.
  const noise = logged.filter((l) => !/favicon\.ico/.test(l));
  if (noise.length) fail(`the console was not clean during connect:\n  ${noise.join('\n  ')}`);
  console.log('console-check: ok (Chromium; nothing logged while connecting)');
} finally {
  await browser.close();
  server.close();
}
