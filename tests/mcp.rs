//! MCP interop in headless Chrome and Firefox: this SDK speaking MCP with the official packages, pinned in
//! `tests/interop/package.json` (`@modelcontextprotocol/sdk` 1.32.2 with the last releases on it,
//! `@mcp-b/transports` 4.0.0 and `@modelcontextprotocol/ext-apps` 1.7.5, under npm aliases) and bundled for the
//! browser by `tests/interop/build.mjs`, which `scripts/test.sh` runs first. The cases are in
//! `tests/js/mcp-cases.js`:
//! - the SDK's `Client` through `IframeParentTransport` (MCP-B envelope) and through ext-apps'
//!   `PostMessageTransport` (bare JSON-RPC) to an `AbpApp` with `dialect: 'mcp'` in a cross-origin iframe:
//!   listTools, callTool, arguments checked against inputSchema, an unknown tool, isError, progress with
//!   resetTimeoutOnProgress, abort through the SDK's signal (our ctx.signal aborts with the reason; no response
//!   frame), the SDK's timeout, elicitation/create answered, list_changed after `app.register`;
//! - our `AbpClient` with `dialect: 'mcp'` to the SDK's `McpServer` behind `IframeChildTransport` and behind
//!   ext-apps' transport: our `server/discover` refused with -32601, then `initialize`; listCapabilities from
//!   tools/list, calls, isError, progress, abort (the SDK handler's extra.signal aborts; CANCELLED at once),
//!   timeout, elicitation, list changes, the iframe removed mid-call (DISCONNECTED within 1 s);
//! - forged JSON-RPC from the wrong window is rejected and counted;
//! - the SDK's `WebSocketClientTransport` (subprotocol `mcp`) reaching an `AbpApp` through `abp-peer`'s relay;
//! - over the relay in the 2026-07-28 era: the SDK 2 `Client` (on that WebSocket transport) driving our app, and
//!   our client probing first and speaking that era to a server that answers the probe.
//!
//! And with the official MCP SDK 2 (`@modelcontextprotocol/client` and `@modelcontextprotocol/server` 2.4.0) over
//! the current browser transports (`@mcp-b/transports` 5.1.0, `@modelcontextprotocol/ext-apps` 2.0.4), in
//! `tests/js/mcp-v2-cases.js`, where both sides negotiate the era:
//! - the SDK 2 `Client` (`versionNegotiation: 'auto'`) to our app: it ends up in revision 2026-07-28 with no
//!   `initialize` (our serverInfo from `server/discover`), listTools with `ttlMs`/`cacheScope`, callTool,
//!   progress, abort reaching ctx.signal, ctx.elicit answered by the SDK's elicitation handler through its retry,
//!   list changes through `client.listen`;
//! - our `AbpClient` to the SDK 2 `McpServer` served in both eras by the SDK's `serveStdio` entry: the server
//!   sees `server/discover` and never `initialize`, calls, progress, abort reaching ctx.mcpReq.signal, an
//!   `InputRequiredResult` answered through onElicitation, a tool added later reaching onCapabilitiesChanged.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::AbpClient as _;

#[wasm_bindgen(module = "/tests/js/mcp-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runCase)]
    async fn run_case(name: &str, peer: &str, token: &str) -> Result<JsValue, JsValue>;
}

#[wasm_bindgen(module = "/tests/js/mcp-v2-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runCase)]
    async fn run_v2_case(name: &str) -> Result<JsValue, JsValue>;
}

const PEER: Option<&str> = option_env!("ABP_PEER_URL");
/// The peer's launch token: the relay's agent side needs it.
const TOKEN: Option<&str> = option_env!("ABP_PEER_TOKEN");

async fn check(name: &str) {
    let (Some(peer), Some(token)) = (PEER, TOKEN) else {
        panic!("ABP_PEER_URL and ABP_PEER_TOKEN are not set: run scripts/test.sh, which starts abp-peer");
    };
    common::report(run_case(name, peer, token).await);
}

/// A case against SDK 2: no server of ours is needed.
async fn check_v2(name: &str) {
    common::report(run_v2_case(name).await);
}

#[wasm_bindgen_test]
async fn sdk_client_drives_our_app_over_mcp_b() {
    check("sdkClientDrivesOurAppOverMcpB").await;
}

#[wasm_bindgen_test]
async fn sdk_client_drives_our_app_over_bare_json_rpc() {
    check("sdkClientDrivesOurAppOverBareJsonRpc").await;
}

#[wasm_bindgen_test]
async fn our_client_drives_the_sdk_server_over_mcp_b() {
    check("ourClientDrivesTheSdkServerOverMcpB").await;
}

#[wasm_bindgen_test]
async fn our_client_drives_the_sdk_server_over_bare_json_rpc() {
    check("ourClientDrivesTheSdkServerOverBareJsonRpc").await;
}

#[wasm_bindgen_test]
async fn forged_json_rpc_from_another_frame_is_ignored() {
    check("forgedJsonRpcFromAnotherFrameIsIgnored").await;
}

#[wasm_bindgen_test]
async fn sdk_websocket_client_reaches_our_app_through_the_relay() {
    check("sdkWebSocketClientReachesOurAppThroughTheRelay").await;
}

#[wasm_bindgen_test]
async fn the_modern_era_over_websocket_in_both_roles() {
    check("theModernEraOverWebSocketInBothRoles").await;
}

#[wasm_bindgen_test]
async fn sdk2_client_drives_our_app_over_mcp_b() {
    check_v2("sdk2ClientDrivesOurAppOverMcpB").await;
}

#[wasm_bindgen_test]
async fn sdk2_client_drives_our_app_over_bare_json_rpc() {
    check_v2("sdk2ClientDrivesOurAppOverBareJsonRpc").await;
}

#[wasm_bindgen_test]
async fn our_client_drives_the_sdk2_server_over_mcp_b() {
    check_v2("ourClientDrivesTheSdk2ServerOverMcpB").await;
}

#[wasm_bindgen_test]
async fn our_client_drives_the_sdk2_server_over_bare_json_rpc() {
    check_v2("ourClientDrivesTheSdk2ServerOverBareJsonRpc").await;
}
