#!/usr/bin/env bash
# Everything CI runs: setup (incl. browsers), the native core tests, the browser tests in headless Chrome
# and Firefox (postMessage, WebSocket against a real abp-peer on 127.0.0.1, discover() against the discovery
# fixture server on 127.0.0.1, MCP and ACP against their SDKs, Tesseron against the PyPI package's app), the Tesseron
# conformance fixtures replayed against AbpApp (scripts/tesseron-conformance.sh), the release build with its typings check, an ABP client written from the API
# reference driving window.abp, a clean console while connecting to a cross-origin iframe, the demo driven in
# headless Chromium, an app on a public https origin under Local Network Access, gateway processes sharing an app
# over NATS, and the packed package consumed by a Vite app.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh browsers

echo "== lint: rustfmt, clippy (native and wasm32)"
cargo fmt --check
# The dialect modules are declared by the dialects! list (src/core/dialect/mod.rs), where cargo fmt does not look.
rustfmt --check --edition 2021 src/core/dialect/*.rs
cargo clippy --quiet --workspace --all-targets -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --all-targets -- -D warnings
# The role builds (abp-wasm/agent, abp-wasm/app) are other feature sets of the same crate.
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --features agent -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --features app -- -D warnings
# The full package as shipped (discover() loading the discovery build), and that discovery build.
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --features "$(bash scripts/full-features.sh)" -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --features discovery -- -D warnings

echo "== core: native unit tests (simulated time)"
cargo test --quiet --workspace

echo "== browser tests: headless Chrome and Firefox (real iframes; WebSocket against abp-peer on 127.0.0.1)"
# One file at a time, so the runner gives up after 150 s (.cargo/config.toml allows 300 s for a hand run), and no
# cross-origin isolation, which would block the cases' second origin (.cargo/config.toml says why).
export WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION=1 WASM_BINDGEN_TEST_TIMEOUT=150
# The peer runs in a restart loop (tests kill it); it and the discovery fixture server are stopped however this
# script ends.
trap 'bash scripts/peer.sh stop; bash scripts/discovery-fixtures.sh stop; bash scripts/tesseron-app.sh stop' EXIT
# The test runner serves its page on this address, so that abp-peer can allow exactly that origin (it refuses
# every other page); the same server under the name localhost is the second, unlisted origin the cases use.
source scripts/page-server.sh
ABP_PEER_URL=$(bash scripts/peer.sh "http://$WASM_BINDGEN_TEST_ADDRESS")
# The peer's launch token (the same across its restarts), for the cases that drive it; read at build time.
ABP_PEER_TOKEN=$(cat target/peer.token)
ABP_DISCOVERY_URL=$(bash scripts/discovery-fixtures.sh)
# The Python Tesseron app (PyPI tesseron, in a venv under target/) our gateway role dials.
TESSERON_APP_URL=$(bash scripts/tesseron-app.sh)
export ABP_PEER_URL ABP_PEER_TOKEN ABP_DISCOVERY_URL TESSERON_APP_URL
echo "abp-peer at $ABP_PEER_URL; discovery fixtures at $ABP_DISCOVERY_URL; Tesseron app at $TESSERON_APP_URL"
# The official MCP packages the interop cases talk to (tests/interop/package.json, pinned), bundled for the browser.
node tests/interop/build.mjs
# One test file and browser at a time. Should the page still never load (at "Loading scripts...", before any test
# has started; scripts/nudge-runner.mjs says why it did), the runner gives up after WASM_BINDGEN_TEST_TIMEOUT: only
# that case is run again, once; a failing test is never retried.
for file in tests/*.rs; do
  name=$(basename "$file" .rs)
  # Run below by their own scripts, which start the processes they need.
  case "$name" in tesseron_conformance|mcp_gateway|mcp_conformance|webmcp) continue ;; esac
  for browser in chrome firefox; do
    log="target/browser-$name-$browser.log"
    for attempt in 1 2; do
      if wasm-pack test --headless --"$browser" --test "$name" 2>&1 | tee "$log"; then
        break
      elif [ "$attempt" = 1 ] && grep -q "Failed to detect test as having been run" "$log" \
          && ! grep -q "^test .* \.\.\. " "$log"; then
        echo "== $name in $browser: the page never loaded (runner timeout, no test started); once more"
      else
        exit 1
      fi
    done
  done
done
bash scripts/peer.sh stop
bash scripts/discovery-fixtures.sh stop
bash scripts/tesseron-app.sh stop

echo "== Tesseron conformance fixtures: the Python SDK, then AbpApp in headless Chrome and Firefox"
bash scripts/tesseron-conformance.sh --no-setup

echo "== abp-peer mcp: the official MCP SDK clients (1, legacy; 2, modern) over stdio, a browser app in headless Chrome and Firefox"
bash scripts/mcp-gateway.sh --no-setup

echo "== the official MCP conformance suite against abp-peer mcp --http (2025-11-25 and 2026-07-28), the app in headless Chrome and Firefox"
bash scripts/mcp-conformance.sh --no-setup

echo "== WebMCP: native in Chromium, @mcp-b/webmcp-polyfill in Chromium and Firefox"
bash scripts/webmcp.sh --no-setup

echo "== release build, typings"
bash scripts/build.sh

echo "== an ABP client written from the API reference drives window.abp (Playwright, headless Chromium)"
node tests/abp-reference/run.mjs

echo "== console stays clean while connecting to a cross-origin iframe (headless Chromium)"
node scripts/console-check.mjs

echo "== demo in headless Chromium"
node scripts/demo-check.mjs

echo "== an app on a public https origin joining abp-peer mcp under Local Network Access (headless Chromium)"
node scripts/lna-check.mjs

echo "== three abp-peer mcp --http processes sharing one browser app over NATS (headless Chromium)"
node scripts/cluster-check.mjs

echo "== one trace from an MCP host to the browser handler: spans over OTLP/HTTP from two abp-peer mcp --otlp processes and the page (headless Chromium)"
node scripts/trace-check.mjs

echo "== consumer: npm pack → a Vite app outside the crate → a call and a cancellation in headless Chromium"
node scripts/consumer.mjs
