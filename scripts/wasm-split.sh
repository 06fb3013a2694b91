#!/usr/bin/env bash
# Binaryen's wasm-split for bench/split.mjs (nothing in the build or the tests needs it), version 132: built once
# from the binaryen sources that npm's @grain/libbinaryen package carries, since the registries ship no wasm-split
# that reads this crate's wasm (Debian bookworm's binaryen is 108; npm's binaryen package has no wasm-split).
# Installed under ~/.local/opt/binaryen-132 (the tool and its library), linked from ~/.cargo/bin/wasm-split, and
# skipped when it is there. Prints the tool's path. The build takes about a quarter of an hour on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=132
PACKAGE="@grain/libbinaryen@$VERSION.0.0"
PREFIX="$HOME/.local/opt/binaryen-$VERSION"
BIN="$HOME/.cargo/bin/wasm-split"
say() { echo "wasm-split: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if "$BIN" --version 2>/dev/null | grep -q "version $VERSION\$"; then
  echo "$BIN"
  exit 0
fi
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >&2
fi
work=target/wasm-split-build
rm -rf "$work"
mkdir -p "$work"
say "fetching $PACKAGE's binaryen sources"
npm pack "$PACKAGE" --pack-destination "$work" --silent >/dev/null
tar -xzf "$work"/grain-libbinaryen-*.tgz -C "$work"
say "building wasm-split $VERSION (about a quarter of an hour on 2 cores)"
cmake -G Ninja -S "$work/libbinaryen/binaryen" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTS=OFF \
  -DENABLE_WERROR=OFF -DCMAKE_INSTALL_PREFIX="$PREFIX" >"$work/cmake.log"
ninja -C "$work/build" wasm-split >"$work/ninja.log"
mkdir -p "$PREFIX/bin" "$PREFIX/lib" "$(dirname "$BIN")"
cp "$work/build/bin/wasm-split" "$PREFIX/bin/"
cp -P "$work"/build/lib/libbinaryen* "$PREFIX/lib/"
ln -sf "$PREFIX/bin/wasm-split" "$BIN"
"$BIN" --version | grep -q "version $VERSION\$" || { say "the build does not run"; exit 1; }
rm -rf "$work"
echo "$BIN"
