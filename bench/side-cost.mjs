// Each side's own work per call, without the message channel, against the same work written by hand:
// - app: a call is dispatched synchronously as a MessageEvent on the port of an app listening with
//   PostMessageTransport.fromPort; its answer is caught by the port's postMessage, replaced on the instance;
// - agent: the client's port is patched the same way to catch the call, the answer is dispatched at once,
//   and the call's promise is awaited.
// No structured clone, no task per message: what is left is the SDK's code (and the hand-written code's). With
// --evict=N, N MB are read between two messages, as the browser's own work does between real messages: the
// SDK's per-message code and data then come from colder caches (the time of the reading itself is the same
// for every row and cancels out in the differences). Rows take turns in one page; several browser sessions.
// Each session is a fresh browser with no test driver attached (bench/direct.mjs), running bench/side-cost.js.
// Usage: node bench/side-cost.mjs [sessions=3] [--evict=N] [--firefox] [dirs under bench/ab to compare; default pkg/]
import { serve } from '../www/serve.mjs';
import { reports, runPage } from './direct.mjs';

const args = process.argv.slice(2);
const evictMB = Number(args.find((a) => a.startsWith('--evict='))?.split('=')[1] ?? 0);
const browser = args.includes('--firefox') ? 'firefox' : 'chromium';
const rest = args.filter((a) => !a.startsWith('--'));
const sessions = /^\d+$/.test(rest[0] ?? '') ? +rest.shift() : 3;
const variants = rest.length ? rest.map((d) => `/bench/ab/${d}`) : ['/pkg'];
const pages = reports();
const server = await serve(0, { onPost: pages.onPost });
const all = {};
try {
  for (let s = 0; s < sessions; s++) {
    const query = new URLSearchParams({ args: JSON.stringify([variants, evictMB]) });
    const out = await runPage(browser, `http://127.0.0.1:${server.address().port}/bench/side-cost.html?${query}`, pages);
    for (const [k, v] of Object.entries(out)) (all[k] ??= []).push(v);
    console.log(`session ${s + 1}: ${Object.entries(out).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')} (µs a call)`);
  }
} finally {
  server.close();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`median µs a call${evictMB ? `, ${evictMB} MB read between messages` : ''}, and the difference to the same side by hand:`);
for (const side of ['app', 'agent']) {
  const hand = median(all[`${side}: hand`]);
  for (const [k, v] of Object.entries(all).filter(([k]) => k.startsWith(`${side}:`))) {
    console.log(`  ${k.padEnd(28)} ${median(v).toFixed(2)}${k.endsWith('hand') ? '' : `  +${(median(v) - hand).toFixed(2)}`}`);
  }
}
