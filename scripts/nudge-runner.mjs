// Keeps wasm-bindgen-test-runner's page server answering: one short request a second to ADDRESS (host:port), for
// as long as process PARENT lives. Started by scripts/page-server.sh.
//
// Why: the runner serves the test page with tiny_http 0.12, whose thread pool can lose a wake-up. When two
// connections arrive together while one pool thread is idle, both are queued but only one thread is woken; the
// other connection waits until some thread comes free. A browser keeps its connections alive, so every thread may
// stay busy and the queued request is never answered: the page stops at "Loading scripts..." and the runner gives
// up. A fresh connection while no thread is idle makes the pool start one, and that thread serves the stranded
// connection once it is done with ours.
import http from 'node:http';

const [address, parent] = process.argv.slice(2);
if (!address || !/^[\w.-]+:\d+$/.test(address) || !/^\d+$/.test(parent ?? '')) {
  console.error('usage: node scripts/nudge-runner.mjs HOST:PORT PARENT_PID');
  process.exit(2);
}
const [host, port] = address.split(':');
const nudge = () => {
  const req = http.get({ host, port: Number(port), path: '/', agent: false, headers: { connection: 'close' }, timeout: 2000 });
  req.on('response', (res) => res.resume());
  req.on('timeout', () => req.destroy());
  // Nothing listens between test files: that is expected.
  req.on('error', () => {});
};
setInterval(() => {
  try {
    process.kill(Number(parent), 0);
  } catch {
    process.exit(0);
  }
  nudge();
}, 1000);
