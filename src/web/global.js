// The app in the page itself, as `global.rs` serves it: the `window.abp` object of the ABP API reference and
// how its events reach a Puppeteer/Playwright agent, and `app.exposeWebMCP()`'s tools on the page's WebMCP
// (`document.modelContext`, native in Chromium behind --enable-features=WebMCP, or @mcp-b/webmcp-polyfill),
// served by a private in-page session of the app.

import { isThenable, modelContext, reasonText } from './value.js';

// Where each kind of event reaches a Puppeteer/Playwright agent: the function it exposed on the page.
const HOOKS = {
  progress: '__abp_progress',
  notification: '__abp_notification',
  elicitation: '__abp_elicitation',
  capabilitiesChanged: '__abp_capabilities_changed',
};

const LISTENERS = Symbol('abp listeners');

/** Calls `f(arg)`, ignoring what it throws or rejects with (an automation client that went away). */
function quietly(f, arg) {
  try {
    const r = f(arg);
    if (isThenable(r)) Promise.resolve(r).catch(() => {});
  } catch (_) { /* the listener's own failure is not the session's */ }
}

/** The `window.abp` object of the ABP API reference. Every method goes to `dispatch(methodName, …)` in
 *  wasm; the registrars (`onProgress` …) keep their callbacks here and return a function that removes them. */
export function makeGlobal(dispatch, protocolVersion, app, isPrivate) {
  const listeners = { progress: new Set(), notification: new Set(), elicitation: new Set(), capabilitiesChanged: new Set() };
  const registrar = (set, name) => (callback) => {
    if (typeof callback !== 'function') throw new TypeError(`abp.${name}(callback): callback must be a function`);
    set.add(callback);
    return () => { set.delete(callback); };
  };
  const api = {
    protocolVersion,
    app,
    get initialized() { return dispatch('initialized') === true; },
    get sessionId() { return dispatch('sessionId'); },
    initialize(params) { return dispatch('initialize', params); },
    shutdown(params) { return dispatch('shutdown', params); },
    call(capability, params, options) { return dispatch('call', capability, params, options); },
    cancel(callId, reason) { return dispatch('cancel', callId, reason); },
    listCapabilities() { return dispatch('listCapabilities'); },
    describeCapability(name) { return dispatch('describeCapability', name); },
    supports(name) { return dispatch('supports', name); },
    notify(event, data) { return dispatch('notify', event, data); },
    notifyProgress(info) { return dispatch('notifyProgress', info); },
    elicit(request) { return dispatch('elicit', request); },
    onProgress: registrar(listeners.progress, 'onProgress'),
    onNotification: registrar(listeners.notification, 'onNotification'),
    onElicitation: registrar(listeners.elicitation, 'onElicitation'),
    onCapabilitiesChanged: registrar(listeners.capabilitiesChanged, 'onCapabilitiesChanged'),
  };
  Object.defineProperty(api, LISTENERS, { value: listeners });
  if (isPrivate) Object.defineProperty(api, PRIVATE, { value: true });
  return api;
}

/** Marks an API object of a session that is not the page's `window.abp` (`app.exposeWebMCP()`'s). */
const PRIVATE = Symbol('abp private session');

/** Tells the page's automation agent: the exposed `window.__abp_<kind>` function, then every callback
 *  registered with `abp.on<Kind>`. */
export function emitGlobal(api, kind, value) {
  const hook = api[PRIVATE] ? undefined : globalThis[HOOKS[kind]];
  if (typeof hook === 'function') quietly(hook, value);
  for (const callback of api[LISTENERS][kind]) quietly(callback, value);
}

/** Asks the page's automation agent an elicitation: `window.__abp_elicitation` if exposed, else the first
 *  `abp.onElicitation` callback. `undefined` when nobody answers, else `{ ok, value }` (value: what it
 *  returned, or threw). */
export function askGlobal(api, request) {
  let answer = api[PRIVATE] ? undefined : globalThis[HOOKS.elicitation];
  if (typeof answer !== 'function') answer = api[LISTENERS].elicitation.values().next().value;
  if (typeof answer !== 'function') return undefined;
  try {
    return { ok: true, value: answer(request) };
  } catch (e) {
    return { ok: false, value: e };
  }
}

/** An `ABPResponse` as the MCP `CallToolResult` a WebMCP caller gets: the data as JSON text (and as
 *  `structuredContent` when it is an object; a value that already is a CallToolResult passes); an error as
 *  `isError` with the text `CODE: message` and the ABP error as `structuredContent.error`. */
function toolResultOf(r) {
  if (r?.success === true) {
    const data = r.data;
    const isObject = data !== null && typeof data === 'object' && !Array.isArray(data);
    if (isObject && Array.isArray(data.content)) return data;
    const result = { content: [{ type: 'text', text: JSON.stringify(data ?? null) }] };
    if (isObject) result.structuredContent = data;
    return result;
  }
  const error = r?.error ?? { code: 'INTERNAL_ERROR', message: 'The app gave no answer' };
  return { content: [{ type: 'text', text: `${error.code}: ${error.message}` }], structuredContent: { error }, isError: true };
}

/** `app.exposeWebMCP()`: registers each available capability of the app's private session `api` as a WebMCP
 *  tool and keeps them in step with the registry. Throws a TypeError at once without WebMCP. Returns `{ ready,
 *  close }`: `ready` resolves once the tools are registered; `close()` removes them all. */
export function webmcpExpose(api, exposedTo) {
  const mc = modelContext('app.exposeWebMCP()', false);
  const tools = new Map(); // name → { controller, key }
  let closed = false;
  let next = 0;
  const prefix = `webmcp-${Math.random().toString(36).slice(2, 10)}-`;
  // WebMCP runs a tool as `execute(input, { signal })` (the polyfill passes no second argument).
  const run = async (name, input, options) => {
    if (closed) return toolResultOf({ success: false, error: { code: 'CAPABILITY_UNAVAILABLE', message: 'The app was closed', retryable: false } });
    const callId = prefix + ++next;
    const signal = options?.signal;
    const stop = () => { if (!closed) api.cancel(callId, reasonText(signal)); };
    let params = input;
    if (typeof input === 'string') {
      try { params = JSON.parse(input); } catch { return toolResultOf({ success: false, error: { code: 'INVALID_PARAMS', message: 'The tool input is not JSON', retryable: false } }); }
    }
    const pending = api.call(name, params ?? {}, { callId });
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });
    try {
      return toolResultOf(await pending);
    } finally {
      signal?.removeEventListener('abort', stop);
    }
  };
  const toolOf = (d) => {
    const tool = {
      name: d.name,
      // WebMCP refuses an empty description.
      description: d.description || d.name,
      inputSchema: d.inputSchema ?? { type: 'object', properties: {} },
      execute: (input, options) => run(d.name, input, options),
    };
    if (typeof d.title === 'string') tool.title = d.title;
    const annotations = {};
    for (const hint of ['readOnlyHint', 'untrustedContentHint']) {
      const value = d.annotations?.[hint] ?? d[hint];
      if (typeof value === 'boolean') annotations[hint] = value;
    }
    if (Object.keys(annotations).length) tool.annotations = annotations;
    return tool;
  };
  const keyOf = (t) => JSON.stringify([t.title ?? null, t.description, t.inputSchema, t.annotations ?? null]);
  let syncing = Promise.resolve();
  // One failed step (a list that could not be read, a schema WebMCP refuses) must not stop the later ones.
  const sync = () => (syncing = syncing.then(async () => {
    if (closed) return;
    const wanted = new Map();
    for (const d of await api.listCapabilities()) {
      const unmet = Array.isArray(d.requirements) && d.requirements.some((r) => r && r.met === false);
      if (d.available !== false && !unmet) wanted.set(d.name, toolOf(d));
    }
    for (const [name, t] of tools) {
      if (!wanted.has(name) || keyOf(wanted.get(name)) !== t.key) {
        t.controller.abort();
        tools.delete(name);
      }
    }
    for (const [name, tool] of wanted) {
      if (tools.has(name) || closed) continue;
      const controller = new AbortController();
      tools.set(name, { controller, key: keyOf(tool) });
      try {
        await mc.registerTool(tool, exposedTo ? { signal: controller.signal, exposedTo } : { signal: controller.signal });
      } catch (e) {
        tools.delete(name);
        console.warn(`abp-wasm: WebMCP refused the tool '${name}': ${e?.message ?? e}`);
      }
    }
  }).catch((e) => { console.warn(`abp-wasm: the WebMCP tools could not follow the app's capabilities: ${e?.message ?? e}`); }));
  const off = api.onCapabilitiesChanged(() => { sync(); });
  const features = { notifications: true, progress: false, elicitation: false };
  const ready = api.initialize({ protocolVersion: '0.1', agent: { name: 'webmcp', version: '1.0.0' }, features })
    .then(() => sync());
  return {
    ready,
    close() {
      closed = true;
      off();
      for (const t of tools.values()) t.controller.abort();
      tools.clear();
    },
  };
}
