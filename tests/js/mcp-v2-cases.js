// MCP interop with the official MCP SDK 2 (@modelcontextprotocol/client and @modelcontextprotocol/server 2.4.0)
// and the current browser transports (@mcp-b/transports 5.1.0, @modelcontextprotocol/ext-apps 2.0.4), pinned in
// tests/interop/package.json and bundled by tests/interop/build.mjs; run by tests/mcp.rs in headless Chrome and
// Firefox. Both sides negotiate the era themselves, so each case checks which one they ended in as well as what
// the calls do. Every server runs in a cross-origin iframe; what happens inside it is reported back as messages.
import { AbpClient, PostMessageTransport } from '/wasm-bindgen-test';
import { Client, IframeParentTransport, ExtAppsPostMessageTransport } from '/tests/interop/mcp-sdk/dist/client-v2.js';
import { assert, crossOriginFrame, eq, fail, OTHER, pageErrors, recordMcpTraffic, rejection, runNamed, sleep, until }
  from './helpers.js';

const MODERN = '2026-07-28';
const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';

// What the frames report ({ fixtureLog } from our app, tests/fixtures/mcp-app.html; { sdkLog } from the SDK 2
// server page, tests/interop/mcp-sdk/server-v2.html), and every JSON-RPC message they post.
const { reports, messages: received, reported } = recordMcpTraffic();
const frame = crossOriginFrame;

/** The SDK 2 Client (version negotiation on) connected to our AbpApp (dialect 'mcp') in a cross-origin iframe;
 * `sent` is every message the SDK hands its transport. */
async function sdkClientToOurApp(framing) {
  reports.length = 0;
  received.length = 0;
  const iframe = frame(`/tests/fixtures/mcp-app.html${framing === 'bare' ? '?framing=bare' : ''}`);
  const client = new Client({ name: 'sdk2-host', version: '2.0.0' },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' } });
  const asked = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: { answer: `yes to ${request.params.message}` } };
  });
  const changed = [];
  client.setNotificationHandler('notifications/tools/list_changed', (n) => changed.push(n));
  let transport;
  if (framing === 'bare') {
    // ext-apps' transport has no handshake: wait for our app to say it listens.
    await until(() => reported((r) => r.event === 'listening'), 'the app to listen', 30000);
    transport = new ExtAppsPostMessageTransport(iframe.contentWindow, iframe.contentWindow);
  } else {
    transport = new IframeParentTransport({ iframe, targetOrigin: OTHER });
  }
  const sent = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => { sent.push(message); return send(message, options); };
  await client.connect(transport, { timeout: 30000 });
  return { iframe, client, sent, asked, changed };
}

async function theSdk2ClientDrivesOurApp(framing) {
  const { iframe, client, sent, asked, changed } = await sdkClientToOurApp(framing);
  // The era: server/discover answered, so the client speaks 2026-07-28 and never sends initialize.
  eq([client.getProtocolEra(), client.getNegotiatedProtocolVersion()], ['modern', MODERN], 'the negotiated era');
  const discovered = client.getDiscoverResult();
  eq(discovered?._meta?.['io.modelcontextprotocol/serverInfo'], { name: 'abp-wasm MCP app', version: '1.0.0' }, 'getDiscoverResult(): our serverInfo');
  assert(discovered.supportedVersions.includes(MODERN), `supportedVersions: ${JSON.stringify(discovered.supportedVersions)}`);
  eq(client.getServerVersion()?.name, 'abp-wasm MCP app', 'getServerVersion()');
  eq(sent[0].method, 'server/discover', 'the first message is the probe');

  const { tools } = await client.listTools();
  eq(tools.map((t) => t.name), ['echo', 'slow', 'fail', 'ask'], 'listTools, in the app\'s registration order');
  eq(tools.find((t) => t.name === 'echo').inputSchema.required, ['text'], 'inputSchema');
  const listed = received.find((m) => m.result?.tools);
  eq([listed.result.resultType, listed.result.ttlMs, listed.result.cacheScope], ['complete', 0, 'private'], 'tools/list carries ttlMs and cacheScope');
  const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  eq(echoed.structuredContent, { text: 'hi' }, 'callTool: structuredContent');
  eq(echoed.content, [{ type: 'text', text: '{"text":"hi"}' }], 'callTool: text content');
  const failed = await client.callTool({ name: 'fail', arguments: {} });
  eq([failed.isError, failed.content[0].text], [true, 'boom'], 'a handler error is isError');

  // Progress, by the SDK's own token.
  const progress = [];
  const slow = await client.callTool({ name: 'slow', arguments: { steps: 3, ms: 40 } }, { onprogress: (p) => progress.push(p) });
  eq([slow.structuredContent, progress.map((p) => p.progress), progress[0].message], [{ steps: 3 }, [1, 2, 3], 'step 1/3'], 'progress');

  // Abort through the SDK's signal: our handler's ctx.signal aborts with the reason, and no response is sent.
  const controller = new AbortController();
  const pending = client.callTool({ name: 'slow', arguments: { steps: 50, ms: 100 } }, { signal: controller.signal });
  await until(() => reports.filter((r) => r.event === 'start' && r.name === 'slow').length === 2, 'the second slow call to start');
  const started = reports.filter((r) => r.event === 'start' && r.name === 'slow')[1];
  controller.abort('user pressed stop');
  const aborted = await rejection(pending);
  assert(/user pressed stop/.test(aborted.message), `the SDK rejects with the reason: ${aborted.message}`);
  await until(() => reported((r) => r.event === 'abort' && r.callId === started.callId), "our handler's signal to abort");
  eq(reported((r) => r.event === 'abort' && r.callId === started.callId).reason, 'user pressed stop', 'with the reason');
  const cancel = sent.find((m) => m.method === 'notifications/cancelled');
  eq(String(cancel.params.requestId), started.callId, 'notifications/cancelled names the call');
  await sleep(250);
  eq(received.filter((m) => String(m.id) === started.callId && m.method === undefined).length, 0, 'no response for the cancelled request');

  // Elicitation: our ctx.elicit answers the call with an InputRequiredResult; the SDK asks its elicitation/create
  // handler and retries the call with the answer, whose response is the call's result.
  const answer = await client.callTool({ name: 'ask', arguments: { question: 'Proceed?' } });
  eq(answer.structuredContent.answer, { success: true, data: { answer: 'yes to Proceed?' } }, 'the answer reached our handler');
  eq(asked.map((p) => p.message), ['Proceed?'], "the SDK's elicitation/create handler was asked once");
  const askCalls = sent.filter((m) => m.method === 'tools/call' && m.params.name === 'ask');
  eq(askCalls.length, 2, 'the call and its retry');
  const inputRequired = received.find((m) => String(m.id) === String(askCalls[0].id));
  eq(inputRequired.result.resultType, 'input_required', 'the first answer asks for input');
  eq(askCalls[1].params.requestState, inputRequired.result.requestState, 'the retry brings the requestState back');
  const key = Object.keys(inputRequired.result.inputRequests)[0];
  eq(askCalls[1].params.inputResponses[key], { action: 'accept', content: { answer: 'yes to Proceed?' } }, 'and the answer under its key');
  assert(!received.some((m) => m.method === 'elicitation/create'), 'the app sends no request of its own');

  // Changes come only through subscriptions/listen.
  const subscription = await client.listen({ toolsListChanged: true });
  eq(subscription.honoredFilter, { toolsListChanged: true }, 'listen: the filter is honored');
  iframe.contentWindow.postMessage({ fixtureCommand: 'register', name: 'late' }, OTHER);
  await until(() => changed.length > 0, "the client's list_changed handler", 5000);
  eq((await client.listTools()).tools.map((t) => t.name), ['echo', 'slow', 'fail', 'ask', 'late'], 'the new tool is listed');
  eq((await client.callTool({ name: 'late', arguments: {} })).structuredContent, { late: true }, 'and can be called');
  // Closed: the app hears no more of it.
  await subscription.close();
  const listenId = sent.find((m) => m.method === 'subscriptions/listen').id;
  assert(sent.some((m) => m.method === 'notifications/cancelled' && m.params.requestId === listenId), 'the listen is cancelled');
  const heard = changed.length;
  iframe.contentWindow.postMessage({ fixtureCommand: 'register', name: 'later' }, OTHER);
  await sleep(300);
  eq(changed.length, heard, 'no change notification after the listen closed');

  // Every request of ours said its version; none opened a session.
  eq(sent.filter((m) => m.method === 'initialize').length, 0, 'no initialize on the wire');
  const bare = sent.filter((m) => m.method && m.id !== undefined && m.params?._meta?.[VERSION_KEY] !== MODERN);
  eq(bare.map((m) => m.method), [], `every request carries ${VERSION_KEY}`);
  await client.close();
  iframe.remove();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

export async function sdk2ClientDrivesOurAppOverMcpB() {
  await theSdk2ClientDrivesOurApp('mcp-b');
}

export async function sdk2ClientDrivesOurAppOverBareJsonRpc() {
  await theSdk2ClientDrivesOurApp('bare');
}

/** Our AbpClient (dialect 'mcp') connected to the SDK 2 McpServer (dual-era) in a cross-origin iframe. */
async function ourClientToSdk2Server(framing) {
  reports.length = 0;
  received.length = 0;
  const iframe = frame(`/tests/interop/mcp-sdk/server-v2.html${framing === 'bare' ? '?framing=bare' : ''}`);
  const transport = PostMessageTransport.toIframe(iframe, framing === 'bare' ? { targetOrigin: OTHER }
    : { targetOrigin: OTHER, channel: 'mcp-iframe' });
  const abp = await AbpClient.connect(transport, { agent: { name: 'abp-wasm-test-agent', version: '1.0.0' }, dialect: 'mcp' });
  return { iframe, abp };
}

async function ourClientDrivesTheSdk2Server(framing) {
  const { iframe, abp } = await ourClientToSdk2Server(framing);
  const wire = () => reports.filter((r) => r.event === 'wire');
  // The era: the SDK's entry saw server/discover first and never initialize, and built one modern server.
  eq(wire()[0].method, 'server/discover', 'the first message the server sees is the probe');
  eq(reports.filter((r) => r.event === 'instance').map((r) => r.era), ['modern'], 'the server runs in the 2026-07-28 era');
  eq(abp.listCapabilities().map((c) => c.name), ['echo', 'slow', 'ask'], 'listCapabilities() from tools/list');
  eq(abp.describeCapability('echo').description, 'Echoes its text argument', 'descriptions');
  await until(() => wire().some((m) => m.method === 'subscriptions/listen'), 'our client to listen for changes');

  const echoed = await abp.call('echo', { text: 'hi' });
  eq([echoed.success, echoed.data.content], [true, [{ type: 'text', text: 'hi' }]], 'a call (the CallToolResult as data)');
  const invalid = await abp.call('echo', { text: 5 });
  eq([invalid.success, invalid.error.code], [false, 'OPERATION_FAILED'], `the SDK's argument check is an isError: ${invalid.error.message}`);
  const progress = [];
  const slow = await abp.call('slow', { steps: 3, ms: 40 }, { onProgress: (p) => progress.push(p.progress) });
  eq([slow.success, slow.data.content[0].text, progress], [true, 'done after 3 steps', [1, 2, 3]], 'progress');

  // Abort: the SDK handler's ctx.mcpReq.signal aborts with our reason; our call resolves CANCELLED at once.
  const controller = new AbortController();
  const pending = abp.call('slow', { steps: 50, ms: 100 }, { signal: controller.signal, callId: 'stop-me' });
  await until(() => reported((r) => r.event === 'start' && r.requestId === 'stop-me'), 'the SDK handler to start');
  const t0 = performance.now();
  controller.abort('user pressed stop');
  const r = await pending;
  assert(performance.now() - t0 < 50, 'settled at once');
  eq([r.success, r.cancelled, r.error.code], [false, true, 'CANCELLED'], 'CANCELLED');
  await until(() => reported((x) => x.event === 'abort' && x.requestId === 'stop-me'), "the SDK handler's signal to abort");
  eq(reported((x) => x.event === 'abort' && x.requestId === 'stop-me').reason, 'user pressed stop', 'with our reason');

  // The SDK's InputRequiredResult reaches onElicitation; our retry brings the answer.
  const questions = [];
  abp.onElicitation = (request) => {
    questions.push(request.params.message);
    return { success: true, data: { answer: `ok: ${request.params.message}` } };
  };
  const asked = await abp.call('ask', { question: 'Proceed?' });
  eq([asked.success, asked.data?.content], [true, [{ type: 'text', text: 'you said: ok: Proceed?' }]], 'elicitation answered by retry');
  eq(questions, ['Proceed?'], 'onElicitation was asked once');
  eq(reports.filter((x) => x.event === 'start' && x.name === 'ask').length, 2, 'the SDK handler ran for the call and its retry');

  // A tool registered on the server: the change comes through our listen, and our client lists again.
  let changes = null;
  abp.onCapabilitiesChanged = (c) => { changes = c; };
  iframe.contentWindow.postMessage({ sdkCommand: 'addTool', name: 'late' }, OTHER);
  await until(() => changes, 'the refreshed list');
  eq(changes.added, ['late'], 'added');
  eq((await abp.call('late', {})).data.content[0].text, 'late', 'and it can be called');

  eq(wire().filter((m) => m.method === 'initialize').length, 0, 'never initialize');
  const unversioned = wire().filter((m) => m.method && m.version !== MODERN);
  eq(unversioned.map((m) => m.method), [], `every message of ours carries ${VERSION_KEY}`);
  eq(reports.filter((x) => x.event === 'error'), [], 'no errors in the SDK');
  await abp.shutdown();
  iframe.remove();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

export async function ourClientDrivesTheSdk2ServerOverMcpB() {
  await ourClientDrivesTheSdk2Server('mcp-b');
}

export async function ourClientDrivesTheSdk2ServerOverBareJsonRpc() {
  await ourClientDrivesTheSdk2Server('bare');
}

const cases = {
  sdk2ClientDrivesOurAppOverMcpB, sdk2ClientDrivesOurAppOverBareJsonRpc, ourClientDrivesTheSdk2ServerOverMcpB,
  ourClientDrivesTheSdk2ServerOverBareJsonRpc,
};

/** Runs one case; a case that hangs fails after 60 s (the first, in a fresh browser, also loads the wasm). */
export async function runCase(name) {
  await runNamed(cases, name, 60000, () => {
    for (const f of document.querySelectorAll('iframe')) f.remove();
  });
}
