// Each side's own work in real round trips (page -> same-origin iframe, over the private port, as in the
// benchmark), against the same side written by hand:
// - app: the build's app answers a hand-written agent; its work is the time inside its port listener without
//   the time inside postMessage (the listener includes reading the message, i.e. its structured clone);
// - agent: the build's client calls a hand-written app; its work is call()'s synchronous part without
//   postMessage, and the time inside its port listener for the result.
// Listeners and postMessage are wrapped with performance.now() (a 5 µs clock in Chromium, 20 µs in Firefox;
// means over 10,000 calls). Each session is a fresh browser with no test driver (bench/direct.mjs). This
// sees what side-cost.mjs (the same work in a hot loop, without the channel) does not: in a real round trip
// the browser's own work runs between two messages, and the SDK's work takes several times as long
// (BENCHMARKS.md has the figures).
// Needs `npm run build` first. Usage: node bench/own-work.mjs [sessions=6] [--firefox] [dirs under bench/ab; default pkg/]
import { serve } from '../www/serve.mjs';
import { reports, runPage } from './direct.mjs';

const args = process.argv.slice(2);
const browser = args.includes('--firefox') ? 'firefox' : 'chromium';
const rest = args.filter((a) => !a.startsWith('--'));
const sessions = /^\d+$/.test(rest[0] ?? '') ? +rest.shift() : 6;
const builds = rest.length ? rest : ['pkg'];
const variants = ['hand', ...builds];
const pages = reports();
const server = await serve(0, { onPost: pages.onPost });
const all = {};
try {
  for (let s = 0; s < sessions; s++) {
    const order = s % 2 ? [...variants].reverse() : variants;
    const query = new URLSearchParams({ args: JSON.stringify([order, 10, 1000]) });
    const out = await runPage(browser, `http://127.0.0.1:${server.address().port}/bench/ab/own-work.html?${query}`, pages);
    for (const [v, x] of Object.entries(out)) (all[v] ??= []).push(x);
    console.log(`session ${s + 1}: ${order.map((v) => `${v} app ${out[v].app.toFixed(1)} agent ${(out[v].call + out[v].result).toFixed(1)}`).join(', ')} (µs a call)`);
  }
} finally {
  server.close();
}
const mean = (v, key) => all[v].reduce((a, x) => a + x[key], 0) / all[v].length;
const row = (v, key) => `${mean(v, key).toFixed(2).padStart(6)}${v === 'hand' ? '        ' : ` (+${(mean(v, key) - mean('hand', key)).toFixed(2)})`}`;
console.log(`mean over ${sessions} sessions, µs a call (and the difference to the same side by hand):`);
console.log('                 app listener      round trip | agent call()      result listener   round trip');
for (const v of variants) {
  console.log(`  ${v.padEnd(14)} ${row(v, 'app')} ${mean(v, 'appTrip').toFixed(1).padStart(7)}    | ${row(v, 'call')} ${row(v, 'result')} ${mean(v, 'agentTrip').toFixed(1).padStart(7)}`);
}
