// Scores scenarios the suite runs but does not count for a revision (its `not_scored` list: pending against the
// suite's own reference server, or an extension) and that abp-peer mcp --http claims to pass: each named scenario
// must have run, and none of its checks may be a FAILURE or a WARNING.
//   node score.mjs RESULTS_DIR LIST_FILE
// LIST_FILE names one scenario per line; `#` starts a comment.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const [dir, listFile] = process.argv.slice(2);
if (!dir || !listFile) {
  console.error('usage: node score.mjs RESULTS_DIR LIST_FILE');
  process.exit(2);
}
const wanted = readFileSync(listFile, 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean);
const runs = readdirSync(dir);
let bad = 0;
for (const scenario of wanted) {
  // Results are in server-<scenario>-<timestamp>/checks.json.
  const run = runs.find((r) => r.startsWith(`server-${scenario}-`) && /^\d{4}-/.test(r.slice(`server-${scenario}-`.length)));
  if (!run) {
    console.log(`✗ ${scenario}: did not run`);
    bad += 1;
    continue;
  }
  const checks = JSON.parse(readFileSync(join(dir, run, 'checks.json'), 'utf8'));
  const failed = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  const passed = checks.filter((c) => c.status === 'SUCCESS').length;
  if (failed.length === 0 && passed > 0) {
    console.log(`✓ ${scenario}: ${passed} passed (scored here)`);
  } else {
    bad += 1;
    console.log(`✗ ${scenario}: ${passed} passed, ${failed.length} failed`);
    for (const c of failed) console.log(`    ${c.status} ${c.id}: ${c.errorMessage ?? ''}`);
  }
}
process.exit(bad ? 1 : 0);
