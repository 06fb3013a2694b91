// Assertions, waiting and the pages the cases open, shared by every browser case file (cases.js, ws-cases.js,
// mcp-cases.js, mcp-v2-cases.js, acp-cases.js, …).

/** Uncaught errors and unhandled rejections on the test page; every case ends by checking it is empty. */
export const pageErrors = [];
addEventListener('error', (e) => pageErrors.push(String(e.message)));
addEventListener('unhandledrejection', (e) => pageErrors.push(String(e.reason)));

export function fail(msg) { throw new Error(msg); }
export function assert(cond, msg) { if (!cond) fail(`assertion failed: ${msg}`); }
export function eq(actual, expected, msg) {
  const a = JSON.stringify(actual), b = JSON.stringify(expected);
  if (a !== b) fail(`${msg}: expected ${b}, got ${a}`);
}
/** How long a case waits for an iframe's page and wasm to load: CI machines can be slow and busy (2 cores, two
 * browsers), and loading is not what the cases test. */
export const LOAD_MS = 30000;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export async function until(f, what, ms = 3000) {
  const t0 = performance.now();
  while (!f()) {
    if (performance.now() - t0 > ms) fail(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** What `f()` throws, or null when it returns. */
export function thrown(f) {
  try {
    f();
  } catch (e) {
    return e;
  }
  return null;
}

/** The promise's rejection (a failure if it resolves). */
export async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  return fail('expected a rejection');
}

/** This page's origin, and the same test server under its other name (127.0.0.1 or localhost): a second origin. */
export const ORIGIN = location.origin;
export const OTHER = ORIGIN.includes('127.0.0.1') ? ORIGIN.replace('127.0.0.1', 'localhost') : ORIGIN.replace('localhost', '127.0.0.1');

/** An iframe showing `path` on the other origin, told (`?parent=`) which origin embeds it. */
export function crossOriginFrame(path) {
  const iframe = document.createElement('iframe');
  iframe.src = `${OTHER}${path}${path.includes('?') ? '&' : '?'}parent=${encodeURIComponent(ORIGIN)}`;
  document.body.appendChild(iframe);
  return iframe;
}

/** What the MCP frames post to this page, from now on: `reports` ({ fixtureLog } from our app, { sdkLog } from an
 *  SDK server page) and `messages` (every JSON-RPC message, inside the MCP-B envelope or bare). */
export function recordMcpTraffic() {
  const reports = [];
  const messages = [];
  addEventListener('message', (e) => {
    const d = e.data;
    if (d && d.fixtureLog) reports.push(d.fixtureLog);
    else if (d && d.sdkLog) reports.push(d.sdkLog);
    else if (d && d.type === 'mcp' && d.payload && typeof d.payload === 'object') messages.push(d.payload);
    else if (d && d.jsonrpc === '2.0') messages.push(d);
  });
  return { reports, messages, reported: (f) => reports.find(f) };
}

/** Runs `cases[name]`, failing it if it takes longer than `limitMs`; `after` cleans up either way. */
export async function runNamed(cases, name, limitMs, after) {
  const f = cases[name];
  if (!f) fail(`no case named ${name}`);
  let timer;
  const hang = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${name} hung for ${limitMs / 1000} s`)), limitMs); });
  try {
    await Promise.race([f(), hang]);
  } finally {
    clearTimeout(timer);
    after();
  }
}

/** Called from Rust so that wasm-bindgen ships this module next to the cases that import it. */
export function helpersLoaded() { return true; }
