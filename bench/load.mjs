// Load to connected (part of `npm run bench`, or alone: node bench/load.mjs after `npm run build`): a host page on
// 127.0.0.1 and its app in an iframe on localhost (two origins), each loading the built package, from navigation
// start to the first call answered. Three variants, each loaded cold (a fresh browser context, no cache) LOADS
// times (default 11), the order rotated every round: the role builds (abp-wasm/agent in the host, abp-wasm/app in
// the iframe), the full package on both sides, and the floor: the same two pages with a hand-written postMessage
// handshake and no library. Prints medians: the host's init() end, the app's init() end (on its own page's
// clock), connected (AbpClient.connect resolved; for the floor, the app's first answer), all in ms since the
// host's navigation start.
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const loads = Math.max(1, Number(process.env.LOADS ?? 11));
const server = await serve(0);
const { port } = server.address();
const appOrigin = `http://localhost:${port}`;
const variants = {
  'role builds (agent + app)': `http://127.0.0.1:${port}/bench/load/host.html?build=role&app=${appOrigin}`,
  'full package on both sides': `http://127.0.0.1:${port}/bench/load/host.html?build=full&app=${appOrigin}`,
  'hand-written postMessage (floor)': `http://127.0.0.1:${port}/bench/load/hand-host.html?app=${appOrigin}`,
};
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const median = (xs) => { const s = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
const names = Object.keys(variants);
const seen = Object.fromEntries(names.map((n) => [n, []]));
try {
  for (let round = 0; round < loads; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const name of order) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(variants[name]);
      await page.waitForFunction(() => window.times, null, { timeout: 30000 });
      const t = await page.evaluate(() => ({ ...window.times, appInit: window.appInit }));
      if (errors.length) throw new Error(`${name}: ${errors.join('; ')}`);
      seen[name].push(t);
      await context.close();
    }
  }
  const floor = median(seen[names[2]].map((t) => t.connected));
  console.log(`load to connected, two origins, ${loads} cold loads each (Chromium ${browser.version()}), medians in ms since the host's navigation start`);
  console.log('| variant | host init() done | app init() done (its clock) | connected | × floor |\n|---|---|---|---|---|');
  for (const name of names) {
    const xs = seen[name];
    const c = median(xs.map((t) => t.connected));
    const f = (v) => (Number.isNaN(v) ? '—' : v.toFixed(1));
    console.log(`| ${name} | ${f(median(xs.map((t) => t.init)))} | ${f(median(xs.map((t) => t.appInit)))} | ${f(c)} | ${(c / floor).toFixed(2)}× |`);
  }
} finally {
  await browser.close();
  server.close();
}
