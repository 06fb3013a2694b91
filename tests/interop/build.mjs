// Bundles the official MCP and ACP packages (pinned in package-lock.json next to this file) into browser ES modules:
//   mcp-sdk/dist/client.js  Client, IframeParentTransport, WebSocketClientTransport, McpError, ErrorCode, ...
//   mcp-sdk/dist/server.js  McpServer, Server, IframeChildTransport, z (zod), McpError, ErrorCode, ...
//   mcp-sdk/dist/client-v2.js  SDK 2's Client, IframeParentTransport (@mcp-b/transports 5), ext-apps 2's transport
//   mcp-sdk/dist/server-v2.js  SDK 2's McpServer, serveStdio, inputRequired, IframeChildTransport 5, z (zod), ...
//   acp-sdk/dist/acp.js     @agentclientprotocol/sdk (agent, client, methods, RequestError, ...), z, portStream
//   webmcp/dist/polyfill.js @mcp-b/webmcp-polyfill's initializeWebMCPPolyfill, cleanupWebMCPPolyfill
//   otel/dist/web.js        OpenTelemetry's web SDK (WebTracerProvider, SimpleSpanProcessor), OTLP/HTTP exporter, API
// Run it from anywhere: `node tests/interop/build.mjs` (add `--force` to rebuild). On a fresh clone it first runs
// `npm ci` here; when every dist bundle is newer than the lockfile, this script, the entry files and port-stream.js, it does nothing.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const lock = join(here, 'package-lock.json');
const installed = join(here, 'node_modules', '.package-lock.json');
// Output path (relative to this directory, without .js) -> entry file.
const entries = {
  'mcp-sdk/dist/client': join(here, 'mcp-sdk', 'entries', 'client.js'),
  'mcp-sdk/dist/server': join(here, 'mcp-sdk', 'entries', 'server.js'),
  'mcp-sdk/dist/client-v2': join(here, 'mcp-sdk', 'entries', 'client-v2.js'),
  'mcp-sdk/dist/server-v2': join(here, 'mcp-sdk', 'entries', 'server-v2.js'),
  'acp-sdk/dist/acp': join(here, 'acp-sdk', 'entries', 'acp.js'),
  'webmcp/dist/polyfill': join(here, 'webmcp', 'entries', 'polyfill.js'),
  'otel/dist/web': join(here, 'otel', 'entries', 'web.js'),
};
const outputs = Object.keys(entries).map((out) => join(here, `${out}.js`));
// Files the entries import besides node_modules (a change to them must rebuild too).
const ownSources = [join(here, 'acp-sdk', 'port-stream.js')];
const mtime = (path) => (existsSync(path) ? statSync(path).mtimeMs : -Infinity);
const log = (msg) => console.log(`interop build: ${msg}`);

// npm ci when node_modules is missing or older than the lockfile (npm writes node_modules/.package-lock.json).
if (!existsSync(installed) || mtime(installed) < mtime(lock)) {
  log('installing the pinned packages (npm ci)');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: here, stdio: 'inherit' });
}

const inputs = [lock, installed, fileURLToPath(import.meta.url), ...Object.values(entries), ...ownSources];
const oldestOutput = Math.min(...outputs.map(mtime));
if (!process.argv.includes('--force') && oldestOutput > Math.max(...inputs.map(mtime))) {
  log('mcp-sdk/dist and acp-sdk/dist are up to date');
} else {
  const { build } = createRequire(join(here, 'package.json'))('esbuild');
  for (const out of outputs) mkdirSync(dirname(out), { recursive: true });
  const started = Date.now();
  await build({
    absWorkingDir: here,
    entryPoints: Object.entries(entries).map(([out, entry]) => ({ in: entry, out })),
    outdir: here,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    // Not minified: these bundles are read in stack traces and while checking the wire facts in WIRE.md.
    minify: false,
    sourcemap: 'linked',
    logLevel: 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const sizes = outputs.map((f) => `${f.slice(here.length + 1)} ${(statSync(f).size / 1024).toFixed(0)} KB`).join(', ');
  log(`bundled in ${Date.now() - started} ms: ${sizes}`);
}
