// Gateway processes sharing one browser app over NATS, with a real app in headless Chromium: a locked nats-server
// (scripts/nats-locked.mjs: a user allowed abp.> only, TLS) on a free 127.0.0.1 port, three `abp-peer mcp --http --nats` processes (A, B, C), the app page (tests/cluster/app.html)
// joined to A, and an MCP host (plain HTTP, revision 2026-07-28) whose requests reach B and C, as behind a load
// balancer with no affinity, and the official SDK clients (2 and 1, the second a 2025-11-25 session) at processes
// without the app. Each point is a case: no app anywhere; tools listed and called; progress on the request's own
// stream; a question asked in a call at B answered by the retry at C; a tool added in the page heard by a listen at
// B; closing a stream at B aborting the page's handler within 500 ms; the refusals of one process (Origin, Host, no
// token or a wrong one, a second app); the official SDK 2 and SDK 1 clients at processes without the app, their
// AbortSignal aborting the page's handler; the app leaving, its process killed and the NATS server restarted, with
// nothing pending left hanging; a process a call came through killed, and the NATS server killed, each aborting the
// page's handler within 2 s, and a call while NATS is down told so; and the relay's two sides (an app page, an agent page) on two server processes:
// calls, progress, an AbortSignal aborting the handler, the room's process killed. Needs `npm run build` first
// (pkg/), `node tests/interop/build.mjs` (the SDKs) and nats-server (scripts/setup.sh installs it).
import { chromium } from 'playwright-core';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../www/serve.mjs';
import { startNats } from './nats-locked.mjs';

// The official MCP clients (pinned in tests/interop, installed by its build).
const interop = new URL('../tests/interop/node_modules/', import.meta.url);
const { Client: ClientV2, StreamableHTTPClientTransport: HttpV2 } = await import(new URL('@modelcontextprotocol/client/dist/index.mjs', interop));
const { Client: ClientV1 } = await import(new URL('@modelcontextprotocol/sdk/dist/esm/client/index.js', interop));
const { StreamableHTTPClientTransport: HttpV1 } = await import(new URL('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js', interop));

const fail = (msg) => { throw new Error(`cluster-check: ${msg}`); };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (msg) => console.log(`cluster-check: ${msg}`);
const now = () => performance.timeOrigin + performance.now();

if (spawnSync('cargo', ['build', '-q', '-p', 'abp-peer'], { stdio: 'inherit' }).status !== 0) fail('cargo build -p abp-peer');
const pages = await serve(0);
const origin = `http://127.0.0.1:${pages.address().port}`;
const token = randomBytes(24).toString('hex');

/** One `abp-peer mcp --http --nats` process: its app WebSocket and MCP URLs, and its log. */
async function gateway(name) {
  const log = [];
  const child = spawn('target/debug/abp-peer', ['mcp', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0',
    '--allow-origin', origin, ...nats.args,
    '--token-file', join(tmpdir(), `abp-cluster-${process.pid}-${name}.token`)],
  { env: { ...process.env, ABP_PEER_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (c) => log.push(String(c)));
  child.on('exit', (code, signal) => log.push(`[exited ${code} ${signal} at ${new Date().toISOString()}]\n`));
  const logged = (re) => re.exec(log.join(''))?.[1];
  for (let t0 = Date.now(); !(logged(/listening on (ws:\/\/\S+)/) && logged(/mcp on (http:\/\/\S+)/)); await sleep(50)) {
    if (Date.now() - t0 > 15000) fail(`gateway ${name} did not start: ${log.join('')}`);
  }
  return { name, child, ws: logged(/listening on (ws:\/\/\S+)/), url: logged(/mcp on (http:\/\/\S+)/), log };
}

/** One `abp-peer --nats` process in server mode (the relay and the native agent): its WebSocket URL and log. */
async function server(name) {
  const log = [];
  const child = spawn('target/debug/abp-peer', ['--listen', '127.0.0.1:0', '--allow-origin', origin,
    ...nats.args, '--token-file', join(tmpdir(), `abp-cluster-${process.pid}-${name}.token`)],
  { env: { ...process.env, ABP_PEER_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (c) => log.push(String(c)));
  const logged = () => /listening on (ws:\/\/\S+)/.exec(log.join(''))?.[1];
  for (let t0 = Date.now(); !logged(); await sleep(50)) {
    if (Date.now() - t0 > 15000) fail(`server ${name} did not start: ${log.join('')}`);
  }
  return { name, child, ws: logged(), log };
}

const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'cluster-check', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
let nextId = 0;
/** A modern request to gateway `g`: the fetch's response (not read). */
const post = (g, method, params, { signal, headers = {}, stream = false } = {}) => fetch(g.url, {
  method: 'POST', signal,
  headers: { 'Content-Type': 'application/json', Accept: stream ? 'application/json, text/event-stream' : 'application/json',
    Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method,
    ...(params.name ? { 'Mcp-Name': params.name } : {}), ...headers },
  body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params: { ...params, _meta: { ...meta, ...params._meta } } }),
});
const rpc = async (g, method, params) => {
  const body = await (await post(g, method, params)).json();
  if (body.error) fail(`${method} at ${g.name}: ${JSON.stringify(body.error)}`);
  return body.result;
};
/** The JSON-RPC messages of an SSE body. */
const events = (text) => text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));

// Locked as docs/peer.md deploys it: a user allowed abp.> only, a password, TLS (abp-peer refuses an open server).
const nats = await startNats();
say(`nats-server at ${nats.shown} (a user with publish and subscribe on abp.> only, TLS)`);
const [a, b, c] = [await gateway('A'), await gateway('B'), await gateway('C')];
const servers = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
/** The app page joined to `g` (or refused there), in a context of its own. */
const openApp = async (g) => {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${origin}/tests/cluster/app.html?gateway=${encodeURIComponent(g.ws)}`);
  await page.waitForFunction(() => window.joined || window.failure, null, { timeout: 20000 });
  return page;
};
const toolsAt = async (g, want) => {
  for (let t0 = Date.now(); ; await sleep(50)) {
    const { tools } = await rpc(g, 'tools/list', {});
    if (tools.some((t) => t.name === want)) return tools;
    if (Date.now() - t0 > 10000) fail(`${want} never listed at ${g.name}: ${JSON.stringify(tools)}`);
  }
};
/** A `wait` call at `g`, pending in the page: its response promise and the page's count of started calls. */
const pendingWait = async (g, page) => {
  const before = await page.evaluate(() => window.started ?? 0);
  let answered;
  const body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params: { name: 'wait', arguments: {}, _meta: meta } });
  const response = new Promise((resolve) => {
    const r = request(g.url, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json',
      Accept: 'application/json', Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call', 'Mcp-Name': 'wait' } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    r.on('error', (e) => resolve({ failed: String(e) }));
    r.end(body);
  }).then((v) => { answered = v; return v.text ? JSON.parse(v.text) : v; });
  for (let t0 = now(); (await page.evaluate(() => window.started ?? 0)) <= before; await sleep(20)) {
    if (answered || now() - t0 > 10000) fail(`the wait at ${g.name} did not start in the page: ${JSON.stringify(answered)}`);
  }
  return { response };
};

try {
  // No app anywhere: answered as one process answers.
  const none = await rpc(b, 'tools/call', { name: 'echo', arguments: {} });
  if (!none.isError || !/No app is connected/.test(JSON.stringify(none))) fail(`no app: ${JSON.stringify(none)}`);
  say('no app anywhere: B answers "No app is connected", as one process does');

  let page = await openApp(a);
  if (!(await page.evaluate(() => window.joined))) fail(`the app did not join A: ${await page.evaluate(() => JSON.stringify(window.failure))}`);
  const names = (await toolsAt(b, 'wait')).map((t) => t.name).join(', ');
  const echoed = await rpc(c, 'tools/call', { name: 'echo', arguments: { from: 'C' } });
  if (echoed.structuredContent?.from !== 'C') fail(`echo at C: ${JSON.stringify(echoed)}`);
  say(`the app joined A; B lists its tools (${names}); C calls echo`);

  // A host's trace context in `_meta` reaches the page's handler (joined to A) through B and NATS; an invalid one
  // is dropped on the way, not refused.
  const traceId = randomBytes(16).toString('hex');
  const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
  const traced = await rpc(b, 'tools/call', { name: 'trace', arguments: {}, _meta: { traceparent, tracestate: 'abp=1' } });
  const got = traced.structuredContent?.trace;
  if (got?.traceparent?.split('-')[1] !== traceId || got?.tracestate !== 'abp=1') fail(`the trace at B: ${JSON.stringify(traced)}`);
  const junk = await rpc(b, 'tools/call', { name: 'trace', arguments: {}, _meta: { traceparent: traceparent.toUpperCase() } });
  if (junk.structuredContent?.trace !== null) fail(`an invalid traceparent at B: ${JSON.stringify(junk)}`);
  say('a traceparent in a request\'s _meta at B reached the handler on A as ctx.trace; an invalid one did not');

  const counted = await (await post(b, 'tools/call', { name: 'count', arguments: { to: 3 }, _meta: { progressToken: 'p' } },
    { stream: true })).text();
  const seen = events(counted);
  if (seen.filter((m) => m.method === 'notifications/progress').length !== 3 || seen.at(-1)?.result?.structuredContent?.counted !== 3) {
    fail(`progress at B: ${counted}`);
  }
  say('count at B: three progress notifications on the request\'s own stream, then its result');

  const asked = await rpc(b, 'tools/call', { name: 'ask', arguments: {} });
  if (asked.resultType !== 'input_required' || !asked.inputRequests?.name) fail(`ask at B: ${JSON.stringify(asked)}`);
  const answered = await rpc(c, 'tools/call', { name: 'ask', arguments: {}, requestState: asked.requestState,
    inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } } });
  if (!JSON.stringify(answered.structuredContent ?? answered).includes('Ada')) fail(`the retry at C: ${JSON.stringify(answered)}`);
  say('ask at B: an InputRequiredResult; the retry at C answers it and gets the result');

  const listen = new AbortController();
  const listening = await post(b, 'subscriptions/listen', { notifications: { toolsListChanged: true } },
    { signal: listen.signal, stream: true });
  const reader = listening.body.getReader();
  let heard = '';
  const hear = async (what) => {
    for (let t0 = Date.now(); !heard.includes(what); ) {
      const { value, done } = await Promise.race([reader.read(), sleep(5000).then(() => ({ done: true }))]);
      if (done || Date.now() - t0 > 10000) fail(`the listen at B never heard ${what}: ${heard}`);
      heard += new TextDecoder().decode(value);
    }
  };
  await hear('notifications/subscriptions/acknowledged');
  await page.evaluate(() => window.addTool('added.later'));
  await hear('notifications/tools/list_changed');
  listen.abort();
  say('a listen at B hears the page add a tool (notifications/tools/list_changed)');

  const stream = new AbortController();
  const call = post(b, 'tools/call', { name: 'wait', arguments: {} }, { signal: stream.signal, stream: true }).catch(() => {});
  await page.waitForFunction(() => window.started, null, { timeout: 10000 });
  const closedAt = now();
  stream.abort();
  await call;
  await page.waitForFunction(() => window.abortedAt, null, { timeout: 5000 });
  const took = (await page.evaluate(() => window.abortedAt)) - closedAt;
  if (took > 500) fail(`the handler was aborted ${took.toFixed(0)} ms after the stream at B closed`);
  say(`closing the stream at B aborted the page's handler (joined to A) ${took.toFixed(1)} ms later`);

  // The official SDK clients, each at a process without the app: SDK 2 (revision 2026-07-28: its abort closes the
  // request's stream) at C, and SDK 1 (a 2025-11-25 session: its abort POSTs notifications/cancelled) at B.
  const requestInit = { headers: { Authorization: `Bearer ${token}` } };
  const sdk2 = new ClientV2({ name: 'cluster-check', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  await sdk2.connect(new HttpV2(new URL(c.url), { requestInit }));
  const sdk1 = new ClientV1({ name: 'cluster-check', version: '1' }, { capabilities: {} });
  await sdk1.connect(new HttpV1(new URL(b.url), { requestInit }));
  // (SDK 1's callTool takes its options third, after a result schema.)
  const sides = [[(...a) => sdk2.callTool(a[0], a[1]), c, 'the SDK 2 client'],
    [(...a) => sdk1.callTool(a[0], undefined, a[1]), b, 'the SDK 1 client (a 2025-11-25 session)']];
  for (const [callTool, g, label] of sides) {
    const echoed = await callTool({ name: 'echo', arguments: { via: label } });
    if (echoed.structuredContent?.via !== label) fail(`${label} at ${g.name}: ${JSON.stringify(echoed)}`);
    // The SDK passes a request's `_meta` on: its trace context reaches the handler with the same trace id.
    const sdkTrace = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    const seen = (await callTool({ name: 'trace', arguments: {}, _meta: { traceparent: sdkTrace } })).structuredContent?.trace;
    if (seen?.traceparent?.split('-')[1] !== sdkTrace.split('-')[1]) fail(`${label} at ${g.name}: the handler saw the trace ${JSON.stringify(seen)}`);
    const before = await page.evaluate(() => { window.abortedAt = undefined; return window.started ?? 0; });
    const controller = new AbortController();
    const calling = callTool({ name: 'wait', arguments: {} }, { signal: controller.signal }).catch((e) => e);
    await page.waitForFunction((n) => window.started > n, before, { timeout: 10000 });
    const abortAt = now();
    controller.abort('stop');
    await calling;
    await page.waitForFunction(() => window.abortedAt, null, { timeout: 5000 });
    const tookSdk = (await page.evaluate(() => window.abortedAt)) - abortAt;
    if (tookSdk > 500) fail(`${label} at ${g.name}: the handler was aborted ${tookSdk.toFixed(0)} ms after the abort`);
    say(`${label} at ${g.name}: echo answered, its _meta.traceparent reached the handler, and its AbortSignal aborted the page's handler on A ${tookSdk.toFixed(1)} ms later`);
  }
  await sdk2.close();
  await sdk1.close();

  // On connections of their own (a refused request's connection is closed, and fetch's pool would reuse it).
  const status = (headers) => new Promise((resolve, reject) => {
    const r = request(b.url, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json', ...headers } },
      (res) => { res.resume(); resolve(res.statusCode); });
    r.on('error', reject);
    r.end('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}');
  });
  const foreign = { status: await status({ Authorization: `Bearer ${token}`, Origin: 'http://evil.example' }) };
  const tokenless = { status: await status({}) };
  const forged = { status: await status({ Authorization: `Bearer ${token}`, Host: 'evil.example' }) };
  const wrong = { status: await status({ Authorization: `Bearer ${'0'.repeat(48)}` }) };
  const second = await openApp(b);
  const refused = await second.evaluate(() => window.failure?.code);
  await second.context().close();
  if (foreign.status !== 403 || tokenless.status !== 401 || forged.status !== 403 || wrong.status !== 401
    || refused !== 'DISCONNECTED') {
    fail(`refusals at B: Origin ${foreign.status}, no token ${tokenless.status}, a forged Host ${forged.status}, `
      + `a wrong token ${wrong.status}, a second app ${refused}`);
  }
  say('B refuses a foreign Origin (403), a forged Host (403), no token and a wrong one (401), and a second app while '
    + 'the first holds A (first app wins)');

  let { response: pending } = await pendingWait(b, page);
  let t0 = now();
  await page.context().close();
  let ended = await pending;
  if (now() - t0 > 1000 || !ended.result?.isError) fail(`the app leaving: ${JSON.stringify(ended)} after ${now() - t0} ms`);
  say(`the app left A: the call pending at B ended ${(now() - t0).toFixed(0)} ms later (${ended.result.content[0].text})`);

  page = await openApp(a);
  await toolsAt(b, 'wait');
  ({ response: pending } = await pendingWait(b, page));
  t0 = now();
  a.child.kill('SIGKILL');
  ended = await pending;
  if (now() - t0 > 1600 || !ended.error) fail(`A killed: ${JSON.stringify(ended)} after ${now() - t0} ms`);
  say(`A killed: the call pending at B ended ${(now() - t0).toFixed(0)} ms later (${ended.error.message})`);
  await page.context().close();

  page = await openApp(b);
  await toolsAt(c, 'wait');
  // The process a call came through is killed: nobody is left to take its result, so the app stops working on it.
  const d = await gateway('D');
  servers.push(d);
  await toolsAt(d, 'wait');
  await page.evaluate(() => { window.abortedAt = undefined; });
  await pendingWait(d, page);
  t0 = now();
  d.child.kill('SIGKILL');
  await page.waitForFunction(() => window.abortedAt, null, { timeout: 5000 });
  let tookGone = (await page.evaluate(() => window.abortedAt)) - t0;
  if (tookGone > 2000) fail(`D killed: the page's handler (on B) was aborted ${tookGone.toFixed(0)} ms later`);
  say(`D killed mid-call: the page's handler on B was aborted ${tookGone.toFixed(0)} ms later (capabilities/cancel)`);

  await page.evaluate(() => { window.abortedAt = undefined; });
  ({ response: pending } = await pendingWait(c, page));
  t0 = now();
  nats.stop('SIGKILL');
  ended = await pending;
  if (now() - t0 > 1600 || !ended.error) fail(`NATS killed: ${JSON.stringify(ended)} after ${now() - t0} ms`);
  say(`the NATS server killed: the call pending at C ended ${(now() - t0).toFixed(0)} ms later`);
  await page.waitForFunction(() => window.abortedAt, null, { timeout: 5000 });
  tookGone = (await page.evaluate(() => window.abortedAt)) - t0;
  if (tookGone > 2000) fail(`NATS killed: the page's handler (on B) was aborted ${tookGone.toFixed(0)} ms later`);
  say(`the NATS server killed: the page's handler on B was aborted ${tookGone.toFixed(0)} ms later`);
  const down = await rpc(c, 'tools/call', { name: 'echo', arguments: {} });
  if (!/NATS server .* is down/.test(JSON.stringify(down))) fail(`a call at C while NATS is down: ${JSON.stringify(down)}`);
  say(`a call at C while NATS is down is told so: ${down.content?.[0]?.text}`);
  nats.restart();
  t0 = now();
  for (;; await sleep(100)) {
    const r = await rpc(c, 'tools/call', { name: 'echo', arguments: { again: true } });
    if (r.structuredContent?.again) break;
    if (now() - t0 > 15000) fail(`after NATS came back, C never reached the app on B: ${JSON.stringify(r)}`);
  }
  say(`NATS restarted: C reaches the app on B again ${(now() - t0).toFixed(0)} ms later`);

  // The relay's two sides on two server processes: the app page joins /relay/R/app on P, an agent page (AbpClient)
  // joins /relay/R/agent on Q, and the agent's calls reach the app through both processes.
  const [p, q] = [await server('P'), await server('Q')];
  servers.push(p, q);
  const appPage = await (await browser.newContext()).newPage();
  await appPage.goto(`${origin}/tests/cluster/app.html?gateway=${encodeURIComponent(p.ws)}&path=/relay/rr/app`);
  await appPage.waitForFunction(() => window.joined || window.failure, null, { timeout: 20000 });
  const agentPage = await (await browser.newContext()).newPage();
  await agentPage.goto(`${origin}/tests/cluster/agent.html?peer=${encodeURIComponent(q.ws)}&room=rr&token=${token}`);
  await agentPage.waitForFunction(() => window.joined || window.failure, null, { timeout: 20000 });
  const failed = await agentPage.evaluate(() => window.failure) ?? await appPage.evaluate(() => window.failure);
  if (failed) fail(`the relay's sides did not join: ${JSON.stringify(failed)}`);
  const relayed = await agentPage.evaluate(async () => {
    const echo = await window.abp.call('echo', { via: 'two processes' });
    const seen = [];
    const count = await window.abp.call('count', { to: 3 }, { onProgress: (p) => seen.push(p.progress) });
    return { echo, count, seen };
  });
  if (relayed.echo.data?.via !== 'two processes' || relayed.count.data?.counted !== 3 || relayed.seen.join() !== '1,2,3') {
    fail(`calls through the relay across processes: ${JSON.stringify(relayed)}`);
  }
  say('relay across processes: the agent on Q calls the app on P (a result, progress 1,2,3 before the result)');
  await agentPage.evaluate(() => {
    window.controller = new AbortController();
    window.pending = window.abp.call('wait', {}, { signal: window.controller.signal });
  });
  await appPage.waitForFunction(() => window.started >= 1, null, { timeout: 10000 });
  const abortAt = await agentPage.evaluate(() => { window.controller.abort('stop'); return performance.timeOrigin + performance.now(); });
  await appPage.waitForFunction(() => window.abortedAt, null, { timeout: 5000 });
  const tookAbort = (await appPage.evaluate(() => window.abortedAt)) - abortAt;
  const cancelled = await agentPage.evaluate(() => window.pending.then((r) => r.error?.code));
  if (tookAbort > 500 || cancelled !== 'CANCELLED') fail(`the abort through the relay: ${tookAbort} ms, ${cancelled}`);
  say(`relay across processes: the agent's AbortSignal on Q aborted the handler on P ${tookAbort.toFixed(1)} ms later`);
  // P, the room's process, killed: Q closes the agent's side, and its pending call settles.
  await agentPage.evaluate(() => { window.pending = window.abp.call('wait', {}); });
  await appPage.waitForFunction(() => window.started >= 2, null, { timeout: 10000 });
  t0 = now();
  p.child.kill('SIGKILL');
  const lost = await agentPage.evaluate(() => window.pending.then((r) => r.error?.code));
  if (now() - t0 > 1600 || lost !== 'DISCONNECTED') fail(`P killed: ${lost} after ${now() - t0} ms`);
  say(`relay across processes: P killed, the agent's pending call on Q settled ${lost} ${(now() - t0).toFixed(0)} ms later`);

  console.log('cluster-check: ok (Chromium; three gateway processes and a relay across two, over NATS)');
} catch (e) {
  for (const g of [...servers]) console.error(`--- server ${g.name}'s log:\n${g.log.join('')}`);
  for (const g of [a, b, c]) console.error(`--- gateway ${g.name}'s log (exit ${g.child.exitCode} ${g.child.signalCode}):\n${g.log.join('')}`);
  throw e;
} finally {
  await browser.close();
  for (const g of [a, b, c, ...servers]) g.child.kill('SIGTERM');
  nats.stop();
  pages.close();
}
