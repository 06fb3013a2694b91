// Proves the interop harness works before our code is in it: the official MCP SDK Client (host.html) talks to the
// official McpServer (server.html, a cross-origin iframe) through @mcp-b/transports, in headless Chromium.
// Checks listTools, callTool, isError, progress with resetTimeoutOnProgress, maxTotalTimeout, abort through the
// SDK's signal (the server's extra.signal aborts, no response is sent), timeout, ping, list_changed and
// elicitation. `--wire FILE` also writes the whole transcript (both directions, with timestamps) as JSON.
// Runs it all twice: through @mcp-b/transports' MCP-B envelope, then bare JSON-RPC through ext-apps' PostMessageTransport.
// Usage: node tests/interop/mcp-sdk/sanity.mjs [--wire target/mcp-wire.json] [--envelope-only | --bare-only]
//        (builds the bundles first; --wire writes FILE and FILE-bare.json)
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
  console.log(`sanity: ${ok ? 'ok  ' : 'FAIL'} ${what}${detail === undefined ? '' : ` ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`);
};
// Both framings: the MCP-B envelope (@mcp-b/transports) and bare JSON-RPC objects (ext-apps' PostMessageTransport).
const framings = process.argv.includes('--bare-only') ? ['bare'] : process.argv.includes('--envelope-only') ? ['envelope'] : ['envelope', 'bare'];
try {
  for (const framing of framings) {
    console.log(`sanity: == ${framing === 'bare' ? 'bare JSON-RPC (ext-apps PostMessageTransport)' : 'MCP-B envelope (@mcp-b/transports)'}`);
    const page = await browser.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(`http://127.0.0.1:${port}/tests/interop/mcp-sdk/host.html${framing === 'bare' ? '?framing=bare' : ''}`);
    await page.waitForFunction(() => window.connected, null, { timeout: 15000 });
    await page.evaluate(() => window.connected);
    const frame = page.frame({ url: /server\.html/ });
    check(new URL(frame.url()).hostname === 'localhost', 'the server iframe is on the other origin', frame.url());
    // @mcp-b/transports 4 imports @mcp-b/webmcp-ts-sdk (and its polyfill's schema module); loading the bundles must
    // not install the WebMCP polyfill (navigator.modelContext) in either page.
    const polyfilled = [await page.evaluate(() => 'modelContext' in navigator), await frame.evaluate(() => 'modelContext' in navigator)];
    check(!polyfilled[0] && !polyfilled[1], 'the bundles leave navigator.modelContext alone', polyfilled);
    const caps = await page.evaluate(() => ({ server: client.getServerCapabilities(), info: client.getServerVersion() }));
    check(caps.server?.tools?.listChanged === true, 'initialize: the server declares tools.listChanged', caps);

    // An error thrown by the SDK arrives in the page as an McpError; keep its code, message and data.
    await page.evaluate(() => {
      window.settle = (p) => p.then((value) => ({ value }), (e) => ({ error: { name: e?.name, code: e?.code, message: e?.message, data: e?.data } }));
    });

    const tools = await page.evaluate(() => client.listTools());
    const names = tools.tools.map((t) => t.name).sort();
    check(JSON.stringify(names) === JSON.stringify(['add', 'ask', 'echo', 'fail', 'slow']), 'listTools', names);
    const echo = tools.tools.find((t) => t.name === 'echo');
    check(echo.inputSchema?.type === 'object' && echo.inputSchema.properties?.text?.type === 'string', 'echo inputSchema', echo.inputSchema);

    const echoed = await page.evaluate(() => settle(client.callTool({ name: 'echo', arguments: { text: 'hello' } })));
    check(echoed.value?.content?.[0]?.text === 'hello' && !echoed.value.isError, 'callTool echo', echoed);

    const added = await page.evaluate(() => settle(client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })));
    check(added.value?.structuredContent?.sum === 5, 'callTool add (outputSchema, structuredContent)', added);

    const badArgs = await page.evaluate(() => settle(client.callTool({ name: 'echo', arguments: { text: 5 } })));
    check(badArgs.value?.isError === true && /Input validation error/.test(badArgs.value.content[0].text),
      'invalid arguments: McpServer answers a result with isError (not a JSON-RPC error)', badArgs);

    const unknown = await page.evaluate(() => settle(client.callTool({ name: 'nope', arguments: {} })));
    check(unknown.value?.isError === true && /Tool nope not found/.test(unknown.value.content[0].text),
      'unknown tool: McpServer answers a result with isError (not a JSON-RPC error)', unknown);

    const failed = await page.evaluate(() => settle(client.callTool({ name: 'fail', arguments: {} })));
    check(failed.value?.isError === true && failed.value.content[0].text === 'boom: the handler failed', 'handler error -> isError', failed);

    const pong = await page.evaluate(() => settle(client.ping()));
    check(pong.value && Object.keys(pong.value).length === 0, 'ping -> {}', pong);

    // Progress: 4 steps of 150 ms with timeout 400 ms only succeed because each progress resets the timer.
    const progress = await page.evaluate(async () => {
      const events = [];
      const r = await settle(client.callTool({ name: 'slow', arguments: { steps: 4, ms: 150 } }, undefined,
        { onprogress: (p) => events.push(p), timeout: 400, resetTimeoutOnProgress: true }));
      return { ...r, events };
    });
    check(progress.value?.content?.[0]?.text === 'done after 4 steps' && progress.events.length === 4
      && progress.events[3].progress === 4 && progress.events[3].total === 4, 'progress + resetTimeoutOnProgress (600 ms of work, 400 ms timeout)', progress);

    // maxTotalTimeout is only checked when progress arrives: the first progress after 500 ms rejects the call.
    const maxTotal = await page.evaluate(async () => {
      const t0 = performance.now();
      const r = await settle(client.callTool({ name: 'slow', arguments: { steps: 20, ms: 150 } }, undefined,
        { onprogress: () => {}, timeout: 400, resetTimeoutOnProgress: true, maxTotalTimeout: 500 }));
      return { ...r, elapsed: Math.round(performance.now() - t0) };
    });
    check(maxTotal.error?.code === -32001 && /Maximum total timeout exceeded/.test(maxTotal.error.message) && maxTotal.elapsed >= 500,
      'maxTotalTimeout -> McpError -32001 at the first progress after it', maxTotal);
    // It sends no notifications/cancelled when it rejects; but _resetTimeout drops the timeout entry without clearing
    // its timer (protocol.js), so that timer still fires `timeout` ms after the last reset and sends
    // notifications/cancelled with reason "McpError: MCP error -32001: Request timed out" for the settled call.
    const maxTotalId = await frame.evaluate(() => calls.filter((c) => c.name === 'slow').at(-1).requestId);
    const cancelsFor = (id) => frame.evaluate((id) => wire.filter((m) => m.msg?.method === 'notifications/cancelled'
      && m.msg.params.requestId === id).map((m) => ({ at: m.at, reason: m.msg.params.reason })), id);
    const cancelledAtReject = (await cancelsFor(maxTotalId)).length;
    await page.waitForTimeout(500);
    const lateCancels = await cancelsFor(maxTotalId);
    const maxTotalAbort = await frame.evaluate((id) => aborts.find((a) => a.requestId === id), maxTotalId);
    check(cancelledAtReject === 0 && lateCancels.length === 1 && lateCancels[0].reason === 'McpError: MCP error -32001: Request timed out'
      && maxTotalAbort?.reason === lateCancels[0].reason,
    'maxTotalTimeout: no notifications/cancelled when it rejects; the leaked per-request timer sends one later ("Request timed out")',
    { requestId: maxTotalId, cancelledAtReject, lateCancels: lateCancels.length, reason: lateCancels[0]?.reason });

    // Abort through the SDK's signal: notifications/cancelled, the server's extra.signal aborts with the reason, and
    // the server sends no response for that request.
    const abort = await page.evaluate(async () => {
      const ac = new AbortController();
      const p = settle(client.callTool({ name: 'slow', arguments: { steps: 50, ms: 100 } }, undefined, { signal: ac.signal, onprogress: () => {} }));
      await new Promise((r) => setTimeout(r, 250));
      const t0 = performance.now();
      ac.abort('user pressed stop');
      const r = await p;
      return { ...r, settleMs: Math.round(performance.now() - t0) };
    });
    await page.waitForTimeout(400);
    const abortSeen = await frame.evaluate(() => ({ abort: aborts.at(-1), call: calls.at(-1) }));
    check(abort.error?.code === -32001 && abort.error.message === 'MCP error -32001: user pressed stop' && abort.settleMs < 50,
      'abort: callTool rejects at once with McpError(-32001, String(signal.reason))', abort);
    check(abortSeen.abort?.requestId === abortSeen.call.requestId && abortSeen.abort.reason === 'user pressed stop',
      'abort: the server handler\'s extra.signal aborts with the reason string', abortSeen.abort);
    const abortId = abortSeen.call.requestId;
    const responsesAfterAbort = await page.evaluate((id) => wire.filter((m) => m.msg?.id === id).length, abortId);
    check(responsesAfterAbort === 0, 'abort: no response frame for the cancelled request', { requestId: abortId, responsesAfterAbort });

    // Timeout: -32001 "Request timed out"; the server sees notifications/cancelled with the McpError as its reason.
    const timeout = await page.evaluate(async () => {
      const t0 = performance.now();
      const r = await settle(client.callTool({ name: 'slow', arguments: { steps: 50, ms: 100 } }, undefined, { timeout: 300 }));
      return { ...r, elapsed: Math.round(performance.now() - t0) };
    });
    await page.waitForTimeout(300);
    const timeoutSeen = await frame.evaluate(() => ({ abort: aborts.at(-1), call: calls.at(-1) }));
    check(timeout.error?.code === -32001 && timeout.error.message === 'MCP error -32001: Request timed out' && timeout.error.data?.timeout === 300,
      'timeout: McpError -32001 Request timed out, data {timeout}', timeout);
    check(timeoutSeen.abort?.requestId === timeoutSeen.call.requestId && timeoutSeen.abort.reason === 'McpError: MCP error -32001: Request timed out',
      'timeout: the server handler\'s extra.signal aborts with reason "McpError: MCP error -32001: Request timed out"', timeoutSeen.abort);

    // Elicitation: the server's tool asks, the host's Client (capabilities.elicitation) answers.
    const asked = await page.evaluate(() => settle(client.callTool({ name: 'ask', arguments: { question: 'Proceed?' } })));
    check(asked.value?.content?.[0]?.text === JSON.stringify({ action: 'accept', content: { answer: 'yes' } }), 'elicitation/create answered by the Client', asked);

    // Elicitation dies with its call: the server's handler passed extra.signal to elicitInput, so aborting the
    // tools/call makes the server send notifications/cancelled for its elicitation/create too, and the Client's
    // elicitation handler sees extra.signal abort (this is the server's second request, id 1: the SDK ignores
    // notifications/cancelled for requestId 0).
    const nested = await page.evaluate(async () => {
      let seen;
      const handlerAborted = new Promise((ok) => {
        window.elicitAnswer = (params, extra) => new Promise((answer) => {
          seen = extra.requestId;
          extra.signal.addEventListener('abort', () => { ok(String(extra.signal.reason)); answer({ action: 'cancel' }); }, { once: true });
        });
      });
      const ac = new AbortController();
      const p = settle(client.callTool({ name: 'ask', arguments: { question: 'Wait?' } }, undefined, { signal: ac.signal }));
      while (seen === undefined) await new Promise((r) => setTimeout(r, 10));
      ac.abort('user gave up');
      const call = await p;
      const reason = await Promise.race([handlerAborted, new Promise((r) => setTimeout(() => r('(not aborted)'), 1000))]);
      await new Promise((r) => setTimeout(r, 100));
      const cancels = wire.filter((m) => m.msg?.method === 'notifications/cancelled').map((m) => m.msg.params);
      return { call, elicitationId: seen, handlerReason: reason, cancels };
    });
    const nestedAnswers = await frame.evaluate((id) => wire.filter((m) => m.msg?.id === id && ('result' in m.msg || 'error' in m.msg)).length, nested.elicitationId);
    check(nested.call.error?.message === 'MCP error -32001: user gave up' && nested.cancels.some((c) => c.requestId === nested.elicitationId && c.reason === 'user gave up')
      && nested.handlerReason === 'user gave up' && nestedAnswers === 0,
    'elicitation cancelled with its call: notifications/cancelled server->client, the Client handler aborts, no answer is sent', { ...nested, nestedAnswers });

    // list_changed: registering a tool in the iframe makes the Client refresh its list (listChanged.tools option).
    await frame.evaluate(() => window.addTool('late_tool'));
    await page.waitForFunction(() => listChanges.length > 0, null, { timeout: 3000 });
    const changes = await page.evaluate(() => listChanges);
    check(changes.at(-1).names?.includes('late_tool'), 'notifications/tools/list_changed -> Client re-lists tools', changes);

    const errs = await page.evaluate(() => clientErrors);
    check(pageErrors.length === 0, 'no page errors', pageErrors);
    console.log(`sanity: Client.onerror saw ${errs.length} error(s)${errs.length ? `: ${errs.map((e) => e.error).join(' | ')}` : ''}`);

    if (wireOut) {
      const file = framing === 'bare' ? wireOut.replace(/(\.json)?$/, '-bare.json') : wireOut;
      const toServer = (await frame.evaluate(() => wire)).map((m) => ({ ...m, dir: 'host->iframe' }));
      const toClient = (await page.evaluate(() => wire)).map((m) => ({ ...m, dir: 'iframe->host' }));
      const all = [...toServer, ...toClient].sort((a, b) => a.at - b.at);
      const t0 = all[0]?.at ?? 0;
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(all.map((m) => ({ ms: Math.round(m.at - t0), dir: m.dir, origin: m.origin, data: m.data })), null, 1));
      console.log(`sanity: wrote ${all.length} messages to ${file}`);
    }
    await page.close();
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
