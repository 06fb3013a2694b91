// Pages and manifests for the discovery tests, served on 127.0.0.1 (a free port; prints its base URL on the
// first line of stdout). Started and stopped by scripts/discovery-fixtures.sh (for the browser tests) and by
// peer/tests/discover.rs (for `abp-peer discover`). Every response allows any origin (the test page runs on
// another origin) and is not cached.
//
//   /good/              link (rel="preload abp-manifest", href before rel, relative) → /good/abp.json
//   /missing-link/      a head without the link
//   /late-link/         the link after 60 KB of head
//   /bad-json/          → a manifest that is not JSON
//   /deep-json/         → a manifest nested 100,000 levels deep
//   /surrogate-json/    → a manifest whose app.name escapes half a UTF-16 surrogate pair ("\ud800")
//   /wrong-type/        → a manifest served as text/html
//   /missing-fields/    → a manifest without app.version
//   /too-many/          → a manifest with 101 capabilities
//   /redirect-loop/     → /loop/a ↔ /loop/b, forever
//   /redirects/         → /hop/3 → /hop/2 → /hop/1 → /hop/0 → the good manifest (3 redirects)
//   /newer-major/       → a manifest with abp "1.0"
//   /big-manifest/      → a manifest over 1 MB
//   /slow/              answers after 5 s (tests pass a short timeout)
//   /stalled/           sends its head (with the link) at once and never ends the body
import { createServer } from 'node:http';

const manifest = (extra = {}) => ({
  abp: '0.1',
  app: { id: 'com.example.fixture', name: 'Fixture app', version: '1.0.0', description: 'A test app' },
  capabilities: [
    { name: 'echo.text', description: 'Echoes', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
    { name: 'export.pdf', experimental: true },
  ],
  ...extra,
});

const page = (head) => `<!doctype html><html><head><meta charset="utf-8"><title>Fixture</title>${head}</head>`
  + '<body><p>fixture</p></body></html>';
const link = (href) => `<link href="${href}" rel="preload abp-manifest">`;
const json = (value) => ({ type: 'application/json; charset=utf-8', body: JSON.stringify(value) });
const html = (body) => ({ type: 'text/html; charset=utf-8', body });

const tooMany = Array.from({ length: 101 }, (_, i) => ({ name: `cap.n${i}` }));
const { version: _drop, ...appWithoutVersion } = manifest().app;

const routes = {
  '/good/': html(page(link('abp.json'))),
  '/good/abp.json': json(manifest()),
  '/missing-link/': html(page('<link rel="stylesheet" href="s.css"><link rel="manifest" href="app.webmanifest">')),
  '/late-link/': html(page(`<meta name="filler" content="${'x'.repeat(60 * 1024)}">${link('/good/abp.json')}`)),
  '/bad-json/': html(page(link('/bad-json/abp.json'))),
  '/bad-json/abp.json': { type: 'application/json', body: '{"abp": "0.1", "app": {' },
  '/deep-json/': html(page(link('/deep-json/abp.json'))),
  '/deep-json/abp.json': { type: 'application/json', body: `{"abp":"0.1","x":${'['.repeat(100000)}${']'.repeat(100000)}}` },
  '/surrogate-json/': html(page(link('/surrogate-json/abp.json'))),
  '/surrogate-json/abp.json': { type: 'application/json', body: JSON.stringify(manifest()).replace('Fixture app', 'Fixture \\ud800 app') },
  '/wrong-type/': html(page(link('/wrong-type/abp.json'))),
  '/wrong-type/abp.json': { type: 'text/html', body: JSON.stringify(manifest()) },
  '/missing-fields/': html(page(link('/missing-fields/abp.json'))),
  '/missing-fields/abp.json': json(manifest({ app: appWithoutVersion })),
  '/too-many/': html(page(link('/too-many/abp.json'))),
  '/too-many/abp.json': json(manifest({ capabilities: tooMany })),
  '/redirect-loop/': html(page(link('/loop/a'))),
  '/redirects/': html(page(link('/hop/3'))),
  '/newer-major/': html(page(link('/newer-major/abp.json'))),
  '/newer-major/abp.json': json(manifest({ abp: '1.0' })),
  '/big-manifest/': html(page(link('/big-manifest/abp.json'))),
  '/big-manifest/abp.json': json(manifest({ padding: 'x'.repeat(1100 * 1024) })),
};

const server = createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  const headers = { 'access-control-allow-origin': '*', 'cache-control': 'no-store' };
  const redirect = (to) => { res.writeHead(302, { ...headers, location: to }); res.end(); };
  if (path === '/loop/a') return redirect('/loop/b');
  if (path === '/loop/b') return redirect('/loop/a');
  const hop = /^\/hop\/(\d+)$/.exec(path);
  if (hop) return redirect(hop[1] === '0' ? '/good/abp.json' : `/hop/${Number(hop[1]) - 1}`);
  if (path === '/slow/') {
    const t = setTimeout(() => { res.writeHead(200, { ...headers, 'content-type': 'text/html' }); res.end(page(link('/good/abp.json'))); }, 5000);
    res.on('close', () => clearTimeout(t));
    return;
  }
  if (path === '/stalled/') {
    res.writeHead(200, { ...headers, 'content-type': 'text/html' });
    res.write(`<!doctype html><html><head>${link('/good/abp.json')}</head><body>`);
    const t = setInterval(() => res.write(' '), 1000); // keeps the body open, never ends it
    res.on('close', () => clearInterval(t));
    return;
  }
  const route = routes[path];
  if (!route) { res.writeHead(404, { ...headers, 'content-type': 'text/plain' }); res.end('not found'); return; }
  res.writeHead(200, { ...headers, 'content-type': route.type });
  res.end(route.body);
});

server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
// `--exit-with-stdin`: exit when stdin closes (a test process that started this server ended).
if (process.argv.includes('--exit-with-stdin')) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
