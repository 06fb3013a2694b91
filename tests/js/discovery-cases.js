// discover() cases, against the discovery fixture server (scripts/discovery-fixtures.mjs) that
// scripts/test.sh starts on 127.0.0.1 and names in ABP_DISCOVERY_URL. Run by tests/discovery.rs in headless
// Chrome and Firefox. The test page is on another origin than the fixtures, so every fetch is a CORS fetch.
import { discover } from '/wasm-bindgen-test';
import { assert, eq, fail, pageErrors, runNamed } from './helpers.js';

let BASE = '';

/** Unsupported, with no manifest, and a reason that starts with (or matches) `want`. */
function unsupported(r, want) {
  eq(r.supported, false, `supported (${JSON.stringify(r)})`);
  assert(!('manifest' in r), `no manifest: ${JSON.stringify(r)}`);
  assert(typeof r.reason === 'string', `a reason: ${JSON.stringify(r)}`);
  const ok = want instanceof RegExp ? want.test(r.reason) : r.reason.startsWith(want);
  assert(ok, `reason ${JSON.stringify(r.reason)} should match ${want}`);
}

async function timed(f) {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
}

async function rejectsWithTypeError(f, what) {
  try {
    await f();
  } catch (e) {
    assert(e instanceof TypeError, `${what}: expected a TypeError, got ${e}`);
    return;
  }
  fail(`${what}: expected a rejection`);
}

const cases = {
  async good() {
    const r = await discover(`${BASE}/good/`);
    eq(r.supported, true, `supported (${JSON.stringify(r)})`);
    eq(r.manifestUrl, `${BASE}/good/abp.json`, 'the relative href resolved against the page URL');
    eq(r.manifest.abp, '0.1', 'abp');
    eq(r.manifest.app, { id: 'com.example.fixture', name: 'Fixture app', version: '1.0.0', description: 'A test app' }, 'app');
    eq(r.manifest.capabilities.map((c) => c.name), ['echo.text', 'export.pdf'], 'capability names');
    eq(r.manifest.capabilities[1].experimental, true, 'experimental');
    const schema = r.manifest.capabilities[0].inputSchema;
    assert(Object.getPrototypeOf(schema) === Object.prototype, 'schemas are plain objects, not Maps');
    eq(schema.properties.text.type, 'string', 'schema content');
    assert(!('reason' in r) && !('warnings' in r), `no reason or warnings: ${JSON.stringify(r)}`);
    // A limit longer than setTimeout can wait (2^31 - 1 ms) must not fire at once.
    const long = await discover(`${BASE}/good/`, { timeout: 1e12 });
    eq(long.supported, true, `supported with a very long timeout (${JSON.stringify(long)})`);
  },

  async missingLink() {
    unsupported(await discover(`${BASE}/missing-link/`), `the page's <head> has no <link rel="abp-manifest">`);
  },

  async linkAfter50Kb() {
    unsupported(await discover(`${BASE}/late-link/`), 'no <link rel="abp-manifest"> in the first 50 KB of the page');
  },

  async badJson() {
    const r = await discover(`${BASE}/bad-json/`);
    unsupported(r, 'the manifest is not valid JSON');
    eq(r.manifestUrl, `${BASE}/bad-json/abp.json`, 'manifestUrl');
    // Valid JSON nested 100,000 deep: refused with a reason, not a stack overflow.
    unsupported(await discover(`${BASE}/deep-json/`), 'the manifest is not valid JSON: arrays and objects nest deeper than 128 levels');
    // Half a surrogate pair ("\ud800") is refused here as serde_json refuses it natively.
    unsupported(await discover(`${BASE}/surrogate-json/`), 'the manifest is not valid JSON');
  },

  async wrongContentType() {
    unsupported(await discover(`${BASE}/wrong-type/`), 'the manifest was served as text/html, not application/json');
  },

  async missingFields() {
    unsupported(await discover(`${BASE}/missing-fields/`), 'manifest field app.version is missing');
  },

  async tooManyCapabilities() {
    unsupported(await discover(`${BASE}/too-many/`), 'the manifest lists 101 capabilities; at most 100 are allowed');
  },

  async redirectLoop() {
    // The browser follows redirects itself (up to 20); a loop ends as a network error, which resolves.
    unsupported(await discover(`${BASE}/redirect-loop/`), /^could not fetch the manifest \(.*\/loop\/a\)/);
  },

  async redirectsAreFollowed() {
    const r = await discover(`${BASE}/redirects/`);
    eq(r.supported, true, `supported (${JSON.stringify(r)})`);
    eq(r.manifestUrl, `${BASE}/good/abp.json`, 'manifestUrl is where the redirects ended');
  },

  async newerMajorVersionWarns() {
    const r = await discover(`${BASE}/newer-major/`);
    eq(r.supported, true, `supported (${JSON.stringify(r)})`);
    eq(r.manifest.abp, '1.0', 'abp');
    eq(r.warnings.length, 1, 'one warning');
    assert(r.warnings[0].includes('newer major version'), r.warnings[0]);
  },

  async manifestOver1Mb() {
    unsupported(await discover(`${BASE}/big-manifest/`), 'the manifest is larger than 1 MB');
  },

  async slowServerTimesOut() {
    const [r, ms] = await timed(() => discover(`${BASE}/slow/`, { timeout: 300 }));
    unsupported(r, 'timed out after 300 ms while fetching the page');
    assert(ms < 3000, `resolved after ${ms} ms`);
  },

  async readingStopsAtTheEndOfTheHead() {
    // The page's body never ends: discovery reads up to </head> and does not wait for the rest.
    const [r, ms] = await timed(() => discover(`${BASE}/stalled/`, { timeout: 5000 }));
    eq(r.supported, true, `supported (${JSON.stringify(r)})`);
    assert(ms < 3000, `resolved after ${ms} ms`);
  },

  async signalAborts() {
    const c = new AbortController();
    setTimeout(() => c.abort('user left'), 100);
    const [r, ms] = await timed(() => discover(`${BASE}/slow/`, { signal: c.signal }));
    unsupported(r, 'aborted while fetching the page: user left');
    assert(ms < 3000, `resolved after ${ms} ms`);
    unsupported(await discover(`${BASE}/good/`, { signal: AbortSignal.abort('gone') }), 'aborted while fetching the page: gone');
  },

  async problemsResolveAndProgrammerErrorsReject() {
    unsupported(await discover('ftp://127.0.0.1/'), 'invalid page URL');
    unsupported(await discover(`${BASE}/no-such-page/`), /^the page answered HTTP 404/);
    // A relative URL is resolved against this page's URL, as fetch() does (the test runner has no /good/).
    unsupported(await discover('good/?x=1#y'), `the page answered HTTP 404 (${new URL('good/?x=1', location.href)})`);
    const port = new URL(BASE).port;
    unsupported(await discover(`http://127.0.0.1:${port === '1' ? 2 : 1}/`), /^could not fetch the page/);
    await rejectsWithTypeError(() => discover(42), 'a number url');
    await rejectsWithTypeError(() => discover(undefined), 'no url');
    await rejectsWithTypeError(() => discover(`${BASE}/good/`, { timeout: -1 }), 'a negative timeout');
    await rejectsWithTypeError(() => discover(`${BASE}/good/`, { timeout: '5' }), 'a string timeout');
    await rejectsWithTypeError(() => discover(`${BASE}/good/`, { signal: {} }), 'a signal that is not one');
    await rejectsWithTypeError(() => discover(`${BASE}/good/`, 'fast'), 'options that are not an object');
  },
};

export async function runDiscoveryCase(name, base) {
  BASE = base;
  await runNamed(cases, name, 20000, () => {});
  eq(pageErrors, [], 'no uncaught errors on the page');
}
