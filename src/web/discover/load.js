// The full build's discover(): the discovery build (discover/abp_wasm.js beside this build's file, made with the
// `discovery` feature alone) is loaded on the first call and does the work; a page that never discovers never
// downloads it. The import is written out so that bundlers (Vite, webpack) split it into a chunk of its own and
// ship its wasm; scripts/bundle-js.mjs keeps it as it is.

let loaded;

/** `discover(url, { timeout, signal })` of the discovery build, the arguments already checked (discover.rs).
 *  The time limit and the signal cover the loading too, and what is left of the limit goes to the discovery.
 *  If the discovery build cannot be loaded in time (or at all), resolves `{ supported: false, reason }`, as
 *  discover() does for every network problem. A failed wasm fetch is tried again by the next call; a failed
 *  module fetch is not (browsers remember it until the page is reloaded). */
export function discoverElsewhere(url, timeout, signal) {
  const start = performance.now();
  loaded ??= import('./discover/abp_wasm.js').then(async (build) => {
    await build.default();
    return build;
  });
  const unsupported = (reason) => ({ supported: false, reason: `discover: ${reason}` });
  return new Promise((resolve) => {
    let settled = false;
    const settle = (value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(value);
    };
    const timer = setTimeout(() => settle(unsupported(`the discovery code of abp-wasm did not load within ${timeout} ms`)), timeout);
    const onAbort = () => settle(unsupported(`aborted while the discovery code of abp-wasm was loading: ${String(signal.reason)}`));
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    loaded.then(
      (build) => {
        if (settled) return;
        const left = Math.max(0, timeout - (performance.now() - start));
        settle(build.discover(url, { timeout: left, signal: signal ?? undefined }));
      },
      (e) => {
        loaded = undefined;
        settle(unsupported(`the discovery code of abp-wasm could not be loaded: ${String(e)}`));
      },
    );
  });
}
