// Load to connected (part of `npm run bench`, or alone: node bench/load.mjs after `npm run build`): a host page on
// 127.0.0.1 and its app in an iframe on localhost (two origins), each loading the built package, from navigation
// start to connected. Six variants: the role builds (abp-wasm/agent in the host, abp-wasm/app in the iframe),
// the same with the README's preload hints (the module and its wasm fetched from the start, beside the HTML),
// the full package on both sides, and three floors: the same two pages with a hand-written postMessage handshake
// and no library, inline in the pages (the limit), then in a module file each page loads, and penpal 7.0.6's own
// connect in a module file (what a user would pick instead); the targets table sets the role builds against the
// last two. Each is loaded LOADS times (default 11) in two ways, the order rotated every round, each load in a
// browser started for it with a fresh profile and no test driver attached (bench/direct.mjs), which settles for a
// second on bench/load/start.html before it goes to the host page:
// - cold: the first visit (empty HTTP cache, no compiled code cached), a new user;
// - warm: the third visit, the first having stayed a few seconds (the server lets the pages be cached, so the JS
//   and wasm come from the HTTP cache with V8's compiled code beside them), a returning user.
// LOAD_BROWSER=firefox loads them in Firefox instead of Chromium. LOAD_RTT=<ms> delays every response by that
// much, as a network's round trip would (on 127.0.0.1 a request costs next to nothing, so loading two resources
// one after the other costs no more than loading them side by side): a run with it is printed, not written.
// LOAD_LATE=<ms>: each app (the floor's too) starts listening that long after it could, as an app that loads
// slowly would; the handshake column then shows how soon an agent that has been waiting notices (printed, not
// written). LOAD_SPLIT=1: also each side of the role builds against the other side written by hand (printed).
// Prints medians in ms since the host's navigation start (the app's times moved onto the host's clock), and the
// parts of each side's load: its HTML arrived and its first script ran, its JS arrived and was evaluated, its wasm fetch started and ended, compiled, instantiated, init()
// done (the app: listening), connected; and the handshake: connected minus the later of the two sides' ready.
// Writes them to BENCHMARKS.md ("Load to connected"), except with LOAD_AB.
import { execSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { serve } from '../www/serve.mjs';
import { browserBinary, reports, runPage } from './direct.mjs';

// The timing shim runs in both pages (and the floor's) before their own scripts, without a request of its own.
const parts = await readFile(new URL('load/parts.js', import.meta.url), 'utf8');
// bench/hand-abp.js as a classic script, for the pages of ABP by hand (LOAD_SPLIT), without a request of its own.
const handAbp = (await readFile(new URL('hand-abp.js', import.meta.url), 'utf8')).replace(/^export /gm, '');
const handPages = new Set(['/bench/load/hand-abp-app.html', '/bench/load/hand-abp-host.html']);
const loads = Math.max(1, Number(process.env.LOADS ?? 11));
const browserName = process.env.LOAD_BROWSER ?? 'chromium';
const pages = reports();
/** What the server puts at the top of a load page: with ?hints=1, the quick start's preload hints for the page's
 *  build (as a page written for one build has them in its HTML); then the timing shim. */
function inject(path, url) {
  if (!path.startsWith('/bench/load/')) return undefined;
  const shim = `<script>${parts}</script>${handPages.has(path) ? `<script>${handAbp}</script>` : ''}`;
  const role = { '/bench/load/host.html': 'agent', '/bench/load/app.html': 'app' }[path];
  const q = url.searchParams;
  if (!role || !q.get('hints')) return shim;
  const build = `${q.get('pkg') ?? '/pkg'}${q.get('build') === 'full' ? '' : `/${role}`}`;
  return `<link rel="modulepreload" href="${build}/abp_wasm.js">`
    + `<link rel="preload" href="${build}/abp_wasm_bg.wasm" as="fetch" type="application/wasm" crossorigin>\n${shim}`;
}
const rtt = Number(process.env.LOAD_RTT ?? 0);
const late = Number(process.env.LOAD_LATE ?? 0);
const server = await serve(0, { cache: true, onPost: pages.onPost, inject, delay: rtt });
const { port } = server.address();
const appOrigin = `http://localhost:${port}`;
const variants = {
  'role builds (agent + app)': `http://127.0.0.1:${port}/bench/load/host.html?build=role&app=${appOrigin}`,
  'role builds, with the preload hints': `http://127.0.0.1:${port}/bench/load/host.html?build=role&hints=1&app=${appOrigin}`,
  'full package on both sides': `http://127.0.0.1:${port}/bench/load/host.html?build=full&app=${appOrigin}`,
  'hand-written postMessage (floor)': `http://127.0.0.1:${port}/bench/load/hand-host.html?app=${appOrigin}`,
  // The floors a user compares with: the same handshake, and penpal's, each in a module file the page loads.
  'hand-written postMessage, from a module file': `http://127.0.0.1:${port}/bench/load/module-host.html?lib=hand&app=${appOrigin}`,
  'penpal 7.0.6, from a module file': `http://127.0.0.1:${port}/bench/load/module-host.html?lib=penpal&app=${appOrigin}`,
};
// LOAD_AB=<dir>: also the role builds from another build of the package (a copy of pkg/ under the repository),
// to compare a change in the same run; with LOAD_AB_FULL=1, the full package from it instead.
if (process.env.LOAD_AB) {
  const [what, base] = process.env.LOAD_AB_FULL ? ['full package', Object.keys(variants)[2]] : ['role builds', Object.keys(variants)[0]];
  variants[`${what} from ${process.env.LOAD_AB}`] = `${variants[base]}&pkg=/${process.env.LOAD_AB}`;
}
// LOAD_SPLIT=1: also each side of the role builds with the other side ABP written by hand (no library), so that
// each side's cost is seen without the other's on the same cores.
if (process.env.LOAD_SPLIT) {
  variants['agent build, app of ABP by hand'] = `${variants[Object.keys(variants)[0]]}&appPage=hand-abp-app.html`;
  variants['host of ABP by hand, app build'] = `http://127.0.0.1:${port}/bench/load/hand-abp-host.html?app=${appOrigin}`;
}
const median = (xs) => { const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
const names = Object.keys(variants);
const floorName = 'hand-written postMessage (floor)';
const roleName = 'role builds (agent + app)';
/** The targets: the role builds against each floor a user compares with, cold and warm. */
const targets = [['hand-written postMessage, from a module file', 1.15, 1.05], ['penpal 7.0.6, from a module file', 1.15, 1.05]];
const modes = { cold: 0, warm: 2 };
const seen = Object.fromEntries(Object.keys(modes).map((m) => [m, Object.fromEntries(names.map((n) => [n, []]))]));

/** One load of `name` in a fresh browser, the `visits`-th visit: its times, the app's moved onto the host's clock. */
async function load(name, visits) {
  const u = new URL(variants[name]);
  u.searchParams.set('visits', String(visits));
  u.searchParams.set('stay', process.env.LOAD_WARM_WAIT ?? '2500');
  if (late) u.searchParams.set('late', String(late));
  // The browser starts on start.html, which goes on to the host page; the host page is the one that reports.
  const { times, app } = await runPage(browserName, `${u.origin}/bench/load/start.html?go=${encodeURIComponent(u.href)}`, pages,
    { timeoutMs: 60000, wrap: (start, token) => { u.searchParams.set('report', token); start.searchParams.set('go', u.href); } });
  const shifted = {};
  for (const [k, v] of Object.entries(app ?? {})) if (k !== 'timeOrigin') shifted[k] = v + app.timeOrigin - times.timeOrigin;
  if (app) shifted.start = app.timeOrigin - times.timeOrigin;
  return { host: times, app: shifted };
}

try {
  for (let round = 0; round < loads; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const [mode, before] of Object.entries(modes)) {
      for (const name of order) seen[mode][name].push(await load(name, before + 1));
    }
  }
  const out = [];
  const f = (v) => (Number.isNaN(v) ? '—' : v.toFixed(1));
  const version = (() => { try { return execSync(`${browserBinary(browserName)} --version 2>/dev/null`).toString().trim(); } catch { return browserName; } })();
  out.push(`load to connected, two origins, ${loads} loads each (${version}, each load a fresh browser with no test driver${rtt ? `, every response delayed ${rtt} ms` : ''}${late ? `, each app listening ${late} ms late` : ''}), medians in ms since the host's navigation start`, '');
  out.push('| variant | cold: connected | × floor | warm: connected | × floor |\n|---|---|---|---|---|');
  const connected = (mode, name) => median(seen[mode][name].map((t) => t.host.connected));
  for (const name of names) {
    const c = connected('cold', name);
    const w = connected('warm', name);
    out.push(`| ${name} | ${f(c)} | ${(c / connected('cold', floorName)).toFixed(2)}× | ${f(w)} | ${(w / connected('warm', floorName)).toFixed(2)}× |`);
  }
  out.push('\nTargets: the role builds against the floors a user compares with (each loads its code from a module file)', '');
  out.push('| against | cold | target | warm | target |\n|---|---|---|---|---|');
  for (const [against, cold, warm] of targets) {
    const rc = connected('cold', roleName) / connected('cold', against);
    const rw = connected('warm', roleName) / connected('warm', against);
    const met = (r, t) => `${r <= t ? 'met' : `not met (${((r / t - 1) * 100).toFixed(0)} % over)`}`;
    out.push(`| ${against} | ${rc.toFixed(2)}× | ≤ ${cold.toFixed(2)}×: ${met(rc, cold)} | ${rw.toFixed(2)}× | ≤ ${warm.toFixed(2)}×: ${met(rw, warm)} |`);
  }
  out.push('\nWhere the time goes (medians, ms since the host\'s navigation start; the app\'s "ready" is listening, the host\'s its init() done)', '');
  out.push('| variant | load | side | page start | HTML arrived | first script | JS fetch start | JS arrived | module evaluated | wasm fetch start | wasm arrived | compiled | instantiated | init() done | ready | handshake after both ready |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const mode of Object.keys(modes)) {
    for (const name of names) {
      const xs = seen[mode][name];
      const handshake = median(xs.map((t) => t.host.connected - Math.max(t.host.init, t.app.listening)));
      for (const side of ['host', 'app']) {
        const m = (k) => f(median(xs.map((t) => t[side][k])));
        const ready = side === 'host' ? 'init' : 'listening';
        out.push(`| ${name} | ${mode} | ${side} | ${side === 'host' ? '0.0' : m('start')} | ${m('html')} | ${m('firstScript')} | ${m('jsStart')} | ${m('js')} | ${m('imported')} | ${m('wasmStart')} | ${m('wasm')} | ${m('compiled')} | ${m('instantiated')} | ${m('init')} | ${m(ready)} | ${side === 'host' ? f(handshake) : ''} |`);
      }
    }
  }
  const text = out.join('\n');
  console.log(text);
  // The run is written to BENCHMARKS.md (not an A/B run: that compares a build that is not the package; nor a run
  // with LOAD_RTT or LOAD_LATE, which are not the table's settings).
  if (!process.env.LOAD_AB && !process.env.LOAD_SPLIT && !rtt && !late && browserName === 'chromium') {
    const doc = await readFile('BENCHMARKS.md', 'utf8');
    const start = '<!-- load to connected: written by bench/load.mjs -->', end = '<!-- end of load to connected -->';
    if (!doc.includes(start) || !doc.includes(end)) throw new Error(`BENCHMARKS.md has no ${start} ... ${end} block`);
    const date = new Date().toISOString().slice(0, 10);
    await writeFile('BENCHMARKS.md', `${doc.slice(0, doc.indexOf(start) + start.length)}\n${date}, \`node bench/load.mjs\`:\n\n${text}\n${doc.slice(doc.indexOf(end))}`);
    console.log('\nwrote BENCHMARKS.md');
  }
} finally {
  server.close();
}
