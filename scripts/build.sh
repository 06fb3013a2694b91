#!/usr/bin/env bash
# Builds the npm package into pkg/: the full package, the role builds pkg/agent and pkg/app, and the discovery
# build pkg/discover (which the full package's discover() loads on its first call), each wasm-pack
# (target web, release), then wasm-opt -Oz from npm's binaryen (Debian's binaryen is too old for what rustc
# emits, and wasm-pack's own download does not work offline), then the post-processing below.
#
# Usage: bash scripts/build.sh            the package as shipped and measured (BENCHMARKS.md): the pinned nightly
#        bash scripts/build.sh --stable   the plain package from the default (stable) toolchain, only by name
#
# The build ships what is measured or fails: a missing toolchain, or a rewrite that no longer matches what
# wasm-pack generated, stops it with a message saying what to do; no step falls back to a different package.
# ABP_SIZE_TOOLCHAIN=<toolchain> overrides the pinned nightly (scripts/setup.sh's SIZE_TOOLCHAIN).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

die() {
  echo "build: FAILED: $1" >&2
  shift
  for line in "$@"; do echo "  $line" >&2; done
  exit 1
}

usage="usage: bash scripts/build.sh [--stable] | --wasm-only OUT_DIR [CARGO FEATURE ARGS...]"
mode=size
wasm_only=
case "${1:-}" in
  "") ;;
  --stable) mode=stable ;;
  # One wasm as the package's builds are made, with the given features, and nothing else: bench/bytes.mjs
  # measures what each feature adds with it.
  --wasm-only) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; wasm_only=$2; shift 2 ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
[ -n "$wasm_only" ] || [ $# -le 1 ] || { echo "$usage" >&2; exit 2; }

for tool in rustup wasm-pack node; do
  command -v "$tool" >/dev/null || die "$tool is not installed." "Run \`bash scripts/setup.sh\` (see README)."
done
for bin in wasm-opt tsc esbuild; do
  [ -x "node_modules/.bin/$bin" ] || die "node_modules/.bin/$bin is missing." "Run \`bash scripts/setup.sh\` (it runs npm ci)."
done

# With the pinned nightly, std is rebuilt with panics as plain traps: no panic messages or formatting code in
# the package. The library never panics on input, so nothing is lost but bytes.
# -Zlocation-detail=none also drops the file/line/column records that #[track_caller] code (RefCell borrows,
# unwrap, indexing) still passes to the trap: without panic messages nothing reads them.
# std's `optimize_for_size` feature picks its smaller code paths (slice sorts, rotate, number formatting and
# parsing, str/String helpers): the same results, slower only on large inputs, which this library does not have.
# What each of these saves is in BENCHMARKS.md.
SIZE_TOOLCHAIN=${ABP_SIZE_TOOLCHAIN:-$(awk -F= '/^SIZE_TOOLCHAIN=/ { print $2 }' scripts/setup.sh)}
[ -n "$SIZE_TOOLCHAIN" ] || die "no SIZE_TOOLCHAIN= line in scripts/setup.sh."
if [ "$mode" = size ]; then
  components=$(rustup component list --installed --toolchain "$SIZE_TOOLCHAIN" 2>/dev/null) || components=
  if ! grep -q '^rust-src' <<<"$components"; then
    if [ -n "${ABP_SIZE_TOOLCHAIN:-}" ]; then
      install="Run \`rustup toolchain install $SIZE_TOOLCHAIN --component rust-src\` (ABP_SIZE_TOOLCHAIN names it),"
    else
      install="Run \`bash scripts/setup.sh\` to install $SIZE_TOOLCHAIN with rust-src (\`npm run build\` runs it),"
    fi
    die "the package is built with $SIZE_TOOLCHAIN and its rust-src component, which are not installed." \
      "$install" \
      "or build the plain stable package by name with \`npm run build:stable\` (larger, see README)." \
      "The build does not fall back to stable: that is not the package that is measured and shipped."
  fi
  echo "build: release with $SIZE_TOOLCHAIN, -Z build-std, panic=immediate-abort"
else
  echo "build: plain release with the default toolchain ($(rustc --version)), by name (--stable): a larger package than the default build"
fi

# build_one OUT_DIR [CARGO FEATURE ARGS...]: one wasm and its generated JS, optimised.
build_one() {
  local out=$1; shift
  if [ "$mode" = size ]; then
    RUSTUP_TOOLCHAIN="$SIZE_TOOLCHAIN" CARGO_TARGET_DIR=target/size \
      RUSTFLAGS="-Zunstable-options -Cpanic=immediate-abort -Zlocation-detail=none" \
      wasm-pack --quiet build . --target web --release --out-dir "$out" --out-name abp_wasm -- "$@" -Z build-std=std,panic_abort \
        -Z build-std-features=optimize_for_size
  else
    # Its own target directory: target/ is the tests' (other flags), target/size the nightly's.
    CARGO_TARGET_DIR=target/stable \
      wasm-pack --quiet build . --target web --release --out-dir "$out" --out-name abp_wasm -- "$@"
  fi
  # Also drops the name section (function names, for debuggers), which wasm-bindgen leaves in. The producers
  # and target-features sections stay: stripping them saved too little to keep a step for (BENCHMARKS.md).
  # ABP_WASM_OPT_G=-g keeps the names, for a profile that shows Rust functions by name (bench/profile.mjs); that
  # build is larger and not the package.
  node_modules/.bin/wasm-opt -Oz ${ABP_WASM_OPT_G:-} --enable-bulk-memory --enable-reference-types --enable-multivalue \
    --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals \
    "$out/abp_wasm_bg.wasm" -o "$out/abp_wasm_bg.wasm"
}

if [ -n "$wasm_only" ]; then
  build_one "$wasm_only" "$@"
  exit 0
fi

# pkg/ is rebuilt only when something it is made from changed. The build knows by a fingerprint: the SHA-256 of
# every file the build reads (the crate's sources but its unit tests, its manifests, this script and the steps it runs, the golden
# typings and the README it checks, the npm lockfile that pins wasm-opt, esbuild and tsc), of the toolchain's and
# wasm-pack's versions and of the mode, and of pkg/ itself as the last build left it. target/pkg.fingerprint holds
# the last build's; when both halves match, nothing is rebuilt. A failed build writes none, so the next one builds.
fingerprint_of_inputs() {
  local toolchain=${SIZE_TOOLCHAIN}
  [ "$mode" = size ] || toolchain=$(rustup show active-toolchain 2>/dev/null | cut -d' ' -f1)
  {
    echo "mode=$mode toolchain=$toolchain wasm-opt-g=${ABP_WASM_OPT_G:-}"
    rustc "+$toolchain" --version 2>/dev/null || true
    wasm-pack --version
    # The crate's unit tests (src/**/tests/, tests.rs) are not in the package.
    find src tests/golden tests/types .cargo -type f -not -path 'src/*/tests/*' -not -name tests.rs 2>/dev/null \
      | LC_ALL=C sort | xargs -d '\n' sha256sum
    sha256sum Cargo.toml Cargo.lock package-lock.json README.md LICENSE scripts/build.sh scripts/setup.sh \
      scripts/full-features.sh scripts/short-names.mjs scripts/bundle-js.mjs scripts/finish-pkg.mjs \
      scripts/minify-js.mjs scripts/check-link.mjs scripts/check-dts.mjs scripts/readme-ts.mjs scripts/sizes.mjs
  } | sha256sum | cut -d' ' -f1
}
fingerprint_of_pkg() {
  [ -d pkg ] || { echo none; return; }
  find pkg -type f | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1
}
stamp=target/pkg.fingerprint
inputs=$(fingerprint_of_inputs)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs $(fingerprint_of_pkg)" ]; then
  echo "build: pkg/ is up to date (nothing it is made from changed since it was built; $stamp)"
  exit 0
fi
rm -f "$stamp"

# The full package (every role and dialect), then the role builds as subpath exports: `abp-wasm/agent`
# (AbpClient and the transports) and `abp-wasm/app` (AbpApp, window.abp and the transports), ABP only, each its
# own wasm; and the discovery build, which the full package's `discover()` loads on its first call (the full
# package is made with `discovery-lazy` for `discovery`: scripts/full-features.sh). pkg/ starts empty: wasm-pack
# only adds files, and a file left from an earlier build would be shipped.
full_features=$(bash scripts/full-features.sh)
rm -rf pkg
build_one pkg --no-default-features --features "$full_features"
build_one pkg/agent --no-default-features --features agent
build_one pkg/app --no-default-features --features app
build_one pkg/discover --no-default-features --features discovery
for dir in pkg/agent pkg/app pkg/discover; do
  rm -f "$dir/package.json" "$dir/README.md" "$dir/.gitignore" "$dir/LICENSE"
done

# The post-processing steps below each save at least 1 KB gzipped in the published package (what each saves:
# BENCHMARKS.md); each checks its result and fails the build where it does not match the generated code.
# wasm-bindgen names each import `__wbg_<name>_<16 hex digits>` and each closure shim it exports after the
# closure's full Rust type, which gzip cannot shrink; the names appear in the wasm and again in the generated
# JS. Both get short names (scripts/short-names.mjs): the imports from './abp_wasm_bg.js', the modules' names,
# and the function exports; the snippets' imports keep their export names.
node scripts/short-names.mjs pkg pkg/agent pkg/app pkg/discover
# The discovery build is only ever loaded by the full build's JS: its typings would describe nothing a user imports.
rm -f pkg/discover/abp_wasm.d.ts pkg/discover/abp_wasm_bg.wasm.d.ts
# Each build's JS as one file (the generated module and its snippets): one request for a page instead of two
# rounds of them (scripts/bundle-js.mjs).
node scripts/bundle-js.mjs pkg pkg/agent pkg/app pkg/discover
# bootstrap.js, ABP_BOOTSTRAP, the Vite plugin and the package's exports map (required, not a size step).
node scripts/finish-pkg.mjs
# The JS ships minified by esbuild (whitespace, comments, syntax, local names; exported names and class names
# stay). The typings keep every doc comment (scripts/minify-js.mjs).
node scripts/minify-js.mjs pkg/abp_wasm.js pkg/agent/abp_wasm.js pkg/app/abp_wasm.js pkg/discover/abp_wasm.js
grep -qF 'import("./discover/abp_wasm.js")' pkg/abp_wasm.js \
  || die "the minified pkg/abp_wasm.js no longer imports ./discover/abp_wasm.js: its discover() would find nothing."

# Every build must still link: its wasm's imports all provided by its shipped JS.
node scripts/check-link.mjs pkg pkg/agent pkg/app pkg/discover
node scripts/check-dts.mjs
# The README's usage must type-check against the generated typings (strict, no implicit any), with a plain
# tsconfig (no `lib`: the target's default, which has no `Symbol.dispose`) and the role builds' typings too.
node_modules/.bin/tsc -p tests/types/tsconfig.json
# And for a program whose lib has `Symbol.dispose` (`esnext`), where `using` frees the package's classes.
node_modules/.bin/tsc -p tests/types/tsconfig.esnext.json
echo "build: tests/types/ type-checks against the typings of pkg/, pkg/agent and pkg/app (lib by default, and esnext)"
# So do the README's TypeScript examples, as written (its ```ts blocks; scripts/readme-ts.mjs).
node scripts/readme-ts.mjs
node scripts/sizes.mjs
mkdir -p target
echo "$inputs $(fingerprint_of_pkg)" >"$stamp"
if [ "$mode" = stable ]; then
  echo "build: pkg/ holds the plain stable build (--stable); \`npm run build\` builds the package as shipped"
fi
