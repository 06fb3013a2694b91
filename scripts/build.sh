#!/usr/bin/env bash
# Builds the npm package into pkg/: wasm-pack (target web, release), then wasm-opt -Oz from npm's binaryen
# (Debian's binaryen is too old for what rustc emits, and wasm-pack's own download does not work offline).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# With the pinned nightly (scripts/setup.sh installs it), std is rebuilt with panics as plain traps: no panic
# messages or formatting code in the package. The library never panics on input, so nothing is lost but bytes.
SIZE_TOOLCHAIN=$(awk -F= '/^SIZE_TOOLCHAIN=/ { print $2 }' scripts/setup.sh)
if rustup component list --installed --toolchain "$SIZE_TOOLCHAIN" 2>/dev/null | grep -q '^rust-src'; then
  echo "build: release with $SIZE_TOOLCHAIN, -Z build-std, panic=immediate-abort"
  RUSTUP_TOOLCHAIN="$SIZE_TOOLCHAIN" CARGO_TARGET_DIR=target/size \
    RUSTFLAGS="-Zunstable-options -Cpanic=immediate-abort" \
    wasm-pack build . --target web --release --out-dir pkg --out-name abp_wasm -- -Z build-std=std,panic_abort
else
  echo "build: release with stable ($SIZE_TOOLCHAIN is not installed: run scripts/setup.sh for a smaller package)"
  wasm-pack build --target web --release --out-dir pkg --out-name abp_wasm
fi
node_modules/.bin/wasm-opt -Oz --enable-bulk-memory --enable-reference-types --enable-multivalue \
  --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals \
  pkg/abp_wasm_bg.wasm -o pkg/abp_wasm_bg.wasm
node scripts/finish-pkg.mjs
node scripts/check-dts.mjs
# The README's usage must type-check against the generated typings (strict, no implicit any).
node_modules/.bin/tsc -p tests/types/tsconfig.json && echo "build: tests/types/usage.ts type-checks against pkg/abp_wasm.d.ts"
wasm=$(gzip -9 -c pkg/abp_wasm_bg.wasm | wc -c)
glue=$(cat pkg/abp_wasm.js pkg/snippets/*/src/web/*.js | gzip -9 -c | wc -c)
echo "build: pkg/ ready; gzipped wasm ${wasm} B + JS glue ${glue} B (abp_wasm.js and snippets)"
