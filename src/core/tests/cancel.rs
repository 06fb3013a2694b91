//! ABP cancellation: abort in flight (the handler's late result discarded), timeouts (reason "timeout",
//! reported as TIMEOUT even when the result overtakes the cancel-result), abort racing completion in both
//! orders, the grace period for an app that never answers (the connection's, or the call's own), a settled
//! call's deadline, the whole cancel table, and finished ids remembered in bounded memory.

use serde_json::{json, Value};

use super::pair::{local, remote, request, Pair};
use crate::core::agent::{AbortKind, AgentOutput, CallRequest, CancelAnswer};
use crate::core::app::AppConfig;
use crate::core::error::ErrorCode;

#[test]
fn abort_in_flight_cancels_and_the_handlers_late_result_is_discarded() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    p.agent.abort_call(
        "c1",
        AbortKind::Signal(Some("user clicked stop".into())),
        p.now,
    );
    p.run();
    let cancel = p.agent_sent_of("capabilities/cancel")[0];
    assert_eq!(cancel["payload"]["reason"], "user clicked stop");
    assert_eq!(p.aborted(), ["c1"]);
    // cancel-result is sent before the call-result.
    let order: Vec<&str> = p
        .app_sent
        .iter()
        .skip(1)
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        ["capabilities/cancel-result", "capabilities/call-result"]
    );
    let settled = p.settled("c1");
    assert_eq!(settled.len(), 1);
    assert_eq!(local(settled[0]), (ErrorCode::Cancelled, true, false));
    // The handler ignored its signal and returns later: nothing more goes out.
    let sent = p.app_sent.len();
    p.complete("c1", json!("late"));
    assert_eq!(p.app_sent.len(), sent);
}

#[test]
fn timeout_cancels_with_reason_timeout_and_reports_timeout() {
    let mut p = Pair::connected();
    p.call_with(CallRequest {
        timeout: Some(500.0),
        ..request("c1", "echo")
    });
    p.run();
    p.advance(499.0);
    assert!(p.settled("c1").is_empty());
    p.advance(1.0);
    assert_eq!(
        p.agent_sent_of("capabilities/cancel")[0]["payload"]["reason"],
        "timeout"
    );
    assert_eq!(local(p.settled("c1")[0]), (ErrorCode::Timeout, true, true));
    assert_eq!(p.aborted(), ["c1"]);
}

#[test]
fn abort_racing_completion_returns_the_real_result() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    // The app finishes; its result is on the wire when the user aborts.
    p.complete("c1", json!("done"));
    p.agent.abort_call("c1", AbortKind::Signal(None), p.now);
    p.run();
    let cancel_result = p.app_sent_of("capabilities/cancel-result")[0];
    assert_eq!(cancel_result["payload"]["cancelled"], false);
    assert_eq!(
        cancel_result["payload"]["reason"],
        "Operation already completed"
    );
    let r = remote(p.settled("c1")[0]);
    assert_eq!(r["success"], true);
    assert_eq!(r["data"], "done");
    assert_eq!(p.settled("c1").len(), 1);
}

#[test]
fn the_race_also_holds_when_the_cancel_result_overtakes_the_result() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    p.complete("c1", json!("done"));
    p.agent.abort_call("c1", AbortKind::Signal(None), p.now);
    p.drain();
    p.deliver_to_app(); // the cancel reaches the app: "already completed"
                        // Deliver the cancel-result before the call-result (reordered).
    let result = p.to_agent.pop_front().unwrap();
    p.deliver_to_agent();
    assert!(
        p.settled("c1").is_empty(),
        "still waiting for the real result"
    );
    p.to_agent.push_back(result);
    p.deliver_to_agent();
    assert_eq!(remote(p.settled("c1")[0])["data"], "done");
}

#[test]
fn an_app_that_never_answers_the_cancel_is_settled_after_the_grace_period() {
    let mut p = Pair::connected();
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
}

fn cancel_result_for(p: &mut Pair, call_id: &str) -> Value {
    let handle = p.agent.cancel(call_id, Some("why".into()), p.now).unwrap();
    p.run();
    p.agent_events
        .iter()
        .find_map(|e| match e {
            AgentOutput::CancelAnswered {
                handle: h,
                answer: CancelAnswer::Remote(v),
            } if *h == handle => Some(v.clone()),
            _ => None,
        })
        .expect("the app answered the cancel")
}

#[test]
fn the_cancel_table() {
    let mut p = Pair::with(AppConfig {
        max_concurrent: Some(1),
        ..AppConfig::default()
    });
    p.agent.connect(p.now);
    p.run();
    p.call("running", "echo", json!({}));
    p.call("queued", "echo", json!({}));
    p.call("done", "echo", json!({}));
    p.run();
    assert_eq!(p.started(), ["running"]);

    // never seen
    let r = cancel_result_for(&mut p, "nobody");
    assert_eq!(
        (r["cancelled"].clone(), r["reason"].clone()),
        (json!(false), json!("Operation not found"))
    );

    // queued: cancelled, the handler never runs
    let r = cancel_result_for(&mut p, "queued");
    assert_eq!(r["cancelled"], true);
    assert!(local(p.settled("queued")[0]).1);
    p.complete("running", json!(1));
    p.run();
    assert_eq!(
        p.started(),
        ["running", "done"],
        "queued never started; the next one did"
    );

    // completed
    p.complete("done", json!(2));
    p.run();
    let r = cancel_result_for(&mut p, "done");
    assert_eq!(
        (r["cancelled"].clone(), r["reason"].clone()),
        (json!(false), json!("Operation already completed"))
    );
    assert_eq!(
        remote(p.settled("done")[0])["data"],
        2,
        "the original result stands"
    );

    // in flight, then again (idempotent, every time)
    p.call("live", "echo", json!({}));
    p.run();
    let r = cancel_result_for(&mut p, "live");
    assert_eq!(r["cancelled"], true);
    let results_before = p.app_sent_of("capabilities/call-result").len();
    for _ in 0..3 {
        let r = cancel_result_for(&mut p, "live");
        assert_eq!(r["cancelled"], true);
    }
    assert_eq!(
        p.app_sent_of("capabilities/call-result").len(),
        results_before,
        "nothing more"
    );
    assert_eq!(p.aborted(), ["live"]);
}

#[test]
fn finished_ids_are_remembered_in_bounded_memory() {
    let mut p = Pair::with(AppConfig {
        remember: 4,
        ..AppConfig::default()
    });
    p.agent.connect(p.now);
    p.run();
    for i in 0..6 {
        let id = format!("c{i}");
        p.call(&id, "echo", json!({}));
        p.run();
        p.complete(&id, json!(i));
        p.run();
    }
    assert_eq!(
        cancel_result_for(&mut p, "c5")["reason"],
        "Operation already completed"
    );
    assert_eq!(
        cancel_result_for(&mut p, "c0")["reason"],
        "Operation not found"
    );
}

#[test]
fn a_timed_out_call_reports_timeout_even_when_the_result_overtakes_the_cancel_result() {
    let mut p = Pair::connected();
    p.call_with(CallRequest {
        timeout: Some(100.0),
        ..request("c1", "echo")
    });
    p.run();
    p.now += 100.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    p.deliver_to_app(); // the app answers cancel-result, then call-result { cancelled: true }
    p.to_agent.swap(0, 1); // the call-result arrives first
    p.deliver_to_agent();
    assert_eq!(
        local(p.settled("c1")[0]),
        (ErrorCode::Timeout, true, true),
        "TIMEOUT, not the app's CANCELLED"
    );
}

#[test]
fn a_settled_calls_deadline_does_not_outlive_it_even_when_its_id_comes_back() {
    let mut p = Pair::connected();
    p.call_with(CallRequest {
        timeout: Some(100.0),
        ..request("c1", "echo")
    });
    p.run();
    p.complete("c1", json!(1));
    p.run();
    assert_eq!(p.settled("c1").len(), 1);
    assert_eq!(p.agent.poll_timeout(), None, "nothing left to wait for");
    p.advance(10.0);
    p.call_with(CallRequest {
        timeout: Some(1000.0),
        ..request("c1", "echo")
    });
    assert_eq!(p.agent.poll_timeout(), Some(p.now + 1000.0));
    p.advance(200.0); // past the first call's deadline
    assert_eq!(p.settled("c1").len(), 1, "the second c1 is still running");
    assert!(p.agent_sent_of("capabilities/cancel").is_empty());
}

#[test]
fn an_explicit_cancel_waits_for_its_answer_as_long_as_the_calls_own_grace() {
    let mut p = Pair::connected();
    p.call_with(CallRequest {
        cancel_grace: Some(5000.0),
        ..request("c1", "echo")
    });
    p.run();
    p.agent
        .cancel("c1", Some("stop".into()), p.now)
        .expect("cancel sent");
    p.drain();
    p.to_app.clear(); // the app never hears of it
    let answered = |p: &Pair| {
        p.agent_events
            .iter()
            .filter(|e| matches!(e, AgentOutput::CancelAnswered { .. }))
            .count()
    };
    p.advance(1500.0); // past the connection's grace, within the call's
    assert_eq!(answered(&p), 0);
    assert!(p.settled("c1").is_empty());
    p.advance(3500.0);
    assert_eq!(answered(&p), 1);
    assert_eq!(local(p.settled("c1")[0]).0, ErrorCode::Cancelled);
}
