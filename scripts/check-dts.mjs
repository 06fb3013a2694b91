// Checks the generated typings of every build: the public part of pkg/abp_wasm.d.ts (and of the role builds
// pkg/agent/, pkg/app/) must match its golden copy in tests/golden/ (so API changes are deliberate) and must
// not say `any`. `node scripts/check-dts.mjs --update` accepts a change.
// One part is left as wasm-bindgen generates it and is exempt from the `any` check (README.md says so):
// `InitOutput`, what `init()` and `initSync()` return, which types the wasm's raw exports (closure shims and
// class methods under shortened names, not API) and gives some of them `any`. The rest of the file after
// `InitInput` (`init`, `initSync` and their input types) is not in the golden copy but is checked for `any`.
import { readFileSync, writeFileSync } from 'node:fs';

const builds = [
  ['pkg/abp_wasm.d.ts', 'tests/golden/abp_wasm.d.ts'],
  ['pkg/agent/abp_wasm.d.ts', 'tests/golden/agent.d.ts'],
  ['pkg/app/abp_wasm.d.ts', 'tests/golden/app.d.ts'],
];
let failed = false;
for (const [file, golden] of builds) {
  const generated = readFileSync(file, 'utf8');
  // The golden copy ends before InitInput: what follows is wasm-bindgen's init code (see the top of this file).
  const cut = generated.indexOf('export type InitInput');
  const pub = (cut >= 0 ? generated.slice(0, cut) : generated).trimEnd() + '\n';
  const init = (cut >= 0 ? generated.slice(cut) : '').replace(/^export interface InitOutput \{[\s\S]*?^\}$/m, '');
  if (process.argv.includes('--update')) {
    writeFileSync(golden, pub);
    console.log(`check-dts: wrote ${golden}`);
    continue;
  }
  const anys = (pub + init).split('\n').filter((l) => /\bany\b/.test(l.replace(/\/\/.*|\/\*.*?\*\/|^\s*\*.*/g, '')));
  if (anys.length) {
    console.error(`check-dts: \`any\` on the public surface of ${file}:\n` + anys.join('\n'));
    failed = true;
  }
  let expected = '';
  try { expected = readFileSync(golden, 'utf8'); } catch {}
  if (expected !== pub) {
    console.error(`check-dts: ${file} differs from ${golden}. If the API change is intended, run:\n  node scripts/check-dts.mjs --update`);
    const a = expected.split('\n'), b = pub.split('\n');
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (a[i] !== b[i]) { console.error(`first difference at line ${i + 1}:\n- ${a[i]}\n+ ${b[i]}`); break; }
    }
    failed = true;
  }
}
if (failed) process.exit(1);
console.log('check-dts: the public typings of the three builds a page imports match their golden copies, no `any` outside `InitOutput`');
