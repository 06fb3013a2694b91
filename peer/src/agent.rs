//! A native agent: the same `AgentConnection` the browser client drives, over a WebSocket an app connected to.
//!
//! One task per app connection. It waits for whichever comes first: a frame from the app, a command (see
//! [`crate::control`]) from the room's controller, or the next deadline (the core's `poll_timeout`, or a
//! scheduled abort); then it feeds the core and does what the core asks. Events go to the room's controller
//! (a `/control/<room>` socket, stdout with `--stdin`, or another mode's bridge) by the sink it is given.
//! Anything the app sends that is not ABP (or the dialect's) is counted and otherwise ignored.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use abp_wasm::core::dialect::{Carrier, DialectKind};
use abp_wasm::core::error::encode_error;
use abp_wasm::core::trace::Trace;
use abp_wasm::core::{
    AbortKind, AbpError, AgentConfig, AgentConnection, AgentOutput, CallRequest, CancelAnswer,
    ElicitAnswer, Settlement,
};
use axum::extract::ws::WebSocket;
use serde_json::{json, Value};

use crate::control::{Command, Envelope, Event};
use crate::hub::Registration;
use crate::telemetry::{self, cancel_attributes, KeyValue, Span};
use crate::ws::{Conn, Incoming};

struct Agent {
    /// Speaking the app's dialect (from the WebSocket subprotocol).
    core: AgentConnection<Value>,
    /// Where its events go: the room's controllers.
    events: Box<dyn Fn(Event) + Send + Sync>,
    room: String,
    start: Instant,
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
    /// callId → the span of its hop to the app (only with `--otlp`).
    spans: HashMap<String, Span>,
    /// The calls among them whose cancel the app acknowledged.
    acknowledged: HashSet<String>,
}

impl Agent {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    fn event(&self, event: Event) {
        (self.events)(event);
    }

    fn take_ref(list: &mut Vec<(String, Value)>, key: &str) -> Value {
        match list.iter().position(|(k, _)| k == key) {
            Some(i) => list.swap_remove(i).1,
            None => Value::Null,
        }
    }

    fn run(
        &mut self,
        Envelope {
            reference: r,
            command,
        }: Envelope,
    ) {
        match command {
            command @ Command::Call { .. } => self.call(r, command),
            Command::Cancel {
                call_id,
                reason,
                signal,
            } => self.cancel(r, &call_id, reason, signal.as_deref().unwrap_or("cancel")),
            Command::Abort {
                call_id,
                reason,
                signal,
            } => self.abort(&call_id, reason, signal.as_deref().unwrap_or("abort")),
            Command::Elicitation { answer } => self.elicit_answer = answer.filter(|a| !a.is_null()),
            Command::Answer { id, answer } => {
                let answer = match answer.filter(|a| !a.is_null()) {
                    Some(a) => ElicitAnswer::Answer(a),
                    None => ElicitAnswer::Cancelled,
                };
                self.core.answer_elicitation(&id, answer);
            }
            Command::Raw { frame } => {
                let frame = match frame {
                    Some(Value::String(s)) => s,
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                self.outbox.push(frame);
            }
            Command::Status {} => self.event(Event::Status {
                reference: r,
                connected: self.core.is_ready(),
                session_id: self.core.session_id().map(str::to_owned),
                pending: self.core.pending_calls(),
                ignored: self.ignored,
            }),
            Command::Shutdown { reason } => self.core.shutdown(reason),
        }
    }

    /// Aborts `call_id` as its signal would; `signal` names what asked, for its span.
    fn abort(&mut self, call_id: &str, reason: Option<String>, signal: &str) {
        if let Some(span) = self.spans.get_mut(call_id) {
            span.event("cancel", cancel_attributes(signal, reason.as_deref()), None);
        }
        let now = self.now();
        self.core
            .abort_call(call_id, AbortKind::Signal(reason), now);
    }

    /// An explicit cancel of `call_id`, answered by the app (the answer goes to `r`'s command); `signal` names
    /// what asked, for its span.
    fn cancel(&mut self, r: Value, call_id: &str, reason: Option<String>, signal: &str) {
        if let Some(span) = self.spans.get_mut(call_id) {
            span.event("cancel", cancel_attributes(signal, reason.as_deref()), None);
        }
        let now = self.now();
        match self.core.cancel(call_id, reason, now) {
            Ok(handle) => self.cancel_refs.push((handle, r)),
            Err(e) => self.event(Event::CancelResult {
                reference: r,
                answer: json!({ "callId": call_id, "cancelled": false, "error": encode_error(e) }),
            }),
        }
    }

    /// `call_id` settled: its controller is told, and its hop's span ends.
    fn settled(&mut self, call_id: String, settlement: Settlement<Value>) {
        let reference = Self::take_ref(&mut self.refs, &call_id);
        self.aborts.retain(|(_, c, _)| *c != call_id);
        let remote = matches!(settlement, Settlement::Remote(_));
        let response = match settlement {
            Settlement::Remote(p) => p,
            Settlement::Local { error, cancelled } => local_response(error, cancelled, &call_id),
        };
        if let Some(span) = self.spans.remove(&call_id) {
            let acknowledged = self.acknowledged.remove(&call_id);
            end_hop(span, &response, remote, acknowledged);
        }
        self.event(Event::Settled {
            reference,
            call_id,
            response,
        });
    }

    /// A `call` command: its hop's span, then the call.
    fn call(&mut self, r: Value, command: Command) {
        let Command::Call {
            capability,
            params,
            call_id,
            timeout,
            progress,
            abort_after,
            reason,
            traceparent,
            tracestate,
        } = command
        else {
            return;
        };
        let now = self.now();
        let non_negative = |n: Option<f64>| n.filter(|n| *n >= 0.0);
        let Some(capability) = capability else {
            return self.event(Event::error(Some(r), "call needs a capability"));
        };
        let call_id = call_id.unwrap_or_else(|| {
            self.next_call += 1;
            format!("native-{}", self.next_call)
        });
        let caller = Trace::read(traceparent.as_deref(), tracestate.as_deref());
        let span = telemetry::call_hop(&capability, &call_id, &self.room, "app", caller.as_ref());
        let req = CallRequest {
            call_id: call_id.clone(),
            trace: telemetry::onward(span.as_ref(), caller.as_ref()),
            capability,
            params,
            timeout: non_negative(timeout),
            progress_token: progress.then(|| format!("p-{call_id}")),
            reset_timeout_on_progress: false,
            max_total_timeout: None,
            transfer: None,
            cancel_grace: None,
        };
        match self.core.start_call(req, now) {
            Ok(()) => {
                if let Some(span) = span {
                    self.spans.insert(call_id.clone(), span);
                }
                self.refs.push((call_id.clone(), r));
                if let Some(ms) = non_negative(abort_after) {
                    self.aborts.push((now + ms, call_id, reason));
                }
            }
            Err(e) => {
                let response = local_response(e, false, &call_id);
                if let Some(span) = span {
                    end_hop(span, &response, false, false);
                }
                self.event(Event::Settled {
                    reference: r,
                    response,
                    call_id,
                });
            }
        }
    }

    /// A frame from the app.
    fn receive(&mut self, text: &str) {
        let now = self.now();
        let read = serde_json::from_str::<Value>(text)
            .ok()
            .map(|v| self.core.receive(&v, now));
        // `Ok(false)`: an agent's message, not for this side.
        if !matches!(read, Some(Ok(_))) {
            self.ignored += 1;
        }
    }

    /// Everything the core wants done: frames out, events to the controller, elicitations answered.
    fn perform(&mut self) {
        while let Some(out) = self.core.poll(&unix_ms) {
            match out {
                AgentOutput::Transmit(t) => self.outbox.push(t.message.to_string()),
                AgentOutput::Connected {
                    session_id,
                    payload,
                } => self.event(Event::Connected {
                    session_id,
                    app: payload.get("app").cloned().unwrap_or(Value::Null),
                    capabilities: payload.get("capabilities").cloned().unwrap_or(Value::Null),
                }),
                AgentOutput::ConnectFailed(e) => self.event(Event::Error {
                    reference: None,
                    message: "handshake failed".to_owned(),
                    error: Some(encode_error(e)),
                }),
                AgentOutput::Settled {
                    call_id,
                    settlement,
                } => self.settled(call_id, settlement),
                AgentOutput::CancelAnswered { handle, answer } => {
                    let reference = Self::take_ref(&mut self.cancel_refs, &handle);
                    let remote = matches!(answer, CancelAnswer::Remote(_));
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
                    let call_id = answer["callId"].as_str().unwrap_or_default();
                    if let Some(span) = self.spans.get_mut(call_id) {
                        span.event("cancel answered", answered(&answer, remote), None);
                    }
                    self.event(Event::CancelResult { reference, answer });
                }
                AgentOutput::CancelAcknowledged { call_id, cancelled } => {
                    if let Some(span) = self.spans.get_mut(&call_id) {
                        let attributes = vec![
                            KeyValue::new("abp.cancel.acknowledged_by", "app"),
                            KeyValue::new("abp.cancel.cancelled", cancelled),
                        ];
                        span.event("cancel acknowledged", attributes, None);
                        self.acknowledged.insert(call_id);
                    }
                }
                AgentOutput::Progress { call_id, payload } => {
                    self.event(Event::Progress { call_id, payload })
                }
                AgentOutput::Notification { event, payload } => {
                    self.event(Event::Notification { event, payload })
                }
                AgentOutput::CapabilitiesChanged { payload } => {
                    self.event(Event::Capabilities { payload })
                }
                AgentOutput::Elicitation {
                    id,
                    call_id,
                    payload,
                } => {
                    self.event(Event::Elicitation {
                        id: id.clone(),
                        call_id,
                        request: payload,
                    });
                    if let Some(answer) = self.elicit_answer.clone() {
                        self.core
                            .answer_elicitation(&id, ElicitAnswer::Answer(answer));
                    }
                }
                AgentOutput::ElicitationAborted { id } => {
                    self.event(Event::ElicitationAborted { id })
                }
                AgentOutput::Disconnected => self.event(Event::Disconnected),
            }
        }
    }

    /// The next time something is due: the core's timer or a scheduled abort (ms on this agent's clock).
    fn next_deadline(&self) -> Option<Instant> {
        let abort = self.aborts.iter().map(|(at, _, _)| *at);
        let at = self
            .core
            .poll_timeout()
            .into_iter()
            .chain(abort)
            .reduce(f64::min)?;
        // Rounded up to a whole millisecond, so that when the timer fires `now` has reached it.
        let ms = Duration::try_from_secs_f64(at.max(0.0).ceil() / 1000.0).ok()?;
        self.start.checked_add(ms)
    }

    /// Whatever is due now.
    fn tick(&mut self) {
        let now = self.now();
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.aborts)
            .into_iter()
            .partition(|(at, _, _)| *at <= now);
        self.aborts = later;
        for (_, call_id, reason) in due {
            self.abort(&call_id, reason, "abortAfter");
        }
    }
}

/// A cancel's answer as an event's attributes: whether the handler was cancelled, and who said so.
fn answered(answer: &Value, remote: bool) -> Vec<KeyValue> {
    vec![
        KeyValue::new("abp.cancel.cancelled", answer["cancelled"] == true),
        KeyValue::new(
            "abp.cancel.answered_by",
            if remote { "app" } else { "agent" },
        ),
    ]
}

/// Ends a hop's span with how its call settled: `response` as `abp.call` resolves, `remote` when the app's own
/// result settled it, `acknowledged` when the app already answered the cancel (an event by then).
fn end_hop(mut span: Span, response: &Value, remote: bool, acknowledged: bool) {
    if response["cancelled"] == true && !acknowledged {
        // The app's own `cancelled` result acknowledges it; settled here, nobody answered within the grace.
        let by = if remote {
            "app"
        } else {
            "nobody: settled here"
        };
        let by = vec![KeyValue::new("abp.cancel.acknowledged_by", by)];
        span.event("cancel acknowledged", by, None);
    }
    if span.settled(response).as_deref() == Some("TIMEOUT") {
        let reason = response["error"]["message"].as_str();
        span.event("cancel", cancel_attributes("timeout", reason), None);
    }
    span.end(None);
}

/// What `abp.call` resolves to when the call settled on this side, as the browser client writes it.
fn local_response(error: AbpError<Value>, cancelled: bool, call_id: &str) -> Value {
    let mut r = json!({ "success": false, "error": encode_error(error), "callId": call_id });
    if cancelled {
        r["cancelled"] = Value::Bool(true);
    }
    r
}

/// Now, in milliseconds since the Unix epoch (the wire's `timestamp`).
pub(crate) fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

/// `/agent/<room>`: an app connected; be its agent until it goes. `registration`: the room, taken for it before
/// the upgrade was answered (its inbox brings the controllers' commands); `events`: where the agent's events go.
/// `dialect`: what the app speaks (ABP; MCP for the subprotocol `mcp`; Tesseron, where this peer is the
/// gateway, for `tesseron-gateway`).
pub(crate) async fn serve(
    socket: WebSocket,
    mut registration: Registration<Envelope>,
    events: impl Fn(Event) + Send + Sync + 'static,
    room: String,
    dialect: DialectKind,
    ping: Duration,
) {
    let mut conn = Conn::new(socket);
    let mut pings = tokio::time::interval_at(tokio::time::Instant::now() + ping, ping);
    let info = json!({ "name": "abp-peer", "version": env!("CARGO_PKG_VERSION") });
    let core = AgentConnection::new(
        dialect,
        Carrier::Stream,
        AgentConfig {
            // A call the app's leaving ended can be made again: the gateway or controller sends it to whichever
            // app joins the room next, so DISCONNECTED stays retryable for those who asked.
            reconnects: true,
            ..AgentConfig::default()
        },
        info,
        format!("native-{room}"),
    );
    let mut agent = Agent {
        core,
        events: Box::new(events),
        room,
        start: Instant::now(),
        refs: Vec::new(),
        cancel_refs: Vec::new(),
        aborts: Vec::new(),
        elicit_answer: None,
        next_call: 0,
        ignored: 0,
        outbox: Vec::new(),
        spans: HashMap::new(),
        acknowledged: HashSet::new(),
    };
    let now = agent.now();
    agent.core.connect(now);
    loop {
        // Commands already waiting are taken in the same turn, so that their messages leave in one write.
        while let Ok(envelope) = registration.inbox.try_recv() {
            agent.run(envelope);
        }
        agent.perform();
        if !conn.send_all(std::mem::take(&mut agent.outbox)).await {
            break;
        }
        let deadline = agent.next_deadline();
        tokio::select! {
            incoming = conn.recv() => match incoming {
                Incoming::Text(text) => agent.receive(&text),
                Incoming::Other => {}
                Incoming::Closed => break,
            },
            envelope = registration.inbox.recv() => match envelope {
                Some(envelope) => agent.run(envelope),
                // The room's registration is gone (the process is stopping).
                None => break,
            },
            () = sleep_until(deadline), if deadline.is_some() => {}
            _ = pings.tick() => {
                if !conn.keep_alive(ping).await {
                    eprintln!("abp-peer: the app of /agent/{} stopped answering; its room is free", agent.room);
                    break;
                }
            }
        }
        agent.tick();
    }
    agent.core.transport_lost();
    // Commands that arrived after the loop ended are answered too (a call now settles DISCONNECTED), so no
    // controller waits on one that nobody reads.
    registration.inbox.close();
    while let Ok(envelope) = registration.inbox.try_recv() {
        agent.run(envelope);
    }
    agent.perform();
    drop(registration);
    conn.close().await;
}

/// Sleeps until `deadline`, or forever without one (a branch of a `select!` that is then never taken).
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
