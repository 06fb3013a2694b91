//! The load generator behind `npm run bench:peer` (`bench/peer-scale.mjs` builds and runs it; the figures are in
//! BENCHMARKS.md). It starts `abp-peer` itself on 127.0.0.1 (port 0, a token file in a fresh directory,
//! `ABP_PEER_TOKEN` set), measures, and prints one JSON object on stdout; progress goes to stderr.
//!
//! - idle: N app connections held open by one peer; after each step, the peer's CPU over a few seconds
//!   (`/proc/PID/stat`) and its RSS (`/proc/PID/status`). Twice: on `/agent/<room-i>`, each answering the ABP
//!   handshake, so that the peer holds a connected `AgentCore` and a hub registration per socket (what a browser
//!   app costs it); and on `/relay/<room-i>/app`, sockets waiting for their agent.
//! - relay: an agent socket on `/relay/R/agent` (with the token) calls, an app on `/relay/R/app` answers. The
//!   baseline is the same caller and the same app code with the app as a WebSocket server in this process, so
//!   the difference is what the relay adds: its work and one more hop each way.
//! - gateway: an MCP client on `abp-peer mcp`'s stdin and stdout sends `tools/call`; a native ABP app joined at
//!   `/agent` answers `capabilities/call`. The baseline is the same client on a stdio MCP server that answers by
//!   itself (this program, `scale stdio-echo`).
//!
//! Blocking sockets and threads: only a few sockets carry traffic, and idle ones are held without a thread. Every
//! read has a timeout, and a watchdog ends everything (the peers too) at the deadline.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Message, WebSocket};

/// No single read or write waits longer.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a serving loop wakes to see whether it should stop.
const POLL: Duration = Duration::from_millis(500);
/// Threads that open the idle connections.
const OPENERS: usize = 8;
/// File descriptors kept free besides the connections (listeners, pipes, /proc reads).
const SPARE_FDS: u64 = 64;

#[derive(Parser)]
#[command(
    name = "scale",
    about = "abp-peer under load: idle connections, the relay, the MCP gateway, memory under its caps"
)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Measures everything and prints one JSON object.
    Run(RunArgs),
    /// A stdio MCP server that answers tools/call itself (the gateway's baseline).
    StdioEcho,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The abp-peer binary to start.
    #[arg(long)]
    peer: PathBuf,
    /// Idle connections held, step by step (cumulative).
    #[arg(long, value_delimiter = ',', default_value = "1000,5000,10000,15000")]
    steps: Vec<u64>,
    /// Seconds over which the peer's CPU is sampled while the connections idle.
    #[arg(long, default_value_t = 5.0)]
    idle_sample: f64,
    /// After the last step, all closed and as many opened again, this many times.
    #[arg(long, default_value_t = 2)]
    reopen_cycles: u32,
    /// Calls in flight for the relay and the gateway.
    #[arg(long, value_delimiter = ',', default_value = "1,64")]
    concurrency: Vec<usize>,
    /// Seconds measured in each round (after a warm-up of half a second); each figure pools two rounds.
    #[arg(long, default_value_t = 3.0)]
    window: f64,
    /// Everything ends after this many seconds, finished or not.
    #[arg(long, default_value_t = 300.0)]
    deadline: f64,
    /// Only these parts (idle, relay, gateway, cluster, caps, burst, tasks).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "idle,relay,gateway,cluster,caps,burst,tasks"
    )]
    only: Vec<String>,
    /// The apps of the reconnect storm (`burst`), all connecting at once.
    #[arg(long, default_value_t = 10_000)]
    burst: u64,
}

type Ws = WebSocket<TcpStream>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Child processes still running, for the watchdog and a panic to end.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn kill_children() {
    for pid in lock(&CHILDREN).drain(..) {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
}

fn forget_child(pid: u32) {
    lock(&CHILDREN).retain(|p| *p != pid);
}

fn main() {
    let cli = Cli::parse();
    match cli.mode {
        Mode::StdioEcho => stdio_echo(),
        Mode::Run(args) => {
            let default_hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                kill_children();
                default_hook(info);
            }));
            let deadline = Duration::from_secs_f64(args.deadline);
            thread::spawn(move || {
                thread::sleep(deadline);
                eprintln!("scale: the deadline of {deadline:?} passed; stopping everything");
                kill_children();
                std::process::exit(2);
            });
            let code = match run(&args) {
                Ok(report) => {
                    println!("{report}");
                    0
                }
                Err(e) => {
                    eprintln!("scale: {e}");
                    1
                }
            };
            kill_children();
            std::process::exit(code);
        }
    }
}

fn run(args: &RunArgs) -> Result<Value, String> {
    let token = fresh_token()?;
    let tck = clock_ticks();
    let (soft, hard) = open_files_limit();
    let mut report = json!({
        "machine": machine(),
        "openFiles": { "soft": soft, "hard": hard },
        "loadAverageAtStart": load_average(),
        "windowSeconds": args.window,
        "idleSampleSeconds": args.idle_sample,
    });
    let wants = |part: &str| args.only.iter().any(|p| p == part);
    if wants("idle") {
        let mut idle = Vec::new();
        for kind in [IdleKind::Agent, IdleKind::RelayApp] {
            idle.push(idle_connections(args, &token, kind, tck, soft)?);
        }
        report["idle"] = Value::Array(idle);
    }
    if wants("relay") {
        report["relay"] = relay(args, &token, tck)?;
    }
    if wants("gateway") {
        report["gateway"] = gateway(args, &token, tck)?;
    }
    if wants("cluster") {
        let (plain, tls) = cluster(args, &token, tck)?;
        report["cluster"] = plain;
        report["clusterTls"] = tls;
    }
    if wants("caps") {
        report["caps"] = caps(args, &token)?;
    }
    if wants("burst") {
        report["burst"] = burst(args, &token, soft)?;
    }
    if wants("tasks") {
        report["tasks"] = tasks(args, &token)?;
    }
    report["loadAverageAtEnd"] = json!(load_average());
    Ok(report)
}

// ---------------------------------------------------------------------------------------------------------------
// The peer as a child process, and what /proc says about a process.

struct Peer {
    child: Child,
    addr: SocketAddr,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    dir: PathBuf,
}

impl Peer {
    /// `abp-peer [mode...] --listen 127.0.0.1:0 --token-file DIR/token`, with `ABP_PEER_TOKEN`; ready once it
    /// printed its listening line. `stdio`: stdin and stdout piped (the gateway's MCP host side).
    fn start(bin: &Path, mode: &[&str], token: &str, stdio: bool) -> Result<Peer, String> {
        Peer::start_with(bin, mode, token, stdio, &["--max-connections", "1000000"])
    }

    /// As [`Peer::start`], with `caps` instead of the raised connection cap.
    fn start_with(
        bin: &Path,
        mode: &[&str],
        token: &str,
        stdio: bool,
        caps: &[&str],
    ) -> Result<Peer, String> {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "abp-peer-scale-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let piped = || if stdio { Stdio::piped() } else { Stdio::null() };
        let mut child = Command::new(bin)
            .args(mode)
            // The idle steps hold far more connections than the default cap admits.
            .args(caps)
            .args(["--listen", "127.0.0.1:0", "--token-file"])
            .arg(dir.join("token"))
            .env("ABP_PEER_TOKEN", token)
            .stdin(piped())
            .stdout(piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        lock(&CHILDREN).push(child.id());
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("abp-peer listening on ws://") {
                    let _ = tx.send(addr.to_owned());
                } else if !line.starts_with("abp-peer: token") {
                    eprintln!("  [peer] {line}");
                }
            }
        });
        let mut peer = Peer {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            dir,
        };
        let addr = rx
            .recv_timeout(IO_TIMEOUT)
            .map_err(|_| "abp-peer did not print its listening line within 10 s")?;
        peer.addr = addr
            .parse()
            .map_err(|e| format!("a listening address {addr:?}: {e}"))?;
        Ok(peer)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        forget_child(self.child.id());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// 64 hex digits from the OS RNG, for `ABP_PEER_TOKEN`.
fn fresh_token() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// User + system CPU time of a process (`pid`, or "self"), in clock ticks.
fn cpu_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After "pid (comm) ": state is the first field, utime the 12th and stime the 13th.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 2..)?
        .split_whitespace()
        .collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// A `/proc/PID/status` field as a number (VmRSS and VmHWM are in KiB).
fn status_field(pid: &str, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// The machine's load over the last 1, 5 and 15 minutes: how busy it was besides this bench.
fn load_average() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The soft and hard limits on open files of this process (the peers inherit them).
fn open_files_limit() -> (u64, u64) {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or("");
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (
        nums.first().copied().unwrap_or(1024),
        nums.get(1).copied().unwrap_or(1024),
    )
}

/// The kernel's slab memory in KiB, machine-wide (`/proc/meminfo`): where its per-socket structures live, outside
/// any process's RSS.
fn slab_kib() -> Option<u64> {
    status_like("/proc/meminfo", "Slab:")
}

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .ok();
    json!({
        "cores": thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "cpu": model,
        "kernel": kernel,
        "memKiB": status_like("/proc/meminfo", "MemTotal:"),
    })
}

fn status_like(path: &str, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(key))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The share of one core a process used over `span`, by its CPU time before and after.
fn cpu_over(pid: &str, span: Duration, tck: f64) -> Option<f64> {
    let t0 = Instant::now();
    let a = cpu_ticks(pid)?;
    thread::sleep(span);
    let b = cpu_ticks(pid)?;
    Some((b - a) as f64 / tck / t0.elapsed().as_secs_f64())
}

// ---------------------------------------------------------------------------------------------------------------
// WebSocket clients and the ABP app they play.

fn ws_config() -> WebSocketConfig {
    // tungstenite allocates its read buffer up front (128 KiB by default): the idle sockets here would cost this
    // process more memory than the peer.
    WebSocketConfig::default().read_buffer_size(4096)
}

fn ws_connect(addr: SocketAddr, path: &str, token: Option<&str>) -> Result<Ws, String> {
    let stream =
        TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut request = format!("ws://{addr}{path}")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    if let Some(token) = token {
        let value = format!("Bearer {token}")
            .parse()
            .map_err(|_| "a bad token".to_owned())?;
        request.headers_mut().insert("authorization", value);
    }
    let (ws, _) = tungstenite::client::client_with_config(request, stream, Some(ws_config()))
        .map_err(|e| format!("handshake on {path}: {e}"))?;
    Ok(ws)
}

/// The next text frame; an error for a close, a failure or `IO_TIMEOUT` of silence.
fn ws_recv(ws: &mut Ws) -> Result<String, String> {
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => return Ok(t.as_str().to_owned()),
            Ok(Message::Close(_)) => return Err("the connection closed".into()),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                return Err("nothing arrived within 10 s".into())
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The capability the bench app's calls use.
fn echo_capability() -> Value {
    json!({ "name": "echo", "description": "Answers with its params", "inputSchema": { "type": "object" } })
}

/// The same, run as an MCP task when the host takes one (the `tasks` part).
fn job_capability() -> Value {
    json!({ "name": "job", "description": "Answers with its params, as a task", "inputSchema": { "type": "object" },
        "task": "optional" })
}

/// What a minimal ABP app answers: `initialize` with its one capability, `capabilities/call` with its params.
fn abp_answer(text: &str) -> Option<String> {
    let v: Value = serde_json::from_str(text).ok()?;
    let id = v.get("id")?;
    let answer = match v.get("type")?.as_str()? {
        "initialize" => json!({ "type": "initialize-result", "id": id, "timestamp": 0,
            "payload": { "sessionId": "bench", "protocolVersion": "0.1",
                "capabilities": [echo_capability(), job_capability()],
                "app": { "id": "bench", "name": "peer-scale", "version": "1" } } }),
        "capabilities/call" => {
            let p = &v["payload"];
            json!({ "type": "capabilities/call-result", "id": id, "timestamp": 0,
                "payload": { "callId": p["callId"], "success": true, "data": p["params"] } })
        }
        _ => return None,
    };
    Some(answer.to_string())
}

/// Plays the ABP app on `ws` until it closes or `stop` is set.
fn serve_app(mut ws: Ws, stop: Arc<AtomicBool>) {
    let _ = ws.get_ref().set_read_timeout(Some(POLL));
    loop {
        match ws.read() {
            Ok(Message::Text(t)) => {
                if let Some(answer) = abp_answer(t.as_str()) {
                    if ws.send(Message::text(answer)).is_err() {
                        return;
                    }
                }
            }
            Ok(Message::Close(_)) => return,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Idle connections.

#[derive(Clone, Copy)]
enum IdleKind {
    /// `/agent/<room-i>`, the ABP handshake answered.
    Agent,
    /// `/relay/<room-i>/app`, no agent ever comes.
    RelayApp,
}

impl IdleKind {
    fn path(self, i: u64) -> String {
        match self {
            IdleKind::Agent => format!("/agent/idle-{i}"),
            IdleKind::RelayApp => format!("/relay/idle-{i}/app"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            IdleKind::Agent => "/agent/<room-i>, ABP handshake answered",
            IdleKind::RelayApp => "/relay/<room-i>/app, waiting for an agent",
        }
    }
}

fn open_idle(addr: SocketAddr, kind: IdleKind, i: u64) -> Result<Ws, String> {
    let mut ws = ws_connect(addr, &kind.path(i), None)?;
    if let IdleKind::Agent = kind {
        let init = ws_recv(&mut ws)?;
        let answer = abp_answer(&init).ok_or_else(|| format!("not an initialize: {init}"))?;
        ws.send(Message::text(answer)).map_err(|e| e.to_string())?;
    }
    Ok(ws)
}

/// Opens connections `from..to` on several threads: those that opened, and the errors of the others.
fn open_many(addr: SocketAddr, kind: IdleKind, from: u64, to: u64) -> (Vec<Ws>, Vec<String>) {
    let per = (to - from).div_ceil(OPENERS as u64).max(1);
    thread::scope(|s| {
        let workers: Vec<_> = (0..OPENERS as u64)
            .map(|w| {
                let (a, b) = ((from + w * per).min(to), (from + (w + 1) * per).min(to));
                s.spawn(move || {
                    let mut open = Vec::new();
                    let mut errors = Vec::new();
                    for i in a..b {
                        match open_idle(addr, kind, i) {
                            Ok(ws) => open.push(ws),
                            Err(e) => errors.push(e),
                        }
                    }
                    (open, errors)
                })
            })
            .collect();
        let mut open = Vec::new();
        let mut errors = Vec::new();
        for w in workers {
            if let Ok((o, e)) = w.join() {
                open.extend(o);
                errors.extend(e);
            }
        }
        (open, errors)
    })
}

/// How many of `held` the peer still has open (reads what is waiting without blocking).
fn still_open(held: &mut [Ws]) -> usize {
    let mut open = 0;
    for ws in held.iter_mut() {
        if ws.get_ref().set_nonblocking(true).is_err() {
            continue;
        }
        let alive = loop {
            match ws.read() {
                Ok(Message::Close(_)) => break false,
                Ok(_) => {}
                Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::WouldBlock => break true,
                Err(_) => break false,
            }
        };
        let _ = ws.get_ref().set_nonblocking(false);
        open += usize::from(alive);
    }
    open
}

fn idle_connections(
    args: &RunArgs,
    token: &str,
    kind: IdleKind,
    tck: f64,
    fd_limit: u64,
) -> Result<Value, String> {
    eprintln!("scale: idle connections on {}", kind.label());
    let peer = Peer::start(&args.peer, &[], token, false)?;
    let pid = peer.pid().to_string();
    let sample = Duration::from_secs_f64(args.idle_sample);
    thread::sleep(Duration::from_secs(1));
    let rss0 = status_field(&pid, "VmRSS:").ok_or("no VmRSS for the peer")?;
    let cpu0 = cpu_over(&pid, sample, tck);
    let slab0 = slab_kib();
    let mut held: Vec<Ws> = Vec::new();
    let mut steps = Vec::new();
    let mut skipped = Vec::new();
    let mut previous_rss = rss0;
    for &n in &args.steps {
        if n + SPARE_FDS > fd_limit {
            skipped.push(json!({ "n": n, "why": format!("the open-files limit is {fd_limit}") }));
            continue;
        }
        let from = held.len() as u64;
        if n <= from {
            continue;
        }
        let t0 = Instant::now();
        let (opened, errors) = open_many(peer.addr, kind, from, n);
        let open_secs = t0.elapsed().as_secs_f64();
        held.extend(opened);
        thread::sleep(Duration::from_secs(1));
        let cpu = cpu_over(&pid, sample, tck);
        let rss = status_field(&pid, "VmRSS:").ok_or("the peer is gone")?;
        let count = held.len() as u64;
        let open = still_open(&mut held);
        let step = json!({
            "n": n,
            "opened": count,
            "failed": errors.len(),
            "firstError": errors.first(),
            "openSeconds": open_secs,
            "stillOpen": open,
            "cpuCores": cpu,
            "rssKiB": rss,
            "bytesPerConnection": (rss.saturating_sub(rss0) * 1024) as f64 / count.max(1) as f64,
            "bytesPerConnectionThisStep": (rss.saturating_sub(previous_rss) * 1024) as f64
                / (count - from).max(1) as f64,
            "threads": status_field(&pid, "Threads:"),
            "kernelSlabKiBAdded": slab_kib().zip(slab0).map(|(a, b)| a as i64 - b as i64),
        });
        eprintln!("  {step}");
        steps.push(step);
        previous_rss = rss;
        if !errors.is_empty() {
            break;
        }
    }
    // Closed, then as many opened again, a few times: the peer's RSS after each tells memory kept for reuse from
    // memory that grows with every cycle.
    let count = held.len() as u64;
    drop(held);
    thread::sleep(Duration::from_secs(2));
    let rss_closed = status_field(&pid, "VmRSS:");
    let mut cycles = Vec::new();
    for _ in 0..args.reopen_cycles {
        let (reopened, errors) = open_many(peer.addr, kind, 0, count);
        thread::sleep(Duration::from_secs(1));
        cycles.push(json!({
            "opened": reopened.len(),
            "failed": errors.len(),
            "rssKiB": status_field(&pid, "VmRSS:"),
        }));
        drop(reopened);
        thread::sleep(Duration::from_secs(1));
    }
    Ok(json!({
        "endpoint": kind.label(),
        "rssKiB0": rss0,
        "cpuCores0": cpu0,
        "steps": steps,
        "skipped": skipped,
        "closed": count,
        "rssKiBAfterClosing": rss_closed,
        "reopenCycles": cycles,
        "peakRssKiB": status_field(&pid, "VmHWM:"),
    }))
}

// ---------------------------------------------------------------------------------------------------------------
// Calls in flight: one driver for both wires.

/// A connection that carries one request per message and its answers.
trait Pipe {
    fn send(&mut self, text: String) -> Result<(), String>;
    fn recv(&mut self) -> Result<String, String>;
}

struct WsPipe(Ws);

impl Pipe for WsPipe {
    fn send(&mut self, text: String) -> Result<(), String> {
        self.0.send(Message::text(text)).map_err(|e| e.to_string())
    }

    fn recv(&mut self) -> Result<String, String> {
        ws_recv(&mut self.0)
    }
}

/// A request with number `n`, and the number and success of an answer (`None`: not an answer).
struct Wire {
    request: fn(u64) -> String,
    answer: fn(&str) -> Option<(u64, bool)>,
}

const ABP: Wire = Wire {
    request: |n| {
        json!({ "type": "capabilities/call", "id": format!("m{n}"), "timestamp": 0,
            "payload": { "callId": format!("c{n}"), "capability": "echo", "params": { "text": "hello", "n": n } } })
        .to_string()
    },
    answer: |text| {
        let v: Value = serde_json::from_str(text).ok()?;
        let p = v.get("payload")?;
        let n = p.get("callId")?.as_str()?.strip_prefix('c')?.parse().ok()?;
        Some((n, p.get("success") == Some(&Value::Bool(true))))
    },
};

const MCP: Wire = Wire {
    request: |n| {
        json!({ "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": { "name": "echo", "arguments": { "text": "hello", "n": n } } })
        .to_string()
    },
    answer: |text| {
        let v: Value = serde_json::from_str(text).ok()?;
        let n = v.get("id")?.as_u64()?;
        let result = v.get("result")?;
        Some((n, result.get("isError") != Some(&Value::Bool(true))))
    },
};

/// One round: `concurrency` calls kept in flight for a warm-up and then `window`.
struct Round {
    calls: u64,
    errors: u64,
    secs: f64,
    latencies_us: Vec<f64>,
    /// CPU ticks over the measured window: of `watch` (the peer), and of this process.
    watched_ticks: Option<u64>,
    own_ticks: u64,
}

fn round(
    pipe: &mut dyn Pipe,
    wire: &Wire,
    next: &mut u64,
    concurrency: usize,
    window: Duration,
    watch: Option<&str>,
) -> Result<Round, String> {
    let start = Instant::now();
    let measure_from = start + Duration::from_millis(500);
    let end = measure_from + window;
    let mut sent: HashMap<u64, Instant> = HashMap::with_capacity(concurrency * 2);
    let send = |pipe: &mut dyn Pipe, next: &mut u64, sent: &mut HashMap<u64, Instant>| {
        let n = *next;
        *next += 1;
        sent.insert(n, Instant::now());
        pipe.send((wire.request)(n))
    };
    for _ in 0..concurrency {
        send(pipe, next, &mut sent)?;
    }
    let mut r = Round {
        calls: 0,
        errors: 0,
        secs: 0.0,
        latencies_us: Vec::new(),
        watched_ticks: None,
        own_ticks: 0,
    };
    // (when, watched ticks, own ticks) at the start of the measured window.
    let mut began: Option<(Instant, Option<u64>, u64)> = None;
    let mut ended = false;
    while !sent.is_empty() {
        let text = pipe.recv()?;
        let Some((n, ok)) = (wire.answer)(&text) else {
            continue; // a notification
        };
        let Some(at) = sent.remove(&n) else {
            continue;
        };
        let now = Instant::now();
        if began.is_none() && now >= measure_from {
            began = Some((
                now,
                watch.and_then(cpu_ticks),
                cpu_ticks("self").unwrap_or(0),
            ));
        }
        if let (Some((t0, w0, o0)), false) = (began, ended) {
            if now >= end {
                ended = true;
                r.secs = (now - t0).as_secs_f64();
                r.watched_ticks = watch.and_then(cpu_ticks).zip(w0).map(|(b, a)| b - a);
                r.own_ticks = cpu_ticks("self").unwrap_or(0).saturating_sub(o0);
            } else {
                r.calls += 1;
                r.errors += u64::from(!ok);
                r.latencies_us.push((now - at).as_secs_f64() * 1e6);
            }
        }
        if !ended {
            send(pipe, next, &mut sent)?;
        }
    }
    Ok(r)
}

/// What the rounds of one comparison share.
struct Rounds<'a> {
    wire: &'a Wire,
    /// The next request's number (never reused on a connection).
    next: u64,
    window: Duration,
    /// The peer's pid.
    watch: String,
    tck: f64,
}

/// Two rounds of each, interleaved (baseline, subject, baseline, subject), pooled per side.
fn compare(
    r: &mut Rounds<'_>,
    baseline: &mut dyn Pipe,
    subject: &mut dyn Pipe,
    concurrency: usize,
) -> Result<Value, String> {
    let mut base = Vec::new();
    let mut sub = Vec::new();
    for _ in 0..2 {
        base.push(round(
            baseline,
            r.wire,
            &mut r.next,
            concurrency,
            r.window,
            None,
        )?);
        sub.push(round(
            subject,
            r.wire,
            &mut r.next,
            concurrency,
            r.window,
            Some(&r.watch),
        )?);
    }
    let b = summary(base, r.tck);
    let s = summary(sub, r.tck);
    eprintln!("  {concurrency} in flight: baseline {b}\n  {concurrency} in flight: subject  {s}");
    Ok(json!({ "concurrency": concurrency, "baseline": b, "subject": s }))
}

fn summary(rounds: Vec<Round>, tck: f64) -> Value {
    let secs: f64 = rounds.iter().map(|r| r.secs).sum();
    let calls: u64 = rounds.iter().map(|r| r.calls).sum();
    let errors: u64 = rounds.iter().map(|r| r.errors).sum();
    let watched: Option<u64> = rounds.iter().map(|r| r.watched_ticks).sum();
    let own: u64 = rounds.iter().map(|r| r.own_ticks).sum();
    let mut lat: Vec<f64> = rounds.into_iter().flat_map(|r| r.latencies_us).collect();
    lat.sort_by(f64::total_cmp);
    let pct = |p: usize| {
        lat.get((lat.len() * p / 100).min(lat.len().saturating_sub(1)))
            .copied()
    };
    json!({
        "calls": calls,
        "errors": errors,
        "seconds": secs,
        "callsPerSecond": calls as f64 / secs.max(1e-9),
        "p50us": pct(50),
        "p99us": pct(99),
        "meanUs": lat.iter().sum::<f64>() / lat.len().max(1) as f64,
        "peerCores": watched.map(|t| t as f64 / tck / secs.max(1e-9)),
        "clientCores": own as f64 / tck / secs.max(1e-9),
    })
}

// ---------------------------------------------------------------------------------------------------------------
// The relay.

fn relay(args: &RunArgs, token: &str, tck: f64) -> Result<Value, String> {
    eprintln!("scale: calls through the relay");
    let stop = Arc::new(AtomicBool::new(false));
    let peer = Peer::start(&args.peer, &[], token, false)?;
    let app = ws_connect(peer.addr, "/relay/bench/app", None)?;
    let serving = thread::spawn({
        let stop = stop.clone();
        move || serve_app(app, stop)
    });
    let agent = ws_connect(peer.addr, "/relay/bench/agent", Some(token))?;
    // The baseline: the same app code as a WebSocket server in this process.
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let echo_addr = listener.local_addr().map_err(|e| e.to_string())?;
    let echo_server = thread::spawn({
        let stop = stop.clone();
        move || {
            if let Ok((stream, _)) = listener.accept() {
                let _ = stream.set_nodelay(true);
                let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
                let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
                if let Ok(ws) = tungstenite::accept_with_config(stream, Some(ws_config())) {
                    serve_app(ws, stop);
                }
            }
        }
    });
    let echo = ws_connect(echo_addr, "/", None)?;
    let (mut subject, mut baseline) = (WsPipe(agent), WsPipe(echo));
    let mut rounds = Rounds {
        wire: &ABP,
        next: 0,
        window: Duration::from_secs_f64(args.window),
        watch: peer.pid().to_string(),
        tck,
    };
    let mut rows = Vec::new();
    for &c in &args.concurrency {
        rows.push(compare(&mut rounds, &mut baseline, &mut subject, c)?);
    }
    stop.store(true, Ordering::Relaxed);
    drop((subject, baseline));
    let _ = serving.join();
    let _ = echo_server.join();
    Ok(Value::Array(rows))
}

// ---------------------------------------------------------------------------------------------------------------
// Two processes sharing rooms over NATS (`--nats`).

/// The control protocol: a call with `ref` n, answered by its `settled` event.
const CONTROL: Wire = Wire {
    request: |n| {
        json!({ "op": "call", "ref": n, "capability": "echo", "params": { "text": "hello", "n": n } })
            .to_string()
    },
    answer: |text| {
        let v: Value = serde_json::from_str(text).ok()?;
        if v.get("op")?.as_str()? != "settled" {
            return None;
        }
        let n = v.get("ref")?.as_u64()?;
        Some((
            n,
            v.pointer("/response/success") == Some(&Value::Bool(true)),
        ))
    },
};

/// `nats-server` on a free port of 127.0.0.1, locked as abp-peer requires (a user allowed `abp.>` only), with TLS
/// (a throwaway CA from openssl) or without; killed when dropped. `.1` is what an abp-peer needs to join it.
struct Nats(Child, Vec<String>);

impl Nats {
    fn start(tls: bool) -> Result<Nats, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let dir =
            std::env::temp_dir().join(format!("abp-peer-scale-nats-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut config = format!(
            "listen: \"127.0.0.1:{port}\"\nauthorization {{ users = [ {{ user: abp, password: scale-pw, \
             permissions: {{ publish: [\"abp.>\"], subscribe: [\"abp.>\"] }} }} ] }}\n"
        );
        let mut join = vec!["--nats".to_owned()];
        if tls {
            let ssl = |args: &[&str]| -> Result<(), String> {
                let ok = Command::new("openssl")
                    .args(args)
                    .current_dir(&dir)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .map_err(|e| format!("openssl: {e}"))?
                    .success();
                if ok {
                    Ok(())
                } else {
                    Err(format!("openssl {args:?} failed"))
                }
            };
            let ec = [
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
            ];
            ssl(&[
                &["req", "-x509"],
                &ec[..],
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=scale CA",
                ],
            ]
            .concat())?;
            ssl(&[
                &["req"],
                &ec[..],
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat())?;
            std::fs::write(dir.join("server.ext"), "subjectAltName=IP:127.0.0.1\n")
                .map_err(|e| e.to_string())?;
            ssl(&[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "server.ext",
            ])?;
            config += &format!(
                "tls {{ cert_file: {:?}, key_file: {:?} }}\n",
                dir.join("server.pem"),
                dir.join("server.key")
            );
            join.extend([
                format!("tls://abp:scale-pw@127.0.0.1:{port}"),
                "--nats-tlsca".to_owned(),
                dir.join("ca.pem").display().to_string(),
            ]);
        } else {
            join.push(format!("nats://abp:scale-pw@127.0.0.1:{port}"));
        }
        std::fs::write(dir.join("nats.conf"), config).map_err(|e| e.to_string())?;
        let bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or("nats-server");
        let child = Command::new(bin)
            .arg("-c")
            .arg(dir.join("nats.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start nats-server (apt-get install nats-server): {e}"))?;
        lock(&CHILDREN).push(child.id());
        let deadline = Instant::now() + IO_TIMEOUT;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err("nats-server did not start within 10 s".into());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(Nats(child, join))
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        forget_child(self.0.id());
    }
}

/// A controller at `path` of `addr`, once the room's agent (on whichever process) has its app's session.
fn controller(addr: SocketAddr, path: &str, token: &str) -> Result<Ws, String> {
    let mut ws = ws_connect(addr, path, Some(token))?;
    let deadline = Instant::now() + IO_TIMEOUT;
    let mut n = 0;
    loop {
        n += 1;
        let asked = format!("ready-{n}");
        ws.send(Message::text(
            json!({ "op": "status", "ref": asked }).to_string(),
        ))
        .map_err(|e| e.to_string())?;
        loop {
            let v: Value = serde_json::from_str(&ws_recv(&mut ws)?).unwrap_or(Value::Null);
            if v["ref"] == asked.as_str() {
                if v["connected"] == true {
                    return Ok(ws);
                }
                break;
            }
        }
        if Instant::now() > deadline {
            return Err(format!("{path}: the app did not connect within 10 s"));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A controller's calls to the app on process A: from A itself (baseline), and from B through NATS (subject). Both
/// processes run with `--nats`; each side has a room of its own (and its own app), so neither hears the other.
/// Then the cost of TLS: B's calls over the plaintext server (baseline) against B's over a TLS one (subject), the
/// same rooms and app process layout, interleaved.
fn cluster(args: &RunArgs, token: &str, tck: f64) -> Result<(Value, Value), String> {
    eprintln!("scale: a controller's calls, on the app's process and from another one over NATS (plain and TLS)");
    let (plain, tls) = (Nats::start(false)?, Nats::start(true)?);
    let strs = |n: &Nats| -> Vec<String> { n.1.clone() };
    let (plain_args, tls_args) = (strs(&plain), strs(&tls));
    let plain_args: Vec<&str> = plain_args.iter().map(String::as_str).collect();
    let tls_args: Vec<&str> = tls_args.iter().map(String::as_str).collect();
    let a = Peer::start(&args.peer, &plain_args, token, false)?;
    let b = Peer::start(&args.peer, &plain_args, token, false)?;
    let a_tls = Peer::start(&args.peer, &tls_args, token, false)?;
    let b_tls = Peer::start(&args.peer, &tls_args, token, false)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut apps = Vec::new();
    for (addr, room) in [(a.addr, "here"), (a.addr, "there"), (a_tls.addr, "there")] {
        let mut app = ws_connect(addr, &format!("/agent/{room}"), None)?;
        let init = ws_recv(&mut app)?;
        let answer = abp_answer(&init).ok_or_else(|| format!("not an initialize: {init}"))?;
        app.send(Message::text(answer)).map_err(|e| e.to_string())?;
        apps.push(thread::spawn({
            let stop = stop.clone();
            move || serve_app(app, stop)
        }));
    }
    let mut local = WsPipe(controller(a.addr, "/control/here", token)?);
    let mut over_plain = WsPipe(controller(b.addr, "/control/there", token)?);
    let mut over_tls = WsPipe(controller(b_tls.addr, "/control/there", token)?);
    let mut rounds = Rounds {
        wire: &CONTROL,
        next: 0,
        window: Duration::from_secs_f64(args.window),
        watch: b.pid().to_string(),
        tck,
    };
    let mut rows = Vec::new();
    for &c in &args.concurrency {
        rows.push(compare(&mut rounds, &mut local, &mut over_plain, c)?);
    }
    rounds.watch = b_tls.pid().to_string();
    let mut tls_rows = Vec::new();
    for &c in &args.concurrency {
        tls_rows.push(compare(&mut rounds, &mut over_plain, &mut over_tls, c)?);
    }
    stop.store(true, Ordering::Relaxed);
    drop((local, over_plain, over_tls));
    for app in apps {
        let _ = app.join();
    }
    drop((a, b, a_tls, b_tls, plain, tls));
    Ok((Value::Array(rows), Value::Array(tls_rows)))
}

// ---------------------------------------------------------------------------------------------------------------
// The MCP gateway.

/// An MCP client on a child's stdin and stdout (newline-delimited JSON-RPC).
struct Mcp {
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Mcp {
    fn new(stdin: ChildStdin, stdout: ChildStdout) -> Mcp {
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp { stdin, lines }
    }

    /// Sends a request with a string id (the calls' ids are numbers) and waits for its answer.
    fn request(&mut self, id: &str, method: &str, params: Value) -> Result<Value, String> {
        self.send(
            json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string(),
        )?;
        let deadline = Instant::now() + IO_TIMEOUT;
        while Instant::now() < deadline {
            let line = self.recv()?;
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if v.get("id").and_then(Value::as_str) == Some(id) {
                    return v
                        .get("result")
                        .cloned()
                        .ok_or_else(|| format!("{method} failed: {v}"));
                }
            }
        }
        Err(format!("no answer to {method} within 10 s"))
    }

    fn initialize(&mut self) -> Result<(), String> {
        self.request(
            "init",
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": { "name": "peer-scale", "version": "1" } }),
        )?;
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string())
    }

    /// Asks for the tools until `echo` is among them.
    fn wait_for_echo(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + IO_TIMEOUT;
        for i in 0.. {
            let tools = self.request(&format!("list-{i}"), "tools/list", json!({}))?;
            let names = tools["tools"].as_array().cloned().unwrap_or_default();
            if names.iter().any(|t| t["name"] == "echo") {
                return Ok(());
            }
            if Instant::now() > deadline {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
        Err("the app's echo tool did not appear within 10 s".into())
    }
}

impl Pipe for Mcp {
    fn send(&mut self, mut text: String) -> Result<(), String> {
        text.push('\n');
        self.stdin
            .write_all(text.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to the MCP server: {e}"))
    }

    fn recv(&mut self) -> Result<String, String> {
        self.lines
            .recv_timeout(IO_TIMEOUT)
            .map_err(|_| "the MCP server said nothing within 10 s".to_owned())
    }
}

/// This program as a child in `stdio-echo` mode, killed when dropped.
struct EchoServer(Child);

impl Drop for EchoServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        forget_child(self.0.id());
    }
}

fn gateway(args: &RunArgs, token: &str, tck: f64) -> Result<Value, String> {
    eprintln!("scale: calls through the MCP gateway");
    let stop = Arc::new(AtomicBool::new(false));
    let mut peer = Peer::start(&args.peer, &["mcp"], token, true)?;
    let mut subject = Mcp::new(
        peer.stdin.take().ok_or("no stdin")?,
        peer.stdout.take().ok_or("no stdout")?,
    );
    subject.initialize()?;
    let app = ws_connect(peer.addr, "/agent", None)?;
    let serving = thread::spawn({
        let stop = stop.clone();
        move || serve_app(app, stop)
    });
    subject.wait_for_echo()?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .arg("stdio-echo")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the stdio echo server: {e}"))?;
    lock(&CHILDREN).push(child.id());
    let mut baseline = Mcp::new(
        child.stdin.take().ok_or("no stdin")?,
        child.stdout.take().ok_or("no stdout")?,
    );
    let echo = EchoServer(child);
    baseline.initialize()?;
    let mut rounds = Rounds {
        wire: &MCP,
        next: 0,
        window: Duration::from_secs_f64(args.window),
        watch: peer.pid().to_string(),
        tck,
    };
    let mut rows = Vec::new();
    for &c in &args.concurrency {
        rows.push(compare(&mut rounds, &mut baseline, &mut subject, c)?);
    }
    stop.store(true, Ordering::Relaxed);
    drop(peer);
    drop(echo);
    let _ = serving.join();
    Ok(Value::Array(rows))
}

/// `scale stdio-echo`: answers `initialize`, `tools/list` and `tools/call` (with its arguments, shaped as the
/// gateway shapes an object result) on stdin and stdout until stdin closes.
fn stdio_echo() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines().map_while(Result::ok) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = v.get("id").cloned() else {
            continue; // a notification
        };
        let result = match v["method"].as_str() {
            Some("initialize") => json!({ "protocolVersion": v["params"]["protocolVersion"],
                "capabilities": { "tools": { "listChanged": true } },
                "serverInfo": { "name": "stdio-echo", "version": "1" } }),
            Some("tools/list") => json!({ "tools": [echo_capability()] }),
            Some("tools/call") => {
                let data = v["params"]["arguments"].clone();
                json!({ "content": [{ "type": "text", "text": data.to_string() }], "structuredContent": data })
            }
            _ => continue,
        };
        let answer = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// What a flood leaves the peer holding, with its default caps.

/// The peer's RSS now and at its peak, in KiB.
fn rss(pid: &str) -> Value {
    json!({ "rssKiB": status_field(pid, "VmRSS:"), "peakKiB": status_field(pid, "VmHWM:") })
}

/// Sends `frame` on `ws` until the peer closes it or `limit` frames went; how many went.
fn flood(ws: &mut Ws, frame: &str, limit: usize) -> usize {
    let mut sent = 0;
    while sent < limit {
        if ws.send(Message::text(frame)).is_err() {
            break;
        }
        sent += 1;
    }
    sent
}

/// Three floods against one peer with the default caps, the peer's memory after each: `rooms` relay rooms whose
/// app sends 16 MiB in 256 KiB frames to an agent that never reads; as many apps alone in their rooms sending
/// the same to nobody; then 1,000 sockets that never finish their request.
fn caps(args: &RunArgs, token: &str) -> Result<Value, String> {
    const ROOMS: usize = 64;
    let peer = Peer::start_with(&args.peer, &[], token, false, &[])?;
    let pid = peer.pid().to_string();
    let start = rss(&pid);
    let frame = "x".repeat(256 * 1024);
    let limit = 64; // 16 MiB each
    let mut agents = Vec::new();
    let mut sent = 0usize;
    let mut closed = 0usize;
    for room in 0..ROOMS {
        let agent = ws_connect(peer.addr, &format!("/relay/f{room}/agent"), Some(token))?;
        let mut app = ws_connect(peer.addr, &format!("/relay/f{room}/app"), None)?;
        let n = flood(&mut app, &frame, limit);
        sent += n;
        closed += usize::from(n < limit || ws_recv(&mut app).is_err());
        agents.push(agent);
    }
    let unread = rss(&pid);
    let mut alone = Vec::new();
    let mut sent_alone = 0usize;
    let mut closed_alone = 0usize;
    for room in 0..ROOMS {
        let mut app = ws_connect(peer.addr, &format!("/relay/e{room}/app"), None)?;
        let n = flood(&mut app, &frame, limit);
        sent_alone += n;
        closed_alone += usize::from(n < limit || ws_recv(&mut app).is_err());
        alone.push(app);
    }
    let nobody = rss(&pid);
    let silent: Vec<TcpStream> = (0..1000)
        .filter_map(|_| TcpStream::connect_timeout(&peer.addr, IO_TIMEOUT).ok())
        .collect();
    thread::sleep(Duration::from_secs(1));
    let heads = rss(&pid);
    drop((agents, alone, silent));
    thread::sleep(Duration::from_secs(1));
    Ok(json!({
        "rooms": ROOMS,
        "frameBytes": frame.len(),
        "framesPerFlood": limit,
        "start": start,
        "unreadAgent": { "framesSent": sent, "sendersClosed": closed, "memory": unread },
        "emptyRoom": { "framesSent": sent_alone, "sendersClosed": closed_alone, "memory": nobody },
        "silentSockets": { "opened": 1000, "memory": heads },
        "afterClosing": rss(&pid),
    }))
}

// ---------------------------------------------------------------------------------------------------------------
// A reconnect storm: every app of a relay connecting at once.

/// What one thread of the storm saw: apps in, refused or closed, its first error, when its last was answered, and
/// the sockets it keeps open until the peer's memory is read.
struct StormThread {
    ok: u64,
    refused: u64,
    first_error: Option<String>,
    done: Duration,
    _kept: Vec<TcpStream>,
}

/// `args.burst` apps (relay app sides, a room each) all connect at once, as after a network blip, from 50 threads
/// that each connect and send their upgrade without waiting, then read the answers: how many got in (101), how
/// many were refused or closed, and how long until the last was in.
fn burst(args: &RunArgs, token: &str, soft_fds: u64) -> Result<Value, String> {
    const THREADS: u64 = 50;
    let n = args.burst.min(soft_fds.saturating_sub(SPARE_FDS));
    eprintln!("scale: a reconnect storm of {n} apps at once");
    let peer = Peer::start(&args.peer, &[], token, false)?;
    let pid = peer.pid().to_string();
    let addr = peer.addr;
    let per = n.div_ceil(THREADS);
    let start = Arc::new(std::sync::Barrier::new(THREADS as usize));
    let t0 = Instant::now();
    let results: Vec<StormThread> = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|w| {
                let start = start.clone();
                s.spawn(move || {
                    let (from, to) = ((w * per).min(n), ((w + 1) * per).min(n));
                    let mut sent = Vec::new();
                    let mut first_error = None;
                    start.wait();
                    for i in from..to {
                        let request = format!(
                            "GET /relay/storm{i}/app HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
                             Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
                        );
                        let opened = TcpStream::connect_timeout(&addr, Duration::from_secs(60))
                            .and_then(|mut c| c.write_all(request.as_bytes()).map(|()| c));
                        match opened {
                            Ok(c) => sent.push(c),
                            Err(e) => {
                                first_error.get_or_insert_with(|| format!("connect: {e}"));
                            }
                        }
                    }
                    let (mut ok, mut refused) = (0u64, 0u64);
                    let mut kept = Vec::new();
                    for mut c in sent {
                        let _ = c.set_read_timeout(Some(Duration::from_secs(60)));
                        let mut head = [0u8; 12];
                        match c.read_exact(&mut head) {
                            Ok(()) if &head == b"HTTP/1.1 101" => {
                                ok += 1;
                                kept.push(c);
                            }
                            Ok(()) => {
                                refused += 1;
                                first_error.get_or_insert_with(|| String::from_utf8_lossy(&head).into_owned());
                            }
                            Err(e) => {
                                refused += 1;
                                first_error.get_or_insert_with(|| format!("read: {e}"));
                            }
                        }
                    }
                    StormThread {
                        ok,
                        refused,
                        first_error,
                        done: t0.elapsed(),
                        _kept: kept,
                    }
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    let accepted: u64 = results.iter().map(|r| r.ok).sum();
    let refused: u64 = results.iter().map(|r| r.refused).sum();
    let last = results.iter().map(|r| r.done).max().unwrap_or_default();
    let first_error = results.iter().find_map(|r| r.first_error.clone());
    thread::sleep(Duration::from_secs(1));
    let memory = rss(&pid);
    drop(results);
    drop(peer);
    Ok(json!({
        "apps": n,
        "accepted": accepted,
        "refusedOrClosed": refused,
        "failedToConnect": n - accepted - refused,
        "firstError": first_error,
        "secondsToLast": last.as_secs_f64(),
        "memory": memory,
    }))
}

// ---------------------------------------------------------------------------------------------------------------
// MCP tasks under their bounds.

/// 10,000 MCP tasks through `abp-peer mcp` on stdio (revision 2026-07-28, the tasks extension declared), each
/// finishing with a 64 KiB result, against a native app: the gateway's RSS before, and once all have finished
/// (it keeps at most 1,024 tasks and 64 MiB of results); and how many of the first and last 100 `tasks/get` still
/// finds.
fn tasks(args: &RunArgs, token: &str) -> Result<Value, String> {
    const TASKS: usize = 10_000;
    eprintln!("scale: {TASKS} MCP tasks with 64 KiB results");
    let stop = Arc::new(AtomicBool::new(false));
    let mut peer = Peer::start(&args.peer, &["mcp"], token, true)?;
    let pid = peer.pid().to_string();
    let mut mcp = Mcp::new(
        peer.stdin.take().ok_or("no stdin")?,
        peer.stdout.take().ok_or("no stdout")?,
    );
    let app = ws_connect(peer.addr, "/agent", None)?;
    let serving = thread::spawn({
        let stop = stop.clone();
        move || serve_app(app, stop)
    });
    mcp.initialize()?;
    mcp.wait_for_echo()?;
    let before = rss(&pid);
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "peer-scale", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } } });
    let blob = "x".repeat(64 * 1024);
    let t0 = Instant::now();
    let mut ids = Vec::with_capacity(TASKS);
    for n in 0..TASKS {
        let created = mcp.request(
            &format!("task-{n}"),
            "tools/call",
            json!({ "name": "job", "arguments": { "blob": blob, "n": n }, "_meta": meta }),
        )?;
        let id = created["taskId"]
            .as_str()
            .ok_or_else(|| format!("not a CreateTaskResult: {created}"))?;
        ids.push(id.to_owned());
    }
    let made = t0.elapsed();
    let get = |mcp: &mut Mcp, n: usize, id: &str| {
        mcp.request(
            &format!("get-{n}"),
            "tasks/get",
            json!({ "taskId": id, "_meta": meta }),
        )
    };
    // Until the last one has finished.
    let deadline = Instant::now() + IO_TIMEOUT;
    while get(&mut mcp, 0, &ids[TASKS - 1])?["status"] != "completed" {
        if Instant::now() > deadline {
            return Err("the last task did not finish within 10 s".into());
        }
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(Duration::from_secs(1));
    let after = rss(&pid);
    let found = |mcp: &mut Mcp, range: std::ops::Range<usize>| {
        range.filter(|&n| get(mcp, n, &ids[n]).is_ok()).count()
    };
    let first = found(&mut mcp, 0..100);
    let last = found(&mut mcp, TASKS - 100..TASKS);
    stop.store(true, Ordering::Relaxed);
    drop(mcp);
    let _ = serving.join();
    drop(peer);
    Ok(json!({
        "tasks": TASKS,
        "resultBytes": blob.len(),
        "secondsToMake": made.as_secs_f64(),
        "before": before,
        "after": after,
        "firstHundredFound": first,
        "lastHundredFound": last,
    }))
}
