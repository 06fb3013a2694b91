// Prints the gzipped size of every build in pkg/ (what a page downloads: the wasm and the one JS file), then
// of the whole package as published (every file `npm pack` would put in it, each gzipped on its own, summed); with --json writes the builds' sizes to stdout as one object for bench/run.mjs.
// Usage: node scripts/sizes.mjs [--json] [PKG_DIR]   (default pkg)
import { execFileSync } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';

const gz = (buf) => gzipSync(buf, { level: 9 }).length;

export function sizes(pkg = 'pkg') {
  // discover: what the full build's discover() loads on its first call.
  const builds = { full: pkg, agent: join(pkg, 'agent'), app: join(pkg, 'app'), discover: join(pkg, 'discover') };
  const result = {};
  for (const [name, dir] of Object.entries(builds)) {
    if (!existsSync(join(dir, 'abp_wasm_bg.wasm'))) throw new Error(`sizes: ${dir} has no build (run scripts/build.sh)`);
    const wasm = gz(readFileSync(join(dir, 'abp_wasm_bg.wasm')));
    const js = gz(readFileSync(join(dir, 'abp_wasm.js')));
    result[name] = { wasm, js, total: wasm + js };
  }
  return result;
}

/** The package as published: the files `npm pack` would put in it, each gzipped on its own, and their sum. */
export function published(pkg = 'pkg') {
  const [{ files }] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--silent'], { cwd: pkg }));
  const result = { files: files.length, total: 0 };
  for (const { path } of files) result.total += gz(readFileSync(join(pkg, path)));
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const pkg = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'pkg';
  const s = sizes(pkg);
  if (process.argv.includes('--json')) console.log(JSON.stringify(s));
  else {
    for (const [name, { wasm, js, total }] of Object.entries(s)) {
      console.log(`size: ${name.padEnd(5)} ${(total / 1000).toFixed(1)} KB gzipped (wasm ${wasm} B + JS ${js} B)`);
    }
    const all = Object.values(s).reduce((sum, { total }) => sum + total, 0);
    const p = published(pkg);
    console.log(`size: the ${Object.keys(s).length} builds ${all} B gzipped; the published package ${p.total} B gzipped`
      + ` (its ${p.files} files, each gzipped, summed: typings, bootstrap and Vite plugin included)`);
  }
}
