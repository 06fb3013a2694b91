// How many times a round trip steps from wasm into JavaScript: every import the built package's wasm calls
// (wasm-bindgen's generated functions and our snippets' exports) is wrapped with a counter in a copy of pkg/, and
// 100 echo calls host page -> iframe are counted on each side. Counts, not times: what each boundary step
// removes shows here exactly, where a timing would drown in this machine's noise.
// Needs `npm run build` first. Usage: node bench/crossings.mjs [--options] [--mcp]   (--options: { signal, timeout };
// --mcp: in the MCP dialect, over the MCP-B envelope)
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const withOptions = process.argv.includes('--options');
const mcp = process.argv.includes('--mcp');
const dir = new URL('./ab/crossings/', import.meta.url);
rmSync(dir, { recursive: true, force: true });
for (const f of ['abp_wasm.js', 'abp_wasm_bg.wasm']) cpSync(new URL(`../pkg/${f}`, import.meta.url), new URL(f, dir));
// Wrap every function of the import object when the module instantiates its wasm: wasm-bindgen's generated
// functions (named by their body: the build shortens their names and their module's) and the snippets'
// exports (named as exported). Done on WebAssembly.instantiate, so it does not depend on the layout of the
// (minified) module.
const jsFile = new URL('abp_wasm.js', dir);
const js = `
const __crossings = globalThis.__crossings = {};
const __wrap = (name, f) => function (...args) { __crossings[name] = (__crossings[name] || 0) + 1; return f.apply(this, args); };
const __count = (imports) => {
  for (const [module, fns] of Object.entries(imports ?? {})) {
    const copy = {};
    for (const [k, f] of Object.entries(fns)) {
      if (typeof f !== 'function') copy[k] = f;
      else if (!module.includes('/snippets/')) copy[k] = __wrap(String(f).replace(/^[^{]*\\{\\s*/, '').replace(/\\s+/g, ' ').slice(0, 60), f);
      else if (/^[A-Z]/.test(k)) copy[k] = f; // a class (Deferred): wrapping would break \`new\`
      else copy[k] = __wrap(module.split('/').pop() + ' ' + k, f);
    }
    imports[module] = copy;
  }
  return imports;
};
const __instantiate = WebAssembly.instantiate, __streaming = WebAssembly.instantiateStreaming;
WebAssembly.instantiate = (m, imports) => __instantiate(m, __count(imports));
WebAssembly.instantiateStreaming = (r, imports) => __streaming(r, __count(imports));
` + readFileSync(jsFile, 'utf8');
writeFileSync(jsFile, js);

const server = await serve(0);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--headless=new', '--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error('page error:', e));
  await page.goto(`http://127.0.0.1:${server.address().port}/bench/ab/`);
  await page.waitForFunction(() => window.ready);
  const N = 100;
  const r = await page.evaluate(async ([N, withOptions, mcp]) => {
    const iframe = document.createElement('iframe');
    iframe.src = `./frame.html?v=crossings${mcp ? '&mcp=1' : ''}`;
    document.body.appendChild(iframe);
    while (!iframe.contentWindow?.ready) await new Promise((r) => setTimeout(r, 5));
    const { default: init, AbpClient, PostMessageTransport } = await import('./crossings/abp_wasm.js');
    await init();
    const abp = await AbpClient.connect(PostMessageTransport.toIframe(iframe, { targetOrigin: location.origin, ...(mcp ? { channel: 'mcp-iframe' } : {}) }),
      { agent: { name: 'crossings', version: '1' }, ...(mcp ? { dialect: 'mcp' } : {}) });
    const ac = new AbortController();
    const call = () => abp.call('echo', { a: 1 }, withOptions ? { signal: ac.signal, timeout: 60000 } : undefined);
    for (let i = 0; i < 20; i++) await call();
    const before = [{ ...globalThis.__crossings }, { ...iframe.contentWindow.__crossings }];
    for (let i = 0; i < N; i++) await call();
    const per = (now, then) => Object.entries(now).map(([k, v]) => [k, (v - (then[k] || 0)) / N]).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
    return { agent: per(globalThis.__crossings, before[0]), app: per(iframe.contentWindow.__crossings, before[1]) };
  }, [N, withOptions, mcp]);
  for (const side of ['agent', 'app']) {
    const total = r[side].reduce((s, [, v]) => s + v, 0);
    console.log(`${side} side: ${total} steps from wasm into JS per call${withOptions ? ' (with { signal, timeout })' : ''}${mcp ? ' (MCP dialect)' : ''}`);
    for (const [k, v] of r[side]) console.log(`  ${String(v).padStart(5)}  ${k}`);
  }
} finally {
  await browser.close();
  server.close();
}
