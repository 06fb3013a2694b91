#!/usr/bin/env bash
# Starts abp-peer on a free 127.0.0.1 port for the WebSocket tests, in a loop that restarts it whenever a test
# kills it (/admin/exit), and prints the URL. Stop it with: kill -- -$(cat target/peer.pid)  (or scripts/peer.sh stop)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = stop ]; then
  if [ -f target/peer.pid ]; then
    kill -- "-$(cat target/peer.pid)" 2>/dev/null || kill "$(cat target/peer.pid)" 2>/dev/null || true
    rm -f target/peer.pid
  fi
  exit 0
fi
cargo build --quiet -p abp-peer
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
: > target/peer.log
setsid bash -c "while :; do ./target/debug/abp-peer --listen 127.0.0.1:$port --allow-exit >> target/peer.log 2>&1; sleep 0.1; done" </dev/null >/dev/null 2>&1 &
echo $! > target/peer.pid
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "ws://127.0.0.1:$port"
    exit 0
  fi
  sleep 0.05
done
echo "abp-peer did not start; see target/peer.log" >&2
exit 1
