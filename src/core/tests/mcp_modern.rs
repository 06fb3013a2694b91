//! The MCP dialect's server role in the stateless era (revision 2026-07-28), beside the legacy one: requests
//! that carry their version in `_meta` are answered without a session (`server/discover`, `tools/list` with
//! its cache fields, `tools/call`), a version we do not speak is -32022 with the ones we do, a modern
//! `initialize` or `ping` is an unknown method; a cancel aborts the handler and nothing more is written for it;
//! elicitation is an `InputRequiredResult` answered by a retry, whose `requestState` is refused when altered,
//! replayed, presented for another call or expired (the call is then cancelled in the app); and
//! `subscriptions/listen` is acknowledged first, hears tool changes with its id, and is torn down with
//! `notifications/cancelled` when the server goes.

use serde_json::{json, Value};

use super::pair::Pair;
use crate::core::agent::AgentOutput;
use crate::core::app::{AppConfig, AppOutput, ElicitEnd};
use crate::core::capability::Changes;
use crate::core::dialect::DialectKind;
use crate::core::error::ErrorCode;
use crate::core::message::Outcome;
use crate::core::CallRequest;

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
    // The revision removed `ping`: an unknown method, like `initialize`.
    let r = one(to_app(&mut p, modern(json!(1), "ping", json!({}))));
    assert_eq!(r["error"]["code"], -32601);
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
    assert_eq!(names, ["echo", "export.pdf"], "in registration order");

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

/// The handler's answer, if `ctx.elicit` resolved.
fn elicit_answer(p: &Pair, elicit_id: &str) -> Option<Value> {
    p.app_events.iter().find_map(|e| match e {
        AppOutput::ElicitDone {
            id,
            end: ElicitEnd::Answer(a),
        } if id == elicit_id => Some(a.clone()),
        _ => None,
    })
}

#[test]
fn a_call_that_brings_its_answer_is_not_asked_and_extra_answers_are_ignored() {
    let mut p = server();
    let call = modern(
        json!(10),
        "tools/call",
        json!({ "name": "echo", "arguments": { "x": 1 }, "_meta": meta(true),
            "inputResponses": {
                "who": { "action": "accept", "content": { "name": "Ada" } },
                "unknown_extra_key": { "action": "accept", "content": { "foo": "bar" } },
                "another": 123 } }),
    );
    to_app(&mut p, call);
    let before = p.app_sent.len();
    let request = json!({ "method": "elicitation/create", "key": "who",
        "params": { "message": "Who are you?", "requestedSchema": { "type": "object" } } });
    let elicit_id = p
        .app
        .elicit(Some("10"), request.clone(), p.now)
        .expect("asked");
    p.drain();
    assert_eq!(p.app_sent.len(), before, "nothing is put to the client");
    assert_eq!(
        elicit_answer(&p, &elicit_id).expect("ctx.elicit resolves from the request"),
        json!({ "success": true, "data": { "name": "Ada" } })
    );

    // An answer is good for one question: asked again under the same key, the client is asked.
    let again = p.app.elicit(Some("10"), request, p.now).expect("asked");
    p.drain();
    assert!(elicit_answer(&p, &again).is_none());
    let r = one(p.app_sent[before..].to_vec());
    assert_eq!(r["id"], 10);
    assert_eq!(r["result"]["resultType"], "input_required");
    assert!(r["result"]["inputRequests"]["who"].is_object());
}

#[test]
fn an_answer_that_is_no_object_is_no_answer() {
    let mut p = server();
    let call = modern(
        json!(10),
        "tools/call",
        json!({ "name": "echo", "arguments": {}, "_meta": meta(true),
            "inputResponses": { "who": 12345 } }),
    );
    to_app(&mut p, call);
    let before = p.app_sent.len();
    let request = json!({ "method": "elicitation/create", "key": "who",
        "params": { "message": "Who are you?", "requestedSchema": { "type": "object" } } });
    let elicit_id = p.app.elicit(Some("10"), request, p.now).expect("asked");
    p.drain();
    assert!(elicit_answer(&p, &elicit_id).is_none());
    let r = one(p.app_sent[before..].to_vec());
    assert_eq!(r["result"]["resultType"], "input_required");
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
    p.agent.pin_version("2025-11-25");
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

// Our client role: modern first, falling back to `initialize` for a server that does not answer
// `server/discover`.

fn methods(sent: &[Value]) -> Vec<String> {
    sent.iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect()
}

/// What our client sent with `method`, in order.
fn sent<'a>(p: &'a Pair, method: &str) -> Vec<&'a Value> {
    p.agent_sent
        .iter()
        .filter(|m| m["method"] == method)
        .collect()
}

/// Our client and our app, connected in the stateless era.
fn modern_pair() -> Pair {
    let mut p = server();
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready(), "connected");
    p
}

#[test]
fn our_client_asks_discover_first_then_listens_and_lists_without_initialize() {
    let p = modern_pair();
    assert_eq!(
        methods(&p.agent_sent),
        ["server/discover", "subscriptions/listen", "tools/list"]
    );
    for m in &p.agent_sent {
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], VERSION,
            "every request says its version: {m}"
        );
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"],
            "test-agent"
        );
    }
    assert!(p.app.session_id().is_none(), "no session at the app");
    let connected = p.agent_events.iter().find_map(|e| match e {
        crate::core::agent::AgentOutput::Connected { payload, .. } => Some(payload.clone()),
        _ => None,
    });
    let payload = connected.expect("connected");
    assert_eq!(payload["protocolVersion"], VERSION);
    assert_eq!(payload["app"]["name"], "test");
    assert_eq!(payload["capabilities"][1]["name"], "export.pdf");
}

#[test]
fn each_call_of_our_client_carries_the_meta_and_only_its_own_progress_token() {
    let mut p = modern_pair();
    p.call_with(CallRequest {
        params: json!({ "x": 1 }),
        progress_token: Some("tok-1".into()),
        ..super::pair::request("c1", "echo")
    });
    p.call("c2", "echo", json!({ "x": 2 }));
    p.run();
    let calls = sent(&p, "tools/call");
    assert_eq!(calls.len(), 2, "{calls:?}");
    for m in &calls {
        let meta = &m["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], VERSION,
            "{m}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "test-agent",
            "{m}"
        );
        assert!(
            meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
            "{m}"
        );
    }
    assert_eq!(calls[0]["params"]["arguments"], json!({ "x": 1 }));
    assert_eq!(calls[0]["params"]["_meta"]["progressToken"], "tok-1");
    assert_eq!(calls[1]["params"]["arguments"], json!({ "x": 2 }));
    assert!(
        calls[1]["params"]["_meta"].get("progressToken").is_none(),
        "the first call's token stays its own: {}",
        calls[1]
    );
}

#[test]
fn our_clients_call_abort_and_list_changes_in_the_stateless_era() {
    let mut p = modern_pair();
    p.call("c1", "echo", json!({ "x": 1 }));
    p.run();
    assert_eq!(started(&p), ["c1"]);
    p.complete("c1", json!({ "ok": true }));
    p.run();
    let done = p.settled("c1");
    assert_eq!(super::pair::remote(done[0])["data"], json!({ "ok": true }));

    p.call("c2", "echo", json!({}));
    p.run();
    p.agent
        .abort_call("c2", crate::core::agent::AbortKind::Signal(None), p.now);
    p.run();
    let cancel = p
        .agent_sent
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], "c2");
    assert_eq!(p.aborted(), ["c2"]);

    let lists = |p: &Pair| {
        p.agent_sent
            .iter()
            .filter(|m| m["method"] == "tools/list")
            .count()
    };
    let before = lists(&p);
    let changes = Changes {
        added: vec!["new".into()],
        removed: Vec::new(),
        changed: Vec::new(),
    };
    p.app.capabilities_changed(&changes);
    p.run();
    assert_eq!(
        lists(&p),
        before + 1,
        "a change heard through the listen re-lists the tools"
    );
}

#[test]
fn our_client_answers_an_input_required_result_through_on_elicitation_and_retries() {
    let mut p = modern_pair();
    p.call("c3", "echo", json!({ "x": 3 }));
    p.run();
    let request = json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } });
    let asked = p.app.elicit(Some("c3"), request, p.now).expect("asked");
    p.drain();
    p.run();
    let (eid, call_id, payload) = p
        .agent_events
        .iter()
        .find_map(|e| match e {
            crate::core::agent::AgentOutput::Elicitation {
                id,
                call_id,
                payload,
            } => Some((id.clone(), call_id.clone(), payload.clone())),
            _ => None,
        })
        .expect("onElicitation is asked");
    assert_eq!(call_id.as_deref(), Some("c3"));
    assert_eq!(payload["params"]["message"], "Sure?");
    p.agent.answer_elicitation(
        &eid,
        crate::core::message::ElicitAnswer::Answer(
            json!({ "success": true, "data": { "confirmed": true } }),
        ),
    );
    p.run();
    let answered = p.app_events.iter().find_map(|e| match e {
        AppOutput::ElicitDone {
            id,
            end: ElicitEnd::Answer(a),
        } if *id == asked => Some(a.clone()),
        _ => None,
    });
    assert_eq!(
        answered.expect("the app's ctx.elicit resolves"),
        json!({ "success": true, "data": { "confirmed": true } })
    );
    let calls = sent(&p, "tools/call");
    assert_eq!(calls.len(), 2, "the call, then its retry");
    assert_ne!(
        calls[1]["id"], calls[0]["id"],
        "the retry has an id of its own"
    );
    assert!(calls[1]["params"]["requestState"].is_string());
    assert_eq!(calls[1]["params"]["arguments"], json!({ "x": 3 }));
    assert!(!methods(&p.app_sent).contains(&"elicitation/create".to_owned()));
    p.complete("c3", json!({ "done": 3 }));
    p.run();
    let done = p.settled("c3");
    assert_eq!(done.len(), 1);
    assert_eq!(super::pair::remote(done[0])["data"], json!({ "done": 3 }));
}

#[test]
fn our_client_falls_back_to_initialize_when_discover_is_not_answered() {
    let mut p = server();
    p.agent.connect(p.now);
    p.drain();
    let discover = p.to_app.pop_front().expect("server/discover");
    assert_eq!(discover["method"], "server/discover");
    // A legacy server: discover is an unknown method.
    p.to_agent
        .push_back(json!({ "jsonrpc": "2.0", "id": discover["id"],
        "error": { "code": -32601, "message": "Method not found" } }));
    p.deliver_to_agent();
    let init = p.to_app.pop_front().expect("initialize");
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert!(init["params"].get("_meta").is_none());
    p.to_app.push_front(init);
    p.run();
    assert!(p.agent.is_ready());
    assert!(p.app.session_id().is_some(), "a legacy session");
    assert!(methods(&p.agent_sent).contains(&"notifications/initialized".to_owned()));
}

#[test]
fn our_clients_calls_always_have_a_maximum_total_time() {
    let mut p = modern_pair();
    p.call("long", "echo", json!({}));
    p.run();
    p.advance(f64::from(crate::core::dialect::mcp::DEFAULT_MAX_TOTAL_TIMEOUT_MS) + 1.0);
    let done = p.settled("long");
    assert_eq!(done.len(), 1);
    assert_eq!(super::pair::local(done[0]).0, ErrorCode::Timeout);
    assert_eq!(p.aborted(), ["long"], "the app's handler is cancelled too");
}

/// Whether our client sent `notifications/cancelled` for any of its handshake's requests.
fn cancelled_handshake(p: &Pair) -> bool {
    p.agent_sent
        .iter()
        .any(|m| m["method"] == "notifications/cancelled")
}

#[test]
fn our_client_never_cancels_its_handshake() {
    // Nobody answers: the probe is re-sent until connectTimeout, the connect fails, and nothing is cancelled.
    let mut p = server();
    p.agent.connect(p.now);
    p.drain();
    for _ in 0..120 {
        p.to_app.clear();
        p.now += 100.0;
        p.agent.handle_timeout(p.now);
        p.drain();
    }
    assert!(p
        .agent_events
        .iter()
        .any(|e| matches!(e, AgentOutput::ConnectFailed(_))));
    assert!(!cancelled_handshake(&p), "{:?}", p.agent_sent);

    // A legacy server: the probe is refused, then `initialize` goes unanswered and the user closes the
    // connection. The initialize is not cancelled either (MCP forbids it).
    let mut p = server();
    p.agent.connect(p.now);
    p.drain();
    let probe = p.to_app.pop_front().expect("the probe");
    p.to_agent
        .push_back(json!({ "jsonrpc": "2.0", "id": probe["id"],
        "error": { "code": -32601, "message": "Method not found" } }));
    p.deliver_to_agent();
    assert_eq!(
        methods(&p.to_app.drain(..).collect::<Vec<_>>()),
        ["initialize"]
    );
    p.agent.shutdown(Some("the user closed it".into()));
    p.drain();
    assert!(!cancelled_handshake(&p), "{:?}", p.agent_sent);
}

#[test]
fn a_probe_re_sent_to_a_loading_frame_and_refused_twice_still_falls_back_once() {
    let mut p = server();
    p.agent.connect(p.now);
    p.drain();
    // The frame was still loading: the agent sends its probe again.
    p.now += 60.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    let probes: Vec<Value> = p.to_app.drain(..).collect();
    assert_eq!(methods(&probes), ["server/discover", "server/discover"]);
    for probe in &probes {
        p.to_agent
            .push_back(json!({ "jsonrpc": "2.0", "id": probe["id"],
            "error": { "code": -32601, "message": "Method not found" } }));
    }
    p.deliver_to_agent();
    p.deliver_to_agent();
    assert_eq!(
        methods(&p.to_app.iter().cloned().collect::<Vec<_>>()),
        ["initialize"]
    );
    p.run();
    assert!(
        p.agent.is_ready(),
        "the second refusal is not read as the initialize's answer"
    );
}
