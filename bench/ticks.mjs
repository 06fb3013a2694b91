// Where a benchmark row's time goes in Chromium, with no test driver: the row of bench/index.html run alone in a
// fresh Chromium that writes a V8 tick profile (`--prof`), read back with `node --prof-process --preprocess`, and
// printed as each function's inclusive share of the samples (the samples whose stack holds it). bench/profile.mjs
// samples through the DevTools protocol, under which every window.postMessage also records its caller's stack
// (bench/direct.mjs); this does not, so it is the one to read for the window transports (the MCP-B envelope).
// Chromium's own code has no symbols here: its samples are charged to the nearest JavaScript or wasm caller
// (`--native`). Needs a build that keeps function names in the wasm (`ABP_WASM_OPT_G=-g bash scripts/build.sh`;
// a release build's wasm functions are only numbered).
// Usage: node bench/ticks.mjs LIB [--calls=N] [--under=TEXT] [--without=TEXT] [--native] [--self] [--turns] [--rows=N] [--all]
//   LIB: a library of bench/index.html (abp, abp-mcp, mcp-sdk, …); --under: only the samples whose stack holds
//   a function whose name contains TEXT, and only what they ran inside it; --without: leave out the samples whose
//   stack holds TEXT (e.g. the postMessage wrapper's position); --native: Chromium's samples by the function that
//   called into Chromium; --all: every function, not only the package's and the page's; --self: each function's
//   own samples (Chromium's charged to the function that called into it), and the share of all samples that ran
//   the page's own JavaScript and wasm; --turns: profile LIB's head-to-head rounds alone (index.html's
//   headToHead with LIB only: the same calls for every library, so sample counts compare) instead of its row.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../www/serve.mjs';
import { reports, runPage } from './direct.mjs';

const args = process.argv.slice(2);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.split('=').slice(1).join('=');
const lib = args.find((a) => !a.startsWith('--'));
if (!lib) {
  console.error('usage: node bench/ticks.mjs LIB [--calls=N] [--under=TEXT] [--without=TEXT] [--native] [--self] [--turns] [--rows=N] [--all]');
  process.exit(2);
}
const rows = Number(opt('rows') ?? 40);
const logs = mkdtempSync(join(tmpdir(), 'abp-ticks-'));
process.env.CHROMIUM_JS_FLAGS = `--js-flags=--expose-gc --prof --no-logfile-per-isolate --logfile=${logs}/v8-%p.log`;
const pages = reports();
const server = await serve(0, { onPost: pages.onPost });
try {
  const query = new URLSearchParams(args.includes('--turns') ? { pair: lib } : { calls: opt('calls') ?? 10000, only: lib });
  await runPage('chromium', `http://127.0.0.1:${server.address().port}/bench/?${query}`, pages);
} finally {
  server.close();
}
// The renderer that ran the page wrote the largest log.
const log = readdirSync(logs).map((f) => join(logs, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0];
// Its complaints about code states of a newer V8 than Node's go to stderr, left out.
const text = execFileSync(process.execPath, ['--prof-process', '--preprocess', log],
  { maxBuffer: 1 << 30, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
rmSync(logs, { recursive: true, force: true });
// The tick processor warns first when the V8 that wrote the log is not Node's own.
const profile = JSON.parse(text.slice(text.indexOf('{')));

// Rust's crate hashes (sixteen hex digits in brackets) left out of names, and long names cut.
const names = profile.code.map((c) => (c?.name ?? '?').replace(/\[[0-9a-f]{16}\]/g, '').slice(0, 150));
const NATIVE = /^\/|^\[vdso\]|^_|@GLIBC|^(wasm-to-js|js-to-wasm)/;
const ours = (n) => args.includes('--all') || /abp_wasm|wasm-function|\/bench\/|^(wasm-to-js|js-to-wasm)/.test(n);
const [under, without] = [opt('under'), opt('without')];
const inclusive = new Map();
const byCaller = new Map();
const self = new Map();
let total = 0;
let taken = 0;
for (const tick of profile.ticks) {
  total++;
  let frames = [];
  for (let i = 0; i < tick.s.length; i += 2) if (tick.s[i] >= 0) frames.push(names[tick.s[i]]);
  if (without && frames.some((f) => f.includes(without))) continue;
  if (under) {
    const at = frames.findIndex((f) => f.includes(under));
    if (at < 0) continue;
    frames = frames.slice(0, at + 1);
  }
  taken++;
  for (const f of new Set(frames)) inclusive.set(f, (inclusive.get(f) ?? 0) + 1);
  const native = NATIVE.test(frames[0] ?? '');
  const caller = native ? frames.find((f) => !NATIVE.test(f)) ?? '(no caller)' : undefined;
  if (native) byCaller.set(caller, (byCaller.get(caller) ?? 0) + 1);
  const selfKey = native ? `Chromium's, called from ${caller}` : frames[0] ?? '(no frame)';
  self.set(selfKey, (self.get(selfKey) ?? 0) + 1);
}
const pct = (n) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
const print = (map) => [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)
  .forEach(([name, n]) => console.log(`${String(n).padStart(6)} ${pct(n)}  ${name}`));
console.log(`${lib}: ${total} samples${under || without ? `, ${taken} of them (${pct(taken).trim()}) taken${under ? ` under "${under}"` : ''}${without ? ` without "${without}"` : ''}` : ''}; share of all samples`);
if (args.includes('--self')) {
  const own = [...self].filter(([k]) => !k.startsWith("Chromium's") && k !== '(no frame)').reduce((n, [, c]) => n + c, 0);
  console.log(`\nthe page's own JavaScript and wasm: ${own} of ${taken} samples (${pct(own).trim()}); self, by function:`);
  print(self);
} else if (args.includes('--native')) {
  console.log('\nChromium\'s own code (and libc) by the function that called into it:');
  print(byCaller);
} else {
  console.log('\ninclusive, by function:');
  print(new Map([...inclusive].filter(([name]) => ours(name) || name === under)));
}
