// Reprints the generated JS and the snippets without comments and indentation (scripts/build.sh explains why
// and how it stays safe). Usage: node scripts/strip-js.mjs FILE...
import ts from 'typescript';
import { readFileSync, writeFileSync } from 'node:fs';
const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });
const parse = (file, text) => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
const shape = (node, out = []) => {
  out.push(node.kind);
  if (node.kind !== ts.SyntaxKind.SourceFile) {
    for (const k of ['text', 'rawText', 'operator', 'keywordToken', 'token']) {
      if (typeof node[k] === 'string' || typeof node[k] === 'number') out.push(`${k}=${node[k]}`);
    }
  }
  if (ts.isVariableDeclarationList(node)) out.push(`decl=${node.flags & 7}`);
  out.push('(');
  ts.forEachChild(node, (child) => { shape(child, out); });
  out.push(')');
  return out.join(' ');
};
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, 'utf8');
  const want = shape(parse(file, text));
  // wasm-bindgen's first line points Deno and TypeScript at the typings: keep it.
  const directive = text.match(/^\/\* @ts-self-types="[^"]*" \*\/\n/)?.[0] ?? '';
  const printed = printer.printFile(parse(file, text));
  const out = [directive + printed.replace(/^[ \t]+/gm, ''), directive + printed]
    .find((candidate) => shape(parse(file, candidate)) === want);
  if (out) writeFileSync(file, out);
  else console.warn(`build: ${file} is shipped as generated (stripping it changed its syntax tree)`);
}
