// A tiny static server for the demo (no dependencies): serves the repository root on 127.0.0.1, so the
// host page (www/index.html) and the app (www/app.html) load the built package from /pkg.
// Usage: node www/serve.mjs [port]   (PORT env or 8080; 0 picks a free port)
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm', '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.png': 'image/png',
  '.svg': 'image/svg+xml', '.ts': 'text/plain; charset=utf-8',
};

/** `cache`: let the browser keep what it fetched (for the duration of one run) instead of `no-store`; the memory
 *  benchmark loads thousands of frames of the same few files. `tls` ({ key, cert }): serve over https. `delay`:
 *  milliseconds to wait before answering each GET, as a network's round trip would (bench/load.mjs's LOAD_RTT).
 *  `onPost(url, body)`: called with each POST's URL and body text (a page run without a test driver reports its
 *  results this way, bench/direct.mjs); without it a POST is refused. `inject(path, url)`: HTML put at the top
 *  of an .html page (after its doctype) when it returns some, as bench/load.mjs's timing shim, without a request of
 *  its own. */
export function serve(port = 8080, { cache = false, tls, onPost, inject, delay = 0 } = {}) {
  const handle = async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'POST') {
      if (!onPost) { res.writeHead(405); res.end(); return; }
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk) => { body += chunk; });
      req.on('end', () => { res.writeHead(204); res.end(); onPost(url, body); });
      return;
    }
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    let path = normalize(decodeURIComponent(url.pathname));
    if (path === '/') { res.writeHead(302, { location: '/www/' }); res.end(); return; }
    if (path.endsWith('/')) path += 'index.html';
    const file = join(root, path);
    if (!file.startsWith(root)) { res.writeHead(403); res.end(); return; }
    try {
      let body = await readFile(file);
      const extra = extname(file) === '.html' && inject?.(path, url);
      if (extra) {
        const text = body.toString('utf8');
        const at = /^<!doctype html>\s*/i.exec(text)?.[0].length ?? 0;
        body = Buffer.from(`${text.slice(0, at)}${extra}\n${text.slice(at)}`);
      }
      const headers = { 'content-type': types[extname(file)] ?? 'application/octet-stream', 'cache-control': cache ? 'max-age=3600' : 'no-store',
        'cross-origin-resource-policy': 'same-origin' };
      if (path.startsWith('/www/')) {
        // The demo's host page discovers the app (another origin) by fetching its page and manifest.
        headers['access-control-allow-origin'] = '*';
      }
      // (Not the load pages: a page of another origin is their iframe, which cross-origin isolation would block.)
      if (path.startsWith('/bench/') && !path.startsWith('/bench/load/')) {
        // Cross-origin isolation gives the benchmark 5 µs timers instead of 100 µs.
        headers['cross-origin-opener-policy'] = 'same-origin';
        headers['cross-origin-embedder-policy'] = 'require-corp';
      }
      res.writeHead(200, headers);
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  };
  const server = tls ? createTlsServer(tls, handle) : createServer(handle);
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => ok(server));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
  const server = await serve(port);
  const { port: actual } = server.address();
  console.log(`abp-wasm demo: http://127.0.0.1:${actual}/www/`);
  console.log('(the app iframe is served from http://localhost:' + actual + ', a different origin; Ctrl-C stops)');
}
