// The JavaScript side of the boundary between wasm and the page (docs/DESIGN.md): small named functions that
// are simpler or cheaper in JavaScript than through wasm-bindgen calls. They read, build and post values; every
// protocol decision and all state stay in wasm.

/** The `ctx` a handler gets: `cancel`'s signal (made when first read), and functions that report to the app
 *  through `hooks` (`ctxHooks`). `signal` is an own enumerable accessor, as in an object literal, but defined
 *  with one shared getter and setter: a literal with `get`/`set` made two functions and took V8's slow path for
 *  every call, several times slower to make in Chromium. */
function makeCtx(hooks, callId, progressToken, cancel) {
  const ctx = {
    callId,
    progressToken,
    progress(info) { hooks.progress(callId, info); },
    elicit(request) { return hooks.elicit(callId, request); },
    notify(event, data) { hooks.notify(event, data); },
    transfer(list) { hooks.transfer(callId, list); },
  };
  ctx[CANCEL] = cancel;
  return Object.defineProperty(ctx, 'signal', SIGNAL);
}

/** Where a ctx keeps its `HandlerCancel` (an own symbol-keyed property, which `{ ...ctx }` copies along; the
 *  shared getter reads it through `this`, so it needs the ctx, or a copy of it, as receiver). */
const CANCEL = Symbol('abp handler cancel');

const SIGNAL = {
  get() { return this[CANCEL].signal; },
  // Still a plain writable property for a handler that replaces it (`ctx.signal = AbortSignal.any(…)`).
  set(v) { Object.defineProperty(this, 'signal', { value: v, writable: true, enumerable: true, configurable: true }); },
  enumerable: true,
  configurable: true,
};

/** What a running handler reports to its app (one object per connection, its functions owned by wasm):
 *  `ctx.progress`, `ctx.elicit`, `ctx.notify`, `ctx.transfer`, and the handler's result. */
export function ctxHooks(progress, elicit, notify, transfer, resolved, rejected) {
  return { progress, elicit, notify, transfer, resolved, rejected };
}

// Call ids: UUID v4 from `crypto.getRandomValues`, fetched a block at a time (`refill`). `crypto.randomUUID()`
// cost more per call in Chromium, and a UUID made in wasm had to be decoded from UTF-8.
const HEX = Array.from({ length: 256 }, (_, i) => (i + 0x100).toString(16).slice(1));
let pool = new Uint8Array(0);
let used = 0;

function refill() {
  pool = new Uint8Array(4096);
  used = 0;
  const c = globalThis.crypto;
  if (c && typeof c.getRandomValues === 'function') c.getRandomValues(pool);
  else for (let i = 0; i < pool.length; i++) pool[i] = (Math.random() * 256) | 0;
}

/** A random UUID v4. */
export function randomUUID() {
  if (used + 16 > pool.length) refill();
  const b = pool;
  const i = used;
  used += 16;
  const h = (k) => HEX[b[i + k]];
  return h(0) + h(1) + h(2) + h(3) + '-' + h(4) + h(5) + '-' + HEX[(b[i + 6] & 0x0f) | 0x40] + h(7) + '-'
    + HEX[(b[i + 8] & 0x3f) | 0x80] + h(9) + '-' + h(10) + h(11) + h(12) + h(13) + h(14) + h(15);
}

// A promise and its resolve and reject functions, made in JS: cheaper than a wasm closure run by the Promise
// constructor (one per call() is a visible cost), and one binding fewer for the build.

/** A pending promise (`promise`) and the functions that settle it (`resolve`, `reject`). */
export class Deferred {
  constructor() {
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/** How a running handler is told it was cancelled: `ctx.signal`, whose `AbortController` is only made when
 *  the handler first reads it. Most handlers never do, and an AbortController and its signal were a visible
 *  cost per call (bench/ab.mjs figures in BENCHMARKS.md). Read after `abort`, the signal is already aborted,
 *  with the same reason. Wasm holds one per running call and calls `abortWith` on it. */
export class HandlerCancel {
  constructor() {
    this.controller = undefined;
    this.aborted = false;
    this.reason = undefined;
  }

  get signal() {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason) {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    if (this.controller !== undefined) this.controller.abort(reason);
  }
}

/** Runs `f(params, ctx)` with a `ctx` on `cancel` (`makeCtx`, a `HandlerCancel`) and reports how it ended to `hooks`
 *  (`ctxHooks`): `resolved(run, value, flags)` or `rejected(run, error, flags)`, at once when it returns or
 *  throws, when it settles if it returns a promise or thenable (flags: `ABORTED`, `RESPONSE` below). `run` is
 *  wasm's number for this run of the handler (a number crosses into wasm for free, the call id would be copied).
 *  Running it here saves wasm-bindgen's catch wrapper (an arguments object and apply) and a JsFuture's two
 *  closures per call. */
export function runHandler(f, params, hooks, callId, progressToken, cancel, run) {
  const ctx = makeCtx(hooks, callId, progressToken, cancel);
  let v;
  let thenable;
  try {
    v = f(params, ctx);
    // Inside the try: a returned object whose `then` getter throws is a rejection, as `await` makes it.
    thenable = isThenable(v);
  } catch (e) {
    rejected(hooks, run, cancel, e);
    return;
  }
  if (!thenable) resolved(hooks, run, cancel, v);
  else Promise.resolve(v).then((x) => resolved(hooks, run, cancel, x), (e) => rejected(hooks, run, cancel, e));
}

function resolved(hooks, run, cancel, x) {
  report(hooks.resolved, run, x, (cancel.aborted ? ABORTED : 0) | (maybeResponse(x) ? RESPONSE : 0));
}

function rejected(hooks, run, cancel, e) {
  report(hooks.rejected, run, e, cancel.aborted ? ABORTED : 0);
}

/** Flags `runHandler` reports with a result: the handler's signal had aborted by then; the value is an object
 *  with a boolean `success` (it may be a whole ABPResponse, which wasm then reads). */
const ABORTED = 1;
const RESPONSE = 2;

function maybeResponse(v) {
  try {
    return isRecord(v) && typeof v.success === 'boolean';
  } catch (_) {
    return false; // a throwing getter: wasm reads it as absent too
  }
}

/** `hook(run, value, flags)`, where a throw means the app was closed meanwhile (its hooks dropped): nothing
 *  to answer then. */
function report(hook, run, value, flags) {
  try { hook(run, value, flags); } catch (_) { /* closed */ }
}

const clock = globalThis.performance;

/** `performance.now()` on the `performance` object read once: the global `performance` is a getter of the
 *  window, and reading it on each of a call's clock reads was a visible cost (bench/app-cost.mjs). */
export function now() {
  return clock.now();
}

/** Whether string `s` matches a schema `pattern` (as a Unicode RegExp, else a plain one); undefined when
 *  `s` is not a string or the pattern is not a regular expression here. */
export function matchesPattern(s, pattern) {
  if (typeof s !== 'string') return undefined;
  for (const flags of ['u', '']) {
    try { return new RegExp(pattern, flags).test(s); } catch (_) { /* try without the u flag */ }
  }
  return undefined;
}

/** Calls `then(true, value)` or `then(false, error)` once `value` settles (`Promise.resolve(value)`). */
export function whenSettled(value, then) {
  Promise.resolve(value).then((v) => then(true, v), (e) => then(false, e));
}

/** Whether `v` is a promise or another thenable (an object or function with a `then` method). */
export function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

/** `String(v)`, or 'unknown reason' when even that throws (an abort reason with a throwing toString). */
export function toStr(v) {
  try { return String(v); } catch (_) { return 'unknown reason'; }
}

/** An `Error` named 'AbpError' with an ABP error `code`, for promises that reject (connect, transports). */
export function errorWithCode(code, message) {
  const e = new Error(message);
  e.name = 'AbpError';
  e.code = code;
  return e;
}

// ---- window.abp ----

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

// ---- The MCP-B envelope (@mcp-b/transports): { channel, type: 'mcp', direction, payload } ----

/** `payload` in the MCP-B envelope of `channel`, going `direction`. */
export function mcpbWrap(channel, direction, payload) {
  return { channel, type: 'mcp', direction, payload };
}

/** The payload of `data` if it is an MCP-B envelope of `channel` going `direction`, else undefined. */
export function mcpbPayload(data, channel, direction) {
  if (data === null || typeof data !== 'object') return undefined;
  try {
    if (data.channel !== channel || data.type !== 'mcp' || data.direction !== direction) return undefined;
    return data.payload;
  } catch (_) {
    return undefined;
  }
}

// ---- WebSocket frames: JSON text, with binary values as ABP BinaryData (base64) ----

function toBase64(bytes) {
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

function fromBase64(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text);
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function binaryData(bytes) {
  return { content: toBase64(bytes), encoding: 'base64', mimeType: 'application/octet-stream', size: bytes.length };
}

/** The bytes of an ArrayBuffer or a view (only the view's own bytes), else undefined. */
function bytesOf(value) {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return undefined;
}

function isRecord(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** JSON.stringify replacer: raw bytes become BinaryData; a BinaryData whose `content` is bytes keeps its
 *  other fields (mimeType, filename, …) with the content as base64. */
function encodeBinary(_key, value) {
  const bytes = bytesOf(value);
  if (bytes) return binaryData(bytes);
  if (typeof Blob !== 'undefined' && value instanceof Blob) {
    throw errorWithCode('INVALID_PARAMS', 'A Blob cannot travel over WebSocket; send await blob.arrayBuffer() instead');
  }
  if (isRecord(value) && typeof value.mimeType === 'string') {
    const content = bytesOf(value.content);
    if (content) return Object.assign({}, value, { content: toBase64(content), encoding: 'base64', size: content.length });
  }
  return value;
}

/** Exactly what `binaryData` makes: nothing the sender said beyond "these bytes". */
function isRawBytes(v) {
  return v.mimeType === 'application/octet-stream' && typeof v.size === 'number' && Object.keys(v).length === 4;
}

/** JSON.parse reviver: BinaryData (base64 content, a mimeType, a size matching the bytes if given) is decoded.
 *  The exact shape `binaryData` makes becomes an ArrayBuffer; any other BinaryData stays an object with its
 *  `content` as an ArrayBuffer (and no `encoding`). Anything that does not decode (a look-alike) is left as it is. */
function decodeBinary(_key, v) {
  if (isRecord(v) && v.encoding === 'base64' && typeof v.content === 'string' && typeof v.mimeType === 'string'
      && (v.size === undefined || typeof v.size === 'number')) {
    let bytes;
    try {
      bytes = fromBase64(v.content);
    } catch (_) {
      return v; // not base64 after all
    }
    if (v.size !== undefined && bytes.length !== v.size) return v;
    if (isRawBytes(v)) return bytes.buffer;
    const out = Object.assign({}, v, { content: bytes.buffer });
    delete out.encoding; // it described the base64 text, which is gone
    return out;
  }
  return v;
}

let utf8;
function utf8Length(text) {
  utf8 = utf8 || new TextEncoder();
  return utf8.encode(text).length;
}

/** Over `max` UTF-8 bytes? Exact only when it could matter (one UTF-16 unit is 1 to 3 bytes). */
function tooLarge(text, max) {
  return text.length > max || (text.length * 3 > max && utf8Length(text) > max);
}

/** A message as one text frame. Throws (an Error with `code`) if it cannot be written or is over `max` bytes. */
export function wsEncode(msg, max) {
  let text;
  try {
    text = JSON.stringify(msg, encodeBinary);
  } catch (e) {
    if (e && e.code) throw e;
    throw errorWithCode('INVALID_PARAMS', 'The message cannot be written as JSON: ' + toStr(e));
  }
  if (tooLarge(text, max)) {
    throw errorWithCode('TRANSPORT_ERROR', 'The message is ' + utf8Length(text) + ' bytes, over maxMessageBytes ('
      + max + '); send less per call or raise maxMessageBytes on both sides');
  }
  return text;
}

/** A received frame as a message, or undefined for anything that is not JSON text within `max` bytes. */
export function wsDecode(data, max) {
  if (typeof data !== 'string' || tooLarge(data, max)) return undefined;
  try {
    return data.indexOf('"base64"') >= 0 ? JSON.parse(data, decodeBinary) : JSON.parse(data);
  } catch (_) {
    return undefined;
  }
}

// ---- The two messages of every call, read in one pass (readers of one fixed shape: one step into wasm for a
// whole message, not one per field) ----

const stringOr = (v) => (typeof v === 'string' ? v : undefined);

/** A `message` listener for a private ABP channel (the port an agent offers with `initialize`). It reads a
 *  well-formed `capabilities/call` or `capabilities/call-result` and hands its fields to wasm in one call:
 *  - a call (string `id`, `callId` and `capability`, an object `payload`): `onCall(id, callId, id, callId,
 *    capability, params, timeout, progressToken)`, the last two from its `options` (NaN and undefined when
 *    absent); the ids twice, copied into wasm as text and kept as the JS strings the answer sends back;
 *  - a result (an object `payload`): `onResult(id, callId, payload, cancelled)`, the ids as strings or
 *    undefined, `cancelled` true only for `cancelled: true`.
 *  Everything else goes to `onOther(data, event)` whole, to be read in wasm. Messages on a port are structured
 *  clones: plain data, no getters. */
export function abpPortListener(onCall, onResult, onOther) {
  return (e) => {
    const m = e.data;
    const p = isRecord(m) ? m.payload : undefined;
    if (isRecord(p)) {
      if (m.type === 'capabilities/call-result') {
        onResult(stringOr(m.id), stringOr(p.callId), p, p.cancelled === true);
        return;
      }
      if (m.type === 'capabilities/call' && typeof m.id === 'string' && typeof p.callId === 'string'
        && typeof p.capability === 'string') {
        const o = isRecord(p.options) ? p.options : undefined;
        const t = o && o.timeout;
        onCall(m.id, p.callId, m.id, p.callId, p.capability, p.params, typeof t === 'number' && isFinite(t) ? t : NaN,
          o && stringOr(o.progressToken));
        return;
      }
    }
    onOther(m, e);
  };
}

// ---- The two messages of every call, built in one step each (object literals of one shape; the same
// fields in the same order as the generic build in src/core/dialect/abp.rs; src/core/tests/fastpath.rs runs these
// and abpPortListener in Node against the codec) ----

/** `{ type: 'capabilities/call', id, timestamp, payload: { callId, capability, params[, options] } }`, with
 *  `options: { timeout?, progressToken? }` only when either is given (not undefined). Both builders stamp the
 *  message with `Date.now()` themselves: a step back into JS for the clock cost more than reading it here. */
export function callMessage(id, callId, capability, params, timeout, progressToken) {
  const timestamp = Date.now();
  if (timeout === undefined && progressToken === undefined) {
    return { type: 'capabilities/call', id, timestamp, payload: { callId, capability, params } };
  }
  const options = progressToken === undefined ? { timeout }
    : timeout === undefined ? { progressToken } : { timeout, progressToken };
  return { type: 'capabilities/call', id, timestamp, payload: { callId, capability, params, options } };
}

/** `{ type: 'capabilities/call-result', id, timestamp, payload: { success: true, data, metadata: { duration },
 *  callId } }`. */
export function successMessage(id, callId, data, duration) {
  return { type: 'capabilities/call-result', id, timestamp: Date.now(),
    payload: { success: true, data, metadata: { duration }, callId } };
}

// <generated:call-options> written by tests/options_drift from src/web/options.rs;
// edit the options there, then: ABP_REGENERATE=1 cargo test --test options_drift
/** `client.call`'s options (`CallOptions`), read in one pass: one step into JS for the whole object, where
 *  reading it field by field took a step per field and per type test. Returns the signal if it is an
 *  AbortSignal. A throwing getter reads as absent. Into `out`, a view of wasm memory (`call` in
 *  src/web/options.rs):
 *    out[0]: `timeout`
 *    out[1]: `maxTotalTimeout`
 *    out[2]: `cancelGrace`
 *    out[3]: a bit for each option that is there with its type */
export function readCallOptions(o, out) {
  let bits = 0;
  let signal;
  if (o !== null && typeof o === 'object') {
    const s = field(o, 'signal');
    if (typeof AbortSignal === 'function' && s instanceof AbortSignal) {
      signal = s;
      bits |= s.aborted ? 3 : 1;
    }
    if (typeof field(o, 'callId') === 'string') bits |= 4;
    if (typeof field(o, 'onProgress') === 'function') bits |= 8;
    if (typeof field(o, 'progressToken') === 'string') bits |= 16;
    const timeout = field(o, 'timeout');
    if (typeof timeout === 'number') { out[0] = timeout; bits |= 32; }
    if (field(o, 'resetTimeoutOnProgress') === true) bits |= 64;
    const maxTotalTimeout = field(o, 'maxTotalTimeout');
    if (typeof maxTotalTimeout === 'number') { out[1] = maxTotalTimeout; bits |= 128; }
    if (Array.isArray(field(o, 'transfer'))) bits |= 256;
    const cancelGrace = field(o, 'cancelGrace');
    if (typeof cancelGrace === 'number') { out[2] = cancelGrace; bits |= 512; }
  }
  out[3] = bits;
  return signal;
}
// </generated:call-options>

// ---- Reading values in one call each (every crossing between wasm and JS costs) ----

/** The core's `Kind`: 0 undefined, 1 null, 2 boolean, 3 number, 4 string, 5 array, 6 object, 7 other. */
export function kindOf(v) {
  if (v === undefined) return 0;
  if (v === null) return 1;
  switch (typeof v) {
    case 'boolean': return 2;
    case 'number': return 3;
    case 'string': return 4;
    case 'object': return Array.isArray(v) ? 5 : 6;
    default: return 7;
  }
}

/** `o[key]` for an object `o`, else undefined; a throwing getter reads as undefined. */
export function field(o, key) {
  if (o === null || typeof o !== 'object') return undefined;
  try { return o[key]; } catch (_) { return undefined; }
}

/** `o[key]` if it is a string, else undefined. */
export function fieldString(o, key) {
  const v = field(o, key);
  return typeof v === 'string' ? v : undefined;
}

/** `o[key]` if it is a number, else undefined. */
export function fieldNumber(o, key) {
  const v = field(o, key);
  return typeof v === 'number' ? v : undefined;
}

/** `o[key]` if it is a plain object (not null, not an array), else undefined. */
export function fieldObject(o, key) {
  const v = field(o, key);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
}

/** Sets up to four properties of `o` (a plain object the codec made, or a new one when `o` is undefined)
 *  and returns it; an undefined key ends the list. */
export function setFields(o, k1, v1, k2, v2, k3, v3, k4, v4) {
  if (o === undefined) o = {};
  o[k1] = v1;
  if (k2 === undefined) return o;
  o[k2] = v2;
  if (k3 === undefined) return o;
  o[k3] = v3;
  if (k4 !== undefined) o[k4] = v4;
  return o;
}

/** `port.postMessage(msg[, transfer])`; returns the text of what it threw (`String(e)`: "DataCloneError: …"),
 *  else undefined. A plain try/catch here is cheaper than wasm-bindgen's catch wrapper on the hottest call there
 *  is, and text or undefined is read without a step back into JS (a returned value would be asked
 *  `=== undefined` through one). */
export function portPost(port, msg, transfer) {
  try {
    if (transfer === undefined) port.postMessage(msg);
    else port.postMessage(msg, transfer);
    return undefined;
  } catch (e) {
    return toStr(e);
  }
}

/** `f(arg)`; returns what it threw (null for a thrown undefined), else undefined. For promise resolvers and
 *  user callbacks, without wasm-bindgen's catch wrapper. */
export function tryCall(f, arg) {
  try {
    f(arg);
    return undefined;
  } catch (e) {
    return e === undefined ? null : e;
  }
}

/** Aborts `cancel` (a `HandlerCancel`) with an `AbortError` DOMException carrying `message`. */
export function abortWith(cancel, message) {
  let reason;
  try {
    reason = new DOMException(message, 'AbortError');
  } catch (_) {
    reason = message;
  }
  cancel.abort(reason);
}

const ONCE = { once: true };

/** Calls `onAbort(callId, String(reason))` once when `signal` aborts; returns the function that stops
 *  watching. One closure per client serves every call (a wasm closure per call cost more than the call
 *  itself). */
export function watchAbort(signal, onAbort, callId) {
  const f = () => onAbort(callId, toStr(signal.reason));
  signal.addEventListener('abort', f, ONCE);
  return () => signal.removeEventListener('abort', f);
}

// ---- WebMCP (`document.modelContext`, native in Chromium behind --enable-features=WebMCP, or
// @mcp-b/webmcp-polyfill). Both directions run through this SDK's own cores: the app's capabilities are served
// by a private in-page session of the app (the `window.abp` machinery, not installed on `window`), and the
// client talks ABP over a MessageChannel to a small adapter that turns its calls into `executeTool`. ----

/** The page's WebMCP, or a TypeError saying how to get it. */
function modelContext(who, needsExecute) {
  const mc = globalThis.document?.modelContext;
  if (!mc || typeof mc.registerTool !== 'function' || (needsExecute && typeof mc.executeTool !== 'function')) {
    throw new TypeError(`${who}: this page has no document.modelContext (WebMCP)${mc ? ' with executeTool' : ''}. `
      + 'Chromium has it behind --enable-features=WebMCP; elsewhere load @mcp-b/webmcp-polyfill and call '
      + 'initializeWebMCPPolyfill() first');
  }
  return mc;
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

/** A WebMCP tool's answer (`executeTool`'s text: JSON of the value, a string as itself) as an `ABPResponse`'s
 *  fields: a CallToolResult with `isError` fails (its ABP error kept when it carries one), one with
 *  `structuredContent` gives that, any other value is the data. */
function responseOfTool(text) {
  let value;
  if (text === 'undefined' || text === undefined) value = undefined;
  else {
    try { value = JSON.parse(text); } catch { value = text; }
  }
  const isResult = value !== null && typeof value === 'object' && Array.isArray(value.content);
  if (isResult && value.isError === true) {
    const carried = value.structuredContent?.error;
    if (carried && typeof carried.code === 'string') return { success: false, error: carried };
    const message = value.content.find((c) => c?.type === 'text')?.text ?? 'The tool reported an error';
    return { success: false, error: { code: 'OPERATION_FAILED', message, retryable: false, details: { toolResult: value } } };
  }
  if (isResult && value.structuredContent !== undefined) return { success: true, data: value.structuredContent };
  return { success: true, data: value };
}

/** The text of an abort reason (native WebMCP aborts without one). */
function reasonText(signal) {
  const r = signal?.reason;
  if (r === undefined) return 'The WebMCP caller cancelled';
  if (typeof r === 'string') return r;
  return r?.message || String(r);
}

/** `app.exposeWebMCP()`: registers each available capability of the app's private session `api` as a WebMCP
 *  tool and keeps them in step with the registry. Throws a TypeError at once without WebMCP. Returns `{ ready,
 *  close }`: `ready` resolves once the tools are registered; `close()` removes them all. */
export function webmcpExpose(api) {
  const mc = modelContext('app.exposeWebMCP()', false);
  const tools = new Map(); // name → { controller, key }
  let closed = false;
  let next = 0;
  const prefix = `webmcp-${Math.random().toString(36).slice(2, 10)}-`;
  const run = async (name, input, client) => {
    if (closed) return toolResultOf({ success: false, error: { code: 'CAPABILITY_UNAVAILABLE', message: 'The app was closed', retryable: false } });
    const callId = prefix + ++next;
    const signal = client?.signal;
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
      execute: (input, client) => run(d.name, input, client),
    };
    const readOnly = d.annotations?.readOnlyHint ?? d.readOnlyHint;
    if (typeof readOnly === 'boolean') tool.annotations = { readOnlyHint: readOnly };
    return tool;
  };
  const keyOf = (t) => JSON.stringify([t.description, t.inputSchema, t.annotations ?? null]);
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
        await mc.registerTool(tool, { signal: controller.signal });
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

/** `WebMCPTransport.document()`: the client's end of a MessageChannel whose other end answers ABP as an app
 *  would, from the page's WebMCP tools: `initialize` and the capability list from `getTools()`, a call is
 *  `executeTool` with a signal that `capabilities/cancel` aborts, `toolchange` is
 *  `notifications/capabilities/list_changed`. Throws a TypeError at once without WebMCP. */
export function webmcpPort() {
  const mc = modelContext('WebMCPTransport.document()', true);
  // The polyfill wants the input as JSON text, native WebMCP as an object.
  const asText = mc.__isWebMCPPolyfill === true;
  const { port1, port2 } = new MessageChannel();
  let tools = new Map();
  let open = false;
  const running = new Map(); // callId → AbortController
  const send = (type, id, payload) => { port2.postMessage({ type, id, payload, timestamp: Date.now() }); };
  const descriptor = (t) => ({
    name: t.name,
    description: t.description ?? '',
    inputSchema: t.inputSchema ?? { type: 'object' },
    available: true,
    requirements: [],
    features: {},
    ...(t.annotations ? { annotations: t.annotations } : {}),
  });
  const same = (a, b) => JSON.stringify(descriptor(a)) === JSON.stringify(descriptor(b));
  const refresh = async () => {
    const list = await mc.getTools();
    const now = new Map(list.map((t) => [t.name, t]));
    const changes = {
      added: [...now.keys()].filter((n) => !tools.has(n)),
      removed: [...tools.keys()].filter((n) => !now.has(n)),
      changed: [...now.keys()].filter((n) => tools.has(n) && !same(tools.get(n), now.get(n))),
    };
    tools = now;
    return changes;
  };
  const onToolChange = async () => {
    if (!open) return;
    let c;
    try { c = await refresh(); } catch { return; }
    if (c.added.length || c.removed.length || c.changed.length) {
      send('notification', undefined, {
        event: 'notifications/capabilities/list_changed',
        data: { ...c, capabilities: [...tools.values()].map(descriptor) },
      });
    }
  };
  mc.addEventListener('toolchange', onToolChange);
  const call = async (id, p) => {
    const { callId, capability, params } = p ?? {};
    // Registered before anything is awaited, so a cancel that comes meanwhile finds it.
    const controller = new AbortController();
    running.set(callId, controller);
    const t0 = performance.now();
    let answer;
    try {
      if (!tools.has(capability)) await refresh();
      const tool = tools.get(capability);
      if (controller.signal.aborted) throw controller.signal.reason;
      if (!tool) {
        running.delete(callId);
        const error = { code: 'UNKNOWN_CAPABILITY', message: `No WebMCP tool is named '${capability}'`, retryable: false };
        send('capabilities/call-result', id, { callId, success: false, error });
        return;
      }
      const input = params === undefined ? {} : params;
      answer = responseOfTool(await mc.executeTool(tool, asText ? JSON.stringify(input) : input, { signal: controller.signal }));
    } catch (e) {
      answer = controller.signal.aborted
        ? { success: false, cancelled: true, error: { code: 'CANCELLED', message: reasonText(controller.signal), retryable: false } }
        : { success: false, error: { code: 'OPERATION_FAILED', message: e?.message || String(e), retryable: false, details: { name: e?.name } } };
    } finally {
      running.delete(callId);
    }
    send('capabilities/call-result', id, { callId, ...answer, metadata: { duration: performance.now() - t0 } });
  };
  port2.onmessage = async ({ data: m }) => {
    if (m === null || typeof m !== 'object') return;
    const p = m.payload;
    switch (m.type) {
      case 'initialize': {
        try {
          await refresh();
        } catch (e) {
          const error = { code: 'OPERATION_FAILED', message: `WebMCP's getTools() failed: ${e?.message ?? e}`, retryable: true };
          send('initialize-result', m.id, { error });
          break;
        }
        open = true;
        const app = { id: location.origin, name: document.title || location.host || 'WebMCP', version: '0' };
        send('initialize-result', m.id, {
          sessionId: `webmcp-${Math.random().toString(36).slice(2, 10)}`,
          protocolVersion: '0.1',
          app,
          capabilities: [...tools.values()].map(descriptor),
          features: { notifications: true, progress: false, elicitation: false },
        });
        break;
      }
      case 'capabilities/call':
        call(m.id, p);
        break;
      case 'capabilities/cancel': {
        const controller = running.get(p?.callId);
        if (controller) controller.abort(p?.reason ?? 'cancelled');
        send('capabilities/cancel-result', m.id, controller
          ? { callId: p?.callId, cancelled: true }
          : { callId: p?.callId, cancelled: false, reason: 'Operation not found' });
        break;
      }
      case 'shutdown':
        open = false;
        for (const c of running.values()) c.abort('shutdown');
        mc.removeEventListener('toolchange', onToolChange);
        port2.close();
        break;
      default:
    }
  };
  return port1;
}
