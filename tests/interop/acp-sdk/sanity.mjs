// Proves the ACP interop harness works before our code is in it: @agentclientprotocol/sdk 2.4 talks to itself in
// headless Chromium, its agent() and client() roles in one page (sanity.html) joined by a MessageChannel through
// portStream, one JSON-RPC object per postMessage, the way the interop tests put our AbpClient / AbpApp on one end.
// Checks the wire facts in WIRE.md: arbitrary method names both ways (named handlers and the '*' fallback),
// -32601 / -32602 / -32603 / -32600, the initialize gate, $/cancel_request { requestId } on abort reaching the other
// handler's signal and answered -32800, a finished request staying a result, stopWaitingOnCancel, cascading only
// when a handler passes its signal on, the proposal's $/cancelRequest { id } being ignored, and closing.
// Usage: node tests/interop/acp-sdk/sanity.mjs [--wire target/acp-wire.json]   (builds the bundle first)
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../../../www/serve.mjs';

execFileSync(process.execPath, [fileURLToPath(new URL('../build.mjs', import.meta.url))], { stdio: 'inherit' });

const wireOut = process.argv.includes('--wire') ? process.argv[process.argv.indexOf('--wire') + 1] : null;
const server = await serve(0);
const { port } = server.address();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failures = 0;
const check = (ok, what, detail) => {
  if (!ok) failures++;
  console.log(`sanity: ${ok ? 'ok  ' : 'FAIL'} ${what}${detail === undefined || ok ? '' : ` ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`);
};
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
try {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/tests/interop/acp-sdk/sanity.html`);
  await page.waitForFunction(() => window.ready, null, { timeout: 15000 });
  const call = (from, method, params, opts) => page.evaluate(([f, m, p, o]) => call(f, m, p, o), [from, method, params, opts]);
  const wire = () => page.evaluate(() => wire);
  const seen = () => page.evaluate(() => seen);
  const wait = (ms) => page.waitForTimeout(ms);
  // Messages `side` wrote.
  const sentBy = async (side, pred) => (await wire()).filter((m) => m.side === side && m.dir === 'out' && pred(m.msg)).map((m) => m.msg);
  const cancelsFor = (side, id) => sentBy(side, (m) => m.method === '$/cancel_request' && m.params?.requestId === id);
  const responseTo = async (side, id) => (await sentBy(side, (m) => m.id === id && !('method' in m)))[0];
  const handlerEvents = async (side, id, method) => (await seen()).filter((e) => e.side === side && e.requestId === id && (!method || e.method === method));

  // The initialize gate: an agent() with an initialize handler answers -32600 to anything before initialize.
  const early = await call('client', 'echo', { text: 'too early' });
  check(early.error?.code === -32600 && early.error.message === "Invalid request: ACP connection must be initialized before 'echo'",
    'before initialize: -32600 (agent has an initialize handler)', early);
  check(early.requestId === 0, 'request ids are numbers counting from 0 per connection', early.requestId);

  // initialize is not special to the SDK's cancellation: $/cancel_request is sent, the handler's signal aborts.
  await page.evaluate(() => { window.initDelay = 150; });
  const init = await call('client', 'initialize', { protocolVersion: 1, clientCapabilities: {} }, { abortAfter: 30 });
  await page.evaluate(() => { window.initDelay = 0; });
  const initEvents = await handlerEvents('agent', init.requestId, 'initialize');
  check(init.value?.protocolVersion === 1 && (await cancelsFor('client', init.requestId)).length === 1
    && initEvents.some((e) => e.event === 'abort') && initEvents.at(-1).event === 'end',
  'initialize can be cancelled like any request ($/cancel_request sent, handler signal aborted); a handler that finishes still answers the result', { init, initEvents });

  // Arbitrary method names, both directions.
  const echo = await call('client', 'echo', { text: 'hi' });
  check(same(echo.value, { text: 'hi' }), 'client -> agent custom method "echo" (onRequest(name, zodSchema, handler))', echo);
  const pdf = await call('client', 'export.pdf', { pages: 3 });
  check(same(pdf.value, { pages: 3, method: 'export.pdf' }), 'client -> agent dotted name "export.pdf" (no "_" prefix needed)', pdf);
  const ext = await call('client', '_abp/ext', {});
  check(same(ext.value, { ext: true, method: '_abp/ext' }), 'client -> agent "_abp/ext" (underscore names are not special)', ext);
  const back = await call('agent', 'export.pdf', { pages: 2 });
  check(same(back.value, { served: 'export.pdf', params: { pages: 2 } }), "agent -> client arbitrary name served by the client's '*' fallback", back);
  const backId = back.requestId;
  check(backId === 0, 'the agent side numbers its own requests from 0 too', backId);

  // Errors.
  const nope = await call('client', 'nope', { a: 1 });
  check(nope.error?.code === -32601 && nope.error.message === '"Method not found": nope' && same(nope.error.data, { method: 'nope' }),
    'unknown method -> -32601 "\\"Method not found\\": nope", data {method}', nope);
  const nopeClient = await call('agent', 'nope_client', {});
  check(nopeClient.error?.code === -32601, "a '*' handler can throw RequestError.methodNotFound -> -32601", nopeClient);
  const bad = await call('client', 'echo', { text: 5 });
  check(bad.error?.code === -32602 && bad.error.message === 'Invalid params' && Array.isArray(bad.error.data?.text?._errors),
    'bad params (zod parser) -> -32602 "Invalid params", data = ZodError.format()', bad);
  const strict = await call('client', 'strict', { n: 'x' });
  check(strict.error?.code === -32603 && same(strict.error.data, { details: 'n must be a number' }),
    'bad params (function parser throwing Error) -> -32603 "Internal error", data {details}', strict);
  const boom = await call('client', 'boom', {});
  check(boom.error?.code === -32603 && boom.error.message === 'Internal error' && same(boom.error.data, { details: 'boom' }), 'handler throws Error -> -32603 data {details}', boom);
  const fail = await call('client', 'fail', {});
  check(fail.error?.code === -32001 && fail.error.message === 'custom failure' && same(fail.error.data, { x: 1 }), 'handler throws RequestError -> its code/message/data', fail);

  // Cancellation mid-flight: $/cancel_request { requestId } -> handler signal aborts -> -32800.
  const slow = await call('client', 'slow', { ms: 5000 }, { abortAfter: 100 });
  const slowCancel = await cancelsFor('client', slow.requestId);
  const slowEvents = await handlerEvents('agent', slow.requestId, 'slow');
  const slowAbort = slowEvents.find((e) => e.event === 'abort');
  const slowResp = await responseTo('agent', slow.requestId);
  check(slowCancel.length === 1 && same(slowCancel[0], { jsonrpc: '2.0', method: '$/cancel_request', params: { requestId: slow.requestId } }),
    '$/cancel_request is a notification { requestId } with the request id as sent (a number here)', slowCancel);
  check(slowAbort?.reason?.name === 'RequestError' && slowAbort.reason.code === -32800 && slowAbort.reason.message === 'Request cancelled'
    && same(slowAbort.reason.data, { requestId: slow.requestId }), "the agent handler's ctx.signal aborts, reason RequestError(-32800, 'Request cancelled', {requestId})", slowAbort);
  check(slow.error?.name === 'RequestError' && slow.error.code === -32800 && slow.error.message === 'Request cancelled'
    && same(slow.error.data, { requestId: slow.requestId }) && slow.afterAbort < 100,
  'the caller keeps waiting and gets the -32800 error response (data {requestId})', slow);
  check(same(slowResp, { jsonrpc: '2.0', id: slow.requestId, error: { code: -32800, message: 'Request cancelled', data: { requestId: slow.requestId } } }),
    'wire: -32800 response', slowResp);
  const dom = await call('client', 'slow_domabort', { ms: 5000 }, { abortAfter: 60 });
  check(dom.error?.code === -32800 && same(dom.error.data, { requestId: dom.requestId }), 'a handler rejecting with a DOMException AbortError also yields -32800 (the SDK maps it while signal.aborted)', dom);
  const plainErr = await call('client', 'slow_plainerror', { ms: 5000 }, { abortAfter: 60 });
  check(plainErr.error?.code === -32603 && same(plainErr.error.data, { details: 'stopped' }),
    'a handler rejecting with an ordinary Error after the abort yields -32603, not -32800 (the SDK does not answer for the handler)', plainErr);

  // A finished request is not turned into a cancel.
  const stubborn = await call('client', 'stubborn', { ms: 200 }, { abortAfter: 50 });
  check(same(stubborn.value, { done: true, sawAbort: true }) && (await cancelsFor('client', stubborn.requestId)).length === 1,
    'a handler that ignores the abort and finishes: the caller gets the normal result ($/cancel_request was sent)', stubborn);
  const done = await call('client', 'stubborn', { ms: 20 }, { abortAfter: 150 });
  check(same(done.value, { done: true, sawAbort: false }) && (await cancelsFor('client', done.requestId)).length === 0,
    'aborting after the response arrived sends nothing', done);
  const late = await page.evaluate(() => postRaw({ jsonrpc: '2.0', method: '$/cancel_request', params: { requestId: 3 } }));
  void late;
  await wait(50);

  // stopWaitingOnCancel: reject at once with -32800 whose data is the signal's reason; the late response is dropped.
  const errorsBefore = (await page.evaluate(() => consoleErrors)).length;
  const quit = await call('client', 'slow', { ms: 5000 }, { abortAfter: 80, reason: 'user stop', stopWaitingOnCancel: true });
  await wait(100);
  const quitResp = await responseTo('agent', quit.requestId);
  check(quit.error?.code === -32800 && quit.error.message === 'Request cancelled' && quit.error.data === 'user stop' && quit.afterAbort < 20,
    'stopWaitingOnCancel: rejects at once, RequestError(-32800, "Request cancelled", data = signal.reason)', quit);
  check(quitResp?.error?.code === -32800 && (await cancelsFor('client', quit.requestId)).length === 1,
    'stopWaitingOnCancel: $/cancel_request still sent, the peer still answers -32800', quitResp);
  const quitLate = await call('client', 'stubborn', { ms: 150 }, { abortAfter: 30, stopWaitingOnCancel: true });
  await wait(200);
  const quitLateResp = await responseTo('agent', quitLate.requestId);
  check(quitLate.error?.code === -32800 && quitLate.error.data?.name === 'AbortError' && quitLateResp?.result?.done === true,
    'stopWaitingOnCancel with abort() (no reason): data is the DOMException AbortError; the late normal result is dropped', { quitLate, quitLateResp });
  const pre = await call('client', 'slow', { ms: 5000 }, { preAbort: true, reason: 'already', stopWaitingOnCancel: true });
  await wait(50);
  const preWire = await sentBy('client', (m) => m.id === pre.requestId || m.params?.requestId === pre.requestId);
  check(pre.error?.code === -32800 && pre.error.data === 'already' && preWire.length === 2 && preWire[0].method === 'slow' && preWire[1].method === '$/cancel_request',
    'an already-aborted signal: the request and then $/cancel_request are both sent', { pre, preWire });
  const errorsAfter = await page.evaluate(() => consoleErrors);
  check(errorsAfter.length === errorsBefore, 'late responses to abandoned requests are dropped silently', errorsAfter.slice(errorsBefore));

  // The other direction: the agent cancels its request to the client.
  const rev = await call('agent', 'confirm', { q: 'sure?', ms: 5000 }, { abortAfter: 80 });
  const revEvents = await handlerEvents('client', rev.requestId, 'confirm');
  check(rev.error?.code === -32800 && (await cancelsFor('agent', rev.requestId)).length === 1 && revEvents.some((e) => e.event === 'abort' && e.reason.code === -32800),
    "agent -> client: $/cancel_request aborts the client's handler signal, -32800", { rev, revEvents });

  // Cascade: only when the handler passes its ctx.signal as the nested request's cancellationSignal.
  const ask = await call('client', 'ask', { q: 'nested?', ms: 5000 }, { abortAfter: 120 });
  await wait(50);
  const inner = (await sentBy('agent', (m) => m.method === 'confirm' && m.params?.q === 'nested?'))[0];
  const innerCancel = await cancelsFor('agent', inner?.id);
  const innerEvents = await handlerEvents('client', inner?.id, 'confirm');
  check(ask.error?.code === -32800 && innerCancel.length === 1 && innerEvents.some((e) => e.event === 'abort'),
    'cascade with { cancellationSignal: ctx.signal }: the nested request gets its own $/cancel_request and its handler aborts', { ask, inner, innerCancel });
  check(same(ask.error?.data, { requestId: inner?.id }),
    "the outer -32800 is the nested request's error passed through (data.requestId is the nested id)", ask.error);
  const plainAsk = await call('client', 'ask_plain', { q: 'plain?', ms: 300 }, { abortAfter: 60 });
  const plainInner = (await sentBy('agent', (m) => m.method === 'confirm' && m.params?.q === 'plain?'))[0];
  check(same(plainAsk.value, { ok: true, q: 'plain?' }) && (await cancelsFor('agent', plainInner?.id)).length === 0
    && (await handlerEvents('agent', plainAsk.requestId, 'ask_plain')).some((e) => e.event === 'abort'),
  'no automatic cascade: a nested request made without the signal is not cancelled (the outer finishes with its result)', plainAsk);

  // The proposal's $/cancelRequest { id } and other cancel shapes are ignored.
  const propP = call('client', 'stubborn', { ms: 200 });
  await wait(40);
  const propId = (await sentBy('client', (m) => m.method === 'stubborn')).at(-1).id;
  await page.evaluate((id) => clientConn.agent.notify('$/cancelRequest', { id }), propId);
  await page.evaluate((id) => clientConn.agent.notify('$/cancel_request', { requestId: String(id) }), propId);
  const prop = await propP;
  const propEvents = await handlerEvents('agent', propId, 'stubborn');
  check(same(prop.value, { done: true, sawAbort: false }) && !propEvents.some((e) => e.event === 'abort'),
    "$/cancelRequest {id} and $/cancel_request with the id as a string are ignored (ids are matched by ===)", { prop, propEvents });
  const notes = (await seen()).filter((e) => e.side === 'agent' && e.event === 'notification').map((e) => e.method);
  check(notes.includes('$/cancel_request') && notes.includes('$/cancelRequest'),
    "$/cancel_request (after the SDK acted on it) and $/cancelRequest also reach an onNotification('*') handler", notes);

  // Malformed input, answered with id null.
  const rawBefore = (await wire()).length;
  await page.evaluate(() => { postRaw({ foo: 1 }); postRaw([{ jsonrpc: '2.0', id: 'b', method: 'echo' }]); postRaw('not json'); postRaw({ jsonrpc: '2.0', method: 'no/such/notification' }); });
  await wait(100);
  const rawIn = (await wire()).slice(rawBefore).filter((m) => m.side === 'agent' && m.dir === 'out').map((m) => m.msg);
  check(rawIn.length === 3 && rawIn.every((m) => m.id === null && m.error.code === -32600)
    && rawIn[1].error.message === 'Invalid request: JSON-RPC batches are not supported',
  'invalid messages and batches -> -32600 with id null; unknown notifications get nothing', rawIn);

  // Closing: the side whose readable ends rejects its pending requests; the other side is not told.
  const closing = page.evaluate(() => call('client', 'slow', { ms: 1000 }));
  await wait(50);
  await page.evaluate(() => clientStream.end());
  const closed = await closing;
  await wait(1100);
  const closedEvents = (await seen()).filter((e) => e.side === 'agent' && e.method === 'slow').slice(-3);
  check(closed.error?.message === 'ACP connection closed' && closed.elapsed < 200,
    'ending the client stream rejects its pending request with Error("ACP connection closed")', closed);
  check(!closedEvents.some((e) => e.event === 'abort'), "a MessagePort has no close event: the agent's handler is not aborted", closedEvents);

  check(pageErrors.length === 0, 'no page errors', pageErrors);
  if (wireOut) {
    const all = await wire();
    mkdirSync(dirname(wireOut), { recursive: true });
    writeFileSync(wireOut, JSON.stringify(all.filter((m) => m.dir === 'out').map((m) => ({ ms: Math.round(m.at), from: m.side, msg: m.msg })), null, 1));
    console.log(`sanity: wrote the transcript to ${wireOut}`);
  }
} finally {
  await browser.close();
  server.close();
}
if (failures) {
  console.log(`sanity: ${failures} check(s) failed`);
  process.exit(1);
}
console.log('sanity: ok');
