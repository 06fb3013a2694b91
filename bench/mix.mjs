// Which side of a round trip costs what: abp-wasm's agent and app each paired with a hand-written ABP
// counterpart, host page → same-origin iframe as in the benchmark (the agent offers a port with `initialize`
// and both sides talk over it). Four pairs, hand ↔ hand, abp agent ↔ hand app, hand agent ↔ abp app and
// abp ↔ abp, take turns 1,000 sequential echo calls at a time in one page, so all see the same machine load;
// repeated over several browser sessions. Prints the mean round trip of each pair per session and the median.
// Needs `npm run build` first. Usage: node bench/mix.mjs [sessions=4] [dir under bench/ab, default pkg/]
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const [sessions = '4', variant] = process.argv.slice(2);
const pkg = variant ? `/bench/ab/${variant}` : '/pkg';
const frame = variant ? `/bench/ab/frame.html?v=${variant}` : '/bench/frame.html?lib=abp';
const server = await serve(0);
const all = {};
try {
  for (let s = 0; s < +sessions; s++) {
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless=new', '--no-sandbox', '--disable-gpu'] });
    try {
      const page = await browser.newPage();
      page.on('pageerror', (e) => console.error('page error:', e));
      await page.goto(`http://127.0.0.1:${server.address().port}/bench/`);
      await page.waitForFunction(() => window.benchReady);
      const out = await page.evaluate(async ([pkg, frame]) => {
        const { default: init, AbpClient, PostMessageTransport } = await import(`${pkg}/abp_wasm.js`);
        await init();
        const load = async (src) => {
          const f = document.createElement('iframe'); f.src = src; document.body.appendChild(f);
          while (!f.contentWindow?.ready) await new Promise((r) => setTimeout(r, 5));
          return f;
        };
        const { handAgent } = await import('/bench/hand-abp.js');
        const abpAgent = (iframe) => AbpClient.connect(PostMessageTransport.toIframe(iframe, { targetOrigin: location.origin }),
          { agent: { name: 'mix', version: '1' } });
        const hand = '/bench/frame.html?lib=hand-abp';
        const pairs = {};
        for (const [name, agent, src] of [['hand ↔ hand', handAgent, hand], ['abp agent ↔ hand app', abpAgent, hand],
          ['hand agent ↔ abp app', handAgent, frame], ['abp ↔ abp', abpAgent, frame]]) {
          pairs[name] = await agent(await load(src));
          for (let i = 0; i < 500; i++) await pairs[name].call('echo', { a: 1 });
        }
        const total = Object.fromEntries(Object.keys(pairs).map((k) => [k, 0]));
        for (let round = 0; round < 10; round++) {
          for (const [k, c] of Object.entries(pairs)) {
            const t0 = performance.now();
            for (let i = 0; i < 1000; i++) await c.call('echo', { a: 1 });
            total[k] += performance.now() - t0;
          }
        }
        return Object.fromEntries(Object.entries(total).map(([k, t]) => [k, (t / 10000) * 1000]));
      }, [pkg, frame]);
      for (const [k, v] of Object.entries(out)) (all[k] ??= []).push(v);
      console.log(`session ${s + 1}: ${Object.entries(out).map(([k, v]) => `${k} ${v.toFixed(1)} µs`).join(', ')}`);
    } finally {
      await browser.close();
    }
  }
} finally {
  server.close();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const m = Object.fromEntries(Object.entries(all).map(([k, v]) => [k, median(v)]));
const base = m['hand ↔ hand'];
console.log('median round trip, and what each pair adds to hand ↔ hand:');
for (const [k, v] of Object.entries(m)) console.log(`  ${k.padEnd(22)} ${v.toFixed(1)} µs  +${(v - base).toFixed(1)} µs`);
