//! The MCP dialect on the shared state machines, with simulated time: the handshake (`initialize`,
//! `notifications/initialized`, `tools/list`), calls and `CallToolResult`s, abort and timeout
//! (`notifications/cancelled`, settled at once, nothing sent back for the request, a late response
//! dropped), progress (routed, reset, capped by `maxTotalTimeout`, dropped after settle), explicit cancel,
//! list changes, elicitation both ways, ping and the heartbeat, duplicated and reordered messages, a third
//! party's numeric ids and tokens, and garbage JSON-RPC (no panic, the right error codes, the connection
//! keeps working).

use serde_json::{json, Value};

use super::pair::{local, remote, request, Pair};
use crate::core::agent::{AbortKind, AgentOutput, CallRequest, CancelAnswer, Settlement};
use crate::core::app::{AppConfig, AppOutput, ElicitEnd};
use crate::core::dialect::DialectKind;
use crate::core::error::ErrorCode;
use crate::core::message::{ElicitAnswer, Outcome};

/// A pair whose client speaks the legacy era (2025-11-25, `initialize` first), as the tests in this file read
/// its wire; the stateless era's client is tested in `mcp_modern`.
fn legacy_pair() -> Pair {
    let mut p = Pair::speaking(DialectKind::Mcp, AppConfig::default());
    p.agent.pin_version("2025-11-25");
    p
}

fn mcp() -> Pair {
    let mut p = legacy_pair();
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready(), "connected over MCP");
    p.agent_events.clear();
    p.app_events.clear();
    p
}

fn sent_methods(sent: &[Value]) -> Vec<String> {
    sent.iter()
        .map(|m| match (m.get("method"), m.get("id")) {
            (Some(method), _) => method.as_str().unwrap_or("?").to_owned(),
            (None, Some(_)) if m.get("error").is_some() => "error".to_owned(),
            (None, Some(_)) => "result".to_owned(),
            _ => "?".to_owned(),
        })
        .collect()
}

/// Feeds a raw message to the app and returns what it sent in answer.
fn to_app(p: &mut Pair, raw: Value) -> Vec<Value> {
    let before = p.app_sent.len();
    p.to_app.push_back(raw);
    p.deliver_to_app();
    let answers = p.app_sent[before..].to_vec();
    p.to_agent.clear();
    answers
}

#[test]
fn the_handshake_lists_the_tools_before_connecting() {
    let mut p = legacy_pair();
    p.agent.connect(p.now);
    p.run();
    assert_eq!(
        sent_methods(&p.agent_sent),
        ["initialize", "notifications/initialized", "tools/list"]
    );
    let init = &p.agent_sent[0];
    assert_eq!(init["jsonrpc"], "2.0");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert!(init["params"]["capabilities"]["elicitation"].is_object());
    let result = &p.app_sent[0]["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        result["serverInfo"],
        json!({ "name": "test", "version": "1" })
    );
    let tools = &p.app_sent[1]["result"]["tools"];
    assert_eq!(
        tools[0],
        json!({ "name": "echo", "inputSchema": { "type": "object" } })
    );
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["pages"]));
    let connected = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::Connected { payload, .. } => Some(payload.clone()),
        _ => None,
    });
    let payload = connected.expect("connected");
    assert_eq!(payload["capabilities"][1]["name"], "export.pdf");
    assert_eq!(payload["capabilities"][1]["available"], true);
    assert_eq!(payload["app"]["name"], "test");
}

#[test]
fn a_supported_protocol_version_is_echoed_and_others_get_the_newest() {
    let mut p = legacy_pair();
    let init = |id: u32, v: &str| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": { "protocolVersion": v, "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } } })
    };
    let r = to_app(&mut p, init(1, "2025-03-26"));
    assert_eq!(r[0]["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(r[0]["id"], 1, "a numeric id comes back as a number");
    let mut p = legacy_pair();
    let r = to_app(&mut p, init(1, "1999-01-01"));
    assert_eq!(r[0]["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn a_call_round_trips_as_a_call_tool_result() {
    let mut p = mcp();
    p.call("c1", "echo", json!({ "x": 1 }));
    p.run();
    let call = p.agent_sent.last().unwrap().clone();
    assert_eq!(call["method"], "tools/call");
    assert_eq!(call["id"], "c1");
    assert_eq!(
        call["params"],
        json!({ "name": "echo", "arguments": { "x": 1 } })
    );
    p.complete("c1", json!({ "x": 1 }));
    p.run();
    let result = &p.app_sent.last().unwrap()["result"];
    assert_eq!(
        *result,
        json!({ "content": [{ "type": "text", "text": "{\"x\":1}" }], "structuredContent": { "x": 1 } })
    );
    let r = remote(p.settled("c1")[0]);
    assert_eq!(
        [&r["success"], &r["data"]],
        [&json!(true), &json!({ "x": 1 })]
    );
    // A value that is already a CallToolResult passes through; a string has no structuredContent.
    p.call("c2", "echo", json!({}));
    p.run();
    let ready = json!({ "content": [{ "type": "text", "text": "hi" }] });
    p.complete("c2", ready.clone());
    p.call("c3", "echo", json!({}));
    p.run();
    p.complete("c3", json!("plain"));
    p.run();
    assert_eq!(remote(p.settled("c2")[0])["data"], ready);
    assert_eq!(
        remote(p.settled("c3")[0])["data"],
        json!({ "content": [{ "type": "text", "text": "\"plain\"" }] })
    );
}

#[test]
fn errors_become_is_error_results_or_json_rpc_errors() {
    let mut p = mcp();
    p.call("c1", "echo", json!({}));
    p.run();
    let failure = Outcome::Failure(crate::core::AbpError::new(
        ErrorCode::OperationFailed,
        "boom",
    ));
    p.app.complete("c1", failure, None, p.now);
    p.run();
    assert_eq!(
        p.app_sent.last().unwrap()["result"],
        json!({ "content": [{ "type": "text", "text": "boom" }], "isError": true })
    );
    let r = remote(p.settled("c1")[0]);
    assert_eq!(
        [&r["success"], &r["error"]["code"]],
        [&json!(false), &json!("OPERATION_FAILED")]
    );
    assert_eq!(
        r["data"]["isError"], true,
        "the CallToolResult is kept in data"
    );
    // An unknown tool and bad arguments are JSON-RPC errors -32602, kept in details.jsonrpc.
    p.call("c2", "nope", json!({}));
    p.call("c3", "export.pdf", json!({ "pages": 0 }));
    p.run();
    for c in ["c2", "c3"] {
        let r = remote(p.settled(c)[0]);
        assert_eq!(r["error"]["code"], "INVALID_PARAMS", "{c}");
        assert_eq!(r["error"]["details"]["jsonrpc"]["code"], -32602, "{c}");
    }
    assert_eq!(p.started(), ["c1"], "neither handler ran");
}

#[test]
fn abort_sends_notifications_cancelled_settles_at_once_and_nothing_answers_it() {
    let mut p = mcp();
    p.call("c1", "echo", json!({}));
    p.run();
    let answers_before = p.app_sent.len();
    p.agent
        .abort_call("c1", AbortKind::Signal(Some("stop".into())), p.now);
    p.drain();
    // Settled before the app even saw the cancel.
    assert_eq!(
        local(p.settled("c1")[0]),
        (ErrorCode::Cancelled, true, false)
    );
    p.run();
    let cancel = p.agent_sent.last().unwrap();
    assert_eq!(
        *cancel,
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": { "requestId": "c1", "reason": "stop" } })
    );
    assert_eq!(p.aborted(), ["c1"], "the handler's signal aborts");
    assert_eq!(
        p.app_sent.len(),
        answers_before,
        "the app sends nothing for it"
    );
    // The handler finishing anyway changes nothing; a late response from a server that ignored the cancel
    // is dropped.
    p.complete("c1", json!("late"));
    p.to_agent
        .push_back(json!({ "jsonrpc": "2.0", "id": "c1", "result": { "content": [] } }));
    p.run();
    assert_eq!(p.settled("c1").len(), 1);
    assert_eq!(p.agent.pending_calls(), 0);
}

#[test]
fn a_timeout_cancels_and_says_timeout() {
    let mut p = mcp();
    p.call_with(CallRequest {
        timeout: Some(500.0),
        ..request("c1", "echo")
    });
    p.run();
    p.advance(499.0);
    assert!(p.settled("c1").is_empty());
    p.advance(1.0);
    assert_eq!(local(p.settled("c1")[0]), (ErrorCode::Timeout, true, true));
    assert_eq!(p.agent_sent.last().unwrap()["params"]["reason"], "timeout");
    assert_eq!(p.aborted(), ["c1"]);
}

#[test]
fn progress_is_routed_resets_the_timeout_and_max_total_timeout_still_caps() {
    let mut p = mcp();
    p.call_with(CallRequest {
        timeout: Some(100.0),
        reset_timeout_on_progress: true,
        max_total_timeout: Some(350.0),
        progress_token: Some("c1".into()),
        ..request("c1", "echo")
    });
    p.run();
    assert_eq!(
        p.agent_sent.last().unwrap()["params"]["_meta"],
        json!({ "progressToken": "c1" })
    );
    for step in 1..=5 {
        p.advance(80.0);
        p.app.progress(
            "c1",
            json!({ "progress": step, "total": 10, "status": "working" }),
            p.now,
        );
        p.run();
    }
    // 400 ms of steady progress: the per-step timeout never fired, the 350 ms cap did.
    assert_eq!(local(p.settled("c1")[0]), (ErrorCode::Timeout, true, true));
    let progress: Vec<&Value> = p
        .agent_events
        .iter()
        .filter_map(|e| match e {
            AgentOutput::Progress { payload, .. } => Some(payload),
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 4, "progress before the cap");
    assert_eq!(progress[0]["progress"], 1);
    assert_eq!(progress[0]["message"], "working");
    let wire = p
        .app_sent
        .iter()
        .find(|m| m["method"] == "notifications/progress")
        .unwrap();
    assert_eq!(
        wire["params"],
        json!({ "progressToken": "c1", "progress": 1, "total": 10, "message": "working" })
    );
    // Progress after settle goes nowhere.
    let n = p.agent_events.len();
    p.to_agent.push_back(
        json!({ "jsonrpc": "2.0", "method": "notifications/progress",
        "params": { "progressToken": "c1", "progress": 9 } }),
    );
    p.run();
    assert_eq!(p.agent_events.len(), n);
}

#[test]
fn an_explicit_cancel_is_decided_here() {
    let mut p = mcp();
    p.call("c1", "echo", json!({}));
    p.run();
    let h1 = p.agent.cancel("c1", Some("no".into()), p.now).unwrap();
    let h2 = p.agent.cancel("ghost", None, p.now).unwrap();
    p.run();
    let answers: Vec<(String, bool, Option<&str>)> = p
        .agent_events
        .iter()
        .filter_map(|e| match e {
            AgentOutput::CancelAnswered {
                handle,
                answer:
                    CancelAnswer::Settled {
                        cancelled, reason, ..
                    },
            } => Some((handle.clone(), *cancelled, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [(h1, true, None), (h2, false, Some("Operation not found"))]
    );
    assert_eq!(local(p.settled("c1")[0]).0, ErrorCode::Cancelled);
    assert_eq!(
        p.agent_sent
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .count(),
        1,
        "nothing is sent for a call that is not in flight"
    );
}

#[test]
fn list_changed_makes_the_agent_list_again() {
    let mut p = mcp();
    p.reg.register("late.one", None).unwrap();
    p.app
        .capabilities_changed(&crate::core::capability::Changes {
            added: vec!["late.one".into()],
            ..Default::default()
        });
    p.run();
    let tail = sent_methods(&p.agent_sent[p.agent_sent.len() - 1..]);
    assert_eq!(tail, ["tools/list"]);
    let list = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::CapabilitiesChanged { payload } => Some(payload.clone()),
        _ => None,
    });
    let names: Vec<Value> = list.unwrap()["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].clone())
        .collect();
    assert_eq!(
        names,
        [json!("echo"), json!("export.pdf"), json!("late.one")]
    );
}

#[test]
fn elicitation_goes_both_ways_and_ends_with_its_call() {
    let mut p = mcp();
    p.call("c1", "echo", json!({}));
    p.run();
    let eid = p
        .app
        .elicit(
            Some("c1"),
            json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } }),
            p.now,
        )
        .unwrap();
    p.run();
    let asked = p
        .app_sent
        .iter()
        .find(|m| m["method"] == "elicitation/create")
        .unwrap();
    assert_eq!(asked["params"]["message"], "Sure?");
    assert_eq!(asked["params"]["requestedSchema"]["type"], "object");
    let id = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::Elicitation { id, payload, .. } => {
            assert_eq!(payload["method"], "elicitation/create");
            Some(id.clone())
        }
        _ => None,
    });
    p.agent.answer_elicitation(
        &id.unwrap(),
        ElicitAnswer::Answer(json!({ "success": true, "data": { "confirmed": true } })),
    );
    p.run();
    let answer = p.app_events.iter().find_map(|e| match e {
        AppOutput::ElicitDone {
            id,
            end: ElicitEnd::Answer(r),
        } if *id == eid => Some(r.clone()),
        _ => None,
    });
    assert_eq!(
        answer.unwrap(),
        json!({ "success": true, "data": { "confirmed": true } })
    );
    // A client that did not declare elicitation is never asked.
    let mut p = legacy_pair();
    to_app(
        &mut p,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } } }),
    );
    let refused = p
        .app
        .elicit(None, json!({ "method": "elicitation/confirm" }), p.now);
    assert_eq!(refused.unwrap_err().code, ErrorCode::NotSupported);
}

#[test]
fn ping_both_ways_and_the_heartbeat_uses_it() {
    let mut p = legacy_pair();
    p.new_agent(
        crate::core::agent::AgentConfig {
            heartbeat: Some(100.0),
            ..Default::default()
        },
        "a",
    );
    p.agent.pin_version("2025-11-25");
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready());
    let r = to_app(
        &mut p,
        json!({ "jsonrpc": "2.0", "id": "p1", "method": "ping" }),
    );
    assert_eq!(r[0], json!({ "jsonrpc": "2.0", "id": "p1", "result": {} }));
    p.call("c1", "echo", json!({}));
    p.run();
    p.advance(100.0);
    assert_eq!(p.agent_sent.last().unwrap()["method"], "ping");
    p.advance(50.0);
    p.advance(60.0);
    assert!(p.agent.is_ready(), "the app answered the ping");
    // A silent app: the probe goes unanswered and the call settles DISCONNECTED.
    p.advance(100.0);
    p.to_app.clear();
    p.now += 100.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    p.to_app.clear();
    p.now += 100.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    assert_eq!(local(p.settled("c1")[0]).0, ErrorCode::Disconnected);
}

#[test]
fn duplicated_and_reordered_messages() {
    let mut p = mcp();
    p.call("c1", "echo", json!({}));
    // The call delivered twice: the handler runs once.
    let call = p.to_app.back().cloned().unwrap();
    p.to_app.push_back(call);
    p.run();
    assert_eq!(p.started(), ["c1"]);
    p.complete("c1", json!(1));
    // The response delivered twice: settled once.
    let response = p.to_agent.back().cloned().unwrap();
    p.to_agent.push_back(response);
    p.run();
    assert_eq!(p.settled("c1").len(), 1);
    // A cancel that overtakes its call: the call is dropped when it arrives (the agent already settled).
    p.call("c2", "echo", json!({}));
    p.agent.abort_call("c2", AbortKind::Signal(None), p.now);
    p.drain();
    let cancel = p.to_app.pop_back().unwrap();
    p.to_app.push_front(cancel);
    p.run();
    assert!(!p.started().contains(&"c2"));
    assert_eq!(p.app.active_calls(), 0);
}

#[test]
fn a_third_partys_numeric_ids_and_tokens_come_back_as_numbers() {
    let mut p = mcp();
    let r = to_app(
        &mut p,
        json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": { "name": "echo", "arguments": { "a": 1 }, "_meta": { "progressToken": 3 } } }),
    );
    assert!(r.is_empty(), "still running");
    p.app.progress("7", json!({ "progress": 1 }), p.now);
    p.complete("7", json!({ "a": 1 }));
    let out: Vec<Value> = p.to_agent.drain(..).collect();
    assert_eq!(out[0]["params"]["progressToken"], 3);
    assert_eq!(out[1]["id"], 7);
    assert_eq!(out[1]["result"]["structuredContent"], json!({ "a": 1 }));
    // Cancelled by a numeric requestId.
    to_app(
        &mut p,
        json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": { "name": "echo" } }),
    );
    let r = to_app(
        &mut p,
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 8 } }),
    );
    assert!(r.is_empty(), "no response for a cancelled request");
    assert!(p.aborted().contains(&"8"));
}

#[test]
fn garbage_json_rpc_gets_errors_not_panics_and_the_connection_keeps_working() {
    let mut p = mcp();
    let cases = [
        (
            json!([{ "jsonrpc": "2.0", "id": 1, "method": "ping" }]),
            Some(-32600),
        ),
        (
            json!({ "jsonrpc": "1.0", "id": 2, "method": "ping" }),
            Some(-32600),
        ),
        (json!({ "id": 3, "method": "ping" }), Some(-32600)),
        (
            json!({ "jsonrpc": "2.0", "id": 4, "method": "no/such" }),
            Some(-32601),
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {} }),
            Some(-32602),
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": { "name": 5 } }),
            Some(-32602),
        ),
        (
            json!({ "jsonrpc": "2.0", "id": { "x": 1 }, "method": "ping" }),
            Some(-32600),
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 1e300, "method": "ping" }),
            None,
        ),
        (
            json!({ "jsonrpc": "2.0", "id": 123456789012345678901234567890.0, "method": "tools/list" }),
            None,
        ),
        (
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": null } }),
            None,
        ),
        (
            json!({ "jsonrpc": "2.0", "method": "notifications/made-up" }),
            None,
        ),
        (
            json!({ "jsonrpc": "2.0", "id": "nobody", "result": {} }),
            None,
        ),
        (json!({ "jsonrpc": "2.0" }), None),
        (json!("just text"), None),
        (json!(42), None),
        (json!(null), None),
    ];
    for (raw, code) in cases {
        let answers = to_app(&mut p, raw.clone());
        let errors: Vec<&Value> = answers
            .iter()
            .filter(|m| m.get("error").is_some())
            .collect();
        match code {
            Some(code) => {
                assert_eq!(errors.len(), 1, "{raw}");
                assert_eq!(errors[0]["error"]["code"], code, "{raw}");
            }
            None => assert!(errors.is_empty(), "{raw}: {answers:?}"),
        }
    }
    // Huge and fractional numeric ids are answered with the id they came with.
    let r = to_app(
        &mut p,
        json!({ "jsonrpc": "2.0", "id": 1.5, "method": "ping" }),
    );
    assert_eq!(r[0]["id"], 1.5);
    // The same garbage at the agent: nothing breaks there either.
    for raw in [
        json!([1, 2]),
        json!({ "jsonrpc": "2.0", "id": "x", "error": 5 }),
        json!({}),
    ] {
        p.to_agent.push_back(raw);
    }
    p.run();
    p.call("after", "echo", json!({ "ok": true }));
    p.run();
    p.complete("after", json!({ "ok": true }));
    p.run();
    assert_eq!(remote(p.settled("after")[0])["data"], json!({ "ok": true }));
}

#[test]
fn a_response_racing_the_timeout_settles_the_call_exactly_once() {
    let mut p = mcp();
    p.call_with(CallRequest {
        timeout: Some(10.0),
        ..request("c1", "echo")
    });
    p.run();
    // The response is on its way when the timer fires: the timer came first and decides; the response that
    // arrives next is dropped.
    p.complete("c1", json!("fast enough?"));
    p.advance(10.0);
    assert_eq!(p.settled("c1").len(), 1);
    assert_eq!(local(p.settled("c1")[0]).0, ErrorCode::Timeout);
    // The other order: the response first.
    p.call_with(CallRequest {
        timeout: Some(10.0),
        ..request("c2", "echo")
    });
    p.run();
    p.complete("c2", json!("in time"));
    p.run();
    p.advance(10.0);
    assert_eq!(p.settled("c2").len(), 1);
    assert!(matches!(p.settled("c2")[0], Settlement::Remote(_)));
}

#[test]
fn an_elicitation_is_cancelled_on_the_wire_with_its_call() {
    let mut p = mcp();
    p.call("c1", "echo", json!({}));
    p.run();
    let eid = p
        .app
        .elicit(
            Some("c1"),
            json!({ "method": "elicitation/confirm", "params": { "message": "?" } }),
            p.now,
        )
        .unwrap();
    p.run();
    let asked = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::Elicitation { id, .. } => Some(id.clone()),
        _ => None,
    });
    let asked = asked.unwrap();
    // A third-party client cancels the call: our app cancels its elicitation request too, and our agent's
    // onElicitation signal aborts.
    to_app(
        &mut p,
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "c1" } }),
    );
    let cancel = p
        .app_sent
        .iter()
        .rev()
        .find(|m| m["method"] == "notifications/cancelled")
        .cloned()
        .expect("the elicitation is cancelled on the wire");
    assert_eq!(cancel["params"]["requestId"], eid.as_str());
    p.to_agent.push_back(cancel);
    p.run();
    assert!(p
        .agent_events
        .iter()
        .any(|e| matches!(e, AgentOutput::ElicitationAborted { id } if *id == asked)));
    // Its late answer goes nowhere.
    let n = p.app_events.len();
    p.agent
        .answer_elicitation(&asked, ElicitAnswer::Answer(json!({ "success": true })));
    p.run();
    assert_eq!(p.app_events.len(), n);
}

#[test]
fn a_confirmation_answered_by_an_mcp_client_is_a_boolean() {
    let answer_to = |result: Value| {
        let mut p = mcp();
        p.call("c1", "echo", json!({}));
        p.run();
        let eid = p
            .app
            .elicit(
                Some("c1"),
                json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } }),
                p.now,
            )
            .unwrap();
        p.drain();
        let asked = p.to_agent.pop_back().unwrap();
        assert_eq!(asked["method"], "elicitation/create");
        p.to_agent.clear();
        to_app(
            &mut p,
            json!({ "jsonrpc": "2.0", "id": asked["id"], "result": result }),
        );
        p.app_events
            .iter()
            .find_map(|e| match e {
                AppOutput::ElicitDone {
                    id,
                    end: ElicitEnd::Answer(r),
                } if *id == eid => Some(r.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        answer_to(json!({ "action": "accept", "content": {} })),
        json!({ "success": true, "data": { "confirmed": true } })
    );
    assert_eq!(
        answer_to(json!({ "action": "decline" })),
        json!({ "success": true, "data": { "confirmed": false } })
    );
    assert_eq!(
        answer_to(json!({ "action": "cancel" }))["cancelled"],
        json!(true)
    );
}
