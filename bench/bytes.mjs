// Where the bytes are: each build's wasm code attributed to the parts of the source it comes from, and what each
// optional feature adds to the full build. Writes the tables to BENCHMARKS.md ("Where the bytes are").
//
// Usage: node bench/bytes.mjs [--features] [NAMED_PKG] (the last step of `npm run bench`, after `npm run build`)
//   Builds each of the four wasm (full, agent, app, discovery) once more with function names kept, which cost no
//   code (ABP_WASM_OPT_G=-g scripts/build.sh --wasm-only, into a temporary folder; cargo's output is the one the
//   package was built from, so only wasm-bindgen and wasm-opt run again), and checks that each has the same code
//   and data, byte for byte, as the wasm in pkg/ it stands for: the tables are of the wasm that is shipped.
//   NAMED_PKG: a copy of pkg/ built with the names instead (ABP_WASM_OPT_G=-g bash scripts/build.sh), not built.
//   --features: also builds the full package's wasm once without each optional feature (a minute or so each,
//     a build of its own) and prints what each feature adds, gzipped.
//
// Each function's body is charged to the Rust module its name starts in (`abp_wasm::web::client`, the allocator,
// std, wasm-bindgen's generated shims…), its data segments to "data". "gzipped, marginal" is what the build's
// code and data would lose, gzipped, without that part's bytes (gzip -9 of the rest, the rest in its order):
// what the part costs a download, given everything else. The marginal figures of the parts add up to less than
// the whole, since gzip shares what parts have in common.
import { existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const gz = (buf) => gzipSync(buf, { level: 9 }).length;

/** A wasm module's function bodies (with their names, from the name section) and data segments. */
export function readWasm(bytes) {
  if (Buffer.from(bytes.subarray(0, 8)).toString('hex') !== '0061736d01000000') throw new Error('bytes: not a wasm module (version 1)');
  let at = 8;
  const leb = () => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = bytes[at++];
      if (b === undefined) throw new Error('bytes: the wasm ends inside a number');
      result += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (b < 0x80) return result;
    }
  };
  const name = () => { const n = leb(); const s = Buffer.from(bytes.subarray(at, at + n)).toString('utf8'); at += n; return s; };
  const limits = () => { const flags = bytes[at++]; leb(); if (flags & 1) leb(); };
  let imported = 0;
  const bodies = [];
  const data = [];
  const names = new Map();
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    const end = at + size;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        name();
        name();
        const kind = bytes[at++];
        if (kind === 0) { leb(); imported++; } else if (kind === 1) { at++; limits(); } else if (kind === 2) limits();
        else if (kind === 3) at += 2;
        else if (kind === 4) { at++; leb(); } else throw new Error(`bytes: an import of unknown kind ${kind}`);
      }
    } else if (id === 10) {
      for (let n = leb(), i = 0; i < n; i++) {
        const len = leb();
        bodies.push({ index: imported + i, bytes: bytes.subarray(at, at + len) });
        at += len;
      }
    } else if (id === 11) {
      data.push(bytes.subarray(at, end));
    } else if (id === 0 && name() === 'name') {
      while (at < end) {
        const sub = bytes[at++];
        const len = leb();
        const subEnd = at + len;
        if (sub === 1) for (let n = leb(); n > 0; n--) { const i = leb(); names.set(i, name()); }
        at = subEnd;
      }
    }
    at = end;
  }
  return { bodies: bodies.map((b) => ({ ...b, name: names.get(b.index) ?? `function ${b.index}` })), data };
}

/** The part of the source a function's name places it in. */
export function partOf(fname) {
  // `<abp_wasm[hash]::web::client::ClientInner>::drive`, `abp_wasm[hash]::core::schema::check::<…>`: the module.
  // `<JsValue as abp_wasm[hash]::core::payload::Payload>::get`: an impl of the SDK's trait, charged to the trait.
  const own = /^<*abp_wasm(?:\[[0-9a-f]+\])?::((?:[a-z_][a-z0-9_]*::)*)/.exec(fname)
    ?? /^<[^ <>]+ as abp_wasm(?:\[[0-9a-f]+\])?::((?:[a-z_][a-z0-9_]*::)*)/.exec(fname);
  if (own) {
    // The path may run on into a function's name (`schema::check`): it stops at the first segment that is not a
    // module of src/ (a file or folder there).
    const modules = [];
    for (const seg of own[1].split('::').filter(Boolean)) {
      const at = join('src', ...modules, seg);
      if (!existsSync(`${at}.rs`) && !existsSync(at)) break;
      modules.push(seg);
    }
    return ['abp_wasm', ...modules].join('::');
  }
  // An exported method (`abpclient_connect`): wasm-bindgen's wrapper, often with the method's body inlined.
  if (/^[a-z]+_[A-Za-z_]+(?: externref shim| multivalue shim)*$/.test(fname)) return 'exported methods (shims, bodies inlined)';
  if (/^__wbg|^__wbindgen|^__externref|^<?wasm_bindgen\[/.test(fname)) return 'wasm-bindgen runtime and closure shims';
  if (/talc/.test(fname)) return 'allocator (talc)';
  // Generic code of other crates made for the SDK's own types: drop glue, Rc, Vec, futures.
  if (/abp_wasm/.test(fname)) return 'generic code over the SDK\'s types (drop glue, Vec, Rc, futures)';
  if (/^<?(?:core|alloc|std)\[/.test(fname) || /^__rust|^__rdl|^memcpy|^memset|^memmove|^memcmp/.test(fname)) return 'std, alloc, core';
  if (/^<?(?:js_sys|web_sys|gloo)/.test(fname)) return 'js-sys, web-sys, gloo';
  return 'other';
}

/** Raw and marginal gzipped bytes of each part of one build's wasm. */
export function attribute(bytes) {
  const { bodies, data } = readWasm(bytes);
  const parts = new Map();
  const add = (part, buf) => { if (!parts.has(part)) parts.set(part, []); parts.get(part).push(buf); };
  for (const b of bodies) add(partOf(b.name), b.bytes);
  for (const d of data) add('data (strings, tables)', d);
  const everything = [...bodies.map((b) => b.bytes), ...data];
  const whole = gz(Buffer.concat(everything));
  const rows = [...parts].map(([part, bufs]) => {
    const mine = new Set(bufs);
    return {
      part,
      raw: bufs.reduce((s, b) => s + b.length, 0),
      marginal: whole - gz(Buffer.concat(everything.filter((b) => !mine.has(b)))),
    };
  });
  rows.sort((a, b) => b.marginal - a.marginal);
  return { rows, raw: everything.reduce((s, b) => s + b.length, 0), whole, file: gz(bytes) };
}

const table = (title, { rows, raw, whole }) => [
  `${title}: code and data ${raw} B raw, ${whole} B gzipped`,
  '',
  '| part | raw B | gzipped, marginal B |',
  '|---|---|---|',
  ...rows.map((r) => `| ${r.part} | ${r.raw} | ${r.marginal} |`),
  '',
];

/** The features of the shipped full build (scripts/full-features.sh). */
const fullFeatures = () => execFileSync('bash', ['scripts/full-features.sh']).toString().trim().split(',');

/** What each feature adds to the full build's wasm, gzipped: the full build against one without it. */
function featureCosts() {
  const all = fullFeatures();
  const dir = mkdtempSync(join(tmpdir(), 'abp-bytes-'));
  try {
    const build = (out, features) => {
      execFileSync('bash', ['scripts/build.sh', '--wasm-only', out, '--no-default-features', '--features', features.join(',')], { stdio: 'inherit' });
      return gz(readFileSync(join(out, 'abp_wasm_bg.wasm')));
    };
    const full = build(join(dir, 'full'), all);
    return all.map((f) => ({ feature: f, adds: full - build(join(dir, f), all.filter((x) => x !== f)) }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The four builds, as scripts/build.sh makes them: their name in the tables, their folder in pkg/ and their
 *  features (the full build's read when asked for). A copy of build.sh's list, held to it by `sameCode`: a build
 *  made with other features has other code than pkg/'s. */
const BUILDS = [
  ['agent', 'agent', () => ['agent']],
  ['app', 'app', () => ['app']],
  ['full', '.', fullFeatures],
  ['discovery', 'discover', () => ['discovery']],
];

/** Each build's wasm with function names kept, in a folder of `dir` named as in pkg/. */
function buildNamed(dir) {
  for (const [, sub, features] of BUILDS) {
    execFileSync('bash', ['scripts/build.sh', '--wasm-only', join(dir, sub), '--no-default-features', '--features', features().join(',')],
      { stdio: 'inherit', env: { ...process.env, ABP_WASM_OPT_G: '-g' } });
  }
  return dir;
}

/** Fails unless `named` has the code and data of `shipped`, byte for byte. */
function sameCode(build, named, shipped) {
  const a = readWasm(named);
  const b = readWasm(shipped);
  const same = a.bodies.length === b.bodies.length && a.data.length === b.data.length
    && a.bodies.every((f, i) => Buffer.compare(f.bytes, b.bodies[i].bytes) === 0)
    && a.data.every((d, i) => Buffer.compare(d, b.data[i]) === 0);
  if (!same) {
    console.error(`bytes: the ${build} build with names has other code than pkg/'s (${a.bodies.length} against ${b.bodies.length} functions): pkg/ is not built from this checkout; run \`npm run build\` first`);
    process.exit(1);
  }
}

/** What a page fetches before it is connected, and in all, per build a page imports (each file gzipped, summed),
 *  against the targets: a role build's page fetches at most 35 KB before it is connected, and the full package
 *  is at most 100 KB in all. Before connected: the build's module and its wasm; in all: with what it loads on
 *  first use (the full build's `discover()` loads the discovery build). */
export function fetchedTable(pkg = 'pkg') {
  const kb = (b) => (b / 1000).toFixed(1);
  const files = (sub) => ['abp_wasm.js', 'abp_wasm_bg.wasm'].map((f) => join(pkg, sub, f));
  const size = (paths) => paths.reduce((sum, f) => sum + gz(readFileSync(f)), 0);
  const rows = [
    ['agent (`abp-wasm/agent`)', files('agent'), files('agent'), 35, null],
    ['app (`abp-wasm/app`)', files('app'), files('app'), 35, null],
    ['full (`abp-wasm`)', files('.'), [...files('.'), ...files('discover')], null, 100],
  ];
  const out = ['What a page fetches before it is connected, and in all (each file gzipped, summed)', '',
    '| build | before connected, KB | target | in all, KB | target |', '|---|---|---|---|---|'];
  for (const [name, before, all, beforeTarget, allTarget] of rows) {
    const b = size(before);
    const a = size(all);
    const judge = (v, t) => (t === null ? '—' : `≤ ${t}: ${v <= t * 1000 ? 'met' : `not met (${kb(v - t * 1000)} KB over)`}`);
    out.push(`| ${name} | ${kb(b)} | ${judge(b, beforeTarget)} | ${kb(a)} | ${judge(a, allTarget)} |`);
  }
  return [...out, ''];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const given = process.argv.slice(2).find((a) => !a.startsWith('--'));
  if (!existsSync('pkg/abp_wasm_bg.wasm')) {
    console.error('bytes: no pkg/abp_wasm_bg.wasm; run `npm run build` first');
    process.exit(2);
  }
  const tmp = given ? undefined : mkdtempSync(join(tmpdir(), 'abp-named-'));
  const out = [`${new Date().toISOString().slice(0, 10)}, \`node bench/bytes.mjs${process.argv.includes('--features') ? ' --features' : ''}\`:`, '',
    ...fetchedTable()];
  try {
    const named = given ?? buildNamed(tmp);
    for (const [build, sub] of BUILDS) {
      const wasm = readFileSync(join(named, sub, 'abp_wasm_bg.wasm'));
      sameCode(build, wasm, readFileSync(join('pkg', sub, 'abp_wasm_bg.wasm')));
      out.push(...table(`The ${build} build`, attribute(wasm)));
    }
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
  if (process.argv.includes('--features')) {
    out.push('What each feature adds to the full build\'s wasm, gzipped (the full build against the same without it;'
      + ' `discovery-lazy` is the full build\'s `discover()` that loads the discovery build):', '',
      '| feature | gzipped B |', '|---|---|', ...featureCosts().map((c) => `| \`${c.feature}\` | ${c.adds} |`), '');
  }
  const text = out.join('\n');
  console.log(text);
  const begin = '<!-- where the bytes are: written by bench/bytes.mjs -->';
  const end = '<!-- end of where the bytes are -->';
  const doc = readFileSync('BENCHMARKS.md', 'utf8');
  const from = doc.indexOf(begin);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) console.error('bytes: BENCHMARKS.md has no "where the bytes are" markers; not written');
  else {
    writeFileSync('BENCHMARKS.md', `${doc.slice(0, from + begin.length)}\n${text}\n${doc.slice(to)}`);
    console.log('bytes: wrote BENCHMARKS.md');
  }
}
