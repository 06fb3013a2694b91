// The app side of hand-app.html's handshake, as a module file (bench/load/module-app.html?lib=hand).
parts.imported = performance.now();
const q = new URLSearchParams(location.search);
const host = q.get('host');
function listen() {
  addEventListener('message', (e) => {
    if (e.origin !== host || e.source !== parent) return;
    if (e.data?.type === 'hello') parent.postMessage({ type: 'ready' }, host);
    else if (e.data?.type === 'call') parent.postMessage({ type: 'result', id: e.data.id, data: e.data.params }, host);
  });
  parts.listening = performance.now();
  parent.postMessage({ appParts: loadParts() }, host);
}
// ?late=<ms> (bench/load.mjs's LOAD_LATE): an app that is ready to listen only that much later.
if (q.get('late')) setTimeout(listen, Number(q.get('late')));
else listen();
