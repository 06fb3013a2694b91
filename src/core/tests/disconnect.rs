//! ABP connections ending: a lost transport settles everything as DISCONNECTED, reconnecting opens a new
//! session (not after shutdown), the heartbeat settles calls when the app goes silent and keeps a slow call
//! whose app answers, and shutdown aborts the handlers and allows a new session.

use serde_json::json;

use super::pair::{local, remote, request, Pair};
use crate::core::agent::{AgentConfig, AgentOutput, CallRequest, CancelAnswer};
use crate::core::error::ErrorCode;

#[test]
fn losing_the_transport_settles_everything_as_disconnected() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.call("c2", "echo", json!({}));
    p.run();
    let handle = p.agent.cancel("c2", None, p.now).unwrap();
    p.agent.transport_lost();
    p.app.transport_lost();
    p.drain();
    // This client's transport does not come back (an iframe removed): no retry on it can succeed, so the
    // error is not retryable and says what to do.
    for c in ["c1", "c2"] {
        assert_eq!(
            local(p.settled(c)[0]),
            (ErrorCode::Disconnected, false, false)
        );
    }
    assert!(p.agent_events.iter().any(|e| matches!(e,
        AgentOutput::CancelAnswered { handle: h, answer: CancelAnswer::Local { error, .. } } if *h == handle && error.code == ErrorCode::Disconnected)));
    assert_eq!(p.aborted(), ["c1", "c2"]);
    assert_eq!(p.agent.pending_calls(), 0);
    assert_eq!(p.app.active_calls(), 0);
    let later = p
        .agent
        .start_call(
            CallRequest {
                params: json!(null),
                ..request("c3", "echo")
            },
            p.now,
        )
        .unwrap_err();
    assert_eq!(
        (later.code, later.retryable),
        (ErrorCode::Disconnected, false)
    );
    assert!(later.message.contains("connect again"), "{}", later.message);
}

#[test]
fn a_transport_that_comes_back_leaves_disconnected_retryable() {
    let mut p = Pair::new();
    p.new_agent(
        AgentConfig {
            reconnects: true,
            ..AgentConfig::default()
        },
        "r-",
    );
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready());
    p.call("c1", "echo", json!({}));
    p.run();
    p.agent.transport_lost();
    p.drain();
    assert_eq!(
        local(p.settled("c1")[0]),
        (ErrorCode::Disconnected, false, true)
    );
    let later = p
        .agent
        .start_call(request("c2", "echo"), p.now)
        .unwrap_err();
    assert_eq!(
        (later.code, later.retryable),
        (ErrorCode::Disconnected, true)
    );
}

#[test]
fn after_a_lost_transport_reconnect_opens_a_new_session_but_not_after_shutdown() {
    let mut p = Pair::connected();
    let first = p.agent.session_id().map(str::to_owned);
    p.call("c1", "echo", json!({}));
    p.run();
    p.agent.transport_lost();
    p.app.transport_lost();
    p.drain();
    assert!(p.agent.is_lost());
    assert_eq!(local(p.settled("c1")[0]).0, ErrorCode::Disconnected);
    assert!(p.agent.reconnect(p.now));
    assert!(!p.agent.reconnect(p.now), "only one handshake at a time");
    p.run();
    assert!(p.agent.is_ready());
    assert_ne!(p.agent.session_id().map(str::to_owned), first);
    p.call("c2", "echo", json!({}));
    p.run();
    p.complete("c2", json!("ok"));
    p.run();
    assert_eq!(remote(p.settled("c2")[0])["data"], json!("ok"));
    p.agent.shutdown(None);
    p.drain();
    assert!(!p.agent.reconnect(p.now), "shutdown() is final");
    // A closed client says so, and not as something worth retrying on it.
    let err = p
        .agent
        .start_call(request("c3", "echo"), p.now)
        .unwrap_err();
    assert_eq!(
        (err.code, err.retryable),
        (ErrorCode::PreconditionFailed, false)
    );
    let err = p.agent.cancel("c3", None, p.now).unwrap_err();
    assert_eq!(
        (err.code, err.retryable),
        (ErrorCode::PreconditionFailed, false)
    );
}

fn with_heartbeat(ms: f64) -> Pair {
    let mut p = Pair::new();
    p.new_agent(
        AgentConfig {
            heartbeat: Some(ms),
            ..AgentConfig::default()
        },
        "a",
    );
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready());
    p
}

#[test]
fn heartbeat_settles_pending_calls_when_the_app_goes_silent() {
    let mut p = with_heartbeat(1000.0);
    p.call("c1", "echo", json!({}));
    p.run();
    assert_eq!(p.started(), ["c1"]);
    // The app is gone: nothing reaches it and nothing comes back.
    p.now += 999.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    assert!(
        p.agent_sent_of("capabilities/cancel").is_empty(),
        "not before the interval"
    );
    p.now += 1.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    let probes = p.agent_sent_of("capabilities/cancel");
    assert_eq!(probes.len(), 1, "one probe after a second of silence");
    assert_eq!(
        probes[0]["payload"]["callId"],
        crate::core::agent::HEARTBEAT_CALL_ID
    );
    assert_eq!(
        p.agent.poll_timeout(),
        Some(p.now + 1000.0),
        "the probe's deadline"
    );
    p.to_app.clear();
    p.now += 1000.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    assert_eq!(
        local(p.settled("c1")[0]),
        (ErrorCode::Disconnected, false, false)
    );
    assert!(p.agent.is_lost());
}

#[test]
fn heartbeat_keeps_a_slow_call_whose_app_answers() {
    let mut p = with_heartbeat(1000.0);
    p.call("c1", "echo", json!({}));
    p.run();
    // Ten silent seconds of work: the probes are answered ("Operation not found") and nothing else happens.
    for _ in 0..20 {
        p.advance(500.0);
    }
    assert!(
        p.agent_sent_of("capabilities/cancel").len() >= 4,
        "probes were sent"
    );
    assert!(p.settled("c1").is_empty(), "still pending");
    assert!(p.aborted().is_empty(), "the handler was not touched");
    p.complete("c1", json!("done"));
    p.run();
    assert_eq!(remote(p.settled("c1")[0])["data"], "done");
    // Idle: no pending calls, no probes.
    let sent = p.agent_sent_of("capabilities/cancel").len();
    for _ in 0..10 {
        p.advance(1000.0);
    }
    assert_eq!(
        p.agent_sent_of("capabilities/cancel").len(),
        sent,
        "no probes while idle"
    );
    assert_eq!(p.agent.poll_timeout(), None);
}

#[test]
fn shutdown_aborts_handlers_and_allows_a_new_session() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    p.agent.shutdown(Some("bye".into()));
    p.run();
    assert_eq!(p.aborted(), ["c1"]);
    assert_eq!(local(p.settled("c1")[0]).0, ErrorCode::Disconnected);
    assert!(p.app.session_id().is_none());
    // A reloaded agent starts again.
    p.new_agent(AgentConfig::default(), "b");
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready());
}
