// Where a round trip's time goes, side by side: wraps MessagePort listeners, postMessage and MessageEvent.data in
// both frames (before any page script runs) and reports microseconds per call for 5,000 echo calls: the
// synchronous part of abp.call() (which includes its postMessage), the agent's and the app's message listeners
// (which include reading event.data, and for the app its reply's postMessage). Needs `npm run build` first.
// Usage: node bench/timing.mjs. Timers are coarse outside cross-origin isolation; averages over 5,000 calls
// are still usable, but compare runs side by side, several times.
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';
const server = await serve(0);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless=new','--no-sandbox','--disable-gpu','--disable-background-networking','--disable-component-update','--no-first-run'] });
const ctx = await browser.newContext();
await ctx.addInitScript(() => {
  const T = (globalThis.__t = { listener: 0, n: 0, call: 0, post: 0, data: 0 });
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, f, o) {
    if (type === 'message' && this instanceof MessagePort && typeof f === 'function') {
      const g = function (e) { const t0 = performance.now(); try { return f.call(this, e); } finally { T.listener += performance.now() - t0; T.n++; } };
      return add.call(this, type, g, o);
    }
    return add.call(this, type, f, o);
  };
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (...a) { const t0 = performance.now(); try { return post.apply(this, a); } finally { T.post += performance.now() - t0; } };
  const desc = Object.getOwnPropertyDescriptor(MessageEvent.prototype, 'data');
  Object.defineProperty(MessageEvent.prototype, 'data', { get() { const t0 = performance.now(); try { return desc.get.call(this); } finally { T.data += performance.now() - t0; } } });
});
const page = await ctx.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/bench/`);
await page.waitForFunction(() => window.benchReady);
const r = await page.evaluate(async () => {
  const iframe = document.createElement('iframe'); iframe.src = '/bench/frame.html?lib=abp'; document.body.appendChild(iframe);
  while (!iframe.contentWindow?.ready) await new Promise(r => setTimeout(r, 5));
  const { AbpClient, PostMessageTransport } = await import('../pkg/abp_wasm.js');
  const abp = await AbpClient.connect(PostMessageTransport.toIframe(iframe, { targetOrigin: location.origin }), { agent: { name: 'p', version: '1' } });
  for (let i = 0; i < 2000; i++) await abp.call('echo', { a: 1 });
  const N = 5000;
  const a = globalThis.__t, b = iframe.contentWindow.__t;
  const a0 = { ...a }, b0 = { ...b };
  let callTime = 0;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) { const c0 = performance.now(); const p = abp.call('echo', { a: 1 }); callTime += performance.now() - c0; await p; }
  const total = (performance.now() - t0) / N * 1000;
  const per = (x, y, k) => ((x[k] - y[k]) / N * 1000).toFixed(1);
  return { totalUs: total.toFixed(1), callSyncUs: (callTime / N * 1000).toFixed(1),
    agentListenerUs: per(a, a0, 'listener'), agentPostUs: per(a, a0, 'post'), agentDataUs: per(a, a0, 'data'),
    appListenerUs: per(b, b0, 'listener'), appPostUs: per(b, b0, 'post'), appDataUs: per(b, b0, 'data') };
});
console.log(r);
await browser.close();
server.close();
