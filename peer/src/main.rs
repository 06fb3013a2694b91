//! `abp-peer`: the native side of ABP over WebSocket, built on the same protocol core as the browser SDK.
//!
//! One server, three kinds of endpoint:
//! - `/agent/<room>`: a browser app connects (`app.listen(await WebSocketTransport.connect(url))`) and this
//!   process is its agent. It is driven by JSON commands from `/control/<room>` (another WebSocket) or, with
//!   `--stdin`, from standard input for the room `""` (`/agent`); see [`agent`].
//! - `/relay/<room>/agent` and `/relay/<room>/app`: pairs an agent connection with an app connection and
//!   forwards text frames both ways; when one side goes, the other is closed (see [`relay`]).
//! - `/admin/exit` (only with `--allow-exit`): the process exits at once, as if killed. For tests.
//!
//! `abp-peer discover URL` instead runs ABP discovery on a page and prints the `DiscoveryResult` (see
//! [`discover`]).
//!
//! Prints `abp-peer listening on ws://HOST:PORT` once it accepts connections.

mod agent;
mod conn;
mod discover;
mod relay;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread;

use abp_wasm::core::dialect::DialectKind;
use tungstenite::handshake::server::{Request, Response};
use tungstenite::protocol::WebSocketConfig;

pub(crate) use conn::{Conn, Out};

/// What every connection thread shares.
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) rooms: Mutex<HashMap<String, relay::Room>>,
    /// Room → the agent serving the app connected there (its command inbox).
    pub(crate) agents: Mutex<HashMap<String, (u64, Sender<agent::Command>)>>,
    /// Room → where that agent's events go (a control socket, or stdout).
    pub(crate) controllers: Mutex<HashMap<String, (u64, Sender<Out>)>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// A number for a registration, so a connection only removes its own entry.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Where the events of `room`'s agent go.
    pub(crate) fn controller(&self, room: &str) -> Option<Sender<Out>> {
        let c = self.controllers.lock().ok()?;
        c.get(room).map(|(_, s)| s.clone())
    }
}

struct Args {
    listen: String,
    max_message_bytes: usize,
    stdin: bool,
    allow_exit: bool,
}

const USAGE: &str = "usage: abp-peer [--listen HOST:PORT] [--max-message-bytes N] [--stdin] [--allow-exit]
       abp-peer discover URL [--timeout MS]
  --listen              where to accept WebSocket connections (default 127.0.0.1:8787; port 0 picks one)
  --max-message-bytes   largest frame accepted (default 16777216); a bigger one closes that connection
  --stdin               read agent commands (JSON, one per line) from stdin for /agent; print events to stdout
  --allow-exit          a connection to /admin/exit ends the process (tests use it to kill the server)";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        listen: "127.0.0.1:8787".to_owned(),
        max_message_bytes: 16 * 1024 * 1024,
        stdin: false,
        allow_exit: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--listen" => args.listen = it.next().ok_or("--listen needs HOST:PORT")?,
            "--max-message-bytes" => {
                args.max_message_bytes = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--max-message-bytes needs a number")?
            }
            "--stdin" => args.stdin = true,
            "--allow-exit" => args.allow_exit = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("discover") {
        std::process::exit(discover::main(&argv[1..]));
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("abp-peer: {e}");
            }
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    let listener = match TcpListener::bind(&args.listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("abp-peer: cannot listen on {}: {e}", args.listen);
            std::process::exit(1);
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or(args.listen.clone());
    let shared = Arc::new(Shared::default());
    if args.stdin {
        read_stdin(shared.clone());
    }
    println!("abp-peer listening on ws://{addr}");
    let _ = std::io::stdout().flush();
    let config = WebSocketConfig::default()
        .max_message_size(Some(args.max_message_bytes))
        .max_frame_size(Some(args.max_message_bytes));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let shared = shared.clone();
        let allow_exit = args.allow_exit;
        thread::spawn(move || serve(stream, shared, config, allow_exit));
    }
}

fn dialect_of(protocol: Option<&str>) -> DialectKind {
    match protocol {
        Some("mcp") => DialectKind::Mcp,
        Some("tesseron-gateway") => DialectKind::Tesseron,
        _ => DialectKind::Abp,
    }
}

/// The WebSocket subprotocols this peer answers to.
const SUBPROTOCOLS: [&str; 3] = ["abp", "mcp", "tesseron-gateway"];

/// Handshake, then hand the connection to the endpoint its path names.
fn serve(stream: TcpStream, shared: Arc<Shared>, config: WebSocketConfig, allow_exit: bool) {
    let _ = stream.set_nodelay(true);
    let mut path = String::new();
    let mut protocol: Option<&'static str> = None;
    // The signature is tungstenite's `Callback`; its error type is not ours to shrink.
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, mut res: Response| {
        path = req.uri().path().to_owned();
        // Speak the first subprotocol the client offers among those this peer knows: "abp", or "mcp" for
        // MCP clients reaching an app through the relay (frames pass unchanged either way). A browser fails
        // a handshake that offered protocols and got none back, so any other offer is answered with none.
        let chosen = req
            .headers()
            .get_all("sec-websocket-protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .find_map(|p| SUBPROTOCOLS.iter().find(|k| **k == p));
        protocol = chosen.copied();
        if let Some(p) = chosen {
            res.headers_mut().insert(
                "sec-websocket-protocol",
                tungstenite::http::HeaderValue::from_static(p),
            );
        }
        Ok(res)
    };
    let ws = match tungstenite::accept_hdr_with_config(stream, callback, Some(config)) {
        Ok(ws) => ws,
        Err(_) => return, // not a WebSocket handshake: nothing to serve
    };
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        // The app's subprotocol says which dialect it speaks (for Tesseron this peer is the gateway).
        ["agent"] => agent::serve(Conn::new(ws), shared, String::new(), dialect_of(protocol)),
        ["agent", room] => agent::serve(
            Conn::new(ws),
            shared,
            (*room).to_owned(),
            dialect_of(protocol),
        ),
        ["control"] => agent::control(Conn::new(ws), shared, String::new()),
        ["control", room] => agent::control(Conn::new(ws), shared, (*room).to_owned()),
        ["relay", room, role @ ("agent" | "app")] => {
            relay::serve(Conn::new(ws), shared, (*room).to_owned(), role == &"agent")
        }
        ["admin", "exit"] if allow_exit => {
            eprintln!("abp-peer: exiting (asked by /admin/exit)");
            std::process::exit(3);
        }
        _ => Conn::new(ws).close(),
    }
}

/// `--stdin`: commands for the room `""` from standard input, its events to standard output.
fn read_stdin(shared: Arc<Shared>) {
    let (tx, rx) = mpsc::channel::<Out>();
    if let Ok(mut c) = shared.controllers.lock() {
        c.insert(String::new(), (u64::MAX, tx));
    }
    thread::spawn(move || {
        for out in rx {
            if let Out::Text(t) = out {
                println!("{t}");
                let _ = std::io::stdout().flush();
            }
        }
    });
    thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if !line.trim().is_empty() {
                agent::command(&shared, "", &line);
            }
        }
    });
}
