//! `abp-peer mcp --http --nats`: a host's request may reach any gateway process (MCP 2026-07-28 over HTTP keeps
//! no session, so a load balancer needs no affinity), but the app's WebSocket lives on one of them. A process
//! without the app passes each modern request to the gateway of the process that holds it, which answers as if the
//! request had come to its own `/mcp`; the answer's lines come back, and the request's stream is written here.
//! Everything a request leaves behind (a question's `requestState`, a task, a listen) therefore lives in one
//! gateway, the app's, whichever process the next request reaches.
//!
//! On the NATS server (see [`crate::cluster`]), per process: `abp.node.<node>.http` takes requests passed to this
//! gateway (`{"message", "params"}`: the request as the gateway reads it, with its stream key as id, and the
//! client's `Mcp-Param-*` headers, which are checked here against the app's tools), answered `ok`, `no-app` or
//! `params:<why>`; `abp.node.<node>.lines` takes the messages this gateway says for the requests this process
//! passed on, one per NATS message. A stream key names the process it belongs to (`http-<node>-<n>`). Each
//! payload is read once, where it arrives.
//!
//! A host that keeps a session with the gateway (a 2025-11-25 HTTP session, or the host on stdio) stays on the
//! process where it began, but while the app is on another one it is served by that one's gateway ([`Follow`]):
//! `abp.node.<node>.session` takes what the session says (`{"from", "session", "kind", "message"}`, `kind` one of
//! `joined`, `message`, `alive`, `left`), and `abp.node.<node>.session-lines` what that gateway says for it
//! (`{"session", "message"}`), which goes to the host's [`Followed`]. The process serving it lets a session go
//! when its own process has not said `alive` for [`crate::nats::GONE_AFTER`].
//!
//! A client closing its stream here cancels the request there (its `notifications/cancelled` follows it). Should
//! the app's process stop answering (killed, or NATS lost), the requests passed to it are answered here with an
//! error within [`crate::nats::GONE_AFTER`] and a heartbeat.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use abp_wasm::core::dialect::jsonrpc::notification;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::cluster::{Cluster, Holder};
use crate::control::signal;
use crate::edge::HostInput;
use crate::gateway::router::{shape_of, Shape};
use crate::gateway::spans::{end_answered, request_span};
use crate::gateway::{CLOSED_STREAM, HTTP};
use crate::hub::lock;
use crate::nats::{ALIVE_EVERY, GONE_AFTER};
use crate::params::{params_match, ParamHeaders};
use crate::switchboard::Switchboard;
use crate::telemetry::{self, cancel_attributes, KeyValue, Span, SpanKind};

/// What the process holding the app said to a request passed to it.
pub(crate) enum Passed {
    /// Its gateway has it: the answer comes back as lines.
    Taken,
    /// The `Mcp-Param-*` headers do not mirror the arguments (why).
    Refused(String),
    /// It no longer holds the app, or did not answer: serve the request here.
    NotThere,
}

/// A host of this process (a 2025-11-25 session, the host on stdio) while another process's gateway serves it.
pub(crate) trait Followed: Send + Sync {
    /// A message of the host went to that gateway.
    fn sent(&self, message: &Value);
    /// That gateway said `message` to the host.
    fn said(&self, message: Value);
    /// That gateway stopped answering: each request of the host it had is answered with an error saying `why`.
    fn abandon(&self, why: &str);
}

/// The HTTP endpoint's requests open on this process, as far as the requests passed to other processes go.
pub(crate) trait Requests: Send + Sync {
    fn is_open(&self, key: &str) -> bool;
    /// Request `key` will not be answered where it went: it is answered with an error saying `why`.
    fn abandon(&self, key: &str, why: &str);
}

/// A host of this process served elsewhere, as the NATS side holds it.
type Follower = Arc<dyn Followed>;

pub(crate) struct Remote {
    cluster: Arc<Cluster>,
    holder: Arc<Holder>,
    hub: Arc<Switchboard>,
    room: String,
    /// Requests passed to another process and not answered yet: stream key → that process.
    passed: Mutex<HashMap<String, String>>,
    /// 2025-11-25 sessions of this process served by another's gateway: session id → that process, the session.
    sessions_there: Mutex<HashMap<String, (String, Follower)>>,
    /// Sessions of other processes served by this gateway: (process, session id) → its host here, and when that
    /// process last said the session was still there.
    sessions_here: Mutex<HashMap<(String, String), (u64, Instant)>>,
    /// Requests other processes passed to this gateway and not answered yet: stream key → that process.
    taken: Mutex<HashMap<String, String>>,
    /// When each process that passed requests here last said it still waits for them (`asking`).
    asking: Mutex<HashMap<String, Instant>>,
    /// The spans of the requests passed to another process and not answered yet (with `--otlp`): stream key →
    /// this process's span of the request and of its hop across NATS.
    spans: Mutex<HashMap<String, Passing>>,
}

/// A request passed on, as spans: the host's request here (a server span), and its hop across NATS to the
/// gateway that answers it (a client span, the parent of that gateway's own span of the request).
struct Passing {
    request: Span,
    hop: Span,
}

impl Passing {
    /// The spans of passing `message` on, and the message as it goes: its `_meta` names the hop as the parent.
    fn start(message: &Value) -> Option<(Passing, Value)> {
        let (key, request) = request_span(false, message, None)?;
        let caller = message["params"]["_meta"]["tracestate"].as_str();
        let parent = request.context(caller);
        let hop = telemetry::start(
            format!("pass {}", message["method"].as_str().unwrap_or_default()),
            SpanKind::Client,
            parent.as_ref(),
            vec![
                KeyValue::new("jsonrpc.request.id", key),
                KeyValue::new("abp.hop", "nats"),
                KeyValue::new("messaging.system", "nats"),
            ],
            None,
        )?;
        let mut message = message.clone();
        if let (Some(onward), Some(meta)) = (
            hop.context(caller),
            message["params"]["_meta"].as_object_mut(),
        ) {
            meta.insert("traceparent".into(), Value::String(onward.traceparent));
        }
        Some((Passing { request, hop }, message))
    }

    /// The other process did not take it (it is answered, or served, here).
    fn not_taken(self) {
        for mut span in [self.hop, self.request] {
            span.event("not taken", Vec::new(), None);
            span.end(None);
        }
    }

    /// Its answer came back.
    fn answered(self, answer: &Value) {
        end_answered(self.hop, answer, None);
        end_answered(self.request, answer, None);
    }

    /// It ends with no answer: cancelled (by `signal`), or lost (`lost`: why).
    fn ended(self, signal: &str, reason: Option<&str>, lost: Option<&str>) {
        for mut span in [self.hop, self.request] {
            span.event("cancel", cancel_attributes(signal, reason), None);
            if let Some(why) = lost {
                span.fail("DISCONNECTED".into(), why.to_owned());
            }
            span.end(None);
        }
    }
}

impl Remote {
    /// Starts serving requests passed here, and reading the lines that come back for this process's own; `lines`
    /// is where the gateway's lines for [`HTTP`] go (the dispatcher), `streams` the requests open here.
    pub(crate) async fn start(
        cluster: Arc<Cluster>,
        hub: Arc<Switchboard>,
        room: String,
        param_headers: Arc<ParamHeaders>,
        lines: UnboundedSender<Value>,
        streams: Arc<dyn Requests>,
    ) -> Result<Arc<Remote>, String> {
        let holder = cluster.follow_holder(&room).await?;
        let mut requests = cluster.inbox("http").await?;
        let mut answers = cluster.inbox("lines").await?;
        let mut session_inputs = cluster.inbox("session").await?;
        let mut session_lines = cluster.inbox("session-lines").await?;
        let mut asking = cluster.inbox("asking").await?;
        let remote = Arc::new(Remote {
            cluster,
            holder,
            hub,
            room,
            passed: Mutex::new(HashMap::new()),
            sessions_there: Mutex::new(HashMap::new()),
            sessions_here: Mutex::new(HashMap::new()),
            taken: Mutex::new(HashMap::new()),
            asking: Mutex::new(HashMap::new()),
            spans: Mutex::new(HashMap::new()),
        });
        let r = remote.clone();
        tokio::spawn(async move {
            while let Some(m) = asking.next().await {
                if let Ok(from) = std::str::from_utf8(&m.payload) {
                    lock(&r.asking).insert(from.to_owned(), Instant::now());
                }
            }
        });
        let r = remote.clone();
        tokio::spawn(async move {
            while let Some(m) = session_inputs.next().await {
                r.serve_session(&m.payload);
            }
        });
        let r = remote.clone();
        tokio::spawn(async move {
            while let Some(m) = session_lines.next().await {
                r.session_line_back(&m.payload);
            }
        });
        let r = remote.clone();
        tokio::spawn(async move {
            while let Some(m) = requests.next().await {
                let answer = r.take(&m.payload, &param_headers);
                r.cluster.answer(&m, answer.as_bytes()).await;
            }
        });
        let r = remote.clone();
        tokio::spawn(async move {
            while let Some(m) = answers.next().await {
                // Read once, here: the dispatcher routes it by its id.
                if let Ok(message) = serde_json::from_slice::<Value>(&m.payload) {
                    r.answered(&message);
                    let _ = lines.send(message);
                }
            }
        });
        let r = remote.clone();
        tokio::spawn(async move {
            let mut watch = tokio::time::interval(ALIVE_EVERY);
            loop {
                watch.tick().await;
                r.answer_the_abandoned(&*streams);
                r.still_asking().await;
                r.cancel_the_orphans();
                r.watch_sessions().await;
            }
        });
        Ok(remote)
    }

    /// A message from the gateway a request was passed to: a response ends the request's spans.
    fn answered(&self, message: &Value) {
        if lock(&self.spans).is_empty() || shape_of(message) != Shape::Response {
            return;
        }
        let key = message["id"].as_str().unwrap_or_default();
        if let Some(spans) = lock(&self.spans).remove(key) {
            spans.answered(message);
        }
    }

    /// The other process holding the app, when this one does not.
    pub(crate) fn elsewhere(&self) -> Option<String> {
        if self.hub.has_agent(&self.room) {
            return None;
        }
        self.holder.elsewhere(self.cluster.node())
    }

    /// Passes the request `message` (its id already its stream key) to `node`'s gateway, with the client's
    /// `Mcp-Param-*` headers.
    pub(crate) async fn pass(
        &self,
        node: &str,
        key: &str,
        message: &Value,
        headers: &HeaderMap,
    ) -> Passed {
        let params: Vec<(&str, &str)> = headers
            .iter()
            .filter(|(name, _)| name.as_str().starts_with("mcp-param-"))
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .collect();
        let (spans, traced) = Passing::start(message).unzip();
        let message = traced.as_ref().unwrap_or(message);
        let payload = json!({ "message": message, "params": params }).to_string();
        let passed = match self.cluster.ask(node, "http", payload).await.as_deref() {
            Ok(b"ok") => {
                lock(&self.passed).insert(key.to_owned(), node.to_owned());
                Passed::Taken
            }
            Ok(answer) => match answer.strip_prefix(b"params:") {
                Some(why) => Passed::Refused(String::from_utf8_lossy(why).into_owned()),
                None => Passed::NotThere,
            },
            Err(_) => Passed::NotThere,
        };
        match (spans, &passed) {
            (Some(spans), Passed::Taken) => {
                lock(&self.spans).insert(key.to_owned(), spans);
            }
            (Some(spans), _) => spans.not_taken(),
            (None, _) => {}
        }
        passed
    }

    /// The client of the request `key` closed its stream: when it was passed on, its cancel follows it there
    /// (true); else it is this process's to cancel (false).
    pub(crate) fn cancel(&self, key: &str, notice: &Value) -> bool {
        let Some(node) = lock(&self.passed).remove(key) else {
            return false;
        };
        if let Some(spans) = lock(&self.spans).remove(key) {
            let reason = notice["params"]["reason"].as_str();
            let by = if reason == Some(CLOSED_STREAM) {
                signal::STREAM_CLOSED
            } else {
                signal::CANCELLED
            };
            spans.ended(by, reason, None);
        }
        let cluster = self.cluster.clone();
        let payload = json!({ "message": notice }).to_string();
        tokio::spawn(async move { cluster.tell(&node, "http", payload).await });
        true
    }

    /// A message of this gateway's for a stream that is not open here: to the process it belongs to, if its key
    /// names another one.
    pub(crate) async fn send_back(&self, key: &str, message: Value) {
        if let Some(node) = node_of(key).filter(|n| *n != self.cluster.node()) {
            if shape_of(&message) == Shape::Response {
                lock(&self.taken).remove(key);
            }
            self.cluster.tell(node, "lines", message.to_string()).await;
        }
    }

    /// Host `id` of this process moves to the gateway of `node` (where the app is): it is set up there with
    /// `setup`, and what that gateway says for it comes back to `follower`.
    async fn session_moved(&self, node: &str, id: &str, follower: Follower, setup: Vec<Value>) {
        lock(&self.sessions_there).insert(id.to_owned(), (node.to_owned(), follower));
        self.tell_session(node, id, "joined", None).await;
        for message in &setup {
            self.tell_session(node, id, "message", Some(message)).await;
        }
    }

    /// A message of session `id`, to the gateway of `node` serving it.
    async fn session_message(&self, node: &str, id: &str, message: &Value) {
        self.tell_session(node, id, "message", Some(message)).await;
    }

    /// Session `id` no longer uses the gateway of `node` (it ended, or moved).
    async fn session_left(&self, node: &str, id: &str) {
        lock(&self.sessions_there).remove(id);
        self.tell_session(node, id, "left", None).await;
    }

    async fn tell_session(&self, node: &str, id: &str, kind: &str, message: Option<&Value>) {
        let payload =
            json!({ "from": self.cluster.node(), "session": id, "kind": kind, "message": message });
        self.cluster
            .tell(node, "session", payload.to_string())
            .await;
    }

    /// What another process says for a session of its own that this gateway serves.
    fn serve_session(&self, payload: &[u8]) {
        let Ok(mut said) = serde_json::from_slice::<Value>(payload) else {
            return;
        };
        let message = said.get_mut("message").map(Value::take);
        let (Some(from), Some(id), Some(kind)) = (
            said.get("from").and_then(Value::as_str),
            said.get("session").and_then(Value::as_str),
            said.get("kind").and_then(Value::as_str),
        ) else {
            return;
        };
        let key = (from.to_owned(), id.to_owned());
        let mut here = lock(&self.sessions_here);
        match kind {
            "joined" => {
                let host = self.hub.next_id() + 1;
                let (out, mut lines) = unbounded_channel::<Value>();
                if self
                    .hub
                    .to_mcp_gateway(&self.room, HostInput::Joined { host, out })
                    .is_err()
                {
                    return;
                }
                if let Some((old, _)) = here.insert(key, (host, Instant::now())) {
                    let _ = self
                        .hub
                        .to_mcp_gateway(&self.room, HostInput::Left { host: old });
                }
                let (cluster, from, id) = (self.cluster.clone(), from.to_owned(), id.to_owned());
                tokio::spawn(async move {
                    while let Some(message) = lines.recv().await {
                        let back = json!({ "session": id, "message": message }).to_string();
                        cluster.tell(&from, "session-lines", back).await;
                    }
                });
            }
            "message" => {
                let (Some((host, heard)), Some(message)) = (here.get_mut(&key), message) else {
                    return;
                };
                *heard = Instant::now();
                let input = HostInput::Message {
                    host: *host,
                    message,
                };
                let _ = self.hub.to_mcp_gateway(&self.room, input);
            }
            "alive" => {
                if let Some((_, heard)) = here.get_mut(&key) {
                    *heard = Instant::now();
                }
            }
            "left" => {
                if let Some((host, _)) = here.remove(&key) {
                    let _ = self
                        .hub
                        .to_mcp_gateway(&self.room, HostInput::Left { host });
                }
            }
            // A kind this version does not know (another version of abp-peer on the same NATS server).
            _ => {}
        }
    }

    /// What the gateway serving a session of this process said for it.
    fn session_line_back(&self, payload: &[u8]) {
        let Ok(mut back) = serde_json::from_slice::<Value>(payload) else {
            return;
        };
        let (Some(message), Some(id)) = (
            back.get_mut("message").map(Value::take),
            back.get("session").and_then(Value::as_str),
        ) else {
            return;
        };
        let follower = lock(&self.sessions_there).get(id).map(|(_, f)| f.clone());
        if let Some(follower) = follower {
            follower.said(message);
        }
    }

    /// Sessions served elsewhere: the processes serving them hear that they are still there, and those whose
    /// process stopped answering have their waiting requests answered with an error. Sessions served here whose
    /// process has gone silent are let go.
    async fn watch_sessions(&self) {
        let there: Vec<(String, String)> = lock(&self.sessions_there)
            .iter()
            .map(|(id, (node, _))| (id.clone(), node.clone()))
            .collect();
        for (id, node) in there {
            if self.holder.holds(&node) {
                self.tell_session(&node, &id, "alive", None).await;
            } else if let Some((_, follower)) = lock(&self.sessions_there).remove(&id) {
                follower.abandon("The process serving this session's app stopped answering before this request was answered");
            }
        }
        lock(&self.sessions_here).retain(|_, (host, heard)| {
            let alive = heard.elapsed() <= GONE_AFTER;
            if !alive {
                let _ = self
                    .hub
                    .to_mcp_gateway(&self.room, HostInput::Left { host: *host });
            }
            alive
        });
    }

    /// A request another process passed here: to this gateway, if the app is here and its headers are right.
    fn take(&self, payload: &[u8], param_headers: &ParamHeaders) -> String {
        let Ok(mut passed) = serde_json::from_slice::<Value>(payload) else {
            return "bad".into();
        };
        let Some(message) = passed.get_mut("message").map(Value::take) else {
            return "bad".into();
        };
        if !self.hub.has_agent(&self.room) {
            return "no-app".into();
        }
        if let Some(params) = passed.get("params").and_then(Value::as_array) {
            let mut headers = HeaderMap::new();
            for pair in params {
                let (Some(name), Some(value)) = (
                    pair.get(0).and_then(Value::as_str),
                    pair.get(1).and_then(Value::as_str),
                ) else {
                    continue;
                };
                if let (Ok(name), Ok(value)) =
                    (HeaderName::try_from(name), HeaderValue::from_str(value))
                {
                    headers.append(name, value);
                }
            }
            let method = message.get("method").and_then(Value::as_str).unwrap_or("");
            if let Err(why) = params_match(&headers, method, &message, param_headers) {
                return format!("params:{why}");
            }
        }
        let key = match (shape_of(&message), message.get("id")) {
            (Shape::Request, Some(Value::String(key))) => Some(key.clone()),
            _ => None,
        };
        let input = HostInput::Message {
            host: HTTP,
            message,
        };
        match self.hub.to_mcp_gateway(&self.room, input) {
            Ok(()) => {
                if let Some(key) = key {
                    self.taken_from(key);
                }
                "ok".into()
            }
            Err(_) => "no-app".into(),
        }
    }

    /// Remembers a request passed here under the process whose stream key it carries.
    fn taken_from(&self, key: String) {
        if let Some(node) = node_of(&key).filter(|n| *n != self.cluster.node()) {
            let node = node.to_owned();
            lock(&self.asking).insert(node.clone(), Instant::now());
            lock(&self.taken).insert(key, node);
        }
    }

    /// Tells each process this one passed requests to that their clients still wait.
    async fn still_asking(&self) {
        let nodes: HashSet<String> = lock(&self.passed).values().cloned().collect();
        for node in nodes {
            self.cluster
                .tell(&node, "asking", self.cluster.node().to_owned())
                .await;
        }
    }

    /// Requests passed here by a process that stopped saying it waits for them (killed, or NATS is gone): nobody
    /// is left to read their answers, so they are cancelled, which aborts their calls in the app.
    fn cancel_the_orphans(&self) {
        let mut asking = lock(&self.asking);
        asking.retain(|_, at| at.elapsed() <= GONE_AFTER);
        let mut orphans = Vec::new();
        lock(&self.taken).retain(|key, node| {
            let alive = asking.contains_key(node.as_str());
            if !alive {
                orphans.push(key.clone());
            }
            alive
        });
        drop(asking);
        for key in orphans {
            let notice = notification(
                "notifications/cancelled",
                Some(json!({ "requestId": key,
                    "reason": "the process this request came through is gone" })),
            );
            let input = HostInput::Message {
                host: HTTP,
                message: notice,
            };
            let _ = self.hub.to_mcp_gateway(&self.room, input);
        }
    }

    /// Requests passed to a process that has stopped answering, or whose app went to another one, are answered
    /// with an error; those whose stream closed are forgotten.
    fn answer_the_abandoned(&self, streams: &dyn Requests) {
        lock(&self.passed).retain(|key, node| {
            if !streams.is_open(key) {
                return false;
            }
            if self.holder.holds(node) {
                return true;
            }
            let why =
                "The process holding the app stopped answering before this request was answered";
            if let Some(spans) = lock(&self.spans).remove(key) {
                spans.ended(signal::PROCESS_GONE, None, Some(why));
            }
            streams.abandon(key, why);
            false
        });
    }
}

/// The process a stream key (`http-<node>-<n>`) belongs to.
fn node_of(key: &str) -> Option<&str> {
    key.strip_prefix("http-")
        .and_then(|rest| rest.split_once('-'))
        .map(|(node, _)| node)
}

/// The id a replayed `initialize` goes with: its answer matches no request of the host, and is dropped.
pub(crate) const REPLAYED: &str = "abp-replayed-initialize";

/// Whether `message` is the gateway's answer to a replayed `initialize` (not the host's to see).
pub(crate) fn is_replayed_answer(message: &Value) -> bool {
    shape_of(message) == Shape::Response && message["id"] == REPLAYED
}

/// A host that keeps a session with the gateway (a 2025-11-25 HTTP session, or the host on stdio) as it follows
/// the app across processes: the process whose gateway serves it while the app is on another one, and what set
/// it up (`initialize`, `notifications/initialized`), told again to each gateway it moves to.
#[derive(Default)]
pub(crate) struct Follow {
    at: Option<String>,
    setup: Vec<Value>,
    /// This process's gateway has been told `setup`.
    set_up_here: bool,
}

impl Follow {
    /// Host `id`'s `message`: sent to the gateway of the process holding the app, when that is another one (the
    /// host moves there first); else the messages for this process's gateway, in order (what set the host up
    /// first, if that gateway has not seen it).
    pub(crate) async fn next(
        &mut self,
        remote: &Remote,
        id: &str,
        follower: &Follower,
        message: Value,
    ) -> Vec<Value> {
        let mut here = Vec::new();
        let there = remote.elsewhere();
        if there != self.at {
            if let Some(old) = self.at.take() {
                remote.session_left(&old, id).await;
            }
            let setup = self.replayed_setup();
            match &there {
                Some(node) => {
                    remote
                        .session_moved(node, id, follower.clone(), setup)
                        .await
                }
                None if !self.set_up_here => {
                    self.set_up_here = true;
                    here.extend(setup);
                }
                None => {}
            }
            self.at = there;
        }
        let is_setup = matches!(
            message.get("method").and_then(Value::as_str),
            Some("initialize" | "notifications/initialized")
        );
        if is_setup {
            self.setup.push(message.clone());
        }
        match &self.at {
            Some(node) => {
                follower.sent(&message);
                remote.session_message(node, id, &message).await;
            }
            None => {
                self.set_up_here |= is_setup;
                here.push(message);
            }
        }
        here
    }

    /// Host `id` has ended: the gateway serving it elsewhere lets it go.
    pub(crate) async fn end(&mut self, remote: &Remote, id: &str) {
        if let Some(node) = self.at.take() {
            remote.session_left(&node, id).await;
        }
    }

    /// What set the host up, for a gateway it moves to (the `initialize` under an id of its own).
    fn replayed_setup(&self) -> Vec<Value> {
        self.setup
            .iter()
            .map(|message| {
                let mut message = message.clone();
                if message.get("id").is_some() {
                    message["id"] = json!(REPLAYED);
                }
                message
            })
            .collect()
    }
}
