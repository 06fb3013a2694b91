//! ABP's handshake: the initialize re-sent with the same id until a late app answers, a duplicate answered
//! alike and another id refused (ALREADY_INITIALIZED), the re-sends' schedule, connect timing out with back-off
//! when nobody answers, initialize sent again at once when the app says it listens (`app/ready`), and
//! NOT_INITIALIZED on both sides before a session.

use serde_json::json;

use serde_json::Value;

use super::pair::{request, Pair};
use crate::core::agent::{AgentConfig, AgentOutput, CallRequest};
use crate::core::connection::AgentConnection;
use crate::core::dialect::abp::{app_ready, decode};
use crate::core::dialect::{Carrier, DialectKind};
use crate::core::error::ErrorCode;

#[test]
fn handshake_survives_a_late_app_and_resends_the_same_id() {
    let mut p = Pair::new();
    p.agent.connect(p.now);
    p.drain();
    // The iframe has not loaded: the first initialize is lost.
    p.to_app.clear();
    p.advance(60.0);
    let inits = p.agent_sent_of("initialize");
    assert_eq!(inits.len(), 2, "initialize is re-sent");
    assert_eq!(inits[0]["id"], inits[1]["id"], "with the same id");
    assert!(p.agent.is_ready());
    let result = p.app_sent_of("initialize-result")[0].clone();
    assert_eq!(
        result["payload"]["capabilities"].as_array().unwrap().len(),
        2
    );
    assert_eq!(result["payload"]["protocolVersion"], "0.1");
    // A duplicate of the same initialize gets the same answer; a new id gets ALREADY_INITIALIZED.
    let again = json!({ "type": "initialize", "id": inits[0]["id"], "payload": {} });
    p.app
        .handle(decode(&again).unwrap().for_app().unwrap(), p.now, &p.reg);
    let other = json!({ "type": "initialize", "id": "x-9", "payload": {} });
    p.app
        .handle(decode(&other).unwrap().for_app().unwrap(), p.now, &p.reg);
    p.drain();
    let results = p.app_sent_of("initialize-result");
    assert_eq!(
        results[1]["payload"]["sessionId"],
        result["payload"]["sessionId"]
    );
    assert_eq!(
        results[2]["payload"]["error"]["code"],
        "ALREADY_INITIALIZED"
    );
}

#[test]
fn connect_times_out_when_nobody_answers() {
    let mut p = Pair::new();
    p.agent.connect(p.now);
    p.drain();
    for _ in 0..200 {
        p.now += 100.0;
        p.agent.handle_timeout(p.now);
        p.drain();
        p.to_app.clear(); // nobody is listening
    }
    assert!(p
        .agent_events
        .iter()
        .any(|e| matches!(e, AgentOutput::ConnectFailed(err) if err.code == ErrorCode::Timeout)));
    let resent = p.agent_sent_of("initialize").len();
    assert!(
        resent > 5 && resent < 40,
        "backs off: {resent} initialize messages in 10 s"
    );
}

#[test]
fn a_late_app_is_asked_again_within_ten_ms_for_a_second_then_ever_less_often() {
    let mut p = Pair::new();
    let start = p.now;
    p.agent.connect(p.now);
    let mut sent_at = vec![];
    while p.now < start + 10_000.0 {
        p.drain();
        sent_at.extend(p.to_app.drain(..).map(|_| p.now - start)); // nobody is listening
        p.now += 1.0;
        p.agent.handle_timeout(p.now);
    }
    let gaps: Vec<f64> = sent_at.windows(2).map(|w| w[1] - w[0]).collect();
    let fast = sent_at.iter().filter(|t| **t <= 1000.0).count();
    assert!(
        gaps[..fast - 1].iter().all(|g| *g <= 10.0),
        "an app that starts listening in the first second waits at most 10 ms: {gaps:?}"
    );
    assert!(
        gaps.windows(2).all(|g| g[1] >= g[0]) && gaps.last() == Some(&1000.0),
        "then the interval doubles up to a second: {gaps:?}"
    );
    assert!(
        sent_at.len() < fast + 20,
        "{} initialize messages in 10 s",
        sent_at.len()
    );
}

#[test]
fn the_app_answers_not_initialized_without_a_session() {
    let mut p = Pair::new();
    let call = json!({ "type": "capabilities/call", "id": "m1", "payload": { "callId": "c1", "capability": "echo" } });
    let cancel =
        json!({ "type": "capabilities/cancel", "id": "m2", "payload": { "callId": "c1" } });
    p.app
        .handle(decode(&call).unwrap().for_app().unwrap(), p.now, &p.reg);
    p.app
        .handle(decode(&cancel).unwrap().for_app().unwrap(), p.now, &p.reg);
    p.drain();
    assert!(p.started().is_empty());
    assert_eq!(p.app_sent[0]["payload"]["error"]["code"], "NOT_INITIALIZED");
    assert_eq!(p.app_sent[0]["id"], "m1");
    assert_eq!(p.app_sent[1]["payload"]["cancelled"], false);
    assert_eq!(p.app_sent[1]["payload"]["error"]["code"], "NOT_INITIALIZED");
    // The agent refuses locally before the handshake too.
    let err = p.agent.start_call(
        CallRequest {
            params: json!(null),
            ..request("c", "echo")
        },
        p.now,
    );
    assert_eq!(err.unwrap_err().code, ErrorCode::NotInitialized);
}

#[test]
fn an_app_that_says_it_listens_is_sent_initialize_at_once_however_late() {
    let mut p = Pair::new();
    let start = p.now;
    p.agent.connect(p.now);
    // Nobody listens for 3.5 s: by then the re-sends are hundreds of ms apart.
    while p.now < start + 3500.0 {
        p.now += 1.0;
        p.agent.handle_timeout(p.now);
        p.drain();
        p.to_app.clear();
    }
    let before = p.agent_sent_of("initialize").len();
    p.now += 1.0;
    p.agent.handle_timeout(p.now);
    p.drain();
    assert_eq!(
        p.agent_sent_of("initialize").len(),
        before,
        "no re-send is due"
    );
    let ready = app_ready::<Value>(0.0);
    assert_eq!(ready["type"], "app/ready");
    p.to_agent.push_back(ready);
    p.deliver_to_agent();
    let inits = p.agent_sent_of("initialize");
    assert_eq!(inits.len(), before + 1, "initialize is sent again at once");
    assert_eq!(inits[0]["id"], inits[before]["id"], "with the same id");
    p.run();
    assert!(p.agent.is_ready());
    // Connected, a later app/ready (a frame that reloaded, or anyone's) sends nothing.
    p.to_agent.push_back(app_ready::<Value>(0.0));
    p.deliver_to_agent();
    assert_eq!(p.agent_sent_of("initialize").len(), before + 1);
}

#[test]
fn app_ready_is_for_agents_and_windows_only() {
    // An app reading app/ready (another app's, seen on a shared window) leaves it to the agent.
    let ready = app_ready::<Value>(0.0);
    assert!(decode(&ready).unwrap().for_app().is_none());
    // Over a stream (a MessagePort, a WebSocket) initialize is sent once, and app/ready changes nothing.
    let mut agent = AgentConnection::<Value>::new(
        DialectKind::Abp,
        Carrier::Stream,
        AgentConfig::default(),
        json!({ "name": "a", "version": "1" }),
        "a",
    );
    agent.connect(0.0);
    let sent = |a: &mut AgentConnection<Value>| {
        std::iter::from_fn(|| a.poll(&|| 0.0))
            .filter_map(|o| o.event::<()>().err())
            .count()
    };
    assert_eq!(sent(&mut agent), 1);
    let _ = agent.receive(&ready, 5.0);
    assert_eq!(sent(&mut agent), 0);
}
