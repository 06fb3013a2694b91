// penpal 7.0.6's own connect, the library a user would pick instead, as a module file the host page loads
// (bench/load/module-host.html?lib=penpal): connected when penpal's handshake resolves, then one call.
import { connect, WindowMessenger } from '/node_modules/penpal/dist/penpal.mjs';

parts.imported = performance.now();
parts.init = parts.imported;
const q = new URLSearchParams(location.search);
const frame = document.querySelector('iframe');
const connection = connect({
  messenger: new WindowMessenger({ remoteWindow: frame.contentWindow, allowedOrigins: [q.get('app')] }),
  timeout: 30000,
});
const remote = await connection.promise;
const connected = performance.now();
if ((await remote.echo(1)) !== 1) throw new Error('the first call failed');
finish({ ...loadParts(), connected });
