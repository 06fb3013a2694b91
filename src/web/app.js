// The app's handlers, as `app.rs` runs them: each call's `ctx` and its `AbortSignal` (made when first read),
// how a handler's return or throw is reported to wasm, and the one-step build of a call's successful result.

import { isRecord, isThenable } from './value.js';

/** The `ctx` a handler gets: `cancel`'s signal (made when first read), and functions that report to the app
 *  through `hooks` (`ctxHooks`). `signal` is an own enumerable accessor, as in an object literal, but defined
 *  with one shared getter and setter: a literal with `get`/`set` made two functions and took V8's slow path for
 *  every call, several times slower to make in Chromium. */
function makeCtx(hooks, callId, progressToken, trace, cancel) {
  const ctx = {
    callId,
    progressToken,
    trace,
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

/** Runs `f(params, ctx)` with a `ctx` on `cancel` (`makeCtx`, a `HandlerCancel`; `ctx.trace` from the call's
 *  `traceparent` and `tracestate`, each a string or undefined) and reports how it ended to `hooks`
 *  (`ctxHooks`): `resolved(run, value, flags)` or `rejected(run, error, flags)`, at once when it returns or
 *  throws, when it settles if it returns a promise or thenable (flags: `ABORTED`, `RESPONSE` below). `run` is
 *  wasm's number for this run of the handler (a number crosses into wasm for free, the call id would be copied).
 *  Running it here saves wasm-bindgen's catch wrapper (an arguments object and apply) and a JsFuture's two
 *  closures per call. */
export function runHandler(f, params, hooks, callId, progressToken, traceparent, tracestate, cancel, run) {
  const trace = traceparent === undefined ? undefined
    : tracestate === undefined ? { traceparent } : { traceparent, tracestate };
  const ctx = makeCtx(hooks, callId, progressToken, trace, cancel);
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

/** `{ type: 'capabilities/call-result', id, timestamp, payload: { success: true, data, metadata: { duration },
 *  callId } }`. */
export function successMessage(id, callId, data, duration) {
  return { type: 'capabilities/call-result', id, timestamp: Date.now(),
    payload: { success: true, data, metadata: { duration }, callId } };
}
