// Bundles each build's generated module and its snippets (src/web/*.js, which wasm-bindgen ships as modules of
// their own under snippets/) into the one file abp_wasm.js, and removes snippets/. A page that imports the
// package then fetches one JS file instead of a module and, only once it has been parsed, the modules it imports:
// on a cold load that second round of requests cost more than fetching and compiling the wasm (BENCHMARKS.md,
// "Load to connected"). Run by scripts/build.sh after short-names.mjs and before finish-pkg.mjs and the minifier.
//
// esbuild writes an exported class as `var AbpClient = class _AbpClient {`, which the minifier would rename
// (`AbpClient.name` would no longer be "AbpClient"); each is turned back into `export class AbpClient {`. Checked:
// the bundle exports the names the module did, imports nothing, and still finds its wasm beside it; a build
// where that fails stops. Usage: node scripts/bundle-js.mjs DIR...
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

for (const dir of process.argv.slice(2)) {
  const file = `${dir}/abp_wasm.js`;
  const before = readFileSync(file, 'utf8');
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
