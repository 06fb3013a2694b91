//! ABP against bad input: duplicated messages (nothing runs or settles twice), a cancel overtaking its call
//! (no orphan handler), garbage ignored and malformed requests answered, and random messages (a seeded
//! PRNG, replayable) that never panic and leave both sides working.

use serde_json::{json, Value};

use super::pair::{local, remote, request, Pair};
use crate::core::agent::{AbortKind, AgentConfig};
use crate::core::dialect::abp::decode;
use crate::core::dialect::Ignored;
use crate::core::message::{Incoming, ToApp};

#[test]
fn duplicated_messages_do_not_run_twice_or_settle_twice() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    let dup = p.to_app.front().cloned().unwrap();
    p.to_app.push_back(dup);
    p.run();
    assert_eq!(p.started(), ["c1"]);
    p.complete("c1", json!(1));
    let dup = p.to_agent.front().cloned().unwrap();
    p.to_agent.push_back(dup);
    p.run();
    assert_eq!(p.settled("c1").len(), 1);
    // The call message delivered again after completion still does not run it.
    let call = p.agent_sent_of("capabilities/call")[0].clone();
    p.to_app.push_back(call);
    p.run();
    assert_eq!(p.started(), ["c1"]);
}

#[test]
fn a_cancel_overtaking_its_call_leaves_no_orphan_handler() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.agent.abort_call("c1", AbortKind::Signal(None), p.now);
    p.drain();
    p.to_app.swap(0, 1); // the cancel arrives first
    p.run();
    assert!(
        p.started().is_empty(),
        "the call that was cancelled before it arrived never runs"
    );
    assert!(local(p.settled("c1")[0]).1);
}

#[test]
fn garbage_is_ignored_and_malformed_requests_are_answered() {
    for v in [
        json!(1),
        json!("capabilities/call"),
        json!(null),
        json!([1, 2]),
        json!({}),
        json!({ "type": 7 }),
    ] {
        assert_eq!(decode(&v).unwrap_err(), Ignored::NotAMessage, "{v}");
    }
    assert_eq!(
        decode(&json!({ "type": "what/ever" })).unwrap_err(),
        Ignored::UnknownType
    );
    let mut deep = json!(0);
    for _ in 0..500 {
        deep = json!({ "type": "capabilities/call", "id": "m", "payload": deep });
    }
    assert!(matches!(
        decode(&deep),
        Ok(Incoming::ToApp(ToApp::Malformed { .. }))
    ));

    let mut p = Pair::connected();
    let bad_call =
        json!({ "type": "capabilities/call", "id": "m1", "payload": { "capability": "echo" } });
    let bad_cancel =
        json!({ "type": "capabilities/cancel", "id": "m2", "payload": { "callId": 5 } });
    p.app
        .handle(decode(&bad_call).unwrap().for_app().unwrap(), p.now, &p.reg);
    p.app.handle(
        decode(&bad_cancel).unwrap().for_app().unwrap(),
        p.now,
        &p.reg,
    );
    p.drain();
    let answers = &p.app_sent[p.app_sent.len() - 2..];
    assert_eq!(answers[0]["id"], "m1");
    assert_eq!(answers[0]["payload"]["error"]["code"], "INVALID_PARAMS");
    assert_eq!(answers[1]["id"], "m2");
    assert_eq!(answers[1]["payload"]["error"]["code"], "INVALID_PARAMS");
    assert!(p.started().is_empty());
}

/// A small deterministic PRNG (xorshift64*), so the randomised test needs no dependency and replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A value of a random shape: what a confused or hostile peer might put in any field.
fn junk(rng: &mut Rng, depth: u32) -> Value {
    let ids = ["c1", "c2", "m1", "", "s", "abp-heartbeat-probe"];
    match rng.below(if depth > 3 { 6 } else { 9 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.below(1000) as f64 - 500.5),
        3 => json!(f64::MAX),
        4 => json!(rng.pick(&ids)),
        5 => json!("x".repeat(rng.below(50) as usize)),
        6 => Value::Array((0..rng.below(4)).map(|_| junk(rng, depth + 1)).collect()),
        _ => {
            let keys = [
                "callId",
                "capability",
                "params",
                "options",
                "timeout",
                "progressToken",
                "success",
                "data",
                "error",
                "code",
                "cancelled",
                "reason",
                "sessionId",
                "operationId",
                "progress",
                "event",
                "method",
                "id",
                "type",
                "payload",
            ];
            let mut o = serde_json::Map::new();
            for _ in 0..rng.below(6) {
                o.insert(rng.pick(&keys).to_owned(), junk(rng, depth + 1));
            }
            Value::Object(o)
        }
    }
}

/// A message with a real type and id but random payload fields, or plain junk.
fn random_message(rng: &mut Rng) -> Value {
    let types = [
        "initialize",
        "initialize-result",
        "capabilities/call",
        "capabilities/call-result",
        "capabilities/cancel",
        "capabilities/cancel-result",
        "progress",
        "notification",
        "elicitation/request",
        "elicitation/response",
        "shutdown",
        "notifications/capabilities/list_changed",
        "made/up",
    ];
    if rng.below(10) == 0 {
        return junk(rng, 0);
    }
    let mut m = json!({ "type": rng.pick(&types), "timestamp": 1 });
    if rng.below(4) != 0 {
        m["id"] = junk(rng, 3);
    }
    if rng.below(5) != 0 {
        m["payload"] = junk(rng, 1);
    }
    m
}

#[test]
fn random_messages_never_panic_and_leave_both_sides_working() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut p = Pair::connected();
    for round in 0..20_000 {
        // Real traffic mixed in, so random messages meet calls in every state.
        if round % 50 == 0 {
            let id = format!("r{round}");
            let _ = p.agent.start_call(request(&id, "echo"), p.now);
            p.drain();
        }
        let m = random_message(&mut rng);
        if let Ok(msg) = decode(&m) {
            if rng.below(2) == 0 {
                if let Some(msg) = msg.for_app() {
                    p.app.handle(msg, p.now, &p.reg);
                }
            } else if let Some(msg) = msg.for_agent() {
                p.agent.handle(msg, p.now);
            }
        }
        if round % 7 == 0 {
            p.now += rng.below(300) as f64;
            p.agent.handle_timeout(p.now);
            p.app.handle_timeout(p.now);
        }
        p.drain();
        p.to_app.clear();
        p.to_agent.clear();
    }
    // Whatever state the junk left in the app's core, a new agent can open a session with it and call.
    p.to_app.clear();
    p.to_agent.clear();
    p.app.transport_lost();
    p.new_agent(AgentConfig::default(), "z");
    p.agent.connect(p.now);
    p.run();
    assert!(p.agent.is_ready(), "the app answers a new initialize");
    p.call("after", "echo", json!({ "ok": true }));
    p.run();
    assert!(p.started().contains(&"after"), "the call ran");
    p.complete("after", json!("fine"));
    p.run();
    assert_eq!(remote(p.settled("after")[0])["data"], "fine");
}
