//! A browser app's stand-in for the gateway tests: this crate's app core with the ABP codec, over a WebSocket to
//! `/agent`, serving five capabilities and reporting what it sees.
#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

use abp_wasm::core::app::ElicitEnd;
use abp_wasm::core::dialect::{Carrier, DialectKind};
use abp_wasm::core::{AbpError, AppConfig, AppConnection, AppOutput, ErrorCode, Outcome, Registry};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// How long any one thing may take before the test fails (the gateway's tighter bounds are checked apart).
pub const WAIT: Duration = Duration::from_secs(10);

/// `fut`, or a failure naming `what` once `limit` has passed.
pub async fn within<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: nothing within {limit:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------------
// The app: this crate's app core with the ABP codec, over a WebSocket to /agent.

/// The app's capabilities: name, description.
pub const TOOLS: [(&str, &str); 5] = [
    ("echo", "Returns its params"),
    ("fail", "Always refused: PERMISSION_DENIED"),
    ("steps", "Reports three steps of progress, then returns"),
    (
        "slow",
        "Runs until it is cancelled (with { progress: true }, after one progress step)",
    ),
    (
        "job",
        "Finishes after { ms } unless cancelled first, or once its question { ask } is answered (an MCP task when \
         the host takes one)",
    ),
];

/// `echo` takes anything; three of its parameters are mirrored into HTTP headers (`x-mcp-header`), one of them
/// nested, for the HTTP gateway's `Mcp-Param-*` checks.
pub fn echo_schema() -> Value {
    json!({ "type": "object", "properties": {
        "region": { "type": "string", "x-mcp-header": "Region" },
        "count": { "type": "integer", "x-mcp-header": "Count" },
        "where": { "type": "object", "properties": {
            "flag": { "type": "boolean", "x-mcp-header": "Flag" } } },
        "list": { "type": "array", "items": { "type": "string", "x-mcp-header": "Ignored" } } } })
}

#[derive(Debug)]
pub enum AppEvent {
    Joined,
    Started {
        call_id: String,
        capability: String,
    },
    /// The handler's signal aborted.
    Aborted {
        call_id: String,
        reason: Option<String>,
        at: Instant,
    },
    /// A `job` handler finished (its result went to the agent).
    Finished {
        call_id: String,
    },
    /// The gateway closed the app's socket.
    Closed,
}

pub struct App {
    events: mpsc::UnboundedReceiver<AppEvent>,
    leave: Option<oneshot::Sender<()>>,
}

impl App {
    /// Connects to `url/agent` and serves it on a task until told to leave or the socket closes.
    pub async fn join(url: &str) -> App {
        let (ws, _) = within(
            WAIT,
            "the app's WebSocket",
            tokio_tungstenite::connect_async(format!("{url}/agent")),
        )
        .await
        .expect("the app connects to /agent");
        App::serve(ws)
    }

    /// Serves an app on `ws`, on a task.
    pub fn serve(
        ws: tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
    ) -> App {
        let (events_tx, events) = mpsc::unbounded_channel();
        let (leave_tx, leave) = oneshot::channel();
        tokio::spawn(serve_app(ws, NativeApp::new(events_tx), leave));
        App {
            events,
            leave: Some(leave_tx),
        }
    }

    pub async fn next(&mut self, what: &str) -> AppEvent {
        within(WAIT, what, self.events.recv())
            .await
            .unwrap_or_else(|| panic!("{what}: the app stopped"))
    }

    /// The next call the app started, as (ABP call id, capability).
    pub async fn started(&mut self) -> (String, String) {
        match self.next("a call started in the app").await {
            AppEvent::Started {
                call_id,
                capability,
            } => (call_id, capability),
            other => panic!("expected a call to start, got {other:?}"),
        }
    }

    /// Waits for a call of `capability` to start (the starts of calls made before are passed over): its call id.
    pub async fn started_of(&mut self, capability: &str) -> String {
        loop {
            if let AppEvent::Started {
                call_id,
                capability: c,
            } = self.next("a call to start").await
            {
                if c == capability {
                    return call_id;
                }
            }
        }
    }

    /// Waits for the handler of `call_id` to see its signal abort: how long after `since` it did.
    pub async fn aborted_after(&mut self, call_id: &str, since: Instant) -> Duration {
        match self.next("the handler's abort").await {
            AppEvent::Aborted {
                call_id: aborted,
                at,
                ..
            } => {
                assert_eq!(aborted, call_id);
                at.duration_since(since)
            }
            other => panic!("expected the abort, got {other:?}"),
        }
    }

    /// Closes the app's socket (as a page that goes away).
    pub fn leave(&mut self) {
        if let Some(leave) = self.leave.take() {
            let _ = leave.send(());
        }
    }
}

struct NativeApp {
    conn: AppConnection<Value>,
    registry: Registry<Value>,
    start: Instant,
    events: mpsc::UnboundedSender<AppEvent>,
    /// `job` handlers running: when each finishes, and its call.
    jobs: Vec<(Instant, String)>,
    /// `job` handlers waiting on their question: the elicitation's id, and the call.
    asking: Vec<(String, String)>,
}

impl NativeApp {
    fn new(events: mpsc::UnboundedSender<AppEvent>) -> NativeApp {
        let mut registry = Registry::default();
        for (name, description) in TOOLS {
            let mut descriptor = json!({ "name": name, "description": description });
            if name == "echo" {
                descriptor["inputSchema"] = echo_schema();
            }
            if name == "job" {
                descriptor["task"] = json!("optional");
                descriptor["inputSchema"] = json!({ "type": "object", "properties": {
                    "ms": { "type": "integer" }, "ask": { "type": "string" } } });
            }
            registry
                .register(name, Some(descriptor))
                .expect("a valid descriptor");
        }
        let config = AppConfig {
            // Every update goes out as it is made (the test counts them).
            progress_interval: 0.0,
            ..AppConfig::default()
        };
        let info = json!({ "id": "test.rmcp", "name": "rmcp test app", "version": "1" });
        NativeApp {
            conn: AppConnection::new(DialectKind::Abp, Carrier::Stream, config, info, "app-"),
            registry,
            start: Instant::now(),
            events,
            jobs: Vec::new(),
            asking: Vec::new(),
        }
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }

    /// One frame from the agent (the gateway); what is not ABP is ignored.
    fn receive(&mut self, text: &str) {
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            let now = self.now();
            let _ = self.conn.receive(&value, now, &self.registry);
        }
    }

    /// Everything the core asks for: handlers run, and the frames to send.
    fn perform(&mut self) -> Vec<String> {
        let mut frames = Vec::new();
        loop {
            let registry = &self.registry;
            let list = || registry.list();
            let Some(output) = self.conn.poll(&unix_ms, &list) else {
                break;
            };
            match output {
                AppOutput::Transmit(t) => frames.push(t.message.to_string()),
                AppOutput::Start {
                    call_id,
                    capability,
                    params,
                    ..
                } => {
                    let _ = self.events.send(AppEvent::Started {
                        call_id: call_id.clone(),
                        capability: capability.clone(),
                    });
                    self.run(&call_id, &capability, params);
                }
                AppOutput::Abort { call_id, reason } => {
                    // A job's handler stops.
                    self.jobs.retain(|(_, c)| *c != call_id);
                    let at = Instant::now();
                    let _ = self.events.send(AppEvent::Aborted {
                        call_id,
                        reason,
                        at,
                    });
                }
                AppOutput::SessionOpened { .. } => {
                    let _ = self.events.send(AppEvent::Joined);
                }
                AppOutput::ElicitDone {
                    id,
                    end: ElicitEnd::Answer(answer),
                } => self.answered(&id, answer),
                _ => {}
            }
        }
        frames
    }

    /// The jobs whose time has come finish.
    fn finish_jobs(&mut self) {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.jobs)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.jobs = later;
        for (_, call_id) in due {
            let data = json!({ "done": true });
            let at = self.now();
            self.conn
                .complete(&call_id, Outcome::Success { data }, None, at);
            let _ = self.events.send(AppEvent::Finished { call_id });
        }
    }

    /// The handlers, run to completion at once (but `slow`, which waits for its abort, and `job`, which
    /// finishes after its `ms`).
    fn run(&mut self, call_id: &str, capability: &str, params: Value) {
        let now = self.now();
        let outcome = match capability {
            "echo" => Outcome::Success { data: params },
            "fail" => Outcome::Failure(AbpError::new(
                ErrorCode::PermissionDenied,
                "The user said no",
            )),
            "steps" => {
                for step in 1..=3 {
                    let info = json!({ "progress": step, "total": 3, "message": format!("step {step} of 3") });
                    self.conn.progress(call_id, info, now);
                }
                Outcome::Success {
                    data: json!({ "steps": 3 }),
                }
            }
            // `job` with `{ ask }` asks its question first, and finishes once it is answered.
            "job" if params.get("ask").is_some_and(Value::is_string) => {
                let question = json!({ "method": "elicitation/create", "key": "answer", "params": {
                    "message": params["ask"],
                    "requestedSchema": { "type": "object",
                        "properties": { "answer": { "type": "string" } }, "required": ["answer"] } } });
                match self.conn.elicit(Some(call_id), question, now) {
                    Ok(id) => {
                        self.asking.push((id, call_id.to_owned()));
                        return;
                    }
                    Err(error) => Outcome::Failure(error),
                }
            }
            "job" => {
                let ms = params.get("ms").and_then(Value::as_u64).unwrap_or(0);
                let due = Instant::now() + Duration::from_millis(ms);
                self.jobs.push((due, call_id.to_owned()));
                return;
            }
            // `slow` reports one step first when asked to (`{ "progress": true }`), then runs on.
            "slow" if params.get("progress") == Some(&Value::Bool(true)) => {
                let info = json!({ "progress": 1, "message": "started" });
                self.conn.progress(call_id, info, now);
                return;
            }
            _ => return,
        };
        self.conn.complete(call_id, outcome, None, now);
    }

    /// A `job`'s question was answered: it finishes with the answer as its handler got it.
    fn answered(&mut self, elicit_id: &str, answer: Value) {
        let Some(at) = self.asking.iter().position(|(id, _)| id == elicit_id) else {
            return;
        };
        let (_, call_id) = self.asking.remove(at);
        let data = json!({ "done": true, "answered": answer });
        let now = self.now();
        self.conn
            .complete(&call_id, Outcome::Success { data }, None, now);
        let _ = self.events.send(AppEvent::Finished { call_id });
    }
}

async fn serve_app(
    mut ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    mut app: NativeApp,
    mut leave: oneshot::Receiver<()>,
) {
    loop {
        for frame in app.perform() {
            if ws.send(Message::text(frame)).await.is_err() {
                let _ = app.events.send(AppEvent::Closed);
                return;
            }
        }
        let due = app
            .conn
            .poll_timeout()
            .map(|t| {
                let ms = (t - app.now()).max(0.0).ceil();
                tokio::time::Instant::now() + Duration::from_millis(ms as u64)
            })
            .into_iter()
            .chain(
                app.jobs
                    .iter()
                    .map(|(at, _)| tokio::time::Instant::from_std(*at)),
            )
            .min();
        tokio::select! {
            frame = ws.next() => match frame {
                Some(Ok(Message::Text(text))) => app.receive(text.as_str()),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    let _ = app.events.send(AppEvent::Closed);
                    return;
                }
                Some(Ok(_)) => {}
            },
            () = sleep_until(due) => {
                let now = app.now();
                app.conn.handle_timeout(now);
                app.finish_jobs();
            }
            _ = &mut leave => {
                // The page goes: the socket closes with calls still running.
                let _ = ws.close(None).await;
                return;
            }
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}
