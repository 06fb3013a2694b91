#!/usr/bin/env bash
# Everything CI runs: setup (incl. browsers), the native core tests, the browser tests in headless Chrome
# and Firefox, the release build with its typings check, the demo driven in headless Chromium, and the
# packed package consumed by a Vite app.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh browsers

echo "== lint: rustfmt, clippy (native and wasm32)"
cargo fmt --check
cargo clippy --quiet --all-targets -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --all-targets -- -D warnings

echo "== core: native unit tests (simulated time)"
cargo test --quiet

echo "== browser tests: headless Chrome and Firefox (real iframes)"
# Also set in .cargo/config.toml; repeated here so the script does not depend on cargo reading it.
export WASM_BINDGEN_TEST_NO_ORIGIN_ISOLATION=1 WASM_BINDGEN_TEST_TIMEOUT=300
wasm-pack test --headless --chrome --firefox

echo "== release build, typings"
bash scripts/build.sh

echo "== demo in headless Chromium"
node scripts/demo-check.mjs

echo "== consumer: npm pack → a Vite app outside the crate → a call and a cancellation in headless Chromium"
node scripts/consumer.mjs
