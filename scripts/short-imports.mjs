// Gives the wasm's imports from './abp_wasm_bg.js' short names in both the wasm and the generated JS
// (scripts/build.sh explains why and how it stays safe). Usage: node scripts/short-imports.mjs DIR...
import { readFileSync, writeFileSync } from 'node:fs';
const uleb = (b, i) => { let r = 0, s = 0, x; do { x = b[i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80); return [r, i]; };
const enc = (n) => { const o = []; do { let x = n & 0x7f; n = Math.floor(n / 128); if (n) x |= 0x80; o.push(x); } while (n); return Buffer.from(o); };
const str = (s) => Buffer.concat([enc(Buffer.byteLength(s)), Buffer.from(s)]);
const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const short = (n) => { let s = ''; for (n += 1; n > 0; n = Math.floor((n - 1) / 52)) s = letters[(n - 1) % 52] + s; return s; };
for (const dir of process.argv.slice(2)) {
  const wasmFile = `${dir}/abp_wasm_bg.wasm`, jsFile = `${dir}/abp_wasm.js`;
  const w = readFileSync(wasmFile);
  const names = new Map();
  const parts = [w.subarray(0, 8)];
  for (let i = 8; i < w.length;) {
    const [size, start] = uleb(w, i + 1);
    const end = start + size;
    if (w[i] !== 2) { parts.push(w.subarray(i, end)); i = end; continue; }
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
      else throw new Error(`${wasmFile}: import kind ${kind}`);
      let renamed = name;
      if (module === './abp_wasm_bg.js') {
        if (!names.has(name)) names.set(name, short(names.size));
        renamed = names.get(name);
      }
      out.push(str(module), str(renamed), w.subarray(desc, k));
    }
    const body = Buffer.concat(out);
    parts.push(Buffer.from([2]), enc(body.length), body);
    i = end;
  }
  let js = readFileSync(jsFile, 'utf8');
  const from = js.indexOf('const import0 = {'), to = js.indexOf('"./abp_wasm_bg.js": import0', from);
  let object = from >= 0 && to > from ? js.slice(from, to) : '';
  const missing = [...names].filter(([name, renamed]) => {
    const key = name.replace(/[$.*+?^(){}|[\]\\]/g, '\\$&');
    const next = object.replace(new RegExp(`(\\n[ \\t]*)${key}: `), `$1${renamed}: `);
    if (next === object) return true;
    object = next;
    return false;
  });
  if (missing.length) { console.warn(`build: ${dir} keeps its import names (${missing[0][0]} not found)`); continue; }
  writeFileSync(jsFile, js.slice(0, from) + object + js.slice(to));
  writeFileSync(wasmFile, Buffer.concat(parts));
}
