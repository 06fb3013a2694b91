// `npm run bench:mcp-http`: MCP over Streamable HTTP (revision 2026-07-28), the official SDK 2 client
// (`@modelcontextprotocol/client`, pinned in tests/interop) calling a small `echo` tool, in one process and run:
//   - the baseline: the official SDK 2 server (`@modelcontextprotocol/server`) serving the tool itself, stateless,
//     through its `createMcpHandler` on a Node HTTP server in a process of its own (bench/mcp-http-sdk-server.mjs);
//   - the subject: `abp-peer mcp --http` (release build), with the tool a capability of a browser app (pkg/,
//     bench/mcp-http-app.html) that joined the gateway over WebSocket, in headless Chromium (BENCH_BROWSER=firefox:
//     Firefox) started on the page with no test driver attached (bench/direct.mjs: a driver in this process would
//     also be told of every WebSocket frame, and this process is the client being measured);
//   - with nats-server installed (BENCH_NATS=0 leaves it out): both gateways run with `--nats` (a locked server: a
//     user allowed abp.> only), and a third side calls a second `abp-peer mcp --http` process without the app, which
//     passes each request to the first; a fourth does the same on a second pair of gateways whose NATS server is
//     reached over TLS (with its own app page), so TLS's cost per call is read beside the plaintext one.
// For each number of calls in flight (BENCH_CONCURRENCY, default 1,16): calls/s, p50 and p99 over BENCH_WINDOW
// seconds (default 3, after half a second of warm-up), two rounds each, interleaved, with the CPU time the server
// side used per call (the SDK server's process; the gateway's and all of the browser's) and the client's (this
// process, which runs nothing else meanwhile). Then abort → handler: the
// client's AbortSignal to the handler's signal (the SDK server's own; the page's ctx.signal through the gateway),
// BENCH_ABORTS times (default 20), read on both ends from performance.timeOrigin + performance.now().
// BENCH_OTLP=1 has each gateway export its spans (`--otlp`) to a collector in this process that drops them.
// Needs `npm run build` (pkg/) and `node tests/interop/build.mjs` (the SDKs); builds abp-peer itself.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch } from './direct.mjs';
import { serve } from '../www/serve.mjs';
import { natsInstalled, startNats } from '../scripts/nats-locked.mjs';

const modules = new URL('../tests/interop/node_modules/', import.meta.url);
const { Client, StreamableHTTPClientTransport } = await import(new URL('@modelcontextprotocol/client/dist/index.mjs', modules));

const concurrency = (process.env.BENCH_CONCURRENCY ?? '1,16').split(',').map(Number);
const windowS = Number(process.env.BENCH_WINDOW ?? 3);
const aborts = Number(process.env.BENCH_ABORTS ?? 20);
const epochMs = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
async function until(f, what, ms = 30000) {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// CPU time (user + system, ms) that the processes `pids` and all their descendants have used, from /proc: what a
// server side costs per call, whichever process runs it (the SDK server; the gateway and the browser's processes).
const tick = 1000 / Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim() || 100);
function cpuMs(pids) {
  const stats = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      stats.push({ pid: Number(d), ppid: Number(f[1]), ms: (Number(f[11]) + Number(f[12])) * tick });
    } catch { /* gone meanwhile */ }
  }
  const mine = new Set(pids);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of stats) if (!mine.has(p.pid) && mine.has(p.ppid)) { mine.add(p.pid); grew = true; }
  }
  return stats.filter((p) => mine.has(p.pid)).reduce((sum, p) => sum + p.ms, 0);
}

// The browser's processes: this process's children other than the servers.
function browserPids() {
  const ours = new Set([sdk.pid, gateway.pid, other?.pid, nats?.proc.pid, gatewayTls?.pid, otherTls?.pid, natsTls?.proc.pid]);
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number).filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid && !ours.has(pid);
    } catch { return false; }
  });
}

// ---- the baseline: the SDK 2 server, in a Node process of its own (bench/mcp-http-sdk-server.mjs) ------------
const sdkAborted = new Map();
const sdk = spawn(process.execPath, [new URL('./mcp-http-sdk-server.mjs', import.meta.url).pathname],
  { stdio: ['ignore', 'ignore', 'pipe'] });
let sdkLog = '';
sdk.stderr.on('data', (c) => {
  sdkLog += c;
  for (const m of String(c).matchAll(/aborted (\S+) (\S+)/g)) sdkAborted.set(m[1], Number(m[2]));
});
const sdkUrl = `http://127.0.0.1:${await until(() => /listening (\d+)/.exec(sdkLog)?.[1], 'the SDK server')}/mcp`;

// ---- the subject: abp-peer mcp --http, and the app in headless Chromium --------------------------------------
// BENCH_PEER=path measures another abp-peer binary (a build before a change, say), built by whoever gave it.
const peerBin = process.env.BENCH_PEER ?? 'target/release/abp-peer';
if (!process.env.BENCH_PEER) console.error('mcp-http: cargo build --release -p abp-peer');
if (!process.env.BENCH_PEER
  && spawnSync('cargo', ['build', '--release', '-q', '-p', 'abp-peer'], { stdio: 'inherit' }).status !== 0) process.exit(1);
// What the app page posts (bench/mcp-http-app.html): that it listens, and when a `slow` call's signal aborted.
const pageAborted = new Map();
// Each app page reports under its own name (`report=app`, and `report=app-tls` for the TLS cluster's).
const pageReady = new Map();
const readyOf = (name) => new Promise((ok, fail) => { pageReady.set(name, { ok, fail }); });
const pages = await serve(0, {
  onPost(url, body) {
    let r;
    try { r = JSON.parse(body); } catch { return; }
    const page = pageReady.get(String(url).includes('app-tls') ? 'app-tls' : 'app');
    if (r?.error) page?.fail(new Error(`the app page failed: ${r.error}`));
    else if (r?.ready) page?.ok();
    else if (typeof r?.aborted === 'string') pageAborted.set(r.aborted, Number(r.at));
  },
});
const pageOrigin = `http://127.0.0.1:${pages.address().port}`;
const token = randomBytes(24).toString('hex');
// Two NATS servers, locked as abp-peer requires (a user allowed abp.> only, a password): one plaintext, one with TLS,
// each with its own pair of gateways and app page, so that TLS's cost per call is measured beside the plaintext.
let nats;
let natsTls;
if (natsInstalled() && process.env.BENCH_NATS !== '0') {
  nats = await startNats({ tls: false });
  natsTls = await startNats({ tls: true });
}
// BENCH_OTLP=1: every gateway exports its spans (`--otlp`) to a collector here that takes them and counts the bytes.
let otlpArgs = [];
let otlpBytes = 0;
if (process.env.BENCH_OTLP === '1') {
  const sink = createServer((req, res) => {
    req.on('data', (c) => { otlpBytes += c.length; });
    req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end());
  });
  await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sink.unref();
  otlpArgs = ['--otlp', `http://127.0.0.1:${sink.address().port}`];
  process.on('exit', () => console.log(`mcp-http: the gateways exported ${(otlpBytes / 1024).toFixed(0)} KiB of spans`));
}
const startGateway = (name, natsArgs = []) => {
  const child = spawn(peerBin, ['mcp', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0', ...otlpArgs,
    '--allow-origin', pageOrigin, ...natsArgs, '--token-file', join(tmpdir(), `abp-bench-http-${process.pid}-${name}.token`)],
  { env: { ...process.env, ABP_PEER_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  child.log = '';
  child.stderr.on('data', (c) => { child.log += c; });
  return child;
};
const gateway = startGateway('a', nats?.args);
const other = nats ? startGateway('b', nats.args) : null;
const gatewayTls = natsTls ? startGateway('a-tls', natsTls.args) : null;
const otherTls = natsTls ? startGateway('b-tls', natsTls.args) : null;
const log = () => gateway.log;
const browserName = process.env.BENCH_BROWSER ?? 'chromium';
const browserLabel = { chromium: 'Chromium', firefox: 'Firefox' }[browserName] ?? browserName;
let browser;
let browserTls;
const clients = [];
try {
  const ws = await until(() => /abp-peer listening on (ws:\/\/\S+)\r?\n/.exec(log())?.[1], 'the gateway');
  const gatewayUrl = await until(() => /abp-peer mcp on (http:\/\/\S+)\r?\n/.exec(log())?.[1], 'the HTTP endpoint');
  const ready = readyOf('app');
  browser = launch(browserName, `${pageOrigin}/bench/mcp-http-app.html?report=app&ws=${encodeURIComponent(ws)}`);
  await Promise.race([ready, browser.exited,
    sleep(30000).then(() => { throw new Error(`${browserLabel}: the app page did not report ready within 30 s`); })]);

  const connect = async (url, headers) => {
    const client = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    clients.push(client);
    return client;
  };
  const sides = [
    { name: 'SDK 2 server (Node, stateless HTTP), the baseline', client: await connect(sdkUrl, {}),
      abortedAt: (tag) => sdkAborted.get(tag), pids: [sdk.pid] },
    { name: `abp-peer mcp --http → app in ${browserLabel}`, client: await connect(gatewayUrl, { Authorization: `Bearer ${token}` }),
      abortedAt: (tag) => pageAborted.get(tag), pids: [gateway.pid, ...browserPids()] },
  ];
  if (other) {
    const otherUrl = await until(() => /abp-peer mcp on (http:\/\/\S+)\r?\n/.exec(other.log)?.[1], 'the second gateway');
    sides.push({ name: `abp-peer mcp --http on B → NATS → A → app in ${browserLabel}`,
      client: await connect(otherUrl, { Authorization: `Bearer ${token}` }), abortedAt: sides[1].abortedAt,
      pids: [other.pid, gateway.pid, nats.proc.pid, ...browserPids()] });
  }
  if (otherTls) {
    // The TLS cluster's own app page, in a browser of its own (its CPU counted from that browser's process tree).
    const wsTls = await until(() => /abp-peer listening on (ws:\/\/\S+)\r?\n/.exec(gatewayTls.log)?.[1], 'the TLS gateway');
    const readyTls = readyOf('app-tls');
    browserTls = launch(browserName, `${pageOrigin}/bench/mcp-http-app.html?report=app-tls&ws=${encodeURIComponent(wsTls)}`);
    await Promise.race([readyTls, browserTls.exited,
      sleep(30000).then(() => { throw new Error(`${browserLabel}: the TLS cluster's app page did not report ready within 30 s`); })]);
    const otherTlsUrl = await until(() => /abp-peer mcp on (http:\/\/\S+)\r?\n/.exec(otherTls.log)?.[1], 'the TLS cluster\'s B');
    sides.push({ name: `abp-peer mcp --http on B → NATS over TLS → A → app in ${browserLabel}`,
      client: await connect(otherTlsUrl, { Authorization: `Bearer ${token}` }), abortedAt: sides[1].abortedAt,
      pids: [otherTls.pid, gatewayTls.pid, natsTls.proc.pid, browserTls.child.pid] });
  }
  for (const side of sides.slice(1)) {
    await until(async () => (await side.client.listTools()).tools.some((t) => t.name === 'echo'), 'the app to join');
  }

  // Calls/s and latency: `n` loops, each calling echo again as soon as it returns; and the server side's CPU time
  // over the window.
  const measure = async (side, n) => {
    const times = [];
    let measuring = false;
    let stop = false;
    const loop = async () => {
      while (!stop) {
        const t0 = performance.now();
        await side.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        if (measuring && !stop) times.push(performance.now() - t0);
      }
    };
    const loops = Array.from({ length: n }, loop);
    await sleep(500);
    measuring = true;
    const cpu0 = cpuMs(side.pids);
    const own0 = process.cpuUsage();
    await sleep(windowS * 1000);
    const cpu = cpuMs(side.pids) - cpu0;
    const own = process.cpuUsage(own0);
    stop = true;
    await Promise.all(loops);
    return { times, cpu, client: (own.user + own.system) / 1000 };
  };
  const rows = [];
  for (const n of concurrency) {
    const pooled = sides.map(() => []);
    const cpu = sides.map(() => 0);
    const client = sides.map(() => 0);
    for (let round = 0; round < 2; round++) {
      const order = sides.map((_, i) => i);
      if (round % 2) order.reverse();
      for (const i of order) {
        const m = await measure(sides[i], n);
        pooled[i].push(...m.times);
        cpu[i] += m.cpu;
        client[i] += m.client;
      }
    }
    const base = pooled[0].length / (2 * windowS);
    const baseCpu = cpu[0] / pooled[0].length;
    pooled.forEach((times, i) => {
      const perS = times.length / (2 * windowS);
      const cpuPerCall = cpu[i] / times.length;
      rows.push([n, sides[i].name, perS.toFixed(0), quantile(times, 0.5).toFixed(3), quantile(times, 0.99).toFixed(3),
        `${(perS / base).toFixed(2)}×`, cpuPerCall.toFixed(3), `${(cpuPerCall / baseCpu).toFixed(2)}×`,
        (client[i] / times.length).toFixed(3)]);
    });
  }
  console.log(`\nCalls over Streamable HTTP (${windowS} s × 2 rounds each, interleaved), the SDK 2 client in Node:`);
  console.log('| in flight | server | calls/s | p50 ms | p99 ms | calls/s vs baseline | server CPU ms/call | vs baseline | client CPU ms/call |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);

  console.log(`\nAbort → handler (${aborts} times each): the client's AbortSignal to the handler's signal`);
  console.log('| server | median ms | min | max |');
  console.log('|---|---|---|---|');
  for (const side of sides) {
    const latencies = [];
    for (let i = 0; i < aborts; i++) {
      const tag = `a${i}-${sides.indexOf(side)}`;
      const controller = new AbortController();
      const call = side.client.callTool({ name: 'slow', arguments: { tag } }, { signal: controller.signal }).catch(() => {});
      await sleep(50);
      const at = epochMs();
      controller.abort('stop');
      await call;
      const seen = await until(() => side.abortedAt(tag), 'the handler to see the abort', 5000);
      latencies.push(seen - at);
    }
    console.log(`| ${side.name} | ${quantile(latencies, 0.5).toFixed(2)} | ${Math.min(...latencies).toFixed(2)} | ${Math.max(...latencies).toFixed(2)} |`);
  }
} finally {
  for (const c of clients) await c.close().catch(() => {});
  await browser?.close();
  await browserTls?.close();
  for (const g of [gateway, other, gatewayTls, otherTls]) g?.kill('SIGTERM');
  nats?.stop();
  natsTls?.stop();
  sdk.kill();
  pages.close();
}
