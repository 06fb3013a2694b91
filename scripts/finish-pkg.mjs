// Adds what wasm-pack cannot generate to pkg/: the ABP bootstrap script, shipped as `abp-wasm/bootstrap.js`
// (a classic script for the page's <head>), as the string export `ABP_BOOTSTRAP` (to inline it in
// server-rendered HTML) and inlined by the Vite plugin `abp-wasm/vite`; the plugin itself; the package's
// `exports` map; and typings of `[Symbol.dispose]()` that compile without TypeScript's `esnext.disposable` lib.
// Run by scripts/build.sh after wasm-pack, once per build of pkg/. Anything not where wasm-pack puts it fails
// the build: none of these files is optional.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { minify } from './minify-js.mjs';

/** Stops the build: pkg/ is not the output this script finishes. */
function fail(why) {
  console.error(`finish-pkg: ${why}.
  scripts/finish-pkg.mjs expects pkg/ as wasm-pack has just written it (run \`bash scripts/build.sh\`, which
  rebuilds it); if wasm-pack's or wasm-bindgen's output changed, update the script.`);
  process.exit(1);
}

// Minified, like the rest of the package's JS (src/web/bootstrap.js keeps its comments).
const source = minify(readFileSync('src/web/bootstrap.js', 'utf8'));
writeFileSync('pkg/bootstrap.js', source);

/** Appends `ABP_BOOTSTRAP` to the build in `dir` (the full package and the app build serve window.abp). */
function addBootstrap(dir) {
  const js = `${dir}/abp_wasm.js`;
  const code = readFileSync(js, 'utf8');
  if (code.includes('export const ABP_BOOTSTRAP')) fail(`${js} already has ABP_BOOTSTRAP (finished twice?)`);
  const dts = `${dir}/abp_wasm.d.ts`;
  const types = readFileSync(dts, 'utf8');
  if (types.includes('export const ABP_BOOTSTRAP')) fail(`${dts} already has ABP_BOOTSTRAP (finished twice?)`);
  // Before wasm-bindgen's init typings, so that it is part of the public typings (scripts/check-dts.mjs).
  const at = types.indexOf('export type InitInput');
  if (at < 0) fail(`${dts} has no \`export type InitInput\` to put ABP_BOOTSTRAP before`);
  writeFileSync(js, code + `\n/** The ABP bootstrap script (the text of bootstrap.js), to inline in the page's <head>. */\n`
    + `export const ABP_BOOTSTRAP = ${JSON.stringify(source)};\n`);
  const decl = '/** The ABP bootstrap script (the text of `abp-wasm/bootstrap.js`): inline it as a classic `<script>` at the\n'
    + ' * top of the page\'s `<head>`, so `window.abp` calls made before the wasm loads wait for `exposeGlobal()`. */\n'
    + 'export const ABP_BOOTSTRAP: string;\n\n';
  writeFileSync(dts, types.slice(0, at) + decl + types.slice(at));
}
addBootstrap('pkg');
addBootstrap('pkg/app');

/** Types the `[Symbol.dispose]()` of each class in the build in `dir` by the program's lib. wasm-bindgen declares
 *  it as a plain member, and `Symbol.dispose` is only in TypeScript's `esnext.disposable` lib, so a strict
 *  program whose lib lacks it (as ES2022's default lib does) fails on the package's own typings. The generated
 *  JS adds the method only where the runtime has `Symbol.dispose`; so the typings declare it only where the
 *  program's lib declares `Symbol.dispose` (and `using` works there as before), and add nothing global: a
 *  declaration of `Symbol.dispose` or a reference to the lib would tell every program it exists, which not
 *  every browser's runtime does. */
function typeDisposeByLib(dir) {
  const dts = `${dir}/abp_wasm.d.ts`;
  const types = readFileSync(dts, 'utf8');
  if (types.includes('DisposeMethod')) fail(`${dts} already has DisposeMethod (finished twice?)`);
  const classes = [];
  let typed = types.replace(/^export class (\w+) \{\n((?:    .*\n|\n)*?)    \[Symbol\.dispose\]\(\): void;\n((?:    .*\n|\n)*?)\}\n/gm,
    (_, name, before, after) => {
      classes.push(name);
      return `export class ${name} {\n${before}${after}}\nexport interface ${name} extends DisposeMethod {}\n`;
    });
  if (!classes.length) fail(`${dts} has no class with \`[Symbol.dispose](): void;\` to rewrite`);
  if (typed.includes('Symbol.dispose')) fail(`${dts} names Symbol.dispose where this script does not rewrite it`);
  const last = `export interface ${classes.at(-1)} extends DisposeMethod {}\n`;
  const at = typed.lastIndexOf(last) + last.length;
  const decl = '\n/** `[Symbol.dispose]()`, the same as `free()`: declared where the program\'s lib has `Symbol.dispose` (TypeScript\'s\n'
    + ' * `esnext.disposable`, `esnext`, or `@types/node`), as the JS adds it only where the runtime has `Symbol.dispose`. */\n'
    + 'type DisposeMethod = SymbolConstructor extends { readonly dispose: infer K extends symbol } ? { [P in K]: () => void } : {};\n'
    + '// The module exports only what it names as exported: DisposeMethod is not API.\n'
    + 'export {};\n';
  typed = typed.slice(0, at) + decl + typed.slice(at);
  writeFileSync(dts, typed);
}
typeDisposeByLib('pkg');
typeDisposeByLib('pkg/agent');
typeDisposeByLib('pkg/app');

// `abp-wasm/vite`: a Vite plugin that lets the dev server serve the package's files wherever npm put them (a
// package installed from a folder is a link to outside the project, which Vite's dev server refuses to serve), and
// keeps Vite's dependency pre-bundling away from it; that inlines the bootstrap at the top of each page's <head>
// (Vite leaves a classic <script src> alone and does not ship it, so a plain bootstrap tag 404s in a built site);
// and that in `vite build` has each page preload the package's wasm it loads, so that its fetch starts beside the
// page's module instead of after it (what that saves on a cold load: BENCHMARKS.md, "Load to connected").
const packageName = JSON.parse(readFileSync('pkg/package.json', 'utf8')).name;
writeFileSync('pkg/vite.js', `// abp-wasm/vite: lets the dev server serve this package's files wherever npm put them and keeps Vite's
// pre-bundling away from them; inlines the ABP bootstrap script at the top of <head>, in dev and in \`vite build\`;
// in \`vite build\`, also a <link rel="preload"> in each page for the abp-wasm wasm its modules load.
import { realpathSync } from 'node:fs';
import { dirname, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const ABP_BOOTSTRAP = ${JSON.stringify(source)};
const NAME = ${JSON.stringify(packageName)};
// This package's folder as Vite's dev server names its files: by their real path, also when npm linked the
// package (\`npm install ./pkg\`), with forward slashes as Vite writes paths.
const DIR = realpathSync(dirname(fileURLToPath(import.meta.url))).replace(/\\\\/g, '/');

/** The wasm files of this package that \`chunk\` and the chunks it imports load, by their names in \`bundle\`. */
function wasmOf(chunk, bundle, seen = new Set()) {
  if (!chunk || seen.has(chunk.fileName)) return [];
  seen.add(chunk.fileName);
  const own = Object.values(bundle)
    .filter((a) => a.type === 'asset' && /abp_wasm_bg-[^/]*\\.wasm$/.test(a.fileName) && chunk.code.includes(posix.basename(a.fileName)))
    .map((a) => a.fileName);
  return [...own, ...chunk.imports.flatMap((name) => wasmOf(bundle[name], bundle, seen))];
}

/** A Vite plugin. \`pages\`: the HTML files that get the bootstrap (their names relative to the project root,
 *  e.g. ['app.html']); default: every page. \`preload\`: false leaves the wasm preload out. */
export default function abpBootstrap(options = {}) {
  const { pages, preload = true } = options;
  if (pages !== undefined && !(Array.isArray(pages) && pages.every((p) => typeof p === 'string'))) {
    throw new TypeError('abpBootstrap({ pages }): pages must be an array of HTML file names');
  }
  if (typeof preload !== 'boolean') throw new TypeError('abpBootstrap({ preload }): preload must be true or false');
  const wanted = (path) => pages === undefined || pages.some((p) => path.replace(/^\\//, '') === p.replace(/^\\.?\\//, ''));
  let base = '/';
  return {
    name: 'abp-wasm',
    config() {
      // Pre-bundling copies a dependency's code into Vite's cache folder, and the Vites that pre-bundle with
      // esbuild leave its \`new URL('abp_wasm_bg.wasm', import.meta.url)\` pointing there, where the dev server
      // answers the wasm's URL with the page's HTML. Each of the package's builds is one module that imports no
      // other package: there is nothing to bundle.
      return { optimizeDeps: { exclude: [NAME] } };
    },
    configResolved(config) {
      base = config.base;
      // The dev server serves files only from its allow list, by default the project's workspace root; a package
      // installed from a folder is a link to outside it, and its wasm's fetch would be refused (403). Added to the
      // list Vite resolved, which holds its defaults, or what the config set, as they would be without the plugin.
      const { allow } = config.server.fs;
      if (config.command === 'serve' && !allow.some((dir) => DIR === dir || DIR.startsWith(dir.replace(/\\/?$/, '/')))) {
        allow.push(DIR);
      }
    },
    transformIndexHtml: {
      order: 'post',
      handler(html, ctx) {
        const tags = wanted(ctx.path) ? [{ tag: 'script', children: ABP_BOOTSTRAP, injectTo: 'head-prepend' }] : [];
        if (preload && ctx.bundle && ctx.chunk) {
          // The URL Vite gives the page's own assets: under an absolute base, from it; under a relative one
          // ('./' or ''), from the page's folder.
          const page = posix.dirname(ctx.path.replace(/^\\//, ''));
          const href = (file) => (base.startsWith('/') || /^[a-z]+:/i.test(base) ? base + file : posix.relative(page, file) || file);
          for (const file of new Set(wasmOf(ctx.chunk, ctx.bundle))) {
            tags.push({ tag: 'link', attrs: { rel: 'preload', href: href(file).replace(/^(?![./]|[a-z]+:)/i, './'), as: 'fetch', type: 'application/wasm', crossorigin: '' }, injectTo: 'head' });
          }
        }
        return { html, tags };
      },
    },
  };
}
`);
writeFileSync('pkg/vite.d.ts', `import type { Plugin } from 'vite';

export interface AbpBootstrapOptions {
  /** The HTML pages that get the bootstrap, relative to the project root (e.g. \`['app.html']\`); default: all. */
  pages?: string[];
  /** In \`vite build\`, each page gets a \`<link rel="preload">\` for the abp-wasm wasm its modules load, so its
   *  fetch starts with the page's module instead of after it (default \`true\`). */
  preload?: boolean;
}

/** The Vite plugin of abp-wasm, for the dev server (\`vite\`) and \`vite build\`:
 *  - it lets the dev server serve the package's files (its wasm) wherever npm put them: a package installed from
 *    a folder (\`npm install ./pkg\`) is a link to outside the project, which Vite's dev server otherwise refuses
 *    (403, "outside of Vite serving allow list"); the package's folder is added to \`server.fs.allow\` as Vite
 *    resolved it, so its default (the workspace root) or the list the config set stays;
 *  - it excludes the package from Vite's dependency pre-bundling (\`optimizeDeps.exclude\`), which, where Vite
 *    pre-bundles with esbuild, separates its modules from their wasm;
 *  - it inlines the ABP bootstrap script at the top of each page's \`<head>\` (or of \`pages\`), so \`window.abp\`
 *    calls made before the app's module has loaded wait for \`exposeGlobal()\`;
 *  - in \`vite build\`, it preloads the package's wasm in each page that loads it (\`preload: false\` leaves it out).
 *
 *  \`\`\`js
 *  // vite.config.js
 *  import abp from 'abp-wasm/vite';
 *  export default { plugins: [abp()] };
 *  \`\`\` */
export default function abpBootstrap(options?: AbpBootstrapOptions): Plugin;
`);

const manifest = 'pkg/package.json';
const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
// wasm-pack lists the full build's files; the role builds and the files written here are added.
// Its snippets are in abp_wasm.js (scripts/bundle-js.mjs).
const generated = ['abp_wasm_bg.wasm', 'abp_wasm.js', 'abp_wasm.d.ts'];
const unlisted = generated.filter((f) => !pkg.files?.includes(f));
if (unlisted.length) fail(`${manifest} does not list ${unlisted.join(', ')} in \`files\``);
if (pkg.exports) fail(`${manifest} already has \`exports\` (finished twice, or written by a newer wasm-pack)`);
if (['pkg', 'pkg/agent', 'pkg/app', 'pkg/discover'].some((d) => existsSync(`${d}/snippets`))) fail('a build still has snippets/ (bundle-js.mjs not run?)');
pkg.files = [...new Set([...pkg.files.filter((f) => f !== 'snippets'), 'bootstrap.js', 'vite.js', 'vite.d.ts', 'agent', 'app', 'discover'])];
// The role builds as subpath exports: a host page imports 'abp-wasm/agent', an iframe app 'abp-wasm/app'.
const entry = (dir) => ({ types: `./${dir}abp_wasm.d.ts`, default: `./${dir}abp_wasm.js` });
pkg.exports = {
  '.': entry(''),
  './agent': entry('agent/'),
  './app': entry('app/'),
  './bootstrap.js': './bootstrap.js',
  './vite': { types: './vite.d.ts', default: './vite.js' },
  './abp_wasm_bg.wasm': './abp_wasm_bg.wasm',
  './agent/abp_wasm_bg.wasm': './agent/abp_wasm_bg.wasm',
  './app/abp_wasm_bg.wasm': './app/abp_wasm_bg.wasm',
  './discover/abp_wasm_bg.wasm': './discover/abp_wasm_bg.wasm',
  './package.json': './package.json',
};
// No module of the package does anything on import but declare (the snippets that used to be listed here are
// bundled in, and have no top-level statements either).
pkg.sideEffects = false;
// Every file the manifest names must be there.
const named = [...pkg.files, 'discover/abp_wasm.js', ...Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e)))];
const absent = named.filter((f) => !existsSync(`pkg/${f}`));
if (absent.length) fail(`${manifest} would name files that pkg/ does not have: ${absent.join(', ')}`);
writeFileSync(manifest, JSON.stringify(pkg, null, 2) + '\n');
console.log('finish-pkg: added bootstrap.js, ABP_BOOTSTRAP, the abp-wasm/vite plugin and the agent/app subpath exports to pkg/,'
  + ' and typed [Symbol.dispose]() by the program\'s lib');
