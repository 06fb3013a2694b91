//! `abp-peer mcp`: an MCP server on stdin/stdout (the MCP stdio transport) whose tools are the capabilities of
//! the browser app that joined `/agent` (or `/agent/<room>` with `--room`). An LLM host (Claude Desktop, Cursor,
//! the MCP Inspector) starts it as a command; the app connects to it with
//! `app.listen(await WebSocketTransport.connect('ws://127.0.0.1:PORT/agent'))`.
//!
//! What it serves is [`crate::gateway`]'s, which knows no IO; this module is its edges on one process: stdin and
//! stdout, the hub (the app's events in, its commands out, hosts joined through `/mcp-host`), the HTTP endpoint
//! (`crate::mcp_http`) and, with `--nats`, the other processes (`crate::mcp_remote`).
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

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::control::{Command, Envelope, Event};
use crate::edge::HostInput;
use crate::gateway::router::{key_of, shape_of, Routed, Router, Shape};
use crate::gateway::{Clock, Gateway, Output, HTTP, STDIO};
use crate::hub::{lock, Registration};
use crate::mcp_remote::{is_replayed_answer, Follow, Followed};
use crate::server::{self, Routes, Server, ServerOptions};
use crate::switchboard::Switchboard;

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
    /// `--otlp URL`: spans of each request and each hop of its calls, exported to a collector.
    #[command(flatten)]
    pub(crate) otlp: crate::telemetry::OtlpArgs,
}

/// How long the host's going away waits for the app to confirm the cancels before the process exits.
const GOODBYE_MS: u64 = 600;

/// The host on stdin/stdout's name among the hosts of this process another process's gateway serves (with `--nats`).
const STDIO_HOST: &str = "stdio";

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

/// The app's endpoint, and `/mcp-host` for another host's copy of this command (which needs the launch token,
/// written where only this user reads it).
fn routes(room: &str) -> Routes {
    Routes {
        agent_rooms: Some(room.to_owned()),
        control: false,
        relay: false,
        exit: false,
        mcp_hosts: true,
    }
}

/// What a host that joined through the hub (`/mcp-host`, a 2025-11-25 HTTP session, the HTTP endpoint's
/// requests, another process's host) says, to the gateway. `sinks`: where each host's messages go but stdio's.
fn from_joined(
    gateway: &mut Gateway,
    hub: &Switchboard,
    sinks: &mut HashMap<u64, UnboundedSender<Value>>,
    input: HostInput,
) {
    match input {
        HostInput::Joined { host, out } => {
            // Past the gateway's hosts, `out` is dropped, which closes the host's connection.
            if gateway.join(host) {
                sinks.insert(host, out);
            }
        }
        HostInput::Message { host, message } => from_host(gateway, hub, host, message),
        HostInput::Unreadable { host } => gateway.handle_unreadable(host),
        HostInput::Left { host } => {
            sinks.remove(&host);
            gateway.leave(host, Instant::now());
        }
    }
}

/// The host on stdio while another process's gateway serves it: what that gateway says goes to stdout (but its
/// answers to the replayed `initialize`), and the host's requests there are answered here should that process go.
struct StdioFollowed {
    out: UnboundedSender<Value>,
    router: std::sync::Mutex<Router<()>>,
}

impl Followed for StdioFollowed {
    fn sent(&self, message: &Value) {
        match shape_of(message) {
            Shape::Request => {
                let id = message["id"].clone();
                lock(&self.router).open(key_of(&id), id, None, String::new(), ());
            }
            // A request the host cancelled is answered by nobody, not even when that gateway goes.
            Shape::Notification if message["method"] == "notifications/cancelled" => {
                if let Some(id) = message.pointer("/params/requestId") {
                    let _ = lock(&self.router).take(&key_of(id));
                }
            }
            _ => {}
        }
    }

    fn said(&self, message: Value) {
        if is_replayed_answer(&message) {
            return;
        }
        let routed = lock(&self.router).route(message, |(), m| {
            let _ = self.out.send(m);
        });
        // Stdout is the one stream: what names no request of the host's goes there too.
        if let Routed::Unknown(_, message) | Routed::Unclaimed(message) = routed {
            let _ = self.out.send(message);
        }
    }

    fn abandon(&self, why: &str) {
        for ((), error) in lock(&self.router).abandon(why) {
            let _ = self.out.send(error);
        }
    }
}

/// The host on stdin/stdout: its lines in (each read once), the gateway's out (by a writer of its own), and with
/// `--nats` its following of the app: while the app is on another process, that process's gateway serves the
/// host, and what it says comes back here.
struct StdioEdge {
    lines: tokio::io::Split<BufReader<tokio::io::Stdin>>,
    to_stdout: UnboundedSender<Vec<String>>,
    writer: tokio::task::JoinHandle<()>,
    follow: Follow,
    follower: Arc<dyn Followed>,
    from_elsewhere: tokio::sync::mpsc::UnboundedReceiver<Value>,
    /// What another process's gateway said to the host, not written yet.
    elsewhere_said: Vec<String>,
}

impl StdioEdge {
    fn new() -> StdioEdge {
        let (to_stdout, writer) = stdout_writer();
        let (out, from_elsewhere) = unbounded_channel();
        let router = std::sync::Mutex::new(Router::new(false));
        StdioEdge {
            lines: BufReader::new(tokio::io::stdin()).split(b'\n'),
            to_stdout,
            writer,
            follow: Follow::default(),
            follower: Arc::new(StdioFollowed { out, router }),
            from_elsewhere,
            elsewhere_said: Vec::new(),
        }
    }

    /// The gateway's messages for stdout (with `--nats`, without the answers another process's gateway gave the
    /// host already), and what came from another process. False once stdout is closed.
    fn write(&mut self, out: Vec<Value>, clustered: bool) -> bool {
        let mut lines: Vec<String> = out
            .into_iter()
            .filter(|m| !clustered || !is_replayed_answer(m))
            .map(|m| m.to_string())
            .collect();
        lines.append(&mut self.elsewhere_said);
        lines.is_empty() || self.to_stdout.send(lines).is_ok()
    }

    /// A line from the host, read once: to this gateway, or (with `--nats`, while the app is on another process)
    /// to that process's gateway.
    async fn read(
        &mut self,
        gateway: &mut Gateway,
        hub: &Switchboard,
        remote: Option<&Arc<crate::mcp_remote::Remote>>,
        line: String,
    ) {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            gateway.handle_unreadable(STDIO);
            return;
        };
        match remote {
            Some(remote) => {
                let follower = &self.follower;
                for message in self
                    .follow
                    .next(remote, STDIO_HOST, follower, message)
                    .await
                {
                    from_host(gateway, hub, STDIO, message);
                }
            }
            None => from_host(gateway, hub, STDIO, message),
        }
    }

    /// The last messages, then stdout is let go once written.
    async fn close(self, last: Vec<Value>) {
        let _ = self
            .to_stdout
            .send(last.iter().map(Value::to_string).collect());
        drop(self.to_stdout);
        let _ = self.writer.await;
    }
}

/// A host's message to the gateway, now; with `--nats`, with the state of the link to the NATS server as it is
/// now (a call that finds no app is told when the link is down).
fn from_host(gateway: &mut Gateway, hub: &Switchboard, host: u64, message: Value) {
    gateway.set_link_down(hub.link_down());
    gateway.handle_host(host, message, Instant::now());
}

/// What the gateway has to say, carried where it goes: commands to the room's app through the hub (one that
/// cannot reach it is handed back), messages to the hosts' sinks; stdio's are returned, for stdout.
fn carry_out(
    gateway: &mut Gateway,
    hub: &Switchboard,
    room: &str,
    sinks: &HashMap<u64, UnboundedSender<Value>>,
) -> Vec<Value> {
    let mut stdout = Vec::new();
    while let Some(output) = gateway.poll() {
        match output {
            Output::ToHost {
                host: STDIO,
                message,
            } => stdout.push(message),
            Output::ToHost { host, message } => {
                if let Some(sink) = sinks.get(&host) {
                    let _ = sink.send(message);
                }
            }
            Output::ToApp(command) => {
                // Only a call's host waits for an answer, which the gateway gives when the app is gone.
                let call = matches!(command, Command::Call { .. }).then(|| command.clone());
                let envelope = Envelope {
                    reference: Value::Null,
                    command,
                };
                if let (Err(_), Some(call)) = (hub.command(room, envelope), call) {
                    gateway.unsent(call, Instant::now());
                }
            }
        }
    }
    stdout
}

/// What the gateway's edges on one process share.
struct Shared<'a> {
    hub: &'a Arc<Switchboard>,
    streams: Arc<crate::mcp_http::Streams>,
    param_headers: &'a Arc<crate::params::ParamHeaders>,
    remote: &'a Option<Arc<crate::mcp_remote::Remote>>,
}

/// With `--nats`: what serves this process's part among the gateways sharing the app (requests passed here, and
/// the answers to those this process passed on, which go to the HTTP dispatcher through `lines`).
async fn start_remote(
    cluster: Option<&Arc<crate::cluster::Cluster>>,
    room: &str,
    shared: &Shared<'_>,
    lines: &UnboundedSender<Value>,
) -> Result<Option<Arc<crate::mcp_remote::Remote>>, String> {
    let Some(cluster) = cluster else {
        return Ok(None);
    };
    let remote = crate::mcp_remote::Remote::start(
        cluster.clone(),
        shared.hub.clone(),
        room.to_owned(),
        shared.param_headers.clone(),
        lines.clone(),
        shared.streams.clone(),
    )
    .await?;
    Ok(Some(remote))
}

/// `--http`: the Streamable HTTP endpoint at `listen`, its dispatcher (the gateway's messages for the HTTP host,
/// from `for_http`, to the requests' streams), and the start-up lines that say where and with what token.
async fn start_http(
    args: &Args,
    listen: &str,
    server: &Server,
    shared: Shared<'_>,
    for_http: tokio::sync::mpsc::UnboundedReceiver<Value>,
) -> Result<(), String> {
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
        shared.streams.clone(),
        shared.remote.clone(),
    ));
    let endpoint = Arc::new(crate::mcp_http::Endpoint {
        guard: server.guard_beside(&args.server, listen, bound, own),
        auth: !args.http_no_auth,
        hub: shared.hub.clone(),
        room: args.room.clone(),
        streams: shared.streams,
        sessions: std::sync::Mutex::new(HashMap::new()),
        open: std::sync::Mutex::default(),
        session_idle: Duration::from_secs(args.http_session_idle),
        param_headers: shared.param_headers.clone(),
        remote: shared.remote.clone(),
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
        eprintln!("abp-peer mcp: http://{bound}/mcp needs Authorization: Bearer TOKEN, {token}");
    }
    eprintln!("abp-peer mcp on http://{bound}/mcp");
    tokio::spawn(server::serve_connections(
        listener,
        crate::mcp_http::router(endpoint),
    ));
    Ok(())
}

/// After [`Gateway::close`]: gives the app a moment ([`GOODBYE_MS`]) to confirm the cancels, so that its
/// handlers see them before this process goes.
async fn wait_for_the_cancels(gateway: &mut Gateway, registration: &mut Registration<Event>) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(GOODBYE_MS);
    while gateway.has_calls() {
        match tokio::time::timeout_at(deadline, registration.inbox.recv()).await {
            Ok(Some(Event::Settled { call_id, .. })) => gateway.forget_call(&call_id),
            Ok(Some(Event::Disconnected)) | Ok(None) | Err(_) => break,
            Ok(Some(_)) => {}
        }
    }
}

/// Runs the gateway until the host goes away.
pub(crate) async fn main(args: Args) -> Result<(), String> {
    let routes = routes(&args.room);
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
    let joined = tokio::select! {
        joined = crate::cluster::Cluster::join(&args.nats) => Some(joined),
        () = &mut stop => None,
    };
    let cluster = match joined {
        Some(Ok(cluster)) => cluster,
        stopped_or_failed => {
            crate::server::remove_token_file(token_file.as_deref());
            return stopped_or_failed.map_or(Ok(()), |failed| failed.map(|_| ()));
        }
    };
    let hub = Arc::new(match &cluster {
        Some(c) => Switchboard::clustered(c.clone()),
        None => Switchboard::default(),
    });
    let mut registration = hub.attach_local_controller(&args.room);
    let mut joining = hub.attach_mcp_gateway(&args.room);
    // Where each host's lines go but stdio's (stdout, by a writer of its own).
    let mut sinks: HashMap<u64, UnboundedSender<Value>> = HashMap::new();
    let param_headers = Arc::new(crate::params::ParamHeaders::default());
    // The messages for the HTTP host, and the HTTP requests open here.
    let (lines, for_http) = unbounded_channel();
    let streams = Arc::new(crate::mcp_http::Streams::new(
        cluster.as_ref().map(|c| c.node()),
    ));
    let shared = Shared {
        hub: &hub,
        streams,
        param_headers: &param_headers,
        remote: &None,
    };
    let remote = start_remote(cluster.as_ref(), &args.room, &shared, &lines).await?;
    if let Some(listen) = &args.http {
        let shared = Shared {
            remote: &remote,
            ..shared
        };
        start_http(&args, listen, &server, shared, for_http).await?;
        sinks.insert(HTTP, lines);
    }
    let mut serving = tokio::spawn({
        let hub = hub.clone();
        async move { server.run(routes, hub).await }
    });
    let stdio = args.http.is_none() || args.stdio;
    let mut gateway = Gateway::new(args.room.clone(), param_headers, Clock::system());
    if sinks.contains_key(&HTTP) {
        gateway.join(HTTP);
    }
    let mut io = StdioEdge::new();
    loop {
        let out = carry_out(&mut gateway, &hub, &args.room, &sinks);
        if !io.write(out, remote.is_some()) {
            break; // the host closed our stdout
        }
        let due = gateway.poll_timeout();
        tokio::select! {
            line = next_line(&mut io.lines), if stdio => match line {
                Some(line) if line.trim().is_empty() => {}
                Some(line) => io.read(&mut gateway, &hub, remote.as_ref(), line).await,
                None => break,
            },
            Some(said) = io.from_elsewhere.recv() => io.elsewhere_said.push(said.to_string()),
            Some(event) = registration.inbox.recv() => gateway.handle_app(event, Instant::now()),
            Some(input) = joining.inbox.recv() => from_joined(&mut gateway, &hub, &mut sinks, input),
            () = crate::agent::sleep_until(due) => gateway.handle_timeout(Instant::now()),
            () = &mut stop => break,
            finished = &mut serving => {
                server::remove_token_file(token_file.as_deref());
                return finished
                    .map_err(|e| format!("the server failed: {e}"))?
                    .map_err(|e| format!("the server stopped: {e}"));
            }
        }
    }
    // The host is gone (or we are stopped): cancel what runs in the app, tell a host that still listens, give
    // the app a moment to see the cancels, and go.
    if let Some(remote) = &remote {
        io.follow.end(remote, STDIO_HOST).await;
    }
    gateway.close();
    io.close(carry_out(&mut gateway, &hub, &args.room, &sinks))
        .await;
    wait_for_the_cancels(&mut gateway, &mut registration).await;
    serving.abort();
    server::remove_token_file(token_file.as_deref());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn followed() -> (StdioFollowed, tokio::sync::mpsc::UnboundedReceiver<Value>) {
        let (out, said) = unbounded_channel();
        let router = std::sync::Mutex::new(Router::new(false));
        (StdioFollowed { out, router }, said)
    }

    #[test]
    fn a_request_left_waiting_where_the_host_was_served_is_answered_when_that_gateway_goes() {
        let (f, mut said) = followed();
        f.sent(&json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call" }));
        f.abandon("gone");
        let error = said.try_recv().expect("an error for the request");
        assert_eq!(
            (&error["id"], &error["error"]["message"]),
            (&json!(7), &json!("gone"))
        );
    }

    #[test]
    fn a_request_the_host_cancelled_is_not_answered_when_that_gateway_goes() {
        let (f, mut said) = followed();
        f.sent(&json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call" }));
        f.sent(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7 } }));
        f.abandon("gone");
        assert!(
            said.try_recv().is_err(),
            "nothing is written for a cancelled request"
        );
    }
}
