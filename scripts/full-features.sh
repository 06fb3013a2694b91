#!/usr/bin/env bash
# Prints the cargo features of the package's full build, comma-separated: Cargo.toml's default features with
# `discovery-lazy` in place of `discovery` (the full build's discover() loads the discovery build when first
# called; src/web/discover.rs). Used by scripts/build.sh, scripts/test.sh (clippy) and bench/bytes.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
features=$(awk -F'[][]' '/^default = \[/ { print $2 }' Cargo.toml | tr -d ' "' | sed 's/\bdiscovery\b/discovery-lazy/')
if [[ ",$features," != *,discovery-lazy,* ]]; then
  echo "full-features: no \`discovery\` among Cargo.toml's default features ($features)" >&2
  exit 1
fi
echo "$features"
