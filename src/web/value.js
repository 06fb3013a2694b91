// Values, time and promises, and the page's WebMCP: the JavaScript that `value.rs` and `dom.rs` declare, which
// every build has. Small named functions that are simpler or cheaper in JavaScript than through wasm-bindgen
// calls; every protocol decision and all state stay in wasm. The other snippets may import from this one (and
// only from this one: it is in every build, so it is always next to them).

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

const clock = globalThis.performance;

/** `performance.now()` on the `performance` object read once: the global `performance` is a getter of the
 *  window, and reading it on each of a call's clock reads was a visible cost (bench/app-cost.mjs). */
export function now() {
  return clock.now();
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

export function isRecord(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
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

/** `JSON.stringify(v)`, or 'null' for what JSON cannot write (undefined, a function, a cycle, a BigInt, a
 *  throwing `toJSON`). */
export function jsonString(v) {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? 'null' : s;
  } catch (_) {
    return 'null';
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

/** The page's WebMCP, or a TypeError saying how to get it. */
export function modelContext(who, needsExecute) {
  const mc = globalThis.document?.modelContext;
  if (!mc || typeof mc.registerTool !== 'function' || (needsExecute && typeof mc.executeTool !== 'function')) {
    throw new TypeError(`${who}: this page has no document.modelContext (WebMCP)${mc ? ' with executeTool' : ''}. `
      + 'Chromium has it behind --enable-features=WebMCP; elsewhere load @mcp-b/webmcp-polyfill and call '
      + 'initializeWebMCPPolyfill() first');
  }
  return mc;
}

/** The text of an abort reason (native WebMCP aborts without one). */
export function reasonText(signal) {
  const r = signal?.reason;
  if (r === undefined) return 'The WebMCP caller cancelled';
  if (typeof r === 'string') return r;
  return r?.message || String(r);
}
