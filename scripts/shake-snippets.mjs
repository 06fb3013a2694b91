// Drops from each build's snippets (the copies of src/web/*.js wasm-bindgen puts next to the generated JS) the
// top-level functions, classes and constants that build never reaches, as a bundler's tree shaking would: the
// agent build does not ship the app's handler glue, nor the app build the client's. What a build reaches
// starts from the names its wasm imports from the snippet and the names its generated JS imports from it, and
// follows every identifier inside what is kept (a property name that happens to match keeps a function: the
// shake only ever keeps too much). A snippet the shake cannot handle (imports or re-exports of its own, no name
// its build uses found, or a result that would no longer parse or export every name its build uses) fails the
// build: nothing is shipped whole instead. Usage: node scripts/shake-snippets.mjs DIR...
import ts from 'typescript';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });
const parse = (file, text) => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);

/** The names a top-level statement declares (none for other statements). */
function declared(stmt) {
  if ((ts.isFunctionDeclaration(stmt) || ts.isClassDeclaration(stmt)) && stmt.name) return [stmt.name.text];
  if (ts.isVariableStatement(stmt)) {
    return stmt.declarationList.declarations.flatMap((d) => (ts.isIdentifier(d.name) ? [d.name.text] : []));
  }
  return [];
}

/** Every identifier inside `node`. */
function identifiers(node, out = new Set()) {
  if (ts.isIdentifier(node)) out.add(node.text);
  ts.forEachChild(node, (child) => { identifiers(child, out); });
  return out;
}

function snippetFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.js')) out.push(join(d, e.name));
    }
  };
  if (existsSync(join(dir, 'snippets'))) walk(join(dir, 'snippets'));
  return out;
}

/** Stops the build: the snippet is not one the shake can handle. */
function fail(file, why) {
  console.error(`shake-snippets: ${file}: ${why}.
  scripts/shake-snippets.mjs cannot shake this snippet (a change in src/web or in wasm-bindgen's output?). Update
  the script, or the snippet; the build does not ship the whole snippet instead, since that package would be
  larger than the one measured.`);
  process.exit(1);
}

for (const dir of process.argv.slice(2)) {
  const imports = WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(join(dir, 'abp_wasm_bg.wasm'))));
  const js = readFileSync(join(dir, 'abp_wasm.js'), 'utf8');
  for (const file of snippetFiles(dir)) {
    const path = `./${relative(dir, file)}`;
    const used = new Set(imports.filter((i) => i.module === path).map((i) => i.name));
    for (const m of js.matchAll(/import \{([^}]*)\} from ["']([^"']+)["']/g)) {
      if (m[2] === path) for (const name of m[1].split(',')) used.add(name.trim().split(/\s+as\s+/)[0]);
    }
    if (!used.size) fail(file, `neither ${dir}/abp_wasm_bg.wasm nor ${dir}/abp_wasm.js imports a name from ${path}`);
    const text = readFileSync(file, 'utf8');
    const source = parse(file, text);
    if (source.parseDiagnostics?.length) fail(file, 'it does not parse');
    if (source.statements.some((s) => ts.isImportDeclaration(s) || ts.isExportDeclaration(s))) {
      fail(file, 'it has import or export declarations of its own, which the shake does not follow');
    }
    const byName = new Map();
    for (const stmt of source.statements) for (const name of declared(stmt)) byName.set(name, stmt);
    // Reachable: the used names, everything a statement that declares nothing refers to, and so on.
    const keep = new Set();
    const queue = [...used];
    for (const stmt of source.statements) if (!declared(stmt).length) queue.push(...identifiers(stmt));
    while (queue.length) {
      const stmt = byName.get(queue.pop());
      if (!stmt || keep.has(stmt)) continue;
      keep.add(stmt);
      queue.push(...identifiers(stmt));
    }
    const statements = source.statements.filter((s) => !declared(s).length || keep.has(s));
    if (statements.length === source.statements.length) continue;
    const shaken = printer.printFile(ts.factory.updateSourceFile(source, statements)).replace(/^[ \t]+/gm, '');
    const check = parse(file, shaken);
    const exported = new Set(check.statements
      .filter((s) => s.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
      .flatMap(declared));
    const missing = [...used].filter((name) => !exported.has(name));
    if (check.parseDiagnostics?.length) fail(file, 'the shaken file does not parse');
    if (missing.length) fail(file, `the shaken file no longer exports ${missing.join(', ')}`);
    writeFileSync(file, shaken);
    console.log(`shake-snippets: ${file}: ${source.statements.length - statements.length} unused top-level declarations dropped`);
  }
}
