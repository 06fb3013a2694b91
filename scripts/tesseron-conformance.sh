#!/usr/bin/env bash
# `npm run conformance:tesseron`: replays the Tesseron conformance fixtures (CC BY 4.0, kept with their
# ATTRIBUTION.md in tests/interop/tesseron/conformance/; $TESSERON_CONFORMANCE_DIR points at another copy)
# with tests/interop/tesseron/conformance_runner.py playing the gateway:
#   1. against the Python SDK (PyPI tesseron, tests/interop/tesseron/conformance_host.py), the third-party
#      reference: a fixture that fails there points at the runner, not at our app;
#   2. against our AbpApp in headless Chrome and Firefox (tests/tesseron_conformance.rs), the runner listening on
#      127.0.0.1 and the app dialing it.
# Prints one line per fixture (PASS, FAIL with the step, expected and actual, SKIP with the reason) and the
# totals; exits 1 if any fixture failed, and fails without the fixtures (a replay of nothing proves nothing).
# `--no-setup` skips scripts/setup.sh (scripts/test.sh has run it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
source scripts/page-server.sh
dir="${TESSERON_CONFORMANCE_DIR:-tests/interop/tesseron/conformance}"
if [ ! -d "$dir/fixtures" ]; then
  echo "conformance:tesseron: FAILED: no fixtures at $dir/fixtures (the Tesseron conformance fixtures, CC BY 4.0," \
    "kept in tests/interop/tesseron/conformance/; TESSERON_CONFORMANCE_DIR points at another copy)." >&2
  exit 1
fi
[ -f "$dir/ATTRIBUTION.md" ] || echo "conformance:tesseron: warning: $dir has no ATTRIBUTION.md (CC BY 4.0 asks to keep it)"
[ "${1:-}" = --no-setup ] || bash scripts/setup.sh browsers
mkdir -p target
python=$(bash tests/interop/tesseron/setup.sh | tail -n 1)
runner=tests/interop/tesseron/conformance_runner.py
# The runner echoes every frame indented by six spaces; the logs keep them, the console shows the verdicts.
verdicts() { grep -v '^      ' "$1" || true; }

echo "== Tesseron conformance: the Python SDK as the app (checks the runner)"
log=target/conformance-python.log
if ! "$python" -u "$runner" "$dir/fixtures" --host-cmd "$python tests/interop/tesseron/conformance_host.py" > "$log" 2>&1; then
  verdicts "$log"
  echo "conformance:tesseron: the Python SDK failed a fixture (full log: $log)" >&2
  exit 1
fi
verdicts "$log"

# What AbpApp honestly does not declare: its hello says `resources: []` and `subscriptions: false`.
lacks=(
  --lacks "resources=an ABP app has no resources; AbpApp's hello declares none (resources: [])"
  --lacks "subscriptions=no resources, so nothing to subscribe to (the hello says subscriptions: false)"
)
export WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION=1 WASM_BINDGEN_TEST_TIMEOUT=150
runner_pid=
trap '[ -z "$runner_pid" ] || kill "$runner_pid" 2>/dev/null || true' EXIT
for browser in chrome firefox; do
  echo "== Tesseron conformance: AbpApp in headless $browser"
  log=target/conformance-$browser.log
  "$python" -u "$runner" "$dir/fixtures" --listen 0 "${lacks[@]}" > "$log" 2>&1 &
  runner_pid=$!
  url=
  for _ in $(seq 200); do
    url=$(sed -n 's/^LISTENING //p' "$log")
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || { cat "$log"; echo "conformance:tesseron: the runner did not start" >&2; exit 1; }
  page_rc=0
  TESSERON_CONFORMANCE_URL="$url" wasm-pack test --headless --"$browser" --test tesseron_conformance \
    > "target/conformance-$browser-page.log" 2>&1 || page_rc=$?
  [ "$page_rc" = 0 ] || kill "$runner_pid" 2>/dev/null || true
  runner_rc=0
  wait "$runner_pid" || runner_rc=$?
  runner_pid=
  verdicts "$log"
  if [ "$page_rc" != 0 ] || [ "$runner_rc" != 0 ]; then
    tail -n 40 "target/conformance-$browser-page.log"
    echo "conformance:tesseron: failed in $browser (runner: $log; page: target/conformance-$browser-page.log)" >&2
    exit 1
  fi
done
