// Bundles each build's generated module and its snippets (src/web/*.js, which wasm-bindgen ships as modules of
// their own under snippets/) into the one file abp_wasm.js, and removes snippets/. A page that imports the
// package then fetches one JS file instead of a module and, only once it has been parsed, the modules it imports:
// on a cold load that second round of requests cost more than fetching and compiling the wasm (BENCHMARKS.md,
// "Load to connected"). Run by scripts/build.sh after short-names.mjs and before finish-pkg.mjs and the minifier.
//
// esbuild writes an exported class as `var AbpClient = class _AbpClient {`, which the minifier would rename
// (`AbpClient.name` would no longer be "AbpClient"); each is turned back into `export class AbpClient {`. Checked:
// the bundle exports the names the module did, imports nothing, and still finds its wasm beside it; a build
// where that fails stops.
//
// wasm-bindgen hands the wasm the functions it imports from a snippet unwrapped as that snippet's whole module
// namespace (`import * as import2 from "./snippets/…/value.js"` and `"c": import2` in the import object), which
// keeps every export of the snippet in the bundle, used or not. Each namespace is first replaced by an object of
// the functions the wasm imports from that module, so that esbuild drops the rest (`onlyWhatTheWasmImports`).
// Usage: node scripts/bundle-js.mjs DIR...
import { buildSync } from 'esbuild';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { exportsOf } from './minify-js.mjs';

const LAZY = './discover/abp_wasm.js';

function fail(file, why) {
  console.error(`bundle-js: ${file}: ${why}.
  scripts/bundle-js.mjs expects the module wasm-bindgen generated (run \`bash scripts/build.sh\`); if esbuild's
  output changed, update the script.`);
  process.exit(1);
}

/** `code` with each snippet namespace in the import object replaced by an object of the functions the wasm
 *  (at `wasmFile`) imports from that module, imported by name. */
function onlyWhatTheWasmImports(file, code, wasmFile) {
  const wanted = new Map();
  for (const i of WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(wasmFile)))) {
    if (!wanted.has(i.module)) wanted.set(i.module, new Set());
    wanted.get(i.module).add(i.name);
  }
  const paths = new Map();
  code = code.replace(/^import \* as (import\d+) from "(\.\/snippets\/[^"]+)";?\n/gm, (_, id, path) => { paths.set(id, path); return ''; });
  const imports = new Set();
  const done = new Set();
  code = code.replace(/^(\s*)"([\w$]+)": (import\d+),\n/gm, (line, indent, module, id) => {
    const path = paths.get(id);
    if (!path) return line;
    // wasm-bindgen lists a module once per function imported from it: one object is enough.
    if (done.has(module)) return '';
    done.add(module);
    const names = [...(wanted.get(module) ?? [])];
    if (!names.length) fail(file, `the wasm imports nothing from module ${module} (${path})`);
    for (const n of names) imports.add(`import { ${n} as __abp_${module}_${n} } from "${path}";`);
    return `${indent}"${module}": { ${names.map((n) => `${n}: __abp_${module}_${n}`).join(', ')} },\n`;
  });
  for (const id of paths.keys()) {
    if (new RegExp(`\\b${id}\\b`).test(code)) fail(file, `the module namespace ${id} is still used after it was replaced`);
  }
  return `${[...imports].join('\n')}\n${code}`;
}

for (const dir of process.argv.slice(2)) {
  const file = `${dir}/abp_wasm.js`;
  const before = readFileSync(file, 'utf8');
  writeFileSync(file, onlyWhatTheWasmImports(file, before, `${dir}/abp_wasm_bg.wasm`));
  const out = buildSync({
    entryPoints: [file], bundle: true, format: 'esm', write: false, charset: 'utf8', legalComments: 'none',
    logLevel: 'error',
    // The full build's discover() imports the discovery build beside it when first called
    // (src/web/discover/load.js): that import stays as written.
    external: [LAZY],
  });
  let code = out.outputFiles[0].text;
  const list = /\nexport \{\n([^}]*)\n\};\n$/.exec(code);
  if (!list) fail(file, 'the bundle does not end with one export list');
  code = code.slice(0, list.index);
  const kept = [];
  for (const entry of list[1].split(',').map((e) => e.trim()).filter(Boolean)) {
    const cls = new RegExp(`^var ${entry} = class(?: (_${entry}))? \\{$`, 'm');
    const found = /^[A-Za-z_$][\w$]*$/.test(entry) ? cls.exec(code) : null;
    if (!found) { kept.push(entry); continue; }
    code = code.replace(cls, `export class ${entry} {`);
    if (found[1]) code = code.replace(new RegExp(`\\b${found[1]}\\b`, 'g'), entry);
  }
  code += kept.length ? `\nexport { ${kept.join(', ')} };\n` : '\n';
  // wasm-bindgen's first line points Deno and TypeScript at the typings: keep it.
  code = (before.match(/^\/\* @ts-self-types="[^"]*" \*\/\n/)?.[0] ?? '') + code;
  const want = exportsOf(file, before), got = exportsOf(file, code);
  if (got !== want) fail(file, `the bundle would export ${got} instead of ${want}`);
  const lost = [...before.matchAll(/^export class (\w+)/gm)].map((m) => m[1]).filter((c) => !code.includes(`\nexport class ${c} {`));
  if (lost.length) fail(file, `the classes ${lost.join(', ')} are no longer declared by name`);
  if (/^\s*import\b/m.test(code) || /\bimport\(/.test(code.replaceAll(`import("${LAZY}")`, ''))) fail(file, 'the bundle still imports a module');
  if (!code.includes('new URL("abp_wasm_bg.wasm", import.meta.url)')) fail(file, 'the bundle no longer finds its wasm');
  writeFileSync(file, code);
  if (existsSync(`${dir}/snippets`)) rmSync(`${dir}/snippets`, { recursive: true });
}
console.log(`bundle-js: ${process.argv.length - 2} builds, each one JS file`);
