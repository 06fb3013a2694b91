// A Gecko profile of a benchmark page in headless Firefox, with no test driver attached: Firefox's counterpart of
// bench/profile.mjs. Firefox is started with its built-in profiler on (MOZ_PROFILER_STARTUP, sampling the main
// threads every 0.2 ms), on PAGE with `close=1` added to its query. PAGE must report (bench/report.js) and then,
// on `close=1`, close its window, as bench/side-cost.html does: Firefox then quits and writes the profile
// (MOZ_PROFILER_SHUTDOWN); a page that stays open is killed after 10 minutes, with no profile. Prints, for the content process
// that ran the page, each JavaScript or wasm function's share of the samples: as the innermost JavaScript or
// wasm frame (its own time, with the browser's native code it calls), and anywhere on the stack. Samples in the
// event loop's wait are counted apart. Functions of the package's minified JS show as `name @line:column`;
// wasm functions have names only in a build that keeps them (`ABP_WASM_OPT_G=-g bash scripts/build.sh`, copied
// under bench/ab/ and named in the page's query). The profiler slows the page several times over: read shares,
// not times.
// Usage: node bench/gecko-profile.mjs PAGE [rows=40]
//   e.g. node bench/gecko-profile.mjs '/bench/side-cost.html?args=[["/bench/ab/named"],0]'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../www/serve.mjs';
import { launch, reports } from './direct.mjs';

const [page, rowsArg] = process.argv.slice(2);
if (!page?.startsWith('/')) { console.error('usage: node bench/gecko-profile.mjs /bench/<page>?<query> [rows=40]'); process.exit(2); }
const rows = Number(rowsArg ?? 40);
const pages = reports();
const server = await serve(0, { onPost: pages.onPost });
const dir = mkdtempSync(join(tmpdir(), 'abp-gecko-'));
const out = join(dir, 'profile.json');
let firefox;
try {
  const url = new URL(`http://127.0.0.1:${server.address().port}${page}`);
  url.searchParams.set('close', '1');
  url.searchParams.set('report', 'gecko');
  const reported = new Promise((ok, fail) => pages.waiting.set('gecko', { ok, fail }));
  firefox = launch('firefox', url.href, {
    env: { MOZ_PROFILER_STARTUP: '1', MOZ_PROFILER_SHUTDOWN: out, MOZ_PROFILER_STARTUP_INTERVAL: '0.2',
      MOZ_PROFILER_STARTUP_ENTRIES: '50000000', MOZ_PROFILER_STARTUP_FEATURES: 'js,stackwalk', MOZ_PROFILER_STARTUP_FILTERS: 'GeckoMain' },
    prefs: { 'dom.allow_scripts_to_close_windows': true },
  });
  const within = (p, ms, why) => Promise.race([p, new Promise((_, fail) => setTimeout(() => fail(new Error(why)), ms).unref())]);
  // `exited` rejects when Firefox quits: before the report, a failure; after it, the profile has been written.
  console.log('the page reported:', JSON.stringify(await within(Promise.race([reported, firefox.exited]), 600000, 'no report within 10 minutes')));
  await within(firefox.exited.catch(() => {}), 600000, 'Firefox did not quit within 10 minutes of the report (does the page close itself on ?close=1?)');
  summarize(JSON.parse(readFileSync(out, 'utf8')), url.origin);
} finally {
  await firefox?.close();
  server.close();
  rmSync(dir, { recursive: true, force: true });
}

/** Prints the shares of the main thread of the content process that ran `origin`'s pages (the one with the most
 *  samples, if several did). */
function summarize(profile, origin) {
  const threads = profile.processes.flatMap((p) => p.threads).filter((t) => t.stringTable.some((x) => x.includes(origin)));
  const t = threads.sort((a, b) => b.samples.data.length - a.samples.data.length)[0];
  if (!t) throw new Error(`no thread of the profile ran ${origin}`);
  const col = (table) => table.schema;
  const [S, st, ft] = [col(t.samples), col(t.stackTable), col(t.frameTable)];
  const name = (frame) => t.stringTable[t.frameTable.data[frame][ft.location]];
  const script = (n) => /\.(js|html|wasm)\b|\(in wasm\)|^wasm-function/.test(n);
  const short = (n) => n.replace(/^\S+\.wasm\./, '').replace(/\[[0-9a-f]{16}\]/g, '').replace(/ \(https?:\/\/[^)]*\.wasm:\d+\)$/, '')
    .replace(/ \(https?:\/\/[^)]*\/([^/)]+):(\d+):(\d+)\)(\[\d+\])?$/, (_, f, l, c) => (f.endsWith('.js') && !f.startsWith('abp_wasm') ? ` (${f}:${l})` : ` @${l}:${c}`));
  const stacks = new Map();
  const stackOf = (s) => {
    if (!stacks.has(s)) {
      const frames = [];
      for (let i = s; i !== null; i = t.stackTable.data[i][st.prefix]) frames.push(name(t.stackTable.data[i][st.frame]));
      stacks.set(s, frames);
    }
    return stacks.get(s);
  };
  const own = new Map(), anywhere = new Map();
  let total = 0, idle = 0, native = 0;
  const add = (m, k) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const row of t.samples.data) {
    const s = row[S.stack];
    if (s === null) continue;
    total++;
    const frames = stackOf(s);
    if (frames.includes('PollWrapper')) { idle++; continue; }
    const js = frames.filter(script).map(short);
    if (!js.length) { native++; continue; }
    add(own, js[0]);
    for (const f of new Set(js)) add(anywhere, f);
  }
  const pct = (n) => `${((100 * n) / total).toFixed(2).padStart(6)}%`;
  console.log(`${total} samples of the main thread of ${t.processName}: ${pct(idle)} waiting for events, ${pct(native)} in native code alone`);
  for (const [title, m] of [['innermost JavaScript or wasm frame', own], ['anywhere on the stack', anywhere]]) {
    console.log(`\n${title}:`);
    for (const [k, n] of [...m].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${pct(n)}  ${k.slice(0, 150)}`);
  }
}
