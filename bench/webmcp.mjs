// `npm run bench:webmcp`: WebMCP in headless Chromium with its native document.modelContext
// (--enable-features=WebMCP), all in one page and one run:
//   - a call's round trip through executeTool: plain WebMCP code calling a plain registerTool tool (the floor),
//     against the same caller calling our app's tool (app.exposeWebMCP()), and our AbpClient
//     (WebMCPTransport.document()) calling the plain tool;
//   - abort → the tool's signal: the caller's abort to a plain tool's client.signal, to our handler's ctx.signal
//     through exposeWebMCP, and, in the same run for comparison, our client's abort to our handler's ctx.signal
//     over postMessage (a MessageChannel between AbpClient and AbpApp).
// Medians over BENCH_RUNS rounds (default 5), each measuring every row once, the order reversed every other
// round; BENCH_CALLS sequential calls per row and round (default 2000), BENCH_ABORTS aborts (default 50).
// Needs `npm run build` first (pkg/); prints a table with ratios to the floor.
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const calls = Number(process.env.BENCH_CALLS ?? 2000);
const aborts = Number(process.env.BENCH_ABORTS ?? 50);
const runs = Math.max(1, Number(process.env.BENCH_RUNS ?? 5));
const server = await serve(0);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--enable-features=WebMCP'],
});
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error('page error:', e));
  await page.goto(`http://127.0.0.1:${server.address().port}/bench/webmcp.html`);
  const result = await page.evaluate(async ({ calls, aborts, runs }) => {
    const { default: init, AbpApp, AbpClient, WebMCPTransport, PostMessageTransport } = await import('/pkg/abp_wasm.js');
    await init();
    const mc = document.modelContext;
    if (!mc || mc.__isWebMCPPolyfill) throw new Error('no native WebMCP: Chromium needs --enable-features=WebMCP');
    const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
    const tool = async (name) => (await mc.getTools()).find((t) => t.name === name);

    // The tools: a plain echo and a plain tool that waits for its client.signal; ours, the same two.
    let plainAborted = null;
    await mc.registerTool({ name: 'plain.echo', description: 'echo', execute: (x) => x });
    await mc.registerTool({ name: 'plain.wait', description: 'wait', execute: (x, client) => new Promise((resolve) => {
      client.signal.addEventListener('abort', () => { plainAborted = performance.now(); resolve(null); });
    }) });
    let oursAborted = null;
    const app = new AbpApp({ id: 'bench', name: 'bench', version: '1' });
    app.register('ours.echo', (p) => p, { description: 'echo' });
    app.register('ours.wait', (p, ctx) => new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => { oursAborted = performance.now(); reject(ctx.signal.reason); });
    }), { description: 'wait' });
    await app.exposeWebMCP();
    const client = await AbpClient.connect(WebMCPTransport.document());
    // postMessage, for the abort row: our client and our app over a MessageChannel.
    const { port1, port2 } = new MessageChannel();
    const pmApp = new AbpApp({ id: 'bench-pm', name: 'bench', version: '1' });
    let pmAborted = null;
    pmApp.register('wait', (p, ctx) => new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => { pmAborted = performance.now(); reject(ctx.signal.reason); });
    }));
    pmApp.listen(PostMessageTransport.fromPort(port2));
    const pm = await AbpClient.connect(PostMessageTransport.fromPort(port1));
    const plainEcho = await tool('plain.echo');
    const oursEcho = await tool('ours.echo');
    const plainWait = await tool('plain.wait');
    const oursWait = await tool('ours.wait');
    const until = async (f) => { const t0 = performance.now(); while (!f()) { if (performance.now() - t0 > 2000) throw new Error('no abort seen'); await new Promise((r) => setTimeout(r, 0)); } };
    const started = () => new Promise((r) => setTimeout(r, 5));

    const rows = {
      'executeTool → plain tool (floor)': async () => { const t0 = performance.now(); for (let i = 0; i < calls; i++) await mc.executeTool(plainEcho, { i }); return (performance.now() - t0) / calls; },
      'executeTool → our app (exposeWebMCP)': async () => { const t0 = performance.now(); for (let i = 0; i < calls; i++) await mc.executeTool(oursEcho, { i }); return (performance.now() - t0) / calls; },
      'our AbpClient (WebMCPTransport) → plain tool': async () => { const t0 = performance.now(); for (let i = 0; i < calls; i++) await client.call('plain.echo', { i }); return (performance.now() - t0) / calls; },
      'abort → plain tool client.signal (floor)': async () => { const xs = []; for (let i = 0; i < aborts; i++) { plainAborted = null; const c = new AbortController(); const p = mc.executeTool(plainWait, {}, { signal: c.signal }).catch(() => {}); await started(); const t0 = performance.now(); c.abort(); await until(() => plainAborted !== null); xs.push(plainAborted - t0); await p; } return median(xs); },
      'abort → our handler ctx.signal (exposeWebMCP)': async () => { const xs = []; for (let i = 0; i < aborts; i++) { oursAborted = null; const c = new AbortController(); const p = mc.executeTool(oursWait, {}, { signal: c.signal }).catch(() => {}); await started(); const t0 = performance.now(); c.abort(); await until(() => oursAborted !== null); xs.push(oursAborted - t0); await p; } return median(xs); },
      'abort → our handler ctx.signal (postMessage, MessageChannel)': async () => { const xs = []; for (let i = 0; i < aborts; i++) { pmAborted = null; const c = new AbortController(); const p = pm.call('wait', {}, { signal: c.signal }); await started(); const t0 = performance.now(); c.abort(); await until(() => pmAborted !== null); xs.push(pmAborted - t0); await p; } return median(xs); },
    };
    const names = Object.keys(rows);
    const seen = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < runs; r++) {
      for (const n of r % 2 ? [...names].reverse() : names) seen[n].push(await rows[n]());
    }
    return Object.fromEntries(names.map((n) => [n, median(seen[n])]));
  }, { calls, aborts, runs });
  const floorCall = result['executeTool → plain tool (floor)'];
  const floorAbort = result['abort → plain tool client.signal (floor)'];
  console.log(`WebMCP, native Chromium (${(await browser.version())}); ${calls} calls, ${aborts} aborts per row and round, median of ${runs} rounds`);
  console.log('| measure | ms | × floor |\n|---|---|---|');
  for (const [name, ms] of Object.entries(result)) {
    const floor = name.startsWith('abort') ? floorAbort : floorCall;
    console.log(`| ${name} | ${ms.toFixed(4)} | ${(ms / floor).toFixed(2)}× |`);
  }
} finally {
  await browser.close();
  server.close();
}
