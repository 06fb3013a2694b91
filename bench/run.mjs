// `npm run bench`: measures abp-wasm against a hand-written postMessage protocol (the floor; also over a
// MessagePort, which abp-wasm and penpal move to after their handshakes), penpal 7, comlink 4, and in the MCP
// dialect against the official MCP SDK (Client ↔ McpServer over @mcp-b/transports), host page ↔ same-origin
// iframe, in headless Chromium and in headless Firefox. Each run is a fresh browser that no test driver is
// attached to (bench/direct.mjs says why), on bench/index.html, which reports its figures back. Prints a table
// per browser with ratios to the floor, writes bench/results.json and BENCHMARKS.md. Needs `npm run build` first
// (the script `npm run bench` does both). Set BENCH_CALLS to change the number of sequential calls (default
// 10000), BENCH_RUNS the number of runs per browser (default 3): each run measures every library once, the order
// reversed every other run; the table gives each figure's median over the runs (this machine's load changes
// within minutes, and one run's blocks can fall on a slow stretch). BENCH_BROWSERS=chromium measures one browser;
// BENCH_LIBS=abp-mcp,mcp-sdk some libraries alone (then BENCHMARKS.md is not written).
// Then the head-to-head: each pair of PAIRS in one page, taking turns (bench/index.html's headToHead), in
// BENCH_PAIR_SESSIONS fresh browsers (default 3) per browser, the order reversed every other session; the ratios
// the targets are read from (BENCHMARKS.md, "How the round trips are measured").
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import os from 'node:os';
import { execSync } from 'node:child_process';
import { serve } from '../www/serve.mjs';
import { sizes } from '../scripts/sizes.mjs';
import { browserBinary, reports, runPage } from './direct.mjs';

const calls = Number(process.env.BENCH_CALLS ?? 10000);
const runs = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const browsers = (process.env.BENCH_BROWSERS ?? 'chromium,firefox').split(',');
const only = process.env.BENCH_LIBS;
const gz = (f) => gzipSync(readFileSync(f), { level: 9 }).length;
// The JS a page loads: wasm-bindgen's generated module with our snippets bundled in (scripts/bundle-js.mjs).
const glue = readFileSync('pkg/abp_wasm.js');
const size = { wasmGzip: gz('pkg/abp_wasm_bg.wasm'), glueGzip: gzipSync(glue, { level: 9 }).length, wasmRaw: readFileSync('pkg/abp_wasm_bg.wasm').length };
size.totalGzip = size.wasmGzip + size.glueGzip;
// Every build: the full package, the role builds and the discovery build (scripts/sizes.mjs).
const builds = sizes();

// The head-to-head pairs: the SDK against penpal and against its own wire format written by hand, that wire format
// against penpal (the floor any ABP implementation starts from), and the MCP dialect against each official SDK at
// the revision it speaks, then SDK 1 against the dialect's default.
const PAIRS = [['abp', 'penpal'], ['abp', 'rawport-abp'], ['rawport-abp', 'penpal'], ['abp-mcp-2025', 'mcp-sdk'], ['abp-mcp', 'mcp-sdk2'], ['abp-mcp', 'mcp-sdk']];
const pairSessions = Math.max(1, Number(process.env.BENCH_PAIR_SESSIONS ?? 3));
const pairs = PAIRS.filter((pair) => !only || pair.every((lib) => only.split(',').includes(lib)));

const pages = reports();
const server = await serve(0, { onPost: pages.onPost });
const all = Object.fromEntries(browsers.map((b) => [b, []]));
// headToHead[browser][pair as 'a,b']: each session's { [lib]: { mean, throughput } }.
const headToHead = Object.fromEntries(browsers.map((b) => [b, {}]));
try {
  for (let i = 0; i < runs; i++) {
    for (const browser of browsers) {
      const query = new URLSearchParams({ calls, reverse: i % 2 ? '1' : '0', ...(only ? { only } : {}) });
      all[browser].push(await runPage(browser, `http://127.0.0.1:${server.address().port}/bench/?${query}`, pages));
      console.log(`bench: ${browser}, run ${i + 1} of ${runs} done`);
    }
  }
  for (let i = 0; i < pairSessions; i++) {
    for (const browser of browsers) {
      for (const pair of pairs) {
        const order = i % 2 ? [...pair].reverse() : pair;
        const got = await runPage(browser, `http://127.0.0.1:${server.address().port}/bench/?pair=${order.join(',')}`, pages);
        (headToHead[browser][pair.join(',')] ??= []).push(got);
      }
      console.log(`bench: ${browser}, head-to-head session ${i + 1} of ${pairSessions} done`);
    }
  }
} finally {
  server.close();
}
// Each figure is its median over the runs; the big result and the memory figures are the last run's.
const median = (xs) => { const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b); return s.length ? s[(s.length - 1) >> 1] : undefined; };
const CANCEL = ['abortToHandlerSignal', 'abortToSettled', 'rawHop', 'rawPortHop'];
const summarise = (runsOf) => {
  const medianOf = (pick, keys) => Object.fromEntries(keys.map((k) => [k, median(runsOf.map((x) => pick(x)?.[k]))]));
  const last = runsOf[runsOf.length - 1];
  return {
    ...last,
    libs: Object.fromEntries(Object.keys(last.libs).map((lib) => [lib, medianOf((x) => x.libs[lib], ['p50', 'mean', 'p99', 'throughput'])])),
    cancels: Object.fromEntries(Object.keys(last.cancels).map((lib) => [lib, medianOf((x) => x.cancels[lib], CANCEL)])),
    cancel: last.cancel && medianOf((x) => x.cancel, CANCEL),
    rawHop: median(runsOf.map((x) => x.rawHop)),
  };
};
const results = Object.fromEntries(browsers.map((b) => [b, { browser: b, ...summarise(all[b]) }]));

const f = (x, d = 3) => (x === undefined ? 'n/a' : x.toFixed(d));
const ratio = (x, base) => (x === undefined || base === undefined ? 'n/a' : `${(x / base).toFixed(2)}×`);
const NAMES = { raw: 'raw window postMessage (floor)', rawport: 'raw MessagePort', 'rawport-abp': 'ABP envelope by hand, MessagePort',
  'abp-signal': 'abp, with { signal, timeout }', 'abp-async': 'abp, async handler', 'abp-port': 'abp over a MessageChannel (fromPort)',
  'abp-mcp': 'abp ↔ abp, MCP dialect (MCP-B envelope, 2026-07-28)', 'abp-mcp-2025': 'abp ↔ abp, MCP dialect (MCP-B envelope, 2025-11-25)',
  'mcp-sdk': 'MCP SDK 1 Client ↔ McpServer (MCP-B transports, 2025-11-25)',
  'mcp-sdk2': 'MCP SDK 2 Client ↔ McpServer (MCP-B transports, 2026-07-28)' };
const version = (bin) => { try { return execSync(`${bin} --version 2>/dev/null`).toString().trim(); } catch { return bin; } };
const MCP_ROWS = ['abp-mcp', 'abp-mcp-2025', 'mcp-sdk', 'mcp-sdk2'];
const BROWSER_NAMES = { chromium: 'Chromium', firefox: 'Firefox' };
const browserTable = (browser) => {
  const r = results[browser];
  const floor = r.libs.raw;
  const rows = Object.entries(r.libs).map(([lib, m]) =>
    `| ${NAMES[lib] ?? lib} | ${f(m.p50)} | ${ratio(m.p50, floor?.p50)} | ${f(m.mean, 4)} | ${ratio(m.mean, floor?.mean)} | ${f(m.p99)} | ${ratio(m.p99, floor?.p99)} | ${Math.round(m.throughput)} | ${ratio(m.throughput, floor?.throughput)} |`);
  const { abp, penpal, 'rawport-abp': envelope, 'abp-mcp': mcp, 'abp-mcp-2025': mcp2025, 'mcp-sdk': sdk, 'mcp-sdk2': sdk2 } = r.libs;
  const targets = [
    abp && penpal && `abp against penpal: mean ${ratio(abp.mean, penpal.mean)}, calls/s with 256 in flight ${ratio(abp.throughput, penpal.throughput)}`,
    // The same messages written by hand: what the SDK's own work adds (BENCHMARKS.md, "Where the targets stand").
    abp && envelope && `against ABP's envelope by hand: mean ${ratio(abp.mean, envelope.mean)}, calls/s ${ratio(abp.throughput, envelope.throughput)}`,
    // Each official SDK against the MCP dialect at the revision it speaks (SDK 1: 2025-11-25; SDK 2: 2026-07-28,
    // whose requests each carry the client's `_meta`), then SDK 1 against the dialect's default revision.
    mcp2025 && sdk && `the MCP dialect at 2025-11-25 against the official SDK 1: mean ${ratio(mcp2025.mean, sdk.mean)}, calls/s ${ratio(mcp2025.throughput, sdk.throughput)}`,
    mcp && sdk2 && `at 2026-07-28 against the SDK 2: mean ${ratio(mcp.mean, sdk2.mean)}, calls/s ${ratio(mcp.throughput, sdk2.throughput)}`,
    mcp && sdk && `at 2026-07-28 against the SDK 1: mean ${ratio(mcp.mean, sdk.mean)}, calls/s ${ratio(mcp.throughput, sdk.throughput)}`,
  ].filter(Boolean);
  return `#### ${BROWSER_NAMES[browser] ?? browser} (${version(browserBinary(browser))})

The page's clock steps by ${f(r.clockStep * 1000, 0)} µs${r.crossOriginIsolated ? ' (cross-origin isolated)' : ''}, so p50 and p99 move in steps of that size; the mean (total time / calls) is finer.

| library | p50 | p50 vs floor | mean | mean vs floor | p99 | p99 vs floor | calls/s (256 in flight) | vs floor |
|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}
${targets.length ? `\nRatios of the rows' medians (the targets are read from the head-to-head below): ${targets.join('; ')}.\n` : ''}
${r.cancel ? `Cancellation (median of 300 in each run): \`controller.abort()\` → the app handler's \`signal\` fires: ${f(r.cancel.abortToHandlerSignal)} ms
(${ratio(r.cancel.abortToHandlerSignal, r.rawHop)} one raw postMessage hop of ${f(r.rawHop)} ms${r.cancel.rawPortHop === undefined ? '' : `; ${ratio(r.cancel.abortToHandlerSignal, r.cancel.rawPortHop)} one raw hop over a MessagePort, the channel the cancel travels, of ${f(r.cancel.rawPortHop)} ms`}); → the caller's promise settles:
${f(r.cancel.abortToSettled)} ms.` : ''}
${MCP_ROWS.some((l) => r.cancels?.[l]) ? `
Cancellation in the MCP rows (median of 300 in each run, same method; the raw hop timed in each frame):
${MCP_ROWS.filter((l) => r.cancels?.[l]).map((l) => `- ${l}: abort → handler signal ${f(r.cancels[l].abortToHandlerSignal)} ms (${ratio(r.cancels[l].abortToHandlerSignal, r.cancels[l].rawHop)} the hop of ${f(r.cancels[l].rawHop)} ms); → the caller settles ${f(r.cancels[l].abortToSettled)} ms`).join('\n')}` : ''}`;
};
// Each pair's ratios (the first library's figure over the second's): the median of the sessions and their range.
const headToHeadTable = () => {
  const cell = (sessions, key) => {
    if (!sessions?.length) return 'n/a';
    const [a, b] = Object.keys(sessions[0]);
    const xs = sessions.map((x) => x[a][key] / x[b][key]).sort((p, q) => p - q);
    return `${median(xs).toFixed(2)}× (${xs[0].toFixed(2)}–${xs[xs.length - 1].toFixed(2)})`;
  };
  const label = (lib) => (lib === 'rawport-abp' ? "ABP's envelope by hand" : lib);
  return `#### Head to head

Each pair in one page, taking turns: 10 rounds in which each library makes 1000 sequential calls and then 4000
calls with 256 in flight, the order reversed every other round, after 500 warm-up calls each; ${pairSessions} sessions per
browser (each a fresh browser, the pair's order reversed every other session). Each figure is the first library's
over the second's, the median of the sessions and (in brackets) their range: a mean round trip below 1.00× and
calls/s above 1.00× favour the first. These are the ratios the targets are read from (the rows above are measured
one after another, and a slow stretch of the machine falls on one row and not the next).

| pair | ${browsers.map((b) => `${BROWSER_NAMES[b] ?? b}: mean round trip | calls/s (256 in flight)`).join(' | ')} |
|---|${browsers.map(() => '---|---|').join('')}
${pairs.map((pair) => `| ${label(pair[0])} ÷ ${label(pair[1])} | ${browsers.map((b) => {
    const sessions = headToHead[b][pair.join(',')]?.map((x) => ({ [pair[0]]: x[pair[0]], [pair[1]]: x[pair[1]] }));
    return `${cell(sessions, 'mean')} | ${cell(sessions, 'throughput')}`;
  }).join(' | ')} |`).join('\n')}

${callsTargets()}`;
};
/** The calls target, read from the head-to-head: abp against ABP's envelope written by hand (the floor any
 *  implementation of ABP starts from), a mean round trip at most 1.10× and calls/s at least 0.95×, per browser. */
const callsTargets = () => {
  const sessions = (b) => headToHead[b]['abp,rawport-abp'];
  if (!browsers.some((b) => sessions(b)?.length)) return '';
  const mid = (b, key) => median(sessions(b).map((x) => x.abp[key] / x['rawport-abp'][key]));
  const judge = (r, limit, atMost) => ((atMost ? r <= limit : r >= limit) ? 'met'
    : `not met (${(Math.abs(r / limit - 1) * 100).toFixed(0)} % ${atMost ? 'over' : 'under'})`);
  const rows = browsers.filter((b) => sessions(b)?.length).map((b) => {
    const mean = mid(b, 'mean');
    const calls = mid(b, 'throughput');
    return `| ${BROWSER_NAMES[b] ?? b} | ${mean.toFixed(2)}× | ≤ 1.10×: ${judge(mean, 1.1, true)} | ${calls.toFixed(2)}× | ≥ 0.95×: ${judge(calls, 0.95, false)} |`;
  });
  return `Targets: abp against ABP's envelope by hand, head to head (the medians above)

| browser | mean round trip | target | calls/s (256 in flight) | target |
|---|---|---|---|---|
${rows.join('\n')}`;
};
const r = results.chromium ?? results[browsers[0]];
const mb = (b) => (b / 1048576).toFixed(2);
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
const table = `Machine: ${machine}. Date: ${new Date().toISOString().slice(0, 10)}.

Round trip of a small call, host page ↔ same-origin iframe, ${calls} sequential calls after 500 warm-up calls;
throughput with 256 calls in flight. Each figure is the median of ${runs} run${runs > 1 ? 's' : ''} (each run is a fresh browser, no test
driver attached, that measures every library once, in the opposite order to the run before). Times in ms.

${browsers.map(browserTable).join('\n\n')}

${pairs.length ? headToHeadTable() : ''}

#### Large results, memory and sizes

${r.bigResult ? `A ${r.bigResult.megabytes} MB ArrayBuffer result (median of 5, the last ${BROWSER_NAMES[r.browser]} run): copied ${f(r.bigResult.copy, 1)} ms, transferred ${f(r.bigResult.transfer, 1)} ms.` : ''}

${r.memory ? `Memory around ${r.memory.calls} calls (half aborted), after GC, last run: JS heap ${mb(r.memory.before.heap)} → ${mb(r.memory.after.heap)} MB
(${ratio(r.memory.after.heap, r.memory.before.heap)}); agent wasm memory ${mb(r.memory.before.wasm)} → ${mb(r.memory.after.wasm)} MB; app wasm memory
${mb(r.memory.before.appWasm)} → ${mb(r.memory.after.appWasm)} MB; pending calls afterwards ${r.memory.pendingCalls}, active calls ${r.memory.activeCalls}.` : ''}

Size of the release package: wasm ${size.wasmRaw} B raw, ${size.wasmGzip} B gzipped; JS (generated module and snippets, one file) ${size.glueGzip} B gzipped;
total ${size.totalGzip} B gzipped (gzip -9).

What a page loads per build (the wasm and its one JS file, gzip -9; the end targets):

| build | import | wasm | JS | total | target |
|---|---|---|---|---|---|
${Object.entries(builds).map(([name, b]) => `| ${name} | ${({ full: '`abp-wasm`', agent: '`abp-wasm/agent`', app: '`abp-wasm/app`', discover: '`discover()` of `abp-wasm`, on its first call' })[name]} | ${b.wasm} B | ${b.js} B | ${(b.total / 1000).toFixed(1)} KB | ${({ full: '60 KB', agent: '35 KB', app: '35 KB' })[name] ?? '—'} |`).join('\n')}`;
console.log(table);
writeFileSync('bench/results.json', JSON.stringify({ machine, date: new Date().toISOString(), size, builds, browsers: results, runs: all, headToHead }, null, 2) + '\n');
if (only) {
  console.log(`\nwrote bench/results.json (BENCH_LIBS: BENCHMARKS.md is written only by a run of every library)`);
  process.exit(0);
}
const doc = readFileSync('BENCHMARKS.md', 'utf8');
const start = '<!-- latest run: written by npm run bench -->', end = '<!-- end of latest run -->';
const next = doc.includes(start)
  ? doc.slice(0, doc.indexOf(start) + start.length) + '\n' + table + '\n' + doc.slice(doc.indexOf(end))
  : doc + `\n${start}\n${table}\n${end}\n`;
writeFileSync('BENCHMARKS.md', next);
console.log('\nwrote bench/results.json and BENCHMARKS.md');
