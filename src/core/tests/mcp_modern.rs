//! The MCP dialect's server role in the stateless era (revision 2026-07-28), beside the legacy one: requests
//! that carry their version in `_meta` are answered without a session (`server/discover`, `tools/list` with
//! its cache fields, `tools/call`, `ping`), a version we do not speak is -32022 with the ones we do, a modern
//! `initialize` is an unknown method; a cancel aborts the handler and nothing more is written for it;
//! elicitation is an `InputRequiredResult` answered by a retry, whose `requestState` is refused when altered,
//! replayed, presented for another call or expired (the call is then cancelled in the app); and
//! `subscriptions/listen` is acknowledged first, hears tool changes with its id, and is torn down with
//! `notifications/cancelled` when the server goes.

use serde_json::{json, Value};

use super::pair::Pair;
use crate::core::app::{AppConfig, AppOutput, ElicitEnd};
use crate::core::capability::Changes;
use crate::core::dialect::DialectKind;
use crate::core::error::ErrorCode;
use crate::core::message::Outcome;

const VERSION: &str = "2026-07-28";

/// A pair whose app speaks MCP and whose client is the test, writing raw messages.
fn server() -> Pair {
    Pair::speaking(DialectKind::Mcp, AppConfig::default())
}

/// The `_meta` a modern client puts in every request; `elicitation`: it declares that capability.
fn meta(elicitation: bool) -> Value {
    let caps = if elicitation {
        json!({ "elicitation": {} })
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-client", "version": "2" },
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn modern(id: Value, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta(false);
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// Feeds raw messages to the app and returns what it sent in answer.
fn to_app(p: &mut Pair, raw: Value) -> Vec<Value> {
    let before = p.app_sent.len();
    p.to_app.push_back(raw);
    p.deliver_to_app();
    p.to_agent.clear();
    p.app_sent[before..].to_vec()
}

fn one(answers: Vec<Value>) -> Value {
    assert_eq!(answers.len(), 1, "one answer: {answers:?}");
    answers.into_iter().next().unwrap()
}

fn started(p: &Pair) -> Vec<String> {
    p.started().into_iter().map(str::to_owned).collect()
}

#[test]
fn discover_says_both_eras_who_we_are_and_how_long_it_holds() {
    let mut p = server();
    let r = one(to_app(
        &mut p,
        modern(json!("d-1"), "server/discover", json!({})),
    ));
    assert_eq!(r["id"], "d-1");
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["supportedVersions"],
        json!([
            VERSION,
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ])
    );
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({ "name": "test", "version": "1" })
    );
    assert!(result["ttlMs"].as_f64().is_some_and(|t| t >= 0.0));
    assert!(matches!(
        result["cacheScope"].as_str(),
        Some("public" | "private")
    ));
    assert!(p.app.session_id().is_none(), "no session opened");
}

#[test]
fn an_unsupported_version_is_minus_32022_with_the_versions_we_speak() {
    let mut p = server();
    let mut m = meta(false);
    m["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let r = one(to_app(
        &mut p,
        modern(json!(7), "tools/list", json!({ "_meta": m })),
    ));
    assert_eq!(r["id"], 7);
    assert_eq!(r["error"]["code"], -32022);
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    assert_eq!(r["error"]["data"]["supported"][0], VERSION);
    assert!(r["error"]["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!("2025-11-25")));
}

#[test]
fn a_modern_initialize_is_an_unknown_method_and_a_legacy_one_opens_a_session() {
    let mut p = server();
    let r = one(to_app(
        &mut p,
        modern(
            json!(1),
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "c", "version": "1" } }),
        ),
    ));
    assert_eq!(r["error"]["code"], -32601);
    assert!(p.app.session_id().is_none());
    let legacy = json!({ "jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } } });
    let r = one(to_app(&mut p, legacy));
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    assert!(
        r["result"].get("resultType").is_none(),
        "legacy results stay as they were"
    );
    let list = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" });
    let r = one(to_app(&mut p, list));
    assert!(r["result"].get("ttlMs").is_none());
    assert!(r["result"].get("resultType").is_none());
}

#[test]
fn modern_requests_are_answered_without_a_session_with_result_types_and_cache_fields() {
    let mut p = server();
    let r = one(to_app(&mut p, modern(json!(1), "ping", json!({}))));
    assert_eq!(r["result"], json!({ "resultType": "complete" }));
    let r = one(to_app(&mut p, modern(json!(2), "tools/list", json!({}))));
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0.0);
    assert_eq!(result["cacheScope"], "private");
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "export.pdf"], "in name order");

    let call = modern(
        json!(3),
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "hi" } }),
    );
    assert!(to_app(&mut p, call).is_empty());
    assert_eq!(started(&p), ["3"], "the handler runs without initialize");
    p.complete("3", json!({ "text": "hi" }));
    let r = p.app_sent.last().unwrap();
    assert_eq!(r["id"], 3);
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["structuredContent"], json!({ "text": "hi" }));
    assert!(p.app.session_id().is_none());
}

#[test]
fn a_cancel_aborts_the_handler_and_nothing_more_is_written_for_it() {
    let mut p = server();
    let call = modern(
        json!(5),
        "tools/call",
        json!({ "name": "echo", "arguments": {} }),
    );
    to_app(&mut p, call);
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 5, "reason": "user", "_meta": meta(false) } });
    assert!(to_app(&mut p, cancel).is_empty());
    assert_eq!(p.aborted(), ["5"]);
    let before = p.app_sent.len();
    p.complete("5", json!({ "late": true }));
    assert_eq!(p.app_sent.len(), before, "nothing for a cancelled request");
}

/// A modern call whose handler asks a question: the call's answer asks the client.
fn asking(p: &mut Pair, elicitation: bool) -> (Result<String, ErrorCode>, Vec<Value>) {
    let call = modern(
        json!(10),
        "tools/call",
        json!({ "name": "echo", "arguments": { "x": 1 }, "_meta": meta(elicitation) }),
    );
    to_app(p, call);
    let before = p.app_sent.len();
    let request = json!({ "method": "elicitation/create", "key": "who",
        "params": { "message": "Who are you?", "requestedSchema": { "type": "object",
            "properties": { "name": { "type": "string" } } } } });
    let asked = p.app.elicit(Some("10"), request, p.now);
    p.drain();
    p.to_agent.clear();
    (asked.map_err(|e| e.code), p.app_sent[before..].to_vec())
}

fn retry(id: u64, state: &Value, responses: Value) -> Value {
    modern(
        json!(id),
        "tools/call",
        json!({ "name": "echo", "arguments": { "x": 1 }, "_meta": meta(true),
            "inputResponses": responses, "requestState": state }),
    )
}

#[test]
fn elicitation_is_an_input_required_result_and_the_retry_brings_the_answer() {
    let mut p = server();
    let (asked, sent) = asking(&mut p, true);
    let elicit_id = asked.expect("asked");
    let r = one(sent);
    assert_eq!(r["id"], 10, "the call's own request is answered");
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        result["inputRequests"]["who"]["params"]["message"],
        "Who are you?"
    );
    let state = result["requestState"].clone();
    assert!(state.is_string());
    assert!(
        !p.app_sent.iter().any(|m| m.get("method").is_some()),
        "a modern server sends no requests: {:?}",
        p.app_sent
    );
    assert!(p.aborted().is_empty(), "the handler keeps waiting");

    let answer = json!({ "who": { "action": "accept", "content": { "name": "Ada" } } });
    assert!(to_app(&mut p, retry(11, &state, answer)).is_empty());
    let answered = p.app_events.iter().find_map(|e| match e {
        AppOutput::ElicitDone {
            id,
            end: ElicitEnd::Answer(a),
        } if *id == elicit_id => Some(a.clone()),
        _ => None,
    });
    assert_eq!(
        answered.expect("ctx.elicit resolves"),
        json!({ "success": true, "data": { "name": "Ada" } })
    );
    p.complete("10", json!({ "hello": "Ada" }));
    let r = p.app_sent.last().unwrap();
    assert_eq!(r["id"], 11, "the retry's response is the call's outcome");
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["structuredContent"], json!({ "hello": "Ada" }));
}

#[test]
fn a_request_state_is_refused_when_altered_replayed_or_presented_for_another_call() {
    let mut p = server();
    let (_, sent) = asking(&mut p, true);
    let state = sent[0]["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = json!({ "who": { "action": "decline" } });

    let mut altered = state.clone();
    altered.push('0');
    let r = one(to_app(&mut p, retry(11, &json!(altered), answer.clone())));
    assert_eq!(r["error"]["code"], -32602);

    let other = modern(
        json!(12),
        "tools/call",
        json!({ "name": "echo", "arguments": { "x": 2 }, "_meta": meta(true),
            "inputResponses": answer, "requestState": state }),
    );
    let r = one(to_app(&mut p, other));
    assert_eq!(r["error"]["code"], -32602, "other arguments: another call");

    assert!(to_app(&mut p, retry(13, &json!(state), answer.clone())).is_empty());
    let r = one(to_app(&mut p, retry(14, &json!(state), answer)));
    assert_eq!(r["error"]["code"], -32602, "a state is good once");
    assert_eq!(started(&p), ["10"], "no handler ran twice");
}

#[test]
fn a_call_nobody_retries_is_cancelled_in_the_app_after_the_wait() {
    let mut p = server();
    let (_, sent) = asking(&mut p, true);
    let state = sent[0]["result"]["requestState"].clone();
    let wait = AppConfig::default().retry_wait;
    p.advance(wait - 1.0);
    assert!(p.aborted().is_empty());
    p.advance(2.0);
    assert_eq!(p.aborted(), ["10"], "the handler's signal aborts");
    assert!(
        !p.app_sent
            .iter()
            .any(|m| m["method"] == "notifications/cancelled"),
        "a modern server sends no cancel for its own question"
    );
    let r = one(to_app(
        &mut p,
        retry(
            11,
            &state,
            json!({ "who": { "action": "accept", "content": {} } }),
        ),
    ));
    assert_eq!(r["error"]["code"], -32602, "an expired state is refused");
}

#[test]
fn a_call_that_finished_while_its_question_was_out_answers_the_retry() {
    let mut p = server();
    let (_, sent) = asking(&mut p, true);
    let state = sent[0]["result"]["requestState"].clone();
    let before = p.app_sent.len();
    p.complete("10", json!({ "done": true }));
    assert_eq!(p.app_sent.len(), before, "no request is open to answer");
    let r = one(to_app(
        &mut p,
        retry(11, &state, json!({ "who": { "action": "cancel" } })),
    ));
    assert_eq!(r["id"], 11);
    assert_eq!(r["result"]["structuredContent"], json!({ "done": true }));
    assert_eq!(r["result"]["resultType"], "complete");
}

#[test]
fn only_what_the_request_declared_is_asked_for() {
    let mut p = server();
    let (asked, sent) = asking(&mut p, false);
    assert_eq!(asked, Err(ErrorCode::NotSupported));
    assert!(sent.is_empty());
    // And no question at all outside a call, with no session.
    let outside = p
        .app
        .elicit(None, json!({ "method": "elicitation/create" }), p.now);
    assert_eq!(outside.map_err(|e| e.code), Err(ErrorCode::NotInitialized));
}

fn change(p: &mut Pair) -> Vec<Value> {
    let before = p.app_sent.len();
    let changes = Changes {
        added: vec!["new".into()],
        removed: Vec::new(),
        changed: Vec::new(),
    };
    p.app.capabilities_changed(&changes);
    p.drain();
    p.to_agent.clear();
    p.app_sent[before..].to_vec()
}

#[test]
fn a_listen_is_acknowledged_first_and_hears_tool_changes_with_its_id() {
    let mut p = server();
    assert!(
        change(&mut p).is_empty(),
        "no list_changed to a modern client unasked"
    );
    let ack = one(to_app(
        &mut p,
        modern(
            json!("listen:0"),
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true, "promptsListChanged": true } }),
        ),
    ));
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen:0"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true }),
        "only what we honour"
    );
    let quiet = one(to_app(
        &mut p,
        modern(
            json!(9),
            "subscriptions/listen",
            json!({ "notifications": {} }),
        ),
    ));
    assert_eq!(
        quiet["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );

    let told = one(change(&mut p));
    assert_eq!(told["method"], "notifications/tools/list_changed");
    assert_eq!(
        told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen:0"
    );

    let end = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": "listen:0", "_meta": meta(false) } });
    assert!(to_app(&mut p, end).is_empty());
    assert!(change(&mut p).is_empty(), "an ended listen hears nothing");

    // The server going away tears down what is still open.
    p.app.close();
    p.drain();
    let bye = one(p.to_agent.drain(..).collect());
    assert_eq!(bye["method"], "notifications/cancelled");
    assert_eq!(bye["params"]["requestId"], 9);
}

#[test]
fn a_legacy_session_still_hears_list_changed_and_a_modern_call_beside_it_runs() {
    let mut p = Pair::speaking(DialectKind::Mcp, AppConfig::default());
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready());
    let told = change(&mut p);
    assert_eq!(told.len(), 1);
    assert_eq!(told[0]["method"], "notifications/tools/list_changed");
    assert!(told[0].get("params").is_none());
    let call = modern(
        json!("m1"),
        "tools/call",
        json!({ "name": "echo", "arguments": {} }),
    );
    to_app(&mut p, call);
    assert!(started(&p).contains(&"m1".to_owned()));
    p.app
        .complete("m1", Outcome::Success { data: json!(1) }, None, p.now);
    p.drain();
    assert_eq!(
        p.app_sent.last().unwrap()["result"]["resultType"],
        "complete"
    );
}
