#!/usr/bin/env bash
# Prints the cargo features of the package's full build, comma-separated: Cargo.toml's default features with
# `discovery-lazy` in place of `discovery` (the full build's discover() loads the discovery build when first
# called; src/web/discover.rs). Used by scripts/build.sh, scripts/test.sh (clippy) and bench/bytes.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
line=$(grep -E '^default = \[' Cargo.toml) || { echo "full-features: no one-line \`default = [...]\` in Cargo.toml" >&2; exit 1; }
line=${line#*[}
line=${line%%]*}
features=()
found=
IFS=',' read -ra names <<<"${line//[\" ]/}"
for name in "${names[@]}"; do
  if [ "$name" = discovery ]; then name=discovery-lazy; found=1; fi
  features+=("$name")
done
if [ -z "$found" ]; then
  echo "full-features: no \`discovery\` among Cargo.toml's default features (${names[*]})" >&2
  exit 1
fi
(IFS=','; echo "${features[*]}")
