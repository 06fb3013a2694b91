#!/usr/bin/env bash
# Starts abp-peer on a free 127.0.0.1 port for the WebSocket tests, in a loop that restarts it whenever a test
# kills it (/admin/exit), and prints the URL. Usage: scripts/peer.sh [ORIGIN...]: pages of these origins may
# connect (--allow-origin; scripts/test.sh passes the test runner's). The launch token is minted here once, so
# that every restart keeps it (ABP_PEER_TOKEN), and the peer writes it to target/peer.token (mode 0600).
# Stop it with: scripts/peer.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = stop ]; then
  if [ -f target/peer.pid ]; then
    kill -- "-$(cat target/peer.pid)" 2>/dev/null || kill "$(cat target/peer.pid)" 2>/dev/null || true
    rm -f target/peer.pid
  fi
  rm -f target/peer.token
  exit 0
fi
cargo build --quiet -p abp-peer
bin="${CARGO_TARGET_DIR:-target}/debug/abp-peer"
args=()
for origin in "$@"; do args+=(--allow-origin "$origin"); done
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
mkdir -p target
: > target/peer.log
rm -f target/peer.token
ABP_PEER_TOKEN=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export ABP_PEER_TOKEN
setsid bash -c 'while :; do "$@" >> target/peer.log 2>&1; sleep 0.1; done' peer-loop \
  "$bin" --listen "127.0.0.1:$port" --allow-exit --token-file target/peer.token "${args[@]}" \
  </dev/null >/dev/null 2>&1 &
echo $! > target/peer.pid
for _ in $(seq 200); do
  if grep -q "abp-peer listening on" target/peer.log 2>/dev/null; then
    echo "ws://127.0.0.1:$port"
    exit 0
  fi
  sleep 0.05
done
echo "abp-peer did not start; see target/peer.log" >&2
exit 1
