//! ABP elicitation: the app asks the agent during a call, the agent answers, and a question still open
//! when its call is aborted ends on both sides (a late answer goes nowhere).

use serde_json::json;

use super::pair::Pair;
use crate::core::agent::{AbortKind, AgentOutput};
use crate::core::app::{AppOutput, ElicitEnd};
use crate::core::message::ElicitAnswer;

#[test]
fn elicitation_is_cancelled_with_its_call() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    let eid = p
        .app
        .elicit(
            Some("c1"),
            json!({ "method": "confirm", "params": { "q": "sure?" } }),
            p.now,
        )
        .unwrap();
    p.run();
    let asked = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::Elicitation {
            id,
            call_id,
            payload,
        } => Some((id.clone(), call_id.clone(), payload.clone())),
        _ => None,
    });
    let (id, call_id, payload) = asked.expect("the agent was asked");
    assert_eq!(call_id.as_deref(), Some("c1"));
    assert_eq!(payload["method"], "confirm");
    p.agent.abort_call("c1", AbortKind::Signal(None), p.now);
    p.run();
    assert!(p
        .agent_events
        .iter()
        .any(|e| matches!(e, AgentOutput::ElicitationAborted { id: i } if *i == id)));
    assert!(p
        .app_events
        .iter()
        .any(|e| matches!(e, AppOutput::ElicitDone { id: i, end: ElicitEnd::Ended } if *i == eid)));
    // A late answer from the agent's handler goes nowhere.
    let sent = p.agent_sent.len();
    p.agent
        .answer_elicitation(&id, ElicitAnswer::Answer(json!({ "success": true })));
    p.drain();
    assert_eq!(p.agent_sent.len(), sent);
}

#[test]
fn elicitation_answered() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    let eid = p
        .app
        .elicit(Some("c1"), json!({ "method": "pick" }), p.now)
        .unwrap();
    p.run();
    let id = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::Elicitation { id, .. } => Some(id.clone()),
        _ => None,
    });
    p.agent.answer_elicitation(
        &id.unwrap(),
        ElicitAnswer::Answer(json!({ "success": true, "data": 4 })),
    );
    p.run();
    let got = p.app_events.iter().find_map(|e| match e {
        AppOutput::ElicitDone {
            id,
            end: ElicitEnd::Answer(r),
        } if *id == eid => Some(r.clone()),
        _ => None,
    });
    assert_eq!(got.unwrap()["data"], 4);
}
