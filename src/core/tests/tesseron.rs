//! The Tesseron dialect's gateway role (the agent) against a scripted app, with simulated time: the app's
//! hello answered with a welcome, actions as the capability list, `actions/invoke` and `{ invocationId,
//! output }`, `actions/cancel` answered -32001 (CANCELLED) or by the result that won, the app's own timeout
//! (-32002, TIMEOUT), -32003/-32004, progress routed to its call, and garbage.

use serde_json::{json, Value};

use super::pair::request;
use crate::core::agent::{AbortKind, AgentConfig, AgentOutput, CallRequest, Settlement};
use crate::core::connection::AgentConnection;
use crate::core::dialect::{Carrier, DialectKind};
use crate::core::error::ErrorCode;

struct Gateway {
    core: AgentConnection<Value>,
    sent: Vec<Value>,
    events: Vec<AgentOutput<Value>>,
    now: f64,
}

impl Gateway {
    fn new() -> Gateway {
        let info = json!({ "name": "abp-gateway", "version": "1" });
        let mut g = Gateway {
            core: AgentConnection::new(
                DialectKind::Tesseron,
                Carrier::Stream,
                AgentConfig::default(),
                info,
                "g",
            ),
            sent: Vec::new(),
            events: Vec::new(),
            now: 0.0,
        };
        g.core.connect(g.now);
        g.drain();
        g
    }

    fn drain(&mut self) {
        let now = self.now;
        while let Some(o) = self.core.poll(&|| now) {
            match o.event() {
                Err(t) => self.sent.push(t.message),
                Ok(e) => self.events.push(e),
            }
        }
    }

    fn feed(&mut self, raw: Value) {
        let _ = self.core.receive(&raw, self.now);
        self.drain();
    }

    fn settled(&self, call_id: &str) -> Vec<&Settlement<Value>> {
        super::pair::settled_in(&self.events, call_id)
    }

    fn response_of(&self, call_id: &str) -> Value {
        match self.settled(call_id).first() {
            Some(Settlement::Remote(v)) => v.clone(),
            other => panic!("expected the app's answer for {call_id}, got {other:?}"),
        }
    }
}

fn hello() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "tesseron/hello", "params": {
        "protocolVersion": "1.2.0",
        "app": { "id": "shop", "name": "Shop", "origin": "http://127.0.0.1" },
        "actions": [
            { "name": "echo", "description": "", "inputSchema": {} },
            { "name": "slow", "description": "Slow", "inputSchema": {}, "timeoutMs": 300 } ],
        "resources": [],
        "capabilities": { "streaming": true, "subscriptions": true, "sampling": true, "elicitation": true } } })
}

fn connected() -> Gateway {
    let mut g = Gateway::new();
    g.feed(hello());
    assert!(g.core.is_ready());
    g
}

fn invoke_id(g: &Gateway) -> Value {
    g.sent.last().unwrap()["id"].clone()
}

#[test]
fn the_app_speaks_first_and_gets_a_welcome() {
    let mut g = Gateway::new();
    assert!(
        g.sent.is_empty(),
        "the gateway sends nothing before the hello"
    );
    g.feed(hello());
    let welcome = &g.sent[0];
    assert_eq!(welcome["id"], 1, "the hello's id, as it came");
    assert_eq!(welcome["result"]["protocolVersion"], "1.2.0");
    assert!(welcome["result"]["sessionId"].is_string());
    assert!(welcome["result"].get("resumeToken").is_none());
    let payload = g.events.iter().find_map(|e| match e {
        AgentOutput::Connected { payload, .. } => Some(payload.clone()),
        _ => None,
    });
    let payload = payload.expect("connected");
    assert_eq!(payload["app"]["name"], "Shop");
    assert_eq!(payload["capabilities"][1]["name"], "slow");
    assert_eq!(payload["capabilities"][1]["timeoutMs"], 300);
    assert_eq!(payload["capabilities"][1]["available"], true);
}

#[test]
fn an_invocation_round_trips() {
    let mut g = connected();
    g.core
        .start_call(
            CallRequest {
                params: json!({ "x": 1 }),
                ..request("c1", "echo")
            },
            g.now,
        )
        .unwrap();
    g.drain();
    let invoke = g.sent.last().unwrap().clone();
    assert_eq!(invoke["method"], "actions/invoke");
    assert_eq!(
        invoke["params"],
        json!({ "name": "echo", "input": { "x": 1 }, "invocationId": "c1" })
    );
    g.feed(json!({ "jsonrpc": "2.0", "id": invoke["id"], "result": { "invocationId": "c1", "output": { "x": 1 } } }));
    let r = g.response_of("c1");
    assert_eq!(
        [&r["success"], &r["data"]],
        [&json!(true), &json!({ "x": 1 })]
    );
}

#[test]
fn cancel_waits_for_minus_32001_and_the_apps_timeout_is_timeout() {
    let mut g = connected();
    g.core.start_call(request("c1", "slow"), g.now).unwrap();
    g.drain();
    let id = invoke_id(&g);
    g.core
        .abort_call("c1", AbortKind::Signal(Some("stop".into())), g.now);
    g.drain();
    assert_eq!(
        *g.sent.last().unwrap(),
        json!({ "jsonrpc": "2.0", "method": "actions/cancel", "params": { "invocationId": "c1" } })
    );
    assert!(g.settled("c1").is_empty(), "waits for the app's answer");
    g.feed(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32001, "message": "Invocation c1 was cancelled" } }));
    let r = g.response_of("c1");
    assert_eq!(
        [&r["cancelled"], &r["error"]["code"]],
        [&json!(true), &json!("CANCELLED")]
    );
    // The app's own per-action timeout.
    g.core.start_call(request("c2", "slow"), g.now).unwrap();
    g.drain();
    let id = invoke_id(&g);
    g.feed(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32002, "message": "Invocation c2 exceeded 300 ms" } }));
    let r = g.response_of("c2");
    assert_eq!(
        [
            &r["cancelled"],
            &r["error"]["code"],
            &r["error"]["retryable"]
        ],
        [&json!(true), &json!("TIMEOUT"), &json!(true)]
    );
    // Our own timeout: actions/cancel, then the -32001 becomes TIMEOUT.
    g.core
        .start_call(
            CallRequest {
                timeout: Some(50.0),
                ..request("c3", "slow")
            },
            g.now,
        )
        .unwrap();
    g.drain();
    let id = invoke_id(&g);
    g.now += 50.0;
    g.core.handle_timeout(g.now);
    g.drain();
    assert_eq!(g.sent.last().unwrap()["method"], "actions/cancel");
    g.feed(
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32001, "message": "cancelled" } }),
    );
    match g.settled("c3")[0] {
        Settlement::Local { error, cancelled } => {
            assert_eq!((&error.code, *cancelled), (&ErrorCode::Timeout, true));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_and_progress() {
    let mut g = connected();
    for (call, code, expected) in [
        ("c1", -32003, "UNKNOWN_CAPABILITY"),
        ("c2", -32004, "INVALID_PARAMS"),
        ("c3", -32005, "OPERATION_FAILED"),
        ("c4", -32603, "INTERNAL_ERROR"),
    ] {
        g.core.start_call(request(call, "echo"), g.now).unwrap();
        g.drain();
        let id = invoke_id(&g);
        g.feed(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": "no", "data": [1] } }));
        let r = g.response_of(call);
        assert_eq!(r["error"]["code"], expected, "{code}");
        assert_eq!(
            r["error"]["details"]["jsonrpc"]["data"],
            json!([1]),
            "{code}"
        );
    }
    g.core.start_call(request("p1", "slow"), g.now).unwrap();
    g.drain();
    g.feed(json!({ "jsonrpc": "2.0", "method": "actions/progress",
        "params": { "invocationId": "p1", "percent": 40, "message": "step 2/5" } }));
    let progress = g.events.iter().find_map(|e| match e {
        AgentOutput::Progress { call_id, payload } if call_id == "p1" => Some(payload.clone()),
        _ => None,
    });
    let p = progress.expect("progress routed to its call");
    assert_eq!(
        [&p["progress"], &p["total"], &p["status"]],
        [&json!(40), &json!(100), &json!("step 2/5")]
    );
    // Garbage changes nothing.
    for raw in [
        json!([1]),
        json!({ "jsonrpc": "2.0", "method": "actions/progress", "params": {} }),
        json!("x"),
    ] {
        g.feed(raw);
    }
    assert!(g.core.is_ready());
}

// ---- Both roles of this SDK: our gateway and our app ----

use super::pair::{remote, Pair};
use crate::core::app::AppConfig;

fn both() -> Pair {
    let mut p = Pair::speaking(
        DialectKind::Tesseron,
        AppConfig {
            progress_interval: 500.0,
            ..AppConfig::default()
        },
    );
    p.reg.update("echo", &json!({ "timeoutMs": 200 })).unwrap();
    p.agent.connect(p.now);
    p.app.connect();
    p.run();
    assert!(p.agent.is_ready(), "the gateway welcomed the app");
    assert!(p.app.session_id().is_some(), "the app has its session");
    p
}

#[test]
fn our_app_says_hello_with_its_actions() {
    let p = both();
    let hello = &p.app_sent[0];
    assert_eq!(hello["method"], "tesseron/hello");
    assert_eq!(hello["params"]["protocolVersion"], "1.2.0");
    assert_eq!(hello["params"]["app"]["id"], "com.test");
    let actions = &hello["params"]["actions"];
    assert_eq!(actions[0]["name"], "echo");
    assert_eq!(actions[0]["timeoutMs"], 200);
    assert_eq!(actions[1]["inputSchema"]["required"], json!(["pages"]));
    assert_eq!(
        p.agent_sent[0]["result"]["sessionId"],
        p.app.session_id().unwrap()
    );
}

#[test]
fn our_app_serves_invokes_and_answers_cancel_with_minus_32001() {
    let mut p = both();
    p.call("c1", "export.pdf", json!({ "pages": 2 }));
    p.run();
    p.complete("c1", json!({ "ok": true }));
    p.run();
    let result = &p.app_sent.last().unwrap()["result"];
    assert_eq!(
        *result,
        json!({ "invocationId": "c1", "output": { "ok": true } })
    );
    assert_eq!(remote(p.settled("c1")[0])["data"], json!({ "ok": true }));
    p.call("c2", "export.pdf", json!({ "pages": 2 }));
    p.run();
    p.agent.abort_call("c2", AbortKind::Signal(None), p.now);
    p.run();
    assert_eq!(p.aborted(), ["c2"]);
    assert_eq!(p.app_sent.last().unwrap()["error"]["code"], -32001);
    let r = remote(p.settled("c2")[0]);
    assert_eq!(
        [&r["cancelled"], &r["error"]["code"]],
        [&json!(true), &json!("CANCELLED")]
    );
    // Unknown and bad input.
    p.call("c3", "nope", json!({}));
    p.call("c4", "export.pdf", json!({ "pages": 0 }));
    p.run();
    assert_eq!(
        remote(p.settled("c3")[0])["error"]["code"],
        "UNKNOWN_CAPABILITY"
    );
    assert_eq!(
        remote(p.settled("c4")[0])["error"]["code"],
        "INVALID_PARAMS"
    );
    let codes: Vec<&Value> = p
        .app_sent
        .iter()
        .filter_map(|m| m.get("error"))
        .map(|e| &e["code"])
        .collect();
    assert!(
        codes.contains(&&json!(-32003)) && codes.contains(&&json!(-32004)),
        "{codes:?}"
    );
}

#[test]
fn our_app_owns_the_action_timeout() {
    let mut p = both();
    p.call("c1", "echo", json!({}));
    p.run();
    p.advance(199.0);
    assert!(p.settled("c1").is_empty());
    p.advance(1.0);
    assert_eq!(p.aborted(), ["c1"], "the handler's signal aborts");
    let answer = &p.app_sent.last().unwrap()["error"];
    assert_eq!(answer["code"], -32002);
    assert_eq!(answer["message"], "Invocation c1 exceeded 200 ms");
    let r = remote(p.settled("c1")[0]);
    assert_eq!(
        [
            &r["cancelled"],
            &r["error"]["code"],
            &r["error"]["retryable"]
        ],
        [&json!(true), &json!("TIMEOUT"), &json!(true)]
    );
    // A late result from the handler goes nowhere.
    let n = p.app_sent.len();
    p.complete("c1", json!("late"));
    p.run();
    assert_eq!(p.app_sent.len(), n);
}

#[test]
fn our_apps_progress_is_monotonic_percent_at_most_twice_a_second() {
    let mut p = both();
    p.call("c1", "export.pdf", json!({ "pages": 2 }));
    p.run();
    for (step, progress) in [
        (0.0, 10.0),
        (100.0, 30.0),
        (100.0, 20.0),
        (400.0, 15.0),
        (500.0, 90.0),
    ] {
        p.advance(step);
        p.app.progress(
            "c1",
            json!({ "progress": progress, "total": 100, "status": "working" }),
            p.now,
        );
        p.run();
    }
    p.advance(500.0);
    let sent: Vec<Value> = p
        .app_sent
        .iter()
        .filter(|m| m["method"] == "actions/progress")
        .map(|m| m["params"].clone())
        .collect();
    let percents: Vec<Value> = sent.iter().map(|m| m["percent"].clone()).collect();
    // 10 at once; 30 then 20 within the same half second: the latest (20) goes at +500 ms; 15 later would go
    // back down, so it goes as 20; 90 at the next half second. Never down, never more than one per 500 ms.
    assert_eq!(percents, [json!(10), json!(20), json!(20), json!(90)]);
    assert!(sent
        .iter()
        .all(|m| m["invocationId"] == "c1" && m["message"] == "working"));
    let routed = p
        .agent_events
        .iter()
        .filter(|e| matches!(e, AgentOutput::Progress { call_id, .. } if call_id == "c1"))
        .count();
    assert_eq!(routed, 4);
}

#[test]
fn our_app_answers_garbage_with_errors_and_keeps_working() {
    let mut p = both();
    let before = p.app_sent.len();
    for raw in [
        json!([{ "jsonrpc": "2.0", "id": 1, "method": "actions/invoke" }]),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "actions/invoke", "params": { "name": "echo" } }),
        json!({ "jsonrpc": "2.0", "id": 3, "method": "actions/invoke", "params": { "name": "echo", "invocationId": 7 } }),
        json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {} }),
        json!({ "jsonrpc": "2.0", "method": "actions/cancel", "params": { "invocationId": "nobody" } }),
        json!({ "jsonrpc": "2.0", "method": "actions/cancel", "params": {} }),
        json!({ "id": 5, "method": "actions/invoke" }),
        json!("not even an object"),
    ] {
        p.to_app.push_back(raw);
    }
    p.run();
    let codes: Vec<Value> = p.app_sent[before..]
        .iter()
        .map(|m| m["error"]["code"].clone())
        .collect();
    assert_eq!(
        codes,
        [
            json!(-32600),
            json!(-32602),
            json!(-32602),
            json!(-32601),
            json!(-32600)
        ]
    );
    p.call("after", "export.pdf", json!({ "pages": 1 }));
    p.run();
    p.complete("after", json!("fine"));
    p.run();
    assert_eq!(remote(p.settled("after")[0])["data"], "fine");
}

// ---- Our app against a scripted gateway: resume, a refused hello, elicitation ----

use crate::core::app::{AppOutput, ElicitEnd};

/// Our app alone: the gateway's frames go in by hand; what the app sends is in `app_sent`.
fn scripted() -> Pair {
    let mut p = Pair::speaking(DialectKind::Tesseron, AppConfig::default());
    p.app.connect();
    p.drain();
    p.to_agent.clear();
    p
}

fn gateway_says(p: &mut Pair, frame: Value) {
    p.to_app.push_back(frame);
    p.deliver_to_app();
    p.to_agent.clear();
}

fn welcome(id: &Value, token: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": {
        "sessionId": "s1", "protocolVersion": "1.2.0", "capabilities": { "elicitation": true },
        "agent": { "id": "g", "name": "g" }, "resumeToken": token } })
}

fn reconnect(p: &mut Pair) -> Value {
    p.app.transport_lost();
    p.app.connect();
    p.drain();
    p.to_agent.clear();
    p.app_sent.last().unwrap().clone()
}

#[test]
fn our_app_resumes_with_the_stored_token_and_keeps_the_rotated_one() {
    let mut p = scripted();
    let hello = p.app_sent[0].clone();
    assert_eq!(hello["method"], "tesseron/hello");
    gateway_says(&mut p, welcome(&hello["id"], "rt1"));
    assert_eq!(p.app.session_id(), Some("s1"));

    let resume = reconnect(&mut p);
    assert_eq!(resume["method"], "tesseron/resume", "not a fresh hello");
    assert_eq!(
        [
            &resume["params"]["sessionId"],
            &resume["params"]["resumeToken"]
        ],
        [&json!("s1"), &json!("rt1")]
    );
    assert_eq!(
        resume["params"]["actions"][0]["name"], "echo",
        "the manifest again"
    );
    gateway_says(&mut p, welcome(&resume["id"], "rt2"));
    assert_eq!(p.app.session_id(), Some("s1"), "the same session");

    let again = reconnect(&mut p);
    assert_eq!(
        again["params"]["resumeToken"], "rt2",
        "tokens are one-shot: the rotated one"
    );

    // The gateway no longer knows the session: a fresh hello on the same connection, without credentials.
    let refusal = json!({ "jsonrpc": "2.0", "id": again["id"],
        "error": { "code": -32011, "message": "unknown session" } });
    gateway_says(&mut p, refusal);
    let fresh = p.app_sent.last().unwrap();
    assert_eq!(fresh["method"], "tesseron/hello");
    assert!(fresh["params"].get("resumeToken").is_none());
    assert!(!p
        .app_events
        .iter()
        .any(|e| matches!(e, AppOutput::HandshakeRefused { .. })));
}

#[test]
fn a_refused_hello_ends_the_connection_instead_of_saying_hello_again() {
    let mut p = scripted();
    let id = p.app_sent[0]["id"].clone();
    let mismatch = json!({ "jsonrpc": "2.0", "id": id,
        "error": { "code": -32000, "message": "Major version mismatch" } });
    gateway_says(&mut p, mismatch);
    assert!(p
        .app_events
        .iter()
        .any(|e| matches!(e, AppOutput::HandshakeRefused { .. })));
    assert_eq!(p.app_sent.len(), 1, "no second hello");
    assert!(p.app.session_id().is_none());

    // A hello refused with a code that reads as SESSION_EXPIRED is still the end (no hello loop).
    let mut p = scripted();
    let id = p.app_sent[0]["id"].clone();
    let expired = json!({ "jsonrpc": "2.0", "id": id,
        "error": { "code": -32000, "message": "no", "data": { "code": "SESSION_EXPIRED" } } });
    gateway_says(&mut p, expired);
    assert_eq!(p.app_sent.len(), 1, "no second hello");
    assert!(p
        .app_events
        .iter()
        .any(|e| matches!(e, AppOutput::HandshakeRefused { .. })));

    // A welcome in another major version is refused the same way.
    let mut p = scripted();
    let mut w = welcome(&p.app_sent[0]["id"].clone(), "rt");
    w["result"]["protocolVersion"] = json!("2.0.0");
    gateway_says(&mut p, w);
    assert!(p.app.session_id().is_none());
    assert!(p
        .app_events
        .iter()
        .any(|e| matches!(e, AppOutput::HandshakeRefused { .. })));
}

#[test]
fn our_apps_confirmation_is_an_elicitation_request_and_a_decline_is_false() {
    let answer_to = |action: &str| {
        let mut p = scripted();
        let id = p.app_sent[0]["id"].clone();
        gateway_says(&mut p, welcome(&id, "rt"));
        let invoke = json!({ "jsonrpc": "2.0", "id": "inv-1", "method": "actions/invoke",
            "params": { "name": "echo", "input": {}, "invocationId": "i-1" } });
        gateway_says(&mut p, invoke);
        let ask = json!({ "method": "elicitation/confirm", "params": { "message": "Delete everything?" } });
        let asked = p.app.elicit(Some("i-1"), ask, p.now).unwrap();
        p.drain();
        let request = p.app_sent.last().unwrap().clone();
        assert_eq!(request["method"], "elicitation/request");
        assert_eq!(
            request["params"],
            json!({ "invocationId": "i-1", "question": "Delete everything?",
                "schema": { "type": "object", "properties": {}, "required": [] } })
        );
        gateway_says(
            &mut p,
            json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "action": action } }),
        );
        p.app_events
            .iter()
            .find_map(|e| match e {
                AppOutput::ElicitDone {
                    id,
                    end: ElicitEnd::Answer(a),
                } if *id == asked => Some(a.clone()),
                _ => None,
            })
            .expect("ctx.elicit resolved")
    };
    assert_eq!(
        answer_to("accept"),
        json!({ "success": true, "data": { "confirmed": true } })
    );
    assert_eq!(
        answer_to("decline"),
        json!({ "success": true, "data": { "confirmed": false } })
    );
    assert_eq!(answer_to("cancel")["error"]["code"], "CANCELLED");
}
