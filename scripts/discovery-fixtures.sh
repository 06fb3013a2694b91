#!/usr/bin/env bash
# Starts the discovery fixture server (scripts/discovery-fixtures.mjs) on a free 127.0.0.1 port and prints its
# base URL. Stop it with: scripts/discovery-fixtures.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
if [ "${1:-}" = stop ]; then
  if [ -f target/discovery-fixtures.pid ]; then
    kill "$(cat target/discovery-fixtures.pid)" 2>/dev/null || true
    rm -f target/discovery-fixtures.pid
  fi
  exit 0
fi
: > target/discovery-fixtures.log
node scripts/discovery-fixtures.mjs > target/discovery-fixtures.log 2>&1 </dev/null &
echo $! > target/discovery-fixtures.pid
for _ in $(seq 100); do
  url=$(head -n1 target/discovery-fixtures.log)
  if [ -n "$url" ]; then
    echo "$url"
    exit 0
  fi
  sleep 0.05
done
echo "the discovery fixture server did not start; see target/discovery-fixtures.log" >&2
exit 1
