// The browser app behind `abp-peer mcp` (tests/mcp_gateway.rs; driven by tests/interop/mcp-gateway/run.mjs, where
// the official MCP SDK's Client is the host). Three phases, each started by the host:
//   1. app A joins and serves: echo, fail, steps (progress), slow (waits for its signal), confirm (elicitation),
//      grow (registers one more capability at run time), events (what the handlers saw), leave;
//   2. `leave` makes app A go away while a call runs (the host must get an isError at once);
//   3. app B joins; the host goes away while B's `slow` runs: its signal must abort with the gateway's reason
//      (a cancel, not just the socket closing), and the page checks that itself.
import { AbpApp, WebSocketTransport } from '/wasm-bindgen-test';
import { fail, pageErrors, sleep } from './helpers.js';

/** Epoch milliseconds with the fraction the platform gives (the host compares them with its own clock). */
const epochMs = () => performance.timeOrigin + performance.now();

function slow(seen) {
  return (params, ctx) => new Promise((resolve, reject) => {
    seen.push({ event: 'started', tag: params.tag ?? null, at: epochMs() });
    ctx.signal.addEventListener('abort', () => {
      const reason = ctx.signal.reason;
      seen.push({ event: 'aborted', tag: params.tag ?? null, at: epochMs(), reason: String(reason?.message ?? reason) });
      reject(reason);
    });
  });
}

function appA(seen, leave) {
  const app = new AbpApp({ id: 'com.example.gateway-test', name: 'Gateway test app', version: '1.0.0' });
  app.register('echo', (params) => params, {
    description: 'Returns its arguments',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  });
  app.register('fail', () => { throw { code: 'PERMISSION_DENIED', message: 'not allowed here' }; }, { description: 'Always refuses' });
  app.register('steps', async (params, ctx) => {
    for (let i = 1; i <= params.n; i++) {
      await sleep(30);
      ctx.progress({ progress: i, total: params.n, status: `step ${i} of ${params.n}` });
    }
    return { done: params.n };
  }, { description: 'Reports progress n times' });
  app.register('slow', slow(seen), { description: 'Runs until cancelled' });
  app.register('confirm', async (params, ctx) => {
    const answer = await ctx.elicit({ method: 'elicitation/confirm', params: { message: params.message } });
    return { answer };
  }, { description: 'Asks the user' });
  app.register('grow', () => {
    app.register('extra', () => ({ extra: true }), { description: 'Registered at run time' });
    return { ok: true };
  }, { description: 'Adds a capability' });
  app.register('hidden', () => ({}), { description: 'Not available', available: false });
  app.register('events', () => seen.slice(), { description: 'What the handlers saw' });
  app.register('leave', (params) => { setTimeout(leave, params.afterMs ?? 0); return { leaving: true }; }, { description: 'The app goes away' });
  return app;
}

/** Serves the three phases; resolves when the host has gone away and app B saw its call cancelled. */
export async function serveTheGateway(url) {
  const seen = [];
  let leave;
  const left = new Promise((r) => { leave = r; });
  const a = appA(seen, leave);
  a.listen(await WebSocketTransport.connect(url));
  await left;
  a.close();

  // Phase 3: app B; the host going away must cancel its running call.
  const seenB = [];
  const b = new AbpApp({ id: 'com.example.gateway-test-b', name: 'Gateway test app B', version: '1.0.0' });
  b.register('slow', slow(seenB), { description: 'Runs until cancelled' });
  // The gateway lets app A's room go when it sees A's socket close; until then a new app is refused (the first
  // app wins), so B asks again, as a reloaded page's reconnect would.
  let socket;
  for (let i = 0; !socket; i++) {
    try {
      socket = await WebSocketTransport.connect(url);
    } catch (e) {
      if (i > 100) fail(`app B could not join after app A left: ${e}`);
      await sleep(20);
    }
  }
  b.listen(socket);
  const t0 = performance.now();
  while (!seenB.some((e) => e.event === 'aborted')) {
    if (performance.now() - t0 > 120000) fail('the host went away but the running call was never aborted');
    await sleep(10);
  }
  b.close();
  const aborted = seenB.find((e) => e.event === 'aborted');
  if (!/MCP host went away/.test(aborted.reason)) {
    fail(`the call ended without the gateway's cancel (reason: ${aborted.reason})`);
  }
  if (pageErrors.length) fail(`uncaught errors on the page: ${pageErrors.join('; ')}`);
}
