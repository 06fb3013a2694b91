// A/B of two builds of the package in one browser page: each build gets its own iframe app and client, and
// they take turns, 1,000 echo calls at a time, so both see the same machine load. Repeated over several
// browser sessions with the load order alternated (in an A/A run the client loaded second measured slower).
// Each session is a fresh headless browser with no test driver attached (bench/direct.mjs says why).
// Prints the mean round trip per build per session and overall.
// Usage: cp -r pkg bench/ab/before  (… change, npm run build …)  cp -r pkg bench/ab/after
//        node bench/ab.mjs before after [sessions=6] [--options] [--inflight=256] [--port] [--mcp] [--firefox]
//        (--options: calls pass { signal, timeout }; --inflight=N: N calls in flight, and the figure is the
//        time per call, total time / calls, as in the benchmark's throughput column; --port: client and app
//        both in the page over a MessageChannel, PostMessageTransport.fromPort, instead of page → iframe;
//        --mcp: client and app speak the MCP dialect in the MCP-B envelope; --firefox: in Firefox, not Chromium)
import { serve } from '../www/serve.mjs';
import { reports, runPage } from './direct.mjs';
const args = process.argv.slice(2);
const withOptions = args.includes('--options');
const overPort = args.includes('--port');
const mcp = args.includes('--mcp');
const browser = args.includes('--firefox') ? 'firefox' : 'chromium';
const inflight = Number(args.find((x) => x.startsWith('--inflight='))?.split('=')[1] ?? 1);
const [a, b, sessions = '6'] = args.filter((x) => !x.startsWith('--'));
if (!a || !b) { console.error('usage: node bench/ab.mjs <dir under bench/ab> <dir under bench/ab> [sessions] [--options] [--inflight=N] [--port] [--mcp] [--firefox]'); process.exit(2); }
const pages = reports();
const server = await serve(0, { onPost: pages.onPost });
const means = { [a]: [], [b]: [] };
try {
  for (let s = 0; s < +sessions; s++) {
    const order = s % 2 ? [b, a] : [a, b];
    const query = new URLSearchParams({ args: JSON.stringify([order, 10, 1000, withOptions, inflight, overPort, mcp]) });
    const r = await runPage(browser, `http://127.0.0.1:${server.address().port}/bench/ab/?${query}`, pages);
    for (const v of order) means[v].push(+r[v].mean);
    console.log(`session ${s + 1}: ${order.map((v) => `${v} ${r[v].mean} µs`).join(', ')}`);
  }
} finally {
  server.close();
}
const avg = (xs) => xs.reduce((x, y) => x + y, 0) / xs.length;
console.log(`mean ${inflight > 1 ? `time per call, ${inflight} in flight` : 'round trip'}: ${a} ${avg(means[a]).toFixed(1)} µs, ${b} ${avg(means[b]).toFixed(1)} µs (${(avg(means[b]) / avg(means[a])).toFixed(3)}×)`);
