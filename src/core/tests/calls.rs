//! ABP calls: a round trip with its data and duration, a reply that names the call only by message id, a
//! `callId` in `options`, and what is refused before a handler runs (a call id in flight, unknown
//! capabilities, params the input schema rejects).

use serde_json::json;

use super::pair::{remote, request, Pair};
use crate::core::agent::CallRequest;
use crate::core::dialect::abp::decode;
use crate::core::error::ErrorCode;

#[test]
fn a_call_round_trips_with_data_and_duration() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({ "x": 1 }));
    p.run();
    assert_eq!(p.started(), ["c1"]);
    p.advance(25.0);
    p.complete("c1", json!({ "y": 2 }));
    p.run();
    let r = remote(p.settled("c1")[0]);
    assert_eq!(r["success"], true);
    assert_eq!(r["data"]["y"], 2);
    assert_eq!(r["callId"], "c1");
    assert_eq!(r["metadata"]["duration"], 25.0);
    assert_eq!(p.agent.pending_calls(), 0);
    assert_eq!(p.app.active_calls(), 0);
}

#[test]
fn a_reply_that_names_the_call_only_by_message_id_settles_it() {
    // A hand-written app may echo the message id and leave out callId.
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    let call = p.to_app.pop_front().unwrap();
    assert_eq!(call["id"], "c1", "the call id doubles as the message id");
    let reply = json!({ "type": "capabilities/call-result", "id": call["id"], "timestamp": 1,
        "payload": { "success": true, "data": 7 } });
    p.to_agent.push_back(reply.clone());
    p.run();
    assert_eq!(remote(p.settled("c1")[0])["data"], 7);
    // The same reply again, for a call that has settled, is dropped.
    p.to_agent.push_back(reply);
    p.run();
    assert_eq!(p.settled("c1").len(), 1);
    assert_eq!(p.agent.pending_calls(), 0);
}

#[test]
fn a_call_id_in_flight_is_refused_locally() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    let sent = p.agent_sent.len();
    let err = p.agent.start_call(
        CallRequest {
            params: json!(null),
            ..request("c1", "echo")
        },
        p.now,
    );
    p.drain();
    assert_eq!(err.unwrap_err().code, ErrorCode::InvalidParams);
    assert_eq!(p.agent_sent.len(), sent, "nothing sent");
}

#[test]
fn unknown_capabilities_and_bad_params_are_refused() {
    let mut p = Pair::connected();
    p.call("u", "nope", json!({}));
    p.call("missing", "export.pdf", json!({}));
    p.call("big", "export.pdf", json!({ "pages": 501 }));
    p.call("frac", "export.pdf", json!({ "pages": 1.5 }));
    p.call("ok", "export.pdf", json!({ "pages": 3 }));
    p.run();
    assert_eq!(
        remote(p.settled("u")[0])["error"]["code"],
        "UNKNOWN_CAPABILITY"
    );
    for c in ["missing", "big", "frac"] {
        let r = remote(p.settled(c)[0]);
        assert_eq!(r["error"]["code"], "INVALID_PARAMS", "{c}");
        assert_eq!(r["error"]["retryable"], false);
    }
    assert!(remote(p.settled("missing")[0])["error"]["message"]
        .as_str()
        .unwrap()
        .contains("pages"));
    assert_eq!(p.started(), ["ok"]);
}

#[test]
fn callid_in_options_is_accepted() {
    let mut p = Pair::connected();
    let old = json!({ "type": "capabilities/call", "id": "m1",
        "payload": { "capability": "echo", "options": { "callId": "legacy", "timeout": 5 } } });
    p.app
        .handle(decode(&old).unwrap().for_app().unwrap(), p.now, &p.reg);
    p.drain();
    assert_eq!(p.started(), ["legacy"]);
}
