// Assertions and waiting, shared by the browser cases (cases.js) and the WebSocket cases (ws-cases.js).

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
