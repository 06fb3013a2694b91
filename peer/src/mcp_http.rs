//! `abp-peer mcp --http HOST:PORT`: the gateway over MCP's Streamable HTTP transport (revision 2026-07-28), at
//! `/mcp`, for hosts that reach MCP servers by URL.
//!
//! Every request is a POST of one JSON-RPC message. A request is answered as JSON, or, for `tools/call` and
//! `subscriptions/listen` when the client accepts it, as an SSE stream scoped to it: its progress, then its
//! response (a listen's stream stays open with its change notifications). A notification is 202. Closing a
//! request's stream, or dropping its connection, cancels it: the app's `ctx.signal` aborts, and nothing more is
//! written for it.
//!
//! All HTTP requests share one MCP connection of the gateway (one host, [`HTTP`]), so a call that asked the user
//! something (an `InputRequiredResult`) is resumed by its retry, which comes as another POST. Each request's id
//! (and its progress token) is replaced by one of this process's own on the way in and given back on the way out,
//! so two clients that both number their requests from 1 never meet. A legacy (2025-11-25) request, without the
//! version in its `_meta`, is refused with a 400 that says so; the SDKs then know to speak the current revision.
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

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::hub::{lock, Hub};
use crate::mcp::HostInput;
use crate::security::Guard;

/// The gateway's host id for everything that comes over HTTP.
pub(crate) const HTTP: u64 = u64::MAX;

/// The largest request body read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// How often an SSE stream with nothing to say gets a `:` comment, so that a proxy or a client's idle timeout
/// does not close it, and so that a client that went away is noticed (its write fails).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The version header's name, and the era this endpoint serves.
const VERSION_HEADER: &str = "MCP-Protocol-Version";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

/// A request on its way: where its lines go, and what the client called it.
struct Route {
    stream: UnboundedSender<String>,
    id: Value,
    progress_token: Option<Value>,
}

/// The requests in flight, by the id the gateway knows them by; shared by the request tasks and the dispatcher.
#[derive(Default)]
pub(crate) struct Streams {
    next: AtomicU64,
    routes: Mutex<HashMap<String, Route>>,
}

impl Streams {
    fn open(&self, route: Route) -> String {
        let id = format!("http-{}", self.next.fetch_add(1, Ordering::Relaxed));
        lock(&self.routes).insert(id.clone(), route);
        id
    }

    fn take(&self, id: &str) -> Option<Route> {
        lock(&self.routes).remove(id)
    }

    /// Sends `message` (its own id given back) on `id`'s stream.
    fn send(&self, id: &str, restore: impl FnOnce(&mut Value, &Route), mut message: Value) {
        if let Some(route) = lock(&self.routes).get(id) {
            restore(&mut message, route);
            let _ = route.stream.send(message.to_string());
        }
    }
}

/// The gateway's lines for [`HTTP`] → the streams they belong to: a response ends its request's stream (given
/// its client's id back), progress goes by its token, a listen's notifications by its subscription id. Anything
/// else is dropped: a server sends no requests of its own in this revision.
pub(crate) async fn dispatch(mut lines: UnboundedReceiver<String>, streams: Arc<Streams>) {
    while let Some(line) = lines.recv().await {
        let Ok(mut message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message.get("method").is_none() {
            let Some(id) = message.get("id").and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            if let Some(route) = streams.take(&id) {
                message["id"] = route.id.clone();
                // Dropping the route's sender ends the stream after this.
                let _ = route.stream.send(message.to_string());
            }
            continue;
        }
        let params = message.get("params");
        if let Some(token) = params
            .and_then(|p| p.get("progressToken"))
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            streams.send(
                &token,
                |m, r| {
                    m["params"]["progressToken"] = r.progress_token.clone().unwrap_or(Value::Null)
                },
                message,
            );
        } else if let Some(sub) = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_SUBSCRIPTION))
            .and_then(Value::as_str)
            .map(str::to_owned)
        {
            streams.send(
                &sub,
                |m, r| m["params"]["_meta"][META_SUBSCRIPTION] = r.id.clone(),
                message,
            );
        }
    }
}

pub(crate) struct Endpoint {
    pub(crate) guard: Guard,
    pub(crate) auth: bool,
    pub(crate) hub: Arc<Hub>,
    pub(crate) room: String,
    pub(crate) streams: Arc<Streams>,
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

pub(crate) fn router(endpoint: Arc<Endpoint>) -> Router {
    Router::new().fallback(handle).with_state(endpoint)
}

/// A JSON-RPC error as an HTTP answer (`id` null when the request's could not be read).
fn rpc_error(status: StatusCode, id: Value, code: i32, message: &str) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
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
        if let Err(r) = e.guard.authorize(&parts) {
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
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                Value::Null,
                -32600,
                "the request body is over 4 MiB, or could not be read",
            )
        }
    };
    let Ok(mut message) = serde_json::from_slice::<Value>(&bytes) else {
        return rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32700, "Parse error");
    };
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = message.get("id").cloned();
    let (Some(method), true) = (method, message.get("jsonrpc") == Some(&json!("2.0"))) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            id.unwrap_or(Value::Null),
            -32600,
            "one JSON-RPC 2.0 request or notification per POST",
        );
    };
    let Some(id) = id.filter(|i| i.is_string() || i.is_number()) else {
        // A notification: nothing of this revision's is sent over HTTP (a stream closing is the cancel).
        return StatusCode::ACCEPTED.into_response();
    };
    let version = message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let Some(version) = version else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            -32600,
            "this endpoint serves MCP revision 2026-07-28 (the version in each request's _meta); \
             2025-11-25 sessions over HTTP are not served here",
        );
    };
    if let Err(why) = headers_match(&parts.headers, &version, &method, &message) {
        return rpc_error(StatusCode::BAD_REQUEST, id, -32020, &why);
    }
    let (stream, lines) = unbounded_channel();
    let progress_token = message.pointer("/params/_meta/progressToken").cloned();
    let key = e.streams.open(Route {
        stream,
        id: id.clone(),
        progress_token: progress_token.clone(),
    });
    message["id"] = json!(key);
    if progress_token.is_some() {
        message["params"]["_meta"]["progressToken"] = json!(key);
    }
    let guard = Cancel {
        key: key.clone(),
        endpoint: e.clone(),
    };
    if e.hub
        .to_mcp_gateway(
            &e.room,
            HostInput::Line {
                host: HTTP,
                line: message.to_string(),
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
    let streamed = matches!(method.as_str(), "tools/call" | "subscriptions/listen")
        && accepts(&parts.headers, "text/event-stream");
    if streamed {
        sse(lines, guard)
    } else {
        json_answer(lines, guard).await
    }
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
/// missing): `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for the methods that name something.
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
                .map(|t| Some(decode_header(t.trim())))
                .map_err(|_| format!("Header mismatch: {name} is not readable text")),
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
        _ => None,
    };
    if let Some(name) = named.and_then(Value::as_str) {
        expect("Mcp-Name", name)?;
    }
    Ok(())
}

/// A header value as it was meant: `=?base64?…?=` is how a client sends a value that is not plain ASCII.
fn decode_header(value: &str) -> String {
    use base64::Engine;
    value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| value.to_owned())
}

/// A request whose answer has not been written yet: dropped before that (its stream closed, its connection
/// gone), it cancels the request in the gateway, which aborts the app's call and writes nothing more for it.
struct Cancel {
    key: String,
    endpoint: Arc<Endpoint>,
}

impl Drop for Cancel {
    fn drop(&mut self) {
        if self.endpoint.streams.take(&self.key).is_some() {
            let line = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": { "requestId": self.key, "reason": "the client closed the request's stream" } });
            let _ = self.endpoint.hub.to_mcp_gateway(
                &self.endpoint.room,
                HostInput::Line {
                    host: HTTP,
                    line: line.to_string(),
                },
            );
        }
    }
}

/// The request's response as one JSON body (whatever came before it is not for a JSON answer).
async fn json_answer(mut lines: UnboundedReceiver<String>, guard: Cancel) -> Response {
    while let Some(line) = lines.recv().await {
        let is_response =
            serde_json::from_str::<Value>(&line).is_ok_and(|m| m.get("method").is_none());
        if is_response {
            drop(guard);
            return (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                line,
            )
                .into_response();
        }
    }
    drop(guard);
    rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        Value::Null,
        -32603,
        "the gateway stopped",
    )
}

/// The request's messages as an SSE stream: its notifications, then its response, which ends it.
fn sse(lines: UnboundedReceiver<String>, guard: Cancel) -> Response {
    let events =
        futures_util::stream::unfold((lines, Some(guard)), |(mut lines, guard)| async move {
            let guard = guard?;
            let next = tokio::time::timeout(KEEP_ALIVE, lines.recv()).await;
            let (frame, guard) = match next {
                Ok(Some(line)) => (format!("event: message\ndata: {line}\n\n"), Some(guard)),
                // The response went (the dispatcher dropped the sender after it): the stream ends, nothing cancelled.
                Ok(None) => {
                    drop(guard);
                    return None;
                }
                Err(_) => (":\n\n".to_owned(), Some(guard)),
            };
            Some((Ok::<Bytes, Infallible>(Bytes::from(frame)), (lines, guard)))
        });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::from_stream(events))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
