// MessagePorts, as `link/port.rs` listens on them: the two messages of every call read in one pass (readers of
// one fixed shape: one step into wasm for a whole message, not one per field), and posting.

import { isRecord, toStr } from '../value.js';

const stringOr = (v) => (typeof v === 'string' ? v : undefined);

/** A `message` listener for a private ABP channel (the port an agent offers with `initialize`). It reads a
 *  well-formed `capabilities/call` or `capabilities/call-result` and hands its fields to wasm in one call:
 *  - a call (string `id`, `callId` and `capability`, an object `payload`): `onCall(id, callId, id, callId,
 *    capability, params, timeout, progressToken)`, the last two from its `options` (NaN and undefined when
 *    absent); the ids twice, copied into wasm as text and kept as the JS strings the answer sends back;
 *  - a result (an object `payload`): `onResult(id, callId, payload, cancelled)`, the ids as strings or
 *    undefined, `cancelled` true only for `cancelled: true`.
 *  Everything else goes to `onOther(data, event)` whole, to be read in wasm: a call with a `_meta` (its trace
 *  context) too. Messages on a port are structured
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
        && typeof p.capability === 'string' && p._meta === undefined) {
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
