// Load to connected (part of `npm run bench`, or alone: node bench/load.mjs after `npm run build`): a host page on
// 127.0.0.1 and its app in an iframe on localhost (two origins), each loading the built package, from navigation
// start to connected. Four variants: the role builds (abp-wasm/agent in the host, abp-wasm/app in the iframe),
// the same with the README's preload hints (the module and its wasm fetched from the start, beside the HTML),
// the full package on both sides, and the floor: the same two pages with a hand-written postMessage handshake and
// no library. Each is loaded LOADS times (default 11) in two ways, the order rotated every round:
// - cold: a fresh browser context (empty HTTP cache, no compiled code cached), a new user;
// - warm: a fresh context that has loaded the same pages twice before, staying on the first a few seconds (the
//   server lets them be cached, so the JS and wasm come from the HTTP cache with V8's compiled code beside
//   them), a returning user.
// Prints medians in ms since the host's navigation start (the app's times moved onto the host's clock), and the
// parts of each side's load: its JS arrived, its wasm fetch started and ended, compiled, instantiated, init()
// done (the app: listening), connected; and the handshake: connected minus the later of the two sides' ready.
// Writes them to BENCHMARKS.md ("Load to connected"), except with LOAD_AB.
import { readFile, writeFile } from 'node:fs/promises';
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

// The timing shim runs in both pages (and the floor's) before their own scripts, without a request of its own.
const parts = await readFile(new URL('load/parts.js', import.meta.url), 'utf8');
const loads = Math.max(1, Number(process.env.LOADS ?? 11));
const server = await serve(0, { cache: true });
const { port } = server.address();
const appOrigin = `http://localhost:${port}`;
const variants = {
  'role builds (agent + app)': `http://127.0.0.1:${port}/bench/load/host.html?build=role&app=${appOrigin}`,
  'role builds, with the preload hints': `http://127.0.0.1:${port}/bench/load/host.html?build=role&hints=1&app=${appOrigin}`,
  'full package on both sides': `http://127.0.0.1:${port}/bench/load/host.html?build=full&app=${appOrigin}`,
  'hand-written postMessage (floor)': `http://127.0.0.1:${port}/bench/load/hand-host.html?app=${appOrigin}`,
};
// LOAD_AB=<dir>: also the role builds from another build of the package (a copy of pkg/ under the repository),
// to compare a change in the same run.
if (process.env.LOAD_AB) variants[`role builds from ${process.env.LOAD_AB}`] = `${variants[Object.keys(variants)[0]]}&pkg=/${process.env.LOAD_AB}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const median = (xs) => { const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
const names = Object.keys(variants);
const floorName = 'hand-written postMessage (floor)';
const modes = { cold: 0, warm: 2 };
const seen = Object.fromEntries(Object.keys(modes).map((m) => [m, Object.fromEntries(names.map((n) => [n, []]))]));

/** One load in `page`: its times, the app's moved onto the host's clock. */
async function load(page, name) {
  const errors = [];
  const onError = (e) => errors.push(String(e));
  page.on('pageerror', onError);
  await page.goto(variants[name]);
  await page.waitForFunction(() => window.times && (window.appParts || location.pathname.endsWith('hand-host.html')), null, { timeout: 30000 });
  const { times, app } = await page.evaluate(() => ({ times: window.times, app: window.appParts }));
  page.off('pageerror', onError);
  if (errors.length) throw new Error(`${name}: ${errors.join('; ')}`);
  const shifted = {};
  for (const [k, v] of Object.entries(app ?? {})) if (k !== 'timeOrigin') shifted[k] = v + app.timeOrigin - times.timeOrigin;
  if (app) shifted.start = app.timeOrigin - times.timeOrigin;
  return { host: times, app: shifted };
}

try {
  for (let round = 0; round < loads; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const [mode, before] of Object.entries(modes)) {
      for (const name of order) {
        const context = await browser.newContext();
        await context.addInitScript(parts);
        const page = await context.newPage();
        for (let i = 0; i < before; i++) {
          await load(page, name);
          // A returning user stayed a while (LOAD_WARM_WAIT ms, default 2500): V8 caches a wasm module's
          // compiled code once it has tiered up or after a timeout, not at once.
          if (i === 0) await page.waitForTimeout(Number(process.env.LOAD_WARM_WAIT ?? 2500));
        }
        seen[mode][name].push(await load(page, name));
        await context.close();
      }
    }
  }
  const out = [];
  const f = (v) => (Number.isNaN(v) ? '—' : v.toFixed(1));
  out.push(`load to connected, two origins, ${loads} loads each (Chromium ${browser.version()}), medians in ms since the host's navigation start`, '');
  out.push('| variant | cold: connected | × floor | warm: connected | × floor |\n|---|---|---|---|---|');
  const connected = (mode, name) => median(seen[mode][name].map((t) => t.host.connected));
  for (const name of names) {
    const c = connected('cold', name);
    const w = connected('warm', name);
    out.push(`| ${name} | ${f(c)} | ${(c / connected('cold', floorName)).toFixed(2)}× | ${f(w)} | ${(w / connected('warm', floorName)).toFixed(2)}× |`);
  }
  out.push('\nWhere the time goes (medians, ms since the host\'s navigation start; the app\'s "ready" is listening, the host\'s its init() done)', '');
  out.push('| variant | load | side | page start | HTML arrived | JS fetch start | JS arrived | wasm fetch start | wasm arrived | compiled | instantiated | init() done | ready | handshake after both ready |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const mode of Object.keys(modes)) {
    for (const name of names.filter((n) => n !== floorName)) {
      const xs = seen[mode][name];
      const handshake = median(xs.map((t) => t.host.connected - Math.max(t.host.init, t.app.listening)));
      for (const side of ['host', 'app']) {
        const m = (k) => f(median(xs.map((t) => t[side][k])));
        const ready = side === 'host' ? 'init' : 'listening';
        out.push(`| ${name} | ${mode} | ${side} | ${side === 'host' ? '0.0' : m('start')} | ${m('html')} | ${m('jsStart')} | ${m('js')} | ${m('wasmStart')} | ${m('wasm')} | ${m('compiled')} | ${m('instantiated')} | ${m('init')} | ${m(ready)} | ${side === 'host' ? f(handshake) : ''} |`);
      }
    }
  }
  const text = out.join('\n');
  console.log(text);
  // The run is written to BENCHMARKS.md (not an A/B run: that compares a build that is not the package).
  if (!process.env.LOAD_AB) {
    const doc = await readFile('BENCHMARKS.md', 'utf8');
    const start = '<!-- load to connected: written by bench/load.mjs -->', end = '<!-- end of load to connected -->';
    if (!doc.includes(start) || !doc.includes(end)) throw new Error(`BENCHMARKS.md has no ${start} ... ${end} block`);
    const date = new Date().toISOString().slice(0, 10);
    await writeFile('BENCHMARKS.md', `${doc.slice(0, doc.indexOf(start) + start.length)}\n${date}, \`node bench/load.mjs\`:\n\n${text}\n${doc.slice(doc.indexOf(end))}`);
    console.log('\nwrote BENCHMARKS.md');
  }
} finally {
  await browser.close();
  server.close();
}
