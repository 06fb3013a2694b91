// abp-reference: the window.abp contract (docs/DESIGN.md, section 7) checked by a client written from the ABP API reference
// alone, the way a Puppeteer/Playwright agent or the reference MCP bridge drives an ABP app page: Playwright
// exposes __abp_progress, __abp_notification, __abp_elicitation and __abp_capabilities_changed before navigating
// (or, for the bridge, installs window.abp.onNotification/onProgress/onElicitation/onCapabilitiesChanged), then
// calls only the reference's methods on window.abp. Covers: the bootstrap (calls made before wasm loads are
// answered once exposeGlobal() runs), the live properties, every method returning a Promise, descriptors with
// defaults, supports(), call() without params, the page-enforced timeout, the error table (NOT_INITIALIZED,
// UNKNOWN_CAPABILITY, a thrown error's retryAfter/alternatives/details, docs-shaped results,
// CAPABILITY_UNAVAILABLE, REQUIREMENT_NOT_MET), both forms of cancel(), progress and notifyProgress(), notify(),
// the four registrars, elicitation, capability changes after the handshake (register, unregister, update),
// re-initialize, shutdown(), a wrong major version, and the agreed features.
// Run by `npm test` after the release build: `node tests/abp-reference/run.mjs` (needs pkg/ from `npm run build`
// and /usr/bin/chromium, or CHROMIUM=path). Prints one line per case, then `abp-reference: N passed, M failed`;
// exits 1 if any case failed. `node tests/abp-reference/run.mjs caseName…` runs only those cases.
import { existsSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { chromium } from 'playwright-core';
import { serve } from '../../www/serve.mjs';

const PAGE = '/tests/abp-reference/app.html';
const APP = { id: 'com.example.abpref', name: 'ABP reference app', version: '1.2.3' };
const INIT = {
  agent: { name: 'abp-reference', version: '1.0.0' },
  protocolVersion: '0.1',
  features: { notifications: true, progress: true, elicitation: true },
};
const CONFIRMED = { success: true, data: { confirmed: true } };
const CASE_TIMEOUT_MS = 20000;

// ---- assertions -------------------------------------------------------------------------------------------

class Failure extends Error {}

const fmt = (v) => {
  let s;
  try { s = JSON.stringify(v); } catch { s = String(v); }
  if (s === undefined) s = String(v);
  return s.length > 500 ? `${s.slice(0, 500)}…` : s;
};

function ok(cond, msg) {
  if (!cond) throw new Failure(msg);
}

function eq(actual, expected, what) {
  ok(isDeepStrictEqual(actual, expected), `${what}: expected ${fmt(expected)}, got ${fmt(actual)}`);
}

/** Fails if `r` is the marker of a page-side wait that ran out (see __refWithin). */
function settled(r, what) {
  ok(!(r && typeof r === 'object' && '__refTimedOut' in r), `${what} did not settle within ${r?.__refTimedOut} ms`);
  ok(!(r && typeof r === 'object' && '__refThrew' in r), `${what} threw/rejected: ${r?.__refThrew}`);
  return r;
}

/** An ABPResponse that failed with `code`; returns its error. */
function failedWith(r, code, what) {
  settled(r, what);
  ok(r && typeof r === 'object', `${what} must resolve to an ABPResponse, got ${fmt(r)}`);
  ok(r.success === false, `${what} must resolve success:false with ${code}, got ${fmt(r)}`);
  ok(r.error && r.error.code === code, `${what}: expected error.code ${code}, got ${fmt(r.error)}`);
  ok(typeof r.error.message === 'string', `${what}: error.message must be a string, got ${fmt(r.error)}`);
  ok(typeof r.error.retryable === 'boolean', `${what}: error.retryable must be a boolean, got ${fmt(r.error)}`);
  return r.error;
}

function succeeded(r, what) {
  settled(r, what);
  ok(r && r.success === true, `${what} must resolve success:true, got ${fmt(r)}`);
  return r;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(pred, ms = 2000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(20);
  }
  return pred();
}

// ---- the page, as an automation client opens it -----------------------------------------------------------

let browser;
let base;

/**
 * A fresh browser context and page. With `expose` (the Puppeteer way), the four callbacks are exposed before
 * navigation; what they receive is collected in `seen`. `__abp_elicitation` answers `elicitation`.
 */
async function open({ query = '', expose = true, elicitation = CONFIRMED, waitReady = true } = {}) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const h = {
    page, seen: { progress: [], notification: [], elicitation: [], changed: [] }, pageErrors: [], statuses: {},
    close: () => context.close(),
  };
  page.on('pageerror', (e) => h.pageErrors.push(String(e)));
  page.on('response', (r) => { h.statuses[new URL(r.url()).pathname] = r.status(); });
  await page.addInitScript(() => {
    // A page-side bound on every wait, so a Promise that never settles is reported, not hung on.
    window.__refWithin = (p, ms) => Promise.race([
      Promise.resolve(p),
      new Promise((resolve) => setTimeout(() => resolve({ __refTimedOut: ms }), ms)),
    ]);
  });
  if (expose) {
    await page.exposeFunction('__abp_progress', (p) => { h.seen.progress.push(p); });
    await page.exposeFunction('__abp_notification', (n) => { h.seen.notification.push(n); });
    await page.exposeFunction('__abp_elicitation', (req) => { h.seen.elicitation.push(req); return elicitation; });
    await page.exposeFunction('__abp_capabilities_changed', (c) => { h.seen.changed.push(c); });
  }
  await page.goto(`${base}${PAGE}${query}`, { waitUntil: 'domcontentloaded' });
  if (waitReady) await ready(h);
  return h;
}

/** Waits until the app page has called exposeGlobal() (it sets window.refReady). */
async function ready(h) {
  try {
    await h.page.waitForFunction(() => window.refReady === true || !!window.refError, null, { timeout: 15000 });
  } catch {
    throw new Failure(`the app page did not reach exposeGlobal() within 15 s (page errors: ${fmt(h.pageErrors)})`);
  }
  const err = await h.page.evaluate(() => window.refError);
  if (err) throw new Failure(`the app page failed before exposeGlobal(): ${err}`);
}

/** window.abp[method](...args) in the page, awaited there (bounded); a missing method or a throw is reported. */
function abp(h, method, ...args) {
  return h.page.evaluate(async ({ method, args }) => {
    const api = window.abp;
    if (!api) return { __refThrew: 'window.abp is not defined' };
    if (typeof api[method] !== 'function') return { __refThrew: `window.abp.${method} is not a function` };
    try {
      return await window.__refWithin(api[method](...args), 5000);
    } catch (e) {
      return { __refThrew: `window.abp.${method}(): ${e?.name}: ${e?.message ?? e}` };
    }
  }, { method, args });
}

const props = (h) => h.page.evaluate(() => {
  const a = window.abp;
  return { initialized: a?.initialized, sessionId: a?.sessionId, protocolVersion: a?.protocolVersion, app: a?.app };
});

const handlerLog = (h) => h.page.evaluate(() => window.refLog);
const ran = (log, name) => log.filter((e) => e.event === 'ran' && e.name === name);
const aborted = (log, callId) => log.find((e) => e.event === 'abort' && e.callId === callId);

async function initialize(h, params = INIT) {
  const r = settled(await abp(h, 'initialize', params), 'window.abp.initialize()');
  ok(r && typeof r.sessionId === 'string' && r.sessionId.length > 0,
    `window.abp.initialize() must resolve an InitializeResult with a sessionId, got ${fmt(r)}`);
  return r;
}

/** The InitializeResult shape of the API reference. */
function checkInitializeResult(r) {
  ok(typeof r.sessionId === 'string' && r.sessionId, `InitializeResult.sessionId must be a string, got ${fmt(r)}`);
  ok(typeof r.protocolVersion === 'string' && /^0\.\d+$/.test(r.protocolVersion),
    `InitializeResult.protocolVersion must be "0.x", got ${fmt(r.protocolVersion)}`);
  ok(r.app && r.app.id === APP.id && r.app.name === APP.name && r.app.version === APP.version,
    `InitializeResult.app must be the app's { id, name, version }, got ${fmt(r.app)}`);
  ok(Array.isArray(r.capabilities), `InitializeResult.capabilities must be an array, got ${fmt(r.capabilities)}`);
  const names = r.capabilities.map((c) => c?.name);
  for (const n of ['test.echo', 'test.slow', 'test.confirm']) {
    ok(names.includes(n), `InitializeResult.capabilities must list ${n}, got ${fmt(names)}`);
  }
  ok(r.features && typeof r.features === 'object' && !Array.isArray(r.features),
    `InitializeResult.features must be an object saying what was agreed, got ${fmt(r.features)}`);
}

async function checkLiveProperties(h, result) {
  const p = await props(h);
  ok(p.initialized === true, `window.abp.initialized must be true after initialize, got ${fmt(p.initialized)}`);
  ok(p.sessionId === result.sessionId,
    `window.abp.sessionId must be the InitializeResult's ${fmt(result.sessionId)}, got ${fmt(p.sessionId)}`);
  ok(p.protocolVersion === result.protocolVersion,
    `window.abp.protocolVersion must be ${fmt(result.protocolVersion)}, got ${fmt(p.protocolVersion)}`);
  ok(p.app && p.app.id === APP.id && p.app.name === APP.name && p.app.version === APP.version,
    `window.abp.app must be ${fmt(APP)}, got ${fmt(p.app)}`);
}

// ---- cases ---------------------------------------------------------------------------------------------------

/** Bootstrap: window.abp exists at DOMContentLoaded (before wasm), and initialize() made then is answered. */
async function bootstrap() {
  const h = await open({ query: '?delay=800', waitReady: false });
  try {
    const state = await h.page.evaluate(() => ({
      abp: typeof window.abp, loaded: window.refSdkLoaded, boot: window.refBootstrap }));
    ok(state.loaded === false, `test setup: the SDK was already loaded at DOMContentLoaded despite ?delay=800 (${fmt(state)})`);
    ok(state.abp === 'object',
      `window.abp must exist right after navigation, before wasm loads: the page's <head> loads /pkg/bootstrap.js ` +
      `(HTTP ${h.statuses['/pkg/bootstrap.js']}), which must define a placeholder window.abp; typeof window.abp was ${state.abp}`);
    ok(state.boot?.readyResolve === 'function',
      `/pkg/bootstrap.js must define window.__abpReadyResolve, typeof was ${state.boot?.readyResolve}`);
    const out = await h.page.evaluate(async (init) => {
      const t0 = performance.now();
      let pending;
      try { pending = window.abp.initialize(init); } catch (e) { return { threw: String(e) }; }
      const loadedAtCall = window.refSdkLoaded;
      const result = await window.__refWithin(pending, 10000).catch((e) => ({ __refThrew: String(e) }));
      return { result, loadedAtCall, ms: Math.round(performance.now() - t0), readyAfter: window.refReady === true };
    }, INIT);
    ok(!out.threw, `the placeholder's initialize() threw: ${out.threw}`);
    ok(out.loadedAtCall === false, 'test setup: the SDK had loaded before initialize() was called');
    settled(out.result, 'initialize() called before wasm loaded');
    ok(out.readyAfter, `initialize() resolved before exposeGlobal() ran: ${fmt(out.result)}`);
    checkInitializeResult(out.result);
    await checkLiveProperties(h, out.result);
    const r = await abp(h, 'call', 'test.echo', { via: 'bootstrap' });
    succeeded(r, 'call after a bootstrapped initialize');
  } finally { await h.close(); }
}

/** The basics every later case relies on: initialize, live properties, a call. */
async function initializeAndEcho() {
  const h = await open();
  try {
    const before = await props(h);
    ok(before.initialized === false, `window.abp.initialized must be false before initialize, got ${fmt(before.initialized)}`);
    ok(before.sessionId == null, `window.abp.sessionId must be null before initialize, got ${fmt(before.sessionId)}`);
    const result = await initialize(h);
    checkInitializeResult(result);
    await checkLiveProperties(h, result);
    const r = succeeded(await abp(h, 'call', 'test.echo', { text: 'hi', n: [1, 2] }), "call('test.echo')");
    eq(r.data, { text: 'hi', n: [1, 2] }, "call('test.echo').data");
    ok(typeof r.metadata?.duration === 'number', `a success carries metadata.duration, got ${fmt(r.metadata)}`);
  } finally { await h.close(); }
}

/** listCapabilities, describeCapability and supports return Promises (API reference: Promise<…>). */
async function methodsReturnPromises() {
  const h = await open();
  try {
    await initialize(h);
    const out = await h.page.evaluate(() => {
      const kinds = {};
      for (const [m, arg] of [['listCapabilities'], ['describeCapability', 'test.echo'], ['supports', 'test.echo']]) {
        try {
          const v = window.abp[m](arg);
          kinds[m] = typeof v?.then === 'function' ? 'Promise' : Array.isArray(v) ? 'Array' : typeof v;
        } catch (e) { kinds[m] = `threw ${e}`; }
      }
      return kinds;
    });
    const wrong = Object.entries(out).filter(([, k]) => k !== 'Promise');
    ok(!wrong.length, `these window.abp methods must return a Promise: ${wrong.map(([m, k]) => `${m}() returned ${k}`).join('; ')}`);
  } finally { await h.close(); }
}

/** listCapabilities() resolves a plain array of descriptors, with available/requirements/features filled. */
async function listCapabilities() {
  const h = await open();
  try {
    await initialize(h);
    const list = settled(await abp(h, 'listCapabilities'), 'listCapabilities()');
    ok(Array.isArray(list), `listCapabilities() must resolve a plain array, got ${fmt(list)}`);
    const by = Object.fromEntries(list.map((d) => [d?.name, d]));
    for (const n of ['test.echo', 'test.noArgs', 'test.slow', 'test.unavailable', 'test.needsPermission']) {
      ok(by[n], `listCapabilities() must include ${n}, got names ${fmt(Object.keys(by))}`);
    }
    const echo = by['test.echo'];
    eq(echo.description, 'Returns its params', 'test.echo description');
    eq(echo.inputSchema, { type: 'object' }, 'test.echo inputSchema');
    eq({ available: echo.available, requirements: echo.requirements, features: echo.features },
      { available: true, requirements: [], features: {} }, 'test.echo defaults (descriptor given none)');
    eq(by['test.unavailable'].available, false, 'test.unavailable.available');
    const req = by['test.needsPermission'].requirements;
    ok(Array.isArray(req) && req.length === 1 && req[0].type === 'permission' && req[0].met === false,
      `test.needsPermission.requirements must be the registered unmet permission, got ${fmt(req)}`);
  } finally { await h.close(); }
}

/** describeCapability(name) resolves the descriptor, or null for an unknown name. */
async function describeCapability() {
  const h = await open();
  try {
    await initialize(h);
    const d = settled(await abp(h, 'describeCapability', 'test.echo'), "describeCapability('test.echo')");
    ok(d && d.name === 'test.echo' && d.description === 'Returns its params',
      `describeCapability('test.echo') must resolve its descriptor, got ${fmt(d)}`);
    ok(d.available === true && Array.isArray(d.requirements),
      `describeCapability('test.echo') must have the defaults filled, got ${fmt(d)}`);
    const none = await abp(h, 'describeCapability', 'nope.missing');
    ok(none === null, `describeCapability('nope.missing') must resolve null, got ${fmt(none)}`);
  } finally { await h.close(); }
}

/** supports(name) resolves SupportInfo reflecting the descriptor. */
async function supports() {
  const h = await open();
  try {
    await initialize(h);
    const echo = settled(await abp(h, 'supports', 'test.echo'), "supports('test.echo')");
    ok(echo?.supported === true && echo.available === true,
      `supports('test.echo') must be { supported:true, available:true }, got ${fmt(echo)}`);
    const off = settled(await abp(h, 'supports', 'test.unavailable'), "supports('test.unavailable')");
    ok(off?.supported === true && off.available === false && typeof off.reason === 'string',
      `supports('test.unavailable') must be { supported:true, available:false, reason }, got ${fmt(off)}`);
    const perm = settled(await abp(h, 'supports', 'test.needsPermission'), "supports('test.needsPermission')");
    ok(perm?.supported === true && Array.isArray(perm.requirements)
      && perm.requirements.some((r) => r.type === 'permission' && r.met === false),
      `supports('test.needsPermission') must carry the unmet requirement in requirements, got ${fmt(perm)}`);
    const none = settled(await abp(h, 'supports', 'nope.missing'), "supports('nope.missing')");
    ok(none?.supported === false && none.available === false && typeof none.reason === 'string',
      `supports('nope.missing') must be { supported:false, available:false, reason }, got ${fmt(none)}`);
  } finally { await h.close(); }
}

/** call(capability) with no params: params default to {}, so an object schema with no required field passes. */
async function callWithoutParams() {
  const h = await open();
  try {
    await initialize(h);
    const r = await h.page.evaluate(() => window.__refWithin(window.abp.call('test.noArgs'), 5000)
      .catch((e) => ({ __refThrew: String(e) })));
    succeeded(r, "call('test.noArgs') with no params");
    eq(r.data?.params, {}, "the handler's params for call('test.noArgs')");
  } finally { await h.close(); }
}

/** call(…, { timeout }) is enforced by the page: cancelled, TIMEOUT (retryable), and the handler's signal aborts. */
async function callTimeout() {
  const h = await open();
  try {
    await initialize(h);
    const out = await h.page.evaluate(async () => {
      const t0 = performance.now();
      const r = await window.__refWithin(window.abp.call('test.slow', { ms: 3000, steps: 30 },
        { timeout: 200, callId: 'ref-timeout' }), 5000);
      return { r, ms: Math.round(performance.now() - t0) };
    });
    settled(out.r, "call('test.slow', …, { timeout: 200 })");
    ok(out.r.success === false && out.r.cancelled === true && out.r.error?.code === 'TIMEOUT'
      && out.r.error.retryable === true,
      `call with { timeout: 200 } must resolve { success:false, cancelled:true, error:{ code:'TIMEOUT', retryable:true } } ` +
      `(the page enforces the timeout), got after ${out.ms} ms: ${fmt(out.r)}`);
    ok(out.ms < 1000, `the timed-out call must resolve within ~1 s, took ${out.ms} ms`);
    await h.page.waitForFunction(() => window.refLog.some((e) => e.event === 'abort' && e.callId === 'ref-timeout'),
      null, { timeout: 1000 }).catch(() => {});
    ok(aborted(await handlerLog(h), 'ref-timeout'), "the timed-out handler's ctx.signal must abort");
  } finally { await h.close(); }
}

async function errorNotInitialized() {
  const h = await open();
  try {
    const r = await abp(h, 'call', 'test.echo', {});
    const e = failedWith(r, 'NOT_INITIALIZED', 'a call before initialize');
    ok(e.retryable === true, `NOT_INITIALIZED is retryable:true in the ABP error table, got ${fmt(e)}`);
    eq(ran(await handlerLog(h), 'test.echo').length, 0, 'handler runs before initialize');
  } finally { await h.close(); }
}

async function errorUnknownCapability() {
  const h = await open();
  try {
    await initialize(h);
    const e = failedWith(await abp(h, 'call', 'nope.missing', {}), 'UNKNOWN_CAPABILITY', "call('nope.missing')");
    ok(e.retryable === false, `UNKNOWN_CAPABILITY is retryable:false, got ${fmt(e)}`);
  } finally { await h.close(); }
}

/** A thrown { code, message, retryAfter, alternatives, details } keeps every field. */
async function errorThrownKeepsFields() {
  const h = await open();
  try {
    await initialize(h);
    const e = failedWith(await abp(h, 'call', 'test.rateLimited', {}), 'RATE_LIMITED', "call('test.rateLimited')");
    eq(e.message, 'Too many exports', 'RATE_LIMITED message');
    eq(e.retryable, true, 'RATE_LIMITED retryable (table default)');
    eq(e.retryAfter, 5, 'RATE_LIMITED retryAfter thrown by the handler');
    eq(e.alternatives, ['test.echo'], 'RATE_LIMITED alternatives thrown by the handler');
    eq(e.details, { limit: 10, windowSeconds: 60 }, 'RATE_LIMITED details thrown by the handler');
  } finally { await h.close(); }
}

/** A handler returning a docs-shaped { success, error } / { success, data } is taken as the response itself. */
async function errorDocsShapedResult() {
  const h = await open();
  try {
    await initialize(h);
    const r = await abp(h, 'call', 'test.docsFailure', {});
    settled(r, "call('test.docsFailure')");
    ok(r.success === false,
      `a handler returning { success:false, error } must give success:false (not success:true with it as data), got ${fmt(r)}`);
    eq({ code: r.error?.code, message: r.error?.message },
      { code: 'OPERATION_FAILED', message: 'Export failed: disk full' }, 'the returned error');
    ok(typeof r.metadata?.duration === 'number', `the SDK still adds metadata.duration, got ${fmt(r.metadata)}`);
    const s = succeeded(await abp(h, 'call', 'test.docsSuccess', {}), "call('test.docsSuccess')");
    eq(s.data, { pages: 3 }, 'a handler returning { success:true, data } gives that data');
  } finally { await h.close(); }
}

async function errorUnavailable() {
  const h = await open();
  try {
    await initialize(h);
    failedWith(await abp(h, 'call', 'test.unavailable', {}), 'CAPABILITY_UNAVAILABLE', "call('test.unavailable')");
    eq(ran(await handlerLog(h), 'test.unavailable').length, 0, 'times the unavailable handler ran');
  } finally { await h.close(); }
}

async function errorRequirementNotMet() {
  const h = await open();
  try {
    await initialize(h);
    const e = failedWith(await abp(h, 'call', 'test.needsPermission', {}), 'REQUIREMENT_NOT_MET',
      "call('test.needsPermission')");
    // `details` carries the unmet requirements: the array itself or an array field of it.
    const d = e.details;
    const arrays = Array.isArray(d) ? [d] : d && typeof d === 'object' ? Object.values(d).filter(Array.isArray) : [];
    ok(arrays.some((a) => a.some((r) => r?.type === 'permission' && r.met === false
      && r.description === 'Clipboard write access')),
      `REQUIREMENT_NOT_MET must carry the unmet requirements in details, got ${fmt(d)}`);
    eq(ran(await handlerLog(h), 'test.needsPermission').length, 0, 'times the handler with an unmet requirement ran');
  } finally { await h.close(); }
}

/** cancel during a slow call, in either form: { cancelled:true }, the call resolves cancelled, the signal aborts. */
async function cancelCase(form) {
  const h = await open();
  try {
    await initialize(h);
    const out = await h.page.evaluate(async (form) => {
      const callId = `ref-cancel-${form}`;
      const reason = 'agent changed its mind';
      const p = window.abp.call('test.slow', { ms: 4000, steps: 40 }, { callId });
      await new Promise((r) => setTimeout(r, 150));
      let c;
      try {
        c = await window.__refWithin(form === 'positional'
          ? window.abp.cancel(callId, reason) : window.abp.cancel({ callId, reason }), 2000);
      } catch (e) { c = { __refThrew: `${e?.name}: ${e?.message ?? e}` }; }
      const t0 = performance.now();
      const r = await window.__refWithin(p, 2000);
      return { c, r, ms: Math.round(performance.now() - t0), log: window.refLog, callId, reason };
    }, form);
    const how = form === 'positional' ? 'cancel(callId, reason)' : 'cancel({ callId, reason })';
    settled(out.c, how);
    ok(out.c?.cancelled === true, `${how} during a running call must resolve { cancelled:true }, got ${fmt(out.c)}`);
    settled(out.r, `the call cancelled by ${how}`);
    ok(out.r.success === false && out.r.cancelled === true && out.r.error?.code === 'CANCELLED',
      `the call cancelled by ${how} must resolve { success:false, cancelled:true, error:{ code:'CANCELLED' } }, got ${fmt(out.r)}`);
    ok(out.ms < 1000, `the cancelled call must resolve at once, took ${out.ms} ms after the cancel`);
    const a = aborted(out.log, out.callId);
    ok(a, `the handler's ctx.signal must abort on ${how}`);
    ok(a.reason.includes(out.reason), `the handler's signal must abort with the agent's reason, got ${fmt(a.reason)}`);
  } finally { await h.close(); }
}
const cancelPositional = () => cancelCase('positional');
const cancelObject = () => cancelCase('object');

/** A call with a progressToken: ProgressInfo reaches __abp_progress, the final state included. */
async function progressWithToken() {
  const h = await open();
  try {
    await initialize(h);
    const r = await abp(h, 'call', 'test.slow', { ms: 300, steps: 3 }, { progressToken: 'ref-token', callId: 'ref-progress' });
    succeeded(r, "call('test.slow', …, { progressToken })");
    await until(() => h.seen.progress.at(-1)?.progress === 3);
    ok(h.seen.progress.length > 0, '__abp_progress must receive ProgressInfo for a call with a progressToken; it got nothing');
    for (const p of h.seen.progress) {
      ok(typeof p?.progress === 'number', `ProgressInfo.progress must be a number, got ${fmt(p)}`);
      ok(p.operationId === 'ref-token' || p.progressToken === 'ref-token' || p.callId === 'ref-progress',
        `ProgressInfo must name its operation (operationId/progressToken 'ref-token' or callId 'ref-progress'), got ${fmt(p)}`);
    }
    const last = h.seen.progress.at(-1);
    ok(last.progress === 3 && last.total === 3, `the final progress state (3 of 3) must be delivered, last was ${fmt(last)}`);
  } finally { await h.close(); }
}

/** A call without a progressToken gets no progress messages (progress is sent only for calls that carry one). */
async function progressOnlyWithToken() {
  const h = await open();
  try {
    await initialize(h);
    succeeded(await abp(h, 'call', 'test.slow', { ms: 300, steps: 3 }), "call('test.slow') without progressToken");
    await sleep(300);
    eq(h.seen.progress, [], '__abp_progress calls for a call without a progressToken');
  } finally { await h.close(); }
}

/** notifyProgress({ operationId, progress, total }) from the page reaches __abp_progress, operationId kept. */
async function notifyProgressOperationId() {
  const h = await open();
  try {
    await initialize(h);
    const r = await abp(h, 'notifyProgress', { operationId: 'export-42', progress: 3, total: 10, status: 'page 3' });
    ok(!(r && typeof r === 'object' && '__refThrew' in r), `notifyProgress() threw: ${r?.__refThrew}`);
    await until(() => h.seen.progress.length > 0);
    const p = h.seen.progress[0];
    ok(p, "notifyProgress({ operationId:'export-42', … }) must reach __abp_progress; it got nothing");
    ok(p.operationId === 'export-42' && p.progress === 3 && p.total === 10,
      `__abp_progress must get { operationId:'export-42', progress:3, total:10 }, got ${fmt(p)}`);
  } finally { await h.close(); }
}

/** notify(event, data) from the page, and ctx.notify from a handler, reach __abp_notification({ event, data }). */
async function notify() {
  const h = await open();
  try {
    await initialize(h);
    await abp(h, 'notify', 'doc.saved', { id: 7 });
    await until(() => h.seen.notification.some((n) => n?.event === 'doc.saved'));
    const n = h.seen.notification.find((x) => x?.event === 'doc.saved');
    ok(n, `window.abp.notify('doc.saved', …) must reach __abp_notification; it got ${fmt(h.seen.notification)}`);
    eq(n.data, { id: 7 }, "__abp_notification's data for notify('doc.saved', { id: 7 })");
    succeeded(await abp(h, 'call', 'test.tell', {}), "call('test.tell')");
    await until(() => h.seen.notification.some((x) => x?.event === 'job.note'));
    const m = h.seen.notification.find((x) => x?.event === 'job.note');
    ok(m, `ctx.notify('job.note', …) in a handler must reach __abp_notification; it got ${fmt(h.seen.notification)}`);
    eq(m.data, { from: 'test.tell' }, "__abp_notification's data for ctx.notify('job.note', …)");
  } finally { await h.close(); }
}

/**
 * The reference MCP bridge's way: no exposed functions; window.abp.<registrar>(cb) after initialize.
 * `install` runs in the page with the registrar's name and records into window.refSeen[key].
 */
async function registrarCase(registrar, trigger, check) {
  const h = await open({ expose: false });
  try {
    await initialize(h);
    const missing = await h.page.evaluate((registrar) => {
      window.refSeen = [];
      if (typeof window.abp[registrar] !== 'function') return `window.abp.${registrar} is not a function`;
      window.abp[registrar]((event) => {
        window.refSeen.push(event);
        return registrar === 'onElicitation' ? { success: true, data: { confirmed: true } } : undefined;
      });
      return null;
    }, registrar);
    ok(!missing, `${missing} (the reference MCP bridge registers its callbacks this way)`);
    const result = await trigger(h);
    await h.page.waitForFunction(() => window.refSeen.length > 0, null, { timeout: 2000 }).catch(() => {});
    const seen = await h.page.evaluate(() => window.refSeen);
    ok(seen.length > 0, `the callback given to window.abp.${registrar} was never called`);
    check(seen, result);
  } finally { await h.close(); }
}

const registrarOnNotification = () => registrarCase('onNotification',
  (h) => abp(h, 'notify', 'doc.saved', { id: 7 }),
  (seen) => eq(seen.find((n) => n?.event === 'doc.saved'), { event: 'doc.saved', data: { id: 7 } },
    'onNotification callback argument'));

const registrarOnProgress = () => registrarCase('onProgress',
  (h) => abp(h, 'call', 'test.slow', { ms: 200, steps: 2 }, { progressToken: 'ref-token' }),
  (seen) => ok(seen.every((p) => typeof p?.progress === 'number'), `onProgress must get ProgressInfo, got ${fmt(seen)}`));

const registrarOnElicitation = () => registrarCase('onElicitation',
  (h) => abp(h, 'call', 'test.confirm', {}),
  (seen, r) => {
    ok(seen[0]?.method === 'elicitation/confirm', `onElicitation must get the request, got ${fmt(seen[0])}`);
    succeeded(r, "call('test.confirm')");
    eq({ success: r.data?.answer?.success, data: r.data?.answer?.data }, CONFIRMED,
      "the handler's ctx.elicit answer (the onElicitation callback's return value)");
  });

const registrarOnCapabilitiesChanged = () => registrarCase('onCapabilitiesChanged',
  (h) => h.page.evaluate(() => { window.app.register('test.late', () => 'late', { description: 'Added late' }); }),
  (seen) => {
    const c = seen[0];
    ok(c && typeof c === 'object' && !Array.isArray(c),
      `onCapabilitiesChanged must get { added, removed, changed, capabilities }, got ${fmt(c)}`);
    eq(c.added, ['test.late'], 'onCapabilitiesChanged added');
  });

/** ctx.elicit reaches __abp_elicitation(request); its return value is the handler's answer. */
async function elicitation() {
  const h = await open();
  try {
    await initialize(h);
    const r = succeeded(await abp(h, 'call', 'test.confirm', {}), "call('test.confirm')");
    const req = h.seen.elicitation[0];
    ok(req, '__abp_elicitation was never called for ctx.elicit');
    ok(req.method === 'elicitation/confirm' && req.params?.message === 'Delete 3 files?',
      `__abp_elicitation must get { method:'elicitation/confirm', params:{ message } }, got ${fmt(req)}`);
    eq({ success: r.data?.answer?.success, data: r.data?.answer?.data }, CONFIRMED,
      "the handler's ctx.elicit answer (what __abp_elicitation returned)");
  } finally { await h.close(); }
}

/** Capability changes after the handshake: __abp_capabilities_changed({ added, removed, changed, capabilities }). */
async function changeCase(what, change, expect, afterwards) {
  const h = await open();
  try {
    await initialize(h);
    const threw = await h.page.evaluate(change);
    ok(!threw, `${what} threw: ${threw}`);
    await until(() => h.seen.changed.length > 0);
    const c = h.seen.changed[0];
    ok(c !== undefined, `${what} after the handshake must reach __abp_capabilities_changed; it got nothing`);
    ok(c && typeof c === 'object' && !Array.isArray(c),
      `__abp_capabilities_changed must receive { added, removed, changed, capabilities }, got ${Array.isArray(c) ? 'an array: ' : ''}${fmt(c)}`);
    eq({ added: c.added, removed: c.removed, changed: c.changed }, expect, `__abp_capabilities_changed after ${what}`);
    ok(Array.isArray(c.capabilities), `__abp_capabilities_changed must carry the full list in capabilities, got ${fmt(c.capabilities)}`);
    const list = settled(await abp(h, 'listCapabilities'), 'listCapabilities()');
    ok(Array.isArray(list), `listCapabilities() must resolve an array, got ${fmt(list)}`);
    await afterwards(h, c.capabilities, list);
  } finally { await h.close(); }
}

const changedRegister = () => changeCase("app.register('test.late', …)",
  () => { try { window.app.register('test.late', () => 'late', { description: 'Added late' }); } catch (e) { return String(e); } },
  { added: ['test.late'], removed: [], changed: [] },
  async (h, sent, list) => {
    ok(sent.some((d) => d.name === 'test.late'), `the changes' capabilities must include test.late, got ${fmt(sent.map((d) => d.name))}`);
    ok(list.some((d) => d.name === 'test.late'), `listCapabilities() must include test.late, got ${fmt(list.map((d) => d.name))}`);
    const r = succeeded(await abp(h, 'call', 'test.late', {}), "call('test.late')");
    eq(r.data, 'late', "call('test.late').data");
  });

const changedUnregister = () => changeCase("app.unregister('test.echo')",
  () => { try { window.app.unregister('test.echo'); } catch (e) { return String(e); } },
  { added: [], removed: ['test.echo'], changed: [] },
  async (h, sent, list) => {
    ok(!sent.some((d) => d.name === 'test.echo'), "the changes' capabilities must no longer include test.echo");
    ok(!list.some((d) => d.name === 'test.echo'), `listCapabilities() must no longer include test.echo, got ${fmt(list.map((d) => d.name))}`);
    failedWith(await abp(h, 'call', 'test.echo', {}), 'UNKNOWN_CAPABILITY', "call('test.echo') after unregister");
  });

const changedUpdate = () => changeCase("app.update('test.echo', { available:false })",
  () => {
    if (typeof window.app.update !== 'function') return 'app.update is not a function';
    try { window.app.update('test.echo', { available: false }); } catch (e) { return String(e); }
  },
  { added: [], removed: [], changed: ['test.echo'] },
  async (h, sent, list) => {
    eq(sent.find((d) => d.name === 'test.echo')?.available, false, "test.echo.available in the changes' capabilities");
    eq(list.find((d) => d.name === 'test.echo')?.available, false, 'test.echo.available in listCapabilities()');
    const s = settled(await abp(h, 'supports', 'test.echo'), "supports('test.echo')");
    eq(s?.available, false, "supports('test.echo').available after the update");
    failedWith(await abp(h, 'call', 'test.echo', {}), 'CAPABILITY_UNAVAILABLE', "call('test.echo') after the update");
    eq(ran(await handlerLog(h), 'test.echo').length, 0, 'times the now unavailable handler ran');
  });

/** A second initialize ends the active session (its calls cancelled) and starts a new one. */
async function reinitialize() {
  const h = await open();
  try {
    const first = await initialize(h);
    const out = await h.page.evaluate(async (init) => {
      const p = window.abp.call('test.slow', { ms: 5000, steps: 50 }, { callId: 'ref-old-session' });
      await new Promise((r) => setTimeout(r, 150));
      const second = await window.__refWithin(window.abp.initialize(init), 3000).catch((e) => ({ __refThrew: String(e) }));
      const old = await window.__refWithin(p, 2000);
      return { second, old, sessionId: window.abp.sessionId, initialized: window.abp.initialized };
    }, INIT);
    settled(out.second, 'the second initialize()');
    ok(!out.second.error && typeof out.second.sessionId === 'string',
      `a second initialize must end the old session and start a new one (a reattaching agent must not be locked out), got ${fmt(out.second)}`);
    ok(out.second.sessionId !== first.sessionId, `the new session needs a new sessionId, got the old ${fmt(first.sessionId)}`);
    eq(out.sessionId, out.second.sessionId, 'window.abp.sessionId after re-initialize');
    settled(out.old, "the old session's call in flight");
    ok(out.old.success === false && out.old.cancelled === true,
      `the old session's call in flight must resolve cancelled, got ${fmt(out.old)}`);
    ok(aborted(await handlerLog(h), 'ref-old-session'), "the old session's handler signal must abort");
    succeeded(await abp(h, 'call', 'test.echo', {}), 'a call in the new session');
  } finally { await h.close(); }
}

/** shutdown(), shutdown({ reason }) and shutdown('reason') resolve and end the session; running handlers abort. */
async function shutdown() {
  const h = await open();
  try {
    await initialize(h);
    const out = await h.page.evaluate(async () => {
      const p = window.abp.call('test.slow', { ms: 5000, steps: 50 }, { callId: 'ref-shutdown' });
      await new Promise((r) => setTimeout(r, 150));
      const s = await window.__refWithin(window.abp.shutdown(), 2000).catch((e) => ({ __refThrew: String(e) }));
      const call = await window.__refWithin(p, 2000);
      return { s, call, initialized: window.abp.initialized };
    });
    settled(out.s, 'shutdown()');
    eq(out.initialized, false, 'window.abp.initialized after shutdown()');
    ok(!out.call?.__refTimedOut, 'a call in flight at shutdown() must settle (success:false: cancelled or DISCONNECTED), ' +
      'it was still pending 2 s later');
    ok(out.call.success === false, `a call in flight at shutdown() must resolve success:false, got ${fmt(out.call)}`);
    ok(aborted(await handlerLog(h), 'ref-shutdown'), 'shutdown() must abort the running handler');
    for (const arg of [{ reason: 'agent done' }, 'agent done']) {
      await initialize(h);
      settled(await abp(h, 'shutdown', arg), `shutdown(${fmt(arg)})`);
      eq((await props(h)).initialized, false, `window.abp.initialized after shutdown(${fmt(arg)})`);
    }
  } finally { await h.close(); }
}

/** An initialize whose protocol major version differs from ours is answered NOT_SUPPORTED. */
async function wrongMajorVersion() {
  const h = await open();
  try {
    const out = await h.page.evaluate(async (init) => {
      try { return { resolved: await window.__refWithin(window.abp.initialize(init), 3000) }; } catch (e) {
        return { rejected: { code: e?.code, message: String(e?.message ?? e) } };
      }
    }, { ...INIT, protocolVersion: '1.0' });
    if (out.resolved) settled(out.resolved, "initialize({ protocolVersion:'1.0' })");
    const err = out.resolved ? out.resolved.error : out.rejected;
    const got = out.resolved?.sessionId ? `a session (sessionId ${fmt(out.resolved.sessionId)}, protocolVersion ` +
      `${fmt(out.resolved.protocolVersion)})` : fmt(out);
    ok(err?.code === 'NOT_SUPPORTED',
      `initialize({ protocolVersion:'1.0' }) (another major version) must be answered with error NOT_SUPPORTED, got ${got}`);
    eq((await props(h)).initialized, false, "window.abp.initialized after a refused initialize");
  } finally { await h.close(); }
}

/** features:{ progress:false }: agreed in the result, and no progress for calls carrying a progressToken. */
async function featuresProgressOff() {
  const h = await open();
  try {
    const r = await initialize(h, { ...INIT, features: { notifications: true, progress: false, elicitation: true } });
    const f = r.features ?? {};
    eq({ notifications: f.notifications, progress: f.progress, elicitation: f.elicitation,
      dynamicCapabilities: f.dynamicCapabilities },
    { notifications: true, progress: false, elicitation: true, dynamicCapabilities: true },
      'InitializeResult.features (what was agreed) for features:{ progress:false }');
    succeeded(await abp(h, 'call', 'test.slow', { ms: 300, steps: 3 }, { progressToken: 'ref-token' }),
      "call('test.slow', …, { progressToken })");
    await sleep(300);
    eq(h.seen.progress, [], '__abp_progress calls after the agent disabled progress');
  } finally { await h.close(); }
}

/** features:{ notifications:false }: no notifications reach the agent. */
async function featuresNotificationsOff() {
  const h = await open();
  try {
    const r = await initialize(h, { ...INIT, features: { notifications: false, progress: true, elicitation: true } });
    eq(r.features?.notifications, false, 'InitializeResult.features.notifications for features:{ notifications:false }');
    await abp(h, 'notify', 'doc.saved', { id: 7 });
    succeeded(await abp(h, 'call', 'test.tell', {}), "call('test.tell')");
    await sleep(300);
    eq(h.seen.notification, [], '__abp_notification calls after the agent disabled notifications');
  } finally { await h.close(); }
}

/** features:{ elicitation:false }: ctx.elicit resolves NOT_SUPPORTED without asking the agent. */
async function featuresElicitationOff() {
  const h = await open();
  try {
    const r = await initialize(h, { ...INIT, features: { notifications: true, progress: true, elicitation: false } });
    eq(r.features?.elicitation, false, 'InitializeResult.features.elicitation for features:{ elicitation:false }');
    const c = succeeded(await abp(h, 'call', 'test.confirm', {}), "call('test.confirm')");
    ok(c.data?.answer?.success === false && c.data.answer.error?.code === 'NOT_SUPPORTED',
      `ctx.elicit must resolve NOT_SUPPORTED when the agent disabled elicitation, got ${fmt(c.data?.answer)}`);
    eq(h.seen.elicitation, [], '__abp_elicitation calls after the agent disabled elicitation');
  } finally { await h.close(); }
}

const CASES = {
  bootstrap, initializeAndEcho, methodsReturnPromises, listCapabilities, describeCapability, supports,
  callWithoutParams, callTimeout,
  errorNotInitialized, errorUnknownCapability, errorThrownKeepsFields, errorDocsShapedResult, errorUnavailable,
  errorRequirementNotMet,
  cancelPositional, cancelObject,
  progressWithToken, progressOnlyWithToken, notifyProgressOperationId, notify,
  registrarOnNotification, registrarOnProgress, registrarOnElicitation, registrarOnCapabilitiesChanged,
  elicitation, changedRegister, changedUnregister, changedUpdate,
  reinitialize, shutdown, wrongMajorVersion,
  featuresProgressOff, featuresNotificationsOff, featuresElicitationOff,
};

// ---- runner --------------------------------------------------------------------------------------------------

const only = process.argv.slice(2);
const unknown = only.filter((n) => !(n in CASES));
if (unknown.length) {
  console.error(`abp-reference: unknown case(s) ${unknown.join(', ')}; cases: ${Object.keys(CASES).join(', ')}`);
  process.exit(2);
}

if (!existsSync(new URL('../../pkg/abp_wasm.js', import.meta.url))) {
  console.error('abp-reference: pkg/abp_wasm.js is missing; build the package first (`npm run build`)');
  process.exit(1);
}

const server = await serve(0);
base = `http://127.0.0.1:${server.address().port}`;
browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

let passed = 0;
let failed = 0;
try {
  for (const [name, run] of Object.entries(CASES)) {
    if (only.length && !only.includes(name)) continue;
    let timer;
    const t0 = Date.now();
    try {
      await Promise.race([
        run(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Failure(`did not finish within ${CASE_TIMEOUT_MS / 1000} s`)), CASE_TIMEOUT_MS);
        }),
      ]);
      passed++;
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      const msg = e instanceof Failure ? e.message : `${e?.stack ?? e}`;
      console.log(`FAIL ${name}: ${msg}`);
    } finally {
      clearTimeout(timer);
    }
  }
} finally {
  await browser.close();
  server.close();
}
console.log(`abp-reference: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
