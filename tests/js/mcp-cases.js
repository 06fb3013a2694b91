// MCP interop cases, run by tests/mcp.rs in headless Chrome and Firefox: this SDK speaking MCP with code nobody
// here wrote, the official @modelcontextprotocol/sdk 1.32.2 with @mcp-b/transports 4.0.0 and
// @modelcontextprotocol/ext-apps 1.7.5, their last releases on SDK 1 (pinned under npm aliases in
// tests/interop/package.json, bundled by tests/interop/build.mjs). SDK 2 is in mcp-v2-cases.js.
// Every app runs in a cross-origin iframe; what happens inside it is reported back as messages.
import { AbpClient, AbpApp, PostMessageTransport, WebSocketTransport } from '/wasm-bindgen-test';
import { Client, IframeParentTransport, ExtAppsPostMessageTransport, WebSocketClientTransport, ElicitRequestSchema }
  from '/tests/interop/mcp-sdk/dist/client.js';
import { Client as Client2 } from '/tests/interop/mcp-sdk/dist/client-v2.js';
import {
  assert, crossOriginFrame, eq, fail, LOAD_MS, ORIGIN, OTHER, pageErrors, recordMcpTraffic, rejection, runNamed, sleep, until,
} from './helpers.js';

const AGENT = { agent: { name: 'abp-wasm-test-agent', version: '1.0.0' }, dialect: 'mcp' };
// A W3C traceparent, for the calls that carry a trace context.
const PARENT = '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01';

// What the frames report ({ fixtureLog } from our app, tests/fixtures/mcp-app.html; { sdkLog } from the SDK's
// McpServer page, tests/interop/mcp-sdk/server.html), and every JSON-RPC message they post, for counting frames.
const { reports, messages: frames, reported } = recordMcpTraffic();
const frame = crossOriginFrame;

const loaded = (iframe) => new Promise((resolve) => iframe.addEventListener('load', resolve, { once: true }));


/** The official SDK Client, connected to our AbpApp (dialect 'mcp') in a cross-origin iframe. */
async function sdkClientToOurApp(framing) {
  reports.length = 0;
  const iframe = frame(`/tests/fixtures/mcp-app.html${framing === 'bare' ? '?framing=bare' : ''}`);
  const changed = [];
  const client = new Client({ name: 'sdk-host', version: '1.0.0' }, {
    capabilities: { elicitation: {} },
    listChanged: { tools: { debounceMs: 0, onChanged: (error, tools) => changed.push(tools) } },
  });
  const elicitAborts = [];
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    if (request.params.message === 'hang') {
      // Never answers: only the cascade from the cancelled call ends it.
      elicitAborts.asked = true;
      return new Promise((resolve, reject) => extra.signal.addEventListener('abort', () => {
        elicitAborts.push(String(extra.signal.reason));
        reject(extra.signal.reason);
      }));
    }
    return { action: 'accept', content: { answer: `yes to ${request.params.message}` } };
  });
  let transport;
  if (framing === 'bare') {
    // ext-apps' transport has no handshake: wait for our app to say it listens.
    await until(() => reported((r) => r.event === 'listening'), 'the app to listen', LOAD_MS);
    transport = new ExtAppsPostMessageTransport(iframe.contentWindow, iframe.contentWindow);
  } else {
    transport = new IframeParentTransport({ iframe, targetOrigin: OTHER });
  }
  await client.connect(transport);
  return { iframe, client, changed, elicitAborts };
}

async function theSdkClientDrivesOurApp(framing) {
  const { iframe, client, changed, elicitAborts } = await sdkClientToOurApp(framing);
  const { tools } = await client.listTools();
  eq(tools.map((t) => t.name), ['echo', 'slow', 'fail', 'ask'], 'listTools');
  const schema = tools[0].inputSchema;
  eq([schema.type, schema.required, schema.properties], ['object', ['text'], { text: { type: 'string' } }], 'inputSchema');
  eq(tools[2].inputSchema, { type: 'object' }, 'the default inputSchema');
  const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  eq(echoed.structuredContent, { text: 'hi' }, 'callTool: structuredContent');
  // The SDK passes the request's _meta on: its W3C trace context is our handler's ctx.trace.
  await client.callTool({ name: 'echo', arguments: { text: 'traced' }, _meta: { traceparent: PARENT, tracestate: 'mcp=1' } });
  const isTraced = (r) => r.event === 'start' && r.trace;
  await until(() => reported(isTraced), 'the traced call to start');
  eq(reported(isTraced).trace, { traceparent: PARENT, tracestate: 'mcp=1' }, "the SDK client's _meta.traceparent as ctx.trace");
  eq(echoed.content, [{ type: 'text', text: '{"text":"hi"}' }], 'callTool: text content');
  // Arguments are checked against the inputSchema; unknown tools are JSON-RPC errors -32602.
  const bad = await rejection(client.callTool({ name: 'echo', arguments: { text: 5 } }));
  eq(bad.code, -32602, `arguments against inputSchema: ${bad.message}`);
  const unknown = await rejection(client.callTool({ name: 'nope', arguments: {} }));
  eq(unknown.code, -32602, 'an unknown tool');
  const failed = await client.callTool({ name: 'fail', arguments: {} });
  eq([failed.isError, failed.content[0].text], [true, 'boom'], 'a handler error is isError');
  // Progress, with the timeout reset by each one.
  const progress = [];
  const slow = await client.callTool({ name: 'slow', arguments: { steps: 4, ms: 120 } }, undefined,
    { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 300 });
  eq(slow.structuredContent, { steps: 4 }, 'progress kept the call alive past its timeout');
  eq(progress.map((p) => p.progress), [1, 2, 3, 4], 'onprogress');
  eq(progress[0].message, 'step 1/4', 'the status travels as the message');
  // Abort through the SDK's signal: our handler's ctx.signal aborts with the reason, and no response is sent.
  const controller = new AbortController();
  const pending = client.callTool({ name: 'slow', arguments: { steps: 50, ms: 100 } }, undefined, { signal: controller.signal });
  await until(() => reported((r) => r.event === 'start' && r.name === 'slow' && reports.filter((x) => x.event === 'start' && x.name === 'slow').length === 2), 'the second slow call to start');
  const started = reports.filter((r) => r.event === 'start' && r.name === 'slow')[1];
  controller.abort('user pressed stop');
  const aborted = await rejection(pending);
  assert(/user pressed stop/.test(aborted.message), `the SDK rejects with the reason: ${aborted.message}`);
  await until(() => reported((r) => r.event === 'abort' && r.callId === started.callId), "our handler's signal to abort");
  eq(reported((r) => r.event === 'abort' && r.callId === started.callId).reason, 'user pressed stop', 'with the reason');
  await sleep(250);
  eq(frames.filter((m) => String(m.id) === started.callId && m.method === undefined).length, 0, 'no response frame for the cancelled request');
  // The SDK's timeout cancels the same way.
  const timedOut = await rejection(client.callTool({ name: 'slow', arguments: { steps: 50, ms: 100 } }, undefined, { timeout: 150 }));
  eq(timedOut.code, -32001, 'the SDK timeout');
  await until(() => reports.filter((r) => r.event === 'abort' && r.name === 'slow').length === 2, 'the timed-out handler to abort');
  // Elicitation: our ctx.elicit becomes elicitation/create, answered by the SDK's handler.
  const asked = await client.callTool({ name: 'ask', arguments: { question: 'Proceed?' } });
  eq(asked.structuredContent.answer, { success: true, data: { answer: 'yes to Proceed?' } }, 'elicitation/create answered');
  // Cancelling the call cancels the elicitation it is waiting on: the SDK handler's extra.signal aborts.
  const stop = new AbortController();
  const hanging = client.callTool({ name: 'ask', arguments: { question: 'hang' } }, undefined, { signal: stop.signal });
  await until(() => elicitAborts.asked, 'the SDK to be asked');
  stop.abort('never mind');
  await rejection(hanging);
  await until(() => elicitAborts.length === 1, "the SDK elicitation handler's signal (cascade)");
  // A tool registered later: notifications/tools/list_changed, and the SDK lists again.
  iframe.contentWindow.postMessage({ fixtureCommand: 'register', name: 'late' }, OTHER);
  await until(() => changed.length > 0, 'the SDK to list the tools again', 5000);
  assert(changed[changed.length - 1].some((t) => t.name === 'late'), 'the new tool is listed');
  await client.close();
  iframe.remove();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

export async function sdkClientDrivesOurAppOverMcpB() {
  await theSdkClientDrivesOurApp('mcp-b');
}

export async function sdkClientDrivesOurAppOverBareJsonRpc() {
  await theSdkClientDrivesOurApp('bare');
}

/** Our AbpClient (dialect 'mcp') connected to the SDK's McpServer in a cross-origin iframe. */
async function ourClientToSdkServer(framing, options = {}) {
  reports.length = 0;
  frames.length = 0;
  const iframe = frame(`/tests/interop/mcp-sdk/server.html${framing === 'bare' ? '?framing=bare' : ''}`);
  const transport = PostMessageTransport.toIframe(iframe, framing === 'bare' ? { targetOrigin: OTHER }
    : { targetOrigin: OTHER, channel: 'mcp-iframe' });
  const abp = await AbpClient.connect(transport, { ...AGENT, ...options });
  return { iframe, abp };
}

async function ourClientDrivesTheSdkServer(framing) {
  const { iframe, abp } = await ourClientToSdkServer(framing);
  // Our client asks server/discover first; SDK 1 refuses it with -32601, and our client falls back to initialize.
  const methods = () => reports.filter((r) => r.event === 'wire').map((r) => r.method);
  await until(() => methods().includes('notifications/initialized'), 'the legacy handshake to finish');
  eq(methods()[0], 'server/discover', 'the probe first');
  eq(methods().filter((m) => m !== 'server/discover').slice(0, 2), ['initialize', 'notifications/initialized'], 'then the legacy handshake');
  assert(frames.some((m) => m.error?.code === -32601), 'the SDK 1 server refused the probe with -32601');
  eq(abp.listCapabilities().map((c) => c.name), ['echo', 'add', 'slow', 'fail', 'ask'], 'listCapabilities() from tools/list');
  eq(abp.describeCapability('add').description, 'Adds two numbers (has an outputSchema, returns structuredContent)', 'descriptions');
  const echoed = await abp.call('echo', { text: 'hi' });
  eq([echoed.success, echoed.data.content], [true, [{ type: 'text', text: 'hi' }]], 'a call (the CallToolResult as data)');
  // Our trace option goes in the request's _meta, where the SDK server's handler reads it (extra._meta).
  await abp.call('echo', { text: 'traced' }, { trace: { traceparent: PARENT }, callId: 'traced' });
  const isTraced = (r) => r.event === 'start' && r.requestId === 'traced';
  await until(() => reported(isTraced), 'the traced call');
  eq(reported(isTraced).traceparent, PARENT, "the SDK handler's extra._meta.traceparent");
  eq((await abp.call('add', { a: 2, b: 3 })).data, { sum: 5 }, 'structuredContent as data');
  const failed = await abp.call('fail', {});
  eq([failed.success, failed.error.code, failed.error.message], [false, 'OPERATION_FAILED', 'boom: the handler failed'], 'isError');
  const unknown = await abp.call('nope', {});
  eq([unknown.success, unknown.error.code], [false, 'OPERATION_FAILED'], 'the SDK answers an unknown tool with isError');
  const progress = [];
  const slow = await abp.call('slow', { steps: 3, ms: 40 }, { onProgress: (p) => progress.push(p.progress) });
  eq([slow.success, progress], [true, [1, 2, 3]], 'progress');
  // Abort: the SDK handler's extra.signal aborts with our reason; our call resolves CANCELLED at once.
  const controller = new AbortController();
  const pending = abp.call('slow', { steps: 50, ms: 100 }, { signal: controller.signal, callId: 'stop-me' });
  await until(() => reported((r) => r.event === 'start' && r.requestId === 'stop-me'), 'the SDK handler to start');
  const t0 = performance.now();
  controller.abort('user pressed stop');
  const r = await pending;
  assert(performance.now() - t0 < 50, 'settled at once');
  eq([r.success, r.cancelled, r.error.code], [false, true, 'CANCELLED'], 'CANCELLED');
  await until(() => reported((x) => x.event === 'abort' && x.requestId === 'stop-me'), "the SDK handler's extra.signal to abort");
  eq(reported((x) => x.event === 'abort' && x.requestId === 'stop-me').reason, 'user pressed stop', 'with our reason');
  // Timeout: TIMEOUT here, and the SDK handler is cancelled with reason "timeout".
  const timed = await abp.call('slow', { steps: 50, ms: 100 }, { timeout: 150, callId: 'too-slow' });
  eq([timed.cancelled, timed.error.code, timed.error.retryable], [true, 'TIMEOUT', true], 'TIMEOUT');
  await until(() => reported((x) => x.event === 'abort' && x.requestId === 'too-slow'), 'the SDK handler to be cancelled');
  // Elicitation from the SDK server reaches onElicitation.
  abp.onElicitation = (request) => ({ success: true, data: { answer: `ok: ${request.params.message}` } });
  const asked = await abp.call('ask', { question: 'Proceed?' });
  eq(JSON.parse(asked.data.content[0].text), { action: 'accept', content: { answer: 'ok: Proceed?' } }, 'elicitation answered');
  // A tool added on the server: list_changed, then our client lists again.
  let changes = null;
  abp.onCapabilitiesChanged = (c) => { changes = c; };
  iframe.contentWindow.postMessage({ sdkCommand: 'addTool', name: 'late' }, OTHER);
  await until(() => changes, 'the refreshed list');
  eq(changes.added, ['late'], 'added');
  eq((await abp.call('late', {})).data.content[0].text, 'late', 'and it can be called');
  // The iframe removed mid-call: DISCONNECTED within a second.
  const orphan = abp.call('slow', { steps: 50, ms: 100 });
  await sleep(50);
  const t1 = performance.now();
  iframe.remove();
  const gone = await orphan;
  assert(performance.now() - t1 < 1000, 'within a second');
  eq([gone.success, gone.error.code], [false, 'DISCONNECTED'], 'DISCONNECTED');
  await abp.shutdown();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

export async function ourClientDrivesTheSdkServerOverMcpB() {
  await ourClientDrivesTheSdkServer('mcp-b');
}

export async function ourClientDrivesTheSdkServerOverBareJsonRpc() {
  await ourClientDrivesTheSdkServer('bare');
}

export async function forgedJsonRpcFromAnotherFrameIsIgnored() {
  // A hostile frame on the right origin but the wrong window, and the right window on the wrong origin: neither
  // reaches our MCP client.
  const { iframe, abp } = await ourClientToSdkServer('mcp-b');
  const rejectedBefore = abp.rejectedMessages;
  const forger = document.createElement('iframe');
  forger.src = `${OTHER}/tests/fixtures/forger.html?callId=x`;
  document.body.appendChild(forger);
  await loaded(forger);
  window.postMessage({ channel: 'mcp-iframe', type: 'mcp', direction: 'server-to-client',
    payload: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' } }, ORIGIN);
  await until(() => abp.rejectedMessages > rejectedBefore, 'the forged message to be rejected');
  eq(abp.listCapabilities().length, 5, 'nothing changed');
  forger.remove();
  iframe.remove();
  await abp.shutdown();
}

export async function sdkWebSocketClientReachesOurAppThroughTheRelay() {
  const base = globalThis.ABP_PEER_URL;
  if (!base) fail('ABP_PEER_URL is not set');
  const room = `mcp-${Math.random().toString(16).slice(2)}`;
  const app = new AbpApp({ id: 'ws.mcp', name: 'WS MCP app', version: '1.0.0' });
  let aborted = null;
  app.register('wait', (params, ctx) => new Promise((resolve, reject) => {
    ctx.signal.addEventListener('abort', () => { aborted = ctx.signal.reason.message; reject(ctx.signal.reason); });
  }));
  app.register('add', ({ a, b }) => ({ sum: a + b }));
  const appSocket = await WebSocketTransport.connect(`${base}/relay/${room}/app`, { protocols: ['mcp'] });
  eq(appSocket.protocol, 'mcp', 'the relay speaks the subprotocol mcp');
  app.listen(appSocket, { dialect: 'mcp' });
  const client = new Client({ name: 'sdk-ws', version: '1.0.0' });
  // The agent side of the relay needs the peer's launch token (a browser's WebSocket cannot send headers).
  const agentUrl = new URL(`${base}/relay/${room}/agent`);
  agentUrl.searchParams.set('token', globalThis.ABP_PEER_TOKEN);
  await client.connect(new WebSocketClientTransport(agentUrl));
  eq((await client.listTools()).tools.map((t) => t.name), ['wait', 'add'], 'listTools over WebSocket');
  eq((await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })).structuredContent, { sum: 3 }, 'callTool');
  const controller = new AbortController();
  const pending = client.callTool({ name: 'wait', arguments: {} }, undefined, { signal: controller.signal });
  await until(() => app.activeCalls === 1, 'the handler to run');
  controller.abort('enough');
  await rejection(pending);
  await until(() => aborted === 'enough', "the handler's signal");
  await client.close();
  app.close();
}

/** The relay's agent side of `room`, with the peer's launch token (a browser's WebSocket cannot send headers). */
function relayAgentUrl(room) {
  const url = new URL(`${globalThis.ABP_PEER_URL}/relay/${room}/agent`);
  url.searchParams.set('token', globalThis.ABP_PEER_TOKEN);
  return url;
}

/** Our AbpApp (dialect 'mcp') on the app side of a new relay room. */
async function ourMcpAppOnTheRelay() {
  if (!globalThis.ABP_PEER_URL) fail('ABP_PEER_URL is not set');
  const room = `mcp-${Math.random().toString(16).slice(2)}`;
  const app = new AbpApp({ id: 'ws.mcp.modern', name: 'WS MCP app', version: '1.0.0' });
  const seen = { aborted: null };
  app.register('wait', (params, ctx) => new Promise((resolve, reject) => {
    ctx.signal.addEventListener('abort', () => { seen.aborted = ctx.signal.reason.message; reject(ctx.signal.reason); });
  }));
  app.register('add', ({ a, b }) => ({ sum: a + b }));
  app.register('ask', async (params, ctx) => ({ answer: await ctx.elicit({ method: 'elicitation/create', params: {
    message: params.question, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } }) }));
  app.listen(await WebSocketTransport.connect(`${globalThis.ABP_PEER_URL}/relay/${room}/app`, { protocols: ['mcp'] }),
    { dialect: 'mcp' });
  return { room, app, seen };
}

export async function theModernEraOverWebSocketInBothRoles() {
  // The SDK 2 Client, negotiating the era, over a WebSocket transport (SDK 1's, the one the SDKs have) to our app.
  const { room, app, seen } = await ourMcpAppOnTheRelay();
  const client = new Client2({ name: 'sdk2-ws', version: '2.0.0' },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' } });
  client.setRequestHandler('elicitation/create', async (request) =>
    ({ action: 'accept', content: { ok: request.params.message === 'Proceed?' } }));
  const transport = new WebSocketClientTransport(relayAgentUrl(room));
  const sent = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => { sent.push(message); return send(message, options); };
  await client.connect(transport, { timeout: 30000 });
  eq([client.getProtocolEra(), client.getNegotiatedProtocolVersion()], ['modern', '2026-07-28'], 'the negotiated era');
  eq(sent[0].method, 'server/discover', 'the first message is the probe');
  eq((await client.listTools()).tools.map((t) => t.name), ['wait', 'add', 'ask'], 'listTools');
  eq((await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })).structuredContent, { sum: 3 }, 'callTool');
  const controller = new AbortController();
  const pending = client.callTool({ name: 'wait', arguments: {} }, { signal: controller.signal });
  await until(() => app.activeCalls === 1, 'the handler to run');
  controller.abort('enough');
  await rejection(pending);
  await until(() => seen.aborted === 'enough', "the handler's signal");
  const asked = await client.callTool({ name: 'ask', arguments: { question: 'Proceed?' } });
  eq(asked.structuredContent.answer, { success: true, data: { ok: true } }, 'elicitation by retry');
  eq(sent.filter((m) => m.method === 'tools/call' && m.params.name === 'ask').length, 2, 'the call and its retry');
  eq(sent.filter((m) => m.method === 'initialize').length, 0, 'never initialize');
  await client.close();
  app.close();

  // Our client (dialect 'mcp') over a WebSocket: it probes first and speaks the stateless era to a server that
  // answers the probe (a bare socket on the relay's app side plays the server and records what arrives).
  const { room: room2, server, wire } = await bareServerOnTheRelay();
  const reply = (id, result) => server.send(JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...result } }));
  server.onmessage = (event) => {
    const m = JSON.parse(event.data);
    wire.push(m);
    if (m.method === 'server/discover') {
      reply(m.id, { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } },
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'bare', version: '1' } } });
    } else if (m.method === 'subscriptions/listen') {
      server.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged',
        params: { _meta: { 'io.modelcontextprotocol/subscriptionId': m.id }, notifications: { toolsListChanged: true } } }));
    } else if (m.method === 'tools/list') {
      reply(m.id, { tools: [{ name: 'wait', inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'private' });
    }
  };
  const abp = await AbpClient.connect(await WebSocketTransport.connect(relayAgentUrl(room2).href, { protocols: ['mcp'] }), AGENT);
  eq(abp.listCapabilities().map((c) => c.name), ['wait'], 'listCapabilities() from tools/list');
  const stop = new AbortController();
  const call = abp.call('wait', {}, { signal: stop.signal });
  await until(() => wire.some((m) => m.method === 'tools/call'), 'the call on the wire');
  stop.abort('user pressed stop');
  eq((await call).error.code, 'CANCELLED', 'CANCELLED');
  await until(() => wire.some((m) => m.method === 'notifications/cancelled'), 'the cancel on the wire');
  const callId = wire.find((m) => m.method === 'tools/call').id;
  eq(wire.find((m) => m.method === 'notifications/cancelled').params.requestId, callId, 'the cancel names the call');
  eq(wire[0].method, 'server/discover', 'our client probes first');
  eq(wire.filter((m) => m.method === 'initialize').length, 0, 'never initialize');
  const bare = wire.filter((m) => m.id !== undefined && m.params?._meta?.['io.modelcontextprotocol/protocolVersion'] !== '2026-07-28');
  eq(bare.map((m) => m.method), [], 'every request carries its version in _meta');
  await abp.shutdown();
  server.close();

  // `protocolVersion` pins the era. 2026-07-28: a server that refuses the probe is not fallen back from (the
  // connect fails, no initialize). 2025-11-25: initialize first, no probe. A version MCP has not: a TypeError.
  const refusing = await bareServerOnTheRelay();
  refusing.server.onmessage = (event) => {
    const m = JSON.parse(event.data);
    refusing.wire.push(m);
    if (m.id !== undefined) {
      refusing.server.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } }));
    }
  };
  const pinnedModern = await rejection(AbpClient.connect(await WebSocketTransport.connect(relayAgentUrl(refusing.room).href,
    { protocols: ['mcp'] }), { ...AGENT, protocolVersion: '2026-07-28', connectTimeout: 3000 }));
  assert(pinnedModern.message, `the pinned connect fails: ${pinnedModern.message}`);
  eq([...new Set(refusing.wire.map((m) => m.method))], ['server/discover'], 'pinned to 2026-07-28: only the probe, never initialize');
  refusing.server.close();

  const legacy = await bareServerOnTheRelay();
  legacy.server.onmessage = (event) => legacy.wire.push(JSON.parse(event.data));
  const pinnedLegacy = rejection(AbpClient.connect(await WebSocketTransport.connect(relayAgentUrl(legacy.room).href,
    { protocols: ['mcp'] }), { ...AGENT, protocolVersion: '2025-11-25', connectTimeout: 1000 }));
  await until(() => legacy.wire.length > 0, 'the first message');
  eq([legacy.wire[0].method, legacy.wire[0].params.protocolVersion], ['initialize', '2025-11-25'], 'pinned to 2025-11-25: initialize first');
  await pinnedLegacy;
  eq(legacy.wire.filter((m) => m.method === 'server/discover').length, 0, 'and no probe');
  legacy.server.close();

  const socket = await WebSocketTransport.connect(relayAgentUrl(legacy.room).href, { protocols: ['mcp'] });
  const unknown = await rejection((async () => AbpClient.connect(socket, { ...AGENT, protocolVersion: '1999-01-01' }))());
  eq(unknown.name, 'TypeError', `an unknown version: ${unknown.message}`);
  socket.close();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

/** A bare WebSocket on the app side of a new relay room, playing an MCP server; `wire` is for what it records. */
async function bareServerOnTheRelay() {
  const room = `mcp-${Math.random().toString(16).slice(2)}`;
  const server = new WebSocket(`${globalThis.ABP_PEER_URL}/relay/${room}/app`, 'mcp');
  await new Promise((resolve, reject) => { server.onopen = resolve; server.onerror = () => reject(new Error('the server socket')); });
  return { room, server, wire: [] };
}

const cases = {
  sdkClientDrivesOurAppOverMcpB, sdkClientDrivesOurAppOverBareJsonRpc, ourClientDrivesTheSdkServerOverMcpB,
  ourClientDrivesTheSdkServerOverBareJsonRpc, forgedJsonRpcFromAnotherFrameIsIgnored,
  sdkWebSocketClientReachesOurAppThroughTheRelay, theModernEraOverWebSocketInBothRoles,
};

/** Runs one case; a case that hangs fails after 30 s. */
export async function runCase(name, peerUrl, peerToken) {
  globalThis.ABP_PEER_URL = peerUrl;
  globalThis.ABP_PEER_TOKEN = peerToken;
  await runNamed(cases, name, 30000, () => {
    for (const f of document.querySelectorAll('iframe')) f.remove();
  });
}
