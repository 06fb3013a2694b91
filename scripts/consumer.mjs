// The consumer test: packs pkg/ (`npm pack`), installs the tarball into examples/vite-app (a web app outside
// the crate), bundles it with Vite, and drives the bundle in headless Chromium through a call and a
// cancellation. Needs `npm run build` first.
import { execSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const sh = (cmd, cwd = '.') => execSync(cmd, { cwd, stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim();
mkdirSync('target', { recursive: true });
const packed = sh('npm pack ./pkg --pack-destination target --silent').split('\n').pop();
copyFileSync(`target/${packed}`, 'target/abp-wasm.tgz');
console.log(`consumer: packed ${packed}`);
const app = 'examples/vite-app';
rmSync(`${app}/node_modules/abp-wasm`, { recursive: true, force: true });
rmSync(`${app}/package-lock.json`, { force: true });
sh('npm install --no-audit --no-fund --silent', app);
sh('node_modules/.bin/vite build --logLevel warn', app);
console.log('consumer: installed the tarball and bundled with Vite');

const server = await serve(0);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${server.address().port}/${app}/dist/index.html`);
  await page.waitForFunction(() => window.result, null, { timeout: 15000 });
  const result = await page.evaluate(() => window.result);
  const aborted = await page.frame({ url: /app\.html/ }).evaluate(() => window.abortedWith);
  console.log(`consumer: result ${JSON.stringify(result)}, app handler aborted with "${aborted}"`);
  if (result.sum !== 42 || result.cancelled !== true || result.code !== 'CANCELLED' || aborted !== 'stop' || errors.length) {
    throw new Error(`consumer test failed: ${JSON.stringify({ result, aborted, errors })}`);
  }
  console.log('consumer: ok');
} finally {
  await browser.close();
  server.close();
}
