// Tesseron interop cases, run by tests/tesseron.rs in headless Chrome and Firefox: our AbpClient as the gateway
// (dialect 'tesseron'), dialing a Python app built with PyPI `tesseron` 0.2.0 (tests/interop/tesseron/app.py,
// started on 127.0.0.1 by scripts/tesseron-app.sh, which makes its venv). The app serves one gateway at a time.
import { AbpClient, WebSocketTransport } from '/wasm-bindgen-test';
import { assert, eq, fail, pageErrors, runNamed, sleep, until } from './helpers.js';

const GATEWAY = { agent: { name: 'abp-wasm-gateway', version: '1.0.0' }, dialect: 'tesseron' };

async function gateway(url) {
  const socket = await WebSocketTransport.connect(url, { protocols: ['tesseron-gateway'] });
  eq(socket.protocol, 'tesseron-gateway', 'the subprotocol');
  return AbpClient.connect(socket, GATEWAY);
}

const events = async (abp) => (await abp.call('events', {})).data;

export async function gatewayInvokesThePythonApp(url) {
  const abp = await gateway(url);
  eq(abp.app.name, 'ABP interop app', 'the hello introduced the app');
  eq(abp.listCapabilities().map((c) => c.name).sort(), ['add', 'echo', 'events', 'exit', 'fail', 'slow', 'timeout'], 'actions from the hello');
  eq(abp.describeCapability('timeout').timeoutMs, 300, 'with their timeoutMs');
  eq((await abp.call('echo', { x: [1, 'two'] })).data, { x: [1, 'two'] }, 'actions/invoke → { invocationId, output }');
  eq((await abp.call('add', { a: 2, b: 3 })).data, { sum: 5 }, 'typed input');
  const bad = await abp.call('add', { a: 'two' });
  eq([bad.success, bad.error.code, bad.error.details.jsonrpc.code], [false, 'INVALID_PARAMS', -32004], 'bad input: -32004');
  assert(Array.isArray(bad.error.details.jsonrpc.data), 'with the validation issues');
  const unknown = await abp.call('nope', {});
  eq([unknown.error.code, unknown.error.details.jsonrpc.code], ['UNKNOWN_CAPABILITY', -32003], 'an unknown action: -32003');
  const refused = await abp.call('fail', { kind: 'handler' });
  eq([refused.error.code, refused.error.message], ['OPERATION_FAILED', 'the handler refused'], '-32005');
  const internal = await abp.call('fail', { kind: 'internal' });
  eq([internal.error.code, internal.error.message], ['INTERNAL_ERROR', 'Internal error'], '-32603, nothing leaked');
  // Progress, percent rising.
  const progress = [];
  const slow = await abp.call('slow', { steps: 3, intervalMs: 40 }, { onProgress: (p) => progress.push(p.progress) });
  eq([slow.success, progress], [true, [33, 67, 100]], 'actions/progress');
  // The app's own action timeout: -32002 → TIMEOUT.
  const t0 = performance.now();
  const timed = await abp.call('timeout', {});
  eq([timed.success, timed.cancelled, timed.error.code, timed.error.retryable], [false, true, 'TIMEOUT', true], '-32002');
  assert(performance.now() - t0 < 2000, 'after the app\'s 300 ms, not the handler\'s 5 s');
  await abp.shutdown();
  eq(pageErrors, [], 'no uncaught errors on the page');
}

export async function gatewayCancelsAnInvocation(url) {
  const abp = await gateway(url);
  const controller = new AbortController();
  const pending = abp.call('slow', { steps: 50, intervalMs: 100 }, { signal: controller.signal, callId: 'inv-cancel' });
  await sleep(250);
  const t0 = performance.now();
  controller.abort('user stop');
  const r = await pending;
  eq([r.success, r.cancelled, r.error.code, r.error.details.jsonrpc.code], [false, true, 'CANCELLED', -32001], 'actions/cancel → -32001');
  assert(performance.now() - t0 < 500, 'answered at once');
  const seen = await events(abp);
  const cancelled = seen.find((e) => e.event === 'cancelled' && e.invocationId === 'inv-cancel');
  assert(cancelled, `the Python handler saw the cancel: ${JSON.stringify(seen.slice(-3))}`);
  // tesseron 0.2.0 sets ctx.cancellation and then cancels the handler's task. A handler waiting on the signal
  // reports it; one caught in another await (sending its progress, slower on a busy machine) gets
  // CancelledError with the signal already set. Either way it was our actions/cancel; a lost connection would
  // leave the signal unset.
  assert(cancelled.via === 'ctx.cancellation' || (cancelled.via === 'asyncio.CancelledError' && cancelled.ctxCancelled === true),
    `through ctx.cancellation: ${JSON.stringify(cancelled)}`);
  // Our own timeout cancels the same way and says TIMEOUT.
  const timed = await abp.call('slow', { steps: 50, intervalMs: 100 }, { timeout: 150, callId: 'inv-timeout' });
  eq([timed.cancelled, timed.error.code], [true, 'TIMEOUT'], 'our timeout');
  const later = await events(abp);
  assert(later.some((e) => e.event === 'cancelled' && e.invocationId === 'inv-timeout'), 'the handler saw that cancel too');
  await abp.shutdown();
}

export async function theAppGoingAwaySettlesWithinASecond(url) {
  const abp = await gateway(url);
  // The Python SDK runs one invocation at a time here: ask for the exit first, due while `slow` runs.
  const exiting = Date.now() + 300;
  await abp.call('exit', { afterMs: 300 });
  const pending = abp.call('slow', { steps: 100, intervalMs: 100 });
  await sleep(Math.max(0, exiting - Date.now()));
  const t0 = performance.now();
  const r = await pending;
  // A socket without `reconnect` does not come back: not retryable on this client.
  eq([r.success, r.error.code, r.error.retryable], [false, 'DISCONNECTED', false], 'DISCONNECTED');
  assert(performance.now() - t0 < 1000, `within 1 s (${Math.round(performance.now() - t0)} ms)`);
  eq(abp.connected, false, 'the client is closed');
  // The test script restarts the app: wait until it answers again, so later cases find it.
  for (let i = 0; i < 100; i++) {
    try {
      const again = await gateway(url);
      await again.shutdown();
      return;
    } catch (_) {
      await sleep(100);
    }
  }
  fail('the app did not come back');
}

const cases = { gatewayInvokesThePythonApp, gatewayCancelsAnInvocation, theAppGoingAwaySettlesWithinASecond };

export async function runCase(name, url) {
  if (!url) fail('TESSERON_APP_URL is not set: run scripts/test.sh, which starts the Python app');
  await runNamed({ [name]: () => cases[name](url) }, name, 30000, () => {});
}
