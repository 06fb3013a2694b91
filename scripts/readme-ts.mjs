// Compiles the README's TypeScript examples (its ```ts blocks) as they are written, with `tsc --strict` and
// skipLibCheck off, against the built typings: a README example that stops compiling fails the build. Each
// block becomes its own module in target/readme-ts/ (top-level await allowed); tests/types/readme-prelude.d.ts
// declares what the examples take as given (an `iframe`, an `app`, a Playwright `page`, …), and 'abp-wasm',
// 'abp-wasm/agent', 'abp-wasm/app' resolve to the typings in pkg/. Errors are reported at their README line.
// ```js blocks are plain JavaScript and are not compiled.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

const dir = 'target/readme-ts';
const readme = readFileSync('README.md', 'utf8').split('\n');
const blocks = []; // { line: README line of the first code line, indent, text }
for (let i = 0; i < readme.length; i++) {
  const open = readme[i].match(/^(\s*)```ts\s*$/);
  if (!open) continue;
  const indent = open[1];
  const start = i + 1;
  let end = start;
  while (end < readme.length && readme[end].trim() !== '```') end++;
  if (end === readme.length) throw new Error(`readme-ts: the \`\`\`ts block at README.md:${i + 1} is not closed`);
  const text = readme.slice(start, end).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
  blocks.push({ line: start + 1, indent: indent.length, text });
  i = end;
}
if (blocks.length === 0) throw new Error('readme-ts: README.md has no ```ts blocks');

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const files = blocks.map((b) => {
  const name = `readme-${b.line}.ts`;
  writeFileSync(`${dir}/${name}`, b.text + '\n');
  return name;
});
const tsconfig = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: 'es2022',
    module: 'es2022',
    moduleResolution: 'bundler',
    moduleDetection: 'force',
    // No `lib`: the default one of the target, as in a plain tsconfig (tests/types/tsconfig.json).
    skipLibCheck: false,
    types: [],
    paths: {
      'abp-wasm': ['../../pkg/abp_wasm'],
      'abp-wasm/agent': ['../../pkg/agent/abp_wasm'],
      'abp-wasm/app': ['../../pkg/app/abp_wasm'],
    },
  },
  files: ['../../tests/types/readme-prelude.d.ts', ...files],
};
writeFileSync(`${dir}/tsconfig.json`, JSON.stringify(tsconfig, null, 2) + '\n');

try {
  execFileSync('node_modules/.bin/tsc', ['-p', `${dir}/tsconfig.json`, '--pretty', 'false'], { encoding: 'utf8' });
} catch (e) {
  const out = String(e.stdout || '') + String(e.stderr || '');
  // target/readme-ts/readme-N.ts(L,C) → README.md:(N + L - 1):(C + indent)
  const mapped = out.replace(/(?:target\/readme-ts\/)?readme-(\d+)\.ts\((\d+),(\d+)\)/g, (_, n, l, c) => {
    const b = blocks.find((x) => x.line === Number(n));
    return `README.md:${Number(n) + Number(l) - 1}:${Number(c) + (b ? b.indent : 0)}`;
  });
  console.error(`readme-ts: a README TypeScript example does not compile (tsc --strict against pkg/):\n${mapped}`);
  process.exit(1);
}
console.log(`readme-ts: the README's ${blocks.length} TypeScript examples compile (tsc --strict, skipLibCheck off)`);
