//! The ACP dialect on the shared state machines, with simulated time: a request per capability, abort as
//! `$/cancel_request` answered -32800 (or by the result that won the race), the `cancelGrace` fallback,
//! timeouts, the proposal's `$/cancelRequest`, the cascade to the handler's own requests, `initialize` never
//! cancellable, ABP errors carried in the JSON-RPC error's data, `$/ping` as the heartbeat, and garbage.

use serde_json::{json, Value};

use super::pair::{local, remote, request, Pair};
use crate::core::agent::{AbortKind, AgentOutput, CallRequest, Settlement};
use crate::core::app::{AppConfig, AppOutput, ElicitEnd};
use crate::core::dialect::DialectKind;
use crate::core::error::{AbpError, ErrorCode};
use crate::core::message::Outcome;

fn acp() -> Pair {
    let mut p = Pair::speaking(DialectKind::Acp, AppConfig::default());
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready(), "connected over ACP");
    p.agent_events.clear();
    p.app_events.clear();
    p
}

fn last(sent: &[Value]) -> Value {
    sent.last().cloned().unwrap_or(Value::Null)
}

#[test]
fn the_handshake_and_a_call_are_plain_requests() {
    let mut p = Pair::speaking(DialectKind::Acp, AppConfig::default());
    p.agent.connect(p.now);
    p.run();
    assert_eq!(p.agent_sent[0]["method"], "initialize");
    assert_eq!(p.agent_sent[0]["params"]["protocolVersion"], 1);
    assert_eq!(p.app_sent[0]["result"]["protocolVersion"], 1);
    assert!(p.agent.is_ready());
    p.call("c1", "export.pdf", json!({ "pages": 3 }));
    p.run();
    assert_eq!(
        last(&p.agent_sent),
        json!({ "jsonrpc": "2.0", "id": "c1", "method": "export.pdf", "params": { "pages": 3 } })
    );
    p.complete("c1", json!({ "url": "x.pdf" }));
    p.run();
    assert_eq!(last(&p.app_sent)["result"], json!({ "url": "x.pdf" }));
    let r = remote(p.settled("c1")[0]);
    assert_eq!(
        [&r["success"], &r["data"]],
        [&json!(true), &json!({ "url": "x.pdf" })]
    );
}

#[test]
fn abort_sends_cancel_request_and_waits_for_the_minus_32800() {
    let mut p = acp();
    p.call("c1", "echo", json!({}));
    p.run();
    p.agent
        .abort_call("c1", AbortKind::Signal(Some("stop".into())), p.now);
    p.drain();
    assert!(p.settled("c1").is_empty(), "ACP waits for the answer");
    assert_eq!(
        last(&p.agent_sent),
        json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": "c1" } })
    );
    p.run();
    assert_eq!(p.aborted(), ["c1"]);
    let answer = last(&p.app_sent);
    assert_eq!(answer["error"]["code"], -32800);
    assert_eq!(answer["id"], "c1");
    let r = remote(p.settled("c1")[0]);
    assert_eq!(
        [&r["success"], &r["cancelled"], &r["error"]["code"]],
        [&json!(false), &json!(true), &json!("CANCELLED")]
    );
    assert_eq!(r["error"]["details"]["jsonrpc"]["code"], -32800);
}

#[test]
fn a_result_that_wins_the_race_is_kept() {
    let mut p = acp();
    p.call("c1", "echo", json!({}));
    p.run();
    p.complete("c1", json!("done first"));
    p.agent.abort_call("c1", AbortKind::Signal(None), p.now);
    p.run();
    let r = remote(p.settled("c1")[0]);
    assert_eq!(
        [&r["success"], &r["data"]],
        [&json!(true), &json!("done first")]
    );
    assert_eq!(p.settled("c1").len(), 1);
}

#[test]
fn an_app_that_never_answers_is_settled_after_the_grace_period_and_timeouts_say_timeout() {
    let mut p = acp();
    p.call("c1", "echo", json!({}));
    p.run();
    p.agent.abort_call("c1", AbortKind::Signal(None), p.now);
    p.drain();
    p.to_app.clear(); // the cancel is lost
    p.advance(999.0);
    assert!(p.settled("c1").is_empty());
    p.advance(1.0);
    assert_eq!(
        local(p.settled("c1")[0]),
        (ErrorCode::Cancelled, true, false)
    );
    p.call_with(CallRequest {
        timeout: Some(100.0),
        ..request("c2", "echo")
    });
    p.run();
    p.advance(100.0);
    assert_eq!(local(p.settled("c2")[0]), (ErrorCode::Timeout, true, true));
}

#[test]
fn the_proposals_cancel_request_is_accepted_and_initialize_is_never_cancellable() {
    let mut p = acp();
    p.call("c1", "echo", json!({}));
    p.run();
    p.to_app.push_back(
        json!({ "jsonrpc": "2.0", "method": "$/cancelRequest", "params": { "id": "c1" } }),
    );
    p.run();
    assert_eq!(p.aborted(), ["c1"]);
    assert_eq!(last(&p.app_sent)["error"]["code"], -32800);
    // A cancel for the initialize request changes nothing.
    let init_id = p.agent_sent[0]["id"].clone();
    let session = p.app.session_id().map(str::to_owned);
    p.to_app.push_back(json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": init_id } }));
    p.run();
    assert_eq!(p.app.session_id().map(str::to_owned), session);
    p.call("c2", "echo", json!({}));
    p.run();
    p.complete("c2", json!(2));
    p.run();
    assert_eq!(remote(p.settled("c2")[0])["data"], 2);
}

#[test]
fn the_handlers_own_requests_are_cancelled_with_it() {
    let mut p = acp();
    p.call("c1", "echo", json!({}));
    p.run();
    let eid = p
        .app
        .elicit(
            Some("c1"),
            json!({ "method": "session/request_permission", "params": { "tool": "rm" } }),
            p.now,
        )
        .unwrap();
    p.run();
    let asked = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::Elicitation { id, payload, .. } => {
            assert_eq!(payload["method"], "session/request_permission");
            Some(id.clone())
        }
        _ => None,
    });
    let asked = asked.expect("the agent was asked");
    assert_eq!(asked, eid);
    p.to_app.push_back(
        json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": "c1" } }),
    );
    p.run();
    let cascade = p
        .app_sent
        .iter()
        .any(|m| m["method"] == "$/cancel_request" && m["params"]["requestId"] == eid.as_str());
    assert!(cascade, "the nested request is cancelled on the wire");
    assert!(p
        .agent_events
        .iter()
        .any(|e| matches!(e, AgentOutput::ElicitationAborted { id } if *id == asked)));
    assert!(p
        .app_events
        .iter()
        .any(|e| matches!(e, AppOutput::ElicitDone { id, end: ElicitEnd::Ended } if *id == eid)));
}

#[test]
fn abp_errors_travel_in_the_json_rpc_error_data() {
    let mut p = acp();
    p.call("c1", "nope", json!({}));
    p.call("c2", "echo", json!({}));
    p.run();
    let mut thrown = AbpError::new(ErrorCode::RateLimited, "slow down");
    thrown.retry_after = Some(5000.0);
    p.app.complete("c2", Outcome::Failure(thrown), None, p.now);
    p.run();
    let unknown = remote(p.settled("c1")[0]);
    assert_eq!(unknown["error"]["code"], "UNKNOWN_CAPABILITY");
    assert_eq!(unknown["error"]["details"]["jsonrpc"]["code"], -32601);
    let limited = remote(p.settled("c2")[0]);
    assert_eq!(
        [
            &limited["error"]["code"],
            &limited["error"]["retryable"],
            &limited["error"]["retryAfter"]
        ],
        [&json!("RATE_LIMITED"), &json!(true), &json!(5000)]
    );
    assert_eq!(limited["error"]["details"]["jsonrpc"]["code"], -32603);
}

#[test]
fn the_heartbeat_probes_with_a_request_any_answer_counts() {
    let mut p = Pair::speaking(DialectKind::Acp, AppConfig::default());
    p.new_agent(
        crate::core::agent::AgentConfig {
            heartbeat: Some(100.0),
            ..Default::default()
        },
        "a",
    );
    p.agent.connect(p.now);
    p.run();
    p.call("c1", "echo", json!({}));
    p.run();
    p.advance(100.0);
    assert_eq!(last(&p.agent_sent)["method"], "$/ping");
    assert_eq!(
        last(&p.app_sent)["error"]["code"],
        -32601,
        "an ABP app does not know it"
    );
    p.advance(150.0);
    assert!(
        p.settled("c1").is_empty(),
        "the answer showed the app is there"
    );
    assert!(p.agent.is_ready());
}

#[test]
fn garbage_gets_errors_and_the_connection_keeps_working() {
    let mut p = acp();
    for raw in [
        json!([1]),
        json!({ "jsonrpc": "2.0", "id": 9, "method": "$/made-up" }),
        json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": {} }),
        json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": "ghost" } }),
        json!({ "jsonrpc": "2.0", "id": "nobody", "error": { "code": -32800 } }),
        json!(7),
    ] {
        p.to_app.push_back(raw.clone());
        p.to_agent.push_back(raw);
    }
    p.run();
    assert!(p
        .app_sent
        .iter()
        .any(|m| m["id"] == 9 && m["error"]["code"] == -32601));
    p.call("after", "echo", json!({ "ok": 1 }));
    p.run();
    p.complete("after", json!({ "ok": 1 }));
    p.run();
    assert!(matches!(p.settled("after")[0], Settlement::Remote(_)));
}
