//! The MCP gateway's endpoint, sans IO: the hosts' MCP connections on one side, the room's browser app (through
//! the control protocol's commands and events) on the other, and nothing between them but this state. It reads
//! no clock (it is made with the time, and every `handle_*` takes it), and touches no channel, socket or hub:
//! what it has to say comes out of [`Gateway::poll`] as an [`Output`] for a host or for the app, and its next
//! deadline from [`Gateway::poll_timeout`]. `crate::mcp` and `crate::mcp_http` are its edges.
//!
//! Two protocol cores meet here, and both are the SDK's own: toward each host, the app core speaking the MCP
//! dialect (`initialize`, `tools/list`, `tools/call`, `notifications/cancelled`, progress, `elicitation/create`,
//! `list_changed`, and 2026-07-28's `server/discover`, elicitation by retry and listens); toward the browser app,
//! the native agent of `crate::agent`, driven with the control protocol's commands. This maps one onto the other:
//!
//! - a tool call starts an ABP call (the host's progress token asks for progress); the host's
//!   `notifications/cancelled` aborts it, so the app's `ctx.signal` aborts, and nothing is written back for it;
//! - the app's result is the tool's result; an ABP error is an `isError` result whose text names the code, and
//!   the app leaving mid-call settles the call DISCONNECTED at once;
//! - the app's progress is `notifications/progress` with the host's token, always before the result;
//! - the app's `ctx.elicit` is `elicitation/create` to a host that declared `elicitation` (else NOT_SUPPORTED);
//! - the app joining, leaving or changing its capabilities is `notifications/tools/list_changed`;
//! - a capability registered with `task` is an MCP task for a host that declares the extension ([`tasks`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use abp_wasm::core::dialect::jsonrpc::{error_to, key_of, response_to, rpc};
use abp_wasm::core::dialect::mcp::{era_of, Era};
use abp_wasm::core::dialect::{Carrier, DialectKind};
use abp_wasm::core::error::{encode_error, AbpError, ErrorCode};
use abp_wasm::core::{AppConfig, AppConnection, AppOutput, Outcome, Registry, ToApp, Trace};
use serde_json::{json, Value};

use crate::control::{signal, Command, Event};
use crate::params::ParamHeaders;
use crate::telemetry;
pub(crate) mod router;
pub(crate) mod spans;
pub(crate) mod tasks;

use tasks::Tasks;

/// The reason the HTTP edge gives a request whose stream the client closed (its cancel in that era).
pub(crate) const CLOSED_STREAM: &str = "the client closed the request's stream";

/// The trace context of a request's `params._meta`, when valid.
fn trace_of(params: &Value) -> Option<Trace> {
    let text = |key: &str| params.get("_meta")?.get(key)?.as_str();
    Trace::read(text("traceparent"), text("tracestate"))
}

/// A trace context as a command carries it: `traceparent` and `tracestate`.
fn fields_of(trace: Option<Trace>) -> (Option<String>, Option<String>) {
    trace.map_or((None, None), |t| (Some(t.traceparent), t.tracestate))
}

/// The host on stdin/stdout.
pub(crate) const STDIO: u64 = 0;

/// The HTTP endpoint's 2026-07-28 requests, all one host (each 2025-11-25 session is a host of its own).
pub(crate) const HTTP: u64 = u64::MAX;

/// The hosts one gateway serves at once: stdio's, HTTP's (all modern requests), each 2025-11-25 HTTP session and
/// each host joined through `/mcp-host`.
pub(crate) const MAX_HOSTS: usize = 64;

/// The time as the edges give it: for deadlines (monotonic), and for timestamps (the wall's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    pub(crate) at: Instant,
    pub(crate) wall: SystemTime,
}

impl Clock {
    /// The system's clocks now: what an edge gives the gateway when it makes it (the gateway never asks).
    pub(crate) fn system() -> Clock {
        Clock {
            at: Instant::now(),
            wall: SystemTime::now(),
        }
    }
}

/// What the gateway has to say: a message for one of its hosts, or a command for the room's app.
#[derive(Debug)]
pub(crate) enum Output {
    /// One JSON-RPC message for `host` (its edge writes it as it writes).
    ToHost { host: u64, message: Value },
    /// A command for the room's app (its agent).
    ToApp(Command),
}

/// How long a call's result waits after its last progress notification. The official MCP SDK client handles a
/// notification one microtask after it reads it, but a response at once (dropping that call's progress handler),
/// so a progress notification that arrives in the same read as the result is lost; this keeps them apart.
const RESULT_AFTER_PROGRESS: Duration = Duration::from_millis(20);

/// The host's side of one tool call that went to the app.
struct Running {
    /// The host whose call it is.
    host: u64,
    /// The app core's call id (the MCP request's id).
    call_id: String,
    /// When its last progress notification went to the host.
    progressed: Option<Instant>,
}

/// One MCP host the gateway serves: the one on stdio, or one that joined through `/mcp-host` (another copy of
/// `abp-peer mcp`, started by a second host, relaying its stdio here).
struct Host {
    id: u64,
    /// Toward the host: the app core speaking MCP, with the joined app's tools as its registry.
    conn: AppConnection<Value>,
}

fn host_connection() -> AppConnection<Value> {
    let config = AppConfig {
        // Every progress update the app sends goes on to the host (the app already paces them).
        progress_interval: 0.0,
        ..AppConfig::default()
    };
    let info = json!({ "name": "abp-peer", "version": env!("CARGO_PKG_VERSION") });
    let mut conn = AppConnection::new(DialectKind::Mcp, Carrier::Stream, config, info, "gw-");
    conn.offer_extension(tasks::EXTENSION);
    conn
}

/// The gateway of one room: its hosts' MCP connections, the app's calls, questions and tasks.
pub(crate) struct Gateway {
    /// The hosts, stdio's first.
    hosts: Vec<Host>,
    /// The names of the joined app's available capabilities (what a tool call may name).
    registry: Registry<Value>,
    /// Their descriptors, as `tools/list` shows them.
    tools: Vec<Value>,
    /// Their `x-mcp-header` parameters, for the HTTP endpoint's checks.
    param_headers: Arc<ParamHeaders>,
    /// An app has joined and finished its handshake.
    joined: bool,
    room: String,
    /// With `--nats`, while the link to the NATS server is down: the sentence that says so, for a call that
    /// finds no app.
    link_down: Option<String>,
    /// When the gateway started (on the monotonic clock, and on the wall's), and the time of what it handles
    /// now (given by its caller).
    start: Instant,
    start_wall: SystemTime,
    clock: Instant,
    /// ABP call id (toward the app) → the host's call.
    calls: HashMap<String, Running>,
    next_call: u64,
    /// Our question to a host (the host, the app core's id) → the agent's elicitation id.
    asks: HashMap<(u64, String), String>,
    /// Results held back until [`RESULT_AFTER_PROGRESS`] after their call's last progress: (when, the host, app
    /// core's call id, outcome).
    held: Vec<(Instant, u64, String, Outcome<Value>)>,
    /// What it has to say, in order: [`Gateway::poll`] gives it.
    out: VecDeque<Output>,
    /// The tool calls run as MCP tasks (not in `calls`: no host connection waits on them).
    tasks: Tasks,
    /// The span of each host request not answered yet (with `--otlp`).
    spans: spans::Spans,
}

impl Gateway {
    /// The gateway of `room`, with the host on stdio, at `now`. `param_headers`: where it keeps the app's tools'
    /// `x-mcp-header` parameters, which the HTTP edge checks requests against.
    pub(crate) fn new(room: String, param_headers: Arc<ParamHeaders>, now: Clock) -> Gateway {
        Gateway {
            hosts: vec![Host {
                id: STDIO,
                conn: host_connection(),
            }],
            registry: Registry::default(),
            tools: Vec::new(),
            param_headers,
            joined: false,
            room,
            link_down: None,
            start: now.at,
            start_wall: now.wall,
            clock: now.at,
            calls: HashMap::new(),
            next_call: 0,
            asks: HashMap::new(),
            held: Vec::new(),
            out: VecDeque::new(),
            tasks: Tasks::new(now),
            spans: spans::Spans::default(),
        }
    }

    /// One message from `host`, read by its edge, at `now`.
    pub(crate) fn handle_host(&mut self, host: u64, message: Value, now: Instant) {
        self.at(now);
        self.on_host_message(host, message);
        self.perform();
    }

    /// A line from `host` that its edge could not read as JSON: answered with a parse error, without an id (the
    /// MCP SDK's schema refuses `id: null`), as the dialect answers unreadable requests.
    pub(crate) fn handle_unreadable(&mut self, host: u64) {
        self.send(host, error_to(None, rpc::PARSE_ERROR, "Parse error", None));
    }

    /// One event of the room's app, at `now`.
    pub(crate) fn handle_app(&mut self, event: Event, now: Instant) {
        self.at(now);
        self.app_event(event);
        self.publish_tasks();
        self.perform();
    }

    /// [`Gateway::poll_timeout`]'s deadline passed (or may have): `now`.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        self.at(now);
        for h in &mut self.hosts {
            h.conn
                .handle_timeout((now - self.start).as_secs_f64() * 1000.0);
        }
        self.release_held();
        for abp_id in self.tasks.expire(now) {
            self.command(Command::Abort {
                call_id: abp_id,
                reason: Some("the task's ttlMs passed".into()),
                signal: Some(signal::TIMEOUT.into()),
            });
        }
        self.publish_tasks();
        self.perform();
    }

    /// A command [`Gateway::poll`] gave that could not reach the app (it left before the gateway heard so): a
    /// call's host gets its answer at once.
    pub(crate) fn unsent(&mut self, command: Command, now: Instant) {
        self.at(now);
        let Command::Call {
            call_id: Some(abp_id),
            ..
        } = command
        else {
            return;
        };
        if let Some(running) = self.calls.remove(&abp_id) {
            let now = self.now();
            if let Some(conn) = self.conn(running.host) {
                conn.complete(&running.call_id, disconnected(), None, now);
            }
        }
        self.perform();
    }

    /// What the gateway has to say next.
    pub(crate) fn poll(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// With `--nats`: whether the link to the NATS server is down, and the sentence that says so.
    pub(crate) fn set_link_down(&mut self, why: Option<String>) {
        self.link_down = why;
    }

    /// Whether calls of the hosts still run in the app.
    pub(crate) fn has_calls(&self) -> bool {
        !self.calls.is_empty()
    }

    /// The app settled `call_id` (after [`Gateway::close`], nobody waits for it any more).
    pub(crate) fn forget_call(&mut self, call_id: &str) {
        self.calls.remove(call_id);
    }

    /// The gateway stops (its host is gone, or it was told to): every call still running in the app is
    /// cancelled there, and each host hears what the dialect says then (each modern listen is torn down).
    pub(crate) fn close(&mut self) {
        let at = self.wall();
        for host in self.hosts.iter().map(|h| h.id).collect::<Vec<_>>() {
            self.spans.host_gone(host, at);
        }
        self.cancel_everything();
        self.goodbye();
    }

    /// What is handled now happens at `now` (its tasks' timestamps follow, on the wall's clock).
    fn at(&mut self, now: Instant) {
        self.clock = now;
        let since = now.saturating_duration_since(self.start);
        self.tasks.set_clock(Clock {
            at: now,
            wall: self.start_wall + since,
        });
    }

    /// The wall's time of what is handled now, in ms since the Unix epoch (for the messages' timestamps).
    fn unix_ms(&self) -> f64 {
        let since = self.clock.saturating_duration_since(self.start);
        (self.start_wall + since)
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_millis() as f64)
    }

    /// The time of what is handled now, in ms on the hosts' connections' clock.
    fn now(&self) -> f64 {
        self.clock
            .saturating_duration_since(self.start)
            .as_secs_f64()
            * 1000.0
    }

    /// Sends `command` to the room's app; false when no app is there (its calls were settled when it left).
    fn command(&mut self, command: Command) -> bool {
        if !self.joined {
            return false;
        }
        self.out.push_back(Output::ToApp(command));
        true
    }

    fn conn(&mut self, host: u64) -> Option<&mut AppConnection<Value>> {
        self.hosts
            .iter_mut()
            .find(|h| h.id == host)
            .map(|h| &mut h.conn)
    }

    /// A message for `host`.
    fn send(&mut self, host: u64, message: Value) {
        if self.hosts.iter().any(|h| h.id == host) {
            // Every message to a host passes here: the time is read only while a request's span is open.
            if self.spans.any_open() {
                let at = self.wall();
                self.spans.answered(host, &message, at);
            }
            self.out.push_back(Output::ToHost { host, message });
        }
    }

    /// The wall's time of what is handled now.
    fn wall(&self) -> SystemTime {
        self.start_wall + self.clock.saturating_duration_since(self.start)
    }

    /// One message from a host.
    fn on_host_message(&mut self, host: u64, value: Value) {
        if telemetry::enabled() {
            let at = self.wall();
            self.spans.request(host, &value, at);
        }
        let now = self.now();
        let joined = self.joined;
        let text = no_app_text(&self.room, self.link_down.clone());
        if self.task_request(host, &value) {
            self.publish_tasks();
            return;
        }
        let Some(h) = self.hosts.iter_mut().find(|h| h.id == host) else {
            return;
        };
        let Ok(Some(message)) = h.conn.read(&value) else {
            return;
        };
        match message {
            ToApp::Call { id, call_id, .. } if !joined => {
                let data = error_result("NOT_INITIALIZED", &text, None);
                h.conn.answer(id, call_id, Outcome::Success { data });
            }
            message => h.conn.handle(message, now, &self.registry),
        }
    }

    /// A request of the tasks extension (revision 2026-07-28), answered here: `tasks/get`, `tasks/update` and
    /// `tasks/cancel`, and a `tools/call` of a capability the app registered with `task` (a task when the request
    /// declares the extension; -32021 for a `'required'` one when it does not). False for anything else.
    fn task_request(&mut self, host: u64, value: &Value) -> bool {
        let (Some(method), Some(id)) = (
            value.get("method").and_then(Value::as_str),
            value.get("id").filter(|i| i.is_string() || i.is_number()),
        ) else {
            return false;
        };
        let params = value.get("params");
        // Tasks are of revision 2026-07-28: a request of the legacy era is a plain one.
        if params.is_none_or(|p| matches!(era_of(p), Era::Legacy)) {
            return false;
        }
        let declared = tasks::declared(params);
        let answer = match method {
            "tasks/get" | "tasks/update" | "tasks/cancel" if !declared => Err(missing_tasks()),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                let task_id = params
                    .and_then(|p| p.get("taskId"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.task_method(host, method, task_id, params)
                    .map_err(|(code, message)| (code, message, None))
            }
            "tools/call" => {
                let Some(p) = params.filter(|p| p.get("requestState").is_none()) else {
                    return false;
                };
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
                let mode = self
                    .tools
                    .iter()
                    .find(|d| d.get("name").and_then(Value::as_str) == Some(name))
                    .and_then(|d| d.get("task"))
                    .and_then(Value::as_str);
                match (mode, declared) {
                    (Some("optional" | "required"), true) if self.joined => {
                        if !self.tasks.has_room() {
                            Err((
                                -32603,
                                format!(
                                    "{} tasks are running in this gateway, the most it keeps: wait for one to \
                                     end, or cancel one",
                                    tasks::MAX_TASKS
                                ),
                                None,
                            ))
                        } else {
                            match self.start_task(host, id, name, p) {
                                Some(created) => Ok(created),
                                None => return false,
                            }
                        }
                    }
                    (Some("required"), false) => Err(missing_tasks()),
                    _ => return false,
                }
            }
            _ => return false,
        };
        let id = id.clone();
        let line = match answer {
            Ok(result) => response_to(id, result),
            Err((code, message, data)) => {
                let code = i32::try_from(code).unwrap_or(rpc::INTERNAL_ERROR);
                error_to(Some(id), code, &message, data)
            }
        };
        self.send(host, line);
        true
    }

    /// What changed in the tasks goes to the hosts' listens that follow them.
    fn publish_tasks(&mut self) {
        for (id, detailed, owner) in self.tasks.take_changed() {
            // Only the host the task belongs to hears of it.
            for h in self.hosts.iter_mut().filter(|h| h.id == owner) {
                h.conn.task_changed(&id, &detailed);
            }
        }
    }

    /// `tasks/get`, `tasks/update` or `tasks/cancel` of `host` for its task `task_id`.
    fn task_method(
        &mut self,
        host: u64,
        method: &str,
        task_id: &str,
        params: Option<&Value>,
    ) -> Result<Value, (i64, String)> {
        let ack = json!({ "resultType": "complete" });
        match method {
            "tasks/get" => self.tasks.get(task_id, host),
            "tasks/update" => {
                let responses = params.and_then(|p| p.get("inputResponses"));
                for (id, answer) in self.tasks.update(task_id, host, responses)? {
                    self.command(Command::Answer {
                        id,
                        answer: Some(answer),
                    });
                }
                Ok(ack)
            }
            _ => {
                if let tasks::Cancel::Ask(abp_id) = self.tasks.cancel(task_id, host)? {
                    // ABP's acknowledged cancel: the app says whether the handler stopped or had finished, and
                    // the task ends as it did.
                    self.command(Command::Cancel {
                        call_id: abp_id,
                        reason: Some("cancelled by the MCP client (tasks/cancel)".into()),
                        signal: Some(signal::TASKS_CANCEL.into()),
                    });
                }
                Ok(ack)
            }
        }
    }

    /// Starts the ABP call of a task of `host` for `tools/call` `params`: its `CreateTaskResult`, or `None` when
    /// the app is not there to take it (the call is then answered as any other).
    fn start_task(
        &mut self,
        host: u64,
        id: &Value,
        capability: &str,
        params: &Value,
    ) -> Option<Value> {
        self.next_call += 1;
        let abp_id = format!("mcp-{}", self.next_call);
        let key = key_of(id).unwrap_or_default();
        let (traceparent, tracestate) =
            fields_of(self.spans.onward(host, &key, trace_of(params).as_ref()));
        let sent = self.command(Command::Call {
            capability: Some(capability.to_owned()),
            params: params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({})),
            call_id: Some(abp_id.clone()),
            timeout: None,
            progress: true,
            abort_after: None,
            reason: None,
            traceparent,
            tracestate,
        });
        sent.then(|| {
            self.tasks
                .create(abp_id, tasks::declares_elicitation(Some(params)), host)
        })
    }

    /// Another host (one joined through `/mcp-host`, the HTTP endpoint, a 2025-11-25 HTTP session): false past
    /// [`MAX_HOSTS`], and its edge then lets it go.
    pub(crate) fn join(&mut self, host: u64) -> bool {
        if self.hosts.len() >= MAX_HOSTS {
            eprintln!("abp-peer mcp: refused a host: {MAX_HOSTS} are joined already");
            return false;
        }
        self.hosts.push(Host {
            id: host,
            conn: host_connection(),
        });
        true
    }

    /// A host left, at `now`: what it had running in the app is cancelled there.
    pub(crate) fn leave(&mut self, host: u64, now: Instant) {
        self.at(now);
        let at = self.wall();
        self.spans.host_gone(host, at);
        self.hosts.retain(|h| h.id != host);
        let mine: Vec<String> = self
            .calls
            .iter()
            .filter(|(_, r)| r.host == host)
            .map(|(abp_id, _)| abp_id.clone())
            .collect();
        for abp_id in mine {
            self.calls.remove(&abp_id);
            self.command(Command::Abort {
                call_id: abp_id,
                reason: Some("the MCP host went away".into()),
                signal: Some(signal::HOST_GONE.into()),
            });
        }
        self.asks.retain(|(h, _), _| *h != host);
        self.held.retain(|(_, h, _, _)| *h != host);
        self.perform();
    }

    /// Everything the hosts' sides want done.
    fn perform(&mut self) {
        let ids: Vec<u64> = self.hosts.iter().map(|h| h.id).collect();
        for host in ids {
            self.perform_for(host);
        }
    }

    fn perform_for(&mut self, host: u64) {
        let stamp = self.unix_ms();
        loop {
            let tools = &self.tools;
            let list = || Value::Array(tools.clone());
            let Some(h) = self.hosts.iter_mut().find(|h| h.id == host) else {
                break;
            };
            let Some(output) = h.conn.poll(&|| stamp, &list) else {
                break;
            };
            match output {
                AppOutput::Transmit(t) => self.send(host, t.message),
                AppOutput::Start {
                    call_id,
                    capability,
                    params,
                    progress_token,
                    trace,
                } => {
                    self.next_call += 1;
                    let abp_id = format!("mcp-{}", self.next_call);
                    let (traceparent, tracestate) =
                        fields_of(self.spans.onward(host, &call_id, trace.as_ref()));
                    let sent = self.command(Command::Call {
                        capability: Some(capability),
                        params,
                        call_id: Some(abp_id.clone()),
                        timeout: None,
                        progress: progress_token.is_some(),
                        abort_after: None,
                        reason: None,
                        traceparent,
                        tracestate,
                    });
                    if sent {
                        let progressed = None;
                        self.calls.insert(
                            abp_id,
                            Running {
                                host,
                                call_id,
                                progressed,
                            },
                        );
                    } else {
                        // The app left between the call and now: the host gets its answer at once.
                        let now = self.now();
                        if let Some(conn) = self.conn(host) {
                            conn.complete(&call_id, disconnected(), None, now);
                        }
                    }
                }
                AppOutput::Abort { call_id, reason } => {
                    let by = if reason.as_deref() == Some(CLOSED_STREAM) {
                        signal::STREAM_CLOSED
                    } else {
                        signal::CANCELLED
                    };
                    let at = self.wall();
                    self.spans
                        .cancelled(host, &call_id, by, reason.as_deref(), at);
                    if let Some(abp_id) = self.abp_id_of(host, &call_id) {
                        self.command(Command::Abort {
                            call_id: abp_id,
                            reason: reason.or_else(|| Some("cancelled by the MCP client".into())),
                            signal: Some(by.into()),
                        });
                    }
                }
                AppOutput::ElicitDone { id, end } => {
                    if let Some(asked) = self.asks.remove(&(host, id)) {
                        self.command(Command::Answer {
                            id: asked,
                            answer: Some(end.into_response()),
                        });
                    }
                }
                AppOutput::SessionOpened { .. }
                | AppOutput::SessionClosed
                | AppOutput::HandshakeRefused { .. } => {}
            }
        }
    }

    fn abp_id_of(&self, host: u64, call_id: &str) -> Option<String> {
        self.calls
            .iter()
            .find(|(_, r)| r.host == host && r.call_id == call_id)
            .map(|(abp_id, _)| abp_id.clone())
    }

    /// One event from the app's agent.
    fn app_event(&mut self, event: Event) {
        let now = self.now();
        match event {
            Event::Connected { capabilities, .. } => {
                self.joined = true;
                self.set_tools(&capabilities);
            }
            Event::Capabilities { payload } => match payload.get("capabilities") {
                Some(list) if list.is_array() => self.set_tools(&list.clone()),
                _ => {}
            },
            Event::Disconnected => {
                self.joined = false;
                self.tasks.app_left();
                self.set_tools(&Value::Array(Vec::new()));
                // The app settled what it had before it said so; what is left never reached it.
                for (_, running) in std::mem::take(&mut self.calls) {
                    if let Some(conn) = self.conn(running.host) {
                        conn.complete(&running.call_id, disconnected(), None, now);
                    }
                }
                self.asks.clear();
            }
            Event::Settled {
                call_id, response, ..
            } if self.tasks.runs(&call_id) => {
                self.tasks
                    .settled(&call_id, &response, |code, message, error| {
                        error_result(code, message, Some(error.clone()))
                    });
            }
            Event::Progress { call_id, payload } if self.tasks.runs(&call_id) => {
                self.tasks.progress(&call_id, &payload);
            }
            Event::Elicitation {
                id,
                call_id: Some(call_id),
                request,
            } if self.tasks.runs(&call_id) => {
                if !self.tasks.ask(&call_id, &id, &request) {
                    let error = AbpError::<Value>::new(
                        ErrorCode::NotSupported,
                        "The MCP client that started this task did not declare elicitation",
                    );
                    let answer = json!({ "success": false, "error": encode_error(error) });
                    self.command(Command::Answer {
                        id,
                        answer: Some(answer),
                    });
                }
            }
            Event::Settled {
                call_id, response, ..
            } => {
                if let Some(running) = self.calls.remove(&call_id) {
                    let outcome = outcome_of(&response);
                    match running.progressed.map(|at| at + RESULT_AFTER_PROGRESS) {
                        Some(due) if due > self.clock => {
                            self.held
                                .push((due, running.host, running.call_id, outcome))
                        }
                        _ => {
                            if let Some(conn) = self.conn(running.host) {
                                conn.complete(&running.call_id, outcome, None, now);
                            }
                        }
                    }
                }
            }
            Event::Progress { call_id, payload } => {
                if let Some(running) = self.calls.get_mut(&call_id) {
                    running.progressed = Some(self.clock);
                    let (host, call_id) = (running.host, running.call_id.clone());
                    if let Some(conn) = self.conn(host) {
                        conn.progress(&call_id, payload, now);
                    }
                }
            }
            Event::Elicitation {
                id,
                call_id,
                request,
            } => self.ask_host(id, call_id, request, now),
            Event::ElicitationAborted { id } => {
                self.tasks.withdrawn(&id);
                self.asks.retain(|_, asked| *asked != id);
            }
            Event::Notification { .. } | Event::CancelResult { .. } | Event::Status { .. } => {}
            Event::Error { message, .. } => eprintln!("abp-peer mcp: {message}"),
        }
    }

    /// The app's question `id` during its call `call_id`: to the host whose call it is, if it can be asked;
    /// else the app is answered NOT_SUPPORTED.
    fn ask_host(&mut self, id: String, call_id: Option<String>, request: Value, now: f64) {
        let host_call = call_id
            .as_ref()
            .and_then(|c| self.calls.get(c))
            .map(|r| (r.host, r.call_id.clone()));
        // Only a running host call may ask the host: a question with none behind it would put the
        // app's words (say, "re-enter your token") in front of the user unasked.
        let refused = || {
            AbpError::new(
                ErrorCode::NotSupported,
                "The gateway asks the host only for a running tool call",
            )
        };
        let asked = match &host_call {
            Some((host, call)) => match self.conn(*host) {
                Some(conn) => conn.elicit(Some(call), request, now),
                None => Err(refused()),
            },
            None => Err(refused()),
        };
        match asked {
            Ok(ask) => {
                if let Some((host, _)) = host_call {
                    self.asks.insert((host, ask), id);
                }
            }
            Err(error) => {
                let answer = json!({ "success": false, "error": encode_error(error) });
                self.command(Command::Answer {
                    id,
                    answer: Some(answer),
                });
            }
        }
    }

    /// The joined app's capabilities are now `list`: the tools follow, and the host hears of any change.
    fn set_tools(&mut self, list: &Value) {
        let tools: Vec<Value> = list
            .as_array()
            .map(|l| {
                l.iter()
                    .filter(|d| d.get("name").is_some_and(Value::is_string))
                    .filter(|d| d.get("available") != Some(&Value::Bool(false)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let names = |t: &[Value]| -> Vec<String> {
            t.iter()
                .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        };
        let (old, new) = (names(&self.tools), names(&tools));
        let changed = old != new || self.tools != tools;
        let mut registry = Registry::default();
        for name in &new {
            // Only the name: the app checks its own input schema (and answers an ABP error the host sees).
            let _ = registry.register(name, Some(json!({ "name": name })));
        }
        self.registry = registry;
        self.param_headers.set(&tools);
        self.tools = tools;
        if changed {
            let changes = abp_wasm::core::capability::Changes {
                added: new.iter().filter(|n| !old.contains(n)).cloned().collect(),
                removed: old.iter().filter(|n| !new.contains(n)).cloned().collect(),
                changed: new.iter().filter(|n| old.contains(n)).cloned().collect(),
            };
            for h in &mut self.hosts {
                h.conn.capabilities_changed(&changes);
            }
        }
    }

    /// When the next held result is due.
    fn next_held(&self) -> Option<Instant> {
        self.held.iter().map(|(due, _, _, _)| *due).min()
    }

    /// The gateway's next deadline (a host connection's, a held result's, a task's end of life): then call
    /// [`Gateway::handle_timeout`].
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.hosts
            .iter()
            .filter_map(|h| h.conn.poll_timeout())
            // A deadline too far to represent (an app's `timeout: 1e300`) is no deadline.
            .filter_map(|t| Duration::try_from_secs_f64(t.max(0.0).ceil() / 1000.0).ok())
            .filter_map(|d| self.start.checked_add(d))
            .chain(self.next_held())
            .chain(self.tasks.next_expiry())
            .min()
    }

    /// Writes the held results that are due.
    fn release_held(&mut self) {
        let clock = self.clock;
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(at, _, _, _)| *at <= clock);
        self.held = later;
        let now = self.now();
        for (_, host, call_id, outcome) in due {
            if let Some(conn) = self.conn(host) {
                conn.complete(&call_id, outcome, None, now);
            }
        }
    }

    /// The gateway stops: what the dialect says then goes to the host (each modern listen is torn down).
    fn goodbye(&mut self) {
        let mut lines = Vec::new();
        let stamp = self.unix_ms();
        for h in &mut self.hosts {
            h.conn.close();
            while let Some(output) = h.conn.poll(&|| stamp, &|| Value::Null) {
                if let AppOutput::Transmit(t) = output {
                    lines.push((h.id, t.message));
                }
            }
        }
        for (host, line) in lines {
            self.send(host, line);
        }
    }

    /// The host went away: every call still running in the app is cancelled there.
    fn cancel_everything(&mut self) {
        let ids: Vec<String> = self
            .calls
            .keys()
            .cloned()
            .chain(self.tasks.running())
            .collect();
        for abp_id in ids {
            self.command(Command::Abort {
                call_id: abp_id,
                reason: Some("the MCP host went away".into()),
                signal: Some(signal::HOST_GONE.into()),
            });
        }
    }
}

/// -32021 for a request that needs the tasks extension without declaring it.
fn missing_tasks() -> (i64, String, Option<Value>) {
    (
        tasks::MISSING_CAPABILITY,
        format!(
            "This request needs the {} extension: declare it in _meta's clientCapabilities.extensions",
            tasks::EXTENSION
        ),
        Some(tasks::missing_extension()),
    )
}

/// What the app answered (as `abp.call` resolves) as the tool's outcome: data as the result; an error as an
/// `isError` result naming the ABP code; a call the host cancelled gets nothing.
fn outcome_of(response: &Value) -> Outcome<Value> {
    if response.get("success") == Some(&Value::Bool(true)) {
        let data = response.get("data").cloned().unwrap_or(Value::Null);
        return Outcome::Success { data };
    }
    let error = response.get("error");
    let code = error
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("INTERNAL_ERROR");
    if response.get("cancelled") == Some(&Value::Bool(true)) && code == "CANCELLED" {
        return Outcome::Cancelled { reason: None };
    }
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("The app did not say why");
    Outcome::Success {
        data: error_result(code, message, error.cloned()),
    }
}

/// A call that could not reach the app, or lost it: an `isError` result naming DISCONNECTED.
fn disconnected() -> Outcome<Value> {
    Outcome::Success {
        data: error_result(
            "DISCONNECTED",
            "The connection to the app was lost before it answered",
            None,
        ),
    }
}

/// An MCP tool result that is an error: `CODE: message` for the model, the ABP error as structured content.
fn error_result(code: &str, message: &str, error: Option<Value>) -> Value {
    let error = error.unwrap_or_else(|| json!({ "code": code, "message": message }));
    json!({
        "content": [{ "type": "text", "text": format!("{code}: {message}") }],
        "structuredContent": { "error": error },
        "isError": true,
    })
}

/// What a host is told when its call finds no app: with `--nats` and the link to NATS down, that (the app may well be
/// open, on another process).
fn no_app_text(room: &str, link_down: Option<String>) -> String {
    if let Some(why) = link_down {
        let mut why = why;
        if let Some(first) = why.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        return why;
    }
    let path = if room.is_empty() {
        "/agent".to_owned()
    } else {
        format!("/agent/{room}")
    };
    format!("No app is connected: open the web app so that it joins {path} on this gateway")
}

#[cfg(test)]
mod tests {
    use super::*;
    use abp_wasm::core::dialect::{Carrier, DialectKind};
    use abp_wasm::core::AppConfig;

    /// A gateway driven as its edges drive it, with what it says collected: the host on stdio's lines, and the
    /// commands for the app (a call the app cannot take, once it is gone, handed back as the hub hands it back).
    struct T {
        g: Gateway,
        lines: Vec<String>,
        commands: VecDeque<Command>,
        app_gone: bool,
    }

    impl T {
        fn drain(&mut self) {
            while let Some(output) = self.g.poll() {
                match output {
                    Output::ToHost {
                        host: STDIO,
                        message,
                    } => self.lines.push(message.to_string()),
                    Output::ToHost { .. } => {}
                    Output::ToApp(command @ Command::Call { .. }) if self.app_gone => {
                        self.g.unsent(command, Instant::now())
                    }
                    Output::ToApp(command) => self.commands.push_back(command),
                }
            }
        }

        fn host(&mut self, line: &str) {
            let message = serde_json::from_str(line).expect("a test's line is JSON");
            self.g.handle_host(STDIO, message, Instant::now());
            self.drain();
        }

        fn app(&mut self, event: Event) {
            self.g.handle_app(event, Instant::now());
            self.drain();
        }

        fn next_command(&mut self) -> Command {
            self.commands.pop_front().expect("a command for the app")
        }

        /// The app asks `e1` (a confirmation) in the call it was sent last.
        fn app_asks_in_the_call(&mut self) {
            let Command::Call { call_id, .. } = self.next_command() else {
                panic!("the tool call goes to the app")
            };
            self.app(Event::Elicitation {
                id: "e1".into(),
                call_id,
                request: json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } }),
            });
        }

        /// A modern host calls the `ask` tool as request `id` (declaring elicitation or not): the app's call id.
        fn call_ask(&mut self, id: u64, elicitation: bool) -> Option<String> {
            let ask = json!({ "name": "ask", "arguments": {} });
            self.host(&modern_request(id, "tools/call", ask, elicitation));
            let Command::Call { call_id, .. } = self.next_command() else {
                panic!("the tool call goes to the app")
            };
            call_id
        }

        /// The gateway's answer to the app's elicitation `id`: the next command the app gets must be it.
        fn answer_to(&mut self, id: &str) -> Value {
            match self.next_command() {
                Command::Answer { id: got, answer } => {
                    assert_eq!(got, id);
                    answer.expect("an answer")
                }
                other => panic!("expected the answer to {id}, got {other:?}"),
            }
        }

        /// The host's answers so far, parsed.
        fn answers(&self) -> Vec<Value> {
            self.lines
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect()
        }
    }

    /// A gateway whose host declared `capabilities`, with an app joined, and a call of the host's sent to it.
    fn gateway(capabilities: Value) -> T {
        let mut t = T {
            g: Gateway::new(String::new(), Arc::default(), Clock::system()),
            lines: Vec::new(),
            commands: VecDeque::new(),
            app_gone: false,
        };
        let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": { "name": "host", "version": "1" } } });
        t.host(&init.to_string());
        t.app(Event::Connected {
            session_id: "s".into(),
            app: json!({}),
            capabilities: json!([{ "name": "ask", "description": "Asks" }]),
        });
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "ask", "arguments": {} } });
        t.host(&call.to_string());
        t
    }

    #[test]
    fn an_elicitation_for_a_host_without_the_capability_is_not_supported() {
        let mut t = gateway(json!({}));
        t.app_asks_in_the_call();
        assert_eq!(t.answer_to("e1")["error"]["code"], "NOT_SUPPORTED");
        assert!(
            !t.lines.iter().any(|l| l.contains("elicitation/create")),
            "the host is not asked: {:?}",
            t.lines
        );
    }

    #[test]
    fn an_elicitation_for_a_host_with_it_is_asked_and_its_answer_goes_back() {
        let mut t = gateway(json!({ "elicitation": {} }));
        t.app_asks_in_the_call();
        let asked: Value = t
            .lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["method"] == "elicitation/create")
            .expect("elicitation/create to the host");
        assert_eq!(asked["params"]["message"], "Sure?");
        let answer =
            json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "action": "decline" } });
        t.host(&answer.to_string());
        assert_eq!(
            t.answer_to("e1"),
            json!({ "success": true, "data": { "confirmed": false } })
        );
    }

    #[test]
    fn an_elicitation_with_no_call_behind_it_is_declined_and_the_host_not_asked() {
        // A host that accepts elicitation, and an app (anything that joined) asking outside any call.
        let mut t = gateway(json!({ "elicitation": {} }));
        let Command::Call { .. } = t.next_command() else {
            panic!("the tool call goes to the app")
        };
        t.app(Event::Elicitation {
            id: "e1".into(),
            call_id: None,
            request: json!({ "method": "elicitation/create",
                "params": { "message": "Re-enter your token", "requestedSchema": { "type": "object" } } }),
        });
        assert_eq!(t.answer_to("e1")["error"]["code"], "NOT_SUPPORTED");
        assert!(
            !t.lines.iter().any(|l| l.contains("Re-enter")),
            "the host is not asked: {:?}",
            t.lines
        );
    }

    /// A gateway with an app joined and no host handshake (a modern host sends none).
    fn modern_gateway() -> T {
        let mut t = gateway(json!({}));
        t.lines.clear();
        // A fresh host side: the helper's legacy handshake is not part of this host's story.
        t.g.hosts[0].conn = AppConnection::new(
            DialectKind::Mcp,
            Carrier::Stream,
            AppConfig::default(),
            json!({ "name": "abp-peer", "version": "0" }),
            "gw-",
        );
        t.g.calls.clear();
        t
    }

    fn modern_request(id: u64, method: &str, mut params: Value, elicitation: bool) -> String {
        let caps = if elicitation {
            json!({ "elicitation": {} })
        } else {
            json!({})
        };
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "host", "version": "2" },
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
    }

    #[test]
    fn a_modern_host_discovers_lists_and_calls_without_a_handshake() {
        let mut t = modern_gateway();
        t.commands.clear();
        t.host(&modern_request(1, "server/discover", json!({}), false));
        t.host(&modern_request(2, "tools/list", json!({}), false));
        let out = t.answers();
        assert_eq!(out[0]["result"]["resultType"], "complete");
        assert_eq!(
            out[0]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "abp-peer"
        );
        assert_eq!(out[1]["result"]["tools"][0]["name"], "ask");
        assert_eq!(out[1]["result"]["cacheScope"], "private");
        let call_id = t.call_ask(3, false);
        t.app(Event::Settled {
            reference: Value::Null,
            call_id: call_id.unwrap(),
            response: json!({ "success": true, "data": { "ok": true } }),
        });
        let done = t
            .answers()
            .into_iter()
            .find(|m| m["id"] == 3)
            .expect("the call's result");
        assert_eq!(done["result"]["resultType"], "complete");
        assert_eq!(done["result"]["structuredContent"], json!({ "ok": true }));
    }

    /// The trace context of the command `t` sent the app last.
    fn traced(t: &mut T) -> (Option<String>, Option<String>) {
        let Command::Call {
            traceparent,
            tracestate,
            ..
        } = t.next_command()
        else {
            panic!("a tool call goes to the app")
        };
        (traceparent, tracestate)
    }

    #[test]
    fn a_hosts_trace_context_goes_with_its_call_to_the_app() {
        const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        // The helper's call had none; a legacy host's with one, an invalid one, and a modern host's task.
        let mut t = gateway(json!({}));
        assert_eq!(traced(&mut t), (None, None));
        let call = |id: u64, meta: Value| {
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "ask", "arguments": {}, "_meta": meta } })
            .to_string()
        };
        t.host(&call(
            3,
            json!({ "traceparent": PARENT, "tracestate": "rojo=1" }),
        ));
        assert_eq!(traced(&mut t), (Some(PARENT.into()), Some("rojo=1".into())));
        t.host(&call(
            4,
            json!({ "traceparent": "00-junk", "tracestate": "rojo=1" }),
        ));
        assert_eq!(traced(&mut t), (None, None), "dropped, not passed on");
        t.host(&call(
            5,
            json!({ "traceparent": PARENT, "tracestate": "Not Valid" }),
        ));
        assert_eq!(traced(&mut t), (Some(PARENT.into()), None));

        let mut t = modern_gateway();
        t.commands.clear();
        t.app(Event::Capabilities {
            payload: json!({ "capabilities": [{ "name": "render", "task": "optional" }] }),
        });
        for (id, tasks) in [(1, false), (2, true)] {
            let mut m: Value = serde_json::from_str(&modern_request(
                id,
                "tools/call",
                json!({ "name": "render", "arguments": {} }),
                false,
            ))
            .unwrap_or_default();
            m["params"]["_meta"]["traceparent"] = json!(PARENT);
            m["params"]["_meta"]["tracestate"] = json!("Not Valid");
            if tasks {
                m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                    json!({ "extensions": { tasks::EXTENSION: {} } });
            }
            t.host(&m.to_string());
            assert_eq!(
                traced(&mut t),
                (Some(PARENT.into()), None),
                "a task: {tasks}"
            );
        }
    }

    #[test]
    fn a_task_over_stdio_survives_a_joined_host_leaving_and_ends_as_the_app_says() {
        let mut t = modern_gateway();
        t.commands.clear();
        t.app(Event::Capabilities {
            payload: json!({ "capabilities": [{ "name": "render", "task": "required" }] }),
        });
        let with_tasks = |id: u64, method: &str, params: Value| {
            let mut m: Value = serde_json::from_str(&modern_request(id, method, params, false))
                .unwrap_or_default();
            m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({ "extensions": { tasks::EXTENSION: {} } });
            m.to_string()
        };
        // Without the extension a required task is -32021; with it, a task.
        let call = json!({ "name": "render", "arguments": {} });
        t.host(&modern_request(1, "tools/call", call.clone(), false));
        t.host(&with_tasks(2, "tools/call", call));
        let out = t.answers();
        assert_eq!(out[0]["error"]["code"], -32021, "{out:?}");
        assert_eq!(out[1]["result"]["resultType"], "task", "{out:?}");
        let task = out[1]["result"]["taskId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let Command::Call { call_id, .. } = t.next_command() else {
            panic!("the task's call goes to the app")
        };
        // A joined host (another copy) leaves: tasks are not its calls, nothing is cancelled.
        assert!(t.g.join(7));
        t.g.leave(7, Instant::now());
        t.drain();
        assert!(t.commands.is_empty(), "nothing cancelled");
        t.app(Event::Settled {
            reference: Value::Null,
            call_id: call_id.unwrap_or_default(),
            response: json!({ "success": true, "data": { "pages": 2 } }),
        });
        t.lines.clear();
        t.host(&with_tasks(3, "tasks/get", json!({ "taskId": task })));
        let got = &t.answers()[0]["result"];
        assert_eq!(got["status"], "completed", "{got}");
        assert_eq!(got["result"]["structuredContent"], json!({ "pages": 2 }));
    }

    #[test]
    fn a_modern_hosts_call_that_asks_is_answered_by_the_retry() {
        let mut t = modern_gateway();
        t.commands.clear();
        let call_id = t.call_ask(3, true);
        t.app(Event::Elicitation {
            id: "e1".into(),
            call_id: call_id.clone(),
            request: json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } }),
        });
        let asked = t
            .answers()
            .into_iter()
            .find(|m| m["id"] == 3)
            .expect("an answer to the call");
        assert_eq!(asked["result"]["resultType"], "input_required");
        assert!(
            !t.answers()
                .iter()
                .any(|m| m["method"] == "elicitation/create"),
            "a modern host is sent no request"
        );
        let inputs = asked["result"]["inputRequests"].as_object().unwrap();
        let key = inputs.keys().next().unwrap().clone();
        let state = asked["result"]["requestState"].clone();
        let mut retry: Value = serde_json::from_str(&modern_request(
            4,
            "tools/call",
            json!({ "name": "ask", "arguments": {} }),
            true,
        ))
        .unwrap();
        retry["params"]["requestState"] = state;
        retry["params"]["inputResponses"] = json!({ key: { "action": "accept" } });
        t.host(&retry.to_string());
        assert_eq!(
            t.answer_to("e1"),
            json!({ "success": true, "data": { "confirmed": true } })
        );
        t.app(Event::Settled {
            reference: Value::Null,
            call_id: call_id.unwrap(),
            response: json!({ "success": true, "data": 7 }),
        });
        let done = t
            .answers()
            .into_iter()
            .find(|m| m["id"] == 4)
            .expect("the retry's result");
        assert_eq!(done["result"]["resultType"], "complete");
    }

    #[test]
    fn stopping_tears_down_a_modern_hosts_listen() {
        let mut t = modern_gateway();
        let listen = modern_request(
            8,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
            false,
        );
        t.host(&listen);
        assert_eq!(
            t.answers()[0]["method"],
            "notifications/subscriptions/acknowledged"
        );
        t.app(Event::Capabilities {
            payload: json!({ "capabilities": [{ "name": "other" }] }),
        });
        let told = t.answers().pop().unwrap();
        assert_eq!(told["method"], "notifications/tools/list_changed");
        assert_eq!(
            told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            8
        );
        t.g.close();
        t.drain();
        let bye = t.answers().pop().unwrap();
        assert_eq!(bye["method"], "notifications/cancelled");
        assert_eq!(bye["params"]["requestId"], 8);
    }

    #[test]
    fn a_call_that_finds_the_app_gone_and_one_it_never_answered_are_errors_at_once() {
        let mut t = gateway(json!({}));
        // The app's agent is gone before the gateway heard so: the next call cannot reach it.
        t.app_gone = true;
        let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": { "name": "ask", "arguments": {} } });
        t.host(&call.to_string());
        let lost = t
            .answers()
            .into_iter()
            .find(|m| m["id"] == 3)
            .expect("an answer at once");
        assert_eq!(lost["result"]["isError"], true);
        assert!(lost["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("DISCONNECTED"));
        // The call made before (id 2) was sent to the agent, which went without settling it: the app's
        // `disconnected` settles it.
        t.app(Event::Disconnected);
        let left = t
            .answers()
            .into_iter()
            .find(|m| m["id"] == 2)
            .expect("an answer for the call left behind");
        assert_eq!(left["result"]["isError"], true);
        assert!(t.g.calls.is_empty());
    }

    #[test]
    fn a_gateway_serves_at_most_max_hosts() {
        let mut t = gateway(json!({}));
        let joined: Vec<bool> = (1..=MAX_HOSTS as u64).map(|h| t.g.join(h)).collect();
        assert_eq!(
            t.g.hosts.len(),
            MAX_HOSTS,
            "stdio's and the joined ones, up to the cap"
        );
        assert!(
            joined.iter().take(MAX_HOSTS - 1).all(|j| *j),
            "the joined hosts stay"
        );
        assert_eq!(joined.last(), Some(&false), "one more is refused");
    }
}
