#!/usr/bin/env bash
# Installs what building, the demo and the tests need, skipping whatever is already there (a warm machine
# takes seconds). `scripts/setup.sh browsers` also installs Chromium, Firefox and their WebDriver servers;
# `scripts/setup.sh chromium` only Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

WASM_PACK_VERSION=0.15.1
# The release package is built with this nightly: it can rebuild std with panics as plain traps, which keeps
# the panic-message machinery out of the wasm (about 8 KB gzipped). Without it the build falls back to stable.
SIZE_TOOLCHAIN=nightly-2026-05-20
GECKODRIVER_VERSION=0.37.1
say() { echo "setup: $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

for component in clippy rustfmt; do
  rustup component list --installed | grep -q "^$component" || rustup component add "$component"
done
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32 target"
  rustup target add wasm32-unknown-unknown
fi

if ! rustup run "$SIZE_TOOLCHAIN" rustc --version >/dev/null 2>&1 \
   || ! rustup component list --installed --toolchain "$SIZE_TOOLCHAIN" 2>/dev/null | grep -q '^rust-src'; then
  say "installing $SIZE_TOOLCHAIN with rust-src (for the size-optimised release build)"
  rustup toolchain install "$SIZE_TOOLCHAIN" --profile minimal --component rust-src --target wasm32-unknown-unknown \
    || say "could not install $SIZE_TOOLCHAIN; release builds will use stable (a bigger package)"
fi

# wasm-bindgen-cli must match the wasm-bindgen in Cargo.lock exactly (wasm-pack uses it; downloads fail here).
bindgen=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$bindgen" ]; then
  say "installing wasm-bindgen-cli $bindgen (a few minutes)"
  cargo install wasm-bindgen-cli --version "$bindgen" --force
fi
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  say "installing wasm-pack $WASM_PACK_VERSION (a few minutes)"
  cargo install wasm-pack --version "$WASM_PACK_VERSION" --force
fi

if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -d node_modules/playwright-core ] || [ ! -x node_modules/.bin/tsc ]; then
  say "installing npm dev dependencies (binaryen, playwright-core, typescript)"
  npm ci --no-audit --no-fund
fi

# `browsers`: what the browser tests need; `chromium`: only the headless Chromium that the demo check, the
# benchmarks and the consumer test drive with playwright-core.
if [ "${1:-}" = browsers ] || [ "${1:-}" = chromium ]; then
  missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  if [ "$1" = browsers ]; then
    [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
    command -v firefox-esr >/dev/null || command -v firefox >/dev/null || missing+=(firefox-esr)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}"
  fi
  if [ "$1" = browsers ] && [ "$(geckodriver --version 2>/dev/null | awk 'NR==1 {print $2}')" != "$GECKODRIVER_VERSION" ]; then
    say "installing geckodriver $GECKODRIVER_VERSION (a few minutes)"
    cargo install geckodriver --version "$GECKODRIVER_VERSION" --force
  fi
fi
say "ready"
