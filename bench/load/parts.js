// bench/load.mjs only: put at the top of every page of a load (bench/load.mjs has the server inline it, so it
// costs no request of its own). Times the parts of this page's load, in window.parts (ms since this page's
// navigation start). WebAssembly.instantiateStreaming, which the package's init() uses, is split into its two
// steps here so that compiling and instantiating are timed apart; the resource timings give when the JS and the
// wasm arrived. It is the page's first script, so `firstScript` is when the page could first run any script of its
// own (the new renderer's navigation committed and the HTML parsed up to here): the floor's app listens from there.
window.parts = { firstScript: performance.now(), msgs: [] };
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
    if (/abp_wasm\.js$|\/snippets\/|\/bench\/load\/(hand|penpal)-(host|app)\.js$|penpal\.mjs$/.test(e.name)) {
      p.jsStart = Math.min(p.jsStart ?? Infinity, e.startTime);
      p.js = Math.max(p.js ?? 0, e.responseEnd);
    }
    if (e.name.endsWith('.wasm')) { p.wasmStart = e.startTime; p.wasm = e.responseEnd; }
  }
  return p;
};
if (window === top) {
  // The host page (?report=<token>, the browser started on it with no test driver) posts what it measured to the
  // bench server. ?visits=N: a returning user; the page loads itself again (`visit` counting up, the first visit
  // staying ?stay= ms, as V8 caches compiled code only once it has run a while) and only the last visit reports.
  const q = new URLSearchParams(location.search);
  const report = (body) => fetch(`/bench/result?report=${encodeURIComponent(q.get('report'))}`, { method: 'POST', body: JSON.stringify(body) });
  addEventListener('error', (e) => report({ error: String(e.error?.stack ?? e.message) }));
  addEventListener('unhandledrejection', (e) => report({ error: String(e.reason?.stack ?? e.reason) }));
  window.finish = async (times) => {
    const visit = Number(q.get('visit') ?? 1);
    if (visit < Number(q.get('visits') ?? 1)) {
      await new Promise((r) => setTimeout(r, visit === 1 ? Number(q.get('stay') ?? 2500) : 0));
      q.set('visit', String(visit + 1));
      location.replace(`${location.pathname}?${q}`);
      return;
    }
    // The app says how its load went once it listens, before it answers the handshake.
    while (!window.appParts) await new Promise((r) => setTimeout(r, 5));
    report({ times, app: window.appParts });
  };
}
