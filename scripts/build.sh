#!/usr/bin/env bash
# Builds the npm package into pkg/: wasm-pack (target web, release), then wasm-opt -Oz from npm's binaryen
# (Debian's binaryen is too old for what rustc emits, and wasm-pack's own download does not work offline).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
wasm-pack build --target web --release --out-dir pkg --out-name abp_wasm
node_modules/.bin/wasm-opt -Oz --enable-bulk-memory --enable-reference-types --enable-multivalue \
  --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals \
  pkg/abp_wasm_bg.wasm -o pkg/abp_wasm_bg.wasm
node scripts/check-dts.mjs
# The README's usage must type-check against the generated typings (strict, no implicit any).
node_modules/.bin/tsc -p tests/types/tsconfig.json && echo "build: tests/types/usage.ts type-checks against pkg/abp_wasm.d.ts"
wasm=$(gzip -9 -c pkg/abp_wasm_bg.wasm | wc -c); glue=$(gzip -9 -c pkg/abp_wasm.js | wc -c)
echo "build: pkg/ ready; gzipped wasm ${wasm} B + JS glue ${glue} B"
