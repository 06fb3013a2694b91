#!/usr/bin/env bash
# Builds the npm package into pkg/: wasm-pack (target web, release), then wasm-opt -Oz from npm's binaryen
# (Debian's binaryen is too old for what rustc emits, and wasm-pack's own download does not work offline).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# With the pinned nightly (scripts/setup.sh installs it), std is rebuilt with panics as plain traps: no panic
# messages or formatting code in the package. The library never panics on input, so nothing is lost but bytes.
# -Zlocation-detail=none also drops the file/line/column records that #[track_caller] code (RefCell borrows,
# unwrap, indexing) still passes to the trap: without panic messages nothing reads them (gzipped wasm: full
# -1,471 B, agent -941 B, app -1,111 B).
# std's `optimize_for_size` feature picks its smaller code paths (slice sorts, rotate, number formatting and
# parsing, str/String helpers): the same results, slower only on large inputs, which this library does not have
# (gzipped wasm: full -1,664 B, agent -1,403 B, app -1,281 B).
SIZE_TOOLCHAIN=$(awk -F= '/^SIZE_TOOLCHAIN=/ { print $2 }' scripts/setup.sh)
if rustup component list --installed --toolchain "$SIZE_TOOLCHAIN" 2>/dev/null | grep -q '^rust-src'; then
  echo "build: release with $SIZE_TOOLCHAIN, -Z build-std, panic=immediate-abort"
  small=1
else
  echo "build: release with stable ($SIZE_TOOLCHAIN is not installed: run scripts/setup.sh for a smaller package)"
  small=0
fi

# build_one OUT_DIR [CARGO FEATURE ARGS...]: one wasm and its generated JS, optimised.
build_one() {
  local out=$1; shift
  if [ "$small" = 1 ]; then
    RUSTUP_TOOLCHAIN="$SIZE_TOOLCHAIN" CARGO_TARGET_DIR=target/size \
      RUSTFLAGS="-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none" \
      wasm-pack --quiet build . --target web --release --out-dir "$out" --out-name abp_wasm -- "$@" -Z build-std=std,panic_abort \
        -Z build-std-features=optimize_for_size
  else
    wasm-pack --quiet build . --target web --release --out-dir "$out" --out-name abp_wasm -- "$@"
  fi
  # --strip-producers/--strip-target-features: the two custom sections left after -Oz (toolchain names and the
  # feature list; browsers read neither): gzipped wasm -197 B (full), -203 B (agent), -217 B (app).
  node_modules/.bin/wasm-opt -Oz --strip-producers --strip-target-features --enable-bulk-memory --enable-reference-types --enable-multivalue \
    --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals \
    "$out/abp_wasm_bg.wasm" -o "$out/abp_wasm_bg.wasm"
}

# The full package (every role and dialect), then the role builds as subpath exports (SPEC section 7):
# `abp-wasm/agent` (AbpClient and the transports) and `abp-wasm/app` (AbpApp, window.abp and the transports),
# ABP only, each its own wasm.
# Snippets from an earlier build would be shipped (and counted) too: wasm-pack only adds files.
rm -rf pkg/snippets pkg/agent pkg/app
build_one pkg
build_one pkg/agent --no-default-features --features agent
build_one pkg/app --no-default-features --features app
rm -f pkg/agent/package.json pkg/agent/README.md pkg/agent/.gitignore pkg/agent/LICENSE \
  pkg/app/package.json pkg/app/README.md pkg/app/.gitignore pkg/app/LICENSE
# Each build's copy of glue.js keeps only what that build reaches (scripts/shake-snippets.mjs): the agent's
# drops the app's handler and window.abp glue (JS −1,165 B gzipped), the app's the client's (−358 B).
# It reads which snippet each wasm import comes from, so it runs before the module names are shortened.
node scripts/shake-snippets.mjs pkg pkg/agent pkg/app
# wasm-bindgen names each import `__wbg_<name>_<16 hex digits>` and each closure shim it exports after the
# closure's full Rust type (up to 334 bytes), which gzip cannot shrink; the names appear in the wasm and again
# in the generated JS. Both get short names (scripts/short-names.mjs): the imports from './abp_wasm_bg.js', the
# modules' names, and the function exports (gzipped, wasm + JS: the imports' names about 1 KB per build; the
# modules and the exports, full −1,248 B, agent −939 B, app −1,030 B); the snippets' imports keep their export
# names. A build where a name is not found where the JS should use it ships both files as generated.
node scripts/short-names.mjs pkg pkg/agent pkg/app
node scripts/finish-pkg.mjs
# The generated JS and the snippets ship minified by esbuild (whitespace, comments, syntax, local names; exported
# names and class names stay): JS gzipped full −2,129 B, agent −1,465 B, app −1,740 B against the earlier
# comment-and-indentation strip. The typings keep every doc comment. A file whose exports would change ships as
# it was (scripts/minify-js.mjs).
node scripts/minify-js.mjs $(find pkg -name abp_wasm.js -o -path '*/snippets/*' -name '*.js')
# Every build must still link: its wasm's imports all provided by its shipped JS.
node scripts/check-link.mjs pkg pkg/agent pkg/app
node scripts/check-dts.mjs
# The README's usage must type-check against the generated typings (strict, no implicit any).
node_modules/.bin/tsc -p tests/types/tsconfig.json && echo "build: tests/types/usage.ts type-checks against pkg/abp_wasm.d.ts"
# So do the README's TypeScript examples, as written (its ```ts blocks; scripts/readme-ts.mjs).
node scripts/readme-ts.mjs
node scripts/sizes.mjs
