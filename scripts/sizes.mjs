// Prints the gzipped size of every build in pkg/ (what a page downloads: the wasm, the generated JS and its
// snippets), and with --json writes them to stdout as one object for bench/run.mjs.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';

const gz = (buf) => gzipSync(buf, { level: 9 }).length;

/** The files a page loads for the build in `dir`. */
function snippetFiles(dir) {
  const root = join(dir, 'snippets');
  if (!existsSync(root)) return [];
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith('.js')) out.push(join(d, e.name));
    }
  };
  walk(root);
  return out.sort();
}

export function sizes(pkg = 'pkg') {
  const builds = { full: pkg, agent: join(pkg, 'agent'), app: join(pkg, 'app') };
  const result = {};
  for (const [name, dir] of Object.entries(builds)) {
    if (!existsSync(join(dir, 'abp_wasm_bg.wasm'))) continue;
    const wasm = gz(readFileSync(join(dir, 'abp_wasm_bg.wasm')));
    const js = gz(Buffer.concat([join(dir, 'abp_wasm.js'), ...snippetFiles(dir)].map((f) => readFileSync(f))));
    result[name] = { wasm, js, total: wasm + js };
  }
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const s = sizes();
  if (process.argv.includes('--json')) console.log(JSON.stringify(s));
  else for (const [name, { wasm, js, total }] of Object.entries(s)) {
    console.log(`size: ${name.padEnd(5)} ${(total / 1000).toFixed(1)} KB gzipped (wasm ${wasm} B + JS ${js} B)`);
  }
}
