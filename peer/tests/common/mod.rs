//! `abp-peer` as a process for the tests: started on 127.0.0.1 with a free port, and its token file and state
//! folder (`XDG_STATE_HOME`, where the launch token is kept) in a fresh directory, so that no test reads or
//! changes the user's own token; killed when dropped; plus WebSocket and raw HTTP clients.
// Each test binary uses its own part of this.
#![allow(dead_code)]

pub mod http;
pub mod nats;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::WebSocket;

pub type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

/// A directory of its own under the system temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "abp-peer-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The peer process; killed when dropped.
pub struct Peer {
    pub child: Child,
    pub url: String,
    pub addr: SocketAddr,
    /// The token as printed on stderr.
    pub token: String,
    pub token_file: PathBuf,
    /// Its `XDG_STATE_HOME`: the launch token is kept in `abp-peer/token` there.
    pub state: PathBuf,
    /// What it printed on stderr up to the listening line.
    pub banner: String,
    /// Every stderr line after the listening line.
    pub log: mpsc::Receiver<String>,
    /// `abp-peer mcp` reads its host from stdin and stops when it closes: kept open here.
    pub stdin: Option<std::process::ChildStdin>,
    _dir: TempDir,
}

/// The outcome of starting the peer: up (with what it printed before listening), or exited.
pub enum Started {
    Up(Peer),
    Exited(ExitStatus, String),
}

impl Peer {
    pub fn start(args: &[&str]) -> Peer {
        match Peer::try_start(args, &[]) {
            Started::Up(p) => p,
            Started::Exited(status, stderr) => panic!("abp-peer exited ({status}): {stderr}"),
        }
    }

    /// Starts it with `args` (after `--listen 127.0.0.1:0 --token-file <fresh dir>/token`, unless `args` has its
    /// own `--listen` / `--token-file`) and the environment `env` (after `XDG_STATE_HOME=<fresh dir>/state`).
    pub fn try_start(args: &[&str], env: &[(&str, &str)]) -> Started {
        Peer::launch(args, env, true)
    }

    /// As [`Peer::try_start`]; without `--token-file` unless `token_file`.
    pub fn launch(args: &[&str], env: &[(&str, &str)], token_file: bool) -> Started {
        let dir = TempDir::new();
        let default_file = token_file;
        let token_file = dir.0.join("token");
        let state = env
            .iter()
            .find(|(k, _)| *k == "XDG_STATE_HOME")
            .map_or_else(|| dir.0.join("state"), |(_, v)| PathBuf::from(v));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_abp-peer"));
        // A mode's name comes first.
        let (mode, args) = match args.split_first() {
            Some((first, rest)) if !first.starts_with('-') => (Some(*first), rest),
            _ => (None, args),
        };
        cmd.args(mode);
        if !args.contains(&"--listen") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        if default_file && !args.contains(&"--token-file") {
            cmd.arg("--token-file").arg(&token_file);
        }
        cmd.args(args)
            .env_remove("ABP_PEER_TOKEN")
            .env("XDG_STATE_HOME", &state);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mcp = mode == Some("mcp");
        let mut child = cmd
            .stdin(if mcp { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start abp-peer");
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let mut before = String::new();
        let mut token = String::new();
        let url = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(url) = line.strip_prefix("abp-peer listening on ") {
                        break url.to_owned();
                    }
                    // Printed only when minted here (not one from ABP_PEER_TOKEN, not in `mcp` mode).
                    if let Some(rest) = line.strip_prefix("abp-peer: token: ") {
                        token = rest
                            .split_whitespace()
                            .next()
                            .unwrap_or_default()
                            .to_owned();
                    }
                    before += &line;
                    before.push('\n');
                }
                _ => {
                    let status = child.wait().expect("wait");
                    return Started::Exited(status, before);
                }
            }
        };
        // Keep reading stderr, so that the peer never blocks on a full pipe.
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let addr = url
            .strip_prefix("ws://")
            .and_then(|a| a.parse().ok())
            .expect("ws://HOST:PORT");
        let token_file = args
            .iter()
            .position(|a| *a == "--token-file")
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
            .unwrap_or(token_file);
        Started::Up(Peer {
            child,
            url,
            addr,
            token,
            token_file,
            state,
            banner: before,
            log,
            stdin,
            _dir: dir,
        })
    }

    /// A WebSocket to `path`; driver endpoints get `?token=`.
    pub fn connect(&self, path: &str) -> Socket {
        let driver = path.starts_with("/control")
            || (path.starts_with("/relay/") && path.ends_with("/agent"));
        let url = if driver {
            format!("{}{path}?token={}", self.url, self.token)
        } else {
            format!("{}{path}", self.url)
        };
        let request = url.into_client_request().expect("a request");
        let (ws, _) = tungstenite::connect(request).expect("connect");
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
        }
        ws
    }

    /// Whether the process has exited (waiting up to `within`), and how.
    pub fn exited(&mut self, within: Duration) -> Option<ExitStatus> {
        let t0 = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if t0.elapsed() > within {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer: the status and everything up to the end of the head (plus the body, if the server closed).
pub struct Answer {
    pub status: u16,
    pub text: String,
}

/// Sends a WebSocket upgrade for `path` to `addr` with the `Host` header `host` and `headers` ("Name: value"),
/// as bytes on a plain TCP connection, and reads the answer's head (and body, for a refusal).
pub fn upgrade(addr: SocketAddr, host: &str, path: &str, headers: &[&str]) -> Answer {
    let request = upgrade_request(host, path, headers);
    exchange(addr, &request)
}

/// The bytes of a WebSocket upgrade request.
pub fn upgrade_request(host: &str, path: &str, headers: &[&str]) -> String {
    let mut extra = String::new();
    for h in headers {
        extra += h;
        extra += "\r\n";
    }
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    )
}

/// Sends `request` as it is and reads the answer (its head; and its body when the server says how long it is).
pub fn exchange(addr: SocketAddr, request: &str) -> Answer {
    try_exchange(addr, request).unwrap_or_else(|text| panic!("not an HTTP answer: {text:?}"))
}

/// As [`exchange`]; what arrived if it is not an HTTP answer.
pub fn try_exchange(addr: SocketAddr, request: &str) -> Result<Answer, String> {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(request.as_bytes()).expect("send");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length = text[..head_end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if got.len() >= head_end + 4 + length {
                break;
            }
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    match text.split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
        Some(status) => Ok(Answer { status, text }),
        None => Err(text),
    }
}

/// The next text or binary frame on `ws`; `None` once it is closed. Waiting past the read timeout (5 s) fails
/// the test: a timeout must not pass for a close.
#[track_caller]
pub fn next_frame(ws: &mut Socket) -> Option<tungstenite::Message> {
    use tungstenite::Message;
    loop {
        match ws.read() {
            Ok(m @ (Message::Text(_) | Message::Binary(_))) => return Some(m),
            Ok(Message::Close(_)) => return None,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                panic!("nothing arrived within 5 s")
            }
            Err(_) => return None,
        }
    }
}

/// Sends `v` as one text frame.
pub fn send(ws: &mut Socket, v: &serde_json::Value) {
    ws.send(tungstenite::Message::text(v.to_string()))
        .expect("send");
}

/// The next text frame as JSON; `None` once the connection is closed (a binary frame is skipped). Waiting 5 s
/// fails the test.
#[track_caller]
pub fn next(ws: &mut Socket) -> Option<serde_json::Value> {
    loop {
        if let tungstenite::Message::Text(t) = next_frame(ws)? {
            return serde_json::from_str(t.as_str()).ok();
        }
    }
}

/// Reads frames until one satisfies `f` (10 s at most).
#[track_caller]
pub fn until(ws: &mut Socket, f: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let t0 = Instant::now();
    loop {
        let v = next(ws).expect("the connection closed while waiting");
        if f(&v) {
            return v;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "waited too long");
    }
}

/// Plays a hand-written ABP app on `app`: waits for the agent's `initialize` and answers it.
#[track_caller]
pub fn answer_initialize(app: &mut Socket) {
    let init = until(app, |m| m["type"] == "initialize");
    send(
        app,
        &serde_json::json!({ "type": "initialize-result", "id": init["id"], "timestamp": 0,
            "payload": { "sessionId": "S", "protocolVersion": "0.1", "capabilities": [],
                "app": { "id": "a", "name": "a", "version": "1" } } }),
    );
}
