// Minifies the JS a page loads from pkg/ (the generated module and its snippets in every build) with esbuild:
// whitespace, comments, syntax and local names. Run last by scripts/build.sh, after the steps that read the
// generated layout (short-names, shake-snippets, finish-pkg, which minifies bootstrap.js with `minify`). The
// typings keep every doc comment; the sources in src/web keep theirs.
//
// Safe by construction and checked: esbuild is given no output format, so it keeps the module as a module and
// every exported class its own name (`AbpClient.name` stays "AbpClient"); a file is only replaced if the names
// it exports are the same afterwards, else it ships as it was, with a warning. Before minifying, the generated
// module's repeated `import * as importN from "<snippet>"` lines (wasm-bindgen writes one per extern block,
// all of the same file) become one, and so do the duplicate keys of the import object, which all name it.
// Usage: node scripts/minify-js.mjs FILE...
import { transformSync } from 'esbuild';
import ts from 'typescript';
import { readFileSync, writeFileSync } from 'node:fs';

/** `text` minified (no output format: a module stays a module, a classic script stays a script). */
export function minify(text) {
  return transformSync(text, { minify: true, charset: 'utf8', legalComments: 'none', logLevel: 'error' }).code;
}

/** The names a module exports, sorted (empty for a classic script). */
function exportsOf(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const names = [];
  for (const stmt of source.statements) {
    const exported = ts.canHaveModifiers(stmt)
      && ts.getModifiers(stmt)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    if (exported && ts.getModifiers(stmt).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword)) names.push('default');
    else if (exported && (ts.isFunctionDeclaration(stmt) || ts.isClassDeclaration(stmt)) && stmt.name) {
      names.push(stmt.name.text);
    } else if (exported && ts.isVariableStatement(stmt)) {
      for (const d of stmt.declarationList.declarations) names.push(d.name.getText(source));
    } else if (ts.isExportDeclaration(stmt) && stmt.exportClause && ts.isNamedExports(stmt.exportClause)) {
      for (const e of stmt.exportClause.elements) names.push(e.name.text);
    } else if (ts.isExportDeclaration(stmt)) names.push(`* from ${stmt.moduleSpecifier?.getText(source)}`);
    else if (ts.isExportAssignment(stmt)) names.push('default');
  }
  return names.sort().join(',');
}

/** One `import * as` per module and one import-object key per module (the generated module only). */
function mergeNamespaceImports(text) {
  const first = new Map(); // module specifier -> the first namespace name that imports it
  const alias = new Map(); // a later namespace name -> the first
  const kept = text.replace(/^import \* as (import\d+) from ("[^"\n]+");?\n/gm, (line, name, from) => {
    if (!first.has(from)) { first.set(from, name); return line; }
    alias.set(name, first.get(from));
    return '';
  });
  if (!alias.size) return text;
  const seen = new Set();
  const merged = kept.replace(/^([ \t]*)("[^"\n]+"): (import\d+),\n/gm, (line, indent, key, name) => {
    const target = alias.get(name) ?? name;
    if (seen.has(key)) return '';
    seen.add(key);
    return `${indent}${key}: ${target},\n`;
  });
  // Every use of a dropped name was a key of the import object; if one is left, keep the file as it was.
  return [...alias.keys()].some((name) => new RegExp(`\\b${name}\\b`).test(merged)) ? text : merged;
}

const files = import.meta.url === `file://${process.argv[1]}` ? process.argv.slice(2) : [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  // wasm-bindgen's first line points Deno and TypeScript at the typings: keep it.
  const directive = text.match(/^\/\* @ts-self-types="[^"]*" \*\/\n/)?.[0] ?? '';
  let out;
  try {
    out = directive + minify(mergeNamespaceImports(text));
  } catch (e) {
    console.warn(`build: ${file} is shipped unminified (${e.message.split('\n')[0]})`);
    continue;
  }
  if (exportsOf(file, out) !== exportsOf(file, text)) {
    console.warn(`build: ${file} is shipped unminified (its exports would change)`);
    continue;
  }
  writeFileSync(file, out);
}
