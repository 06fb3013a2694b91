//! Tesseron interop in headless Chrome and Firefox: our `AbpClient` as the gateway (`dialect: 'tesseron'`)
//! dialing a Python app built with PyPI `tesseron` 0.2.0 (`tests/interop/tesseron/app.py`), which
//! `scripts/test.sh` starts on 127.0.0.1 (`scripts/tesseron-app.sh`, after making its venv) and names in
//! `TESSERON_APP_URL`. The cases are in `tests/js/tesseron-cases.js`: the app's hello answered, its actions as
//! the capability list, invocations and `{ invocationId, output }`, bad input (-32004), an unknown action
//! (-32003), handler errors (-32005, -32603), progress, the app's own timeout (-32002 → TIMEOUT), and
//! `actions/cancel` (-32001 → CANCELLED, the Python handler sees `ctx.cancellation`), also from our timeout,
//! and the app process ending mid-call (DISCONNECTED within 1 s; the script restarts it).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::AbpClient as _;

#[wasm_bindgen(module = "/tests/js/tesseron-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runCase)]
    async fn run_case(name: &str, url: &str) -> Result<JsValue, JsValue>;
}

const APP: Option<&str> = option_env!("TESSERON_APP_URL");

async fn check(name: &str) {
    let Some(app) = APP else {
        panic!("TESSERON_APP_URL is not set: run scripts/test.sh, which starts the Python Tesseron app");
    };
    common::report(run_case(name, app).await);
}

#[wasm_bindgen_test]
async fn gateway_invokes_the_python_app() {
    check("gatewayInvokesThePythonApp").await;
}

#[wasm_bindgen_test]
async fn gateway_cancels_an_invocation() {
    check("gatewayCancelsAnInvocation").await;
}

#[wasm_bindgen_test]
async fn the_app_going_away_settles_within_a_second() {
    check("theAppGoingAwaySettlesWithinASecond").await;
}
