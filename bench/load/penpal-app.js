// The app side with penpal 7.0.6 (bench/load/module-app.html?lib=penpal): listening once connect() is called.
import { connect, WindowMessenger } from '/node_modules/penpal/dist/penpal.mjs';

parts.imported = performance.now();
const q = new URLSearchParams(location.search);
const host = q.get('host');
const listen = () => {
  connect({ messenger: new WindowMessenger({ remoteWindow: parent, allowedOrigins: [host] }), methods: { echo: (x) => x } });
  parts.listening = performance.now();
  parent.postMessage({ appParts: loadParts() }, host);
};
// ?late=<ms> (bench/load.mjs's LOAD_LATE): an app that is ready to listen only that much later.
if (q.get('late')) setTimeout(listen, Number(q.get('late')));
else listen();
