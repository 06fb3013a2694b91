//! `abp-peer mcp`: an MCP server on stdin/stdout (the MCP stdio transport) whose tools are the capabilities of
//! the browser app that joined `/agent` (or `/agent/<room>` with `--room`). An LLM host (Claude Desktop, Cursor,
//! the MCP Inspector) starts it as a command; the app connects to it with
//! `app.listen(await WebSocketTransport.connect('ws://127.0.0.1:PORT/agent'))`.
//!
//! Two protocol cores meet here, and both are the SDK's own: toward the host, the app core speaking the MCP
//! dialect (the same code a browser app uses to serve MCP clients: `initialize`, `tools/list`, `tools/call`,
//! `notifications/cancelled`, progress, `elicitation/create`, `list_changed`); toward the browser app, the native
//! agent of [`crate::agent`], driven through the [`Hub`] with the control protocol's commands. This module only
//! maps one onto the other:
//!
//! - a tool call starts an ABP call (the host's progress token asks for progress); the host's
//!   `notifications/cancelled` aborts it, so the app's `ctx.signal` aborts, and nothing is written back for it;
//! - the app's result is the tool's result; an ABP error is an `isError` result whose text names the code, and
//!   the app leaving mid-call settles the call DISCONNECTED at once;
//! - the app's progress is `notifications/progress` with the host's token, always before the result;
//! - the app's `ctx.elicit` is `elicitation/create` to a host that declared `elicitation` (else NOT_SUPPORTED);
//! - the app joining, leaving or changing its capabilities is `notifications/tools/list_changed`;
//! - the host going away (stdin closed, SIGTERM/SIGINT) cancels every call still running in the app, then exits.
//!
//! Both MCP eras are served, per request, by the dialect (2026-07-28's `server/discover`, elicitation by retry
//! and listens; 2025-11-25's `initialize` sessions). More than one host may use the app: a second host's copy of
//! this command, finding the port taken, joins this one at `/mcp-host` (with the launch token from the token
//! file) and relays its stdio; each host gets its own MCP connection here, and the app is shared.
//!
//! Nothing but MCP messages is written to stdout; logs go to stderr.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abp_wasm::core::dialect::mcp::{era_of, Era};
use abp_wasm::core::dialect::{Carrier, DialectKind};
use abp_wasm::core::error::{encode_error, AbpError, ErrorCode};
use abp_wasm::core::{AppConfig, AppConnection, AppOutput, Outcome, Registry, ToApp};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::control::{Command, Envelope, Event};
use crate::hub::Hub;
use crate::mcp_remote::{is_replayed_answer, Follow, Follower, StdioLines};
use crate::mcp_tasks::{self, Tasks};
use crate::server::{self, Routes, Server, ServerOptions};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(flatten)]
    server: ServerOptions,
    /// The room the browser app joins: `/agent/ROOM` (empty: `/agent`).
    #[arg(long, value_name = "ROOM", default_value = "")]
    room: String,
    /// Also serve MCP's Streamable HTTP transport (revision 2026-07-28) at http://HOST:PORT/mcp, for hosts that
    /// reach servers by URL; port 0 picks one. Stdin is then left alone unless --stdio is given too.
    #[arg(long, value_name = "HOST:PORT")]
    http: Option<String>,
    /// With --http: serve a host on stdin/stdout as well.
    #[arg(long, requires = "http")]
    stdio: bool,
    /// With --http: take requests without the launch token (`Authorization: Bearer`), for a host behind a proxy
    /// that authenticates, or a test runner. Anything on this machine can then use the app.
    #[arg(long, requires = "http")]
    http_no_auth: bool,
    /// With --http: a 2025-11-25 session that has had no request and no open stream for this many seconds is
    /// ended (as if its host had sent DELETE), so that hosts that crash without ending theirs do not fill the
    /// gateway's session places.
    #[arg(long, value_name = "SECONDS", default_value_t = 600, requires = "http",
        value_parser = clap::value_parser!(u64).range(1..))]
    http_session_idle: u64,
    /// With --nats: the gateway processes given the same NATS server share the app. A host's HTTP requests may
    /// reach any of them (behind a load balancer with no affinity), and the host on stdio reaches the app
    /// wherever it joined.
    #[command(flatten)]
    nats: crate::nats::NatsArgs,
}

/// How long the host's going away waits for the app to confirm the cancels before the process exits.
const GOODBYE_MS: u64 = 600;

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

/// The host on stdin/stdout.
const STDIO: u64 = 0;
/// Its name among the hosts of this process another process's gateway serves (with `--nats`).
const STDIO_HOST: &str = "stdio";

/// What a host that joins through `/mcp-host` sends the gateway (by the hub), one message at a time.
#[derive(Debug)]
pub(crate) enum HostInput {
    /// A host joined: its lines go to `out`.
    Joined {
        host: u64,
        out: UnboundedSender<String>,
    },
    Line {
        host: u64,
        line: String,
    },
    Left {
        host: u64,
    },
}

/// One MCP host the gateway serves: the one on stdio, or one that joined through `/mcp-host` (another copy of
/// `abp-peer mcp`, started by a second host, relaying its stdio here).
struct Host {
    id: u64,
    /// Toward the host: the app core speaking MCP, with the joined app's tools as its registry.
    conn: AppConnection<Value>,
    /// Where its lines go: `None` for stdout (collected in [`Gateway::out`]).
    sink: Option<UnboundedSender<String>>,
}

fn host_connection() -> AppConnection<Value> {
    let config = AppConfig {
        // Every progress update the app sends goes on to the host (the app already paces them).
        progress_interval: 0.0,
        ..AppConfig::default()
    };
    let info = json!({ "name": "abp-peer", "version": env!("CARGO_PKG_VERSION") });
    let mut conn = AppConnection::new(DialectKind::Mcp, Carrier::Stream, config, info, "gw-");
    conn.offer_extension(mcp_tasks::EXTENSION);
    conn
}

struct Gateway {
    /// The hosts, stdio's first.
    hosts: Vec<Host>,
    /// The names of the joined app's available capabilities (what a tool call may name).
    registry: Registry<Value>,
    /// Their descriptors, as `tools/list` shows them.
    tools: Vec<Value>,
    /// Their `x-mcp-header` parameters, for the HTTP endpoint's checks.
    param_headers: Arc<crate::mcp_http::ParamHeaders>,
    /// An app has joined and finished its handshake.
    joined: bool,
    hub: Arc<Hub>,
    room: String,
    start: Instant,
    /// ABP call id (toward the app) → the host's call.
    calls: HashMap<String, Running>,
    next_call: u64,
    /// Our question to a host (the host, the app core's id) → the agent's elicitation id.
    asks: HashMap<(u64, String), String>,
    /// Results held back until [`RESULT_AFTER_PROGRESS`] after their call's last progress: (when, the host, app
    /// core's call id, outcome).
    held: Vec<(Instant, u64, String, Outcome<Value>)>,
    /// Lines for stdout.
    out: Vec<String>,
    /// The tool calls run as MCP tasks (not in `calls`: no host connection waits on them).
    tasks: Tasks,
}

impl Gateway {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    /// Sends `command` to the room's app; false when no app is there (its calls were settled when it left).
    fn command(&self, command: Command) -> bool {
        let envelope = Envelope {
            reference: Value::Null,
            command,
        };
        self.hub.command(&self.room, envelope).is_ok()
    }

    fn conn(&mut self, host: u64) -> Option<&mut AppConnection<Value>> {
        self.hosts
            .iter_mut()
            .find(|h| h.id == host)
            .map(|h| &mut h.conn)
    }

    /// A line for `host`.
    fn send(&mut self, host: u64, line: String) {
        match self.hosts.iter().find(|h| h.id == host).map(|h| &h.sink) {
            Some(Some(sink)) => {
                let _ = sink.send(line);
            }
            Some(None) => self.out.push(line),
            None => {}
        }
    }

    /// One line from a host.
    fn on_host_line(&mut self, host: u64, line: &str) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            // Without an id (the MCP SDK's schema refuses `id: null`), as the dialect answers unreadable requests.
            let parse_error = json!({ "jsonrpc": "2.0",
                "error": { "code": -32700, "message": "Parse error" } });
            self.send(host, parse_error.to_string());
            return;
        };
        let now = self.now();
        let joined = self.joined;
        let text = no_app_text(&self.room, self.hub.link_down());
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
        let declared = mcp_tasks::declared(params);
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
                                    mcp_tasks::MAX_TASKS
                                ),
                                None,
                            ))
                        } else {
                            match self.start_task(host, name, p) {
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
        let line = match answer {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err((code, message, data)) => {
                let mut error = json!({ "code": code, "message": message });
                if let Some(data) = data {
                    error["data"] = data;
                }
                json!({ "jsonrpc": "2.0", "id": id, "error": error })
            }
        };
        self.send(host, line.to_string());
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
                if let mcp_tasks::Cancel::Ask(abp_id) = self.tasks.cancel(task_id, host)? {
                    // ABP's acknowledged cancel: the app says whether the handler stopped or had finished, and
                    // the task ends as it did.
                    self.command(Command::Cancel {
                        call_id: abp_id,
                        reason: Some("cancelled by the MCP client (tasks/cancel)".into()),
                    });
                }
                Ok(ack)
            }
        }
    }

    /// Starts the ABP call of a task of `host` for `tools/call` `params`: its `CreateTaskResult`, or `None` when
    /// the app is not there to take it (the call is then answered as any other).
    fn start_task(&mut self, host: u64, capability: &str, params: &Value) -> Option<Value> {
        self.next_call += 1;
        let abp_id = format!("mcp-{}", self.next_call);
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
        });
        sent.then(|| {
            self.tasks
                .create(abp_id, mcp_tasks::declares_elicitation(Some(params)), host)
        })
    }

    /// A host joined through `/mcp-host`; past [`MAX_HOSTS`], dropping `out` closes its connection.
    fn join(&mut self, host: u64, out: UnboundedSender<String>) {
        if self.hosts.len() >= MAX_HOSTS {
            eprintln!("abp-peer mcp: refused a host: {MAX_HOSTS} are joined already");
            return;
        }
        self.hosts.push(Host {
            id: host,
            conn: host_connection(),
            sink: Some(out),
        });
    }

    /// A joined host left: what it had running in the app is cancelled there.
    fn leave(&mut self, host: u64) {
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
            });
        }
        self.asks.retain(|(h, _), _| *h != host);
        self.held.retain(|(_, h, _, _)| *h != host);
    }

    /// Everything the hosts' sides want done.
    fn perform(&mut self) {
        let ids: Vec<u64> = self.hosts.iter().map(|h| h.id).collect();
        for host in ids {
            self.perform_for(host);
        }
    }

    fn perform_for(&mut self, host: u64) {
        loop {
            let tools = &self.tools;
            let list = || Value::Array(tools.clone());
            let Some(h) = self.hosts.iter_mut().find(|h| h.id == host) else {
                break;
            };
            let Some(output) = h.conn.poll(&crate::agent::unix_ms, &list) else {
                break;
            };
            match output {
                AppOutput::Transmit(t) => self.send(host, t.message.to_string()),
                AppOutput::Start {
                    call_id,
                    capability,
                    params,
                    progress_token,
                } => {
                    self.next_call += 1;
                    let abp_id = format!("mcp-{}", self.next_call);
                    let sent = self.command(Command::Call {
                        capability: Some(capability),
                        params,
                        call_id: Some(abp_id.clone()),
                        timeout: None,
                        progress: progress_token.is_some(),
                        abort_after: None,
                        reason: None,
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
                    if let Some(abp_id) = self.abp_id_of(host, &call_id) {
                        self.command(Command::Abort {
                            call_id: abp_id,
                            reason: reason.or_else(|| Some("cancelled by the MCP client".into())),
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
                        Some(due) if due > Instant::now() => {
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
                    running.progressed = Some(Instant::now());
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
            } => {
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
            Event::ElicitationAborted { id } => {
                self.tasks.withdrawn(&id);
                self.asks.retain(|_, asked| *asked != id);
            }
            Event::Notification { .. } | Event::CancelResult { .. } | Event::Status { .. } => {}
            Event::Error { message, .. } => eprintln!("abp-peer mcp: {message}"),
        }
    }

    /// One event from the app's agent, then what it changed in the tasks to their followers.
    fn on_app_event(&mut self, event: Event) {
        self.app_event(event);
        self.publish_tasks();
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

    /// The hosts' next deadline, on the gateway's clock.
    fn next_deadline(&self) -> Option<Instant> {
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

    /// A deadline passed: every host's.
    fn handle_timeout(&mut self) {
        let now = self.now();
        for h in &mut self.hosts {
            h.conn.handle_timeout(now);
        }
        self.release_held();
        for abp_id in self.tasks.expire(Instant::now()) {
            self.command(Command::Abort {
                call_id: abp_id,
                reason: Some("the task's ttlMs passed".into()),
            });
        }
    }

    /// Writes the held results that are due.
    fn release_held(&mut self) {
        let now_instant = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(at, _, _, _)| *at <= now_instant);
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
        for h in &mut self.hosts {
            h.conn.close();
            while let Some(output) = h.conn.poll(&crate::agent::unix_ms, &|| Value::Null) {
                if let AppOutput::Transmit(t) = output {
                    lines.push((h.id, t.message.to_string()));
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
            });
        }
    }
}

/// -32021 for a request that needs the tasks extension without declaring it.
fn missing_tasks() -> (i64, String, Option<Value>) {
    (
        mcp_tasks::MISSING_CAPABILITY,
        format!(
            "This request needs the {} extension: declare it in _meta's clientCapabilities.extensions",
            mcp_tasks::EXTENSION
        ),
        Some(mcp_tasks::missing_extension()),
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

/// `/mcp-host`: a host's copy of this command joined; its lines go to the room's gateway and the gateway's
/// answers come back, until either side goes.
pub(crate) async fn serve_host(socket: axum::extract::ws::WebSocket, hub: Arc<Hub>, room: String) {
    let mut conn = crate::ws::Conn::new(socket);
    let host = hub.next_id() + 1; // never STDIO
    let (out, mut answers) = unbounded_channel();
    if hub
        .to_mcp_gateway(&room, HostInput::Joined { host, out })
        .is_err()
    {
        conn.close().await;
        return;
    }
    loop {
        tokio::select! {
            incoming = conn.recv() => match incoming {
                crate::ws::Incoming::Text(line) => {
                    if hub.to_mcp_gateway(&room, HostInput::Line { host, line }).is_err() {
                        break;
                    }
                }
                crate::ws::Incoming::Other => {}
                crate::ws::Incoming::Closed => break,
            },
            answer = answers.recv() => match answer {
                Some(line) => {
                    if !conn.send(line).await {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    let _ = hub.to_mcp_gateway(&room, HostInput::Left { host });
    conn.close().await;
}

/// The hosts one gateway serves at once: stdio's, HTTP's (all modern requests), each 2025-11-25 HTTP session and
/// each host joined through `/mcp-host`.
pub(crate) const MAX_HOSTS: usize = 64;

/// This host joins the copy of `abp-peer mcp` that already serves the port (another host started it): its
/// stdin goes there line by line, and what comes back goes to its stdout, until either end goes. The launch
/// token comes from the file that copy wrote (readable by this user only).
async fn join(args: &Args, why: String) -> Result<(), String> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    let listen = &args.server.listen;
    let port = listen
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or_else(|| why.clone())?;
    let file = args
        .server
        .token_file
        .clone()
        .unwrap_or_else(|| crate::security::default_token_file(port));
    let token = std::fs::read_to_string(&file).map_err(|_| {
        format!(
            "{why}; no abp-peer mcp token at {} to join it with",
            file.display()
        )
    })?;
    let path = if args.room.is_empty() {
        "/mcp-host".to_owned()
    } else {
        format!("/mcp-host/{}", args.room)
    };
    let mut request = format!("ws://{listen}{path}")
        .into_client_request()
        .map_err(|e| format!("{why}; cannot join it: {e}"))?;
    let bearer = format!("Bearer {}", token.trim());
    request.headers_mut().insert(
        "authorization",
        bearer
            .parse()
            .map_err(|_| format!("{why}; the token file is unreadable"))?,
    );
    let (socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .map_err(|e| format!("{why}; joining the gateway there failed: {e}"))?;
    eprintln!(
        "abp-peer mcp: another host's abp-peer mcp serves {listen}: this host joins it (ws://{listen}{path})"
    );
    let (mut to_gateway, mut from_gateway) = socket.split();
    let mut stdout = tokio::io::stdout();
    let mut lines = BufReader::new(tokio::io::stdin()).split(b'\n');
    loop {
        tokio::select! {
            line = next_line(&mut lines) => match line {
                Some(line) if line.trim().is_empty() => {}
                Some(line) => {
                    if to_gateway.send(Message::text(line)).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
            frame = from_gateway.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if !write_lines(&mut stdout, vec![text.as_str().to_owned()]).await {
                        break;
                    }
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    eprintln!("abp-peer mcp: the gateway this host joined has gone");
                    break;
                }
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = to_gateway.send(Message::Close(None)).await;
    Ok(())
}

/// The next line from the host; `None` at the end of stdin. A line that is not UTF-8 comes back empty (skipped).
async fn next_line(lines: &mut tokio::io::Split<BufReader<tokio::io::Stdin>>) -> Option<String> {
    match lines.next_segment().await {
        Ok(Some(bytes)) => Some(String::from_utf8(bytes).unwrap_or_default()),
        Ok(None) | Err(_) => None,
    }
}

async fn write_lines(stdout: &mut tokio::io::Stdout, lines: Vec<String>) -> bool {
    for mut line in lines {
        line.push('\n');
        if stdout.write_all(line.as_bytes()).await.is_err() {
            return false;
        }
    }
    stdout.flush().await.is_ok()
}

/// Stdout, written by a task of its own: the gateway's loop hands over its lines and goes on, instead of waiting
/// for each write and flush (each a trip to tokio's blocking pool) before it takes the next message. What queued
/// meanwhile goes out in one write. The task ends when the sender is dropped, or when stdout is closed (then the
/// next send fails).
fn stdout_writer() -> (UnboundedSender<Vec<String>>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = unbounded_channel::<Vec<String>>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut batch) = rx.recv().await {
            while let Ok(more) = rx.try_recv() {
                batch.extend(more);
            }
            let mut text = String::with_capacity(batch.iter().map(|l| l.len() + 1).sum());
            for line in batch {
                text.push_str(&line);
                text.push('\n');
            }
            if stdout.write_all(text.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    (tx, writer)
}

/// Runs the gateway until the host goes away.
pub(crate) async fn main(args: Args) -> Result<(), String> {
    // The app's endpoint, and `/mcp-host` for another host's copy of this command (which needs the launch token,
    // written where only this user reads it).
    let routes = Routes {
        agent_rooms: Some(args.room.clone()),
        control: false,
        relay: false,
        exit: false,
        mcp_hosts: true,
    };
    let stop = server::stop_signal();
    let server = match Server::bind(&args.server, &routes).await {
        Ok(server) => server,
        // Another host's copy serves this port: this host joins it.
        Err(server::BindError::InUse(why)) => return join(&args, why).await,
        Err(e) => return Err(e.into()),
    };
    let token_file = server.token_file();
    tokio::pin!(stop);
    // Stopped while waiting for NATS too.
    let cluster = tokio::select! {
        joined = crate::cluster::Cluster::join(&args.nats) => joined,
        () = &mut stop => {
            crate::server::remove_token_file(token_file.as_deref());
            return Ok(());
        }
    };
    let cluster = match cluster {
        Ok(cluster) => cluster,
        Err(e) => {
            crate::server::remove_token_file(token_file.as_deref());
            return Err(e);
        }
    };
    let hub = Arc::new(match &cluster {
        Some(c) => Hub::clustered(c.clone()),
        None => Hub::default(),
    });
    let mut registration = hub.attach_local_controller(&args.room);
    let mut joining = hub.attach_mcp_gateway(&args.room);
    let mut hosts = vec![Host {
        id: STDIO,
        conn: host_connection(),
        sink: None,
    }];
    let param_headers = Arc::new(crate::mcp_http::ParamHeaders::default());
    // The lines of the HTTP host, and the HTTP requests open here.
    let (lines, for_http) = unbounded_channel();
    let streams = Arc::new(crate::mcp_http::Streams::new(
        cluster.as_ref().map(|c| c.node()),
    ));
    let remote = match &cluster {
        Some(c) => Some(
            crate::mcp_remote::Remote::start(
                c.clone(),
                hub.clone(),
                args.room.clone(),
                param_headers.clone(),
                lines.clone(),
                streams.clone(),
            )
            .await?,
        ),
        None => None,
    };
    if let Some(listen) = &args.http {
        let listener = crate::mcp_http::bind(listen, args.server.allow_non_loopback).await?;
        let bound = listener
            .local_addr()
            .map_err(|e| format!("--http {listen}: {e}"))?;
        // The gateway's own origins: it serves no pages, so a page there is one the user opened on purpose.
        let own = [
            format!("http://127.0.0.1:{}", bound.port()),
            format!("http://localhost:{}", bound.port()),
        ]
        .iter()
        .filter_map(|o| crate::security::Origin::parse(o).ok())
        .collect();
        tokio::spawn(crate::mcp_http::dispatch(
            for_http,
            streams.clone(),
            remote.clone(),
        ));
        let endpoint = Arc::new(crate::mcp_http::Endpoint {
            guard: server.guard_beside(&args.server, listen, bound, own),
            auth: !args.http_no_auth,
            hub: hub.clone(),
            room: args.room.clone(),
            streams,
            sessions: std::sync::Mutex::new(HashMap::new()),
            open: std::sync::Mutex::default(),
            session_idle: Duration::from_secs(args.http_session_idle),
            param_headers: param_headers.clone(),
            remote: remote.clone(),
        });
        hosts.push(Host {
            id: crate::mcp_http::HTTP,
            conn: host_connection(),
            sink: Some(lines),
        });
        if args.http_no_auth {
            eprintln!(
                "abp-peer mcp: warning: --http-no-auth: any program on this machine (and any page on an allowed \
                 origin) can call the app's tools at http://{bound}/mcp"
            );
        } else {
            let token = match server.token().source() {
                crate::token::Source::Stored { path, .. } => format!(
                    "the token kept in {} (the same at every start until {})",
                    path.display(),
                    crate::token::NEW_TOKEN_FLAG
                ),
                crate::token::Source::Env => format!("the token from {}", crate::token::TOKEN_ENV),
            };
            eprintln!(
                "abp-peer mcp: http://{bound}/mcp needs Authorization: Bearer TOKEN, {token}"
            );
        }
        eprintln!("abp-peer mcp on http://{bound}/mcp");
        tokio::spawn(server::serve_connections(
            listener,
            crate::mcp_http::router(endpoint),
        ));
    }
    let mut serving = tokio::spawn({
        let hub = hub.clone();
        async move { server.run(routes, hub).await }
    });
    let stdio = args.http.is_none() || args.stdio;
    let mut gateway = Gateway {
        hosts,
        registry: Registry::default(),
        tools: Vec::new(),
        param_headers,
        joined: false,
        hub: hub.clone(),
        room: args.room.clone(),
        start: Instant::now(),
        calls: HashMap::new(),
        next_call: 0,
        asks: HashMap::new(),
        held: Vec::new(),
        out: Vec::new(),
        tasks: Tasks::default(),
    };
    let (to_stdout, writer) = stdout_writer();
    let mut lines = BufReader::new(tokio::io::stdin()).split(b'\n');
    // With `--nats`, the host on stdio follows the app: while it is on another process, that process's gateway
    // serves the host, and what it says comes back here.
    let (stdio_back, mut from_elsewhere) = unbounded_channel::<String>();
    let stdio_follower = Follower::Stdio(StdioLines::new(stdio_back));
    let mut stdio_follow = Follow::default();
    loop {
        gateway.perform();
        let mut out = std::mem::take(&mut gateway.out);
        if remote.is_some() {
            out.retain(|line| !is_replayed_answer(line));
        }
        if !out.is_empty() && to_stdout.send(out).is_err() {
            break; // the host closed our stdout
        }
        let due = gateway.next_deadline();
        tokio::select! {
            line = next_line(&mut lines), if stdio => match line {
                Some(line) if line.trim().is_empty() => {}
                Some(line) => match &remote {
                    Some(remote) => {
                        for line in stdio_follow.next(remote, STDIO_HOST, &stdio_follower, line).await {
                            gateway.on_host_line(STDIO, &line);
                        }
                    }
                    None => gateway.on_host_line(STDIO, &line),
                },
                None => break,
            },
            Some(line) = from_elsewhere.recv() => gateway.out.push(line),
            Some(event) = registration.inbox.recv() => gateway.on_app_event(event),
            Some(input) = joining.inbox.recv() => match input {
                HostInput::Joined { host, out } => gateway.join(host, out),
                HostInput::Line { host, line } => gateway.on_host_line(host, &line),
                HostInput::Left { host } => gateway.leave(host),
            },
            () = crate::agent::sleep_until(due) => gateway.handle_timeout(),
            () = &mut stop => break,
            finished = &mut serving => {
                server::remove_token_file(token_file.as_deref());
                return match finished {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(format!("the server stopped: {e}")),
                    Err(e) => Err(format!("the server failed: {e}")),
                };
            }
        }
    }
    // The host is gone (or we are stopped): cancel what runs in the app, tell a host that still listens, give
    // the app a moment to see the cancels, and go.
    if let Some(remote) = &remote {
        stdio_follow.end(remote, STDIO_HOST).await;
    }
    gateway.cancel_everything();
    gateway.goodbye();
    let _ = to_stdout.send(std::mem::take(&mut gateway.out));
    drop(to_stdout);
    let _ = writer.await;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(GOODBYE_MS);
    while !gateway.calls.is_empty() {
        match tokio::time::timeout_at(deadline, registration.inbox.recv()).await {
            Ok(Some(Event::Settled { call_id, .. })) => {
                gateway.calls.remove(&call_id);
            }
            Ok(Some(Event::Disconnected)) | Ok(None) | Err(_) => break,
            Ok(Some(_)) => {}
        }
    }
    serving.abort();
    server::remove_token_file(token_file.as_deref());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gateway whose host declared `capabilities`, with an app's agent registered in its room (the commands
    /// the gateway sends it arrive in the returned inbox).
    fn gateway(capabilities: Value) -> (Gateway, crate::hub::Registration<Envelope>) {
        let hub = Arc::new(Hub::default());
        let agent = hub.attach_agent("");
        let info = json!({ "name": "abp-peer", "version": "0" });
        let mut g = Gateway {
            hosts: vec![Host {
                id: STDIO,
                conn: AppConnection::new(
                    DialectKind::Mcp,
                    Carrier::Stream,
                    AppConfig::default(),
                    info,
                    "gw-",
                ),
                sink: None,
            }],
            registry: Registry::default(),
            tools: Vec::new(),
            param_headers: Arc::default(),
            joined: false,
            hub,
            room: String::new(),
            start: Instant::now(),
            calls: HashMap::new(),
            next_call: 0,
            asks: HashMap::new(),
            held: Vec::new(),
            out: Vec::new(),
            tasks: Tasks::default(),
        };
        let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": { "name": "host", "version": "1" } } });
        g.on_host_line(STDIO, &init.to_string());
        g.perform();
        g.on_app_event(Event::Connected {
            session_id: "s".into(),
            app: json!({}),
            capabilities: json!([{ "name": "ask", "description": "Asks" }]),
        });
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "ask", "arguments": {} } });
        g.on_host_line(STDIO, &call.to_string());
        g.perform();
        (g, agent)
    }

    /// The gateway's answer to the app's elicitation `id`: the next command the app gets must be it.
    fn answer_to(agent: &mut crate::hub::Registration<Envelope>, id: &str) -> Value {
        match next_command(agent) {
            Command::Answer { id: got, answer } => {
                assert_eq!(got, id);
                answer.expect("an answer")
            }
            other => panic!("expected the answer to {id}, got {other:?}"),
        }
    }

    fn next_command(agent: &mut crate::hub::Registration<Envelope>) -> Command {
        agent
            .inbox
            .try_recv()
            .expect("a command for the app")
            .command
    }

    #[test]
    fn an_elicitation_for_a_host_without_the_capability_is_not_supported() {
        let (mut g, mut agent) = gateway(json!({}));
        let Command::Call { call_id, .. } = next_command(&mut agent) else {
            panic!("the tool call goes to the app")
        };
        g.on_app_event(Event::Elicitation {
            id: "e1".into(),
            call_id,
            request: json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } }),
        });
        g.perform();
        assert_eq!(
            answer_to(&mut agent, "e1")["error"]["code"],
            "NOT_SUPPORTED"
        );
        assert!(
            !g.out.iter().any(|l| l.contains("elicitation/create")),
            "the host is not asked: {:?}",
            g.out
        );
    }

    #[test]
    fn an_elicitation_for_a_host_with_it_is_asked_and_its_answer_goes_back() {
        let (mut g, mut agent) = gateway(json!({ "elicitation": {} }));
        let Command::Call { call_id, .. } = next_command(&mut agent) else {
            panic!("the tool call goes to the app")
        };
        g.on_app_event(Event::Elicitation {
            id: "e1".into(),
            call_id,
            request: json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } }),
        });
        g.perform();
        let asked: Value = g
            .out
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["method"] == "elicitation/create")
            .expect("elicitation/create to the host");
        assert_eq!(asked["params"]["message"], "Sure?");
        let answer =
            json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "action": "decline" } });
        g.on_host_line(STDIO, &answer.to_string());
        g.perform();
        assert_eq!(
            answer_to(&mut agent, "e1"),
            json!({ "success": true, "data": { "confirmed": false } })
        );
    }

    #[test]
    fn an_elicitation_with_no_call_behind_it_is_declined_and_the_host_not_asked() {
        // A host that accepts elicitation, and an app (anything that joined) asking outside any call.
        let (mut g, mut agent) = gateway(json!({ "elicitation": {} }));
        let Command::Call { .. } = next_command(&mut agent) else {
            panic!("the tool call goes to the app")
        };
        g.on_app_event(Event::Elicitation {
            id: "e1".into(),
            call_id: None,
            request: json!({ "method": "elicitation/create",
                "params": { "message": "Re-enter your token", "requestedSchema": { "type": "object" } } }),
        });
        g.perform();
        assert_eq!(
            answer_to(&mut agent, "e1")["error"]["code"],
            "NOT_SUPPORTED"
        );
        assert!(
            !g.out.iter().any(|l| l.contains("Re-enter")),
            "the host is not asked: {:?}",
            g.out
        );
    }

    /// A gateway with an app joined and no host handshake (a modern host sends none).
    fn modern_gateway() -> (Gateway, crate::hub::Registration<Envelope>) {
        let (mut g, agent) = gateway(json!({}));
        g.out.clear();
        // A fresh host side: the helper's legacy handshake is not part of this host's story.
        g.hosts[0].conn = AppConnection::new(
            DialectKind::Mcp,
            Carrier::Stream,
            AppConfig::default(),
            json!({ "name": "abp-peer", "version": "0" }),
            "gw-",
        );
        g.calls.clear();
        (g, agent)
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
        let (mut g, mut agent) = modern_gateway();
        while agent.inbox.try_recv().is_ok() {}
        g.on_host_line(
            STDIO,
            &modern_request(1, "server/discover", json!({}), false),
        );
        g.on_host_line(STDIO, &modern_request(2, "tools/list", json!({}), false));
        g.perform();
        let out = answers(&g);
        assert_eq!(out[0]["result"]["resultType"], "complete");
        assert_eq!(
            out[0]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "abp-peer"
        );
        assert_eq!(out[1]["result"]["tools"][0]["name"], "ask");
        assert_eq!(out[1]["result"]["cacheScope"], "private");
        g.on_host_line(
            STDIO,
            &modern_request(
                3,
                "tools/call",
                json!({ "name": "ask", "arguments": {} }),
                false,
            ),
        );
        g.perform();
        let Command::Call { call_id, .. } = next_command(&mut agent) else {
            panic!("the tool call goes to the app")
        };
        g.on_app_event(Event::Settled {
            reference: Value::Null,
            call_id: call_id.unwrap(),
            response: json!({ "success": true, "data": { "ok": true } }),
        });
        g.perform();
        let done = answers(&g)
            .into_iter()
            .find(|m| m["id"] == 3)
            .expect("the call's result");
        assert_eq!(done["result"]["resultType"], "complete");
        assert_eq!(done["result"]["structuredContent"], json!({ "ok": true }));
    }

    #[test]
    fn a_task_over_stdio_survives_a_joined_host_leaving_and_ends_as_the_app_says() {
        let (mut g, mut agent) = modern_gateway();
        while agent.inbox.try_recv().is_ok() {}
        g.on_app_event(Event::Capabilities {
            payload: json!({ "capabilities": [{ "name": "render", "task": "required" }] }),
        });
        let with_tasks = |id: u64, method: &str, params: Value| {
            let mut m: Value = serde_json::from_str(&modern_request(id, method, params, false))
                .unwrap_or_default();
            m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({ "extensions": { mcp_tasks::EXTENSION: {} } });
            m.to_string()
        };
        // Without the extension a required task is -32021; with it, a task.
        let call = json!({ "name": "render", "arguments": {} });
        g.on_host_line(STDIO, &modern_request(1, "tools/call", call.clone(), false));
        g.on_host_line(STDIO, &with_tasks(2, "tools/call", call));
        g.perform();
        let out = answers(&g);
        assert_eq!(out[0]["error"]["code"], -32021, "{out:?}");
        assert_eq!(out[1]["result"]["resultType"], "task", "{out:?}");
        let task = out[1]["result"]["taskId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let Command::Call { call_id, .. } = next_command(&mut agent) else {
            panic!("the task's call goes to the app")
        };
        // A joined host (another copy) leaves: tasks are not its calls, nothing is cancelled.
        let (out_tx, _out_rx) = unbounded_channel();
        g.join(7, out_tx);
        g.leave(7);
        assert!(agent.inbox.try_recv().is_err(), "nothing cancelled");
        g.on_app_event(Event::Settled {
            reference: Value::Null,
            call_id: call_id.unwrap_or_default(),
            response: json!({ "success": true, "data": { "pages": 2 } }),
        });
        g.out.clear();
        g.on_host_line(
            STDIO,
            &with_tasks(3, "tasks/get", json!({ "taskId": task })),
        );
        g.perform();
        let got = &answers(&g)[0]["result"];
        assert_eq!(got["status"], "completed", "{got}");
        assert_eq!(got["result"]["structuredContent"], json!({ "pages": 2 }));
    }

    #[test]
    fn a_modern_hosts_call_that_asks_is_answered_by_the_retry() {
        let (mut g, mut agent) = modern_gateway();
        while agent.inbox.try_recv().is_ok() {}
        g.on_host_line(
            STDIO,
            &modern_request(
                3,
                "tools/call",
                json!({ "name": "ask", "arguments": {} }),
                true,
            ),
        );
        g.perform();
        let Command::Call { call_id, .. } = next_command(&mut agent) else {
            panic!("the tool call goes to the app")
        };
        g.on_app_event(Event::Elicitation {
            id: "e1".into(),
            call_id: call_id.clone(),
            request: json!({ "method": "elicitation/confirm", "params": { "message": "Sure?" } }),
        });
        g.perform();
        let asked = answers(&g)
            .into_iter()
            .find(|m| m["id"] == 3)
            .expect("an answer to the call");
        assert_eq!(asked["result"]["resultType"], "input_required");
        assert!(
            !answers(&g)
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
        g.on_host_line(STDIO, &retry.to_string());
        g.perform();
        assert_eq!(
            answer_to(&mut agent, "e1"),
            json!({ "success": true, "data": { "confirmed": true } })
        );
        g.on_app_event(Event::Settled {
            reference: Value::Null,
            call_id: call_id.unwrap(),
            response: json!({ "success": true, "data": 7 }),
        });
        g.perform();
        let done = answers(&g)
            .into_iter()
            .find(|m| m["id"] == 4)
            .expect("the retry's result");
        assert_eq!(done["result"]["resultType"], "complete");
    }

    #[test]
    fn stopping_tears_down_a_modern_hosts_listen() {
        let (mut g, _agent) = modern_gateway();
        let listen = modern_request(
            8,
            "subscriptions/listen",
            json!({ "notifications": { "toolsListChanged": true } }),
            false,
        );
        g.on_host_line(STDIO, &listen);
        g.perform();
        assert_eq!(
            answers(&g)[0]["method"],
            "notifications/subscriptions/acknowledged"
        );
        g.on_app_event(Event::Capabilities {
            payload: json!({ "capabilities": [{ "name": "other" }] }),
        });
        g.perform();
        let told = answers(&g).pop().unwrap();
        assert_eq!(told["method"], "notifications/tools/list_changed");
        assert_eq!(
            told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            8
        );
        g.goodbye();
        let bye = answers(&g).pop().unwrap();
        assert_eq!(bye["method"], "notifications/cancelled");
        assert_eq!(bye["params"]["requestId"], 8);
    }

    /// The host's answers so far, parsed.
    fn answers(g: &Gateway) -> Vec<Value> {
        g.out
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect()
    }

    #[test]
    fn a_call_that_finds_the_app_gone_and_one_it_never_answered_are_errors_at_once() {
        let (mut g, agent) = gateway(json!({}));
        // The app's agent is gone before the gateway heard so: the next call cannot reach it.
        drop(agent);
        let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": { "name": "ask", "arguments": {} } });
        g.on_host_line(STDIO, &call.to_string());
        g.perform();
        let lost = answers(&g)
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
        g.on_app_event(Event::Disconnected);
        g.perform();
        let left = answers(&g)
            .into_iter()
            .find(|m| m["id"] == 2)
            .expect("an answer for the call left behind");
        assert_eq!(left["result"]["isError"], true);
        assert!(g.calls.is_empty());
    }

    #[test]
    fn a_gateway_serves_at_most_max_hosts() {
        let (mut g, _agent) = gateway(json!({}));
        let mut outs = Vec::new();
        for host in 1..=MAX_HOSTS as u64 {
            let (out, rx) = unbounded_channel();
            g.join(host, out);
            outs.push(rx);
        }
        assert_eq!(
            g.hosts.len(),
            MAX_HOSTS,
            "stdio's and the joined ones, up to the cap"
        );
        assert!(
            outs.iter().take(MAX_HOSTS - 1).all(|rx| !rx.is_closed()),
            "the joined hosts stay"
        );
        assert!(
            outs.last().is_some_and(|rx| rx.is_closed()),
            "one more is closed"
        );
    }
}
