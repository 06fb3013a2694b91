// What a page would fetch before it is connected if each role build's wasm were split by binaryen's wasm-split
// (`npm run bench:split`, after `npm run build`). The tool is scripts/wasm-split.sh's (binaryen 132, built once), or
// WASM_SPLIT=<path> (132 or later: older ones cannot read this wasm). Nothing here changes the package: it measures
// how far a split would take the bytes before connected.
//
// 1. Each role build's wasm (pkg/agent, pkg/app) is instrumented (`wasm-split --instrument`): the copy records which
//    functions ran, and exports `__write_profile`.
// 2. bench/load.mjs's two pages load the instrumented copies in Chromium (a host and its app in a frame, two
//    origins): connect, and one call. Each side then writes its profile, which the page posts here.
// 3. Each wasm is split by its profile (`wasm-split --split`): the primary module keeps what connecting and a first
//    call ran, the secondary the rest, which a page would load on its first use.
// Printed: per role build, the primary, the secondary and the whole wasm gzipped, and what a page would fetch
// before it is connected (its module, abp_wasm.js, as it is now, plus the primary) against what it fetches today,
// counted as bench/bytes.mjs counts them. Then where the primary's code is: each build is built once more with its
// function names (as bench/bytes.mjs does; the same code), and each function the profile kept is charged to the
// Rust module its name starts in (bench/bytes.mjs's parts).
import { execFileSync } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { serve } from '../www/serve.mjs';
import { partOf, readWasm } from './bytes.mjs';
import { reports, runPage } from './direct.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const tool = process.env.WASM_SPLIT
  ?? execFileSync('bash', [`${root}scripts/wasm-split.sh`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
const version = execFileSync(tool, ['--version'], { encoding: 'utf8' }).trim();
const out = `${root}target/split`;
const roles = ['agent', 'app'];
const parts = await readFile(new URL('load/parts.js', import.meta.url), 'utf8');

// The wasm features rustc and wasm-opt use here (the tool must read them, and write nothing a browser lacks).
const features = ['--enable-sign-ext', '--enable-mutable-globals', '--enable-nontrapping-float-to-int',
  '--enable-bulk-memory', '--enable-bulk-memory-opt', '--enable-reference-types', '--enable-multivalue'];
await rm(out, { recursive: true, force: true });
for (const role of roles) {
  await mkdir(`${out}/inst/${role}`, { recursive: true });
  await cp(`${root}pkg/${role}`, `${out}/inst/${role}`, { recursive: true });
  execFileSync(tool, ['--instrument', ...features, `${root}pkg/${role}/abp_wasm_bg.wasm`,
    '-o', `${out}/inst/${role}/abp_wasm_bg.wasm`]);
}

// In both pages, after bench/load/parts.js: keep the instance that has `__write_profile`, and write its profile on
// request. The host asks the app for its profile once its first call is answered, and reports both with its times.
const capture = `<script>
(() => {
  let instance;
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = async (...args) => {
    const r = await instantiate.apply(WebAssembly, args);
    const i = r.instance ?? r;
    if (i.exports.__write_profile) instance = i;
    return r;
  };
  const profile = () => {
    // The build's exports have short names, its allocator's too: the profile goes into a page grown for it, past
    // everything the allocator holds (the page is written once, at the end).
    const e = instance.exports;
    const memory = Object.values(e).find((v) => v instanceof WebAssembly.Memory);
    const size = e.__write_profile(0, 0);
    const at = memory.grow(Math.ceil(size / 65536)) * 65536;
    e.__write_profile(at, size);
    const bytes = new Uint8Array(memory.buffer, at, size);
    let s = '';
    for (const b of bytes) s += String.fromCharCode(b);
    return btoa(s);
  };
  if (window === top) {
    const replied = new Promise((ok) => addEventListener('message', (e) => { if (e.data?.profile) ok(e.data.profile); }));
    const finish = window.finish;
    window.finish = async (times) => {
      const agent = profile();
      document.querySelector('iframe').contentWindow.postMessage({ writeProfile: true }, '*');
      finish({ ...times, profiles: { agent, app: await replied } });
    };
  } else {
    addEventListener('message', (e) => { if (e.data?.writeProfile) parent.postMessage({ profile: profile() }, '*'); });
  }
})();
</script>`;

const pages = reports();
const server = await serve(0, {
  onPost: pages.onPost,
  inject: (path) => (path === '/bench/load/host.html' || path === '/bench/load/app.html' ? `<script>${parts}</script>${capture}` : undefined),
});
const { port } = server.address();
const url = `http://127.0.0.1:${port}/bench/load/host.html?build=role&pkg=/target/split/inst&app=http://localhost:${port}`;
const { times } = await runPage('chromium', url, pages, { timeoutMs: 60000 });
server.close();

const gz = (bytes) => gzipSync(bytes, { level: 9 }).length;
const kb = (n) => (n / 1000).toFixed(1);
console.log(`wasm-split (${version}) by a profile of connecting and one call (Chromium), each role build; KB gzipped`);
console.log('');
console.log('| build | wasm now | primary | secondary | JS | before connected now | before connected, split |');
console.log('|---|---|---|---|---|---|---|');
for (const role of roles) {
  const dir = `${out}/${role}`;
  await mkdir(dir, { recursive: true });
  await writeFile(`${dir}/profile`, Buffer.from(times.profiles[role], 'base64'));
  execFileSync(tool, ['--split', ...features, `${root}pkg/${role}/abp_wasm_bg.wasm`, `--profile=${dir}/profile`,
    '-o1', `${dir}/primary.wasm`, '-o2', `${dir}/secondary.wasm`]);
  const whole = gz(await readFile(`${root}pkg/${role}/abp_wasm_bg.wasm`));
  const primary = gz(await readFile(`${dir}/primary.wasm`));
  const secondary = gz(await readFile(`${dir}/secondary.wasm`));
  const js = gz(await readFile(`${root}pkg/${role}/abp_wasm.js`));
  console.log(`| ${role} | ${kb(whole)} | ${kb(primary)} | ${kb(secondary)} | ${kb(js)} | ${kb(js + whole)} | ${kb(js + primary)} |`);
}

// Where each primary's code is: the functions the profile kept, by part, in a build with names (the same code).
const names = `${root}target/split-named`;
for (const role of roles) {
  execFileSync('bash', [`${root}scripts/build.sh`, '--wasm-only', `${names}/${role}`, '--no-default-features', '--features', role],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ABP_WASM_OPT_G: '-g' } });
  const printed = execFileSync(tool, [`--print-profile=${out}/${role}/profile`, ...features, `${root}pkg/${role}/abp_wasm_bg.wasm`],
    { encoding: 'utf8' });
  // The profile names a function by its place among the module's own functions (after the imported ones).
  const kept = new Set(printed.split('\n').filter((l) => l.startsWith('+ ')).map((l) => Number(l.slice(2))));
  const named = readWasm(await readFile(`${names}/${role}/abp_wasm_bg.wasm`));
  const shipped = readWasm(await readFile(`${root}pkg/${role}/abp_wasm_bg.wasm`));
  if (named.bodies.some((b, i) => Buffer.compare(b.bytes, shipped.bodies[i]?.bytes ?? Buffer.alloc(0)) !== 0)) {
    throw new Error(`the ${role} build with names has other code than pkg/'s: run \`npm run build\` first`);
  }
  const first = Math.min(...named.bodies.map((b) => b.index));
  const parts = new Map();
  for (const b of named.bodies.filter((b) => kept.has(b.index - first))) {
    const part = partOf(b.name);
    parts.set(part, [...(parts.get(part) ?? []), b.bytes]);
  }
  const rows = [...parts].map(([part, bytes]) => ({ part, raw: bytes.reduce((n, b) => n + b.length, 0), gz: gz(Buffer.concat(bytes)) }))
    .sort((a, b) => b.gz - a.gz);
  console.log('');
  console.log(`The ${role} primary's code: ${kept.size} of ${named.bodies.length} functions; each part gzipped alone (data, ${kb(gz(Buffer.concat(named.data)))} KB, is all in the primary)`);
  console.log('');
  console.log('| part | raw B | gzipped B |');
  console.log('|---|---|---|');
  for (const r of rows) console.log(`| ${r.part} | ${r.raw} | ${r.gz} |`);
}

// SPLIT_PKG=1: a copy of the role builds that loads split, in target/split/pkg (for `LOAD_AB=target/split/pkg node
// bench/load.mjs`): each build's primary as its wasm, the secondary beside it, and its module with a loader in front.
// The loader gives the primary its placeholders, and once the page is idle after the primary started (connecting
// waits for the app: idle time) it fetches and compiles the secondary. The first placeholder called instantiates it
// on the primary's table and memory (fetching it at once, in one synchronous request, if it has not arrived: a
// placeholder must answer before it returns) and calls the function it put there. A profile that covers connecting
// and the first call leaves none to call before.
const loader = `const __splitSecondary = new URL('abp_wasm_bg.secondary.wasm', import.meta.url);
let __splitPrimary;
let __splitTable;
let __splitModule;
const __splitFetch = () => {
  const request = new XMLHttpRequest();
  request.open('GET', __splitSecondary, false);
  request.overrideMimeType('text/plain; charset=x-user-defined');
  request.send();
  const text = request.responseText;
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 255;
  return new WebAssembly.Module(bytes);
};
const __splitLoad = () => {
  if (__splitTable) return;
  const module = __splitModule ?? __splitFetch();
  new WebAssembly.Instance(module, { primary: __splitPrimary.exports });
  // The table the placeholders sit in is the one wasm-split added last (before it: the module's own function table).
  const tables = WebAssembly.Module.imports(module).filter((i) => i.kind === 'table' && i.name !== '__wbindgen_externrefs');
  __splitTable = __splitPrimary.exports[tables[tables.length - 1].name];
};
{
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = async function (module, imports) {
    if (!(module instanceof WebAssembly.Module)) return instantiate.apply(WebAssembly, arguments);
    const placeholders = {};
    for (const i of WebAssembly.Module.imports(module)) {
      if (i.module === 'placeholder.deferred') {
        placeholders[i.name] = (...args) => { __splitLoad(); return __splitTable.get(Number(i.name))(...args); };
      }
    }
    const instance = await instantiate.call(WebAssembly, module, { ...imports, 'placeholder.deferred': placeholders });
    __splitPrimary = instance;
    const idle = globalThis.requestIdleCallback ?? ((f) => setTimeout(f, 50));
    idle(() => WebAssembly.compileStreaming(fetch(__splitSecondary)).then((m) => { __splitModule = m; }, () => {}));
    return instance;
  };
  // (The load bench's pages have already split it into these two steps, and time them.)
  if (String(WebAssembly.instantiateStreaming).includes('[native code]')) {
    WebAssembly.instantiateStreaming = async (source, imports) => {
      const module = await WebAssembly.compileStreaming(source);
      return { module, instance: await WebAssembly.instantiate(module, imports) };
    };
  }
}
`;
if (process.env.SPLIT_PKG) {
  for (const role of roles) {
    const dir = `${out}/pkg/${role}`;
    await mkdir(dir, { recursive: true });
    await cp(`${root}pkg/${role}`, dir, { recursive: true });
    await cp(`${out}/${role}/primary.wasm`, `${dir}/abp_wasm_bg.wasm`);
    await cp(`${out}/${role}/secondary.wasm`, `${dir}/abp_wasm_bg.secondary.wasm`);
    await writeFile(`${dir}/abp_wasm.js`, loader + await readFile(`${root}pkg/${role}/abp_wasm.js`, 'utf8'));
  }
  console.log('');
  console.log(`A copy that loads split: ${out}/pkg (LOAD_AB=target/split/pkg node bench/load.mjs)`);
}
