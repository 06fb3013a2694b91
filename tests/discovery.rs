//! `discover()` in headless Chrome and Firefox, against the discovery fixture server on 127.0.0.1.
//!
//! `scripts/test.sh` starts `scripts/discovery-fixtures.mjs`, passes its URL in `ABP_DISCOVERY_URL` at build
//! time, and stops it afterwards. The cases are in `tests/js/discovery-cases.js`: a good app, a missing link,
//! a link after 50 KB, bad JSON (JSON nested 100,000 deep, half a surrogate pair), a wrong content type,
//! missing fields, 101 capabilities, a redirect loop, redirects followed, a newer major version (warning), a
//! manifest over 1 MB, a slow server (timeout), a body that never ends (reading stops at `</head>`), the
//! caller's signal, and what resolves (bad URLs, HTTP errors, refused connections, relative URLs) versus what
//! rejects (TypeErrors).
#![cfg(all(target_arch = "wasm32", feature = "discovery"))]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::discover as _;

#[wasm_bindgen(module = "/tests/js/discovery-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runDiscoveryCase)]
    async fn run_discovery_case(name: &str, base: &str) -> Result<JsValue, JsValue>;
}

const FIXTURES: Option<&str> = option_env!("ABP_DISCOVERY_URL");

async fn check(name: &str) {
    let Some(base) = FIXTURES else {
        panic!("ABP_DISCOVERY_URL is not set: run scripts/test.sh, which starts the discovery fixture server");
    };
    common::report(run_discovery_case(name, base).await);
}

#[wasm_bindgen_test]
async fn good() {
    check("good").await;
}

#[wasm_bindgen_test]
async fn missing_link() {
    check("missingLink").await;
}

#[wasm_bindgen_test]
async fn link_after_50_kb() {
    check("linkAfter50Kb").await;
}

#[wasm_bindgen_test]
async fn bad_json() {
    check("badJson").await;
}

#[wasm_bindgen_test]
async fn wrong_content_type() {
    check("wrongContentType").await;
}

#[wasm_bindgen_test]
async fn missing_fields() {
    check("missingFields").await;
}

#[wasm_bindgen_test]
async fn too_many_capabilities() {
    check("tooManyCapabilities").await;
}

#[wasm_bindgen_test]
async fn redirect_loop() {
    check("redirectLoop").await;
}

#[wasm_bindgen_test]
async fn redirects_are_followed() {
    check("redirectsAreFollowed").await;
}

#[wasm_bindgen_test]
async fn newer_major_version_warns() {
    check("newerMajorVersionWarns").await;
}

#[wasm_bindgen_test]
async fn manifest_over_1_mb() {
    check("manifestOver1Mb").await;
}

#[wasm_bindgen_test]
async fn slow_server_times_out() {
    check("slowServerTimesOut").await;
}

#[wasm_bindgen_test]
async fn reading_stops_at_the_end_of_the_head() {
    check("readingStopsAtTheEndOfTheHead").await;
}

#[wasm_bindgen_test]
async fn signal_aborts() {
    check("signalAborts").await;
}

#[wasm_bindgen_test]
async fn problems_resolve_and_programmer_errors_reject() {
    check("problemsResolveAndProgrammerErrorsReject").await;
}
