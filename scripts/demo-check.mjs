// Drives the demo in headless Chromium the way a person would: opens the host page, starts the slow job,
// watches the progress bar move, clicks Stop, and checks that both sides saw the cancellation; then runs a
// short job to completion. Then an MCP host's turn: the app page joins `abp-peer mcp --http`, and a modern MCP
// client (plain HTTP) runs "Render report" as a task, polls it, cancels it (the page stops rendering, the task
// ends cancelled) and runs a short one to completion. Saves screenshots to target/demo-running.png and
// target/demo-stopped.png. Needs `npm run build` first (pkg/) and /usr/bin/chromium; builds abp-peer itself.
// The demo is started as the README says (`npm run demo`, on a free port): with pkg/ already built and nothing
// changed, it must not build again (scripts/build.sh's fingerprint), and the time to its URL is printed.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const fail = (msg) => { throw new Error(`demo-check: ${msg}`); };
const t0 = performance.now();
const demo = spawn('npm', ['run', '--silent', 'demo'], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'],
  detached: true });
let said = '';
demo.stdout.on('data', (c) => { said += c; });
demo.stderr.on('data', (c) => { said += c; });
const stopDemo = () => { try { process.kill(-demo.pid, 'SIGTERM'); } catch {} };
const url = await new Promise((ok, bad) => {
  const timer = setInterval(() => {
    const found = /abp-wasm demo: (http:\/\/\S+)/.exec(said)?.[1];
    if (found) { clearInterval(timer); ok(found); }
    if (performance.now() - t0 > 600000 || demo.exitCode !== null) { clearInterval(timer); bad(new Error(`demo-check: npm run demo printed no URL:\n${said}`)); }
  }, 20);
}).catch((e) => { stopDemo(); throw e; });
const port = new URL(url).port;
// A headed browser asks each page for /favicon.ico (headless Chromium does not), and its 404 is an error in the
// console: each page of the demo names an empty icon instead.
for (const html of readdirSync('www').filter((f) => f.endsWith('.html'))) {
  if (!/<link rel="icon" href="data:,">/.test(readFileSync(join('www', html), 'utf8'))) {
    stopDemo();
    fail(`www/${html} names no icon: a browser asks for /favicon.ico and logs its 404`);
  }
}
console.log(`demo-check: npm run demo printed its URL ${((performance.now() - t0) / 1000).toFixed(1)} s after it started`);
if (!/build: pkg\/ is up to date/.test(said) || /wasm-pack|Compiling/.test(said)) {
  stopDemo();
  fail(`npm run demo built pkg/ again though nothing had changed since the last build:\n${said}`);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    // The app offers its capability to the browser's own agents too (app.exposeWebMCP()).
    '--enable-features=WebMCP'],
}).catch((e) => { stopDemo(); throw e; });
try {
  const page = await browser.newPage({ viewport: { width: 980, height: 560 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Nothing the demo's pages ask for may be missing.
  const missing = [];
  page.on('response', (r) => { if (r.status() >= 400) missing.push(`${r.status()} ${r.url()}`); });
  await page.goto(url);
  await page.waitForSelector('#start:not([disabled])', { timeout: 15000 });
  const session = await page.textContent('#session');
  console.log(`demo-check: connected (${session.trim()})`);

  // The app follows the ABP checklist: discover() finds its manifest, and the manifest served is the one the
  // app's registry makes (app.manifest()).
  await page.waitForFunction(() => window.discovered, null, { timeout: 10000 });
  const discovered = await page.evaluate(() => window.discovered);
  const made = await page.frame({ url: /app\.html/ }).evaluate(() => window.app.manifest());
  const canonical = (v) => JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x)
    ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x));
  if (!discovered.supported) fail(`discover() did not find the app's manifest: ${discovered.reason}`);
  if (canonical(discovered.manifest) !== canonical(made)) {
    fail(`www/abp.json differs from app.manifest():\n${canonical(discovered.manifest)}\n${canonical(made)}`);
  }
  console.log(`demo-check: discover() found ${discovered.manifestUrl}, the same manifest as app.manifest()`);

  await page.click('#start');
  await page.waitForFunction(() => document.getElementById('bar').value >= 5, null, { timeout: 10000 });
  mkdirSync('target', { recursive: true });
  await page.screenshot({ path: 'target/demo-running.png' });
  await page.click('#stop');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('cancelled'), null, { timeout: 5000 });
  const status = await page.textContent('#status');
  const app = page.frameLocator('#app');
  await app.locator('#state').filter({ hasText: 'stopped' }).waitFor({ timeout: 5000 });
  const appState = await app.locator('#state').textContent();
  await page.screenshot({ path: 'target/demo-stopped.png' });
  console.log(`demo-check: agent says "${status}"; app says "${appState}"`);
  if (!status.includes('CANCELLED')) fail(`expected CANCELLED, got ${status}`);
  if (!appState.includes('user clicked stop')) fail(`the app did not see the reason: ${appState}`);

  // The same capability, called by the browser's own WebMCP (document.modelContext) in the app's frame.
  const frame = page.frame({ url: /app\.html/ });
  await frame.evaluate(async () => {
    for (let t0 = Date.now(); Date.now() - t0 < 10000; await new Promise((r) => setTimeout(r, 20))) {
      if ((await document.modelContext.getTools()).some((t) => t.name === 'report.render')) return;
    }
    throw new Error('the tool report.render never appeared in document.modelContext.getTools()');
  });
  const viaWebMCP = await frame.evaluate(async () => {
    const tool = (await document.modelContext.getTools()).find((t) => t.name === 'report.render');
    return JSON.parse(await document.modelContext.executeTool(tool, { pages: 2 }));
  });
  if (viaWebMCP.structuredContent?.pages !== 2) fail(`WebMCP executeTool: ${JSON.stringify(viaWebMCP)}`);
  console.log(`demo-check: WebMCP executeTool(report.render) → ${viaWebMCP.content[0].text}`);

  await page.fill('#pages', '3');
  await page.click('#start');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('done'), null, { timeout: 10000 });
  console.log(`demo-check: short job: "${await page.textContent('#status')}"`);
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  if (missing.length) fail(`the demo's pages asked for what is not there: ${missing.join('; ')}`);
  await fromAnMcpHost(browser, `http://127.0.0.1:${port}`);
  console.log('demo-check: ok (screenshots in target/demo-running.png, target/demo-stopped.png)');
} finally {
  await browser.close();
  stopDemo();
}

/** "Render report" as an MCP task: the app page joins `abp-peer mcp --http`; a 2026-07-28 client that declares the
 * tasks extension starts it, polls `tasks/get`, cancels it, and runs a short one to completion. */
async function fromAnMcpHost(browser, origin) {
  if (spawnSync('cargo', ['build', '-q', '-p', 'abp-peer'], { stdio: 'inherit' }).status !== 0) fail('cargo build -p abp-peer');
  const token = randomBytes(24).toString('hex');
  const gatewayLog = [];
  const gateway = spawn('target/debug/abp-peer', ['mcp', '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0',
    '--allow-origin', origin, '--token-file', join(tmpdir(), `abp-demo-${process.pid}.token`)],
  { env: { ...process.env, ABP_PEER_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  gateway.stderr.on('data', (c) => gatewayLog.push(String(c)));
  const logged = (re) => re.exec(gatewayLog.join(''))?.[1];
  try {
    for (let t0 = Date.now(); !(logged(/listening on (ws:\/\/\S+)/) && logged(/mcp on (http:\/\/\S+)/)); await sleep(50)) {
      if (Date.now() - t0 > 10000) fail(`the gateway did not start: ${gatewayLog.join('')}`);
    }
    const ws = logged(/listening on (ws:\/\/\S+)/);
    const url = logged(/mcp on (http:\/\/\S+)/);
    const page = await browser.newPage();
    await page.goto(`${origin}/www/app.html?gateway=${encodeURIComponent(ws)}`);
    // The app says it is joined, not that it waits for an agent.
    await page.waitForFunction(() => /^joined /.test(document.getElementById('state').textContent), null, { timeout: 10000 })
      .catch(async () => fail(`the app page joined to the gateway says "${await page.textContent('#state')}"`));
    console.log(`demo-check: the app page joined to the gateway says "${await page.textContent('#state')}"`);
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'demo-check', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    let id = 0;
    const rpc = async (method, params) => {
      const name = params.taskId ?? params.name;
      const response = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json',
        Accept: 'application/json', Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: meta } }) });
      const body = await response.json();
      if (body.error) fail(`${method}: ${JSON.stringify(body.error)}`);
      return body.result;
    };
    for (let t0 = Date.now(); !(await rpc('tools/list', {})).tools.some((t) => t.name === 'report.render'); await sleep(50)) {
      if (Date.now() - t0 > 10000) fail('the app never joined the gateway');
    }
    const poll = async (taskId, done) => {
      for (let t0 = Date.now(); ; await sleep(20)) {
        const task = await rpc('tasks/get', { taskId });
        if (done(task)) return task;
        if (Date.now() - t0 > 15000) fail(`task ${taskId} stuck: ${JSON.stringify(task)}`);
      }
    };
    const long = await rpc('tools/call', { name: 'report.render', arguments: { pages: 50 } });
    if (long.resultType !== 'task') fail(`expected a task: ${JSON.stringify(long)}`);
    const working = await poll(long.taskId, (t) => /page [3-9]/.test(t.statusMessage ?? ''));
    const cancelledAt = performance.timeOrigin + performance.now();
    await rpc('tasks/cancel', { taskId: long.taskId });
    await page.waitForFunction(() => document.getElementById('state').textContent.startsWith('stopped'), null, { timeout: 5000 });
    const ended = await poll(long.taskId, (t) => ['completed', 'failed', 'cancelled'].includes(t.status));
    const stoppedAt = await page.evaluate(() => window.stoppedAt);
    if (ended.status !== 'cancelled') fail(`the cancelled task ended ${ended.status}`);
    console.log(`demo-check: MCP task: ${working.status} ("${working.statusMessage}"), tasks/cancel → the page stopped `
      + `rendering ${(stoppedAt - cancelledAt).toFixed(1)} ms later, the task ended ${ended.status}`);
    const short = await rpc('tools/call', { name: 'report.render', arguments: { pages: 2 } });
    const finished = await poll(short.taskId, (t) => ['completed', 'failed', 'cancelled'].includes(t.status));
    if (finished.status !== 'completed' || finished.result?.structuredContent?.pages !== 2) {
      fail(`the short task: ${JSON.stringify(finished)}`);
    }
    console.log(`demo-check: MCP task: a short report ${finished.status}: ${finished.result.content[0].text}`);
    await page.close();
  } finally {
    gateway.kill('SIGTERM');
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
