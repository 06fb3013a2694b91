// Instantiates every build's wasm with its generated JS in Node (initSync): a wasm import the shipped JS no
// longer provides (a snippet function dropped, a name shortened on one side only) fails here, at build time,
// instead of in a user's page. Usage: node scripts/check-link.mjs DIR...
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

let failed = false;
for (const dir of process.argv.slice(2)) {
  try {
    const js = await import(pathToFileURL(resolve(dir, 'abp_wasm.js')).href);
    js.initSync({ module: readFileSync(resolve(dir, 'abp_wasm_bg.wasm')) });
  } catch (e) {
    console.error(`check-link: ${dir}: ${e}`);
    failed = true;
  }
}
if (failed) process.exit(1);
console.log(`check-link: ${process.argv.length - 2} builds instantiate with their JS`);
