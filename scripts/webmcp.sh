#!/usr/bin/env bash
# WebMCP (tests/webmcp.rs, tests/js/webmcp-cases.js), both directions against plain WebMCP code, three ways:
#   1. headless Chromium with its native document.modelContext (--enable-features=WebMCP, through
#      tests/webmcp/webdriver-native.json);
#   2. headless Chromium with @mcp-b/webmcp-polyfill (tests/interop, pinned; bundled by tests/interop/build.mjs);
#   3. headless Firefox with the polyfill, on a cross-origin-isolated page: the polyfill refuses a page whose
#      agent cluster is not origin-keyed, which Firefox gives only with that (or Origin-Agent-Cluster: ?1).
# `--no-setup` skips scripts/setup.sh (scripts/test.sh has run it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
source scripts/page-server.sh
[ "${1:-}" = --no-setup ] || bash scripts/setup.sh browsers
node tests/interop/build.mjs
export WASM_BINDGEN_TEST_TIMEOUT=150
run() {
  local what=$1; shift
  echo "== WebMCP: $what"
  local log="target/webmcp-${what// /-}.log"
  mkdir -p target
  if ! env "$@" 2>&1 | tee "$log"; then
    echo "webmcp: $what failed (log: $log)" >&2
    exit 1
  fi
}
run "native Chromium" WEBMCP_MODE=native WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION=1 \
  WASM_BINDGEN_TEST_WEBDRIVER_JSON=tests/webmcp/webdriver-native.json wasm-pack test --headless --chrome --test webmcp
run "polyfill Chromium" WEBMCP_MODE=polyfill WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION=1 \
  wasm-pack test --headless --chrome --test webmcp
run "polyfill Firefox" -u WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION WEBMCP_MODE=polyfill \
  wasm-pack test --headless --firefox --test webmcp
