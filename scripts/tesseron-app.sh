#!/usr/bin/env bash
# Starts the Python Tesseron app (PyPI `tesseron`, tests/interop/tesseron/app.py) on a free 127.0.0.1 port for
# the interop tests, after making its venv (tests/interop/tesseron/setup.sh, skipped when up to date), and prints
# the URL a gateway dials. `scripts/tesseron-app.sh stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = stop ]; then
  if [ -f target/tesseron-app.pid ]; then
    kill -- "-$(cat target/tesseron-app.pid)" 2>/dev/null || kill "$(cat target/tesseron-app.pid)" 2>/dev/null || true
    rm -f target/tesseron-app.pid
  fi
  exit 0
fi
mkdir -p target
python=$(bash tests/interop/tesseron/setup.sh | tail -n 1)
: > target/tesseron-app.log
# The app stops when its stdin closes: keep it open with a sleep that lives as long as the process group.
setsid bash -c "sleep infinity | '$python' tests/interop/tesseron/app.py --port 0 >> target/tesseron-app.log 2>&1" </dev/null >/dev/null 2>&1 &
echo $! > target/tesseron-app.pid
for _ in $(seq 200); do
  url=$(awk '/^READY / { print $2; exit }' target/tesseron-app.log)
  if [ -n "$url" ]; then
    echo "${url%/}"
    exit 0
  fi
  sleep 0.05
done
echo "the Tesseron app did not start; see target/tesseron-app.log" >&2
exit 1
