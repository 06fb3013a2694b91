// Checks the generated typings: the public part of pkg/abp_wasm.d.ts must match tests/golden/abp_wasm.d.ts
// (so API changes are deliberate) and must not say `any`. `node scripts/check-dts.mjs --update` accepts a change.
import { readFileSync, writeFileSync } from 'node:fs';

const generated = readFileSync('pkg/abp_wasm.d.ts', 'utf8');
// The part after InitInput describes raw wasm exports (closure shims with hashed names): not public API.
const cut = generated.indexOf('export type InitInput');
const pub = (cut >= 0 ? generated.slice(0, cut) : generated).trimEnd() + '\n';
const golden = 'tests/golden/abp_wasm.d.ts';
if (process.argv.includes('--update')) {
  writeFileSync(golden, pub);
  console.log(`check-dts: wrote ${golden}`);
  process.exit(0);
}
const anys = pub.split('\n').filter((l) => /\bany\b/.test(l.replace(/\/\/.*|\/\*.*?\*\/|^\s*\*.*/g, '')));
if (anys.length) {
  console.error('check-dts: `any` on the public surface:\n' + anys.join('\n'));
  process.exit(1);
}
let expected = '';
try { expected = readFileSync(golden, 'utf8'); } catch {}
if (expected !== pub) {
  console.error(`check-dts: pkg/abp_wasm.d.ts differs from ${golden}. If the API change is intended, run:\n  node scripts/check-dts.mjs --update`);
  const a = expected.split('\n'), b = pub.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) { console.error(`first difference at line ${i + 1}:\n- ${a[i]}\n+ ${b[i]}`); break; }
  }
  process.exit(1);
}
console.log('check-dts: public typings match the golden copy, no `any`');
