//! The Tesseron conformance fixtures replayed against our `AbpApp` in headless Chrome and Firefox, the runner
//! (`tests/interop/tesseron/conformance_runner.py --listen`) playing the gateway. `scripts/tesseron-conformance.sh`
//! (`npm run conformance:tesseron`) starts the runner for each browser and names it in
//! `TESSERON_CONFORMANCE_URL`; without it (the fixtures are not in this repository) the test says so and passes.
//! The page side is `tests/js/tesseron-conformance.js`.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::AbpApp as _;

#[wasm_bindgen(module = "/tests/js/tesseron-conformance.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = replayConformance)]
    async fn replay_conformance(url: &str) -> Result<JsValue, JsValue>;
}

#[wasm_bindgen_test]
async fn every_fixture_passes_or_is_skipped_with_its_reason() {
    match option_env!("TESSERON_CONFORMANCE_URL") {
        Some(url) => common::report(replay_conformance(url).await),
        None => {
            panic!("TESSERON_CONFORMANCE_URL is not set: scripts/tesseron-conformance.sh runs the replay")
        }
    }
}
