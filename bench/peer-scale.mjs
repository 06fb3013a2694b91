// `npm run bench:peer`: how much one abp-peer process holds and carries on this machine.
// Builds abp-peer and its load generator (peer/examples/scale.rs) in release, runs the generator with the
// open-files limit raised to the hard limit, and prints the figures. The generator starts every abp-peer it
// measures on 127.0.0.1 (port 0, its own token file, without --allow-exit) and prints one JSON object; this script
// formats it. BENCHMARKS.md ("abp-peer at scale") says what each figure means.
//
// Why the load is generated in Rust: holding 15,000 sockets and timing calls from Node 20 (no built-in WebSocket)
// would put a JavaScript client's cost into every figure; the generator holds idle sockets without a thread and
// runs the same client code against the peer and against its baselines.
//
// Bounded: the generator stops itself at its deadline (PEER_SCALE_DEADLINE, default 300 s), and this script kills
// its whole process group (the peers with it) at that deadline plus 30 s, on SIGINT/SIGTERM, and on any error.
//
// Environment: CARGO_TARGET_DIR (default target/), PEER_SCALE_STEPS (idle connections held, cumulative, default
// 1000,5000,10000,15000), PEER_SCALE_CONCURRENCY (calls in flight, default 1,64), PEER_SCALE_WINDOW (seconds per
// round, default 3), PEER_SCALE_CYCLES (times all are closed and opened again, default 2), PEER_SCALE_ONLY
// (idle,relay,gateway,cluster,caps,burst,tasks), PEER_SCALE_BURST (apps in the reconnect storm, default 10000), PEER_SCALE_JSON=1 (also print the raw JSON),
// BENCH_PEER (another abp-peer binary to measure, as in bench/mcp-http.mjs).
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.resolve(root, process.env.CARGO_TARGET_DIR ?? 'target');
const env = { ...process.env, PATH: `${os.homedir()}/.cargo/bin:${process.env.PATH}` };
const deadline = Number(process.env.PEER_SCALE_DEADLINE ?? 300);

// BENCH_PEER=path measures another abp-peer binary (a build before a change, say), built by whoever gave it; the
// generator is still built here.
const bins = process.env.BENCH_PEER ? ['--example', 'scale'] : ['--bin', 'abp-peer', '--example', 'scale'];
console.error(`peer-scale: cargo build --release -p abp-peer ${bins.join(' ')}`);
const build = spawnSync('cargo', ['build', '--release', '-p', 'abp-peer', ...bins],
  { cwd: root, env, stdio: 'inherit' });
if (build.status !== 0) {
  console.error('peer-scale: the build failed');
  process.exit(1);
}
const peerBin = process.env.BENCH_PEER ? path.resolve(process.env.BENCH_PEER) : path.join(target, 'release', 'abp-peer');
const generator = path.join(target, 'release', 'examples', 'scale');

const args = ['run', '--peer', peerBin, '--deadline', String(deadline)];
const pass = { PEER_SCALE_STEPS: '--steps', PEER_SCALE_CONCURRENCY: '--concurrency', PEER_SCALE_WINDOW: '--window',
  PEER_SCALE_ONLY: '--only', PEER_SCALE_CYCLES: '--reopen-cycles', PEER_SCALE_BURST: '--burst' };
for (const [name, flag] of Object.entries(pass)) if (process.env[name]) args.push(flag, process.env[name]);

// The soft limit on open files up to the hard one (each process holds one descriptor per connection); said, and
// the generator then measures only the steps that fit, if it cannot be raised.
const raise = 'h=$(ulimit -Hn); [ "$h" = unlimited ] && h=1048576; '
  + 'ulimit -n "$h" 2>/dev/null || echo "peer-scale: cannot raise the open-files limit to $h; it stays $(ulimit -n)" >&2; '
  + 'exec "$0" "$@"';
// Its own process group, so that one kill reaches the generator and every peer it started.
const child = spawn('bash', ['-c', raise, generator, ...args], { cwd: root, env, detached: true,
  stdio: ['ignore', 'pipe', 'inherit'] });
let running = true;
child.on('exit', () => { running = false; });

function killGroup(signal) {
  if (!running) return;
  try { process.kill(-child.pid, signal); } catch { /* already gone */ }
}
process.on('exit', () => killGroup('SIGKILL'));
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    console.error(`peer-scale: ${sig}: stopping the generator and its peers`);
    killGroup('SIGTERM');
    setTimeout(() => process.exit(130), 1000).unref();
  });
}
process.on('uncaughtException', (e) => {
  console.error('peer-scale:', e);
  killGroup('SIGKILL');
  process.exit(1);
});
const timer = setTimeout(() => {
  console.error(`peer-scale: no result after ${deadline + 30} s; stopping`);
  killGroup('SIGKILL');
  process.exit(1);
}, (deadline + 30) * 1000);

let out = '';
child.stdout.on('data', (d) => { out += d; });
const code = await new Promise((resolve) => child.on('close', (c, s) => resolve(c ?? s)));
clearTimeout(timer);
if (code !== 0) {
  console.error(`peer-scale: the generator ended with ${code}`);
  process.exit(1);
}
const r = JSON.parse(out);
if (process.env.PEER_SCALE_JSON === '1') console.log(JSON.stringify(r, null, 2));

const f = (x, d = 0) => (x == null ? '–' : Number(x).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }));
const ms = (us) => (us == null ? '–' : (us / 1000).toFixed(3));
const pct = (cores) => (cores == null ? '–' : `${(cores * 100).toFixed(1)} %`);
const kib = (k) => (k == null ? '–' : `${(k / 1024).toFixed(1)} MiB`);
const ratio = (a, b) => (a == null || b == null || b === 0 ? '–' : `${(a / b).toFixed(2)}×`);
const table = (head, rows) => {
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log();
};

const m = r.machine;
console.log(`\nMachine: ${m.cores} cores (${m.cpu}), ${(m.memKiB / 1048576).toFixed(0)} GiB, Linux ${m.kernel}; open files ${r.openFiles.soft} (hard ${r.openFiles.hard}); load average ${r.loadAverageAtStart} at the start, ${r.loadAverageAtEnd} at the end.\n`);

for (const idle of r.idle ?? []) {
  console.log(`Idle connections on ${idle.endpoint}: peer at 0 connections ${kib(idle.rssKiB0)} RSS, CPU ${pct(idle.cpuCores0)} of one core (over ${r.idleSampleSeconds} s).`);
  table(['connections', 'opened / failed', 'still open', 'open time', 'peer CPU (idle)', 'peer RSS', 'per connection', 'this step', 'threads', 'kernel slab added (machine)'],
    idle.steps.map((s) => [f(s.n), `${f(s.opened)} / ${f(s.failed)}`, f(s.stillOpen), `${s.openSeconds.toFixed(1)} s`,
      pct(s.cpuCores), kib(s.rssKiB), `${f(s.bytesPerConnection / 1024, 1)} KiB`,
      `${f(s.bytesPerConnectionThisStep / 1024, 1)} KiB`, f(s.threads), kib(s.kernelSlabKiBAdded)]));
  for (const s of idle.steps) if (s.firstError) console.log(`  first error at ${s.n}: ${s.firstError}`);
  for (const s of idle.skipped) console.log(`  skipped ${s.n}: ${s.why}`);
  const cycles = idle.reopenCycles.map((c) => `${kib(c.rssKiB)}${c.failed ? ` (${f(c.failed)} failed)` : ''}`);
  console.log(`  after closing all ${f(idle.closed)}: RSS ${kib(idle.rssKiBAfterClosing)}; with as many opened again, each`
    + ` time after closing the last: ${cycles.join(', ')}; peak ${kib(idle.peakRssKiB)}\n`);
}

const calls = (title, rows, base, subject) => {
  if (!rows) return;
  console.log(title);
  table(['in flight', 'path', 'calls/s', 'p50 ms', 'p99 ms', 'mean ms', 'errors', 'peer CPU', 'client CPU', 'calls/s vs baseline', 'p50 vs baseline'],
    rows.flatMap((row) => [
      [row.concurrency, base, f(row.baseline.callsPerSecond), ms(row.baseline.p50us), ms(row.baseline.p99us),
        ms(row.baseline.meanUs), row.baseline.errors, '–', pct(row.baseline.clientCores), '1.00×', '1.00×'],
      [row.concurrency, subject, f(row.subject.callsPerSecond), ms(row.subject.p50us), ms(row.subject.p99us),
        ms(row.subject.meanUs), row.subject.errors, pct(row.subject.peerCores), pct(row.subject.clientCores),
        ratio(row.subject.callsPerSecond, row.baseline.callsPerSecond), ratio(row.subject.p50us, row.baseline.p50us)],
    ]));
};
calls(`Calls through the relay (${r.windowSeconds} s × 2 rounds each, interleaved):`, r.relay,
  'baseline: WebSocket echo app in the client process', 'relay: /relay/R/agent → peer → /relay/R/app');
calls(`Calls through the MCP gateway (${r.windowSeconds} s × 2 rounds each, interleaved):`, r.gateway,
  'baseline: stdio MCP server answering itself', 'gateway: stdio → abp-peer mcp → ABP app on /agent');
calls(`A controller's calls across two processes sharing rooms over NATS (${r.windowSeconds} s × 2 rounds each, interleaved; peer CPU is B's):`,
  r.cluster, 'one process: /control/R on A → app on A', 'two: /control/R on B → NATS → A → app on A');
calls(`The cost of TLS to the NATS server: B's calls as above, against the same over a TLS server (${r.windowSeconds} s × 2 rounds each, interleaved; peer CPU is the TLS B's):`,
  r.clusterTls, 'B → NATS (plaintext, user and password) → A', 'B → NATS (TLS, user and password) → A');

const c = r.caps;
if (c) {
  const mib = (c.frameBytes * c.framesPerFlood / 1048576).toFixed(0);
  console.log(`Memory under the default caps: ${c.rooms} relay rooms, each flooded with ${mib} MiB in ${c.frameBytes / 1024} KiB frames, then 1,000 sockets that never send a request:`);
  table(['after', 'frames sent', 'senders closed', 'peer RSS', 'peer peak RSS'], [
    ['start (no connection)', '–', '–', kib(c.start.rssKiB), kib(c.start.peakKiB)],
    ['apps flooding agents that never read', f(c.unreadAgent.framesSent), `${c.unreadAgent.sendersClosed} of ${c.rooms}`,
      kib(c.unreadAgent.memory.rssKiB), kib(c.unreadAgent.memory.peakKiB)],
    ['apps alone flooding empty rooms', f(c.emptyRoom.framesSent), `${c.emptyRoom.sendersClosed} of ${c.rooms}`,
      kib(c.emptyRoom.memory.rssKiB), kib(c.emptyRoom.memory.peakKiB)],
    ['1,000 silent sockets', '–', '–', kib(c.silentSockets.memory.rssKiB), kib(c.silentSockets.memory.peakKiB)],
    ['all closed', '–', '–', kib(c.afterClosing.rssKiB), kib(c.afterClosing.peakKiB)],
  ]);
}

const b = r.burst;
if (b) {
  console.log(`\nA reconnect storm: ${f(b.apps)} relay apps connecting at once (50 threads, each connecting and sending its upgrade without waiting, then reading the answers):`);
  table(['apps', 'in (101)', 'refused or closed', 'could not connect', 'until the last was in', 'peer RSS then'],
    [[f(b.apps), f(b.accepted), f(b.refusedOrClosed), f(b.failedToConnect), `${b.secondsToLast.toFixed(2)} s`, kib(b.memory.rssKiB)]]);
  if (b.firstError) console.log(`  first error: ${b.firstError}`);
}

const t = r.tasks;
if (t) {
  console.log(`\n${f(t.tasks)} MCP tasks through abp-peer mcp on stdio, each finishing with a ${t.resultBytes / 1024} KiB result (made in ${t.secondsToMake.toFixed(1)} s):`);
  table(['gateway RSS before', 'once all finished', 'peak', 'tasks/get finds, first 100', 'last 100'],
    [[kib(t.before.rssKiB), kib(t.after.rssKiB), kib(t.after.peakKiB), t.firstHundredFound, t.lastHundredFound]]);
}
