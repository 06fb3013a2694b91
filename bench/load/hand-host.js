// The host side of hand-host.html's handshake, as a module file (bench/load/module-host.html?lib=hand).
parts.imported = performance.now();
parts.init = parts.imported;
const q = new URLSearchParams(location.search);
const appOrigin = q.get('app');
const frame = document.querySelector('iframe');
const t = {};
let timer = null;
addEventListener('message', (e) => {
  if (e.origin !== appOrigin || e.source !== frame.contentWindow) return;
  if (e.data?.type === 'ready' && t.connected === undefined) {
    t.connected = performance.now();
    clearInterval(timer);
    frame.contentWindow.postMessage({ type: 'call', id: 1, params: 1 }, appOrigin);
  } else if (e.data?.type === 'result' && e.data.id === 1) {
    finish({ ...loadParts(), ...t });
  }
});
// Until the app answers, say hello every 10 ms (its listener may not be there yet).
timer = setInterval(() => frame.contentWindow?.postMessage({ type: 'hello' }, appOrigin), 10);
