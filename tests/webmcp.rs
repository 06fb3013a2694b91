//! WebMCP (`document.modelContext`) in headless browsers, both directions, against plain WebMCP code:
//! `app.exposeWebMCP()` called by `executeTool`, and `AbpClient.connect(WebMCPTransport.document())` calling
//! `registerTool` tools. `scripts/webmcp.sh` runs it three ways, named in `WEBMCP_MODE` at build time: Chromium
//! with its native WebMCP (`--enable-features=WebMCP`, through `tests/webmcp/webdriver-native.json`), and
//! Chromium and Firefox with `@mcp-b/webmcp-polyfill`. The cases are in `tests/js/webmcp-cases.js`.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::WebMCPTransport as _;

#[wasm_bindgen(module = "/tests/js/webmcp-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runCase)]
    async fn run_case(name: &str, mode: &str) -> Result<JsValue, JsValue>;
}

async fn check(name: &str) {
    match option_env!("WEBMCP_MODE") {
        Some(mode) => common::report(run_case(name, mode).await),
        None => panic!("WEBMCP_MODE is not set: scripts/webmcp.sh runs these cases"),
    }
}

#[wasm_bindgen_test]
async fn exposed_to_is_checked_and_passed_on() {
    check("exposedToIsCheckedAndPassedOn").await;
}

#[wasm_bindgen_test]
async fn app_tools_are_called_by_execute_tool() {
    check("appToolsAreCalledByExecuteTool").await;
}

#[wasm_bindgen_test]
async fn client_calls_plain_webmcp_tools() {
    check("clientCallsPlainWebMCPTools").await;
}

#[wasm_bindgen_test]
async fn our_client_calls_our_app_through_webmcp() {
    check("ourClientCallsOurAppThroughWebMCP").await;
}

#[wasm_bindgen_test]
async fn without_model_context_a_type_error() {
    check("withoutModelContextATypeError").await;
}
