// The full build's discover(): the discovery build (discover/abp_wasm.js beside this build's file, made with the
// `discovery` feature alone) is loaded on the first call and does the work; a page that never discovers never
// downloads it. The import is written out so that bundlers (Vite, webpack, esbuild) split it into a chunk of its
// own and ship its wasm; scripts/bundle-js.mjs keeps it as it is.

let loaded;

/** `discover(url, options)` of the discovery build. If that build cannot be loaded (offline, a server that does
 *  not serve it), resolves `{ supported: false, reason }` as discover() does for every network problem, and the
 *  next call tries again. */
export function discoverElsewhere(url, options) {
  loaded ??= import('./discover/abp_wasm.js').then(async (build) => {
    await build.default();
    return build;
  });
  return loaded.then(
    (build) => build.discover(url, options),
    (e) => {
      loaded = undefined;
      return { supported: false, reason: `discover: the discovery code of abp-wasm could not be loaded: ${e}` };
    },
  );
}
