// WebMCP cases, run by tests/webmcp.rs: in Chromium with its native `document.modelContext`
// (--enable-features=WebMCP), and in Chromium and Firefox with @mcp-b/webmcp-polyfill 5.1.0. Both directions, each
// against plain WebMCP code (registerTool / getTools / executeTool written here, not our other half):
//   - our AbpApp, exposed with `app.exposeWebMCP()`, called by plain `executeTool` code;
//   - our AbpClient, over `WebMCPTransport.document()`, calling plain `registerTool` tools.
// Native WebMCP runs a tool as `execute(input, { signal })`; the polyfill calls `execute(input)` with no signal,
// so no cancellation reaches a tool there: the caller's side still settles at once (what the cases check then).
import { AbpApp, AbpClient, WebMCPTransport } from '/wasm-bindgen-test';
import { initializeWebMCPPolyfill } from '/tests/interop/webmcp/dist/polyfill.js';
import { assert, eq, fail, ORIGIN, OTHER, pageErrors, runNamed, sleep, until } from './helpers.js';

let MODE = 'native';
const mc = () => document.modelContext;
/** The polyfill wants `executeTool`'s input as JSON text, native WebMCP as an object. */
const input = (v) => (mc().__isWebMCPPolyfill ? JSON.stringify(v) : v);
const toolNamed = async (name) => (await mc().getTools()).find((t) => t.name === name);
const names = async (prefix) => (await mc().getTools()).map((t) => t.name).filter((n) => n.startsWith(prefix)).sort();

/** Plain WebMCP caller code: runs the tool `name` and parses its result text. */
async function execute(name, args, options = {}) {
  const tool = await toolNamed(name);
  if (!tool) fail(`no tool ${name} in getTools()`);
  const text = await mc().executeTool(tool, input(args), options);
  return JSON.parse(text);
}

function setUp(mode) {
  MODE = mode;
  if (mode === 'polyfill') {
    initializeWebMCPPolyfill();
    assert(mc()?.__isWebMCPPolyfill === true, 'the polyfill provides document.modelContext');
  } else {
    assert(mc() && !mc().__isWebMCPPolyfill,
      'native WebMCP: document.modelContext must exist without the polyfill (Chromium: --enable-features=WebMCP)');
    assert(typeof mc().executeTool === 'function', 'native WebMCP has executeTool');
  }
}

// ---- our app, called by plain executeTool code ----

async function appToolsAreCalledByExecuteTool() {
  const seen = [];
  const app = new AbpApp({ id: 'com.example.webmcp', name: 'WebMCP app', version: '1.0.0' });
  app.register('wm.echo', (params) => params, {
    description: 'Echo',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  });
  app.register('wm.fail', () => { throw { code: 'PERMISSION_DENIED', message: 'not here' }; }, { description: 'Refuses' });
  app.register('wm.read', () => ({ title: document.title }), { description: 'Reads', title: 'Read the page',
    annotations: { readOnlyHint: true, untrustedContentHint: true } });
  app.register('wm.hidden', () => ({}), { description: 'Hidden', available: false });
  app.register('wm.bare', () => 'bare');
  app.register('wm.slow', (params, ctx) => new Promise((resolve, reject) => {
    seen.push({ started: params.tag });
    ctx.signal.addEventListener('abort', () => {
      seen.push({ aborted: params.tag, reason: String(ctx.signal.reason?.message ?? ctx.signal.reason), at: performance.now() });
      reject(ctx.signal.reason);
    });
  }), { description: 'Runs until cancelled' });
  await app.exposeWebMCP();
  eq(await names('wm.'), ['wm.bare', 'wm.echo', 'wm.fail', 'wm.read', 'wm.slow'], 'every available capability is a tool');
  eq((await toolNamed('wm.bare')).description, 'wm.bare', 'one without a description is described by its name (WebMCP refuses an empty one)');
  const echo = await toolNamed('wm.echo');
  eq([echo.description, echo.inputSchema?.properties?.text?.type], ['Echo', 'string'], 'with its description and inputSchema');
  eq((await toolNamed('wm.read')).annotations?.readOnlyHint, true, 'readOnlyHint where the descriptor says so');
  if (MODE === 'native') {
    const read = await toolNamed('wm.read');
    eq([read.title, read.annotations?.untrustedContentHint], ['Read the page', true], 'title and untrustedContentHint passed on');
  }

  const r = await execute('wm.echo', { text: 'hi' });
  eq([r.structuredContent, JSON.parse(r.content[0].text), r.isError], [{ text: 'hi' }, { text: 'hi' }, undefined], 'a result: structuredContent and text');
  const refused = await execute('wm.fail', {});
  eq([refused.isError, refused.content[0].text, refused.structuredContent.error.code],
    [true, 'PERMISSION_DENIED: not here', 'PERMISSION_DENIED'], 'an ABP error: isError with the code and message');
  const bad = await execute('wm.echo', { text: 5 });
  eq([bad.isError, bad.structuredContent.error.code], [true, 'INVALID_PARAMS'], 'the app\'s schema check');

  // The caller's abort.
  const controller = new AbortController();
  const pending = execute('wm.slow', { tag: 'a1' }, { signal: controller.signal }).then(() => 'resolved', (e) => e);
  await until(() => seen.some((e) => e.started === 'a1'), 'the handler to start');
  const t0 = performance.now();
  controller.abort();
  const settled = await pending;
  assert(settled !== 'resolved', 'the caller\'s executeTool settles (rejects) on abort');
  assert(performance.now() - t0 < 500, 'at once');
  if (MODE === 'native') {
    await until(() => seen.some((e) => e.aborted === 'a1'), "execute's signal → ctx.signal", 1000);
    const a = seen.find((e) => e.aborted === 'a1');
    console.log(`webmcp native: caller abort → handler ctx.signal ${(a.at - t0).toFixed(2)} ms`);
  }

  // Kept in step with the registry.
  app.register('wm.late', () => 'late', { description: 'Late' });
  await waitFor(async () => (await names('wm.')).includes('wm.late'), 'register → a new tool');
  eq(JSON.parse((await execute('wm.late', {})).content[0].text), 'late', 'the new tool runs');
  app.unregister('wm.late');
  await waitFor(async () => !(await names('wm.')).includes('wm.late'), 'unregister → the tool goes');
  app.update('wm.hidden', { available: true });
  await waitFor(async () => (await names('wm.')).includes('wm.hidden'), 'available again → a tool');
  app.update('wm.echo', { description: 'Echo, again' });
  await waitFor(async () => (await toolNamed('wm.echo'))?.description === 'Echo, again', 'update → re-registered');
  eq((await execute('wm.echo', { text: 'x' })).structuredContent, { text: 'x' }, 'and still runs');

  app.close();
  await waitFor(async () => (await names('wm.')).length === 0, 'close() → every tool removed');
  eq(pageErrors, [], 'no uncaught errors on the page');
}

async function waitFor(check, what, ms = 3000) {
  const t0 = performance.now();
  while (!(await check())) {
    if (performance.now() - t0 > ms) fail(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

// ---- our client, calling plain registerTool tools ----

async function clientCallsPlainWebMCPTools() {
  const seen = [];
  const registration = new AbortController();
  const reg = (tool) => mc().registerTool(tool, { signal: registration.signal });
  await reg({ name: 'plain.add', description: 'Adds', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    execute: ({ a, b }) => ({ sum: a + b }) });
  await reg({ name: 'plain.text', description: 'A string', execute: () => 'hello' });
  await reg({ name: 'plain.err', description: 'An isError result', execute: () => ({ content: [{ type: 'text', text: 'nope' }], isError: true }) });
  await reg({ name: 'plain.throw', description: 'Throws', execute: () => { throw new Error('boom'); } });
  await reg({ name: 'plain.wait', description: 'Waits', execute: (args, options) => new Promise((resolve) => {
    seen.push({ started: args.tag });
    const t = setTimeout(() => resolve({ done: true }), 5000);
    options?.signal?.addEventListener('abort', () => { clearTimeout(t); seen.push({ aborted: args.tag, at: performance.now() }); resolve({ stopped: true }); });
  }) });

  const abp = await AbpClient.connect(WebMCPTransport.document());
  eq(abp.listCapabilities().map((c) => c.name).filter((n) => n.startsWith('plain.')).sort(),
    ['plain.add', 'plain.err', 'plain.text', 'plain.throw', 'plain.wait'], 'listCapabilities() from getTools()');
  eq((await abp.call('plain.add', { a: 1, b: 2 })).data, { sum: 3 }, 'a call is executeTool');
  eq((await abp.call('plain.text', {})).data, 'hello', 'a string result');
  const err = await abp.call('plain.err', {});
  eq([err.success, err.error.code, err.error.message], [false, 'OPERATION_FAILED', 'nope'], 'an isError result → { success: false, error }');
  const thrown = await abp.call('plain.throw', {});
  eq([thrown.success, thrown.error.code], [false, 'OPERATION_FAILED'], 'a tool that throws');
  const unknown = await abp.call('plain.none', {});
  eq(unknown.error.code, 'UNKNOWN_CAPABILITY', 'no such tool');

  // Our signal, then our timeout.
  const controller = new AbortController();
  const pending = abp.call('plain.wait', { tag: 'w1' }, { signal: controller.signal });
  await until(() => seen.some((e) => e.started === 'w1'), 'the tool to start');
  const t0 = performance.now();
  controller.abort('user stop');
  const r = await pending;
  eq([r.success, r.cancelled, r.error.code], [false, true, 'CANCELLED'], 'abort → CANCELLED');
  assert(performance.now() - t0 < 500, 'settled at once');
  const timed = await abp.call('plain.wait', { tag: 'w2' }, { timeout: 100 });
  eq([timed.cancelled, timed.error.code], [true, 'TIMEOUT'], 'timeout → TIMEOUT');
  if (MODE === 'native') {
    await until(() => seen.some((e) => e.aborted === 'w1'), 'our signal → the tool\'s signal', 1000);
    await until(() => seen.some((e) => e.aborted === 'w2'), 'our timeout → the tool\'s signal', 1000);
  }

  // toolchange → onCapabilitiesChanged.
  const changes = [];
  const watcher = await AbpClient.connect(WebMCPTransport.document(), { onCapabilitiesChanged: (c) => changes.push(c) });
  const extra = new AbortController();
  await mc().registerTool({ name: 'plain.extra', description: 'Extra', execute: () => 1 }, { signal: extra.signal });
  await until(() => changes.some((c) => c.added.includes('plain.extra')), 'toolchange → onCapabilitiesChanged (added)');
  assert(watcher.listCapabilities().some((c) => c.name === 'plain.extra'), 'and the list follows');
  extra.abort();
  await until(() => changes.some((c) => c.removed.includes('plain.extra')), 'an ended registration → removed');

  await abp.shutdown();
  await watcher.shutdown();
  registration.abort();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

// ---- both: our client calling our app through the page's WebMCP ----

async function ourClientCallsOurAppThroughWebMCP() {
  const app = new AbpApp({ id: 'com.example.both', name: 'Both', version: '1.0.0' });
  app.register('both.fail', () => { throw { code: 'RATE_LIMITED', message: 'slow down', retryAfter: 5 }; }, { description: 'Limited' });
  app.register('both.ok', (p) => ({ got: p }), { description: 'OK' });
  await app.exposeWebMCP();
  const abp = await AbpClient.connect(WebMCPTransport.document());
  eq((await abp.call('both.ok', { n: 1 })).data, { got: { n: 1 } }, 'a call across');
  const r = await abp.call('both.fail', {});
  eq([r.success, r.error.code, r.error.message, r.error.retryAfter], [false, 'RATE_LIMITED', 'slow down', 5], 'the ABP error survives the trip');
  await abp.shutdown();
  app.close();
}

// ---- no WebMCP ----

async function withoutModelContextATypeError() {
  // Hide the page's WebMCP for this case (an own property shadows the getter; deleting it restores it).
  Object.defineProperty(document, 'modelContext', { value: undefined, configurable: true });
  try {
    let thrown = null;
    try { WebMCPTransport.document(); } catch (e) { thrown = e; }
    assert(thrown instanceof TypeError && /document\.modelContext/.test(thrown.message), `WebMCPTransport.document(): ${thrown}`);
    const app = new AbpApp({ id: 'x', name: 'x', version: '1' });
    const rejected = await app.exposeWebMCP().then(() => null, (e) => e);
    assert(rejected instanceof TypeError && /document\.modelContext/.test(rejected.message), `exposeWebMCP(): ${rejected}`);
    app.close();
  } finally {
    delete document.modelContext;
  }
  assert(mc(), 'WebMCP is back');
}

// ---- exposedTo: an app in a cross-origin frame ----

async function exposedToIsCheckedAndPassedOn() {
  const app = new AbpApp({ id: 'x', name: 'x', version: '1' });
  const bad = await app.exposeWebMCP({ exposedTo: 'https://a.example' }).then(() => null, (e) => e);
  assert(bad instanceof TypeError && /exposedTo/.test(bad.message), `exposedTo must be an array of origins: ${bad}`);
  app.close();
  if (MODE !== 'native') return;
  // Native Chromium: our app in a cross-origin frame (allow="tools") registers its tools with exposedTo naming this
  // page. What Chromium 156 then shows this page is recorded here (and in the README).
  const reports = [];
  const onMessage = (e) => { if (e.origin === OTHER && e.data && 'webmcpExposed' in e.data) reports.push(e.data.webmcpExposed); };
  addEventListener('message', onMessage);
  const iframe = document.createElement('iframe');
  iframe.allow = 'tools';
  iframe.src = `${OTHER}/tests/fixtures/app.html?allowed=${encodeURIComponent(ORIGIN)}&webmcp=${encodeURIComponent(ORIGIN)}`;
  document.body.appendChild(iframe);
  try {
    await until(() => reports.length > 0, 'the framed app to expose its tools', 30000);
    eq(reports[0], true, `the framed app registered its tools with exposedTo: ['${ORIGIN}']`);
    await sleep(300);
    const framed = (await mc().getTools()).filter((t) => t.origin === OTHER).map((t) => t.name);
    eq(framed, [], "Chromium 156 does not list a cross-origin frame's tools in the embedding page's getTools(), even with exposedTo naming that page");
  } finally {
    removeEventListener('message', onMessage);
    iframe.remove();
  }
}

const CASES = { exposedToIsCheckedAndPassedOn, appToolsAreCalledByExecuteTool, clientCallsPlainWebMCPTools, ourClientCallsOurAppThroughWebMCP, withoutModelContextATypeError };

let ready = null;
export async function runCase(name, mode) {
  ready ??= Promise.resolve().then(() => setUp(mode));
  await ready;
  await runNamed(CASES, name, 20000, () => {});
}
