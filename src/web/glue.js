// Small helpers that are simpler (and cheaper) in JavaScript than through wasm-bindgen calls.

export function makeCtx(dispatch, signal, callId, progressToken) {
  return {
    signal,
    callId,
    progressToken,
    progress(info) { dispatch(0, callId, info); },
    elicit(request) { return dispatch(1, callId, request); },
    notify(event, data) { dispatch(2, event, data); },
    transfer(list) { dispatch(3, callId, list); },
  };
}

export function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

export function toStr(v) {
  try { return String(v); } catch (_) { return 'unknown reason'; }
}

export function errorWithCode(code, message) {
  const e = new Error(message);
  e.name = 'AbpError';
  e.code = code;
  return e;
}

export function makeGlobal(dispatch, protocolVersion, app) {
  const api = {
    protocolVersion,
    app,
    get initialized() { return dispatch(0) === true; },
    get sessionId() { return dispatch(1); },
    initialize(params) { return dispatch(2, params); },
    shutdown(reason) { return dispatch(3, reason); },
    call(capability, params, options) { return dispatch(4, capability, params, options); },
    cancel(callId, reason) {
      if (callId !== null && typeof callId === 'object') return dispatch(5, callId.callId, callId.reason);
      return dispatch(5, callId, reason);
    },
    listCapabilities() { return dispatch(6); },
    describeCapability(name) { return dispatch(7, name); },
    supports(name) { return dispatch(8, name); },
    notify(event, data) { return dispatch(9, event, data); },
    notifyProgress(info) { return dispatch(10, info); },
    elicit(request) { return dispatch(11, request); },
  };
  return api;
}
