// ACP interop cases, run by tests/acp.rs in headless Chrome and Firefox: this SDK speaking ACP with
// @agentclientprotocol/sdk 2.4.0 (pinned in tests/interop/package.json, bundled by tests/interop/build.mjs), both
// in this page, over a MessageChannel (the SDK side through tests/interop/acp-sdk/port-stream.js: one JSON-RPC
// object per postMessage).
import { AbpApp, AbpClient, PostMessageTransport } from '/wasm-bindgen-test';
import { agent, client, portStream, RequestError, methods, PROTOCOL_VERSION } from '/tests/interop/acp-sdk/dist/acp.js';
import { assert, eq, pageErrors, rejection, runNamed, sleep, until } from './helpers.js';

const AGENT = { agent: { name: 'abp-wasm-test-agent', version: '1.0.0' }, dialect: 'acp' };
const raw = (p) => p ?? {};
const PARENT = '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01';


/** The SDK's client role calling our AbpApp (dialect 'acp'). */
export async function sdkClientCallsOurApp() {
  const channel = new MessageChannel();
  const app = new AbpApp({ id: 'acp.app', name: 'ACP app', version: '1.0.0' });
  const aborts = {};
  const waitForAbort = (name) => (params, ctx) => new Promise((resolve, reject) => {
    ctx.signal.addEventListener('abort', () => { aborts[name] = ctx.signal.reason.name; reject(ctx.signal.reason); });
  });
  app.register('echo', ({ text }) => ({ text }));
  app.register('traced', (_params, ctx) => ({ trace: ctx.trace ?? null }));
  app.register('slow', waitForAbort('slow'));
  app.register('slow2', waitForAbort('slow2'));
  app.register('limited', () => { throw { code: 'RATE_LIMITED', message: 'slow down', retryAfter: 100 }; });
  app.register('askFirst', async (params, ctx) => ctx.elicit({ method: 'confirm', params: { q: params.q } }));
  app.listen(PostMessageTransport.fromPort(channel.port1), { dialect: 'acp' });
  let confirmAborted = null;
  const sdk = client({ name: 'sdk-client' })
    .onRequest('confirm', raw, (ctx) => new Promise((resolve, reject) => {
      if (ctx.params.q === 'quick') return resolve({ ok: true });
      ctx.signal.addEventListener('abort', () => { confirmAborted = ctx.signal.reason.code; reject(ctx.signal.reason); });
    }));
  const conn = sdk.connect(portStream(channel.port2));
  // initialize first, as ACP wants; a cancel for it changes nothing.
  const early = new AbortController();
  const initializing = conn.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} },
    { cancellationSignal: early.signal });
  early.abort();
  const init = await initializing;
  eq(init.protocolVersion, 1, 'initialize is answered, not cancelled');
  eq(await conn.agent.request('echo', { text: 'hi' }), { text: 'hi' }, 'a request named after the capability');
  // W3C trace context in the request's _meta (the root keys ACP reserves for it) reaches ctx.trace; an invalid one
  // does not.
  eq(await conn.agent.request('traced', { _meta: { traceparent: PARENT, tracestate: 'acp=1' } }),
    { trace: { traceparent: PARENT, tracestate: 'acp=1' } }, "the SDK's _meta.traceparent as ctx.trace");
  eq(await conn.agent.request('traced', { _meta: { traceparent: PARENT.toUpperCase() } }), { trace: null },
    'an invalid traceparent is dropped');
  // $/cancel_request: our handler's signal aborts and the SDK gets -32800.
  const stop = new AbortController();
  const slow = conn.agent.request('slow', {}, { cancellationSignal: stop.signal });
  await until(() => app.activeCalls === 1, 'the handler');
  stop.abort('user stop');
  const cancelled = await rejection(slow);
  eq([cancelled.code, cancelled.message], [-32800, 'Request cancelled'], '-32800');
  eq(aborts.slow, 'AbortError', "our handler's signal aborted");
  // stopWaitingOnCancel: the SDK gives up at once; our handler still stops, our late -32800 is dropped there.
  const stop2 = new AbortController();
  const slow2 = conn.agent.request('slow2', {}, { cancellationSignal: stop2.signal, stopWaitingOnCancel: true });
  await until(() => app.activeCalls === 1, 'the second handler');
  stop2.abort('enough');
  eq((await rejection(slow2)).code, -32800, 'stopWaitingOnCancel rejects at once');
  await until(() => aborts.slow2, "the second handler's signal");
  const unknown = await rejection(conn.agent.request('nope', {}));
  eq([unknown.code, unknown.data.code], [-32601, 'UNKNOWN_CAPABILITY'], 'an unknown method: -32601, the ABP error in data');
  const limited = await rejection(conn.agent.request('limited', {}));
  eq([limited.code, limited.data.code, limited.data.retryAfter], [-32603, 'RATE_LIMITED', 100], 'the ABP error travels in data');
  // Our handler's own request to the SDK is answered, and cancelled with the call (cascade).
  // The handler returns the ElicitationResponse, which is ABPResponse-shaped: its data is the result.
  eq(await conn.agent.request('askFirst', { q: 'quick' }), { ok: true }, 'a nested request answered');
  const stop3 = new AbortController();
  const asking = conn.agent.request('askFirst', { q: 'wait' }, { cancellationSignal: stop3.signal });
  await until(() => app.activeCalls === 1, 'the asking handler');
  await sleep(30);
  stop3.abort();
  eq((await rejection(asking)).code, -32800, 'the outer request: -32800');
  await until(() => confirmAborted !== null, "the SDK's nested handler signal (cascade)");
  eq(confirmAborted, -32800, 'aborted by our $/cancel_request');
  eq(app.activeCalls, 0, 'nothing left');
  conn.close();
  app.close();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

/** Our AbpClient (dialect 'acp') calling the SDK's agent role. */
export async function ourClientCallsTheSdkAgent() {
  const channel = new MessageChannel();
  const seen = [];
  const watch = (ctx) => {
    seen.push({ event: 'start', method: ctx.method });
    ctx.signal.addEventListener('abort', () => seen.push({ event: 'abort', method: ctx.method, code: ctx.signal.reason?.code }), { once: true });
  };
  const waitForAbort = (ctx) => new Promise((resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  const sdk = agent({ name: 'sdk-agent' })
    .onRequest(methods.agent.initialize, async () => ({ protocolVersion: PROTOCOL_VERSION, agentCapabilities: {}, authMethods: [] }))
    .onRequest('echo', raw, (ctx) => { watch(ctx); return { text: ctx.params.text }; })
    .onRequest('traced', raw, (ctx) => ({ meta: ctx.params._meta ?? null, text: ctx.params.text }))
    .onRequest('slow', raw, (ctx) => { watch(ctx); return waitForAbort(ctx); })
    .onRequest('stubborn', raw, async (ctx) => { watch(ctx); await sleep(100); return { done: true }; })
    .onRequest('boom', raw, (ctx) => { watch(ctx); throw new Error('boom'); })
    .onRequest('ask', raw, (ctx) => { watch(ctx); return ctx.client.request('confirm', { q: ctx.params.q }, { cancellationSignal: ctx.signal }); });
  const sdkConn = sdk.connect(portStream(channel.port2));
  const abp = await AbpClient.connect(PostMessageTransport.fromPort(channel.port1), { ...AGENT, heartbeat: 300 });
  eq(abp.listCapabilities(), [], 'ACP has no capability list');
  eq((await abp.call('echo', { text: 'hi' })).data, { text: 'hi' }, 'a call');
  // The trace option goes in the request's _meta, beside the params the caller gave (which are not changed).
  const params = { text: 'traced', _meta: { mine: 1 } };
  eq((await abp.call('traced', params, { trace: { traceparent: PARENT } })).data,
    { meta: { mine: 1, traceparent: PARENT }, text: 'traced' }, "ctx.params._meta in the SDK's handler");
  eq(params, { text: 'traced', _meta: { mine: 1 } }, "the caller's params unchanged");
  // Abort: $/cancel_request, the SDK handler's signal aborts, it answers -32800, our call resolves CANCELLED.
  const controller = new AbortController();
  const pending = abp.call('slow', {}, { signal: controller.signal });
  await until(() => seen.some((s) => s.event === 'start' && s.method === 'slow'), 'the SDK handler');
  controller.abort('user stop');
  const r = await pending;
  eq([r.success, r.cancelled, r.error.code, r.error.details.jsonrpc.code], [false, true, 'CANCELLED', -32800], 'CANCELLED by -32800');
  eq(seen.find((s) => s.event === 'abort' && s.method === 'slow').code, -32800, "the SDK handler's signal");
  // A handler that ignores its signal and finishes: its result is the answer (nothing lost).
  const late = new AbortController();
  const stubborn = abp.call('stubborn', {}, { signal: late.signal });
  await until(() => seen.some((s) => s.event === 'start' && s.method === 'stubborn'), 'the stubborn handler');
  late.abort();
  const kept = await stubborn;
  eq([kept.success, kept.data], [true, { done: true }], 'the result that won the race');
  const timed = await abp.call('slow', {}, { timeout: 100 });
  eq([timed.cancelled, timed.error.code], [true, 'TIMEOUT'], 'TIMEOUT');
  const boom = await abp.call('boom', {});
  eq([boom.success, boom.error.code, boom.error.details.jsonrpc.data], [false, 'INTERNAL_ERROR', { details: 'boom' }], '-32603');
  eq((await abp.call('nope', {})).error.code, 'NOT_SUPPORTED', '-32601');
  // The SDK handler asks us (onElicitation); cancelling the outer call cancels the nested one (its signal).
  abp.onElicitation = (request) => ({ success: true, data: { ok: `${request.method}: ${request.params.q}` } });
  eq((await abp.call('ask', { q: 'sure?' })).data, { ok: 'confirm: sure?' }, 'a nested request answered by onElicitation');
  let nestedAborted = false;
  abp.onElicitation = (request, { signal }) => new Promise((resolve) => {
    signal.addEventListener('abort', () => { nestedAborted = true; resolve({ success: false, cancelled: true }); });
  });
  const outer = new AbortController();
  const asking = abp.call('ask', { q: 'wait' }, { signal: outer.signal });
  await until(() => seen.filter((s) => s.event === 'start' && s.method === 'ask').length === 2, 'the second ask');
  await sleep(30);
  outer.abort();
  eq((await asking).cancelled, true, 'the outer call: cancelled');
  await until(() => nestedAborted, 'onElicitation signal aborted by the SDK $/cancel_request');
  // The other end goes away without a word (a MessagePort has no close event everywhere): the heartbeat
  // ($/ping, answered -32601 while the SDK is there) settles what is pending.
  const orphan = abp.call('slow', {});
  await until(() => seen.filter((s) => s.event === 'start' && s.method === 'slow').length === 3, 'the orphan');
  sdkConn.close();
  channel.port2.close();
  const t0 = performance.now();
  const gone = await orphan;
  assert(performance.now() - t0 < 1000, `settled within 1 s (${Math.round(performance.now() - t0)} ms)`);
  eq([gone.success, gone.error.code], [false, 'DISCONNECTED'], 'DISCONNECTED');
  await abp.shutdown();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

const cases = { sdkClientCallsOurApp, ourClientCallsTheSdkAgent };

export async function runCase(name) {
  await runNamed(cases, name, 30000, () => {});
}

export { RequestError };
