//! WebSocket tests in headless Chrome and Firefox, against a real `abp-peer` on 127.0.0.1.
//!
//! `scripts/test.sh` starts the peer (restarting it whenever a case kills it), passes its URL in
//! `ABP_PEER_URL` and its launch token in `ABP_PEER_TOKEN` at build time, and stops it afterwards. The peer
//! admits the test page's origin only (the script pins the runner's address with `WASM_BINDGEN_TEST_ADDRESS`). The cases are in `tests/js/ws-cases.js`: calls,
//! BinaryData (raw bytes ↔ ArrayBuffer; mimeType and filename kept; utf-8 and look-alikes left alone), abort
//! and timeout, the cancel table, progress, elicitation, a 5 MB binary result, `maxMessageBytes`, the server
//! killed mid-call (with and without reconnect), garbage and floods both ways, option checking (every bad
//! argument rejects, nothing throws), who may connect (a page on another origin cannot join or drive, not even
//! with the token; driving needs the token), and the native agent driving a browser app.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

#[allow(unused_imports)]
use abp_wasm::WebSocketTransport as _;

#[wasm_bindgen(module = "/tests/js/ws-cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runWsCase)]
    async fn run_ws_case(name: &str, base: &str, token: &str) -> Result<JsValue, JsValue>;
}

const PEER: Option<&str> = option_env!("ABP_PEER_URL");
const TOKEN: Option<&str> = option_env!("ABP_PEER_TOKEN");

async fn check(name: &str) {
    let Some(base) = PEER else {
        panic!("ABP_PEER_URL is not set: run scripts/test.sh, which starts abp-peer and sets it");
    };
    let Some(token) = TOKEN else {
        panic!("ABP_PEER_TOKEN is not set: run scripts/test.sh, which starts abp-peer and sets it");
    };
    common::report(run_ws_case(name, base, token).await);
}

#[wasm_bindgen_test]
async fn ws_call_round_trips() {
    check("wsCallRoundTrips").await;
}

#[wasm_bindgen_test]
async fn ws_binary_data_keeps_its_fields() {
    check("wsBinaryDataKeepsItsFields").await;
}

#[wasm_bindgen_test]
async fn ws_abort_in_flight() {
    check("wsAbortInFlight").await;
}

#[wasm_bindgen_test]
async fn ws_timeout() {
    check("wsTimeout").await;
}

#[wasm_bindgen_test]
async fn ws_cancel_table() {
    check("wsCancelTable").await;
}

#[wasm_bindgen_test]
async fn ws_progress() {
    check("wsProgress").await;
}

#[wasm_bindgen_test]
async fn ws_elicitation() {
    check("wsElicitation").await;
}

#[wasm_bindgen_test]
async fn ws_five_megabyte_binary_result() {
    check("wsFiveMegabyteBinaryResult").await;
}

#[wasm_bindgen_test]
async fn ws_max_message_bytes() {
    check("wsMaxMessageBytes").await;
}

#[wasm_bindgen_test]
async fn ws_server_killed_mid_call() {
    check("wsServerKilledMidCall").await;
}

#[wasm_bindgen_test]
async fn ws_the_first_connect_follows_reconnect() {
    check("wsTheFirstConnectFollowsReconnect").await;
}

#[wasm_bindgen_test]
async fn ws_without_reconnect_stays_closed() {
    check("wsWithoutReconnectStaysClosed").await;
}

#[wasm_bindgen_test]
async fn ws_the_app_leaving_the_relay_keeps_the_agent() {
    check("wsTheAppLeavingTheRelayKeepsTheAgent").await;
}

#[wasm_bindgen_test]
async fn ws_garbage_from_the_socket() {
    check("wsGarbageFromTheSocket").await;
}

#[wasm_bindgen_test]
async fn ws_heartbeat_notices_a_hung_app() {
    check("wsHeartbeatNoticesAHungApp").await;
}

#[wasm_bindgen_test]
async fn ws_options_are_checked() {
    check("wsOptionsAreChecked").await;
}

#[wasm_bindgen_test]
async fn ws_other_origins_cannot_join_or_drive() {
    check("wsOtherOriginsCannotJoinOrDrive").await;
}

#[wasm_bindgen_test]
async fn native_agent_drives_a_browser_app() {
    check("nativeAgentDrivesABrowserApp").await;
}

#[wasm_bindgen_test]
async fn native_agent_server_killed() {
    check("nativeAgentServerKilled").await;
}

#[wasm_bindgen_test]
async fn tesseron_app_driven_by_the_native_gateway() {
    check("tesseronAppDrivenByTheNativeGateway").await;
}
