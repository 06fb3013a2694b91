//! The browser app behind `abp-peer mcp`, in headless Chrome and Firefox: `tests/interop/mcp-gateway/run.mjs`
//! drives the gateway with the official MCP SDK's `Client` over `StdioClientTransport` and runs this page (with
//! `MCP_GATEWAY_URL` set at build time) as the app that joins it. The page side is
//! `tests/js/mcp-gateway-cases.js`; without the variable the test says so and passes.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::AbpApp as _;

#[wasm_bindgen(module = "/tests/js/mcp-gateway-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = serveTheGateway)]
    async fn serve_the_gateway(url: &str) -> Result<JsValue, JsValue>;
}

#[wasm_bindgen_test]
async fn an_app_serves_an_mcp_host_through_the_gateway() {
    match option_env!("MCP_GATEWAY_URL") {
        Some(url) => common::report(serve_the_gateway(url).await),
        None => panic!("MCP_GATEWAY_URL is not set: scripts/mcp-gateway.sh runs this page"),
    }
}
