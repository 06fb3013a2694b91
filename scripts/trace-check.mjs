// One trace from an MCP host to the browser handler, as an operator's collector receives it: an OTLP/HTTP
// receiver here (JSON), a locked nats-server (scripts/nats-locked.mjs), two `abp-peer mcp --http --nats --otlp`
// processes (A, B), and the app page (tests/trace/app.html) in headless Chromium joined to A, whose handlers start
// their spans as children of `ctx.trace` with OpenTelemetry's web SDK, exported to the same receiver. The host
// POSTs to B (revision 2026-07-28, plain HTTP) with its own `traceparent` in `_meta`:
//   - a call: B's server span `tools/call echo` (the host's span its parent) → B's hop across NATS → A's server
//     span of the request passed to it → A's hop to the app → the handler's span, all in the host's trace, each
//     the parent of the next; the result says the handler's `ctx.trace` named A's hop;
//   - a cancel: the host closes the request's stream; B's server span, B's NATS hop, A's server span and A's app
//     hop each have a `cancel` event naming the signal (`stream closed`), A's hop the app's acknowledgement, and
//     the handler's span its abort;
//   - a cancel by notice: a request at A cancelled by a POSTed `notifications/cancelled` (as bridges send it):
//     A's spans name the notice and its reason;
//   - without `--otlp`, a process exports nothing (C).
// Needs `npm run build` (pkg/), `node tests/interop/build.mjs` (the OpenTelemetry web SDK) and nats-server.
import { chromium } from 'playwright-core';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../www/serve.mjs';
import { startNats } from './nats-locked.mjs';

const fail = (msg) => { throw new Error(`trace-check: ${msg}`); };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (msg) => console.log(`trace-check: ${msg}`);

if (spawnSync('cargo', ['build', '-q', '-p', 'abp-peer'], { stdio: 'inherit' }).status !== 0) fail('cargo build -p abp-peer');
const pages = await serve(0);
const origin = `http://127.0.0.1:${pages.address().port}`;
const token = randomBytes(24).toString('hex');

// The receiver: every span it is sent, flattened (OTLP/JSON: ids in hex, kinds as numbers, 2 server, 3 client).
const spans = [];
const unreadable = [];
const value = (v) => v?.stringValue ?? v?.boolValue ?? v?.intValue ?? v?.doubleValue;
const attributes = (list) => Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
const receiver = createServer((req, res) => {
  // The page's exporter sends with credentials: CORS then wants its origin and headers named, not `*`.
  res.setHeader('Access-Control-Allow-Origin', req.headers.origin ?? '*');
  res.setHeader('Access-Control-Allow-Credentials', 'true');
  res.setHeader('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] ?? 'content-type');
  res.setHeader('Access-Control-Allow-Methods', 'POST');
  if (req.method === 'OPTIONS') { res.writeHead(204).end(); return; }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try {
      for (const rs of JSON.parse(Buffer.concat(chunks).toString()).resourceSpans ?? []) {
        const service = attributes(rs.resource?.attributes)['service.name'];
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({ service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined,
              name: s.name, kind: s.kind, attributes: attributes(s.attributes), status: s.status ?? {},
              events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributes(e.attributes) })) });
          }
        }
      }
    } catch (e) {
      unreadable.push(`${req.headers['content-type']}: ${e}`);
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const otlp = `http://127.0.0.1:${receiver.address().port}`;

/** One `abp-peer mcp --http --nats` process, exporting its spans as `abp-peer-<name>` unless `exporting` is false. */
async function gateway(name, exporting = true) {
  const log = [];
  const child = spawn('target/debug/abp-peer', ['mcp', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0',
    '--allow-origin', origin, ...nats.args, ...(exporting ? ['--otlp', otlp] : []),
    '--token-file', join(tmpdir(), `abp-trace-${process.pid}-${name}.token`)],
  { env: { ...process.env, ABP_PEER_TOKEN: token, OTEL_SERVICE_NAME: `abp-peer-${name}`,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' },
  stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (c) => log.push(String(c)));
  const logged = (re) => re.exec(log.join(''))?.[1];
  for (let t0 = Date.now(); !(logged(/listening on (ws:\/\/\S+)/) && logged(/mcp on (http:\/\/\S+)/)); await sleep(50)) {
    if (Date.now() - t0 > 15000) fail(`gateway ${name} did not start: ${log.join('')}`);
  }
  return { name, child, ws: logged(/listening on (ws:\/\/\S+)/), url: logged(/mcp on (http:\/\/\S+)/), log };
}

const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'trace-check', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {} };
let nextId = 0;
/** A `tools/call` of `name` at gateway `g` with `traceparent`: the request (node's, so that it can be dropped) and
 *  its answer. */
const call = (g, name, args, traceparent) => {
  const body = JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call',
    params: { name, arguments: args, _meta: { ...meta, traceparent } } });
  let r;
  const answer = new Promise((resolve) => {
    r = request(g.url, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`,
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': name } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve(text));
    });
    r.on('error', (e) => resolve(`failed: ${e}`));
    r.end(body);
  });
  return { request: r, answer };
};
/** A new trace's host span: its trace id, span id and `traceparent`. */
const hostSpan = () => {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
};
/** Waits until `pick(spans)` holds (the exporters send in batches), and returns it. */
const until = async (what, pick) => {
  for (let t0 = Date.now(); ; await sleep(100)) {
    const got = pick(spans);
    if (got) return got;
    if (Date.now() - t0 > 15000) fail(`never received ${what}; received: ${JSON.stringify(spans, null, 1)}; unreadable: ${unreadable}`);
  }
};
/** The spans of `trace` that make its chain: B's span of the host's request, B's hop across NATS, A's span of
 *  the request passed to it, A's hop to the app, the handler's span. */
const chain = (traceId, tool) => (all) => {
  const mine = all.filter((s) => s.traceId === traceId);
  const server = mine.find((s) => s.kind === 2 && s.service === 'abp-peer-B' && s.name === `tools/call ${tool}`);
  const nats = mine.find((s) => s.service === 'abp-peer-B' && s.attributes['abp.hop'] === 'nats');
  const there = mine.find((s) => s.kind === 2 && s.service === 'abp-peer-A' && s.name === `tools/call ${tool}`);
  const hop = mine.find((s) => s.service === 'abp-peer-A' && s.attributes['abp.hop'] === 'app');
  const handler = mine.find((s) => s.name === `handler ${tool}`);
  return server && nats && there && hop && handler && { server, nats, there, hop, handler };
};
const check = (ok, what, got) => { if (!ok) fail(`${what}: ${JSON.stringify(got, null, 1)}`); };
const consoleLines = [];
/** Whether a tool call's answer (a body, JSON or SSE) is a result of the app's, not an error. */
const reachedApp = (text) => text.includes('"structuredContent"') && !text.includes('"isError":true');
const eventOf = (span, name) => span.events.find((e) => e.name === name);

const nats = await startNats();
const [a, b] = [await gateway('A'), await gateway('B')];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await (await browser.newContext()).newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  await page.goto(`${origin}/tests/trace/app.html?gateway=${encodeURIComponent(a.ws)}&otlp=${encodeURIComponent(`${otlp}/v1/traces`)}`);
  await page.waitForFunction(() => window.joined || window.failure, null, { timeout: 20000 });
  if (!(await page.evaluate(() => window.joined))) fail(`the app did not join A: ${await page.evaluate(() => JSON.stringify(window.failure))}`);
  for (let t0 = Date.now(); !reachedApp(await call(b, 'echo', {}, undefined).answer); await sleep(100)) {
    if (Date.now() - t0 > 10000) fail('B never reached the app on A');
  }

  // A call: host → B → NATS → A → the handler → the result.
  const host = hostSpan();
  const answered = await call(b, 'echo', { n: 1 }, host.traceparent).answer;
  const result = JSON.parse(answered.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).at(-1) ?? answered);
  const { server, nats: natsHop, there, hop, handler } = await until('the call\'s five spans', chain(host.traceId, 'echo'));
  check(server.parentSpanId === host.spanId && server.attributes['mcp.method.name'] === 'tools/call'
    && server.attributes['gen_ai.tool.name'] === 'echo', 'B\'s server span, a child of the host\'s', server);
  check(natsHop.kind === 3 && natsHop.parentSpanId === server.spanId, 'B\'s hop across NATS, a child of its server span', natsHop);
  check(there.parentSpanId === natsHop.spanId, 'A\'s server span of the request passed to it, a child of B\'s hop', there);
  check(hop.kind === 3 && hop.parentSpanId === there.spanId, 'A\'s hop to the app, a child of A\'s server span', hop);
  check(handler.parentSpanId === hop.spanId && !/abp-peer/.test(handler.service ?? ''), 'the handler\'s span, A\'s hop its parent', handler);
  const seen = result.result?.structuredContent?.trace;
  check(seen?.traceparent === `00-${host.traceId}-${hop.spanId}-01`, 'ctx.trace names A\'s hop', result);
  say(`a call, one trace ${host.traceId}: the host's span ${host.spanId} → B's server span ${server.spanId} → B's hop across NATS ${natsHop.spanId} → A's server span ${there.spanId} → A's hop to the app ${hop.spanId} → the handler's span ${handler.spanId}`);

  // A cancel: the host closes the request's stream while the handler runs.
  const host2 = hostSpan();
  const before = await page.evaluate(() => window.started ?? 0);
  const waiting = call(b, 'wait', {}, host2.traceparent);
  await page.waitForFunction((n) => (window.started ?? 0) > n, before, { timeout: 10000 });
  waiting.request.destroy();
  const cancelled = await until('the cancelled call\'s spans, ended', (all) => {
    const c = chain(host2.traceId, 'wait')(all);
    return c && eventOf(c.hop, 'cancel acknowledged') && c;
  });
  for (const [span, label] of [[cancelled.server, 'B\'s server span'], [cancelled.nats, 'B\'s NATS hop'],
    [cancelled.there, 'A\'s server span'], [cancelled.hop, 'A\'s app hop']]) {
    check(eventOf(span, 'cancel')?.attributes['abp.cancel.signal'] === 'stream closed', `${label} says the stream was closed`, span);
  }
  check(eventOf(cancelled.hop, 'cancel acknowledged').attributes['abp.cancel.acknowledged_by'] === 'app', 'the app acknowledged', cancelled.hop);
  check(eventOf(cancelled.handler, 'aborted') && cancelled.handler.parentSpanId === cancelled.hop.spanId, 'the handler\'s span saw its abort', cancelled.handler);
  say('a cancel: the closed stream is an event of B\'s server span, of B\'s NATS hop, of A\'s server span and of A\'s app hop; A\'s hop has the app\'s acknowledgement, and the handler\'s span its abort');

  // A cancel by notice: a request at A (the app's process), cancelled by a POSTed notifications/cancelled, as
  // bridges for stdio hosts send it.
  const host4 = hostSpan();
  const before4 = await page.evaluate(() => window.started ?? 0);
  const noticed = call(a, 'wait', {}, host4.traceparent);
  await page.waitForFunction((n) => (window.started ?? 0) > n, before4, { timeout: 10000 });
  const notice = await fetch(a.url, { method: 'POST', headers: { 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2026-07-28' },
  body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: nextId, reason: 'the user pressed stop' } }) });
  check(notice.status === 202, 'the notice is taken', notice.status);
  const byNotice = await until('the noticed call\'s spans, ended', (all) => {
    const mine = all.filter((s) => s.traceId === host4.traceId);
    const server = mine.find((s) => s.kind === 2 && s.service === 'abp-peer-A');
    const hop = mine.find((s) => s.attributes['abp.hop'] === 'app');
    return server && hop && eventOf(hop, 'cancel acknowledged') && { server, hop };
  });
  for (const span of [byNotice.server, byNotice.hop]) {
    const cancel = eventOf(span, 'cancel');
    check(cancel?.attributes['abp.cancel.signal'] === 'notifications/cancelled'
      && cancel.attributes['abp.cancel.reason'] === 'the user pressed stop', `${span.name} names the notice and its reason`, span);
  }
  noticed.request.destroy();
  say('a cancel by notifications/cancelled at A: A\'s server span and its hop to the app name the notice and its reason');

  // Without --otlp nothing is exported.
  const c = await gateway('C', false);
  const host3 = hostSpan();
  for (let t0 = Date.now(); !reachedApp(await call(c, 'echo', {}, host3.traceparent).answer); await sleep(100)) {
    if (Date.now() - t0 > 10000) fail('C never reached the app on A');
  }
  await until('A\'s hop of C\'s call', (all) => all.find((s) => s.traceId === host3.traceId && s.attributes['abp.hop'] === 'app'));
  await sleep(500);
  check(!spans.some((s) => s.service === 'abp-peer-C'), 'C, started without --otlp, exported nothing', spans.filter((s) => s.service === 'abp-peer-C'));
  say('C, without --otlp, exported nothing; A, which holds the app, still traced its hop of C\'s call in the host\'s trace');
  c.child.kill('SIGTERM');
  check(unreadable.length === 0, 'every export was OTLP/JSON', unreadable);
  check(pageErrors.length === 0, 'no errors in the page', pageErrors);
  say('ok');
} catch (e) {
  for (const g of [a, b]) console.error(`--- gateway ${g.name}'s log:\n${g.log.join('')}`);
  console.error(`--- the page's console:\n${consoleLines.join('\n')}`);
  throw e;
} finally {
  await browser.close();
  for (const g of [a, b]) g.child.kill('SIGTERM');
  nats.stop();
  receiver.close();
  pages.close();
}
