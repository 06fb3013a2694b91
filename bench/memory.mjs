// `npm run bench:memory`: after 100,000 calls (half aborted) and after 10,000 iframe
// connects/disconnects, nothing is left pending or active, and wasm memory is back within 10% of where it
// started. Drives bench/memory.html in headless Chromium (with --expose-gc) through playwright-core: the agent
// role build in the page, the app role build in same-origin iframes (bench/memory-frame.html). Prints the
// figures and writes them into BENCHMARKS.md (section "## Memory").
//
// Memory is reported, never asserted: the exit code is non-zero only for a correctness failure (a call left
// pending, a handler left active or queued, a client still connected, a pending call not settled DISCONNECTED
// when its frame went, a call that settled the wrong way).
//
// Wasm linear memory never shrinks: it stays at its peak. So each scenario is measured three times, after GC:
// on a fresh page, after a warm-up that reaches the scenario's peak (as many calls in flight, as many frames at
// once), and after the run. The 10% rule is checked against the warmed-up figure (what the page needs at that
// peak); growth after it would be a leak. The fresh page's figure is printed beside it.
//
// Environment: MEMORY_CALLS (default 100000), MEMORY_ROUNDS (default 10000), MEMORY_PARALLEL (rounds at once,
// default 8), MEMORY_FREE=1 (each round frees its client at once instead of leaving it to the garbage
// collector: tells what waits for the collector from what leaks), MEMORY_JSON=1 (also print every figure as
// JSON), CHROMIUM (default /usr/bin/chromium). BENCHMARKS.md is only rewritten by a run of the default size.
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { execSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const CALLS = Number(process.env.MEMORY_CALLS ?? 100000);
const ROUNDS = Number(process.env.MEMORY_ROUNDS ?? 10000);
const PARALLEL = Number(process.env.MEMORY_PARALLEL ?? 8);
const IN_FLIGHT = 256;
// Warm-ups that reach the same peak as the runs they precede: as many calls in flight, as many frames at once.
const WARM_CALLS = 10 * IN_FLIGHT;
const WARM_ROUNDS = 8 * PARALLEL;

const server = await serve(0, { cache: true });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--js-flags=--expose-gc', '--enable-precise-memory-info'],
});
const url = `http://127.0.0.1:${server.address().port}/bench/memory.html${process.env.MEMORY_FREE === '1' ? '?free' : ''}`;

/** A fresh page (so a fresh wasm instance), with a DevTools session for DOM and listener counts. */
async function open() {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error('page error:', e));
  page.on('console', (m) => { if (m.type() === 'error') console.error('page console:', m.text()); });
  await page.goto(url);
  await page.waitForFunction(() => window.memReady, null, { timeout: 60000 });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  return { page, cdp };
}

/** Documents, frames, DOM nodes and JS event listeners in the renderer, and the listeners on the host window
 *  by type (call right after a snapshot, which collects garbage). */
async function dom(cdp) {
  const { metrics } = await cdp.send('Performance.getMetrics');
  const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
  const { result } = await cdp.send('Runtime.evaluate', { expression: 'window' });
  const { listeners } = await cdp.send('DOMDebugger.getEventListeners', { objectId: result.objectId });
  await cdp.send('Runtime.releaseObject', { objectId: result.objectId });
  const onWindow = {};
  for (const l of listeners) onWindow[l.type] = (onWindow[l.type] ?? 0) + 1;
  return { documents: m.Documents, frames: m.Frames, nodes: m.Nodes, jsEventListeners: m.JSEventListeners, onWindow };
}

let calls, rounds;
const t0 = Date.now();
try {
  {
    const { page, cdp } = await open();
    const ev = (f, arg) => page.evaluate(f, arg);
    console.log(`scenario 1: ${CALLS} calls, half aborted, ${IN_FLIGHT} in flight …`);
    const cold = await ev(() => window.mem.callsSetup());
    const coldDom = await dom(cdp);
    const warmRun = await ev((o) => window.mem.callsRun(o), { total: WARM_CALLS, inFlight: IN_FLIGHT });
    const warm = await ev(() => window.mem.callsSnapshot());
    const run = await ev((o) => window.mem.callsRun(o), { total: CALLS, inFlight: IN_FLIGHT });
    const after = await ev(() => window.mem.callsSnapshot());
    const afterDom = await dom(cdp);
    await ev(() => window.mem.callsTeardown());
    calls = { cold, coldDom, warmRun, warm, run, after, afterDom };
    await page.close();
  }
  {
    const { page, cdp } = await open();
    const ev = (f, arg) => page.evaluate(f, arg);
    console.log(`scenario 2: ${ROUNDS} iframe connects/disconnects, ${PARALLEL} at a time …`);
    const cold = await ev(() => window.mem.roundsSetup());
    const coldDom = await dom(cdp);
    const warmRun = await ev((o) => window.mem.roundsRun(o), { total: WARM_ROUNDS, parallel: PARALLEL });
    const warm = await ev(() => window.mem.snapshot());
    const warmDom = await dom(cdp);
    const run = await ev((o) => window.mem.roundsRun(o), { total: ROUNDS, parallel: PARALLEL, from: WARM_ROUNDS });
    const after = await ev(() => window.mem.snapshot());
    const held = await ev(() => window.mem.roundsHeld());
    const afterDom = await dom(cdp);
    rounds = { cold, coldDom, warmRun, warm, warmDom, run, after, held, afterDom };
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}

const seconds = (Date.now() - t0) / 1000;
if (process.env.MEMORY_JSON === '1') console.log(JSON.stringify({ calls, rounds }, null, 2));

// ---- Correctness: the only thing that sets the exit code ----
const problems = [];
const expected = new Set(['ok', 'cancelled']);
for (const [name, run] of [['warm-up', calls.warmRun], ['run', calls.run]]) {
  for (const k of ['pendingCalls', 'activeCalls', 'queuedCalls']) {
    if (run[k] !== 0) problems.push(`calls (${name}): ${k} is ${run[k]} afterwards`);
  }
  for (const [o, n] of Object.entries(run.outcomes)) if (!expected.has(o)) problems.push(`calls (${name}): ${n} settled as "${o}"`);
}
for (const [name, run] of [['warm-up', rounds.warmRun], ['run', rounds.run]]) {
  if (run.pending) problems.push(`rounds (${name}): ${run.pending} clients still had pending calls`);
  if (run.connected) problems.push(`rounds (${name}): ${run.connected} clients still connected`);
  for (const f of run.failures) problems.push(`rounds (${name}): ${f}`);
}

// ---- The report ----
const n = (x) => x.toLocaleString('en-US');
const mib = (b) => `${(b / 1048576).toFixed(2)} MiB`;
const pages = (b) => `${mib(b)} (${b / 65536} pages)`;
const pct = (a, b) => `${a >= b ? '+' : ''}${(((a - b) / b) * 100).toFixed(1)}%`;
const within = (after, base) => after <= base * 1.1;
const verdict = (after, base) => `${pct(after, base)} ${within(after, base) ? 'PASS' : 'FAIL'}`;
const row = (what, f, c, w, a) => `| ${what} | ${f(c)} | ${f(w)} | ${f(a)} |`;
const listeners = (d) => `${d.onWindow.message ?? 0} / ${d.onWindow.pagehide ?? 0}`;
const chromiumVersion = (() => { try { return execSync(`${process.env.CHROMIUM ?? '/usr/bin/chromium'} --version 2>/dev/null`).toString().trim(); } catch { return 'chromium'; } })();
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${chromiumVersion}, Node ${process.version}`;
const c = calls, r = rounds;
const samples1 = c.run.samples.map((s) => `${n(s.calls)}: ${s.agentWasm / 65536}/${s.appWasm / 65536}`).join(', ');
const samples2 = r.run.samples.map((s) => `${n(s.rounds)}: ${s.agentWasm / 65536} (${s.unfinalized})`).join(', ');
const rule = [
  `agent after ${n(c.run.calls)} calls ${verdict(c.after.agentWasm, c.warm.agentWasm)}`,
  `app after ${n(c.run.calls)} calls ${verdict(c.after.appWasm, c.warm.appWasm)}`,
  `agent after ${n(r.run.rounds)} connects/disconnects ${verdict(r.after.agentWasm, r.warm.agentWasm)}`,
];
const fresh = [
  `agent ${pct(c.after.agentWasm, c.cold.agentWasm)}`, `app ${pct(c.after.appWasm, c.cold.appWasm)}`,
  `agent (connects/disconnects) ${pct(r.after.agentWasm, r.cold.agentWasm)}`,
];
const report = `Machine: ${machine}. Date: ${new Date().toISOString().slice(0, 10)}. The whole run took ${seconds.toFixed(0)} s.
Wasm memory is \`memory.buffer.byteLength\` (64 KiB pages; it never shrinks), after GC like every figure here.

**${n(c.run.calls)} calls, half of them aborted**, ${c.run.inFlight} in flight (peak ${c.run.peakInFlight}), agent build
(\`abp-wasm/agent\`) in the page, app build (\`abp-wasm/app\`) in a same-origin iframe, ${c.run.seconds.toFixed(1)} s. A quarter each: an echo;
an echo with a signal that never aborts and a timeout; an already-aborted signal; a call the app holds until
its signal aborts, aborted in flight. Warm-up: ${n(c.warmRun.calls)} calls of the same mix, ${c.warmRun.inFlight} in flight.

| after GC | fresh page (connected, 1 call) | after the warm-up | after the run |
|---|---|---|---|
${row('agent wasm memory', pages, c.cold.agentWasm, c.warm.agentWasm, c.after.agentWasm)}
${row('app wasm memory', pages, c.cold.appWasm, c.warm.appWasm, c.after.appWasm)}
${row('JS heap (page and frame)', mib, c.cold.heap, c.warm.heap, c.after.heap)}
${row('externref table, agent / app', (x) => x, `${c.cold.agentTable} / ${c.cold.appTable}`, `${c.warm.agentTable} / ${c.warm.appTable}`, `${c.after.agentTable} / ${c.after.appTable}`)}

Settled: ${Object.entries(c.run.outcomes).map(([o, k]) => `${n(k)} ${o}`).join(', ')}. Afterwards: pendingCalls ${c.run.pendingCalls}, activeCalls
${c.run.activeCalls}, queuedCalls ${c.run.queuedCalls}. Agent/app wasm pages every 10,000 calls (no GC): ${samples1}.

**${n(r.run.rounds)} iframe connects/disconnects**, ${PARALLEL} at a time, ${r.run.seconds.toFixed(0)} s (a round: p50 ${(r.run.roundMs.p50 ?? 0).toFixed(0)} ms, p99 ${(r.run.roundMs.p99 ?? 0).toFixed(0)} ms).
Each round: a new iframe running the app build, \`AbpClient.connect\` (${n(r.run.early)} of them before the app listened),
one call answered, one call left pending; then \`shutdown()\` (${n(r.run.shutdown)}) or the iframe removed without one
(${n(r.run.removed)}); the pending call must settle DISCONNECTED; the client is dropped. Warm-up: ${n(r.warmRun.rounds)} rounds. A connected
client has one message and one pagehide listener on the page (${listeners(c.coldDom)} in the first scenario).

| after GC | fresh page | after the warm-up | after the rounds |
|---|---|---|---|
${row('agent wasm memory', pages, r.cold.agentWasm, r.warm.agentWasm, r.after.agentWasm)}
${row('JS heap', mib, r.cold.heap, r.warm.heap, r.after.heap)}
${row('agent externref table', (x) => x, r.cold.agentTable, r.warm.agentTable, r.after.agentTable)}
${row('documents / frames (DevTools)', (x) => x, `${r.coldDom.documents} / ${r.coldDom.frames}`, `${r.warmDom.documents} / ${r.warmDom.frames}`, `${r.afterDom.documents} / ${r.afterDom.frames}`)}
${row('JS event listeners (DevTools)', (x) => x, r.coldDom.jsEventListeners, r.warmDom.jsEventListeners, r.afterDom.jsEventListeners)}
${row('the page\'s message / pagehide listeners', (x) => x, listeners(r.coldDom), listeners(r.warmDom), listeners(r.afterDom))}

Rounds that failed (connect, the echo, or the pending call not settled DISCONNECTED): ${r.run.failures.length}. Clients with pendingCalls ≠ 0 afterwards: ${r.run.pending};
still connected: ${r.run.connected}. Rounds' clients and iframes not collected after GC: ${r.held.clients} and ${r.held.frames}.
Most clients dropped but not yet collected at once: ${r.run.maxUnfinalized}. Agent wasm pages every 1,000 rounds (no GC; clients
not yet collected in brackets): ${samples2}.

10% rule, against the warmed-up figure: ${rule.join('; ')}.
Against the fresh page instead: ${fresh.join(', ')}.
Left pending or active: ${problems.length ? problems.length + ' problem(s)' : 'nothing'}.`;

console.log(`\n${report}\n`);
if (CALLS === 100000 && ROUNDS === 10000 && PARALLEL === 8 && process.env.MEMORY_FREE !== '1') writeSection(report);
else console.log('BENCHMARKS.md not rewritten: not a run of the default size');
if (problems.length) {
  console.error(`FAIL: something was left pending, active or connected, or settled the wrong way:\n- ${problems.join('\n- ')}`);
  process.exit(1);
}
console.log('OK: nothing left pending, active or connected');

/** Puts `report` between the markers of the "## Memory" section (made before "## Changelog of figures" the first time). */
function writeSection(report) {
  const start = '<!-- memory: written by npm run bench:memory -->', end = '<!-- end of memory -->';
  const doc = readFileSync('BENCHMARKS.md', 'utf8');
  let next;
  if (doc.includes(start) && doc.includes(end)) {
    next = doc.slice(0, doc.indexOf(start) + start.length) + '\n' + report + '\n' + doc.slice(doc.indexOf(end));
  } else {
    const section = `## Memory

\`npm run bench:memory\` (\`bench/memory.mjs\`, \`bench/memory.html\`) checks that after 100,000 calls (half aborted)
and after 10,000 iframe connects/disconnects nothing is left pending or active, and that wasm memory is back
within 10% of where it started. Everything between the markers is rewritten by each run of the default size. The
figures are reported, never asserted: the script fails only when something is left pending, active or connected,
or a call settles the wrong way.

${start}
${report}
${end}

`;
    const at = doc.indexOf('## Changelog of figures');
    next = at >= 0 ? doc.slice(0, at) + section + doc.slice(at) : `${doc}\n${section}`;
  }
  writeFileSync('BENCHMARKS.md', next);
  console.log('wrote BENCHMARKS.md (## Memory)');
}
