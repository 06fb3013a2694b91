//! `abp-peer mcp --http HOST:PORT`: the gateway over MCP's Streamable HTTP transport (revision 2026-07-28), at
//! `/mcp`, for hosts that reach MCP servers by URL.
//!
//! Every request is a POST of one JSON-RPC message. A request is answered as JSON, or, for `tools/call` and
//! `subscriptions/listen` when the client accepts it and the gateway has something to say before the response,
//! as an SSE stream scoped to it: its progress, then its response (a listen's stream stays open with its change
//! notifications). A notification is 202. Closing a request's stream, or dropping its connection before the
//! answer, cancels it: the app's `ctx.signal` aborts, and nothing more is written for it. So does a POSTed
//! `notifications/cancelled` (which bridges for stdio hosts send) naming exactly one request in flight from the
//! same sender: that request's stream then ends with no response.
//!
//! All HTTP requests share one MCP connection of the gateway (one host, [`HTTP`]), so a call that asked the user
//! something (an `InputRequiredResult`) is resumed by its retry, which comes as another POST. Each request's id
//! (and its progress token) is replaced by one of this process's own on the way in and given back on the way out,
//! so two clients that both number their requests from 1 never meet.
//!
//! A 2025-11-25 client (no version in `_meta`) opens a session with `initialize`, answered with an
//! `Mcp-Session-Id`; the session is a host of its own in the gateway, as on stdio. Its requests are answered on
//! their POST, its notifications and answers are 202, a GET opens the stream for what the server says unasked
//! (`list_changed`, and `elicitation/create` when no request stream is open), and DELETE ends it (its calls are
//! cancelled in the app). In that era a closed stream is not a cancel: the client POSTs `notifications/cancelled`,
//! and the cancelled request's stream, if still open, ends with no response.
//! With `--nats` a session follows the app: while the app is on another process, the session's lines go to that
//! process's gateway (see [`crate::mcp_remote`]).
//!
//! Checked on every request, before its body is read: `Host` (403), `Origin` (403; the gateway's own
//! `http://127.0.0.1:PORT` and `http://localhost:PORT` besides `--allow-origin`), and the launch token as
//! `Authorization: Bearer` (401) unless `--http-no-auth`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abp_wasm::core::dialect::jsonrpc::{error_to, notification};
use abp_wasm::core::dialect::mcp::META_VERSION;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::edge::HostInput;
use crate::gateway::router::{key_of, shape_of, Routed, Router, Shape, Stream};
use crate::gateway::HTTP;
use crate::hub::lock;
use crate::mcp_remote::{Follow, Followed, Passed, Remote, Requests};
use crate::params::{decode_header, params_match, ParamHeaders};
use crate::security::Guard;
use crate::switchboard::Switchboard;

/// The largest request body read.
const MAX_BODY: usize = 4 * 1024 * 1024;
/// How long a request's body may take to arrive once its head has (the head has its own limit, in the server).
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// A request's whole body: at most [`MAX_BODY`], arrived within [`BODY_TIMEOUT`]; else the answer that says which.
async fn read_body(body: Body) -> Result<Bytes, Response> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            Value::Null,
            -32600,
            "the request body is over 4 MiB, or could not be read",
        )),
        Err(_) => {
            eprintln!("abp-peer mcp: 408: a request body did not arrive within 10 s");
            Err(rpc_error(
                StatusCode::REQUEST_TIMEOUT,
                Value::Null,
                -32600,
                "the request body did not arrive within 10 s",
            ))
        }
    }
}

/// How often an SSE stream with nothing to say gets a `:` comment, so that a proxy or a client's idle timeout
/// does not close it, and so that a client that went away is noticed (its write fails).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The version header's name.
const VERSION_HEADER: &str = "MCP-Protocol-Version";

/// What a request's stream is given: the gateway's messages for it, or word that a cancel notice took its
/// request (its answer then ends there, with no response).
pub(crate) enum Said {
    Message(Value),
    EndedByNotice,
}

/// A stream of one request (or a session's GET stream), written by its HTTP response.
type Lines = UnboundedSender<Said>;

impl Stream for Lines {
    fn is_open(&self) -> bool {
        !self.is_closed()
    }
}

/// Hands `message` to the stream it was routed to.
fn deliver(stream: &Lines, message: Value) {
    let _ = stream.send(Said::Message(message));
}

/// A 2025-11-25 session: its host in the gateway, and the streams of its requests and its GET stream (a
/// [`Router`] that spills what names no request to the GET stream, else to the newest request's).
pub(crate) struct Session {
    host: u64,
    /// Its `Mcp-Session-Id`.
    pub(crate) id: String,
    router: Mutex<Router<Lines>>,
    /// With `--nats`: where it is served while the app is on another process (a session follows the app). Held
    /// while an input goes, so that a session's inputs keep their order.
    follow: tokio::sync::Mutex<Follow>,
    /// When its host last sent a request (or anything else) to it.
    used: Mutex<std::time::Instant>,
}

/// The sessions a gateway keeps at once; one more `initialize` is refused (503) until one ends.
const MAX_SESSIONS: usize = 32;

impl Session {
    /// Its host sent something.
    fn touch(&self) {
        *lock(&self.used) = std::time::Instant::now();
    }

    /// Unused for `idle`: no request for that long, none of its requests' streams open, and no GET stream.
    fn idle_for(&self, idle: Duration) -> bool {
        lock(&self.used).elapsed() >= idle && lock(&self.router).is_idle()
    }
}

/// A session's host, when another process's gateway serves it, is answered there: its requests are noted, and
/// what that gateway says is routed as this process's gateway's would be.
impl Followed for Session {
    fn sent(&self, _message: &Value) {
        // Its request's stream was opened when it came.
    }

    fn said(&self, message: Value) {
        lock(&self.router).route(message, deliver);
    }

    fn abandon(&self, why: &str) {
        for (stream, error) in lock(&self.router).abandon(why) {
            deliver(&stream, error);
        }
    }
}

/// A message of session `session` to the gateway serving it: this process's, or with `--nats`, when the app is
/// on another process, that process's (the session moves there first, set up as it was here). False when the
/// gateway is stopping.
async fn to_session_host(e: &Endpoint, session: &Arc<Session>, message: Value) -> bool {
    let messages = match &e.remote {
        Some(remote) => {
            let follower: Arc<dyn Followed> = session.clone();
            let mut follow = session.follow.lock().await;
            follow.next(remote, &session.id, &follower, message).await
        }
        _ => vec![message],
    };
    messages.into_iter().all(|message| {
        let host = session.host;
        let input = HostInput::Message { host, message };
        e.hub.to_mcp_gateway(&e.room, input).is_ok()
    })
}

/// Routes what the gateway says to a session until the gateway lets it go, then forgets it. A session left
/// unused for [`Endpoint::session_idle`] is ended here, as a DELETE would end it.
async fn run_session(
    mut said: UnboundedReceiver<Value>,
    session: Arc<Session>,
    id: String,
    endpoint: Arc<Endpoint>,
) {
    let mut check =
        tokio::time::interval((endpoint.session_idle / 4).max(Duration::from_millis(250)));
    loop {
        tokio::select! {
            message = said.recv() => match message {
                Some(message) => {
                    lock(&session.router).route(message, deliver);
                }
                None => break,
            },
            _ = check.tick() => {
                if session.idle_for(endpoint.session_idle) {
                    eprintln!(
                        "abp-peer mcp: ended a 2025-11-25 session unused for {} s",
                        endpoint.session_idle.as_secs()
                    );
                    end_session(&endpoint, &id, &session).await;
                    break;
                }
            }
        }
    }
    lock(&endpoint.sessions).remove(&id);
}

/// Ends session `id`: forgotten here, its calls cancelled in the app, and (with `--nats`) let go where it is served.
async fn end_session(e: &Endpoint, id: &str, session: &Session) {
    lock(&e.sessions).remove(id);
    let _ = e
        .hub
        .to_mcp_gateway(&e.room, HostInput::Left { host: session.host });
    if let Some(remote) = &e.remote {
        session.follow.lock().await.end(remote, id).await;
    }
}

/// The 2026-07-28 requests in flight, by the id the gateway knows them by (`http-<n>`, or with `--nats`
/// `http-<node>-<n>`, which names this process among those sharing the app): a [`Router`] shared by the request
/// tasks and the dispatcher, which drops what names no request (a server sends no requests of its own in this
/// revision).
pub(crate) struct Streams {
    prefix: String,
    next: AtomicU64,
    router: Mutex<Router<Lines>>,
}

/// A stream key as the router knows it (the JSON text of the id the gateway sees).
fn known(key: &str) -> String {
    key_of(&Value::String(key.to_owned()))
}

impl Streams {
    /// `node`: this process's name with `--nats`.
    pub(crate) fn new(node: Option<&str>) -> Streams {
        Streams {
            prefix: match node {
                Some(node) => format!("http-{node}-"),
                None => "http-".to_owned(),
            },
            next: AtomicU64::new(0),
            router: Mutex::new(Router::new(false)),
        }
    }

    /// A request of the client `principal` (which called it `id`, and its progress token `token`) whose messages
    /// go to `stream`: the key the gateway knows it by, which is its id there (and its progress token's).
    fn open(&self, id: Value, token: Option<Value>, principal: String, stream: Lines) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let key = format!("{}{n}", self.prefix);
        let named = Value::String(key.clone());
        let token = token.map(|written| (named.clone(), written));
        lock(&self.router).open(key_of(&named), id, token, principal, stream);
        key
    }

    /// Forgets request `key`; whether it was open.
    fn take(&self, key: &str) -> bool {
        lock(&self.router).take(&known(key)).is_some()
    }

    /// The request in flight that `principal` calls `id`, taken, and its stream told to end with no response;
    /// none when no request or more than one answers to that id (a cancel notice must name one request).
    fn take_named(&self, principal: &str, id: &Value) -> Option<String> {
        let (key, stream) = lock(&self.router).take_named(principal, id)?;
        let _ = stream.send(Said::EndedByNotice);
        serde_json::from_str(&key).ok()
    }
}

/// The requests open here, as the NATS side sees them.
impl Requests for Streams {
    fn is_open(&self, key: &str) -> bool {
        lock(&self.router).is_open(&known(key))
    }

    fn abandon(&self, key: &str, why: &str) {
        if let Some((stream, error)) = lock(&self.router).abandon_one(&known(key), why) {
            deliver(&stream, error);
        }
    }
}

/// The gateway's messages for [`HTTP`] → the streams they belong to (see [`Router::route`]). With `--nats`, a
/// message for a stream another process opened (its request was passed here) goes back to that process.
pub(crate) async fn dispatch(
    mut messages: UnboundedReceiver<Value>,
    streams: Arc<Streams>,
    remote: Option<Arc<Remote>>,
) {
    while let Some(message) = messages.recv().await {
        let routed = lock(&streams.router).route(message, deliver);
        if let (Routed::Unknown(Value::String(key), message), Some(remote)) = (routed, &remote) {
            remote.send_back(&key, message).await;
        }
    }
}

pub(crate) struct Endpoint {
    pub(crate) guard: Guard,
    pub(crate) auth: bool,
    pub(crate) hub: Arc<Switchboard>,
    pub(crate) room: String,
    pub(crate) streams: Arc<Streams>,
    pub(crate) sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The requests open on `/mcp`.
    pub(crate) open: Mutex<Open>,
    /// How long a 2025-11-25 session may go unused (no request, no open stream) before it is ended.
    pub(crate) session_idle: Duration,
    /// The app's tools' `x-mcp-header` parameters, kept by the gateway.
    pub(crate) param_headers: Arc<ParamHeaders>,
    /// With `--nats`: the gateway of the process holding the app, when another one does.
    pub(crate) remote: Option<Arc<Remote>>,
}

/// Binds `listen` (a non-loopback address only with `allow_wide`) and serves `/mcp` there until the process ends.
pub(crate) async fn bind(listen: &str, allow_wide: bool) -> Result<TcpListener, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(listen)
        .await
        .map_err(|e| format!("--http {listen}: {e}"))?
        .collect();
    if addrs.iter().any(|a| !a.ip().is_loopback()) && !allow_wide {
        return Err(format!(
            "refusing --http {listen}: not a loopback address, so other machines could connect. Pass \
             --allow-non-loopback to do it anyway (behind a TLS proxy), or use 127.0.0.1"
        ));
    }
    TcpListener::bind(addrs.as_slice())
        .await
        .map_err(|e| format!("--http {listen}: {e}"))
}

pub(crate) fn router(endpoint: Arc<Endpoint>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(endpoint)
}

/// A JSON-RPC error as an HTTP answer (`id` null when the request's could not be read).
fn rpc_error(status: StatusCode, id: Value, code: i32, message: &str) -> Response {
    let body = error_to(Some(id), code, message, None);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The most requests open at once on `/mcp`: each holds a connection while its answer is awaited or streamed (a
/// call's SSE stream, a `subscriptions/listen`, a 2025-11-25 GET stream).
const MAX_OPEN: usize = 1024;
/// The share of [`MAX_OPEN`] one client may hold: the 2026-07-28 endpoint is one client (every holder of the
/// token), each 2025-11-25 session another.
const MAX_OPEN_PER_CLIENT: usize = MAX_OPEN / 2;

/// The requests open on `/mcp`, in all and by client (`""`: the 2026-07-28 endpoint; else a session's id).
#[derive(Default)]
pub(crate) struct Open {
    total: usize,
    by_client: HashMap<String, usize>,
}

/// A request's place among the open ones; given back when it is dropped (with the response's body).
struct Held {
    endpoint: Arc<Endpoint>,
    client: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut open = lock(&self.endpoint.open);
        open.total -= 1;
        if let Some(n) = open.by_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

/// A place for a request of `client`, or which limit it hit (503 when the gateway is full, 429 when this client
/// holds its share) and why.
fn hold(e: &Arc<Endpoint>, client: &str) -> Result<Held, (StatusCode, String)> {
    let mut open = lock(&e.open);
    let mine = open.by_client.get(client).copied().unwrap_or(0);
    let refused = if mine >= MAX_OPEN_PER_CLIENT {
        Some((
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this client has {MAX_OPEN_PER_CLIENT} requests open on /mcp (streams and listens included), \
                 the most one client may hold: close some"
            ),
        ))
    } else if open.total >= MAX_OPEN {
        Some((
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{MAX_OPEN} requests are open on /mcp, the most it serves at once: try again shortly"),
        ))
    } else {
        None
    };
    if let Some(refused) = refused {
        return Err(refused);
    }
    open.total += 1;
    *open.by_client.entry(client.to_owned()).or_default() += 1;
    Ok(Held {
        endpoint: e.clone(),
        client: client.to_owned(),
    })
}

/// `response`, holding `held` until its body has been sent or dropped. A body of known length (a JSON answer) is
/// complete already: the place is given back now, and the answer keeps its `Content-Length`.
fn holding(response: Response, held: Held) -> Response {
    if axum::body::HttpBody::size_hint(response.body())
        .exact()
        .is_some()
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = futures_util::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _ = &held;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

async fn handle(State(e): State<Arc<Endpoint>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Err(r) = e.guard.admit(&parts) {
        eprintln!(
            "abp-peer mcp: {} for {}: {}",
            r.status.as_u16(),
            parts.uri.path(),
            r.why
        );
        return rpc_error(r.status, Value::Null, -32600, &r.why);
    }
    if e.auth {
        if let Err(r) = e.guard.authorize(&parts, crate::security::Query::Refused) {
            // A missing or wrong bearer is 401 here, as MCP's authorization rules say.
            eprintln!("abp-peer mcp: 401 for {}: {}", parts.uri.path(), r.why);
            let mut answer = rpc_error(StatusCode::UNAUTHORIZED, Value::Null, -32600, &r.why);
            answer.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return answer;
        }
    }
    if parts.uri.path() != "/mcp" {
        return (
            StatusCode::NOT_FOUND,
            "not found: the MCP endpoint is /mcp\n",
        )
            .into_response();
    }
    let session_id = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // A session's requests count as that session's; anything else (an unknown session's is answered at once) as
    // the 2026-07-28 endpoint's.
    let client = session_id
        .as_deref()
        .filter(|id| lock(&e.sessions).contains_key(*id))
        .unwrap_or_default()
        .to_owned();
    let held = match hold(&e, &client) {
        Ok(held) => held,
        Err((status, why)) => {
            eprintln!("abp-peer mcp: {}: {why}", status.as_u16());
            let mut answer = rpc_error(status, Value::Null, -32603, &why);
            answer
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            return answer;
        }
    };
    holding(serve_mcp(&e, parts, body, session_id).await, held)
}

/// A request to `/mcp` that passed the checks.
async fn serve_mcp(
    e: &Arc<Endpoint>,
    parts: axum::http::request::Parts,
    body: Body,
    session_id: Option<String>,
) -> Response {
    if let Some(id) = session_id {
        let session = lock(&e.sessions).get(&id).cloned();
        let Some(session) = session else {
            return rpc_error(
                StatusCode::NOT_FOUND,
                Value::Null,
                -32600,
                "no such session: initialize again",
            );
        };
        return in_session(e, &id, &session, parts, body).await;
    }
    if parts.method != Method::POST {
        // This revision has no GET stream and no session to DELETE.
        let mut answer = rpc_error(
            StatusCode::METHOD_NOT_ALLOWED,
            Value::Null,
            -32600,
            "only POST: this endpoint serves MCP 2026-07-28",
        );
        answer
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return answer;
    }
    let (message, method, id) = match read_message(body).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let Some(id) = id else {
        // A notification. This revision sends none over HTTP (a stream closing is the cancel), but bridges that
        // speak it for stdio hosts POST their host's `notifications/cancelled` and keep the stream open: the
        // request it names, if it names exactly one of this sender's, is cancelled as a closed stream would be.
        if method == "notifications/cancelled" {
            cancel_by_notice(e, &parts.headers, &message);
        }
        return StatusCode::ACCEPTED.into_response();
    };
    match version_of(&parts.headers, &message) {
        Err(why) => rpc_error(StatusCode::BAD_REQUEST, id, -32602, why),
        Ok(Some(version)) => modern_request(e, parts, message, id, &method, &version).await,
        Ok(None) if method == "initialize" => open_session(e, message, &parts.headers).await,
        Ok(None) => rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            "no session: a 2025-11-25 client starts with initialize and sends its Mcp-Session-Id after; a \
             2026-07-28 request carries its version in _meta",
        ),
    }
}

/// A POST's one JSON-RPC message, read once: the message, its method, and its id (none for a notification);
/// else the answer that says what is wrong with it.
async fn read_message(body: Body) -> Result<(Value, String, Option<Value>), Response> {
    let bytes = read_body(body).await?;
    let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32700,
            "Parse error",
        ));
    };
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = message.get("id").cloned();
    let (Some(method), true) = (method, message.get("jsonrpc") == Some(&json!("2.0"))) else {
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            id.unwrap_or(Value::Null),
            -32600,
            "one JSON-RPC 2.0 request or notification per POST",
        ));
    };
    let id = id.filter(|i| i.is_string() || i.is_number());
    Ok((message, method, id))
}

/// The revision a request says it is of, in its `_meta` (none: a 2025-11-25 request); refused (-32602, saying
/// why) when its header says 2026-07-28 and its `_meta` lacks what that revision's requests carry.
fn version_of(headers: &HeaderMap, message: &Value) -> Result<Option<String>, &'static str> {
    let version = message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let modern_header = headers
        .get(VERSION_HEADER.to_ascii_lowercase())
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !v.starts_with("2024-") && !v.starts_with("2025-"));
    let capabilities = message.pointer("/params/_meta/io.modelcontextprotocol~1clientCapabilities");
    if modern_header && (version.is_none() || capabilities.is_none()) {
        return Err(
            "a 2026-07-28 request carries io.modelcontextprotocol/protocolVersion and clientCapabilities in _meta",
        );
    }
    Ok(version)
}

/// A 2026-07-28 request: checked against its headers, given an id of this process's (and its progress token
/// too), to the gateway here or (with `--nats`) to the process holding the app, and answered from its stream.
async fn modern_request(
    e: &Arc<Endpoint>,
    parts: axum::http::request::Parts,
    mut message: Value,
    id: Value,
    method: &str,
    version: &str,
) -> Response {
    // With `--nats`, the process holding the app takes the request when this one does not (and checks the
    // `Mcp-Param-*` headers against its app's tools).
    let elsewhere = e.remote.as_ref().and_then(|r| r.elsewhere());
    if let Err(why) =
        headers_match(&parts.headers, version, method, &message).and_then(|()| match elsewhere {
            Some(_) => Ok(()),
            None => params_match(&parts.headers, method, &message, &e.param_headers),
        })
    {
        return rpc_error(StatusCode::BAD_REQUEST, id, -32020, &why);
    }
    let (stream, lines) = unbounded_channel();
    let progress_token = message.pointer("/params/_meta/progressToken").cloned();
    let has_token = progress_token.is_some();
    let principal = principal_of(&parts.headers);
    let key = e
        .streams
        .open(id.clone(), progress_token, principal, stream);
    message["id"] = json!(key);
    if has_token {
        message["params"]["_meta"]["progressToken"] = json!(key);
    }
    let guard = Cancel {
        key: key.clone(),
        endpoint: e.clone(),
    };
    let passed = match (&e.remote, elsewhere) {
        (Some(remote), Some(node)) => remote.pass(&node, &key, &message, &parts.headers).await,
        _ => Passed::NotThere,
    };
    if let Passed::Refused(why) = passed {
        e.streams.take(&key);
        return rpc_error(StatusCode::BAD_REQUEST, id, -32020, &why);
    }
    if !matches!(passed, Passed::Taken)
        && e.hub
            .to_mcp_gateway(
                &e.room,
                HostInput::Message {
                    host: HTTP,
                    message,
                },
            )
            .is_err()
    {
        drop(guard);
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            id,
            -32603,
            "the gateway is stopping",
        );
    }
    let streamed = matches!(method, "tools/call" | "subscriptions/listen")
        && accepts(&parts.headers, "text/event-stream");
    if streamed {
        json_or_sse(lines, guard).await
    } else {
        json_answer(lines, Some(guard)).await
    }
}

/// A request the client lets us answer either way: as JSON if its response is the first thing it has (a
/// client reads that more cheaply than a stream), else as an SSE stream that opens with its first notification,
/// or with a `:` keep-alive once it has been quiet for [`KEEP_ALIVE`]. Until then nothing is written, and the
/// client going away still drops this and cancels the request.
async fn json_or_sse(mut lines: UnboundedReceiver<Said>, guard: Cancel) -> Response {
    let first = match tokio::time::timeout(KEEP_ALIVE, lines.recv()).await {
        Ok(Some(Said::Message(message))) => message,
        Ok(Some(Said::EndedByNotice)) => return ended_by_notice(),
        Ok(None) => return stopped(),
        Err(_) => return sse(lines, Some(guard), Some(":\n\n".to_owned())),
    };
    if shape_of(&first) == Shape::Response {
        drop(guard);
        return json_response(&first);
    }
    sse(lines, Some(guard), Some(sse_frame(&first)))
}

/// A response as JSON; this revision's errors about the request itself are HTTP errors too.
fn json_response(message: &Value) -> Response {
    let status = match message.pointer("/error/code").and_then(Value::as_i64) {
        Some(-32601) => StatusCode::NOT_FOUND,
        Some(-32600 | -32602 | -32020 | -32021 | -32022) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    let body = message.to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The answer to a request that a cancel notice took before anything was written for it: a stream that ends
/// at once, with no response in it (nothing more may be sent for a cancelled request).
fn ended_by_notice() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/event-stream")],
        "",
    )
        .into_response()
}

fn stopped() -> Response {
    rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        Value::Null,
        -32603,
        "the gateway stopped",
    )
}

/// Whether the request's `Accept` names `kind`.
fn accepts(headers: &HeaderMap, kind: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|t| t.trim().starts_with(kind)))
}

/// The request metadata headers against the body, as the revision requires (-32020 when they differ or are
/// missing): `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for the methods that name something (a tool,
/// a prompt, a resource, a task).
fn headers_match(
    headers: &HeaderMap,
    version: &str,
    method: &str,
    message: &Value,
) -> Result<(), String> {
    let get = |name: &str| -> Result<Option<String>, String> {
        let mut all = headers.get_all(name).iter();
        let first = all.next();
        if all.next().is_some() {
            return Err(format!("Header mismatch: more than one {name} header"));
        }
        match first {
            None => Ok(None),
            Some(v) => v
                .to_str()
                .map_err(|_| format!("Header mismatch: {name} is not readable text"))
                .and_then(|t| decode_header(name, t.trim()))
                .map(Some),
        }
    };
    let expect = |name: &str, body: &str| -> Result<(), String> {
        match get(&name.to_ascii_lowercase())? {
            None => Err(format!("Header mismatch: the {name} header is missing")),
            Some(h) if h == body => Ok(()),
            Some(h) => Err(format!(
                "Header mismatch: {name} header value '{h}' does not match body value '{body}'"
            )),
        }
    };
    expect(VERSION_HEADER, version)?;
    expect("Mcp-Method", method)?;
    let named = match method {
        "tools/call" | "prompts/get" => message.pointer("/params/name"),
        "resources/read" => message.pointer("/params/uri"),
        // The tasks extension routes by the task.
        "tasks/get" | "tasks/update" | "tasks/cancel" => message.pointer("/params/taskId"),
        _ => None,
    };
    if let Some(name) = named.and_then(Value::as_str) {
        expect("Mcp-Name", name)?;
    }
    Ok(())
}

/// A request whose answer has not been written yet: dropped before that (its stream closed, its connection
/// gone), it cancels the request in the gateway, which aborts the app's call and writes nothing more for it.
struct Cancel {
    key: String,
    endpoint: Arc<Endpoint>,
}

impl Drop for Cancel {
    fn drop(&mut self) {
        if self.endpoint.streams.take(&self.key) {
            cancel_in_gateway(&self.endpoint, &self.key, crate::gateway::CLOSED_STREAM);
        }
    }
}

/// Cancels request `key` (already taken from the streams) where it runs: in this gateway, or in the one it was
/// passed to.
fn cancel_in_gateway(e: &Endpoint, key: &str, reason: &str) {
    let line = notification(
        "notifications/cancelled",
        Some(json!({ "requestId": key, "reason": reason })),
    );
    if e.remote.as_ref().is_some_and(|r| r.cancel(key, &line)) {
        return;
    }
    let _ = e.hub.to_mcp_gateway(
        &e.room,
        HostInput::Message {
            host: HTTP,
            message: line,
        },
    );
}

/// Who sent a request, as far as cancelling goes: its `Authorization` credentials (the same bearer is the same
/// sender, however the scheme's name is spelled).
fn principal_of(headers: &HeaderMap) -> String {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim();
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim().to_owned(),
        _ => value.to_owned(),
    }
}

/// A POSTed `notifications/cancelled`: cancels the one request in flight from the same sender with that id.
/// An id that names none, or more than one, is ignored, as the notice's own rules say of ids it cannot match.
fn cancel_by_notice(e: &Endpoint, headers: &HeaderMap, message: &Value) {
    let Some(id) = message
        .pointer("/params/requestId")
        .filter(|i| i.is_string() || i.is_number())
    else {
        return;
    };
    let Some(key) = e.streams.take_named(&principal_of(headers), id) else {
        return;
    };
    let reason = message
        .pointer("/params/reason")
        .and_then(Value::as_str)
        .unwrap_or("the client sent notifications/cancelled");
    cancel_in_gateway(e, &key, reason);
}

/// The request's response as one JSON body (whatever came before it is not for a JSON answer).
async fn json_answer(mut lines: UnboundedReceiver<Said>, guard: Option<Cancel>) -> Response {
    while let Some(said) = lines.recv().await {
        let message = match said {
            Said::EndedByNotice => return ended_by_notice(),
            Said::Message(message) if shape_of(&message) == Shape::Response => message,
            Said::Message(_) => continue,
        };
        // A 2025-11-25 session's request (no guard) keeps 200 for its errors, as that revision answers.
        return match guard {
            Some(guard) => {
                drop(guard);
                json_response(&message)
            }
            None => {
                let body = message.to_string();
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    body,
                )
                    .into_response()
            }
        };
    }
    drop(guard);
    stopped()
}

fn sse_frame(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

/// The request's messages as an SSE stream (after `first`, if given): its notifications, then its response,
/// which ends it. `guard`: what cancels the request should the stream close before that (nothing, for a
/// session's request or a GET stream).
fn sse(lines: UnboundedReceiver<Said>, guard: Option<Cancel>, first: Option<String>) -> Response {
    let opening =
        futures_util::stream::iter(first.map(|f| Ok::<Bytes, Infallible>(Bytes::from(f))));
    let events = futures_util::stream::unfold((lines, guard), |(mut lines, guard)| async move {
        let frame = match tokio::time::timeout(KEEP_ALIVE, lines.recv()).await {
            // A cancel notice took the request: the stream ends with no response, and nothing is cancelled
            // again when the guard goes.
            Ok(Some(Said::EndedByNotice)) => return None,
            Ok(Some(Said::Message(message))) => sse_frame(&message),
            // The response went (its sender was dropped after it): the stream ends, nothing is cancelled.
            Ok(None) => {
                drop(guard);
                return None;
            }
            Err(_) => ":\n\n".to_owned(),
        };
        Some((Ok::<Bytes, Infallible>(Bytes::from(frame)), (lines, guard)))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::from_stream(futures_util::StreamExt::chain(
            opening, events,
        )))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// `initialize` without a session: a new 2025-11-25 session, a host of its own in the gateway, whose id goes back
/// in `Mcp-Session-Id` with the answer.
async fn open_session(e: &Arc<Endpoint>, message: Value, headers: &HeaderMap) -> Response {
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() || lock(&e.sessions).len() >= MAX_SESSIONS {
        let mut answer = rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            id,
            -32603,
            &format!(
                "no more sessions now: {MAX_SESSIONS} are open, the most this gateway keeps (end one with DELETE; \
                 an unused one ends by itself)"
            ),
        );
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return answer;
    }
    let session_id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let host = e.hub.next_id() + 1;
    let session = Arc::new(Session {
        host,
        id: session_id.clone(),
        router: Mutex::new(Router::new(true)),
        follow: tokio::sync::Mutex::new(Follow::default()),
        used: Mutex::new(std::time::Instant::now()),
    });
    let (out, lines) = unbounded_channel();
    if e.hub
        .to_mcp_gateway(&e.room, HostInput::Joined { host, out })
        .is_err()
    {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            id,
            -32603,
            "the gateway is stopping",
        );
    }
    lock(&e.sessions).insert(session_id.clone(), session.clone());
    tokio::spawn(run_session(
        lines,
        session.clone(),
        session_id.clone(),
        e.clone(),
    ));
    let mut answer = session_request(e, &session, message, headers).await;
    if let Ok(v) = header::HeaderValue::from_str(&session_id) {
        answer.headers_mut().insert("mcp-session-id", v);
    }
    answer
}

/// A request with a known `Mcp-Session-Id`: POST (a request, or a notification or answer: 202), GET (the stream
/// for what the server says unasked), DELETE (the session ends, and its calls are cancelled in the app).
async fn in_session(
    e: &Arc<Endpoint>,
    id: &str,
    session: &Arc<Session>,
    parts: axum::http::request::Parts,
    body: Body,
) -> Response {
    session.touch();
    match parts.method {
        Method::GET => {
            let (tx, rx) = unbounded_channel();
            lock(&session.router).listen(tx);
            sse(rx, None, None)
        }
        Method::DELETE => {
            end_session(e, id, session).await;
            StatusCode::OK.into_response()
        }
        Method::POST => {
            let bytes = match read_body(body).await {
                Ok(b) => b,
                Err(refused) => return refused,
            };
            let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
                return rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32700, "Parse error");
            };
            if shape_of(&message) == Shape::Request {
                return session_request(e, session, message, &parts.headers).await;
            }
            // A notification (`notifications/cancelled` among them: this era's cancel), or an answer to the
            // server's question. A cancelled request gets no response: its stream ends now, rather than stay open
            // for one.
            if message["method"] == "notifications/cancelled" {
                if let Some(id) = message.pointer("/params/requestId") {
                    if let Some(stream) = lock(&session.router).take(&key_of(id)) {
                        let _ = stream.send(Said::EndedByNotice);
                    }
                }
            }
            match to_session_host(e, session, message).await {
                true => StatusCode::ACCEPTED.into_response(),
                false => rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Value::Null,
                    -32603,
                    "the gateway is stopping",
                ),
            }
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

/// A session's request: to its host, answered on this POST (an SSE stream for `tools/call` when accepted, which
/// carries its progress and any question the server asks meanwhile). The stream closing does not cancel it.
async fn session_request(
    e: &Arc<Endpoint>,
    session: &Arc<Session>,
    message: Value,
    headers: &HeaderMap,
) -> Response {
    let id = message.get("id").cloned().unwrap_or_default();
    let (tx, rx) = unbounded_channel();
    // The gateway knows a session's requests by the ids its host gave them.
    let token = message.pointer("/params/_meta/progressToken").cloned();
    let token = token.map(|t| (t.clone(), t));
    lock(&session.router).open(key_of(&id), id, token, String::new(), tx);
    let streamed = message.get("method") == Some(&json!("tools/call"))
        && accepts(headers, "text/event-stream");
    if !to_session_host(e, session, message).await {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            Value::Null,
            -32603,
            "the gateway is stopping",
        );
    }
    if streamed {
        sse(rx, None, None)
    } else {
        json_answer(rx, None).await
    }
}
