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
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
# In a loop on a fixed port, so that a case can end the process (the `exit` action) and the app comes back. The app
# stops when its stdin closes: a sleep keeps it open (a process substitution, which the loop does not wait for).
setsid bash -c "while :; do '$python' tests/interop/tesseron/app.py --port $port < <(sleep infinity) >> target/tesseron-app.log 2>&1; sleep 0.2; done" </dev/null >/dev/null 2>&1 &
echo $! > target/tesseron-app.pid
for _ in $(seq 200); do
  if grep -q '^READY ' target/tesseron-app.log; then
    echo "ws://127.0.0.1:$port"
    exit 0
  fi
  sleep 0.05
done
echo "the Tesseron app did not start; see target/tesseron-app.log" >&2
exit 1
