//! The browser app behind `abp-peer mcp --http` while the official MCP conformance suite tests the gateway as a
//! server, in headless Chrome and Firefox: `scripts/mcp-conformance.sh` starts the gateway, runs this page (with
//! `MCP_CONFORMANCE_URL` set at build time) as the app, and runs the suite. The page side is
//! `tests/js/mcp-conformance-cases.js`.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::AbpApp as _;

#[wasm_bindgen(module = "/tests/js/mcp-conformance-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = serveTheConformanceSuite)]
    async fn serve_the_conformance_suite(url: &str) -> Result<JsValue, JsValue>;
}

#[wasm_bindgen_test]
async fn an_app_serves_the_conformance_suite_through_the_gateway() {
    match option_env!("MCP_CONFORMANCE_URL") {
        Some(url) => common::report(serve_the_conformance_suite(url).await),
        None => panic!("MCP_CONFORMANCE_URL is not set: scripts/mcp-conformance.sh runs this page"),
    }
}
