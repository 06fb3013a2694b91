//! Browser tests: real iframes, real postMessage, real AbortSignals, in headless Chrome and Firefox.
//!
//! The cases are written in JavaScript against the public API (`tests/js/cases.js`), the way users call it;
//! each `#[wasm_bindgen_test]` here runs one. Covers docs/DESIGN.md sections 3-5 for postMessage:
//! handshake before the iframe loads, already-aborted signals, abort in flight, timeouts, abort racing
//! completion, the whole cancel table, NOT_INITIALIZED, progress routing/coalescing/reset, elicitation,
//! handler errors, handlers that ignore their signal, iframe removed or reloaded, shutdown, wrong source and
//! wrong origin, cross-origin frames (nothing posted to their first about:blank), an app's `app/ready` and the
//! agent's initialize sent again at once on it, garbage input, ArrayBuffers
//! and transfer, capability changes, notifications, `window.abp`, MessagePorts, and option checking. The rest of
//! ABP: handler results shaped as ABPResponses, availability and requirements, descriptor checks, the
//! manifest, the deprecation warning, elicitation timeouts, the `window.abp` contract of the ABP API reference
//! and its bootstrap placeholder.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

wasm_bindgen_test_configure!(run_in_browser);

// Link the library so its exports are part of the test build the fixtures import.
#[allow(unused_imports)]
use abp_wasm::AbpClient as _;

#[wasm_bindgen(module = "/tests/js/cases.js")]
extern "C" {
    #[wasm_bindgen(catch, js_name = runCase)]
    async fn run_case(name: &str) -> Result<JsValue, JsValue>;
}

/// Runs one case and fails the test with the JS error's message and stack.
async fn check(name: &str) {
    common::report(run_case(name).await);
}

#[wasm_bindgen_test]
async fn connect_and_describe() {
    check("connectAndDescribe").await;
}

#[wasm_bindgen_test]
async fn already_aborted_signal_sends_nothing() {
    check("alreadyAbortedSignalSendsNothing").await;
}

#[wasm_bindgen_test]
async fn abort_listener_goes_when_the_call_settles() {
    check("abortListenerGoesWhenTheCallSettles").await;
}

#[wasm_bindgen_test]
async fn heartbeat_settles_calls_to_a_silent_port() {
    check("heartbeatSettlesCallsToASilentPort").await;
}

#[wasm_bindgen_test]
async fn abort_in_flight() {
    check("abortInFlight").await;
}

#[wasm_bindgen_test]
async fn timeout_cancels_and_says_timeout() {
    check("timeoutCancelsAndSaysTimeout").await;
}

#[wasm_bindgen_test]
async fn abort_racing_completion_returns_the_real_result() {
    check("abortRacingCompletionReturnsTheRealResult").await;
}

#[wasm_bindgen_test]
async fn cancel_table() {
    check("cancelTable").await;
}

#[wasm_bindgen_test]
async fn not_initialized() {
    check("notInitialized").await;
}

#[wasm_bindgen_test]
async fn progress_is_routed_per_call_and_dropped_after_settle() {
    check("progressIsRoutedPerCallAndDroppedAfterSettle").await;
}

#[wasm_bindgen_test]
async fn progress_is_coalesced_and_the_last_arrives_first() {
    check("progressIsCoalescedAndTheLastArrivesFirst").await;
}

#[wasm_bindgen_test]
async fn reset_timeout_on_progress_and_max_total() {
    check("resetTimeoutOnProgressAndMaxTotal").await;
}

#[wasm_bindgen_test]
async fn elicitation_is_cancelled_with_its_call() {
    check("elicitationIsCancelledWithItsCall").await;
}

#[wasm_bindgen_test]
async fn elicitation_answered() {
    check("elicitationAnswered").await;
}

#[wasm_bindgen_test]
async fn handler_that_ignores_its_signal() {
    check("handlerThatIgnoresItsSignal").await;
}

#[wasm_bindgen_test]
async fn a_signal_read_after_the_cancel_is_already_aborted() {
    check("aSignalReadAfterTheCancelIsAlreadyAborted").await;
}

#[wasm_bindgen_test]
async fn handler_errors_become_abp_errors() {
    check("handlerErrorsBecomeAbpErrors").await;
}

#[wasm_bindgen_test]
async fn iframe_removed_mid_call() {
    check("iframeRemovedMidCall").await;
}

#[wasm_bindgen_test]
async fn a_wrong_target_origin_is_named_at_once_and_in_the_timeout() {
    check("aWrongTargetOriginIsNamedAtOnceAndInTheTimeout").await;
}

#[wasm_bindgen_test]
async fn iframe_reloaded_mid_call_then_reconnect() {
    check("iframeReloadedMidCallThenReconnect").await;
}

#[wasm_bindgen_test]
async fn shutdown_settles_pending_and_aborts_handlers() {
    check("shutdownSettlesPendingAndAbortsHandlers").await;
}

#[wasm_bindgen_test]
async fn messages_from_another_window_are_ignored() {
    check("messagesFromAnotherWindowAreIgnored").await;
}

#[wasm_bindgen_test]
async fn messages_from_the_wrong_origin_are_ignored() {
    check("messagesFromTheWrongOriginAreIgnored").await;
}

#[wasm_bindgen_test]
async fn app_ignores_agents_from_other_origins() {
    check("appIgnoresAgentsFromOtherOrigins").await;
}

#[wasm_bindgen_test]
async fn cross_origin_iframe() {
    check("crossOriginIframe").await;
}

#[wasm_bindgen_test]
async fn origins_are_compared_as_the_browser_writes_them() {
    check("originsAreComparedAsTheBrowserWritesThem").await;
}

#[wasm_bindgen_test]
async fn window_messages_when_asked() {
    check("windowMessagesWhenAsked").await;
}

#[wasm_bindgen_test]
async fn nothing_is_posted_to_the_blank_frame() {
    check("nothingIsPostedToTheBlankFrame").await;
}

#[wasm_bindgen_test]
async fn an_app_says_it_listens_and_the_agent_asks_again_at_once() {
    check("anAppSaysItListensAndTheAgentAsksAgainAtOnce").await;
}

#[wasm_bindgen_test]
async fn garbage_neither_throws_nor_panics() {
    check("garbageNeitherThrowsNorPanics").await;
}

#[wasm_bindgen_test]
async fn array_buffers_survive_and_transfer_moves() {
    check("arrayBuffersSurviveAndTransferMoves").await;
}

#[wasm_bindgen_test]
async fn capabilities_change_and_notifications() {
    check("capabilitiesChangeAndNotifications").await;
}

#[wasm_bindgen_test]
async fn expose_global_for_puppeteer_agents() {
    check("exposeGlobalForPuppeteerAgents").await;
}

#[wasm_bindgen_test]
async fn message_port_both_sides_in_one_page() {
    check("messagePortBothSidesInOnePage").await;
}

#[wasm_bindgen_test]
async fn handlers_settling_after_the_app_closed_are_quiet() {
    check("handlersSettlingAfterTheAppClosedAreQuiet").await;
}

#[wasm_bindgen_test]
async fn popup_window_and_its_closing() {
    check("popupWindowAndItsClosing").await;
}

#[wasm_bindgen_test]
async fn a_flood_of_messages_neither_stalls_nor_breaks_either_side() {
    check("aFloodOfMessagesNeitherStallsNorBreaksEitherSide").await;
}

#[wasm_bindgen_test]
async fn ctx_notify_reaches_the_agent() {
    check("ctxNotifyReachesTheAgent").await;
}

#[wasm_bindgen_test]
async fn a_null_origin_parent_is_served_only_when_listed() {
    check("aNullOriginParentIsServedOnlyWhenListed").await;
}

#[wasm_bindgen_test]
async fn options_are_checked() {
    check("optionsAreChecked").await;
}

#[wasm_bindgen_test]
async fn abp_responses_availability_and_requirements() {
    check("abpResponsesAvailabilityAndRequirements").await;
}

#[wasm_bindgen_test]
async fn register_checks_the_descriptor_and_builds_the_manifest() {
    check("registerChecksTheDescriptorAndBuildsTheManifest").await;
}

#[wasm_bindgen_test]
async fn a_deprecated_capability_warns_once() {
    check("aDeprecatedCapabilityWarnsOnce").await;
}

#[wasm_bindgen_test]
async fn an_elicitation_times_out_on_both_sides() {
    check("anElicitationTimesOutOnBothSides").await;
}

#[wasm_bindgen_test]
async fn window_abp_follows_the_api_reference() {
    check("windowAbpFollowsTheApiReference").await;
}

#[wasm_bindgen_test]
async fn bootstrap_placeholder_waits_for_expose_global() {
    check("bootstrapPlaceholderWaitsForExposeGlobal").await;
}

#[wasm_bindgen_test]
async fn docs_shaped_capability_changes_never_empty_the_list() {
    check("docsShapedCapabilityChangesNeverEmptyTheList").await;
}

#[wasm_bindgen_test]
async fn mcp_dialect_between_our_own_sides() {
    check("mcpDialectBetweenOurOwnSides").await;
}

#[wasm_bindgen_test]
async fn acp_dialect_between_our_own_sides() {
    check("acpDialectBetweenOurOwnSides").await;
}

#[wasm_bindgen_test]
async fn the_private_channel_answers_as_window_messages_do() {
    check("thePrivateChannelAnswersAsWindowMessagesDo").await;
}

#[wasm_bindgen_test]
async fn a_callers_trace_reaches_the_handler() {
    check("aCallersTraceReachesTheHandler").await;
}
