// The Tesseron conformance fixtures replayed against our AbpApp (dialect 'tesseron'), run by
// tests/tesseron_conformance.rs in headless Chrome and Firefox. The runner
// (tests/interop/tesseron/conformance_runner.py --listen) plays the gateway: it serves the fixtures to run over
// HTTP, and for each one this page stands up the app the fixture describes, dials ws://…/<fixture id> with
// `reconnect` on (as a real app would), and waits for the runner's verdict before the next one.
import { AbpApp, WebSocketTransport } from '/wasm-bindgen-test';
import { pageErrors, sleep } from './helpers.js';

/** The app sends at most about two progress updates a second and coalesces faster ones to the latest (the
 * protocol's rate); a fixture's updates are spaced as a long task's would be, so each one goes out. */
const PROGRESS_SPACING_MS = 550;

/** The app a fixture's `fixture` block describes: actions { name, description?, inputSchema?, returns?,
 * blocksUntilCancelled?, progress?, confirms?, returnsConfirmResult?, assertHandlerNotCalled? }. Resources are
 * not in it: an ABP app has none (those fixtures are skipped by the runner). */
function appFor(fixture, called) {
  const app = new AbpApp({ id: 'conformance', name: 'abp-wasm conformance app', version: '1.0.0' });
  for (const action of fixture.actions ?? []) {
    app.register(action.name, async (input, ctx) => {
      called.push(action.name);
      for (const [i, p] of (action.progress ?? []).entries()) {
        if (i > 0) await sleep(PROGRESS_SPACING_MS);
        ctx.progress({ progress: p.percent, total: 100, ...(p.message === undefined ? {} : { status: p.message }) });
      }
      if (action.blocksUntilCancelled) {
        await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      }
      if (action.confirms !== undefined) {
        const answer = await ctx.elicit({ method: 'elicitation/confirm', params: { message: action.confirms } });
        const confirmed = answer.success === true && answer.data?.confirmed === true;
        if (action.returnsConfirmResult) return { confirmed };
      }
      return action.returns;
    }, { description: action.description ?? '', ...(action.inputSchema ? { inputSchema: action.inputSchema } : {}) });
  }
  return app;
}

/** Replays every fixture the runner at `base` (ws://127.0.0.1:PORT/) serves; fails listing those that failed. */
export async function replayConformance(base) {
  const http = base.replace(/^ws/, 'http');
  const fixtures = await (await fetch(new URL('fixtures', http))).json();
  if (fixtures.length === 0) throw new Error('the runner served no fixtures');
  const failed = [];
  for (const { id, fixture } of fixtures) {
    const called = [];
    const app = appFor(fixture, called);
    const transport = await WebSocketTransport.connect(new URL(id, base).href, {
      protocols: ['tesseron-gateway'],
      reconnect: { initialDelay: 50, maxDelay: 500 },
    });
    app.listen(transport, { dialect: 'tesseron' });
    const verdict = await (await fetch(new URL(`result/${id}`, http))).json();
    app.close();
    const forbidden = (fixture.actions ?? []).filter((a) => a.assertHandlerNotCalled && called.includes(a.name));
    if (verdict.status !== 'pass') failed.push(`${id}: ${verdict.detail}`);
    else if (forbidden.length) failed.push(`${id}: the handler of ${forbidden[0].name} ran, and must not have`);
    console.log(`${verdict.status === 'pass' && !forbidden.length ? 'pass' : 'FAIL'} ${id}`);
  }
  if (pageErrors.length) failed.push(`uncaught errors on the page: ${pageErrors.join('; ')}`);
  if (failed.length) throw new Error(`${failed.length} of ${fixtures.length} fixtures failed:\n${failed.join('\n')}`);
}
