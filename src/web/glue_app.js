// The JavaScript side of the boundary for the app role (SPEC section 4): a handler's `ctx`, running the
// handler, aborting its signal, and `window.abp`. Only builds with the `app` feature load this module.

/** The `ctx` a handler gets: `controller`'s signal, and functions that report to the app through `hooks`
 *  (`ctxHooks`). */
export function makeCtx(hooks, callId, progressToken, controller) {
  return {
    signal: controller.signal,
    callId,
    progressToken,
    progress(info) { hooks.progress(callId, info); },
    elicit(request) { return hooks.elicit(callId, request); },
    notify(event, data) { hooks.notify(event, data); },
    transfer(list) { hooks.transfer(callId, list); },
  };
}

/** What a running handler reports to its app (one object per connection, its functions owned by wasm):
 *  `ctx.progress`, `ctx.elicit`, `ctx.notify`, `ctx.transfer`, and the handler's result. */
export function ctxHooks(progress, elicit, notify, transfer, resolved, rejected) {
  return { progress, elicit, notify, transfer, resolved, rejected };
}

/** Runs `f(params, ctx)` and reports how it ended to `hooks` (`ctxHooks`): `resolved(callId, value)` or
 *  `rejected(callId, error)`, at once when it returns or throws, when it settles if it returns a promise or
 *  thenable. Running it here saves wasm-bindgen's catch wrapper (an arguments object and apply) and a
 *  JsFuture's two closures per call. */
export function runHandler(f, params, ctx, hooks, callId) {
  let v;
  try {
    v = f(params, ctx);
  } catch (e) {
    report(hooks.rejected, callId, e);
    return;
  }
  if (!isThenable(v)) report(hooks.resolved, callId, v);
  else Promise.resolve(v).then((x) => report(hooks.resolved, callId, x), (e) => report(hooks.rejected, callId, e));
}

/** `hook(callId, value)`, where a throw means the app was closed meanwhile (its hooks dropped): nothing to
 *  answer then. */
function report(hook, callId, value) {
  try { hook(callId, value); } catch (_) { /* closed */ }
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

/** `controller.signal.aborted`. */
export function isAborted(controller) {
  return controller.signal.aborted;
}

/** Aborts `controller` with an `AbortError` DOMException carrying `message`. */
export function abortWith(controller, message) {
  let reason;
  try {
    reason = new DOMException(message, 'AbortError');
  } catch (_) {
    reason = message;
  }
  controller.abort(reason);
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
export function makeGlobal(dispatch, protocolVersion, app) {
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
  return api;
}

/** Tells the page's automation agent: the exposed `window.__abp_<kind>` function, then every callback
 *  registered with `abp.on<Kind>`. */
export function emitGlobal(api, kind, value) {
  const hook = globalThis[HOOKS[kind]];
  if (typeof hook === 'function') quietly(hook, value);
  for (const callback of api[LISTENERS][kind]) quietly(callback, value);
}

/** Asks the page's automation agent an elicitation: `window.__abp_elicitation` if exposed, else the first
 *  `abp.onElicitation` callback. `undefined` when nobody answers, else `{ ok, value }` (value: what it
 *  returned, or threw). */
export function askGlobal(api, request) {
  let answer = globalThis[HOOKS.elicitation];
  if (typeof answer !== 'function') answer = api[LISTENERS].elicitation.values().next().value;
  if (typeof answer !== 'function') return undefined;
  try {
    return { ok: true, value: answer(request) };
  } catch (e) {
    return { ok: false, value: e };
  }
}
