//! A native agent: the same `AgentCore` the browser client runs, over a WebSocket an app connected to.
//!
//! It is driven by JSON commands (from `/control/<room>` or stdin), one object each:
//! - `{"op":"call", "ref"?, "capability", "params"?, "callId"?, "timeout"?, "progress"?, "abortAfter"?, "reason"?}`:
//!   calls a capability; `abortAfter` (ms) aborts it like an `AbortSignal` would. Answered by
//!   `{"op":"settled", "ref", "callId", "response"}` where `response` is what `abp.call` resolves to in the browser.
//! - `{"op":"cancel", "ref"?, "callId", "reason"?}`: an explicit cancel → `{"op":"cancel-result", "ref", "answer"}`.
//! - `{"op":"abort", "callId", "reason"?}`: what aborting the call's signal does.
//! - `{"op":"elicitation", "answer"}`: how to answer elicitation requests from now on (`null`: leave them open).
//! - `{"op":"raw", "frame"}`: sends `frame` (a string as it is, anything else as JSON) to the app unchecked.
//! - `{"op":"status"}`, `{"op":"shutdown", "reason"?}`.
//!
//! Events: `connected`, `progress`, `notification`, `capabilities`, `elicitation`, `disconnected`, `status`,
//! `error` (a command that could not be done). Anything else the app sends that is not ABP is counted and
//! otherwise ignored.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;

use abp_wasm::core::codec::{encode_error, Hello};
use abp_wasm::core::dialect::{Codec, DialectKind};
use abp_wasm::core::{
    AbortKind, AbpError, AgentConfig, AgentCore, AgentOutput, CallRequest, CancelAnswer,
    ElicitAnswer, Settlement,
};
use serde_json::{json, Value};

use crate::conn::Read;
use crate::{Conn, Out, Shared};

pub(crate) enum Command {
    Json(Value),
}

/// Routes one command line to the agent of `room`, or answers with an error event.
pub(crate) fn command(shared: &Shared, room: &str, line: &str) {
    let reply = |v: Value| {
        if let Some(c) = shared.controller(room) {
            let _ = c.send(Out::Text(v.to_string()));
        }
    };
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        reply(json!({ "op": "error", "message": "not a JSON command" }));
        return;
    };
    let agent = shared
        .agents
        .lock()
        .ok()
        .and_then(|a| a.get(room).map(|(_, s)| s.clone()));
    match agent {
        Some(a) if a.send(Command::Json(v.clone())).is_ok() => {}
        _ => {
            let path = if room.is_empty() {
                "/agent".to_owned()
            } else {
                format!("/agent/{room}")
            };
            reply(json!({ "op": "error", "ref": v.get("ref"),
                "message": format!("no app is connected to {path}") }))
        }
    }
}

/// `/control/<room>`: commands in, the room's agent events out.
pub(crate) fn control(mut conn: Conn, shared: Arc<Shared>, room: String) {
    let (tx, inbox) = mpsc::channel();
    let id = shared.next_id();
    if let Ok(mut c) = shared.controllers.lock() {
        if let Some((_, old)) = c.insert(room.clone(), (id, tx)) {
            let _ = old.send(Out::Close);
        }
    }
    while conn.is_open() {
        match conn.read() {
            Read::Text(line) => command(&shared, &room, &line),
            Read::Nothing => {}
            Read::Closed => break,
        }
        if !conn.drain(&inbox) {
            break;
        }
    }
    if let Ok(mut c) = shared.controllers.lock() {
        if c.get(&room).is_some_and(|(i, _)| *i == id) {
            c.remove(&room);
        }
    }
    conn.close();
}

struct Agent {
    core: AgentCore<Value>,
    /// The dialect the app speaks (from the WebSocket subprotocol).
    codec: Codec<Value>,
    shared: Arc<Shared>,
    room: String,
    start: Instant,
    info: Value,
    /// callId → the command's `ref`.
    refs: Vec<(String, Value)>,
    /// cancel handle → the command's `ref`.
    cancel_refs: Vec<(String, Value)>,
    /// (when, callId, reason): scheduled aborts.
    aborts: Vec<(f64, String, Option<String>)>,
    elicit_answer: Option<Value>,
    next_call: u64,
    ignored: u64,
    outbox: Vec<String>,
}

impl Agent {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    fn event(&self, v: Value) {
        if let Some(c) = self.shared.controller(&self.room) {
            let _ = c.send(Out::Text(v.to_string()));
        }
    }

    fn take_ref(list: &mut Vec<(String, Value)>, key: &str) -> Value {
        match list.iter().position(|(k, _)| k == key) {
            Some(i) => list.swap_remove(i).1,
            None => Value::Null,
        }
    }

    fn run(&mut self, v: Value) {
        let now = self.now();
        let r = v.get("ref").cloned().unwrap_or(Value::Null);
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let number = |k: &str| v.get(k).and_then(Value::as_f64).filter(|n| *n >= 0.0);
        match v.get("op").and_then(Value::as_str).unwrap_or("") {
            "call" => {
                let Some(capability) = text("capability") else {
                    return self.event(
                        json!({ "op": "error", "ref": r, "message": "call needs a capability" }),
                    );
                };
                let call_id = text("callId").unwrap_or_else(|| {
                    self.next_call += 1;
                    format!("native-{}", self.next_call)
                });
                let token =
                    (v.get("progress") == Some(&Value::Bool(true))).then(|| format!("p-{call_id}"));
                let req = CallRequest {
                    call_id: call_id.clone(),
                    capability,
                    params: v.get("params").cloned().unwrap_or(Value::Null),
                    timeout: number("timeout"),
                    progress_token: token,
                    reset_timeout_on_progress: false,
                    max_total_timeout: None,
                    transfer: None,
                    cancel_grace: None,
                };
                match self.core.start_call(req, now) {
                    Ok(()) => {
                        self.refs.push((call_id.clone(), r));
                        if let Some(ms) = number("abortAfter") {
                            self.aborts.push((now + ms, call_id, text("reason")));
                        }
                    }
                    Err(e) => self.event(json!({ "op": "settled", "ref": r, "callId": call_id,
                        "response": local_response(e, false, &call_id) })),
                }
            }
            "cancel" => {
                let call_id = text("callId").unwrap_or_default();
                match self.core.cancel(&call_id, text("reason"), now) {
                    Ok(handle) => self.cancel_refs.push((handle, r)),
                    Err(e) => self.event(json!({ "op": "cancel-result", "ref": r,
                        "answer": { "callId": call_id, "cancelled": false, "error": encode_error(e) } })),
                }
            }
            "abort" => {
                let call_id = text("callId").unwrap_or_default();
                self.core
                    .abort_call(&call_id, AbortKind::Signal(text("reason")), now);
            }
            "elicitation" => self.elicit_answer = v.get("answer").cloned().filter(|a| !a.is_null()),
            "raw" => {
                let frame = match v.get("frame") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                self.send_text(frame);
            }
            "status" => self.event(json!({ "op": "status", "ref": r,
                "connected": self.core.is_ready(), "sessionId": self.core.session_id(),
                "pending": self.core.pending_calls(), "ignored": self.ignored })),
            "shutdown" => self.core.shutdown(text("reason")),
            other => self.event(json!({ "op": "error", "ref": r,
                "message": format!("unknown op {other:?}") })),
        }
    }

    fn send_text(&mut self, text: String) {
        self.outbox.push(text);
    }

    /// Everything the core wants done: frames out, events to the controller, elicitations answered.
    fn perform(&mut self) {
        while let Some(out) = self.core.poll() {
            match out {
                AgentOutput::Transmit(m) => {
                    let hello = Hello {
                        info: &self.info,
                        capabilities: None,
                    };
                    if let Some((msg, _)) = self.codec.encode(m, &unix_ms, &hello) {
                        self.send_text(msg.to_string());
                    }
                }
                AgentOutput::Connected {
                    session_id,
                    payload,
                } => self.event(json!({ "op": "connected", "sessionId": session_id,
                    "app": payload.get("app"), "capabilities": payload.get("capabilities") })),
                AgentOutput::ConnectFailed(e) => {
                    self.event(json!({ "op": "error", "message": "handshake failed", "error": encode_error(e) }))
                }
                AgentOutput::Settled {
                    call_id,
                    settlement,
                } => {
                    let r = Self::take_ref(&mut self.refs, &call_id);
                    self.aborts.retain(|(_, c, _)| *c != call_id);
                    let response = match settlement {
                        Settlement::Remote(p) => p,
                        Settlement::Local { error, cancelled } => {
                            local_response(error, cancelled, &call_id)
                        }
                    };
                    self.event(json!({ "op": "settled", "ref": r, "callId": call_id, "response": response }));
                }
                AgentOutput::CancelAnswered { handle, answer } => {
                    let r = Self::take_ref(&mut self.cancel_refs, &handle);
                    let answer = match answer {
                        CancelAnswer::Remote(p) => p,
                        CancelAnswer::Local { call_id, error } => {
                            json!({ "callId": call_id, "cancelled": false, "error": encode_error(error) })
                        }
                        CancelAnswer::Settled {
                            call_id,
                            cancelled,
                            reason,
                        } => json!({ "callId": call_id, "cancelled": cancelled, "reason": reason }),
                    };
                    self.event(json!({ "op": "cancel-result", "ref": r, "answer": answer }));
                }
                AgentOutput::Progress { call_id, payload } => {
                    self.event(json!({ "op": "progress", "callId": call_id, "payload": payload }))
                }
                AgentOutput::Notification { event, payload } => self.event(
                    json!({ "op": "notification", "event": event, "payload": payload }),
                ),
                AgentOutput::CapabilitiesChanged { payload } => {
                    self.event(json!({ "op": "capabilities", "payload": payload }))
                }
                AgentOutput::Elicitation {
                    id,
                    call_id,
                    payload,
                } => {
                    self.event(json!({ "op": "elicitation", "id": id, "callId": call_id, "request": payload }));
                    if let Some(answer) = self.elicit_answer.clone() {
                        self.core
                            .answer_elicitation(&id, ElicitAnswer::Answer(answer));
                    }
                }
                AgentOutput::ElicitationAborted { id } => {
                    self.event(json!({ "op": "elicitation-aborted", "id": id }))
                }
                AgentOutput::Disconnected => self.event(json!({ "op": "disconnected" })),
            }
        }
    }

    fn tick(&mut self) {
        let now = self.now();
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
        let due: Vec<_> = {
            let (due, later) = std::mem::take(&mut self.aborts)
                .into_iter()
                .partition(|(at, _, _)| *at <= now);
            self.aborts = later;
            due
        };
        for (_, call_id, reason) in due {
            self.core
                .abort_call(&call_id, AbortKind::Signal(reason), now);
        }
    }
}

/// What `abp.call` resolves to when the call settled on this side, as the browser client writes it.
fn local_response(error: AbpError<Value>, cancelled: bool, call_id: &str) -> Value {
    let mut r = json!({ "success": false, "error": encode_error(error), "callId": call_id });
    if cancelled {
        r["cancelled"] = Value::Bool(true);
    }
    r
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

/// `/agent/<room>`: an app connected; be its agent until it goes.
/// `dialect`: what the app speaks (ABP; MCP for the subprotocol `mcp`; Tesseron, where this peer is the
/// gateway, for `tesseron-gateway`).
pub(crate) fn serve(mut conn: Conn, shared: Arc<Shared>, room: String, dialect: DialectKind) {
    let (tx, commands): (Sender<Command>, Receiver<Command>) = mpsc::channel();
    let id = shared.next_id();
    if let Ok(mut a) = shared.agents.lock() {
        a.insert(room.clone(), (id, tx));
    }
    let config = AgentConfig {
        policy: dialect.policy(),
        // A socket is open: one initialize is enough.
        resend_interval: f64::INFINITY,
        ..AgentConfig::default()
    };
    let mut agent = Agent {
        core: AgentCore::new(config, format!("native-{room}")),
        codec: Codec::new(dialect, true),
        shared: shared.clone(),
        room: room.clone(),
        start: Instant::now(),
        info: json!({ "name": "abp-peer", "version": env!("CARGO_PKG_VERSION") }),
        refs: Vec::new(),
        cancel_refs: Vec::new(),
        aborts: Vec::new(),
        elicit_answer: None,
        next_call: 0,
        ignored: 0,
        outbox: Vec::new(),
    };
    let now = agent.now();
    agent.core.connect(now);
    loop {
        agent.perform();
        for text in std::mem::take(&mut agent.outbox) {
            conn.send(text);
        }
        if !conn.is_open() {
            break;
        }
        match conn.read() {
            Read::Text(text) => {
                let now = agent.now();
                match serde_json::from_str::<Value>(&text)
                    .ok()
                    .map(|v| agent.codec.decode(&v))
                {
                    Some(Ok(m)) => agent.core.handle(m, now),
                    _ => agent.ignored += 1,
                }
            }
            Read::Nothing => {}
            Read::Closed => break,
        }
        while let Ok(Command::Json(v)) = commands.try_recv() {
            agent.run(v);
        }
        agent.tick();
    }
    agent.core.transport_lost();
    agent.perform();
    if let Ok(mut a) = shared.agents.lock() {
        if a.get(&room).is_some_and(|(i, _)| *i == id) {
            a.remove(&room);
        }
    }
    conn.close();
}
