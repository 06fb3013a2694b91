// What the wire format costs with no library around it: the same echo written by hand as raw { t, id, v }
// messages, as penpal's CALL/REPLY messages and as ABP's envelopes, over a MessagePort to a same-origin iframe
// (bench/envelope.html), with 256 calls in flight and one at a time, in Chromium and Firefox. Each session is a
// fresh browser with no test driver (bench/direct.mjs); the formats take turns within it. Prints µs per call
// (the median over the sessions of each session's median) and ABP's envelope against penpal's: the ratio no
// library speaking ABP can beat by its own work, since its messages are these.
// Usage: node bench/envelope.mjs [sessions=3] [--firefox | --chromium]
import { serve } from '../www/serve.mjs';
import { reports, runPage } from './direct.mjs';

const args = process.argv.slice(2);
const sessions = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
const browsers = args.includes('--firefox') ? ['firefox'] : args.includes('--chromium') ? ['chromium'] : ['chromium', 'firefox'];
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const pages = reports();
const server = await serve(0, { onPost: pages.onPost });
try {
  for (const browser of browsers) {
    for (const inflight of [256, 1]) {
      const seen = {};
      for (let s = 0; s < sessions; s++) {
        const query = new URLSearchParams({ args: JSON.stringify([inflight, 1500, 4]) });
        const r = await runPage(browser, `http://127.0.0.1:${server.address().port}/bench/envelope.html?${query}`, pages);
        for (const [k, v] of Object.entries(r)) (seen[k] ??= []).push(median(v));
      }
      const m = Object.fromEntries(Object.entries(seen).map(([k, v]) => [k, median(v)]));
      console.log(`${browser}, ${inflight === 1 ? 'one call at a time' : `${inflight} in flight`}: ${Object.entries(m).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')} µs a call; ABP's envelope ${(m.abp / m.penpal).toFixed(2)}× penpal's`);
    }
  }
} finally {
  server.close();
}
