//! `abp-peer mcp --http` as a process for the tests, and a raw HTTP/1.1 client for it (every header exactly what
//! a client, a page or an attacker would send).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::TempDir;

pub const TOKEN: &str = "Zq8mW3xK1vR7tB2nY6pL4hD9sF0gJ5cA";

pub struct Gateway {
    pub child: Child,
    pub ws: String,
    pub http: SocketAddr,
    _dir: TempDir,
}

impl Gateway {
    pub fn start(extra: &[&str]) -> (Gateway, String) {
        Gateway::start_with(extra, &[("ABP_PEER_TOKEN", Some(TOKEN))])
    }

    /// As [`Gateway::start`], with `env` set (`Some`) or removed (`None`) instead of `ABP_PEER_TOKEN=TOKEN`; its
    /// `XDG_STATE_HOME` is a fresh directory unless `env` names one.
    pub fn start_with(extra: &[&str], env: &[(&str, Option<&str>)]) -> (Gateway, String) {
        let dir = TempDir::new();
        let mut command = Command::new(env!("CARGO_BIN_EXE_abp-peer"));
        command
            .args(["mcp", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
            .args(extra)
            .arg("--token-file")
            .arg(dir.0.join("token"))
            .env_remove("ABP_PEER_TOKEN")
            .env("XDG_STATE_HOME", dir.0.join("state"));
        for (k, v) in env {
            match v {
                Some(v) => command.env(k, v),
                None => command.env_remove(k),
            };
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start abp-peer mcp --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let (mut ws, mut http, mut log) = (None, None, String::new());
        while ws.is_none() || http.is_none() {
            let line = lines.next().expect("a line").expect("text");
            log.push_str(&line);
            log.push('\n');
            if let Some(a) = line.strip_prefix("abp-peer listening on ") {
                ws = Some(a.to_owned());
            }
            if let Some(a) = line.strip_prefix("abp-peer mcp on http://") {
                http = Some(a.trim_end_matches("/mcp").parse().expect("an address"));
            }
        }
        std::thread::spawn(move || for _ in lines {});
        let g = Gateway {
            child,
            ws: ws.expect("ws"),
            http: http.expect("http"),
            _dir: dir,
        };
        (g, log)
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.http.port())
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" }
    })
}

/// A request as bytes: `headers` ("Name: value") after Host, and the body.
pub fn request(g: &Gateway, method: &str, path: &str, headers: &[String], body: &str) -> TcpStream {
    let mut s = TcpStream::connect(g.http).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", g.host());
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(head.as_bytes()).expect("write");
    s.write_all(body.as_bytes()).expect("write");
    s
}

/// The standard headers of a modern request for `message`, with the token.
pub fn modern_headers(message: &Value, accept: &str) -> Vec<String> {
    let mut h = vec![
        format!("Authorization: Bearer {TOKEN}"),
        "Content-Type: application/json".to_owned(),
        format!("Accept: {accept}"),
        "MCP-Protocol-Version: 2026-07-28".to_owned(),
        format!("Mcp-Method: {}", message["method"].as_str().unwrap_or("")),
    ];
    let named = if message["method"]
        .as_str()
        .is_some_and(|m| m.starts_with("tasks/"))
    {
        message.pointer("/params/taskId")
    } else {
        message.pointer("/params/name")
    };
    if let Some(name) = named.and_then(Value::as_str) {
        h.push(format!("Mcp-Name: {name}"));
    }
    h
}

/// The whole answer (the server closes: `Connection: close`): status, head, body.
pub fn answer(mut s: TcpStream) -> (u16, String, String) {
    let mut all = String::new();
    let _ = s.read_to_string(&mut all);
    let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

pub fn post(g: &Gateway, message: &Value, headers: Vec<String>) -> (u16, String, String) {
    answer(request(g, "POST", "/mcp", &headers, &message.to_string()))
}

/// Reads `stream` until what it has said contains `text` (a request's SSE stream, say, until its first
/// progress): what it said.
pub async fn read_through(stream: &mut TcpStream, text: &str) -> String {
    let mut seen = String::new();
    let mut buf = [0u8; 1024];
    while !seen.contains(text) {
        let n = blocking(|| stream.read(&mut buf)).await.expect("read");
        assert!(n > 0, "the stream ended before saying {text}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    seen
}

/// The JSON-RPC messages of an SSE body (chunk-size lines between them are skipped).
pub fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// Runs a blocking request from an async test, in place: the runtime's other worker serves the app meanwhile.
pub async fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// The gateway's `tools/list` (answered 200, with the request's id "L") once the app's tools are there: the
/// gateway lists the app's capabilities once it has joined, so this asks until they are.
pub async fn listed(g: &Gateway) -> Value {
    let list = json!({ "jsonrpc": "2.0", "id": "L", "method": "tools/list", "params": { "_meta": meta() } });
    let t0 = Instant::now();
    loop {
        let (status, _, body) =
            blocking(|| post(g, &list, modern_headers(&list, "application/json"))).await;
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).expect("JSON");
        if v["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
            || t0.elapsed() > Duration::from_secs(5)
        {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `_meta` declaring the tasks extension.
pub fn meta_with_tasks() -> Value {
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({ "extensions": { TASKS: {} } });
    m
}

/// One modern request, answered as JSON: the HTTP status and the body.
pub fn rpc(g: &Gateway, method: &str, params: Value) -> (u16, Value) {
    let message = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let (status, _, body) = post(g, &message, modern_headers(&message, "application/json"));
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Reads an SSE stream until an event whose JSON contains `needle`, and returns that event; what was read up to
/// its end is consumed from `seen`.
pub fn read_until(stream: &mut TcpStream, seen: &mut String, needle: &str) -> Value {
    let mut buf = [0u8; 4096];
    loop {
        let mut consumed = 0;
        for event in seen.split_inclusive("\n\n") {
            if !event.ends_with("\n\n") {
                break;
            }
            consumed += event.len();
            let found = events(event)
                .into_iter()
                .find(|e| e.to_string().contains(needle));
            if let Some(found) = found {
                seen.drain(..consumed);
                return found;
            }
        }
        let n = stream.read(&mut buf).expect("read");
        assert!(n > 0, "the stream ended before {needle}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// `tasks/get` until the task is terminal (or 10 s pass): its last state.
pub fn until_terminal(g: &Gateway, task: &str) -> Value {
    let t0 = Instant::now();
    loop {
        let (_, v) = rpc(
            g,
            "tasks/get",
            json!({ "taskId": task, "_meta": meta_with_tasks() }),
        );
        let status = v["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str())
            || t0.elapsed() > Duration::from_secs(10)
        {
            return v["result"].clone();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A 2025-11-25 request of session `sid` (no metadata headers, as that revision's clients send).
pub fn legacy_headers(sid: Option<&str>, accept: &str) -> Vec<String> {
    let mut h = vec![
        format!("Authorization: Bearer {TOKEN}"),
        "Content-Type: application/json".to_owned(),
        format!("Accept: {accept}"),
    ];
    if let Some(sid) = sid {
        h.push(format!("Mcp-Session-Id: {sid}"));
    }
    h
}

/// `notifications/cancelled` for request `request_id` of session `sid`, POSTed at `g` (the 2025-11-25 way to
/// cancel): accepted with 202.
pub async fn legacy_cancel(g: &Gateway, sid: &str, request_id: u64) {
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": request_id, "reason": "stop" } });
    let status = blocking(|| post(g, &cancel, legacy_headers(Some(sid), "application/json")))
        .await
        .0;
    assert_eq!(
        status, 202,
        "notifications/cancelled for request {request_id}"
    );
}

/// A 2025-11-25 session opened at `g` (`initialize`, then `notifications/initialized`): its `Mcp-Session-Id`.
#[track_caller]
pub fn legacy_session(g: &Gateway) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } });
    let (status, head, body) = post(
        g,
        &init,
        legacy_headers(None, "application/json, text/event-stream"),
    );
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        (status, &v["result"]["protocolVersion"]),
        (200, &json!("2025-11-25")),
        "{body}"
    );
    let sid = head
        .lines()
        .find_map(|l| {
            l.to_lowercase()
                .strip_prefix("mcp-session-id: ")
                .map(str::to_owned)
        })
        .expect("an Mcp-Session-Id");
    assert_eq!(sid.len(), 32, "128 random bits: {sid}");
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(
        post(g, &note, legacy_headers(Some(&sid), "application/json")).0,
        202
    );
    sid
}
