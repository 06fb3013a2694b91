// Adds what wasm-pack cannot generate to pkg/: the ABP bootstrap script, shipped as `abp-wasm/bootstrap.js`
// (a classic script for the page's <head>) and as the string export `ABP_BOOTSTRAP` (to inline it in
// server-rendered HTML). Run by scripts/build.sh after wasm-pack.
import { readFileSync, writeFileSync } from 'node:fs';
import { minify } from './minify-js.mjs';

// Minified, like the rest of the package's JS (src/web/bootstrap.js keeps its comments).
const source = minify(readFileSync('src/web/bootstrap.js', 'utf8'));
writeFileSync('pkg/bootstrap.js', source);

/** Appends `ABP_BOOTSTRAP` to the build in `dir` (the full package and the app build serve window.abp). */
function addBootstrap(dir) {
  const js = `${dir}/abp_wasm.js`;
  let code = readFileSync(js, 'utf8');
  if (!code.includes('export const ABP_BOOTSTRAP')) {
    code += `\n/** The ABP bootstrap script (the text of bootstrap.js), to inline in the page's <head>. */\n`
      + `export const ABP_BOOTSTRAP = ${JSON.stringify(source)};\n`;
    writeFileSync(js, code);
  }

  const dts = `${dir}/abp_wasm.d.ts`;
  let types = readFileSync(dts, 'utf8');
  if (!types.includes('ABP_BOOTSTRAP')) {
    const decl = '/** The ABP bootstrap script (the text of `abp-wasm/bootstrap.js`): inline it as a classic `<script>` at the\n'
      + ' * top of the page\'s `<head>`, so `window.abp` calls made before the wasm loads wait for `exposeGlobal()`. */\n'
      + 'export const ABP_BOOTSTRAP: string;\n\n';
    const at = types.indexOf('export type InitInput');
    types = at >= 0 ? types.slice(0, at) + decl + types.slice(at) : types + '\n' + decl;
    writeFileSync(dts, types);
  }
}
addBootstrap('pkg');
addBootstrap('pkg/app');

const manifest = 'pkg/package.json';
const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
pkg.files = [...new Set([...(pkg.files ?? []), 'bootstrap.js', 'agent', 'app'])];
// The role builds as subpath exports: a host page imports 'abp-wasm/agent', an iframe app 'abp-wasm/app'.
const entry = (dir) => ({ types: `./${dir}abp_wasm.d.ts`, default: `./${dir}abp_wasm.js` });
pkg.exports = {
  '.': entry(''),
  './agent': entry('agent/'),
  './app': entry('app/'),
  './bootstrap.js': './bootstrap.js',
  './abp_wasm_bg.wasm': './abp_wasm_bg.wasm',
  './agent/abp_wasm_bg.wasm': './agent/abp_wasm_bg.wasm',
  './app/abp_wasm_bg.wasm': './app/abp_wasm_bg.wasm',
  './package.json': './package.json',
};
pkg.sideEffects = ['./snippets/*', './agent/snippets/*', './app/snippets/*'];
writeFileSync(manifest, JSON.stringify(pkg, null, 2) + '\n');
console.log('finish-pkg: added bootstrap.js, ABP_BOOTSTRAP and the agent/app subpath exports to pkg/');
