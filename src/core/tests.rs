//! The cores driven against each other in memory, through the real envelope codec, with simulated time.
//! Covers: handshake and re-sent initialize, calls, abort/timeout/grace, abort racing completion, the whole
//! cancel table, NOT_INITIALIZED, progress routing/coalescing/reset, elicitation cancelled with its call,
//! duplicated and reordered messages, disconnects, validation, and garbage input.

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::agent::{AbortKind, AgentConfig, AgentOutput, CallRequest, CancelAnswer, Settlement};
use super::app::{AppConfig, AppOutput, ElicitEnd};
use super::capability::Registry;
use super::connection::{AgentConnection, AppConnection};
use super::dialect::abp::decode;
use super::dialect::Ignored;
use super::dialect::{Carrier, Codec, DialectKind};
use super::error::ErrorCode;
use super::message::{Control, ElicitAnswer, Incoming, Outcome, ToAgent, ToApp};

pub(crate) struct Pair {
    pub(crate) now: f64,
    pub(crate) dialect: DialectKind,
    pub(crate) agent: AgentConnection<Value>,
    pub(crate) app: AppConnection<Value>,
    pub(crate) reg: Registry<Value>,
    pub(crate) to_app: VecDeque<Value>,
    pub(crate) to_agent: VecDeque<Value>,
    pub(crate) agent_events: Vec<AgentOutput<Value>>,
    pub(crate) app_events: Vec<AppOutput<Value>>,
    /// Every message the agent sent, in order.
    pub(crate) agent_sent: Vec<Value>,
    /// Every message the app sent, in order.
    pub(crate) app_sent: Vec<Value>,
}

impl Pair {
    pub(crate) fn with(app_config: AppConfig) -> Pair {
        Pair::speaking(DialectKind::Abp, app_config)
    }

    /// Both sides speaking `dialect`, over a window (the agent re-sends its initialize).
    pub(crate) fn speaking(dialect: DialectKind, app_config: AppConfig) -> Pair {
        let mut reg = Registry::default();
        reg.register("echo", Some(json!({ "name": "echo" })))
            .unwrap();
        reg.register(
            "export.pdf",
            Some(json!({ "name": "export.pdf", "inputSchema": { "type": "object", "required": ["pages"],
                "properties": { "pages": { "type": "integer", "minimum": 1, "maximum": 500 } } } })),
        )
        .unwrap();
        let app_info = json!({ "id": "com.test", "name": "test", "version": "1" });
        Pair {
            now: 1000.0,
            dialect,
            agent: Pair::agent_of(dialect, AgentConfig::default(), "a"),
            app: AppConnection::new(dialect, Carrier::Window, app_config, app_info, "s"),
            reg,
            to_app: VecDeque::new(),
            to_agent: VecDeque::new(),
            agent_events: Vec::new(),
            app_events: Vec::new(),
            agent_sent: Vec::new(),
            app_sent: Vec::new(),
        }
    }

    /// An agent speaking `dialect` over a window, with `config` (its policy is the dialect's).
    pub(crate) fn agent_of(
        dialect: DialectKind,
        config: AgentConfig,
        prefix: &str,
    ) -> AgentConnection<Value> {
        let info = json!({ "name": "test-agent", "version": "1" });
        AgentConnection::new(dialect, Carrier::Window, config, info, prefix)
    }

    /// A new agent in this pair's dialect (a reloaded agent page, or other settings).
    pub(crate) fn new_agent(&mut self, config: AgentConfig, prefix: &str) {
        self.agent = Pair::agent_of(self.dialect, config, prefix);
    }

    pub(crate) fn new() -> Pair {
        Pair::with(AppConfig::default())
    }

    pub(crate) fn connected() -> Pair {
        let mut p = Pair::new();
        p.agent.connect(p.now);
        p.run();
        assert!(p.agent.is_ready());
        p.agent_events.clear();
        p.app_events.clear();
        p
    }

    pub(crate) fn drain(&mut self) {
        let now = self.now;
        while let Some(o) = self.agent.poll(&|| now) {
            match o.event() {
                Err(t) => {
                    self.agent_sent.push(t.message.clone());
                    self.to_app.push_back(t.message);
                }
                Ok(e) => self.agent_events.push(e),
            }
        }
        let reg = &self.reg;
        let caps = || reg.list();
        while let Some(o) = self.app.poll(&|| now, &caps) {
            match o.event() {
                Err(t) => {
                    self.app_sent.push(t.message.clone());
                    self.to_agent.push_back(t.message);
                }
                Ok(e) => self.app_events.push(e),
            }
        }
    }

    pub(crate) fn deliver_to_app(&mut self) {
        if let Some(v) = self.to_app.pop_front() {
            let _ = self.app.receive(&v, self.now, &self.reg);
        }
        self.drain();
    }

    pub(crate) fn deliver_to_agent(&mut self) {
        if let Some(v) = self.to_agent.pop_front() {
            let _ = self.agent.receive(&v, self.now);
        }
        self.drain();
    }

    /// Delivers everything in both directions until quiet.
    pub(crate) fn run(&mut self) {
        self.drain();
        while !self.to_app.is_empty() || !self.to_agent.is_empty() {
            self.deliver_to_app();
            self.deliver_to_agent();
        }
    }

    pub(crate) fn advance(&mut self, ms: f64) {
        self.now += ms;
        self.agent.handle_timeout(self.now);
        self.app.handle_timeout(self.now);
        self.run();
    }

    pub(crate) fn call(&mut self, call_id: &str, capability: &str, params: Value) {
        self.call_with(CallRequest {
            params,
            ..request(call_id, capability)
        });
    }

    pub(crate) fn call_with(&mut self, req: CallRequest<Value>) {
        self.agent.start_call(req, self.now).expect("call accepted");
        self.drain();
    }

    pub(crate) fn settled(&self, call_id: &str) -> Vec<&Settlement<Value>> {
        self.agent_events
            .iter()
            .filter_map(|e| match e {
                AgentOutput::Settled {
                    call_id: c,
                    settlement,
                } if c == call_id => Some(settlement),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn started(&self) -> Vec<&str> {
        self.app_events
            .iter()
            .filter_map(|e| match e {
                AppOutput::Start { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn aborted(&self) -> Vec<&str> {
        self.app_events
            .iter()
            .filter_map(|e| match e {
                AppOutput::Abort { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn app_sent_of(&self, ty: &str) -> Vec<&Value> {
        self.app_sent.iter().filter(|m| m["type"] == ty).collect()
    }

    pub(crate) fn agent_sent_of(&self, ty: &str) -> Vec<&Value> {
        self.agent_sent.iter().filter(|m| m["type"] == ty).collect()
    }

    pub(crate) fn complete(&mut self, call_id: &str, data: Value) {
        self.app
            .complete(call_id, Outcome::Success { data }, None, self.now);
        self.drain();
    }
}

/// A plain call request; tests change the fields they care about with `..request(…)`.
pub(crate) fn request(call_id: &str, capability: &str) -> CallRequest<Value> {
    CallRequest {
        call_id: call_id.into(),
        capability: capability.into(),
        params: json!({}),
        timeout: None,
        progress_token: None,
        reset_timeout_on_progress: false,
        max_total_timeout: None,
        transfer: None,
        cancel_grace: None,
    }
}

pub(crate) fn remote(s: &Settlement<Value>) -> &Value {
    match s {
        Settlement::Remote(v) => v,
        other => panic!("expected the app's response, got {other:?}"),
    }
}

pub(crate) fn local(s: &Settlement<Value>) -> (ErrorCode, bool, bool) {
    match s {
        Settlement::Local { error, cancelled } => (error.code.clone(), *cancelled, error.retryable),
        other => panic!("expected a local settlement, got {other:?}"),
    }
}

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
fn losing_the_transport_settles_everything_as_disconnected() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.call("c2", "echo", json!({}));
    p.run();
    let handle = p.agent.cancel("c2", None, p.now).unwrap();
    p.agent.transport_lost();
    p.app.transport_lost();
    p.drain();
    for c in ["c1", "c2"] {
        assert_eq!(
            local(p.settled(c)[0]),
            (ErrorCode::Disconnected, false, true)
        );
    }
    assert!(p.agent_events.iter().any(|e| matches!(e,
        AgentOutput::CancelAnswered { handle: h, answer: CancelAnswer::Local { error, .. } } if *h == handle && error.code == ErrorCode::Disconnected)));
    assert_eq!(p.aborted(), ["c1", "c2"]);
    assert_eq!(p.agent.pending_calls(), 0);
    assert_eq!(p.app.active_calls(), 0);
    assert_eq!(
        p.agent
            .start_call(
                CallRequest {
                    params: json!(null),
                    ..request("c3", "echo")
                },
                p.now
            )
            .unwrap_err()
            .code,
        ErrorCode::Disconnected
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
        super::agent::HEARTBEAT_CALL_ID
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
        (ErrorCode::Disconnected, false, true)
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
fn numbers_in_messages_are_written_like_javascript_writes_them() {
    use super::text::number;
    let cases = [
        (0.0, "0"),
        (500.0, "500"),
        (-3.0, "-3"),
        (1.5, "1.5"),
        (0.125, "0.125"),
        (2.0 / 3.0, "0.666667"),
    ];
    for (n, s) in cases {
        assert_eq!(number(n), s);
    }
    assert_eq!(number(f64::NAN), "NaN");
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

/// Each role's state machine is given only what the other role sends: an agent never reads a call (its own,
/// echoed on a shared window), an app never reads a result; both read a shutdown.
#[test]
fn each_role_reads_only_what_the_other_sends() {
    let call = json!({ "type": "capabilities/call", "id": "m1",
        "payload": { "callId": "c1", "capability": "echo" } });
    let result = json!({ "type": "capabilities/call-result", "id": "m1",
        "payload": { "success": true, "callId": "c1" } });
    let bye = json!({ "type": "shutdown", "id": "m2", "payload": {} });
    assert!(decode(&call).unwrap().for_agent().is_none());
    assert!(matches!(
        decode(&call).unwrap().for_app(),
        Some(ToApp::Call { .. })
    ));
    assert!(decode(&result).unwrap().for_app().is_none());
    assert!(matches!(
        decode(&result).unwrap().for_agent(),
        Some(ToAgent::CallResult { .. })
    ));
    assert!(matches!(
        decode(&bye).unwrap().for_agent(),
        Some(ToAgent::Control(Control::Shutdown { .. }))
    ));
    assert!(matches!(
        decode(&bye).unwrap().for_app(),
        Some(ToApp::Control(Control::Shutdown { .. }))
    ));

    // A JSON-RPC cancel goes both ways: to an app it cancels a call, to an agent it withdraws the app's own
    // question.
    let cancelled = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 7, "reason": "gone" } });
    let mut app_side = Codec::<Value>::new(DialectKind::Mcp, false);
    assert!(matches!(
        app_side.decode(&cancelled).unwrap().for_app(),
        Some(ToApp::Cancel { call_id, .. }) if call_id == "7"
    ));
    let mut agent_side = Codec::<Value>::new(DialectKind::Mcp, true);
    assert!(matches!(
        agent_side.decode(&cancelled).unwrap().for_agent(),
        Some(ToAgent::ElicitationWithdrawn { id }) if id == "7"
    ));
}
