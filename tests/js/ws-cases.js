// WebSocket test cases, against a real abp-peer on 127.0.0.1 that scripts/test.sh starts (in a restart loop,
// so a case can kill it) and stops. Run by tests/websocket.rs in headless Chrome and Firefox.
// - Browser ↔ browser through the relay: an AbpApp and an AbpClient on this page, each on its own socket to
//   /relay/<room>/app and /relay/<room>/agent.
// - Native agent ↔ browser app: an AbpApp on /agent/<room>, driven by the peer's AgentCore; the test sends it
//   commands over /control/<room> and reads its events there.
// The peer admits this page's origin only (scripts/test.sh pins it); /control, /relay/<room>/agent and /admin/exit
// need the launch token, which the test build gets in ABP_PEER_TOKEN and sends as ?token= (a browser's WebSocket
// cannot set headers).
import { AbpApp, AbpClient, WebSocketTransport } from '/wasm-bindgen-test';
import { assert, eq, fail, pageErrors, LOAD_MS, runNamed, sleep, until } from './helpers.js';

const AGENT = { agent: { name: 'ws-test-agent', version: '1.0.0' } };
let BASE = '';
let TOKEN = '';
/** `path` on the peer with the launch token, for the endpoints that drive or impersonate an agent. */
const withToken = (path) => `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(TOKEN)}`;

let rooms = 0;
const room = () => `r${Date.now().toString(36)}-${++rooms}`;
const cleanups = [];

/** An app with the capabilities the cases use; `log` records handler starts and aborts. */
function makeApp() {
  const log = [];
  const app = new AbpApp({ id: 'com.test.ws', name: 'WS fixture', version: '1.0.0' });
  const watch = (ctx, name) => {
    log.push({ event: 'start', name, callId: ctx.callId });
    ctx.signal.addEventListener('abort', () => {
      log.push({ event: 'abort', callId: ctx.callId, reason: ctx.signal.reason?.message, reasonName: ctx.signal.reason?.name });
    }, { once: true });
  };
  const wait = (ms, signal) => new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
  app.register('echo', (params, ctx) => { watch(ctx, 'echo'); return params; });
  app.register('slow', async (params, ctx) => {
    watch(ctx, 'slow');
    const steps = params.steps ?? 10;
    for (let i = 0; i < steps; i++) {
      ctx.progress({ progress: i + 1, total: steps });
      await wait(params.ms / steps, ctx.signal);
    }
    return { steps };
  }, { inputSchema: { type: 'object', required: ['ms'], properties: { ms: { type: 'number', minimum: 0 } } } });
  app.register('tight', (params, ctx) => {
    for (let i = 1; i <= 10000; i++) ctx.progress({ progress: i, total: 10000 });
    return 'done';
  });
  app.register('elicit', async (params, ctx) => {
    watch(ctx, 'elicit');
    const answer = await ctx.elicit({ method: 'confirm', params: { question: 'Proceed?' } });
    log.push({ event: 'elicited', callId: ctx.callId, answer });
    if (answer.cancelled) throw ctx.signal.reason;
    return answer;
  });
  // `size` bytes where byte i is (i * 31 + 7) & 255: every byte is checked on arrival.
  app.register('bytes', (params) => {
    const bytes = new Uint8Array(params.size);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 255;
    return bytes.buffer;
  });
  app.register('bufInfo', (params) => ({
    isArrayBuffer: params.buf instanceof ArrayBuffer,
    bytes: Array.from(new Uint8Array(params.buf)),
  }));
  app.register('big', (params) => 'x'.repeat(params.n));
  // What the handler received, with every ArrayBuffer spelled out (so the agent can see the app's view).
  app.register('describe', (params) => describe(params));
  app.register('picture', () => ({ content: new Uint8Array([137, 80, 78, 71]).buffer, mimeType: 'image/png', filename: 'a.png' }));
  return { app, log, started: (id) => log.some((e) => e.event === 'start' && e.callId === id) };
}

/** `v` as JSON-able data, ArrayBuffers as `{ ArrayBuffer: [bytes] }` and keys sorted, for comparing. */
function describe(v) {
  if (v instanceof ArrayBuffer) return { ArrayBuffer: Array.from(new Uint8Array(v)) };
  if (Array.isArray(v)) return v.map(describe);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, describe(v[k])]));
  return v;
}

function checkPattern(buf, size, what) {
  assert(buf instanceof ArrayBuffer, `${what}: an ArrayBuffer (got ${Object.prototype.toString.call(buf)})`);
  eq(buf.byteLength, size, `${what}: length`);
  const b = new Uint8Array(buf);
  for (let i = 0; i < b.length; i++) {
    if (b[i] !== ((i * 31 + 7) & 255)) fail(`${what}: byte ${i} is ${b[i]}`);
  }
}

/** An app and a client on this page meeting at the relay. */
async function pair({ appWs, agentWs, client } = {}) {
  const r = room();
  const a = makeApp();
  a.app.listen(await WebSocketTransport.connect(`${BASE}/relay/${r}/app`, appWs));
  const abp = await AbpClient.connect(await WebSocketTransport.connect(`${BASE}${withToken(`/relay/${r}/agent`)}`, agentWs), { ...AGENT, ...client });
  cleanups.push(() => { abp.shutdown(); a.app.close(); });
  return { ...a, abp, room: r };
}

/** A plain WebSocket (for playing a hand-written or hostile peer), opened. */
async function rawSocket(path) {
  const ws = new WebSocket(`${BASE}${path}`);
  const frames = [];
  ws.onmessage = (e) => frames.push(typeof e.data === 'string' ? JSON.parse(e.data) : e.data);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = () => reject(new Error(`could not open ${path}`)); });
  cleanups.push(() => ws.close());
  return { ws, frames, send: (m) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)) };
}

/** The native agent for an app on this page: `app` listens on /agent/<room>; commands go over /control/<room>.
 *  `dialect` and `protocols` choose what the app speaks (for 'tesseron' the peer is the gateway); `prepare(app)`
 *  runs before it listens. */
async function native({ dialect, protocols, prepare } = {}) {
  const r = room();
  const ctl = await rawSocket(withToken(`/control/${r}`));
  const a = makeApp();
  if (prepare) prepare(a.app);
  a.app.listen(await WebSocketTransport.connect(`${BASE}/agent/${r}`, protocols ? { protocols } : undefined),
    dialect ? { dialect } : undefined);
  await until(() => ctl.frames.some((e) => e.op === 'connected'), 'the native agent to connect', LOAD_MS);
  let refs = 0;
  const events = (op) => ctl.frames.filter((e) => e.op === op);
  return {
    ...a, ctl, events,
    send: (cmd) => ctl.send(cmd),
    /** Sends a command with a fresh `ref` and waits for the event that answers it. */
    async ask(cmd, op, ms = 5000) {
      const ref = ++refs;
      ctl.send({ ...cmd, ref });
      await until(() => ctl.frames.some((e) => e.ref === ref && (e.op === op || e.op === 'error')), `${cmd.op} #${ref}`, ms);
      const answer = ctl.frames.find((e) => e.ref === ref);
      if (answer.op === 'error') fail(`the native agent said: ${answer.message}`);
      return answer;
    },
  };
}

/** Kills the server process (the test script restarts it) and returns when the kill was sent. */
async function killServer() {
  const ws = new WebSocket(`${BASE}${withToken('/admin/exit')}`);
  await new Promise((resolve) => { ws.onclose = resolve; ws.onerror = resolve; });
}

/** Waits for the restarted server, so that the next case finds it. */
async function serverBack() {
  for (let i = 0; i < 200; i++) {
    try {
      (await WebSocketTransport.connect(`${BASE}/relay/probe/app`)).close();
      return;
    } catch (_) { await sleep(50); }
  }
  fail('the server did not come back');
}

// ---- browser ↔ browser through the relay -------------------------------------------------------------

export async function wsCallRoundTrips() {
  const t = await pair();
  eq(t.abp.app, { id: 'com.test.ws', name: 'WS fixture', version: '1.0.0' }, 'app info over the socket');
  const r = await t.abp.call('echo', { a: 1, nested: { b: [1, 2, 'three'] }, s: 'ünïcödé ✓' });
  eq([r.success, r.data], [true, { a: 1, nested: { b: [1, 2, 'three'] }, s: 'ünïcödé ✓' }], 'echo');
  eq(t.abp.channel, 'socket', 'channel says socket');
  // Binary params: a typed array view (only its own bytes travel) arrives as an ArrayBuffer.
  const backing = new Uint8Array([9, 9, 1, 2, 3, 250, 9]);
  const b = await t.abp.call('bufInfo', { buf: backing.subarray(2, 6) });
  eq(b.data, { isArrayBuffer: true, bytes: [1, 2, 3, 250] }, 'bytes of the view, as an ArrayBuffer');
  // An object that merely looks like BinaryData but is not base64 stays an object.
  const look = { content: '!!', encoding: 'base64', mimeType: 'x', size: 9 };
  eq((await t.abp.call('echo', { look })).data.look, look, 'a look-alike passes through');
  eq(t.abp.pendingCalls, 0, 'nothing pending');
}

export async function wsBinaryDataKeepsItsFields() {
  const t = await pair();
  const ab = (...bytes) => ({ ArrayBuffer: bytes });
  // Both ways: the app's view (describe) and the agent's view after the echo back.
  const both = async (params, expected, what) => {
    eq((await t.abp.call('describe', params)).data, expected, `${what}: as the app received it`);
    eq(describe((await t.abp.call('echo', params)).data), expected, `${what}: echoed back to the agent`);
  };
  // Raw bytes: an ArrayBuffer on the other side.
  await both({ raw: new Uint8Array([1, 2, 255]) }, { raw: ab(1, 2, 255) }, 'raw bytes');
  // A BinaryData with bytes as its content keeps mimeType and filename; content is the same bytes.
  const png = new Uint8Array([137, 80, 78, 71, 13, 10]);
  await both({ file: { content: png.buffer, mimeType: 'image/png', filename: 'a.png' } },
    { file: { content: ab(137, 80, 78, 71, 13, 10), filename: 'a.png', mimeType: 'image/png', size: 6 } }, 'ArrayBuffer content');
  await both({ file: { content: png.subarray(1, 3), mimeType: 'image/png' } },
    { file: { content: ab(80, 78), mimeType: 'image/png', size: 2 } }, 'typed-array content (only the view)');
  // A base64-string BinaryData with a real mimeType arrives decoded, its fields kept.
  await both({ doc: { content: btoa('hello'), encoding: 'base64', mimeType: 'text/plain', size: 5, filename: 'h.txt' } },
    { doc: { content: ab(104, 101, 108, 108, 111), filename: 'h.txt', mimeType: 'text/plain', size: 5 } }, 'base64 text content');
  // The raw-bytes shape plus a filename is not "just bytes": it stays a BinaryData.
  await both({ f: { content: btoa('\x01\x02'), encoding: 'base64', mimeType: 'application/octet-stream', size: 2, filename: 'x.bin' } },
    { f: { content: ab(1, 2), filename: 'x.bin', mimeType: 'application/octet-stream', size: 2 } }, 'octet-stream with a filename');
  // utf-8 content is left alone.
  const text = { content: 'héllo ✓', encoding: 'utf-8', mimeType: 'text/plain', filename: 't.txt' };
  await both({ text }, { text: describe(text) }, 'utf-8 content');
  // Look-alikes pass through: not base64, or a size that does not match.
  const bad = { content: '!!not base64!!', encoding: 'base64', mimeType: 'image/png', filename: 'x.png' };
  await both({ bad }, { bad: describe(bad) }, 'invalid base64');
  const wrongSize = { content: btoa('abc'), encoding: 'base64', mimeType: 'application/octet-stream', size: 9 };
  await both({ wrongSize }, { wrongSize: describe(wrongSize) }, 'a size that does not match');
  // A result built by the handler (not an echo) arrives the same way.
  const pic = (await t.abp.call('picture', {})).data;
  eq(describe(pic), { content: ab(137, 80, 78, 71), filename: 'a.png', mimeType: 'image/png', size: 4 }, 'a BinaryData result');
  // A Blob cannot travel: the call says so instead of sending "{}".
  const blob = await t.abp.call('echo', { file: { content: new Blob(['x']), mimeType: 'text/plain' } });
  eq([blob.success, blob.error.code], [false, 'INVALID_PARAMS'], 'Blob content is refused');
  assert(/Blob/.test(blob.error.message), `says why: ${blob.error.message}`);
}

export async function wsAbortInFlight() {
  const t = await pair();
  const controller = new AbortController();
  const p = t.abp.call('slow', { ms: 5000 }, { signal: controller.signal, callId: 'w1' });
  await until(() => t.started('w1'), 'the handler to start');
  const t0 = performance.now();
  controller.abort('user clicked stop');
  const r = await p;
  const elapsed = performance.now() - t0;
  eq([r.success, r.cancelled, r.error.code], [false, true, 'CANCELLED'], 'cancelled');
  assert(elapsed < 500, `settled in ${elapsed} ms`);
  await until(() => t.log.some((e) => e.event === 'abort' && e.callId === 'w1'), 'the handler signal to abort');
  const abort = t.log.find((e) => e.event === 'abort');
  eq([abort.reason, abort.reasonName], ['user clicked stop', 'AbortError'], 'with the reason');
  eq(t.app.activeCalls, 0, 'nothing active');
}

export async function wsTimeout() {
  const t = await pair();
  const t0 = performance.now();
  const r = await t.abp.call('slow', { ms: 5000 }, { timeout: 150, callId: 'wt' });
  const elapsed = performance.now() - t0;
  eq([r.cancelled, r.error.code, r.error.retryable], [true, 'TIMEOUT', true], 'timeout');
  assert(elapsed >= 140 && elapsed < 700, `after ${elapsed} ms`);
  await until(() => t.log.some((e) => e.event === 'abort' && e.callId === 'wt'), 'the handler to be cancelled');
  eq(t.log.find((e) => e.event === 'abort').reason, 'timeout', 'reason timeout');
}

export async function wsCancelTable() {
  const t = await pair();
  eq(await t.abp.cancel('nope'), { callId: 'nope', cancelled: false, reason: 'Operation not found' }, 'unknown');
  eq((await t.abp.call('echo', 1, { callId: 'done1' })).data, 1, 'completed call');
  eq(await t.abp.cancel('done1'), { callId: 'done1', cancelled: false, reason: 'Operation already completed' }, 'completed');
  const c = t.abp.call('slow', { ms: 5000 }, { callId: 'C' });
  await until(() => t.started('C'), 'C to start');
  eq(await t.abp.cancel('C', 'stop'), { callId: 'C', cancelled: true }, 'in flight');
  eq((await c).error.code, 'CANCELLED', 'C resolves cancelled');
  eq(await t.abp.cancel('C'), { callId: 'C', cancelled: true }, 'cancelled: idempotent');
}

export async function wsProgress() {
  const t = await pair();
  const seen = [];
  const r = await t.abp.call('slow', { ms: 100, steps: 5 }, { onProgress: (p) => seen.push(p.progress) });
  eq(r.data, { steps: 5 }, 'result');
  eq(seen[seen.length - 1], 5, 'the final step arrived');
  const tight = [];
  eq((await t.abp.call('tight', {}, { onProgress: (p) => tight.push(p.progress) })).data, 'done', 'tight result');
  assert(tight.length <= 5, `10,000 updates arrive as ${tight.length} messages`);
  eq(tight[tight.length - 1], 10000, 'the last state before the result');
}

export async function wsElicitation() {
  const t = await pair();
  t.abp.onElicitation = (request) => ({ success: true, data: `${request.method}!` });
  // The handler returns the ElicitationResponse, which is ABPResponse-shaped: it is the call's response.
  eq((await t.abp.call('elicit', {})).data, 'confirm!', 'answered');
  let aborted = false;
  t.abp.onElicitation = (request, { signal }) => new Promise((resolve) => {
    signal.addEventListener('abort', () => { aborted = true; resolve({ success: false }); });
  });
  const controller = new AbortController();
  const p = t.abp.call('elicit', {}, { signal: controller.signal, callId: 'el' });
  await until(() => t.started('el'), 'the handler to ask');
  await sleep(50);
  controller.abort();
  eq((await p).cancelled, true, 'call cancelled');
  await until(() => aborted, 'the elicitation signal to abort');
  const elicited = () => t.log.find((e) => e.event === 'elicited' && e.callId === 'el');
  await until(elicited, 'ctx.elicit to resolve');
  eq(elicited().answer.cancelled, true, 'ctx.elicit resolved cancelled');
}

export async function wsFiveMegabyteBinaryResult() {
  const t = await pair();
  const size = 5 * 1024 * 1024;
  const r = await t.abp.call('bytes', { size }, { timeout: 15000 });
  eq(r.success, true, `5 MB result: ${JSON.stringify(r.error)}`);
  checkPattern(r.data, size, '5 MB result');
}

export async function wsMaxMessageBytes() {
  const limit = { maxMessageBytes: 64 * 1024 };
  const t = await pair({ appWs: limit, agentWs: limit });
  const r = await t.abp.call('echo', { big: 'x'.repeat(100 * 1024) }, { callId: 'toolarge' });
  eq([r.success, r.error.code, r.error.retryable], [false, 'TRANSPORT_ERROR', false], 'an outgoing call over the limit (resending fails again)');
  assert(/maxMessageBytes/.test(r.error.message), `says why: ${r.error.message}`);
  assert(!t.started('toolarge'), 'it never reached the app');
  const res = await t.abp.call('big', { n: 100 * 1024 });
  eq([res.success, res.error.code], [false, 'OPERATION_FAILED'], 'a result over the limit');
  assert(/maxMessageBytes/.test(res.error.message), `says why: ${res.error.message}`);
  eq((await t.abp.call('echo', { ok: 1 })).data, { ok: 1 }, 'the connection survives');
  eq(t.abp.connected, true, 'still connected');
  // An incoming frame over the limit (from a peer with a bigger limit) is dropped unread and counted.
  const r2 = room();
  const a = makeApp();
  a.app.listen(await WebSocketTransport.connect(`${BASE}/relay/${r2}/app`, limit));
  const agent = await rawSocket(withToken(`/relay/${r2}/agent`));
  agent.send({ type: 'initialize', id: 'i1', timestamp: Date.now(), payload: { protocolVersion: '1.0', agent: AGENT.agent, big: 'y'.repeat(100 * 1024) } });
  await until(() => a.app.ignoredMessages === 1, 'the big frame counted');
  agent.send({ type: 'initialize', id: 'i2', timestamp: Date.now(), payload: { protocolVersion: '1.0', agent: AGENT.agent } });
  await until(() => agent.frames.some((f) => f.type === 'initialize-result'), 'a normal initialize answered');
  a.app.close();
}

export async function wsServerKilledMidCall() {
  const again = { reconnect: { initialDelay: 100, maxDelay: 400 } };
  const t = await pair({ appWs: again, agentWs: again });
  const first = t.abp.sessionId;
  const calls = [t.abp.call('slow', { ms: 8000 }, { callId: 'k1' }), t.abp.call('slow', { ms: 8000 }, { callId: 'k2' })];
  await until(() => t.started('k1') && t.started('k2'), 'both handlers to start');
  const t0 = performance.now();
  await killServer();
  const rs = await Promise.all(calls);
  const elapsed = performance.now() - t0;
  for (const r of rs) eq([r.success, r.error.code, r.error.retryable], [false, 'DISCONNECTED', true], 'DISCONNECTED');
  assert(elapsed < 1000, `every pending call settled in ${elapsed.toFixed(0)} ms`);
  await until(() => t.log.filter((e) => e.event === 'abort').length === 2, "the app's handler signals to abort", 1000);
  eq([t.abp.pendingCalls, t.app.activeCalls], [0, 0], 'nothing pending or active');
  eq(t.abp.connected, false, 'disconnected');
  // Reconnect: the server comes back (the test script restarts it) and the client opens a new session.
  await until(() => t.abp.connected, 'the client to reconnect', 10000);
  assert(t.abp.sessionId && t.abp.sessionId !== first, 'a new session');
  const r = await t.abp.call('echo', { after: 'restart' });
  eq(r.data, { after: 'restart' }, 'new calls work');
}

export async function wsTheFirstConnectFollowsReconnect() {
  // Nothing listens: with reconnect the first socket is retried as a lost one would be, then connect rejects and
  // says what may have happened.
  const t0 = performance.now();
  let e = null;
  try {
    await WebSocketTransport.connect('ws://127.0.0.1:9/', { reconnect: { initialDelay: 40, maxDelay: 80, maxAttempts: 3 } });
  } catch (err) { e = err; }
  const waited = performance.now() - t0;
  eq(e && e.code, 'DISCONNECTED', `nothing listening: ${e}`);
  assert(waited >= 100, `it tried again before giving up (${waited.toFixed(0)} ms)`);
  assert(/after every reconnect attempt/.test(e.message) && /nothing may be listening/.test(e.message)
    && /refused this page/.test(e.message) && /Local Network Access/.test(e.message), `says what may have happened: ${e.message}`);
  // An app page opened before its server: connect waits for the server to come up, then the app is reached.
  await killServer();
  const r = room();
  const a = makeApp();
  const opening = WebSocketTransport.connect(`${BASE}/relay/${r}/app`, { reconnect: { initialDelay: 50, maxDelay: 200 } });
  const transport = await opening;
  a.app.listen(transport);
  const abp = await AbpClient.connect(await WebSocketTransport.connect(`${BASE}${withToken(`/relay/${r}/agent`)}`), AGENT);
  cleanups.push(() => { abp.shutdown(); a.app.close(); });
  eq((await abp.call('echo', { late: 'app' })).data, { late: 'app' }, 'the app opened before its server answers');
}

export async function wsWithoutReconnectStaysClosed() {
  const t = await pair();
  const p = t.abp.call('slow', { ms: 8000 }, { callId: 'n1' });
  await until(() => t.started('n1'), 'the handler to start');
  await killServer();
  eq((await p).error.code, 'DISCONNECTED', 'pending call');
  await until(() => t.log.some((e) => e.event === 'abort'), 'the handler signal to abort', 1000);
  eq((await t.abp.call('echo', {})).error.code, 'DISCONNECTED', 'later calls say DISCONNECTED');
  eq(t.abp.channel, 'closed', 'closed');
  // Wait for the restarted server so that the next case finds it.
  await serverBack();
}

export async function wsTheAppLeavingTheRelayKeepsTheAgent() {
  // With reconnect: the app goes mid-call; the agent's socket stays, its calls settle, and when the next app
  // takes the room the client starts a new session on the same socket.
  const again = { reconnect: { initialDelay: 100, maxDelay: 400 } };
  const t = await pair({ agentWs: again });
  const first = t.abp.sessionId;
  const p = t.abp.call('slow', { ms: 8000 }, { callId: 'left1' });
  await until(() => t.started('left1'), 'the handler to start');
  const t0 = performance.now();
  t.app.close();
  const r = await p;
  eq([r.success, r.error.code], [false, 'DISCONNECTED'], 'the pending call settles');
  assert(performance.now() - t0 < 1000, `within ${(performance.now() - t0).toFixed(0)} ms`);
  eq(t.abp.connected, false, 'no session while no app is there');
  const next = makeApp();
  next.app.listen(await WebSocketTransport.connect(`${BASE}/relay/${t.room}/app`));
  cleanups.push(() => next.app.close());
  await until(() => t.abp.connected, 'a new session with the next app', 5000);
  assert(t.abp.sessionId && t.abp.sessionId !== first, 'a new session');
  eq((await t.abp.call('echo', { to: 'the next app' })).data, { to: 'the next app' }, 'calls reach the next app');

  // Without reconnect: the app leaving ends the client (as a closed socket would), nothing hangs.
  const u = await pair();
  const q = u.abp.call('slow', { ms: 8000 }, { callId: 'left2' });
  await until(() => u.started('left2'), 'the handler to start');
  u.app.close();
  eq((await q).error.code, 'DISCONNECTED', 'the pending call settles');
  eq(u.abp.channel, 'closed', 'the client is closed');
}

export async function wsGarbageFromTheSocket() {
  // A hostile "app" behind the relay: answers initialize, then sends garbage and a 10,000-message flood.
  const r = room();
  const bad = await rawSocket(`/relay/${r}/app`);
  const abp = AbpClient.connect(await WebSocketTransport.connect(`${BASE}${withToken(`/relay/${r}/agent`)}`), AGENT);
  await until(() => bad.frames.some((f) => f.type === 'initialize'), 'initialize');
  const init = bad.frames.find((f) => f.type === 'initialize');
  const junk = ['not json', '{"type":', '42', 'null', '[]', '{}', '{"type":7}', '{"type":"made/up","payload":{}}',
    '{"type":"capabilities/call-result","payload":"nope"}', '{"type":"progress","payload":{"progressToken":{}}}',
    JSON.stringify({ type: 'capabilities/call-result', payload: { callId: 'ghost', success: true } }),
    '{"a":'.repeat(5000)];
  for (const j of junk) bad.send(j);
  bad.ws.send(new Uint8Array([1, 2, 3]));
  bad.send({ type: 'initialize-result', id: init.id, timestamp: Date.now(), payload: { sessionId: 'S', protocolVersion: '1.0', app: { id: 'bad', name: 'bad', version: '0' }, capabilities: [] } });
  const client = await abp;
  for (let i = 0; i < 10000; i++) bad.send(i % 2 ? 'x' : { type: 'capabilities/call-result', id: `f${i}`, payload: { callId: `nobody${i}`, success: true } });
  const call = client.call('echo', { hi: 1 }, { callId: 'real' });
  await until(() => bad.frames.some((f) => f.type === 'capabilities/call'), 'the call to arrive', 10000);
  const msg = bad.frames.find((f) => f.type === 'capabilities/call');
  bad.send({ type: 'capabilities/call-result', id: msg.id, timestamp: Date.now(), payload: { callId: 'real', success: true, data: 'fine' } });
  eq((await call).data, 'fine', 'still works after the garbage and the flood');
  assert(client.ignoredMessages >= 5000, `garbage counted: ${client.ignoredMessages}`);
  await client.shutdown();

  // The other way: garbage at the native peer, which must survive it (a fresh room still works after).
  const hostile = await rawSocket(`/agent/${room()}`);
  for (const j of junk) hostile.send(j);
  for (let i = 0; i < 10000; i++) hostile.send(i % 3 ? '{"type":"capabilities/call-result"}' : 'zzz');
  hostile.ws.close();
  const n = await native();
  eq((await n.ask({ op: 'call', capability: 'echo', params: { still: 'alive' } }, 'settled')).response.data, { still: 'alive' }, 'the peer survived');
  eq(pageErrors, [], 'no page errors');
}

export async function wsHeartbeatNoticesAHungApp() {
  // The socket stays open but the app behind the relay stops answering (a hung page): only a heartbeat notices.
  const r = room();
  const hung = await rawSocket(`/relay/${r}/app`);
  const pending = AbpClient.connect(await WebSocketTransport.connect(`${BASE}${withToken(`/relay/${r}/agent`)}`), { ...AGENT, heartbeat: 200 });
  await until(() => hung.frames.some((f) => f.type === 'initialize'), 'initialize');
  const init = hung.frames.find((f) => f.type === 'initialize');
  hung.send({ type: 'initialize-result', id: init.id, timestamp: Date.now(), payload: { sessionId: 'H', protocolVersion: '0.1', app: { id: 'hung', name: 'hung', version: '0' }, capabilities: [] } });
  const abp = await pending;
  cleanups.push(() => abp.shutdown());
  const t0 = performance.now();
  const res = await abp.call('work', {});
  const elapsed = performance.now() - t0;
  eq([res.success, res.error.code], [false, 'DISCONNECTED'], 'settled by the heartbeat');
  assert(elapsed >= 350 && elapsed < 1500, `after ${elapsed.toFixed(0)} ms`);
  assert(hung.frames.some((f) => f.type === 'capabilities/cancel' && f.payload.reason === 'heartbeat'), 'a probe was sent');
}

/** `WebSocketTransport.connect(...args)` must return a Promise (nothing thrown synchronously) whose `.catch`
 *  receives a TypeError mentioning `word`. */
async function rejectsWithTypeError(args, word, what) {
  let p;
  try { p = WebSocketTransport.connect(...args); } catch (err) { fail(`${what}: thrown synchronously (${err}) instead of rejecting`); }
  assert(p instanceof Promise, `${what}: connect returned a Promise`);
  const e = await p.then(() => null, (err) => err);
  assert(e instanceof TypeError, `${what}: .catch receives a TypeError (got ${e})`);
  assert(word.test(e.message), `${what}: the message says what is wrong: ${e.message}`);
}

export async function wsOptionsAreChecked() {
  const ok = `${BASE}/relay/x/app`;
  await rejectsWithTypeError(['ftp://127.0.0.1/'], /connect/, 'a scheme no WebSocket can open');
  await rejectsWithTypeError(['ws://[::1/'], /connect/, 'an unparsable URL');
  await rejectsWithTypeError([42], /url/, 'a URL that is not a string');
  await rejectsWithTypeError([], /url/, 'no URL');
  await rejectsWithTypeError([ok, { maxMessageBytes: 'lots' }], /maxMessageBytes/, 'bad maxMessageBytes');
  await rejectsWithTypeError([ok, { maxMessageBytes: 10 }], /maxMessageBytes/, 'maxMessageBytes below 64');
  await rejectsWithTypeError([ok, { reconnect: 'yes' }], /reconnect/, 'bad reconnect');
  await rejectsWithTypeError([ok, { protocols: 7 }], /protocols/, 'bad protocols');
  // The style of the README: `.catch` on the returned promise sees the error, nothing escapes.
  let caught = null;
  await WebSocketTransport.connect('ftp://127.0.0.1/').catch((err) => { caught = err; });
  assert(caught instanceof TypeError, `connect('ftp://…').catch(…) gets the TypeError: ${caught}`);
  let e = null;
  // Nothing listens on port 9 of 127.0.0.1: rejected, code DISCONNECTED.
  try { await WebSocketTransport.connect('ws://127.0.0.1:9/'); } catch (err) { e = err; }
  eq(e && e.code, 'DISCONNECTED', `an unreachable server: ${e}`);
  // Subprotocols: the peer speaks "abp" when offered.
  const sub = await WebSocketTransport.connect(`${BASE}/relay/${room()}/app`, { protocols: ['abp'] });
  eq(sub.protocol, 'abp', 'the negotiated subprotocol');
  sub.close();
  // A transport serves one connection.
  const tr = await WebSocketTransport.connect(`${BASE}/relay/${room()}/app`);
  const app = new AbpApp({ id: 'a', name: 'a', version: '1' });
  app.listen(tr);
  e = null;
  try { app.listen(tr); } catch (err) { e = err; }
  assert(e instanceof TypeError, `reusing a transport: ${e}`);
  app.close();
}

// ---- who may connect -------------------------------------------------------------------------------------

/** Opens a WebSocket to `path` on the peer from this page: 'open', or 'refused' (the handshake failed). */
function probe(path) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${BASE}${path}`);
    const timer = setTimeout(() => { ws.close(); resolve('no answer'); }, 5000);
    ws.onopen = () => { clearTimeout(timer); ws.close(); resolve('open'); };
    ws.onerror = () => { clearTimeout(timer); resolve('refused'); };
  });
}

export async function wsOtherOriginsCannotJoinOrDrive() {
  const r = room();
  // This page's origin is allowed: the app side opens without the token; driving needs the right one.
  eq(await probe(`/agent/${r}-own`), 'open', 'an app on an allowed origin joins');
  eq(await probe(`/relay/${r}-own/app`), 'open', 'the relay app side too');
  eq(await probe(`/control/${r}-own`), 'refused', 'no token: cannot drive');
  eq(await probe(`/relay/${r}-own/agent?token=${'0'.repeat(64)}`), 'refused', 'a wrong token: cannot act as the agent');
  eq(await probe(withToken(`/control/${r}-own`)), 'open', 'the token drives');
  // A page on another origin of 127.0.0.1 (the same test server under its other name), not in the allow-list:
  // nothing opens, not even with the token.
  const here = location.origin;
  const other = here.includes('127.0.0.1') ? here.replace('127.0.0.1', 'localhost') : here.replace('localhost', '127.0.0.1');
  const paths = [`/agent/${r}`, `/relay/${r}/app`, `/control/${r}`, withToken(`/control/${r}`),
    withToken(`/relay/${r}/agent`), withToken('/admin/exit')];
  // Open across the probes: /admin/exit from the other origin must not end the peer (the script would restart it).
  const kept = await rawSocket(withToken(`/control/${r}-kept`));
  let report = null;
  const onMessage = (e) => { if (e.origin === other && e.data && e.data.wsOriginProbe) report = e.data; };
  addEventListener('message', onMessage);
  const iframe = document.createElement('iframe');
  iframe.src = `${other}/tests/fixtures/ws-origin.html#${encodeURIComponent(JSON.stringify({ base: BASE, paths, parentOrigin: here }))}`;
  document.body.appendChild(iframe);
  cleanups.push(() => { removeEventListener('message', onMessage); iframe.remove(); });
  await until(() => report, 'the page on the other origin to report', LOAD_MS);
  eq(report.origin, other, 'the probe ran on the other origin');
  eq(report.results, paths.map(() => 'refused'), `every socket from ${other} refused (${paths.join(', ')})`);
  eq(kept.ws.readyState, WebSocket.OPEN, 'the peer is still the same process');
  // Nothing joined as the room's app: the native agent there has no app to drive. And the peer is still up.
  const n = await rawSocket(withToken(`/control/${r}`));
  n.send({ op: 'status', ref: 1 });
  await until(() => n.frames.some((e) => e.ref === 1), 'the answer to status');
  eq(n.frames.find((e) => e.ref === 1).message, `no app is connected to /agent/${r}`, 'no app joined from the other origin');
}

// ---- a native agent driving the browser app -----------------------------------------------------------

export async function nativeAgentDrivesABrowserApp() {
  const n = await native();
  const connected = n.events('connected')[0];
  assert(connected.capabilities.some((c) => c.name === 'slow'), 'the native agent got the capability list');
  // A call.
  const first = (await n.ask({ op: 'call', capability: 'echo', params: { from: 'rust' } }, 'settled')).response;
  eq([first.success, first.callId, first.data], [true, 'native-1', { from: 'rust' }], 'call');
  // Abort in flight (what an AbortSignal does on the native side): the browser handler's signal aborts.
  const aborted = await n.ask({ op: 'call', capability: 'slow', params: { ms: 5000 }, callId: 'na', abortAfter: 100, reason: 'native stop' }, 'settled');
  eq([aborted.response.cancelled, aborted.response.error.code], [true, 'CANCELLED'], 'aborted');
  await until(() => n.log.some((e) => e.event === 'abort' && e.callId === 'na'), 'the handler signal');
  eq(n.log.find((e) => e.callId === 'na' && e.event === 'abort').reason, 'native stop', 'with the reason');
  // Timeout.
  const timed = await n.ask({ op: 'call', capability: 'slow', params: { ms: 5000 }, callId: 'nt', timeout: 100 }, 'settled');
  eq([timed.response.error.code, timed.response.error.retryable], ['TIMEOUT', true], 'timeout');
  await until(() => n.log.some((e) => e.event === 'abort' && e.callId === 'nt'), 'the handler signal on timeout');
  // Progress.
  const prog = await n.ask({ op: 'call', capability: 'slow', params: { ms: 100, steps: 4 }, callId: 'np', progress: true }, 'settled');
  eq(prog.response.data, { steps: 4 }, 'progress call result');
  const steps = n.events('progress').filter((e) => e.callId === 'np').map((e) => e.payload.progress);
  eq(steps[steps.length - 1], 4, `progress reached the native agent: ${steps}`);
  // The cancel table, asked by the native agent.
  eq((await n.ask({ op: 'cancel', callId: 'never' }, 'cancel-result')).answer, { callId: 'never', cancelled: false, reason: 'Operation not found' }, 'unknown');
  eq((await n.ask({ op: 'cancel', callId: 'native-1' }, 'cancel-result')).answer, { callId: 'native-1', cancelled: false, reason: 'Operation already completed' }, 'completed');
  n.send({ op: 'call', capability: 'slow', params: { ms: 5000 }, callId: 'nc', ref: 'nc' });
  await until(() => n.started('nc'), 'nc to start');
  eq((await n.ask({ op: 'cancel', callId: 'nc', reason: 'enough' }, 'cancel-result')).answer, { callId: 'nc', cancelled: true }, 'in flight');
  await until(() => n.ctl.frames.some((e) => e.ref === 'nc' && e.op === 'settled'), 'nc to settle');
  eq(n.ctl.frames.find((e) => e.ref === 'nc').response.error.code, 'CANCELLED', 'nc cancelled');
  // Elicitation answered by the native agent.
  n.send({ op: 'elicitation', answer: { success: true, data: 'yes from rust' } });
  const el = (await n.ask({ op: 'call', capability: 'elicit' }, 'settled')).response;
  eq([el.success, el.data], [true, 'yes from rust'], 'elicitation');
  // A 5 MB binary result reaches the native side as BinaryData.
  const size = 5 * 1024 * 1024;
  const bin = (await n.ask({ op: 'call', capability: 'bytes', params: { size } }, 'settled', 15000)).response.data;
  eq([bin.encoding, bin.size, bin.mimeType], ['base64', size, 'application/octet-stream'], 'BinaryData');
  const bytes = Uint8Array.from(atob(bin.content), (c) => c.charCodeAt(0));
  checkPattern(bytes.buffer, size, 'the bytes the native agent received');
  // A BinaryData result with a real mimeType and filename reaches the native agent with both.
  const pic = (await n.ask({ op: 'call', capability: 'picture' }, 'settled')).response.data;
  eq(describe(pic), describe({ content: btoa('\x89PNG'), encoding: 'base64', filename: 'a.png', mimeType: 'image/png', size: 4 }),
    'BinaryData with its fields on the wire');
  eq(n.app.activeCalls, 0, 'nothing active');
  eq((await n.ask({ op: 'status' }, 'status')).pending, 0, 'nothing pending on the native side');
}

export async function nativeAgentServerKilled() {
  const n = await native();
  n.send({ op: 'call', capability: 'slow', params: { ms: 8000 }, callId: 'nk' });
  await until(() => n.started('nk'), 'the handler to start');
  const t0 = performance.now();
  await killServer();
  await until(() => n.log.some((e) => e.event === 'abort' && e.callId === 'nk'), "the app's handler signal to abort", 1000);
  assert(performance.now() - t0 < 1000, 'within 1 s');
  eq(n.app.activeCalls, 0, 'nothing active');
  await serverBack();
}

export async function tesseronAppDrivenByTheNativeGateway() {
  // AbpApp in Tesseron's app role, dialing abp-peer as its gateway (subprotocol tesseron-gateway): the app says
  // hello first, serves actions/invoke, answers -32001 for actions/cancel, owns its per-action timeout (-32002).
  const n = await native({
    dialect: 'tesseron',
    protocols: ['tesseron-gateway'],
    prepare: (app) => app.register('sleepy', (params, ctx) => new Promise((resolve, reject) => {
      ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
    }), { description: 'Never finishes', timeoutMs: 150 }),
  });
  const connected = n.events('connected')[0];
  eq(connected.app.id, 'com.test.ws', 'the hello introduced the app');
  const sleepy = connected.capabilities.find((c) => c.name === 'sleepy');
  eq(sleepy.timeoutMs, 150, 'actions with their timeoutMs');
  const first = (await n.ask({ op: 'call', capability: 'echo', params: { from: 'gateway' } }, 'settled')).response;
  eq([first.success, first.data], [true, { from: 'gateway' }], 'actions/invoke → { invocationId, output }');
  const aborted = await n.ask({ op: 'call', capability: 'slow', params: { ms: 5000 }, callId: 'ta', abortAfter: 100 }, 'settled');
  eq([aborted.response.cancelled, aborted.response.error.code, aborted.response.error.details.jsonrpc.code],
    [true, 'CANCELLED', -32001], 'actions/cancel → -32001');
  await until(() => n.log.some((e) => e.event === 'abort' && e.callId === 'ta'), "the handler's signal");
  const t0 = performance.now();
  const timed = await n.ask({ op: 'call', capability: 'sleepy', callId: 'tt' }, 'settled');
  eq([timed.response.error.code, timed.response.error.details.jsonrpc.code], ['TIMEOUT', -32002], "the app's own timeout: -32002");
  assert(performance.now() - t0 < 1000, 'after 150 ms');
  const prog = await n.ask({ op: 'call', capability: 'slow', params: { ms: 1200, steps: 4 }, callId: 'tp', progress: true }, 'settled');
  eq(prog.response.data, { steps: 4 }, 'a call with progress');
  const percents = n.events('progress').filter((e) => e.callId === 'tp').map((e) => e.payload.percent);
  assert(percents.length >= 2 && percents.length <= 4, `at most about two a second: ${percents}`);
  assert(percents.every((p, i) => i === 0 || p >= percents[i - 1]), `percent never goes down: ${percents}`);
  eq(percents[percents.length - 1], 100, 'and reaches 100');
  const unknown = (await n.ask({ op: 'call', capability: 'nope' }, 'settled')).response;
  eq([unknown.error.code, unknown.error.details.jsonrpc.code], ['UNKNOWN_CAPABILITY', -32003], '-32003');
  eq(n.app.activeCalls, 0, 'nothing active');
}

const cases = {
  wsCallRoundTrips, wsBinaryDataKeepsItsFields, wsAbortInFlight, wsTimeout, wsCancelTable, wsProgress, wsElicitation, wsFiveMegabyteBinaryResult,
  wsMaxMessageBytes, wsServerKilledMidCall, wsWithoutReconnectStaysClosed, wsTheFirstConnectFollowsReconnect, wsGarbageFromTheSocket, wsOptionsAreChecked,
  wsHeartbeatNoticesAHungApp, wsOtherOriginsCannotJoinOrDrive, wsTheAppLeavingTheRelayKeepsTheAgent,
  nativeAgentDrivesABrowserApp, nativeAgentServerKilled, tesseronAppDrivenByTheNativeGateway,
};

export async function runWsCase(name, base, token) {
  BASE = base;
  TOKEN = token;
  await runNamed(cases, name, 40000, () => {
    for (const c of cleanups.splice(0)) { try { c(); } catch (_) { /* already closed */ } }
  });
  eq(pageErrors, [], 'no uncaught errors on the page');
}
