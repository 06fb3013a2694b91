// The consumer test: packs pkg/ (`npm pack`), installs the tarball into examples/vite-app (a web app outside
// the crate), bundles it with Vite, and drives the bundle in headless Chromium through a call and a
// cancellation. Then the same app under Vite's dev server, twice: installed from pkg/ as a folder, as the
// README's Install section says (npm links it, so its files are outside the app), in a copy of the app under
// target/; and as the tarball in examples/vite-app (in node_modules, where Vite would pre-bundle it).
// Needs `npm run build` first.
import { execSync, spawn } from 'node:child_process';
import { copyFileSync, cpSync, lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, relative, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../www/serve.mjs';

const sh = (cmd, cwd = '.') => execSync(cmd, { cwd, stdio: ['ignore', 'pipe', 'inherit'] }).toString().trim();
mkdirSync('target', { recursive: true });
const packed = sh('npm pack ./pkg --pack-destination target --silent').split('\n').pop();
copyFileSync(`target/${packed}`, 'target/abp-wasm.tgz');
console.log(`consumer: packed ${packed}`);
const app = 'examples/vite-app';
rmSync(`${app}/node_modules/abp-wasm`, { recursive: true, force: true });
rmSync(`${app}/package-lock.json`, { force: true });
sh('npm install --no-audit --no-fund --silent', app);
sh('node_modules/.bin/vite build --logLevel warn', app);
console.log('consumer: installed the tarball and bundled with Vite');

// The app again, with the package installed as `npm install <path to pkg>` makes it: a symlink to pkg/, which is
// outside the app's folder, so Vite's dev server serves its files only if abp-wasm/vite allows them. A copy, so
// that examples/vite-app keeps the tarball.
const linked = 'target/consumer-linked';
rmSync(linked, { recursive: true, force: true });
cpSync(app, linked, { recursive: true, filter: (src) => !/^(node_modules|dist|package-lock\.json)$/.test(basename(src)) });
const manifest = JSON.parse(readFileSync(`${app}/package.json`, 'utf8'));
delete manifest.dependencies['abp-wasm'];
writeFileSync(`${linked}/package.json`, JSON.stringify(manifest, null, 2) + '\n');
sh(`npm install --no-audit --no-fund --silent ${relative(linked, 'pkg')}`, linked);
if (!lstatSync(`${linked}/node_modules/abp-wasm`).isSymbolicLink()) throw new Error(`consumer: npm did not link pkg/ into ${linked}`);
console.log(`consumer: installed pkg/ as a folder (a symlink) into ${linked}`);

/** A port nothing listens on now, for Vite's dev server (--strictPort: it fails rather than pick another). */
const freePort = () => new Promise((done, fail) => {
  const probe = createServer().once('error', fail);
  probe.listen(0, '127.0.0.1', () => { const { port } = probe.address(); probe.close(() => done(port)); });
});

/** Runs `vite` (the dev server) in `dir` and drives its host page and iframe app through a call and a cancel; every
 *  response must succeed, the wasm fetches in particular (Vite answers a file outside its allow list with 403,
 *  and a path it does not have with the page's HTML, so the wasm's bytes are checked too). The server is stopped
 *  before this returns or throws. */
async function devServer(browser, dir, how) {
  const port = await freePort();
  const vite = spawn(resolve(dir, 'node_modules/.bin/vite'), ['--host', '127.0.0.1', '--port', String(port), '--strictPort'],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  vite.stdout.on('data', (d) => { log += d; });
  vite.stderr.on('data', (d) => { log += d; });
  let spawnError = null;
  const exited = new Promise((done) => {
    vite.once('exit', done);
    vite.once('error', (e) => { spawnError = e; done(); });
  });
  // What went wrong is often only in Vite's own output (why it refused a file), so a failure quotes it.
  const fail = (why) => { throw new Error(`consumer test failed (vite dev server, ${how}): ${why}\n  vite said:\n${log.trim().replace(/^/gm, '    ')}`); };
  try {
    const url = `http://127.0.0.1:${port}/index.html`;
    for (const t0 = Date.now(); ; await new Promise((r) => setTimeout(r, 100))) {
      if (spawnError) fail(`vite did not start: ${spawnError.message}`);
      if (vite.exitCode !== null) fail(`vite exited with ${vite.exitCode} before it served anything`);
      if (await fetch(url).then((r) => r.ok, () => false)) break;
      if (Date.now() - t0 > 30000) fail('vite did not serve index.html within 30 s');
    }
    const page = await browser.newPage();
    const errors = [];
    const bad = [];
    const wasm = [];
    page.on('response', async (r) => {
      if (r.status() >= 400) bad.push(`${r.status()} ${r.url()}`);
      if (r.url().endsWith('.wasm')) wasm.push({ url: r.url(), status: r.status(), magic: (await r.body().catch(() => Buffer.alloc(0))).subarray(0, 4).toString('hex') });
    });
    page.on('requestfailed', (r) => bad.push(`failed ${r.url()}`));
    const failed = new Promise((_, reject) => page.on('pageerror', (e) => { errors.push(String(e)); reject(e); }));
    failed.catch(() => {});
    await page.goto(url);
    let result;
    try {
      result = await Promise.race([page.waitForFunction(() => window.result, null, { timeout: 30000 }).then((h) => h.jsonValue()), failed]);
    } catch (e) {
      fail(`the host page did not finish: ${e.message.split('\n')[0]}; responses over 400: ${bad.join('; ') || 'none'}`);
    }
    const appFrame = page.frame({ url: /app\.html/ });
    const aborted = await appFrame.evaluate(() => window.abortedWith);
    const early = await appFrame.evaluate(async () => ({ atParse: window.abpAtParse, call: await window.earlyCall }));
    await page.close();
    console.log(`consumer: vite dev server, ${how}: result ${JSON.stringify({ sum: result.sum, cancelled: result.cancelled, code: result.code })},`
      + ` app handler aborted with "${aborted}", window.abp at parse time: ${early.atParse}; wasm ${wasm.map((w) => `${w.status} ${new URL(w.url).pathname}`).join(', ')}`);
    if (result.sum !== 42 || result.cancelled !== true || result.code !== 'CANCELLED' || aborted !== 'stop' || errors.length) {
      fail(`a call or a cancel did not work: ${JSON.stringify({ result, aborted, errors })}`);
    }
    if (early.atParse !== 'object' || early.call?.data !== 2) fail(`the bootstrap through abp-wasm/vite: ${JSON.stringify(early)}`);
    if (bad.length) fail(`responses over 400: ${bad.join('; ')}`);
    // The host and its iframe each fetched their own build's wasm, and got a wasm (its magic number).
    if (wasm.length !== 2 || wasm.some((w) => w.status !== 200 || w.magic !== '0061736d')) fail(`the wasm fetches: ${JSON.stringify(wasm)}`);
  } finally {
    vite.kill();
    await exited;
  }
}

const server = await serve(0);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    // The role builds' WebMCP: the app's exposeWebMCP(), the agent's WebMCPTransport.
    '--enable-features=WebMCP'],
});
try {
  // Which wasm each page fetched: the host page must load only the agent build, the iframe only the app build.
  const wasmOf = (page) => {
    const seen = [];
    page.on('response', async (r) => {
      if (r.url().endsWith('.wasm')) seen.push({ url: r.url(), bytes: (await r.body()).length });
    });
    return seen;
  };
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Nothing the built site asks for may be missing (a classic <script src> Vite did not ship 404s).
  const missing = [];
  page.on('response', (r) => { if (r.status() >= 400) missing.push(`${r.status()} ${r.url()}`); });
  page.on('requestfailed', (r) => missing.push(`failed ${r.url()}`));
  const hostWasm = wasmOf(page);
  await page.goto(`http://127.0.0.1:${server.address().port}/${app}/dist/index.html`);
  await page.waitForFunction(() => window.result, null, { timeout: 15000 });
  const result = await page.evaluate(() => window.result);
  const appFrame = page.frame({ url: /app\.html/ });
  // abp-wasm/vite: the bootstrap ran before the app's module (window.abp existed at parse time), and a call
  // made then waited for exposeGlobal() and was answered.
  const early = await appFrame.evaluate(async () => ({ atParse: window.abpAtParse, call: await window.earlyCall }));
  console.log(`consumer: abp-wasm/vite: window.abp at parse time: ${early.atParse}; a call made then: ${JSON.stringify(early.call?.data)}`);
  if (early.atParse !== 'object' || early.call?.success !== true || early.call?.data !== 2) {
    throw new Error(`consumer test failed (the bootstrap through abp-wasm/vite): ${JSON.stringify(early)}`);
  }
  const aborted = await appFrame.evaluate(() => window.abortedWith);
  // The app build's exposeWebMCP(): Chromium's own executeTool calls `add` in the iframe.
  await appFrame.evaluate(async () => {
    for (let t0 = Date.now(); Date.now() - t0 < 10000; await new Promise((r) => setTimeout(r, 20))) {
      if ((await document.modelContext.getTools()).some((t) => t.name === 'add')) return;
    }
    throw new Error('the tool add never appeared in document.modelContext.getTools()');
  });
  const viaWebMCP = await appFrame.evaluate(async () => {
    const add = (await document.modelContext.getTools()).find((t) => t.name === 'add');
    return JSON.parse(await document.modelContext.executeTool(add, { a: 1, b: 2 }));
  });
  console.log(`consumer: WebMCP: the agent build called a page tool (${result.webmcp}); executeTool called the app build's add (${viaWebMCP.content?.[0]?.text})`);
  if (result.webmcp !== 42 || viaWebMCP.content?.[0]?.text !== '3') {
    throw new Error(`consumer test failed (WebMCP in the role builds): ${JSON.stringify({ result, viaWebMCP })}`);
  }
  console.log(`consumer: result ${JSON.stringify(result)}, app handler aborted with "${aborted}"`);
  if (result.sum !== 42 || result.cancelled !== true || result.code !== 'CANCELLED' || aborted !== 'stop' || errors.length
    || !/speaks ABP only; import 'abp-wasm' \(the full package\) for dialect 'mcp'/.test(result.roleError)
    || !/options\.channel is the MCP-B envelope of the MCP dialect, and this build of abp-wasm speaks ABP only/.test(result.channelError)) {
    throw new Error(`consumer test failed: ${JSON.stringify({ result, aborted, errors })}`);
  }
  if (missing.length) throw new Error(`consumer test failed: the built site asked for what is not there: ${missing.join('; ')}`);
  // The host imports 'abp-wasm/agent' and its iframe 'abp-wasm/app': two different wasm files, each smaller
  // than the full package's.
  const sizes = hostWasm.map((w) => w.bytes);
  console.log(`consumer: the two pages fetched ${sizes.length} wasm files of ${sizes.join(' and ')} B`);
  const full = await browser.newPage();
  full.on('pageerror', (e) => errors.push(String(e)));
  const fullWasm = wasmOf(full);
  await full.goto(`http://127.0.0.1:${server.address().port}/${app}/dist/full.html`);
  await full.waitForFunction(() => window.fullResult, null, { timeout: 15000 });
  const fullResult = await full.evaluate(() => window.fullResult);
  console.log(`consumer: full package (MCP over a MessageChannel) result ${JSON.stringify(fullResult)}, its wasm ${fullWasm.map((w) => w.bytes).join()} B`);
  if (fullResult.sum !== 42 || errors.length) throw new Error(`consumer test (full package) failed: ${JSON.stringify({ fullResult, errors })}`);
  // Its discover(): the discovery build is fetched on the first call only, and works from a Vite bundle.
  console.log(`consumer: full package discover(): with no time to load "${fullResult.tooSoon}"; then found ${fullResult.discovered},`
    + ` again ${fullResult.again}; a bad url: ${fullResult.badUrl}; a bad timeout: ${fullResult.badTimeout};`
    + ` wasm files fetched before it ${fullResult.wasmBeforeDiscover.length}, after ${fullResult.wasmAfterDiscover.length}`);
  if (fullResult.discovered !== 'vite.full' || fullResult.again !== true || fullResult.badUrl !== 'TypeError: discover: url must be a string'
    || !/did not load within 0 ms/.test(fullResult.tooSoon ?? '') || !/^TypeError: discover: timeout must be/.test(fullResult.badTimeout)
    || fullResult.wasmBeforeDiscover.length !== 1 || fullResult.wasmAfterDiscover.length !== 2) {
    throw new Error(`consumer test (the full package's discover()) failed: ${JSON.stringify(fullResult)}`);
  }
  // The role builds leave the other role's messages unread: they must answer and count them as the full build
  // does (examples/vite-app/probe.js).
  const appProbe = await page.frame({ url: /app\.html/ }).evaluate(async () => {
    while (!window.probe) await new Promise((r) => setTimeout(r, 20));
    return window.probe;
  });
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  console.log(`consumer: other-role messages, agent build ${JSON.stringify(result.probe)}, app build ${JSON.stringify(appProbe)}`);
  if (!same(result.probe, fullResult.probeAgent) || !same(appProbe, fullResult.probeApp)) {
    throw new Error(`consumer test: a role build answers the other role's messages unlike the full build: ${JSON.stringify({
      agent: result.probe, fullAgent: fullResult.probeAgent, app: appProbe, fullApp: fullResult.probeApp })}`);
  }
  // The full page fetched its own wasm, then (for discover()) the discovery build's.
  if (sizes.length !== 2 || sizes[0] === sizes[1] || fullWasm.length !== 2 || sizes.some((b) => b >= fullWasm[0].bytes)) {
    throw new Error(`consumer test: expected the role builds' two smaller wasm files, saw ${JSON.stringify({ hostWasm, fullWasm })}`);
  }
  // abp-wasm/vite: each built page preloads the wasm it loads (fetched once: init() took the preloaded response).
  const preloads = (html) => [...readFileSync(`${app}/dist/${html}`, 'utf8').matchAll(/<link rel="preload" href="([^"]+\.wasm)" as="fetch" type="application\/wasm" crossorigin/g)]
    .map((m) => basename(m[1]));
  const fetched = (seen) => seen.map((w) => basename(new URL(w.url).pathname)).sort();
  const byPage = Object.fromEntries(['index.html', 'app.html', 'full.html'].map((html) => [html, preloads(html)]));
  console.log(`consumer: abp-wasm/vite preloads ${JSON.stringify(byPage)}`);
  const pair = [...byPage['index.html'], ...byPage['app.html']].sort();
  if (byPage['index.html'].length !== 1 || byPage['app.html'].length !== 1 || JSON.stringify(pair) !== JSON.stringify(fetched(hostWasm))
    || JSON.stringify(byPage['full.html']) !== JSON.stringify(fetched(fullWasm.slice(0, 1)))) {
    throw new Error(`consumer test: each page should preload the wasm it fetched, once: ${JSON.stringify({ byPage, hostWasm, fullWasm })}`);
  }
  await devServer(browser, linked, 'abp-wasm installed from a folder (npm install ./pkg, a symlink)');
  await devServer(browser, app, 'abp-wasm installed from the tarball (in node_modules)');
  console.log('consumer: ok');
} finally {
  await browser.close();
  server.close();
}
