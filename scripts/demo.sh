#!/usr/bin/env bash
# Sets up, builds the package and serves the demo on 127.0.0.1 (prints the URL). PORT=… to choose the port.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec node www/serve.mjs "${PORT:-8080}"
