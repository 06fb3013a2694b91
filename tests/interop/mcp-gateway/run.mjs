// `abp-peer mcp` proven against the official MCP SDKs (pinned in ../package.json): the SDK's `Client` over its
// `StdioClientTransport` spawns the gateway, exactly as an MCP host does, and a real browser app joins it (the page
// of tests/mcp_gateway.rs in headless Chrome and Firefox, run by wasm-pack). Each browser runs twice: with SDK 1
// (`@modelcontextprotocol/sdk`, a legacy host: `initialize`, server-to-client elicitation, list_changed unasked), and
// with SDK 2 (`@modelcontextprotocol/client`) negotiating the era itself (`versionNegotiation: 'auto'`: a probe copy
// of the gateway answers `server/discover` and is stopped, then the real copy starts on the same fixed port), so
// every request is of revision 2026-07-28: no handshake, elicitation by retry, list_changed through
// `subscriptions/listen`. Checks, per run:
//   no app: an empty tool list and an isError that says so; the app joining → tools/list_changed; tools with
//   their descriptions and input schemas (an unavailable capability is not a tool); a result as structuredContent
//   and JSON text; an ABP error as isError naming its code; progress with the host's token, all before the result;
//   the client's AbortSignal → notifications/cancelled → the handler's ctx.signal (latency measured); elicitation
//   both ways (confirm → accept → { confirmed: true }); a capability registered at run time → list_changed; the app
//   leaving mid-call → isError within 1 s; the host going away → the app's running call cancelled and the gateway
//   gone within 1 s (checked by the page and here).
// Two more runs per browser reach `abp-peer mcp --http` by URL, with the launch token as a bearer: the SDK 2 client
// over its StreamableHTTPClientTransport (2026-07-28: its abort closes the request's SSE stream, no
// notifications/cancelled), and the SDK 1 client over its own (a 2025-11-25 session: Mcp-Session-Id, its abort a
// POSTed notifications/cancelled); the same checks, and the host going away is SIGTERM.
// One more run per browser puts mcp-remote (the bridge many desktop hosts use for servers reached by URL) between
// the SDK 1 client on stdio and `abp-peer mcp --http`, with `--protocol auto`: it speaks 2026-07-28 to the gateway,
// and on a cancel POSTs the host's notifications/cancelled while it keeps the request's stream open; the same
// checks, the handler aborted by that notice.
// Usage: node tests/interop/mcp-gateway/run.mjs [chrome|firefox ...] [--sdk=1|2|http|http1|remote]   (abp-peer
// built; scripts/mcp-gateway.sh)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const peer = join(process.env.CARGO_TARGET_DIR ?? join(root, 'target'), 'debug', 'abp-peer');
/** The page's last lines without stack frames (Chrome's `    at …`, Firefox's `name@url:line:col`), so the
 *  failure's own message is what shows. */
const pageTail = (log, n) => log.split('\n')
  .filter((l) => !/^\s+at /.test(l) && !/@(https?:\/\/|\[native)|wasm-function\[/.test(l) && l.trim() !== '')
  .slice(-n).join('\n');
const named = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const browsers = named.length ? named : ['chrome', 'firefox'];
const sdkArg = process.argv.find((a) => a.startsWith('--sdk='))?.slice(6);
// 'http': SDK 2 over its StreamableHTTPClientTransport, to `abp-peer mcp --http` (which this script starts).
// 'http1': SDK 1 over its StreamableHTTPClientTransport, a 2025-11-25 session (initialize, Mcp-Session-Id).
// 'remote': SDK 1 on stdio to mcp-remote --protocol auto, which reaches `abp-peer mcp --http` at 2026-07-28.
const sdks = sdkArg ? [/^\d+$/.test(sdkArg) ? Number(sdkArg) : sdkArg] : [1, 2, 'http', 'http1', 'remote'];
const mcpRemote = join(root, 'tests', 'interop', 'node_modules', 'mcp-remote', 'dist', 'proxy.js');
const ABORT_ROUNDS = 20;
const ECHO_ROUNDS = 100;
const baselineServer = join(dirname(fileURLToPath(import.meta.url)), 'sdk-server.mjs');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const epochMs = () => performance.timeOrigin + performance.now();
function check(cond, what) {
  if (!cond) throw new Error(`failed: ${what}`);
  console.log(`  ok   ${what}`);
}
async function until(f, what, ms) {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}
const holdPort = () => new Promise((ok, bad) => {
  const s = createServer().listen(0, '127.0.0.1', () => ok(s));
  s.on('error', bad);
});
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const text = (result) => result.content?.find((c) => c.type === 'text')?.text ?? '';

/** A free port, for a gateway that must be started twice on the same one. */
async function freePort() {
  const s = await holdPort();
  const port = s.address().port;
  await new Promise((ok) => s.close(ok));
  return port;
}

/** The SDK's client with the same surface for both major versions and both transports: `callTool(params,
 *  options)`, the gateway's stderr and pid, `connect()`, and `goAway()` (the host closes stdin; over HTTP the
 *  gateway is stopped with SIGTERM, as a supervisor would). */
function clientOf(sdk, listen, origin, onChanged, onAsked) {
  const info = { name: 'abp-gateway-test', version: '1.0.0' };
  const args = ['mcp', '--listen', listen, '--allow-origin', origin];
  // The gateway keeps its launch token in a state folder: its own, so that the user's stays untouched.
  const env = { ...process.env, XDG_STATE_HOME: mkdtempSync(join(tmpdir(), 'abp-gateway-state-')) };
  if (sdk === 1) {
    const transport = new StdioV1({ command: peer, args, env, stderr: 'pipe' });
    const client = new ClientV1(info, { capabilities: { elicitation: {} } });
    client.setNotificationHandler(ToolListChangedNotificationSchema, onChanged);
    client.setRequestHandler(ElicitRequestSchema, async (request) => onAsked(request.params));
    return { client, stderr: transport.stderr, pid: () => transport.pid, connect: () => client.connect(transport),
      goAway: () => client.close(), callTool: (params, options) => client.callTool(params, undefined, options) };
  }
  let client;
  let callTool;
  if (sdk === 'http1' || sdk === 'remote') {
    client = new ClientV1(info, { capabilities: { elicitation: {} } });
    client.setNotificationHandler(ToolListChangedNotificationSchema, onChanged);
    client.setRequestHandler(ElicitRequestSchema, async (request) => onAsked(request.params));
    callTool = (params, options) => client.callTool(params, undefined, options);
  } else {
    client = new ClientV2(info, { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' } });
    client.setNotificationHandler('notifications/tools/list_changed', onChanged);
    client.setRequestHandler('elicitation/create', async (request) => onAsked(request.params));
    callTool = (params, options) => client.callTool(params, options);
  }
  if (sdk === 2) {
    const transport = new StdioV2({ command: peer, args, env, stderr: 'pipe' });
    return { client, stderr: transport.stderr, pid: () => transport.pid, connect: () => client.connect(transport),
      goAway: () => client.close(), callTool };
  }
  const token = randomBytes(24).toString('hex');
  const gateway = spawn(peer, [...args, '--http', '127.0.0.1:0', '--token-file', join(tmpdir(), `abp-http-${process.pid}.token`)],
    { env: { ...process.env, ABP_PEER_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  gateway.stderr.on('data', (c) => { log += c; });
  // mcp-remote keeps what it learns about servers in a folder of its own: a fresh one, removed at the end.
  const remoteState = sdk === 'remote' ? mkdtempSync(join(tmpdir(), 'abp-mcp-remote-')) : undefined;
  const connect = async () => {
    const url = await until(() => /abp-peer mcp on (http:\/\/\S+)\r?\n/.exec(log)?.[1], 'the gateway\'s HTTP endpoint', 10000);
    if (sdk === 'remote') {
      const bridge = new StdioV1({ command: process.execPath,
        args: [mcpRemote, url, '--header', `Authorization:Bearer ${token}`, '--protocol', 'auto'],
        env: { ...process.env, MCP_REMOTE_CONFIG_DIR: remoteState }, stderr: 'pipe' });
      let said = '';
      bridge.stderr.on('data', (c) => { said += c; });
      try {
        await client.connect(bridge);
      } catch (e) {
        throw new Error(`mcp-remote did not connect: ${e.message}\n${said.split('\n').slice(-15).join('\n')}`);
      }
      return;
    }
    const requestInit = { headers: { Authorization: `Bearer ${token}` } };
    await client.connect(sdk === 'http' ? new StreamableHTTPClientTransport(new URL(url), { requestInit })
      : new HttpV1(new URL(url), { requestInit }));
  };
  const goAway = async () => {
    gateway.kill('SIGTERM');
    if (remoteState) rmSync(remoteState, { recursive: true, force: true });
  };
  return { client, stderr: gateway.stderr, pid: () => gateway.pid, connect, goAway, callTool };
}

async function run(browser, sdk) {
  const http = sdk === 'http' || sdk === 'http1' || sdk === 'remote';
  const modern = sdk === 2 || sdk === 'http';
  const over = { http: 'SDK 2 client over Streamable HTTP (abp-peer mcp --http)',
    http1: 'SDK 1 client over Streamable HTTP, a 2025-11-25 session (abp-peer mcp --http)',
    remote: 'SDK 1 client on stdio through mcp-remote --protocol auto (2026-07-28 to abp-peer mcp --http)' }[sdk]
    ?? `SDK ${sdk} client`;
  console.log(`== abp-peer mcp: the official MCP ${over}, the app in headless ${browser}`);
  // The page's port stays held until the page starts, so the gateway's own port cannot be it.
  const held = await holdPort();
  const pagePort = held.address().port;
  const origin = `http://127.0.0.1:${pagePort}`;
  let listChanged = 0;
  const asked = [];
  // SDK 2 starts the gateway twice (its version probe, then the real one), on this one port.
  const listen = sdk === 2 ? `127.0.0.1:${await freePort()}` : '127.0.0.1:0';
  const host = clientOf(sdk, listen, origin, () => { listChanged++; }, (params) => {
    asked.push(params);
    return { action: 'accept', content: {} };
  });
  const { client, callTool } = host;
  let stderr = '';
  host.stderr.on('data', (chunk) => { stderr += chunk; });
  await host.connect();
  if (modern) {
    const discovered = client.getDiscoverResult();
    check(discovered?._meta?.['io.modelcontextprotocol/serverInfo']?.name === 'abp-peer'
      && discovered.supportedVersions.includes('2026-07-28'),
    'the probe copy answered server/discover: the client speaks 2026-07-28, with no initialize');
    const subscription = await client.listen({ toolsListChanged: true });
    check(subscription.honoredFilter?.toolsListChanged === true, 'subscriptions/listen acknowledged with toolsListChanged');
  }
  const gatewayPid = host.pid();
  // The whole line: stderr arrives in chunks, and a chunk can end in the middle of the address.
  const url = await until(() => /abp-peer listening on (ws:\/\/\S+)\r?\n/.exec(stderr)?.[1], 'the gateway to listen', 10000);

  // No app yet.
  check((await client.listTools()).tools.length === 0, 'no app: tools/list is empty');
  const none = await callTool({ name: 'echo', arguments: { text: 'x' } });
  check(none.isError === true && /No app is connected/.test(text(none)), `no app: tools/call is an isError that says so (${text(none)})`);

  // The app joins (the page builds first: allow for that).
  await new Promise((ok) => held.close(ok));
  const page = spawn('wasm-pack', ['test', '--headless', `--${browser}`, '--test', 'mcp_gateway'], {
    cwd: root,
    env: {
      ...process.env,
      MCP_GATEWAY_URL: `${url}/agent`,
      WASM_BINDGEN_TEST_ADDRESS: `127.0.0.1:${pagePort}`,
      WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION: '1',
      WASM_BINDGEN_TEST_TIMEOUT: '300',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let pageLog = '';
  page.stdout.on('data', (c) => { pageLog += c; });
  page.stderr.on('data', (c) => { pageLog += c; });
  const pageDone = new Promise((ok) => page.on('exit', (code) => ok(code)));
  // Keeps the runner's page server answering while the page loads and runs: with the snippets of every Rust file
  // the page asks for many modules at once, and the server can leave one unread (scripts/nudge-runner.mjs says why).
  const nudger = spawn(process.execPath, [join(root, 'scripts', 'nudge-runner.mjs'), `127.0.0.1:${pagePort}`, String(process.pid)],
    { stdio: 'ignore' });
  page.on('exit', () => nudger.kill());
  try {
    await until(async () => listChanged > 0 || pageLog.includes('test result'), 'the app to join (tools/list_changed)', 240000);
    const tools = (await client.listTools()).tools;
    const names = tools.map((t) => t.name).sort();
    check(JSON.stringify(names) === JSON.stringify(['confirm', 'echo', 'events', 'fail', 'grow', 'leave', 'slow', 'steps']),
      `the app joined: tools/list_changed, one tool per available capability (${names.join(', ')})`);
    const echoTool = tools.find((t) => t.name === 'echo');
    check(echoTool.description === 'Returns its arguments' && echoTool.inputSchema.required?.[0] === 'text',
      'a tool keeps the capability\'s description and inputSchema');

    const echoed = await callTool({ name: 'echo', arguments: { text: 'hi' } });
    check(!echoed.isError && echoed.structuredContent?.text === 'hi' && JSON.parse(text(echoed)).text === 'hi',
      'a result: structuredContent and its JSON as text');
    if (sdk !== 1) {
      const times = [];
      for (let i = 0; i < ECHO_ROUNDS; i++) {
        const t0 = performance.now();
        await callTool({ name: 'echo', arguments: { text: 'hi' } });
        times.push(performance.now() - t0);
      }
      console.log(`  figure: ${modern ? 'modern' : 'legacy'} tools/call round trip through the gateway${http ? ' over HTTP' : ''} to the ${browser} app, median ${median(times).toFixed(3)} ms over ${ECHO_ROUNDS}`);
    }
    const refused = await callTool({ name: 'fail', arguments: {} });
    check(refused.isError === true && text(refused) === 'PERMISSION_DENIED: not allowed here',
      `an ABP error: isError with the code and message (${text(refused)})`);
    const invalid = await callTool({ name: 'echo', arguments: {} });
    check(invalid.isError === true && /^INVALID_PARAMS: /.test(text(invalid)), `the app's own schema check: ${text(invalid)}`);

    const progress = [];
    const stepped = await callTool({ name: 'steps', arguments: { n: 5 } }, {
      onprogress: (p) => progress.push(p),
    });
    check(progress.length === 5 && progress.map((p) => p.progress).join() === '1,2,3,4,5' && progress[4].total === 5
      && progress[4].message === 'step 5 of 5' && stepped.structuredContent?.done === 5,
    `progress with the host's token, every update before the result (${progress.map((p) => p.progress).join(',')})`);

    // Cancellation: the SDK client's AbortSignal reaches the handler's ctx.signal.
    const latencies = [];
    for (let i = 0; i < ABORT_ROUNDS; i++) {
      const tag = `abort-${i}`;
      const controller = new AbortController();
      const call = callTool({ name: 'slow', arguments: { tag } }, { signal: controller.signal });
      const settled = call.then(() => 'resolved', () => 'rejected');
      await until(async () => (await events(callTool)).some((e) => e.tag === tag && e.event === 'started'), 'the slow call to start', 5000);
      const abortedAt = epochMs();
      controller.abort('user pressed stop');
      if ((await settled) !== 'rejected') throw new Error('failed: the client did not settle its aborted call');
      const seen = await until(async () => (await events(callTool)).find((e) => e.tag === tag && e.event === 'aborted'), 'the handler signal to abort', 5000);
      latencies.push(seen.at - abortedAt);
      if (i === 0 && sdk === 'remote') {
        // The stream stays open (mcp-remote keeps it): only the POSTed notice can have cancelled the call.
        check(/user pressed stop|notifications\/cancelled/.test(seen.reason) && !/closed the request's stream/.test(seen.reason),
          `mcp-remote POSTed the host's notifications/cancelled → ctx.signal aborted (reason: ${seen.reason})`);
      } else if (i === 0) {
        check(/user pressed stop|cancelled|closed the request's stream/.test(seen.reason), sdk === 'http'
          ? `the request's SSE stream closed → ctx.signal aborted (reason: ${seen.reason})`
          : `notifications/cancelled → ctx.signal aborted (reason: ${seen.reason})`);
      }
    }
    const m = median(latencies);
    console.log(`  figure: client AbortSignal → browser handler ctx.signal${http ? ` over HTTP (${modern ? 'modern' : 'legacy'})` : ''}, median ${m.toFixed(2)} ms over ${ABORT_ROUNDS} (min ${Math.min(...latencies).toFixed(2)}, max ${Math.max(...latencies).toFixed(2)}) [${browser}]`);
    if (sdk === 'http') check(Math.max(...latencies) < 500, 'every stream closed → its handler aborted within 500 ms');
    if (sdk === 'remote') check(Math.max(...latencies) < 500, 'every notice → its handler aborted within 500 ms');

    const confirmed = await callTool({ name: 'confirm', arguments: { message: 'Delete the draft?' } });
    check(asked.length === 1 && asked[0].message === 'Delete the draft?' && asked[0].requestedSchema?.type === 'object'
      && confirmed.structuredContent?.answer?.data?.confirmed === true,
    !modern ? 'ctx.elicit(confirm) → elicitation/create to the host; accept → { confirmed: true }'
      : 'ctx.elicit(confirm) → an InputRequiredResult, answered by the SDK\'s retry; accept → { confirmed: true }');

    const before = listChanged;
    await callTool({ name: 'grow', arguments: {} });
    await until(() => listChanged > before, 'tools/list_changed after a registration', 5000);
    check((await client.listTools()).tools.some((t) => t.name === 'extra'), 'a capability registered at run time → list_changed → a new tool');

    // The app leaves mid-call: the host gets an isError within a second.
    const pending = callTool({ name: 'slow', arguments: { tag: 'left' } });
    await until(async () => (await events(callTool)).some((e) => e.tag === 'left'), 'the call that will lose its app', 5000);
    const leaveAt = Date.now();
    await callTool({ name: 'leave', arguments: { afterMs: 50 } });
    const lost = await pending;
    const took = Date.now() - leaveAt - 50;
    check(lost.isError === true && /DISCONNECTED/.test(text(lost)) && took < 1000, `the app leaving mid-call → isError in ${took} ms (${text(lost)})`);
    // (The page's next app may already have joined: then the list is that app's, without the gone app's tools.)
    await until(async () => !(await client.listTools()).tools.some((t) => t.name === 'echo'), 'the app\'s tools to go', 5000);
    check(true, 'the app gone → tools/list_changed, its tools gone');

    // App B joins; the host goes away while its call runs.
    await until(async () => (await client.listTools()).tools.some((t) => t.name === 'slow'), 'app B to join', 30000);
    callTool({ name: 'slow', arguments: { tag: 'host-gone' } }).catch(() => {});
    await sleep(300);
    const closedAt = Date.now();
    await host.goAway();
    const exited = await until(() => { try { process.kill(gatewayPid, 0); return false; } catch { return true; } }, 'the gateway to exit', 5000);
    const exitMs = Date.now() - closedAt;
    check(exited && exitMs < 1000, http ? `SIGTERM → the gateway exits in ${exitMs} ms`
      : `the host gone (stdin closed) → the gateway exits in ${exitMs} ms`);
    const code = await Promise.race([pageDone, sleep(60000).then(() => 'hung')]);
    if (code !== 0) {
      console.log(pageTail(pageLog, 40));
    }
    check(code === 0, 'the page: app B\'s running call was cancelled with the gateway\'s reason, no page errors');
    try {
      await new Promise((ok, bad) => { const s = createServer(); s.listen(Number(new URL(url).port), '127.0.0.1', () => s.close(ok)); s.on('error', bad); });
      check(true, 'nothing is left listening on the gateway\'s port');
    } catch {
      throw new Error('failed: the gateway\'s port is still in use');
    }
    return m;
  } catch (e) {
    console.log(pageTail(pageLog, 30));
    console.log(stderr.split('\n').slice(-20).join('\n'));
    throw e;
  } finally {
    page.kill();
    await client.close().catch(() => {});
  }
}

/** What the app's handlers saw (an array: it comes back as JSON text, structuredContent being for objects). */
async function events(callTool) {
  return JSON.parse(text(await callTool({ name: 'events', arguments: {} })));
}

/** The same measurements against the SDK 2 server (sdk-server.mjs), spawned by the SDK 2 client: the baseline. */
async function baseline() {
  console.log('== baseline: the official MCP SDK 2 client and server on stdio, in this process');
  const transport = new StdioV2({ command: process.execPath, args: [baselineServer], stderr: 'pipe' });
  let stderr = '';
  transport.stderr.on('data', (chunk) => { stderr += chunk; });
  const client = new ClientV2({ name: 'abp-gateway-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(transport);
  check(client.getDiscoverResult()?.supportedVersions?.includes('2026-07-28'), 'the SDK 2 server speaks 2026-07-28');
  const times = [];
  for (let i = 0; i < ECHO_ROUNDS; i++) {
    const t0 = performance.now();
    await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    times.push(performance.now() - t0);
  }
  console.log(`  figure: modern tools/call round trip, SDK 2 client → SDK 2 server, median ${median(times).toFixed(3)} ms over ${ECHO_ROUNDS}`);
  const latencies = [];
  for (let i = 0; i < ABORT_ROUNDS; i++) {
    const tag = `abort-${i}`;
    const controller = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: { tag } }, { signal: controller.signal }).catch(() => {});
    await sleep(50);
    const abortedAt = epochMs();
    controller.abort('stop');
    await call;
    const seen = await until(() => new RegExp(`aborted ${tag} (\\S+)`).exec(stderr), 'the SDK server\'s handler to see the abort', 5000);
    latencies.push(Number(seen[1]) - abortedAt);
  }
  console.log(`  figure: client AbortSignal → SDK 2 server handler signal, median ${median(latencies).toFixed(2)} ms over ${ABORT_ROUNDS} (min ${Math.min(...latencies).toFixed(2)}, max ${Math.max(...latencies).toFixed(2)})`);
  await client.close();
}

let failed = false;
if (sdks.includes(2)) {
  try {
    await baseline();
  } catch (e) {
    console.error(`the SDK 2 baseline: ${e.stack ?? e}`);
    failed = true;
  }
}
for (const browser of browsers) {
  for (const sdk of sdks) {
    try {
      await run(browser, sdk);
    } catch (e) {
      console.error(`abp-peer mcp with SDK ${sdk} in ${browser}: ${e.stack ?? e}`);
      failed = true;
    }
  }
}
process.exit(failed ? 1 : 0);
