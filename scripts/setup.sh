#!/usr/bin/env bash
# Installs what building, the demo and the tests need, skipping whatever is already there (a warm machine
# takes seconds). `scripts/setup.sh browsers` also installs Chromium, Firefox and their WebDriver servers;
# `scripts/setup.sh chromium` only Chromium; `scripts/setup.sh bench` Chromium and Firefox (the benchmark's). `scripts/setup.sh stable` skips the pinned nightly, for the plain
# stable build (`npm run build:stable`). Anything that cannot be installed fails the setup.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

browsers=
nightly=1
for arg in "$@"; do
  case "$arg" in
    browsers|chromium|bench) browsers=$arg ;;
    stable) nightly= ;;
    *) echo "usage: bash scripts/setup.sh [browsers|chromium|bench] [stable]" >&2; exit 2 ;;
  esac
done

WASM_PACK_VERSION=0.15.1
# The release package is built with this nightly (scripts/build.sh reads this line): it can rebuild std with
# panics as plain traps, which keeps the panic-message machinery out of the wasm. scripts/build.sh fails
# without it; the plain stable build is `npm run build:stable`.
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

components=$(rustup component list --installed --toolchain "$SIZE_TOOLCHAIN" 2>/dev/null) || components=
if [ -n "$nightly" ] && ! grep -q '^rust-src' <<<"$components"; then
  say "installing $SIZE_TOOLCHAIN with rust-src (for the size-optimised release build)"
  if ! rustup toolchain install "$SIZE_TOOLCHAIN" --profile minimal --component rust-src --target wasm32-unknown-unknown; then
    echo "setup: FAILED: could not install $SIZE_TOOLCHAIN with rust-src, which the release build (scripts/build.sh) needs." >&2
    echo "  See rustup's error above and retry, or build the plain stable package by name:" >&2
    echo "  \`npm run build:stable\` (larger, see README)." >&2
    exit 1
  fi
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

if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -d node_modules/playwright-core ] || [ ! -x node_modules/.bin/tsc ] \
  || [ ! -x node_modules/.bin/esbuild ]; then
  say "installing npm dev dependencies (binaryen, playwright-core, typescript, esbuild)"
  npm ci --no-audit --no-fund
fi

# `browsers`: what the browser tests need; `chromium`: only the headless Chromium that the demo check, the
# benchmarks and the consumer test drive with playwright-core; `bench`: that and Firefox, which `npm run bench`
# also measures in.
if [ -n "$browsers" ]; then
  missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  # scripts/lna-check.mjs makes a throwaway certificate with it.
  command -v openssl >/dev/null || missing+=(openssl)
  if [ "$browsers" = browsers ]; then
    [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
  fi
  if [ "$browsers" = browsers ] || [ "$browsers" = bench ]; then
    command -v firefox-esr >/dev/null || command -v firefox >/dev/null || missing+=(firefox-esr)
  fi
  if [ "$browsers" = browsers ]; then
    # peer/tests/nats.rs runs processes that share rooms over it.
    command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}"
  fi
  if [ "$browsers" = browsers ] && [ "$(geckodriver --version 2>/dev/null | awk 'NR==1 {print $2}')" != "$GECKODRIVER_VERSION" ]; then
    say "installing geckodriver $GECKODRIVER_VERSION (a few minutes)"
    cargo install geckodriver --version "$GECKODRIVER_VERSION" --force
  fi
fi
say "ready"
