// An app on a real origin joining `abp-peer mcp` on the user's machine, as the README's MCP-host story has it, under
// Chromium's Local Network Access: a page on a public address may open a connection to this device only from a secure
// context, with the user's permission ("loopback-network"), and in a frame only where its embedder allows it.
// The app page (tests/lna/app.html) is served over https with a throwaway certificate made here, under the name
// app.test, which Chromium resolves to 127.0.0.1 and treats as a public address (--ip-address-space-overrides).
//   - without the permission: `WebSocketTransport.connect` (reconnect on) rejects at once with an error that names
//     Local Network Access and the permission; in a frame without allow="loopback-network", it names the attribute;
//     from a plain http page, it says to serve the page over https;
//   - with the permission: the app joins, an MCP host's call returns, and closing its stream aborts the handler's
//     ctx.signal; in a frame whose embedder allows it, the app joins too.
// Chromium only (playwright-core drives Chromium here). Needs `npm run build` first (pkg/) and openssl.
import { chromium } from 'playwright-core';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate, createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../www/serve.mjs';

const fail = (msg) => { throw new Error(`lna-check: ${msg}`); };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const dir = mkdtempSync(join(tmpdir(), 'abp-lna-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
  '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=app.test',
  '-addext', 'subjectAltName=DNS:app.test,DNS:top.test'], { stdio: 'ignore' });
const tls = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
// Chromium accepts this one certificate (and no other bad one): the SHA-256 of its public key.
const spki = createHash('sha256').update(new X509Certificate(tls.cert).publicKey.export({ type: 'spki', format: 'der' }))
  .digest('base64');
rmSync(dir, { recursive: true, force: true });

const secure = await serve(0, { tls });
const plain = await serve(0);
const port = secure.address().port;
const httpPort = plain.address().port;
const origin = `https://app.test:${port}`;

if (spawnSync('cargo', ['build', '-q', '-p', 'abp-peer'], { stdio: 'inherit' }).status !== 0) fail('cargo build -p abp-peer');
const token = randomBytes(24).toString('hex');
const gatewayLog = [];
const gateway = spawn('target/debug/abp-peer', ['mcp', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0',
  '--allow-origin', origin, '--token-file', join(tmpdir(), `abp-lna-${process.pid}.token`)],
{ env: { ...process.env, ABP_PEER_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
gateway.stderr.on('data', (c) => gatewayLog.push(String(c)));
const logged = (re) => re.exec(gatewayLog.join(''))?.[1];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--host-resolver-rules=MAP app.test 127.0.0.1, MAP top.test 127.0.0.1',
    `--ip-address-space-overrides=127.0.0.1:${port}=public,127.0.0.1:${httpPort}=public`,
    `--ignore-certificate-errors-spki-list=${spki}`],
});
try {
  for (let t0 = Date.now(); !(logged(/listening on (ws:\/\/\S+)/) && logged(/mcp on (http:\/\/\S+)/)); await sleep(50)) {
    if (Date.now() - t0 > 10000) fail(`the gateway did not start: ${gatewayLog.join('')}`);
  }
  const ws = logged(/listening on (ws:\/\/\S+)/);
  const mcp = logged(/mcp on (http:\/\/\S+)/);
  const appPath = `/tests/lna/app.html?gateway=${encodeURIComponent(ws)}`;

  /** A fresh profile (no permission granted), optionally granting "loopback-network" to `grantTo` origins. */
  const context = async (grantTo = []) => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    if (grantTo.length) {
      const cdp = await ctx.newCDPSession(page);
      const { targetInfo } = await cdp.send('Target.getTargetInfo');
      for (const o of grantTo) {
        await cdp.send('Browser.grantPermissions', { browserContextId: targetInfo.browserContextId, origin: o,
          permissions: ['loopbackNetwork'] });
      }
    }
    return { ctx, page };
  };
  /** How the app page in `frame` ended: { joined } or { failure }. */
  const outcome = async (frame) => {
    await frame.waitForFunction(() => window.joined || window.failure, null, { timeout: 20000 });
    return frame.evaluate(() => ({ joined: window.joined, failure: window.failure }));
  };
  /** The app page in an iframe of a top.test page, with `allow` on the iframe if given. */
  const framed = async (page, allow) => {
    await page.goto(`https://top.test:${port}/www/abp.json`);
    await page.evaluate(([src, allow]) => {
      const f = document.createElement('iframe');
      if (allow) f.allow = allow;
      f.src = src;
      document.body.append(f);
    }, [`${origin}${appPath}`, allow]);
    for (let t0 = Date.now(); page.frames().length < 2; await sleep(20)) {
      if (Date.now() - t0 > 10000) fail('the iframe never loaded');
    }
    return page.frames()[1];
  };
  const refused = (where, r, re) => {
    if (r.joined || !r.failure) fail(`${where}: the app joined although the browser should have blocked it`);
    if (r.failure.code !== 'DISCONNECTED' || !re.every((x) => x.test(r.failure.message))) {
      fail(`${where}: the error does not say what happened: ${JSON.stringify(r.failure)}`);
    }
    // reconnect is on: without the check, connect would go on retrying for as long as the page is open.
    if (r.failure.ms > 5000) fail(`${where}: connect took ${r.failure.ms.toFixed(0)} ms to reject`);
    console.log(`lna-check: ${where}: connect rejected after ${r.failure.ms.toFixed(0)} ms: ${r.failure.message}`);
  };

  // 1. No permission: the browser blocks the socket; connect says so at once, although reconnect is on.
  let { ctx, page } = await context();
  await page.goto(`${origin}${appPath}`);
  refused('no permission', await outcome(page), [/Local Network Access/, /"loopback-network" permission is (prompt|denied)/]);
  refused('a frame its embedder did not allow', await outcome(await framed(page, '')),
    [/Local Network Access/, /<iframe allow="loopback-network">/]);
  await page.goto(`http://app.test:${httpPort}${appPath}`);
  refused('a plain http page', await outcome(page), [/Local Network Access/, /serve it over https/]);
  await ctx.close();

  // 2. The permission granted: the app joins, an MCP host calls it, and closing the call's stream cancels it.
  ({ ctx, page } = await context([origin, `https://top.test:${port}`]));
  await page.goto(`${origin}${appPath}`);
  const joined = await outcome(page);
  if (!joined.joined) fail(`with the permission, the app did not join: ${JSON.stringify(joined.failure)}`);
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'lna-check', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
  let id = 0;
  const post = (method, params, signal) => fetch(mcp, { method: 'POST', signal, headers: { 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method, ...(params.name ? { 'Mcp-Name': params.name } : {}) },
  body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: meta } }) });
  const rpc = async (method, params) => {
    const body = await (await post(method, params)).json();
    if (body.error) fail(`${method}: ${JSON.stringify(body.error)}`);
    return body.result;
  };
  for (let t0 = Date.now(); !(await rpc('tools/list', {})).tools.some((t) => t.name === 'lna.echo'); await sleep(50)) {
    if (Date.now() - t0 > 10000) fail('the app never showed its tools to the gateway');
  }
  const echoed = await rpc('tools/call', { name: 'lna.echo', arguments: { hello: 'from the host' } });
  if (echoed.structuredContent?.hello !== 'from the host') fail(`lna.echo: ${JSON.stringify(echoed)}`);
  const stream = new AbortController();
  const call = post('tools/call', { name: 'lna.wait', arguments: {} }, stream.signal).catch((e) => e);
  await page.waitForFunction(() => window.started, null, { timeout: 10000 });
  const closedAt = performance.timeOrigin + performance.now();
  stream.abort();
  await call;
  await page.waitForFunction(() => window.abortedAt, null, { timeout: 5000 });
  const took = (await page.evaluate(() => window.abortedAt)) - closedAt;
  if (took > 500) fail(`the handler was aborted ${took.toFixed(0)} ms after the host closed its stream`);
  console.log(`lna-check: with the permission: joined, lna.echo returned, closing the call's stream aborted the `
    + `handler ${took.toFixed(1)} ms later`);

  // 3. A frame whose embedder allows it, with the permission: the app joins (the first one left with its page).
  const allowed = await outcome(await framed(page, 'loopback-network'));
  if (!allowed.joined) fail(`a frame with allow="loopback-network": ${JSON.stringify(allowed.failure)}`);
  console.log('lna-check: a frame with allow="loopback-network", with the permission: joined');
  await ctx.close();
  console.log('lna-check: ok (Chromium; Local Network Access)');
} finally {
  await browser.close();
  gateway.kill('SIGTERM');
  secure.close();
  plain.close();
}
