// bench/load.mjs only (an init script in every frame): times the parts of this page's load, in window.parts (ms since this page's navigation
// start). WebAssembly.instantiateStreaming, which the package's init() uses, is split into its two steps here so
// that compiling and instantiating are timed apart; the resource timings give when the JS and the wasm arrived.
window.parts = { msgs: [] };
addEventListener('message', () => { if (window.parts.msgs.length < 40) window.parts.msgs.push(performance.now()); });
WebAssembly.instantiateStreaming = async (source, imports) => {
  const module = await WebAssembly.compileStreaming(source);
  window.parts.compiled = performance.now();
  const instance = await WebAssembly.instantiate(module, imports);
  window.parts.instantiated = performance.now();
  return { module, instance };
};
window.loadParts = () => {
  const p = { ...window.parts, timeOrigin: performance.timeOrigin, html: performance.getEntriesByType('navigation')[0]?.responseEnd };
  for (const e of performance.getEntriesByType('resource')) {
    if (/abp_wasm\.js$|\/snippets\//.test(e.name)) {
      p.jsStart = Math.min(p.jsStart ?? Infinity, e.startTime);
      p.js = Math.max(p.js ?? 0, e.responseEnd);
    }
    if (e.name.endsWith('.wasm')) { p.wasmStart = e.startTime; p.wasm = e.responseEnd; }
  }
  return p;
};
