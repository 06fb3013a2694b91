// Minifies the JS a page loads from pkg/ (each build's one module, scripts/bundle-js.mjs) with esbuild:
// whitespace, comments, syntax and local names. Run last by scripts/build.sh, after the steps that read the
// generated layout (short-names, finish-pkg, which minifies bootstrap.js with `minify`). The
// typings keep every doc comment; the sources in src/web keep theirs.
//
// Safe by construction and checked: esbuild is given no output format, so it keeps the module as a module and
// every exported class its own name (`AbpClient.name` stays "AbpClient"); and a file is only replaced if the
// names it exports are the same afterwards. A file esbuild cannot minify, or whose exports would change, fails
// the build (no file is shipped unminified instead). Usage: node scripts/minify-js.mjs FILE...
import { transformSync } from 'esbuild';
import ts from 'typescript';
import { readFileSync, writeFileSync } from 'node:fs';

/** `text` minified (no output format: a module stays a module, a classic script stays a script). */
export function minify(text) {
  return transformSync(text, { minify: true, charset: 'utf8', legalComments: 'none', logLevel: 'error' }).code;
}

/** The names a binding (an identifier or a destructuring pattern) declares. */
function bound(name) {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((e) => (ts.isOmittedExpression(e) ? [] : bound(e.name)));
}

/** The names a module exports, sorted (empty for a classic script). */
export function exportsOf(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const names = [];
  for (const stmt of source.statements) {
    const exported = ts.canHaveModifiers(stmt)
      && ts.getModifiers(stmt)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (exported && ts.getModifiers(stmt).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword)) names.push('default');
    else if (exported && (ts.isFunctionDeclaration(stmt) || ts.isClassDeclaration(stmt)) && stmt.name) {
      names.push(stmt.name.text);
    } else if (exported && ts.isVariableStatement(stmt)) {
      for (const d of stmt.declarationList.declarations) names.push(...bound(d.name));
    } else if (ts.isExportDeclaration(stmt) && stmt.exportClause && ts.isNamedExports(stmt.exportClause)) {
      for (const e of stmt.exportClause.elements) names.push(e.name.text);
    } else if (ts.isExportDeclaration(stmt)) names.push(`* from ${stmt.moduleSpecifier?.getText(source)}`);
    else if (ts.isExportAssignment(stmt)) names.push('default');
  }
  return names.sort().join(',');
}

/** Stops the build: `file` cannot be shipped minified. */
function fail(file, why) {
  console.error(`minify-js: ${file}: ${why}.
  Find out why (an esbuild or wasm-bindgen update? a change in src/web?) and fix the source or
  scripts/minify-js.mjs; the build does not ship the file unminified instead, since that package would be larger
  than the one measured.`);
  process.exit(1);
}

const files = import.meta.url === `file://${process.argv[1]}` ? process.argv.slice(2) : [];
if (import.meta.url === `file://${process.argv[1]}` && !files.length) fail('(no files)', 'no file to minify was given');
const outputs = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  // wasm-bindgen's first line points Deno and TypeScript at the typings: keep it.
  const directive = text.match(/^\/\* @ts-self-types="[^"]*" \*\/\n/)?.[0] ?? '';
  let out;
  try {
    out = directive + minify(text);
  } catch (e) {
    fail(file, `esbuild cannot minify it (${e.errors?.[0]?.text ?? e.message.split('\n')[0]})`);
  }
  const before = exportsOf(file, text), after = exportsOf(file, out);
  if (after !== before) fail(file, `its exports would change (from ${before} to ${after})`);
  outputs.push([file, out]);
}
for (const [file, out] of outputs) writeFileSync(file, out);
if (files.length) console.log(`minify-js: ${files.length} files minified, their exports unchanged`);
