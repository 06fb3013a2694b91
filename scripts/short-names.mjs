// Gives the names that link the wasm and its generated JS short names, in both files (scripts/build.sh says
// why and how it stays safe). Run on the generated layout, before minify-js. Usage:
// node scripts/short-names.mjs DIR...
//
// - The imports from './abp_wasm_bg.js' (wasm-bindgen's generated functions, `__wbg_<name>_<16 hex digits>`):
//   each gets a short name (a, b, …), and the module itself the name `a`, in the wasm's import section and as
//   keys of the JS import object. The snippets' imports keep their export names (the JS passes each snippet's
//   module namespace); their modules are named `b`, `c`, … instead of their paths.
// - The wasm's function exports (`abpclient_connect`, closure shims named after their full Rust types): each
//   gets a short name (xa, xb, …) in the export section, in every `wasm.<name>` of the JS, and in the raw
//   exports' typings (`InitOutput` in abp_wasm.d.ts, and abp_wasm_bg.wasm.d.ts). The memory and the externref
//   table keep their names.
// Every rename is checked: a name not found where it should be, or still found afterwards, fails the build
// (wasm-bindgen's generated code changed shape); nothing is shipped half-renamed or as generated.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const uleb = (b, i) => { let r = 0, s = 0, x; do { x = b[i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80); return [r, i]; };
const enc = (n) => { const o = []; do { let x = n & 0x7f; n = Math.floor(n / 128); if (n) x |= 0x80; o.push(x); } while (n); return Buffer.from(o); };
const str = (s) => Buffer.concat([enc(Buffer.byteLength(s)), Buffer.from(s)]);
const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const short = (n) => { let s = ''; for (n += 1; n > 0; n = Math.floor((n - 1) / 52)) s = letters[(n - 1) % 52] + s; return s; };
const escape = (s) => s.replace(/[$.*+?^(){}|[\]\\]/g, '\\$&');
const BG = './abp_wasm_bg.js';
const BG_SHORT = 'a';

/** The wasm with its imports from BG and its function exports renamed; the two maps of old → new names. */
function renameWasm(w, file) {
  const imports = new Map();
  const modules = new Map([[BG, BG_SHORT]]);
  const exports = new Map();
  const parts = [w.subarray(0, 8)];
  for (let i = 8; i < w.length;) {
    const [size, start] = uleb(w, i + 1);
    const end = start + size;
    if (w[i] === 2) {
      let [count, k] = uleb(w, start);
      const out = [enc(count)];
      for (let c = 0; c < count; c++) {
        let len;
        [len, k] = uleb(w, k); const module = w.subarray(k, k += len).toString();
        [len, k] = uleb(w, k); const name = w.subarray(k, k += len).toString();
        const desc = k, kind = w[k++];
        if (kind === 0) [, k] = uleb(w, k);
        else if (kind === 1 || kind === 2) {
          if (kind === 1) k++;
          let flags; [flags, k] = uleb(w, k); [, k] = uleb(w, k); if (flags & 1) [, k] = uleb(w, k);
        } else if (kind === 3) k += 2;
        else throw new Error(`${file}: import kind ${kind}`);
        if (!modules.has(module)) modules.set(module, short(modules.size));
        if (module === BG && !imports.has(name)) imports.set(name, short(imports.size));
        out.push(str(modules.get(module)), str(module === BG ? imports.get(name) : name), w.subarray(desc, k));
      }
      const body = Buffer.concat(out);
      parts.push(Buffer.from([2]), enc(body.length), body);
    } else if (w[i] === 7) {
      let [count, k] = uleb(w, start);
      const out = [enc(count)];
      for (let c = 0; c < count; c++) {
        let len;
        [len, k] = uleb(w, k); const name = w.subarray(k, k += len).toString();
        const desc = k, kind = w[k++];
        [, k] = uleb(w, k);
        // Kind 0 is a function; the memory (2) and the externref table (1) keep their names.
        if (kind === 0) exports.set(name, `x${short(exports.size)}`);
        out.push(str(exports.get(name) ?? name), w.subarray(desc, k));
      }
      const body = Buffer.concat(out);
      parts.push(Buffer.from([7]), enc(body.length), body);
    } else parts.push(w.subarray(i, end));
    i = end;
  }
  return { wasm: Buffer.concat(parts), imports, exports, modules };
}

/** The generated JS with the import object's keys and BG's names in it, and every `wasm.<export>`, renamed; or
 *  a reason not to. */
function renameJs(js, imports, exports, modules) {
  const from = js.indexOf('const import0 = {'), to = js.indexOf(`"${BG}": import0`, from);
  if (from < 0 || to < 0) return { why: `no import object (\`const import0 = {\` … \`"${BG}": import0\`)` };
  let object = js.slice(from, to);
  for (const [name, renamed] of imports) {
    const key = new RegExp(`(\\n[ \\t]*)${escape(name)}: `);
    const next = object.replace(key, `$1${renamed}: `);
    if (next === object) return { why: `the import ${name} is not a key of the import object` };
    if (key.test(next)) return { why: `the import ${name} is a key of the import object twice` };
    object = next;
  }
  let out = js.slice(0, from) + object + js.slice(to);
  for (const [module, renamed] of modules) {
    // wasm-bindgen quotes these keys; minify-js drops the quotes.
    const next = out.replaceAll(`"${module}": import`, `"${renamed}": import`);
    if (next === out) return { why: `the module ${module} is not a key of the import object` };
    out = next;
  }
  for (const [name, renamed] of exports) {
    out = out.replace(new RegExp(`\\bwasm\\.${escape(name)}\\b`, 'g'), `wasm.${renamed}`);
    if (new RegExp(`\\.${escape(name)}\\b`).test(out)) return { why: `the export ${name} is still read other than as wasm.${name}` };
  }
  for (const module of modules.keys()) {
    if (out.includes(`"${module}": import`)) return { why: `the module ${module} is still a key of the import object` };
  }
  return { js: out };
}

/** Typings of the raw exports with the new names (lines `readonly <name>:` and `export const <name>:`); or a
 *  reason not to: each function export must be named there once. */
function renameTypes(text, exports) {
  const seen = new Map();
  const out = text.replace(/^(\s*(?:readonly|export const) )([\w$]+)(:)/gm, (line, head, name, colon) => {
    if (!exports.has(name)) return line;
    seen.set(name, (seen.get(name) ?? 0) + 1);
    return head + exports.get(name) + colon;
  });
  const wrong = [...exports.keys()].find((name) => seen.get(name) !== 1);
  return wrong ? { why: `the export ${wrong} is typed ${seen.get(wrong) ?? 0} times, not once` } : { types: out };
}

/** Stops the build: the generated code is not what this script rewrites. */
function fail(dir, why) {
  console.error(`short-names: ${dir}: ${why}.
  wasm-bindgen's generated code no longer has the shape scripts/short-names.mjs rewrites (a wasm-bindgen update?).
  Update scripts/short-names.mjs to the new output; the build does not ship wasm-bindgen's long names instead,
  since that package would be larger than the one measured.`);
  process.exit(1);
}

// Every build is renamed in memory and checked first; the files are written only if all of them pass.
const writes = [];
for (const dir of process.argv.slice(2)) {
  const wasmFile = `${dir}/abp_wasm_bg.wasm`, jsFile = `${dir}/abp_wasm.js`;
  const { wasm, imports, exports, modules } = renameWasm(readFileSync(wasmFile), wasmFile);
  const { js, why } = renameJs(readFileSync(jsFile, 'utf8'), imports, exports, modules);
  if (!js) fail(dir, why);
  writes.push([jsFile, js], [wasmFile, wasm]);
  for (const file of [`${dir}/abp_wasm.d.ts`, `${dir}/abp_wasm_bg.wasm.d.ts`]) {
    if (!existsSync(file)) fail(dir, `${file} is missing`);
    const { types, why: typesWhy } = renameTypes(readFileSync(file, 'utf8'), exports);
    if (!types) fail(file, typesWhy);
    writes.push([file, types]);
  }
}
for (const [file, content] of writes) writeFileSync(file, content);
console.log(`short-names: ${process.argv.length - 2} builds: imports, modules and function exports renamed in the wasm, JS and typings`);
