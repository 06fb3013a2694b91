//! ACP interop in headless Chrome and Firefox: this SDK speaking ACP with `@agentclientprotocol/sdk` 2.4.0
//! (pinned in `tests/interop/package.json`, bundled by `tests/interop/build.mjs`, which `scripts/test.sh` runs
//! first), over a `MessageChannel`. The cases are in `tests/js/acp-cases.js`:
//! - the SDK's client role calling an `AbpApp` with `dialect: 'acp'`: requests named after capabilities,
//!   `cancellationSignal` → `$/cancel_request` → our handler's signal aborts and the SDK gets -32800, with
//!   `stopWaitingOnCancel` too, `initialize` not cancellable, -32601 and ABP errors in the error data, a nested
//!   request answered and cancelled with its call (the SDK handler's signal aborts);
//! - our `AbpClient` with `dialect: 'acp'` calling the SDK's agent role: a call, abort (the SDK handler's
//!   signal aborts; CANCELLED from its -32800), a handler that finishes anyway (its result is kept), timeout,
//!   -32603 and -32601, a nested request answered by `onElicitation` and cancelled with its call, and the port
//!   going away (the heartbeat settles the pending call DISCONNECTED within 1 s).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::AbpClient as _;

#[wasm_bindgen(module = "/tests/js/acp-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runCase)]
    async fn run_case(name: &str) -> Result<JsValue, JsValue>;
}

async fn check(name: &str) {
    common::report(run_case(name).await);
}

#[wasm_bindgen_test]
async fn sdk_client_calls_our_app() {
    check("sdkClientCallsOurApp").await;
}

#[wasm_bindgen_test]
async fn our_client_calls_the_sdk_agent() {
    check("ourClientCallsTheSdkAgent").await;
}
