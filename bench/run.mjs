// `npm run bench`: measures abp-wasm against a hand-written postMessage protocol (the floor; also over a
// MessagePort, which abp-wasm and penpal move to after their handshakes), penpal 7, comlink 4, and in the MCP
// dialect against the official MCP SDK (Client ↔ McpServer over @mcp-b/transports), host page ↔ same-origin iframe, all in one headless Chromium run. Prints a table with ratios
// to the floor, writes bench/results.json and BENCHMARKS.md. Needs `npm run build` first (the script
// `npm run bench` does both). Set BENCH_CALLS to change the number of sequential calls (default 10000), and
// BENCH_RUNS the number of runs (default 3): each run measures every library once, in a fresh page, the order
// reversed every other run; the table gives each figure's median over the runs (this machine's load changes
// within minutes, and one run's blocks can fall on a slow stretch).
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import os from 'node:os';
import { execSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';
import { sizes } from '../scripts/sizes.mjs';

const calls = Number(process.env.BENCH_CALLS ?? 10000);
const runs = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const gz = (f) => gzipSync(readFileSync(f), { level: 9 }).length;
// The JS a page loads: wasm-bindgen's generated module with our snippets bundled in (scripts/bundle-js.mjs).
const glue = readFileSync('pkg/abp_wasm.js');
const size = { wasmGzip: gz('pkg/abp_wasm_bg.wasm'), glueGzip: gzipSync(glue, { level: 9 }).length, wasmRaw: readFileSync('pkg/abp_wasm_bg.wasm').length };
size.totalGzip = size.wasmGzip + size.glueGzip;
// Every build: the full package and the role builds (scripts/sizes.mjs).
const builds = sizes();

const server = await serve(0);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--js-flags=--expose-gc', '--enable-precise-memory-info'],
});
const all = [];
try {
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error('page error:', e));
    await page.goto(`http://127.0.0.1:${server.address().port}/bench/`);
    await page.waitForFunction(() => window.benchReady, null, { timeout: 30000 });
    all.push(await page.evaluate((o) => window.runBench(o), { calls, reverse: i % 2 === 1 }));
    await page.close();
    console.log(`bench: run ${i + 1} of ${runs} done`);
  }
} finally {
  await browser.close();
  server.close();
}
// Each figure is its median over the runs; the big result and the memory figures are the last run's.
const median = (xs) => { const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b); return s.length ? s[(s.length - 1) >> 1] : undefined; };
const medianOf = (pick, keys) => Object.fromEntries(keys.map((k) => [k, median(all.map((x) => pick(x)?.[k]))]));
const LIBS = ['raw', 'rawport', 'rawport-abp', 'abp', 'abp-signal', 'abp-async', 'abp-port', 'abp-mcp', 'mcp-sdk', 'penpal', 'comlink'];
const CANCEL = ['abortToHandlerSignal', 'abortToSettled', 'rawHop'];
const r = {
  ...all[all.length - 1],
  libs: Object.fromEntries(LIBS.map((lib) => [lib, medianOf((x) => x.libs[lib], ['p50', 'mean', 'p99', 'throughput'])])),
  cancels: Object.fromEntries(Object.keys(all[0].cancels).map((lib) => [lib, medianOf((x) => x.cancels[lib], CANCEL)])),
  cancel: medianOf((x) => x.cancel, CANCEL),
  rawHop: median(all.map((x) => x.rawHop)),
};

const f = (x, d = 3) => (x === undefined ? 'n/a' : x.toFixed(d));
const ratio = (x, base) => `${(x / base).toFixed(2)}×`;
const floor = r.libs.raw;
const rows = Object.entries(r.libs).map(([lib, m]) =>
  `| ${({ raw: 'raw window postMessage (floor)', rawport: 'raw MessagePort', 'rawport-abp': 'ABP envelope by hand, MessagePort', 'abp-signal': 'abp, with { signal, timeout }', 'abp-async': 'abp, async handler', 'abp-port': 'abp over a MessageChannel (fromPort)', 'abp-mcp': 'abp ↔ abp, MCP dialect (MCP-B envelope)', 'mcp-sdk': 'MCP SDK Client ↔ McpServer (MCP-B transports)' })[lib] ?? lib} | ${f(m.p50)} | ${ratio(m.p50, floor.p50)} | ${f(m.mean, 4)} | ${ratio(m.mean, floor.mean)} | ${f(m.p99)} | ${ratio(m.p99, floor.p99)} | ${Math.round(m.throughput)} | ${ratio(m.throughput, floor.throughput)} |`);
const mb = (b) => (b / 1048576).toFixed(2);
const mem = r.memory;
const chromiumVersion = (() => { try { return execSync('/usr/bin/chromium --version 2>/dev/null').toString().trim(); } catch { return 'chromium'; } })();
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${chromiumVersion}, Node ${process.version}`;
const table = `Machine: ${machine}. Date: ${new Date().toISOString().slice(0, 10)}.

Round trip of a small call, host page ↔ same-origin iframe, ${r.calls} sequential calls after 500 warm-up calls;
throughput with 256 calls in flight. Each figure is the median of ${runs} run${runs > 1 ? 's' : ''} (each run measures every library
once, in a fresh page, in the opposite order to the run before). Times in ms. Single calls are timed with the page's 5 µs clock, so p50 and
p99 move in 0.005 ms steps; the mean (total time / calls) is finer.

| library | p50 | p50 vs floor | mean | mean vs floor | p99 | p99 vs floor | calls/s (256 in flight) | vs floor |
|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

Cancellation (median of 300 in each run): \`controller.abort()\` → the app handler's \`signal\` fires: ${f(r.cancel.abortToHandlerSignal)} ms
(${ratio(r.cancel.abortToHandlerSignal, r.rawHop)} one raw postMessage hop of ${f(r.rawHop)} ms); → the caller's promise settles:
${f(r.cancel.abortToSettled)} ms.

Cancellation in the MCP rows (median of 300 in each run, same method; the raw hop timed in each frame):
${['abp-mcp', 'mcp-sdk'].filter((l) => r.cancels?.[l]).map((l) => `- ${l}: abort → handler signal ${f(r.cancels[l].abortToHandlerSignal)} ms (${ratio(r.cancels[l].abortToHandlerSignal, r.cancels[l].rawHop)} the hop of ${f(r.cancels[l].rawHop)} ms); → the caller settles ${f(r.cancels[l].abortToSettled)} ms`).join('\n')}

A ${r.bigResult.megabytes} MB ArrayBuffer result (median of 5, last run): copied ${f(r.bigResult.copy, 1)} ms, transferred ${f(r.bigResult.transfer, 1)} ms.

Memory around ${mem.calls} calls (half aborted), after GC, last run: JS heap ${mb(mem.before.heap)} → ${mb(mem.after.heap)} MB
(${ratio(mem.after.heap, mem.before.heap)}); agent wasm memory ${mb(mem.before.wasm)} → ${mb(mem.after.wasm)} MB; app wasm memory
${mb(mem.before.appWasm)} → ${mb(mem.after.appWasm)} MB; pending calls afterwards ${mem.pendingCalls}, active calls ${mem.activeCalls}.

Size of the release package: wasm ${size.wasmRaw} B raw, ${size.wasmGzip} B gzipped; JS (generated module and snippets, one file) ${size.glueGzip} B gzipped;
total ${size.totalGzip} B gzipped (gzip -9).

What a page loads per build (the wasm and its one JS file, gzip -9; the end targets):

| build | import | wasm | JS | total | target |
|---|---|---|---|---|---|
${Object.entries(builds).map(([name, b]) => `| ${name} | \`${({ full: 'abp-wasm', agent: 'abp-wasm/agent', app: 'abp-wasm/app' })[name]}\` | ${b.wasm} B | ${b.js} B | ${(b.total / 1000).toFixed(1)} KB | ${({ full: 60, agent: 35, app: 35 })[name]} KB |`).join('\n')}`;
console.log(table);
writeFileSync('bench/results.json', JSON.stringify({ machine, date: new Date().toISOString(), size, builds, ...r, runs: all }, null, 2) + '\n');
const doc = readFileSync('BENCHMARKS.md', 'utf8');
const start = '<!-- latest run: written by npm run bench -->', end = '<!-- end of latest run -->';
const next = doc.includes(start)
  ? doc.slice(0, doc.indexOf(start) + start.length) + '\n' + table + '\n' + doc.slice(doc.indexOf(end))
  : doc + `\n${start}\n${table}\n${end}\n`;
writeFileSync('BENCHMARKS.md', next);
console.log('\nwrote bench/results.json and BENCHMARKS.md');
