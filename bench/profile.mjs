// CPU profile of abp-wasm's hot path: 5,000 sequential echo calls host page → iframe in headless Chromium,
// sampled through CDP; prints self time per function. Needs `npm run build` first. Usage: node bench/profile.mjs
// (PROFILE_COLUMNS=1: each function's column too, to find an anonymous one in the package's one-line JS).
// Under the DevTools protocol every window.postMessage also records its caller's JavaScript stack
// (bench/direct.mjs): the postMessage rows of a window transport (the MCP-B envelope) are inflated by it, and a
// user's page does not pay that part.
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';
const server = await serve(0);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless=new','--no-sandbox','--disable-gpu','--disable-background-networking','--disable-component-update','--no-first-run'] });
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/bench/`);
await page.waitForFunction(() => window.benchReady);
const cdp = await page.context().newCDPSession(page);
await cdp.send('Profiler.enable');
// PROFILE_LIB=rawport-abp profiles the hand-written ABP envelope over a MessagePort instead (the same frame
// page as the benchmark's row), for the same breakdown without the SDK; PROFILE_LIB=abp-mcp the MCP dialect over
// the MCP-B envelope (the benchmark's abp-mcp row).
const lib = process.env.PROFILE_LIB ?? 'abp';
// The payload of the benchmark's calls (bench/index.html), which the SDK server's echo tool validates.
const PAYLOAD = { op: 'ping', n: 42, s: 'hello' };
await page.evaluate(async ({ lib, pkg, PAYLOAD }) => {
  if (lib === 'rawport-abp') {
    const iframe = document.createElement('iframe'); iframe.src = '/bench/frame.html?lib=rawport-abp'; document.body.appendChild(iframe);
    while (!iframe.contentWindow?.ready) await new Promise(r => setTimeout(r, 5));
    const { port1, port2 } = new MessageChannel();
    iframe.contentWindow.postMessage({ t: 'port' }, location.origin, [port2]);
    const pending = new Map();
    port1.onmessage = (e) => { const m = e.data; const r = pending.get(m.id); pending.delete(m.id); r(m.payload.data); };
    const call = (cap, v) => new Promise((resolve) => { const id = crypto.randomUUID(); pending.set(id, resolve);
      port1.postMessage({ type: 'capabilities/call', id, timestamp: Date.now(), payload: { callId: id, capability: cap, params: v } }); });
    window.abp = { call };
    for (let i = 0; i < 500; i++) await abp.call('echo', { a: 1 });
    return;
  }
  if (lib === 'mcp-sdk') {
    // The official MCP SDK's Client ↔ McpServer over @mcp-b/transports (the benchmark's mcp-sdk row), for the
    // same breakdown of the MCP dialect's peer.
    const iframe = document.createElement('iframe'); iframe.src = '/bench/frame.html?lib=mcp-sdk'; document.body.appendChild(iframe);
    while (!iframe.contentWindow?.ready) await new Promise(r => setTimeout(r, 5));
    const { Client, IframeParentTransport } = await import('/tests/interop/mcp-sdk/dist/client.js');
    const sdk = new Client({ name: 'p', version: '1' });
    await sdk.connect(new IframeParentTransport({ iframe, targetOrigin: location.origin }));
    window.abp = { call: (cap, v) => sdk.callTool({ name: cap, arguments: v }) };
    for (let i = 0; i < 500; i++) await abp.call('echo', PAYLOAD);
    return;
  }
  // PROFILE_PKG=<name> profiles a copy of a build in bench/ab/<name>/ instead of pkg/ (both sides): a build
  // whose wasm keeps its function names (`ABP_WASM_OPT_G=-g bash scripts/build.sh`) shows Rust functions by name.
  const iframe = document.createElement('iframe');
  const mcp = lib === 'abp-mcp';
  iframe.src = pkg ? `/bench/ab/frame.html?v=${pkg}` : `/bench/frame.html?lib=${mcp ? 'abp-mcp' : 'abp'}`; document.body.appendChild(iframe);
  while (!iframe.contentWindow?.ready) await new Promise(r => setTimeout(r, 5));
  const { default: init, AbpClient, PostMessageTransport } = await import(pkg ? `/bench/ab/${pkg}/abp_wasm.js` : '../pkg/abp_wasm.js');
  await init();
  window.abp = await AbpClient.connect(PostMessageTransport.toIframe(iframe, { targetOrigin: location.origin, ...(mcp ? { channel: 'mcp-iframe' } : {}) }),
    { agent: { name: 'p', version: '1' }, ...(mcp ? { dialect: 'mcp' } : {}) });
  for (let i = 0; i < 500; i++) await abp.call('echo', PAYLOAD);
}, { lib, pkg: process.env.PROFILE_PKG, PAYLOAD });
await cdp.send('Profiler.setSamplingInterval', { interval: 50 });
await cdp.send('Profiler.start');
// PROFILE_INFLIGHT=256 keeps that many calls in flight (the throughput row) instead of one at a time;
// PROFILE_OPTIONS=1 passes `{ signal, timeout }` with every call (the benchmark's "with { signal, timeout }" row).
const inflight = Number(process.env.PROFILE_INFLIGHT ?? 1);
const withOptions = process.env.PROFILE_OPTIONS === '1';
const t = await page.evaluate(async ([inflight, withOptions, PAYLOAD]) => {
  const controller = new AbortController();
  const options = withOptions ? { signal: controller.signal, timeout: 60000 } : undefined;
  const t0 = performance.now();
  let started = 0;
  const lane = async () => { while (started < 5000) { started++; await abp.call('echo', PAYLOAD, options); } };
  await Promise.all(Array.from({ length: inflight }, lane));
  return (performance.now() - t0) / 5000;
}, [inflight, withOptions, PAYLOAD]);
const { profile } = await cdp.send('Profiler.stop');
console.log('mean ms/call', t);
// self time by function
const self = new Map(); const byId = new Map(profile.nodes.map(n => [n.id, n]));
const dt = profile.timeDeltas; const counts = new Map();
profile.samples.forEach((id, i) => counts.set(id, (counts.get(id) || 0) + (dt[i] || 0)));
for (const [id, us] of counts) { const n = byId.get(id); const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.split("/").pop()}:${n.callFrame.lineNumber}${process.env.PROFILE_COLUMNS ? ":" + n.callFrame.columnNumber : ""}`; self.set(k, (self.get(k) || 0) + us); }
const total = [...self.values()].reduce((a, b) => a + b, 0);
[...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROFILE_ROWS ?? 40)).forEach(([k, v]) => console.log((100 * v / total).toFixed(1).padStart(5) + '%', k));
// self time by kind: wasm code, the package's JS (the generated glue with our snippets, src/web/*.js, bundled in:
// scripts/bundle-js.mjs), browser internals
const kinds = new Map();
for (const [k, v] of self) {
  const kind = k.includes('.wasm') ? 'wasm' : k.includes('abp_wasm.js') ? "the package's JS"
    : k.includes('frame.html') || k.includes('bench/') ? 'bench page' : k.startsWith('(') ? k.split(' ')[0] : `native: ${k.split(' ')[0]}`;
  kinds.set(kind, (kinds.get(kind) || 0) + v);
}
// inclusive time under entry points into the SDK (closures it registered, and AbpClient methods)
const parent = new Map(); for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
const entryOf = (id) => { let e = null; for (let x = id; x !== undefined; x = parent.get(x)) { const n = byId.get(x); const f = n.callFrame; if (f.url.endsWith('abp_wasm.js')) e = `${f.functionName || '(anon)'}:${f.lineNumber}`; } return e; };
const incl = new Map();
for (const [id, us] of counts) { const e = entryOf(id) ?? 'outside the SDK'; incl.set(e, (incl.get(e) || 0) + us); }
console.log('--- inclusive, by outermost SDK entry');
[...incl.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12).forEach(([k, v]) => console.log((100 * v / total).toFixed(1).padStart(5) + '%', k));
console.log('--- by kind');
[...kinds.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20).forEach(([k, v]) => console.log((100 * v / total).toFixed(1).padStart(5) + '%', k));
await browser.close();
server.close();
