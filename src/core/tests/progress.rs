//! ABP progress: routed per call (only with a token) and dropped after settle, coalesced with the final
//! state sent before the result, `resetTimeoutOnProgress` moving the deadline, and `maxTotalTimeout` capping
//! it.

use serde_json::json;

use super::pair::{local, request, Pair};
use crate::core::agent::{AgentOutput, CallRequest};
use crate::core::dialect::abp::decode;
use crate::core::error::ErrorCode;

fn progress_call(
    p: &mut Pair,
    call_id: &str,
    timeout: Option<f64>,
    reset: bool,
    max_total: Option<f64>,
) {
    p.call_with(CallRequest {
        timeout,
        progress_token: Some(format!("tok-{call_id}")),
        reset_timeout_on_progress: reset,
        max_total_timeout: max_total,
        ..request(call_id, "echo")
    });
    p.run();
}

fn progress_of(p: &Pair, call_id: &str) -> Vec<f64> {
    p.agent_events
        .iter()
        .filter_map(|e| match e {
            AgentOutput::Progress {
                call_id: c,
                payload,
            } if c == call_id => payload["progress"].as_f64(),
            _ => None,
        })
        .collect()
}

#[test]
fn progress_is_routed_per_call_and_dropped_after_settle() {
    let mut p = Pair::connected();
    progress_call(&mut p, "a", None, false, None);
    progress_call(&mut p, "b", None, false, None);
    p.call("quiet", "echo", json!({}));
    p.run();
    p.app.progress("a", json!({ "progress": 1 }), p.now);
    p.advance(20.0);
    p.app.progress("b", json!({ "progress": 7 }), p.now);
    p.app.progress("quiet", json!({ "progress": 3 }), p.now);
    p.run();
    assert_eq!(progress_of(&p, "a"), [1.0]);
    assert_eq!(progress_of(&p, "b"), [7.0]);
    assert!(
        p.app_sent_of("progress")
            .iter()
            .all(|m| m["payload"]["callId"] != "quiet"),
        "no token, no progress"
    );
    let wire = p.app_sent_of("progress")[0];
    assert_eq!(wire["payload"]["operationId"], "tok-a");
    p.complete("a", json!(null));
    p.run();
    // A progress message for the settled call arriving late is dropped.
    let late = json!({ "type": "progress", "payload": { "callId": "a", "operationId": "tok-a", "progress": 99 } });
    p.agent
        .handle(decode(&late).unwrap().for_agent().unwrap(), p.now);
    p.drain();
    assert_eq!(progress_of(&p, "a"), [1.0]);
}

#[test]
fn progress_is_coalesced_and_the_final_state_precedes_the_result() {
    let mut p = Pair::connected();
    progress_call(&mut p, "a", None, false, None);
    for i in 1..=1000 {
        p.app
            .progress("a", json!({ "progress": i, "total": 1000 }), p.now);
    }
    p.drain();
    assert_eq!(
        p.app_sent_of("progress").len(),
        1,
        "a tight loop sends one message now"
    );
    p.advance(16.0);
    assert_eq!(
        progress_of(&p, "a"),
        [1.0, 1000.0],
        "and the latest one after the interval"
    );
    p.app.progress("a", json!({ "progress": 1001 }), p.now);
    p.app.progress("a", json!({ "progress": 1002 }), p.now);
    p.complete("a", json!(null));
    let types: Vec<&str> = p
        .app_sent
        .iter()
        .rev()
        .take(2)
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["capabilities/call-result", "progress"]);
    p.run();
    assert_eq!(progress_of(&p, "a"), [1.0, 1000.0, 1002.0]);
}

#[test]
fn reset_timeout_on_progress_and_max_total_timeout() {
    let mut p = Pair::connected();
    progress_call(&mut p, "reset", Some(100.0), true, Some(350.0));
    progress_call(&mut p, "plain", Some(100.0), false, None);
    for _ in 0..3 {
        p.advance(80.0);
        p.app.progress("reset", json!({ "progress": 1 }), p.now);
        p.app.progress("plain", json!({ "progress": 1 }), p.now);
        p.run();
    }
    // t = 240: "plain" timed out at 100 despite progress; "reset" is alive.
    assert_eq!(local(p.settled("plain")[0]).0, ErrorCode::Timeout);
    assert!(p.settled("reset").is_empty());
    p.advance(80.0);
    p.app.progress("reset", json!({ "progress": 1 }), p.now);
    p.run();
    assert!(p.settled("reset").is_empty(), "t = 320");
    p.advance(30.0); // t = 350: maxTotalTimeout caps it
    assert_eq!(local(p.settled("reset")[0]).0, ErrorCode::Timeout);
}

#[test]
fn progress_that_resets_the_timeout_moves_the_deadline_and_leaves_none_behind() {
    let mut p = Pair::connected();
    p.call_with(CallRequest {
        timeout: Some(100.0),
        progress_token: Some("t1".into()),
        reset_timeout_on_progress: true,
        ..request("c1", "echo")
    });
    p.run();
    p.advance(80.0);
    p.app.progress("c1", json!({ "progress": 1 }), p.now);
    p.run();
    assert_eq!(p.agent.poll_timeout(), Some(p.now + 100.0));
    p.advance(80.0); // past the first deadline
    assert!(p.settled("c1").is_empty());
    p.advance(20.0);
    assert_eq!(local(p.settled("c1")[0]), (ErrorCode::Timeout, true, true));
}
