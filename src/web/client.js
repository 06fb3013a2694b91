// The client's calls, as `client.rs` makes them: `call()`'s options read in one pass, one abort listener for
// every call's signal, and the one-step build of a call message.

import { field, toStr } from './value.js';

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

const ONCE = { once: true };

/** Calls `onAbort(callId, String(reason))` once when `signal` aborts; returns the function that stops
 *  watching. One closure per client serves every call (a wasm closure per call cost more than the call
 *  itself). */
export function watchAbort(signal, onAbort, callId) {
  const f = () => onAbort(callId, toStr(signal.reason));
  signal.addEventListener('abort', f, ONCE);
  return () => signal.removeEventListener('abort', f);
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
    const trace = field(o, 'trace');
    if (typeof trace === 'object' && trace !== null) bits |= 1024;
  }
  out[3] = bits;
  return signal;
}
// </generated:call-options>
