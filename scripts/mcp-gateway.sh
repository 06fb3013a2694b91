#!/usr/bin/env bash
# `abp-peer mcp` against code nobody here wrote: the official MCP SDKs' Clients (tests/interop, pinned: SDK 1 as a
# legacy host, SDK 2 negotiating revision 2026-07-28) spawn the gateway over stdio as an MCP host does, and a browser
# app (tests/mcp_gateway.rs) joins it in headless Chrome and Firefox; then both clients over their
# StreamableHTTPClientTransports to `abp-peer mcp --http`, and the SDK 1 client through mcp-remote
# --protocol auto (a bridge that POSTs its host's cancel notices at 2026-07-28); beside them, the SDK 2 client and server alone,
# as the figures' baseline. See tests/interop/mcp-gateway/run.mjs. `--no-setup` skips scripts/setup.sh (scripts/test.sh has run it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
[ "${1:-}" = --no-setup ] || bash scripts/setup.sh browsers
cargo build --quiet -p abp-peer
node tests/interop/build.mjs
node tests/interop/mcp-gateway/run.mjs chrome firefox
