// Runs a benchmark page in a headless browser that no test driver is attached to, and returns what the page
// reports. Playwright drives Chromium through the DevTools protocol, and with an inspector attached every
// window.postMessage records the whole JavaScript stack of its caller (for DevTools to show where a message came
// from), which costs more the deeper the stack: not what a user's page pays (BENCHMARKS.md has the probe). So the round-trip figures are taken here instead: the browser binary is
// started on the page's URL with a fresh profile, and the page POSTs its results to the server.
//
//   const pages = reports(); const server = await serve(0, { onPost: pages.onPost });
//   const result = await runPage('firefox', `http://127.0.0.1:${port}/bench/`, pages);
//
// CHROMIUM, FIREFOX: the binaries; CHROMIUM_JS_FLAGS replaces Chromium's `--js-flags=--expose-gc` (e.g.
// `--js-flags=--expose-gc --prof --logfile=/tmp/v8-%p.log` for a V8 tick profile, read by `node --prof-process`).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The browsers the benchmark runs in, by name: the binary and its arguments for a page at `url` with the fresh
 *  profile directory `profile`. */
const BROWSERS = {
  chromium: {
    bin: () => process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: (url, profile) => ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic',
      '--no-first-run', '--no-default-browser-check', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', process.env.CHROMIUM_JS_FLAGS ?? '--js-flags=--expose-gc', '--enable-precise-memory-info', `--user-data-dir=${profile}`, url],
  },
  firefox: {
    bin: () => process.env.FIREFOX ?? ['/usr/bin/firefox-esr', '/usr/bin/firefox'].find((f) => existsSync(f)) ?? 'firefox',
    args: (url, profile, prefs = {}) => {
      // No first-run pages, updates or telemetry requests in the measured profile.
      const all = { 'browser.shell.checkDefaultBrowser': false, 'datareporting.policy.dataSubmissionEnabled': false,
        'app.update.enabled': false, 'toolkit.telemetry.enabled': false, 'browser.aboutwelcome.enabled': false,
        'browser.startup.homepage_override.mstone': 'ignore', ...prefs };
      writeFileSync(join(profile, 'user.js'), Object.entries(all).map(([p, v]) => `user_pref("${p}", ${JSON.stringify(v)});`).join('\n'));
      return ['--headless', '--no-remote', '--profile', profile, url];
    },
  },
};

/** What the pages report: pass `onPost` to serve(); `runPage` waits for the report of the page it opened. */
export function reports() {
  const waiting = new Map();
  return {
    waiting,
    onPost(url, body) {
      const token = url.searchParams.get('report');
      const w = waiting.get(token);
      if (!w) return;
      waiting.delete(token);
      let r;
      try { r = JSON.parse(body); } catch { w.fail(new Error(`the page's report is not JSON: ${body.slice(0, 200)}`)); return; }
      if (r && typeof r === 'object' && 'error' in r) w.fail(new Error(`the page failed: ${r.error}`));
      else w.ok(r);
    },
  };
}

/** The binary `runPage` starts for `browser`. */
export const browserBinary = (browser) => BROWSERS[browser]?.bin() ?? browser;

/** Starts `browser` ('chromium' or 'firefox') on `url` with a fresh profile, in a process group of its own (so the
 *  browser's helper processes go with it). `exited` rejects if the browser ends before `close()`; `close()` kills
 *  the group and removes the profile. `env`: added to the browser's environment; `prefs`: Firefox preferences
 *  added to the profile's (bench/gecko-profile.mjs). */
export function launch(browser, url, { env, prefs } = {}) {
  const b = BROWSERS[browser];
  if (!b) throw new Error(`unknown browser ${browser}`);
  const profile = mkdtempSync(join(tmpdir(), `abp-bench-${browser}-`));
  const child = spawn(b.bin(), b.args(url, profile, prefs), { stdio: ['ignore', 'ignore', 'pipe'], detached: true,
    env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const exited = new Promise((_, fail) => {
    child.once('error', (e) => fail(new Error(`could not start ${browser} (${b.bin()}): ${e.message}`)));
    child.once('exit', (code) => fail(new Error(`${browser} exited (${code}) before the page reported:\n${stderr}`)));
  });
  exited.catch(() => {});
  return {
    child,
    exited,
    async close() {
      child.removeAllListeners('exit');
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
      await new Promise((r) => setTimeout(r, 200));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

let next = 0;
/** Opens `url` (its query gets `report=<token>`, which the page posts its result to) in `browser` ('chromium' or
 *  'firefox') and resolves with the page's report; the browser is killed when it comes, or after `timeoutMs`.
 *  `wrap(url, token)`: changes the URL further, for a page that is not the one to report. */
export async function runPage(browser, url, { waiting }, { timeoutMs = 600000, wrap } = {}) {
  const token = `${process.pid}-${++next}`;
  const u = new URL(url);
  u.searchParams.set('report', token);
  wrap?.(u, token);
  const run = launch(browser, u.href);
  try {
    return await new Promise((ok, fail) => {
      waiting.set(token, { ok, fail });
      run.exited.catch(fail);
      setTimeout(() => fail(new Error(`${browser}: no report from ${u.pathname} within ${timeoutMs / 1000} s`)), timeoutMs).unref();
    });
  } finally {
    waiting.delete(token);
    await run.close();
  }
}
