//! The WebSocket server every mode runs: binds (loopback unless told otherwise), takes the launch token, and
//! answers each request in one place ([`handle`]): the `Host` and `Origin` checks, then the mode's routes (a
//! path it does not serve is a 404), then the token for endpoints that drive, and only then the upgrade.
//!
//! A mode is a [`Routes`] table: which endpoints exist. The endpoints themselves (the native agent, its
//! controller, the relay) are shared.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use abp_wasm::core::dialect::DialectKind;
use axum::body::Body;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use clap::Args;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::control::Envelope;
use crate::hub::{Registration, Slot};
use crate::security::{default_token_file, Access, Guard, Origin, Refusal};
use crate::switchboard::Switchboard;
use crate::token::{Source, Token, NEW_TOKEN_FLAG, TOKEN_ENV};

/// What every server mode accepts on its command line.
#[derive(Args, Clone, Debug)]
pub(crate) struct ServerOptions {
    /// Where to accept WebSocket connections; port 0 picks a free one.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8787")]
    pub(crate) listen: String,
    /// A web page origin (scheme://host[:port], exact match) whose pages may connect; repeatable. Browsers
    /// send `Origin` on every WebSocket: one not listed gets 403. Clients that send none (native ones) pass.
    #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = Origin::parse)]
    pub(crate) allow_origins: Vec<Origin>,
    /// Another `Host` header value (host:port) to accept besides the listen address, localhost, 127.0.0.1 and
    /// [::1] with this port (for a non-loopback address clients reach by another name); repeatable.
    #[arg(long = "allow-host", value_name = "HOST:PORT")]
    pub(crate) allow_hosts: Vec<String>,
    /// Allow listening on an address that is not loopback (anyone on the network can then connect).
    #[arg(long)]
    pub(crate) allow_non_loopback: bool,
    /// Where to write this process's launch token too (mode 0600; removed when it stops) [default:
    /// $XDG_RUNTIME_DIR/abp-peer/PORT.token, else ~/.local/state/abp-peer/PORT.token].
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,
    /// Mint another launch token and keep it in place of the stored one ($XDG_STATE_HOME/abp-peer/token, else
    /// ~/.local/state/abp-peer/token), which is otherwise the same at every start. An error with ABP_PEER_TOKEN.
    #[arg(long)]
    pub(crate) new_token: bool,
    /// Largest frame accepted; a bigger one closes that connection.
    #[arg(long, value_name = "N", default_value_t = 16 * 1024 * 1024)]
    pub(crate) max_message_bytes: usize,
    /// How often an app's connection is pinged, in ms. An app silent for three of these is gone, and its room is
    /// free for the next app (a reloaded page, after a crash or a sleep).
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(10..))]
    pub(crate) app_ping: u64,
    /// How many WebSocket connections may be open at once; one more is refused with 503 before the upgrade.
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_connections: u64,
}

/// The endpoints a mode serves. Each is looked up only after the `Host` and `Origin` checks passed.
#[derive(Clone, Debug)]
pub(crate) struct Routes {
    /// `/agent` and `/agent/<room>`: every room, or only this one (`""` is `/agent`).
    pub(crate) agent_rooms: Option<String>,
    /// `/control` and `/control/<room>`.
    pub(crate) control: bool,
    /// `/relay/<room>/agent` and `/relay/<room>/app`.
    pub(crate) relay: bool,
    /// `/admin/exit`.
    pub(crate) exit: bool,
    /// `/mcp-host` (and `/mcp-host/<room>` for the gateway's room): another MCP host joins `abp-peer mcp`.
    pub(crate) mcp_hosts: bool,
}

/// An endpoint, from a request's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Agent { room: String },
    Control { room: String },
    Relay { room: String, agent: bool },
    Exit,
    McpHost { room: String },
}

impl Endpoint {
    pub(crate) fn access(&self) -> Access {
        match self {
            Endpoint::Agent { .. } | Endpoint::Relay { agent: false, .. } => Access::App,
            Endpoint::Control { .. }
            | Endpoint::Relay { agent: true, .. }
            | Endpoint::Exit
            | Endpoint::McpHost { .. } => Access::Driver,
        }
    }
}

impl Routes {
    pub(crate) fn route(&self, path: &str) -> Option<Endpoint> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let endpoint = match parts.as_slice() {
            ["agent"] => Endpoint::Agent {
                room: String::new(),
            },
            ["agent", room] => Endpoint::Agent {
                room: (*room).to_owned(),
            },
            ["control"] if self.control => Endpoint::Control {
                room: String::new(),
            },
            ["control", room] if self.control => Endpoint::Control {
                room: (*room).to_owned(),
            },
            ["relay", room, role @ ("agent" | "app")] if self.relay => Endpoint::Relay {
                room: (*room).to_owned(),
                agent: *role == "agent",
            },
            ["admin", "exit"] if self.exit => Endpoint::Exit,
            ["mcp-host"] if self.mcp_hosts => Endpoint::McpHost {
                room: String::new(),
            },
            ["mcp-host", room] if self.mcp_hosts => Endpoint::McpHost {
                room: (*room).to_owned(),
            },
            _ => return None,
        };
        match (&endpoint, &self.agent_rooms) {
            (Endpoint::Agent { room } | Endpoint::McpHost { room }, Some(only)) if room != only => {
                None
            }
            _ => Some(endpoint),
        }
    }
}

/// A bound listener with its checks, not yet serving.
pub(crate) struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    guard: Guard,
    /// Where the token was written; `None` for a mode without endpoints that need it.
    token_file: Option<PathBuf>,
    max_message_bytes: usize,
    app_ping: Duration,
    max_connections: usize,
}

impl Routes {
    /// Whether any endpoint of this mode drives or impersonates (and so needs the launch token).
    pub(crate) fn need_token(&self) -> bool {
        self.control || self.relay || self.exit || self.mcp_hosts
    }
}

/// The start-up line about the token: where it is kept (or that it came from `ABP_PEER_TOKEN`) and which of
/// this mode's endpoints need it. The token itself is printed only where a person reads stderr: an MCP host keeps
/// `abp-peer mcp`'s stderr in its logs, and a supervisor's token is already in its own configuration.
fn token_line(routes: &Routes, token: &Token, file: &std::path::Path) -> String {
    let mut needs = Vec::new();
    if routes.control {
        needs.push("/control");
    }
    if routes.relay {
        needs.push("/relay/…/agent");
    }
    if routes.exit {
        needs.push("/admin/exit");
    }
    if routes.mcp_hosts {
        needs.push("/mcp-host");
    }
    let mut needs = match needs.as_slice() {
        [one] => format!("{one} needs it"),
        [first @ .., last] => format!("{} and {last} need it", first.join(", ")),
        [] => String::new(),
    };
    needs += " as Authorization: Bearer TOKEN or ?token=TOKEN";
    if routes.mcp_hosts {
        needs += ": another host's abp-peer mcp joins with it";
    }
    let also = format!("also in {} while this process runs", file.display());
    match token.source() {
        Source::Env => format!("abp-peer: token from {TOKEN_ENV}, not stored ({also}; {needs})"),
        Source::Stored { path, minted } => {
            let kept = format!(
                "kept in {}, the same at every start until {NEW_TOKEN_FLAG}{}",
                path.display(),
                if *minted { "; made at this start" } else { "" }
            );
            if routes.control || routes.relay || routes.exit {
                format!(
                    "abp-peer: token: {} ({kept}; {also}; {needs})",
                    token.as_str()
                )
            } else {
                format!("abp-peer: token {kept} ({also}; {needs})")
            }
        }
    }
}

/// Whether two paths name one file: the same name in the same folder, however the folders are spelled (a
/// folder that does not exist yet is compared as written).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    let folder = |p: &std::path::Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        let parent = parent.unwrap_or(std::path::Path::new("."));
        std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_owned())
    };
    a.file_name() == b.file_name() && folder(a) == folder(b)
}

/// Why a server could not start.
#[derive(Debug)]
pub(crate) enum BindError {
    /// Another process kept the port past the grace period (for `abp-peer mcp`: maybe another host's copy).
    InUse(String),
    Other(String),
}

impl From<String> for BindError {
    fn from(why: String) -> Self {
        BindError::Other(why)
    }
}

impl From<BindError> for String {
    fn from(e: BindError) -> Self {
        match e {
            BindError::InUse(why) | BindError::Other(why) => why,
        }
    }
}

/// How long a port that is in use is waited for: a copy of this command that is exiting still holds it (an MCP
/// host's version probe starts the command, asks one question and stops it, then starts it again).
const PORT_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Binds `addrs`, trying again while the port is in use, for up to [`PORT_GRACE`].
async fn bind_patiently(addrs: &[SocketAddr]) -> std::io::Result<TcpListener> {
    let deadline = tokio::time::Instant::now() + PORT_GRACE;
    loop {
        match TcpListener::bind(addrs).await {
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            result => return result,
        }
    }
}

impl Server {
    /// Binds `--listen` (refusing a non-loopback address without `--allow-non-loopback`) and takes the token
    /// ([`Token::launch`]); where `routes` has endpoints that need it, writes it to its file and says on stderr
    /// where it is kept.
    pub(crate) async fn bind(
        options: &ServerOptions,
        routes: &Routes,
    ) -> Result<Server, BindError> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(&options.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?
            .collect();
        let wide: Vec<String> = addrs
            .iter()
            .filter(|a| !a.ip().is_loopback())
            .map(ToString::to_string)
            .collect();
        if !wide.is_empty() && !options.allow_non_loopback {
            return Err(format!(
                "refusing to listen on {} ({}): not a loopback address, so other machines could connect. Pass \
                 --allow-non-loopback to do it anyway, or listen on 127.0.0.1",
                options.listen,
                wide.join(", ")
            )
            .into());
        }
        // The token file is removed when this process stops, and the stored token must outlive it.
        let stored = crate::token::state_dir().map(|dir| dir.join(crate::token::FILE_NAME));
        if let (Some(file), Ok(stored)) = (&options.token_file, &stored) {
            if same_file(file, stored) {
                return Err(format!(
                    "--token-file {} is where the launch token is kept: give another path",
                    file.display()
                )
                .into());
            }
        }
        // Before the port, which may be waited for: a stored token that cannot be used is said at once.
        let token = Token::launch(options.new_token)?;
        let listener = bind_patiently(&addrs).await.map_err(|e| {
            let why = format!("cannot listen on {}: {e}", options.listen);
            if e.kind() == std::io::ErrorKind::AddrInUse {
                BindError::InUse(why)
            } else {
                BindError::Other(why)
            }
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
        if !addr.ip().is_loopback() {
            eprintln!(
                "abp-peer: warning: listening on {addr}, which is not a loopback address (--allow-non-loopback): \
                 any machine that can reach it may connect; the Origin, Host and token checks still apply"
            );
        }
        let token_file = if routes.need_token() {
            let file = options
                .token_file
                .clone()
                .unwrap_or_else(|| default_token_file(addr.port()));
            token.write_to(&file)?;
            eprintln!("{}", token_line(routes, &token, &file));
            Some(file)
        } else {
            None
        };
        let guard = Guard::new(
            &options.listen,
            addr,
            &options.allow_hosts,
            options.allow_origins.clone(),
            token,
        );
        Ok(Server {
            listener,
            addr,
            guard,
            token_file,
            max_message_bytes: options.max_message_bytes,
            app_ping: Duration::from_millis(options.app_ping),
            max_connections: usize::try_from(options.max_connections).unwrap_or(usize::MAX),
        })
    }

    /// The checks for another listener of this process (`abp-peer mcp --http`), with this server's token.
    pub(crate) fn guard_beside(
        &self,
        options: &ServerOptions,
        listen: &str,
        bound: SocketAddr,
        origins: Vec<Origin>,
    ) -> Guard {
        self.guard
            .beside(listen, bound, &options.allow_hosts, origins)
    }

    /// This process's launch token.
    pub(crate) fn token(&self) -> &Token {
        self.guard.token()
    }

    /// Where the token was written, if it was (the mode removes it when it stops).
    pub(crate) fn token_file(&self) -> Option<PathBuf> {
        self.token_file.clone()
    }

    /// Prints `abp-peer listening on ws://HOST:PORT` on stderr and serves `routes` until the process ends.
    pub(crate) async fn run(
        self,
        routes: Routes,
        switchboard: Arc<Switchboard>,
    ) -> std::io::Result<()> {
        let state = Arc::new(Served {
            guard: self.guard,
            routes,
            switchboard,
            token_file: self.token_file,
            max_message_bytes: self.max_message_bytes,
            app_ping: self.app_ping,
            max_connections: self.max_connections,
            open: Arc::new(AtomicUsize::new(0)),
            apps_open: Arc::new(AtomicUsize::new(0)),
        });
        let app = Router::new().fallback(handle).with_state(state);
        eprintln!("abp-peer listening on ws://{}", self.addr);
        serve_connections(self.listener, app).await
    }
}

/// Serves `app` on every connection `listener` accepts until the process ends: hyper with a header-read timeout,
/// and a bound on the connections still sending their first request's head. At that bound the server stops
/// accepting until one of them has sent it (or timed out): the rest wait in the kernel's backlog instead of being
/// closed, so a burst of clients reconnecting at once is taken in full, and a connection that has sent its head (a
/// WebSocket, an SSE stream) no longer counts.
pub(crate) async fn serve_connections(listener: TcpListener, app: Router) -> std::io::Result<()> {
    let heads = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = heads.clone().acquire_owned().await else {
            return Ok(());
        };
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of descriptors, or a connection reset before it was accepted: the listener itself is
                // fine, and the next accept may work once a connection has gone.
                eprintln!("abp-peer: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let inner = TowerToHyperService::new(app.clone());
        // Given back when the first request's head has arrived (or the connection ends without one).
        let waiting = std::sync::Mutex::new(Some(permit));
        let service = hyper::service::service_fn(move |request| {
            drop(crate::hub::lock(&waiting).take());
            hyper::service::Service::call(&inner, request)
        });
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            // The timeout also closes a kept-alive connection that sends no next request. (Turning keep-alive
            // off instead would answer upgrades with `Connection: upgrade, close`, which WebSocket clients
            // refuse.)
            http.timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT);
            // Resolves once the request is answered (an upgraded socket goes on in its own task).
            let _ = http
                .serve_connection(TokioIo::new(tcp), service)
                .with_upgrades()
                .await;
        });
    }
}

/// How long a connection may take to send its request's head, or stay idle between requests; then it is
/// closed.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How many connections may be sending their first request's head at once; the next waits to be accepted.
const MAX_HANDSHAKES: usize = 256;

/// Resolves when the process is told to stop (SIGINT, or SIGTERM on Unix); never, where signals cannot be had.
pub(crate) fn stop_signal() -> impl std::future::Future<Output = ()> {
    // The handlers are installed now, not when the future is first polled: a signal that arrives right after
    // `abp-peer listening on …` is printed must already stop the process this way (removing the token file).
    #[cfg(unix)]
    let streams = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let (mut interrupt, mut terminate) = streams;
            let interrupt = async {
                match interrupt.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let terminate = async {
                match terminate.as_mut() {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = interrupt => {}
                () = terminate => {}
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

struct Served {
    guard: Guard,
    routes: Routes,
    switchboard: Arc<Switchboard>,
    token_file: Option<PathBuf>,
    max_message_bytes: usize,
    app_ping: Duration,
    max_connections: usize,
    /// WebSocket connections open now.
    open: Arc<AtomicUsize>,
    /// Those of apps (the endpoints that take no token), which may not take the places kept for the token's
    /// holders ([`app_places`]).
    apps_open: Arc<AtomicUsize>,
}

/// How many of `max_connections` apps may hold: all but an eighth, kept for the controllers, agents and MCP hosts
/// that hold the token, so that apps (which anybody allowed may open) cannot lock them out.
fn app_places(max_connections: usize) -> usize {
    max_connections - max_connections / 8
}

/// One open WebSocket connection, counted while it lives.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The read buffer of each WebSocket.
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// The dialect a WebSocket subprotocol names, among those this peer speaks on `/agent` (ABP without one).
fn dialect_of(protocol: Option<&str>) -> DialectKind {
    protocol
        .and_then(DialectKind::of_subprotocol)
        .filter(|d| SERVED.contains(d))
        .unwrap_or(DialectKind::Abp)
}

/// The dialects this peer speaks with an app: ABP, MCP (passed on unchanged through the relay), and
/// Tesseron, where this peer is the gateway.
const SERVED: [DialectKind; 3] = [DialectKind::Abp, DialectKind::Mcp, DialectKind::Tesseron];

fn refused(path: &str, r: Refusal) -> Response {
    eprintln!("abp-peer: {} for {path}: {}", r.status.as_u16(), r.why);
    let mut answer = (
        r.status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{}\n", r.why),
    )
        .into_response();
    // A 401 names the scheme that would get in (RFC 9110).
    if r.status == StatusCode::UNAUTHORIZED {
        answer
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    // A full server: the client may try again in a moment.
    if r.status == StatusCode::SERVICE_UNAVAILABLE {
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    answer
}

/// Every request: checks, route, token, upgrade, in that order.
async fn handle(State(s): State<Arc<Served>>, request: Request) -> Response {
    let (mut parts, _body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    if let Err(r) = s.guard.admit(&parts) {
        return refused(&path, r);
    }
    let Some(endpoint) = s.routes.route(&path) else {
        return (StatusCode::NOT_FOUND, Body::from("not found\n")).into_response();
    };
    let key = match admitted(&s, &parts, &endpoint) {
        Ok(key) => key,
        Err(r) => return refused(&path, r),
    };
    if endpoint == Endpoint::Exit {
        eprintln!("abp-peer: exiting (asked by /admin/exit)");
        remove_token_file(s.token_file.as_deref());
        std::process::exit(3);
    }
    let mut upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(u) => u,
        Err(rejection) => return rejection.into_response(),
    };
    // Speak the first subprotocol the client offers among those this peer knows: "abp", "mcp" for MCP clients
    // reaching an app through the relay (frames pass unchanged either way), or "tesseron-gateway". A browser
    // fails a handshake that offered protocols and got none back, so any other offer is answered with none.
    let chosen = upgrade
        .requested_protocols()
        .filter_map(|p| p.to_str().ok())
        .find_map(|p| {
            SERVED
                .iter()
                .find_map(|d| d.subprotocol().filter(|s| *s == p))
        });
    if let Some(p) = chosen {
        upgrade.set_selected_protocol(HeaderValue::from_static(p));
    }
    let counted = match counted(&s, &endpoint) {
        Ok(counted) => counted,
        Err(r) => return refused(&path, r),
    };
    let place = match place(&s, &endpoint, key, &path).await {
        Ok(place) => place,
        Err(r) => return refused(&path, r),
    };
    let switchboard = s.switchboard.clone();
    let ping = s.app_ping;
    upgrade
        // tungstenite allocates the whole read buffer per connection up front (128 KiB by default); most of these
        // sockets idle, and a larger frame still arrives (the buffer grows for it).
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(s.max_message_bytes)
        .max_frame_size(s.max_message_bytes)
        .on_upgrade(move |socket| async move {
            let _counted = counted;
            match (endpoint, place) {
                (Endpoint::Agent { room }, Place::Agent(registration)) => {
                    let dialect = dialect_of(chosen);
                    let to = room.clone();
                    let events = move |event| switchboard.emit_from_agent(&to, event);
                    crate::agent::serve(socket, registration, events, room, dialect, ping).await
                }
                (Endpoint::Relay { .. }, Place::Relay(joined)) => {
                    crate::relay_remote::serve(socket, joined, ping).await
                }
                (Endpoint::Control { room }, _) => {
                    crate::controller::serve(socket, switchboard, room).await
                }
                (Endpoint::McpHost { room }, _) => {
                    crate::mcp_host::serve_host(socket, switchboard, room).await
                }
                _ => {}
            }
        })
}

/// A request for `endpoint` (its `Host` and `Origin` admitted): its room key, once it passed the other checks
/// that need no state: the token for what drives an app, a well-formed key, and no web page at `/mcp-host`.
fn admitted(
    s: &Served,
    parts: &axum::http::request::Parts,
    endpoint: &Endpoint,
) -> Result<Option<String>, Refusal> {
    if endpoint.access() == Access::Driver {
        s.guard.authorize(parts, crate::security::Query::Allowed)?;
    }
    let key = room_key(parts.uri.query()).map_err(|why| Refusal {
        status: StatusCode::BAD_REQUEST,
        why,
    })?;
    if matches!(endpoint, Endpoint::McpHost { .. }) && parts.headers.contains_key(header::ORIGIN) {
        // Only another copy of `abp-peer mcp` joins here: no web page, whatever its origin.
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            why: "only a native MCP host joins here, not a web page".to_owned(),
        });
    }
    Ok(key)
}

/// A place among the connections allowed (and for an app, among the apps'), held until the connection ends
/// (taken now, so a burst of upgrades cannot all pass the check before any of them counts).
fn counted(s: &Served, endpoint: &Endpoint) -> Result<(Counted, Option<Counted>), Refusal> {
    if s.open.fetch_add(1, Ordering::AcqRel) >= s.max_connections {
        s.open.fetch_sub(1, Ordering::AcqRel);
        return Err(Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            why: format!(
                "{} connections are open, the most this server takes (--max-connections)",
                s.max_connections
            ),
        });
    }
    // Given back when this ends, however it ends (a refused app too).
    let counted = Counted(s.open.clone());
    if endpoint.access() != Access::App {
        return Ok((counted, None));
    }
    if s.apps_open.fetch_add(1, Ordering::AcqRel) >= app_places(s.max_connections) {
        s.apps_open.fetch_sub(1, Ordering::AcqRel);
        return Err(Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            why: format!(
                "{} app connections are open, the most apps may hold (the rest of --max-connections is kept for \
                 those with the token)",
                app_places(s.max_connections)
            ),
        });
    }
    Ok((counted, Some(Counted(s.apps_open.clone()))))
}

/// An app's place in its room, taken now, before the upgrade is answered: a refused app gets its status, and of
/// two apps racing for a room only one is told yes. Other endpoints take none.
async fn place(
    s: &Served,
    endpoint: &Endpoint,
    key: Option<String>,
    path: &str,
) -> Result<Place, Refusal> {
    let place = match endpoint {
        Endpoint::Agent { room } => s
            .switchboard
            .attach_agent(room, key.as_deref())
            .await
            .map(|place| place.map(Place::Agent)),
        Endpoint::Relay { room, agent } => {
            let (relay, cluster) = (&s.switchboard.relay, s.switchboard.cluster.as_ref());
            crate::relay_remote::join(relay, cluster, room, *agent, key)
                .await
                .map(|place| place.map(Place::Relay))
        }
        _ => Ok(Ok(Place::None)),
    };
    // With `--nats`, NATS did not answer: the room may be held where this process cannot see.
    let place = place.map_err(|why| Refusal {
        status: StatusCode::SERVICE_UNAVAILABLE,
        why,
    })?;
    place.map_err(|slot| match slot {
        // The first app wins: a second one must not take the user's app's place (and its calls).
        Slot::WrongKey => Refusal {
            status: StatusCode::FORBIDDEN,
            why: format!("{path} was joined with a key (?key=), and this one is missing or wrong"),
        },
        _ => Refusal {
            status: StatusCode::CONFLICT,
            why: format!(
                "another app holds {path}: close it first (a silent one is let go within a few pings)"
            ),
        },
    })
}

/// A room's side, taken for a connection before its upgrade is answered.
enum Place {
    None,
    Agent(Registration<Envelope>),
    Relay(crate::relay_remote::Place),
}

/// The room key of a request's query (`key=`): what an app joins its room with, so that only a holder of it
/// takes the room (or takes it back). Between 16 and 256 characters, so it cannot be guessed by trying.
fn room_key(query: Option<&str>) -> Result<Option<String>, String> {
    let Some(value) = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("key="))
    else {
        return Ok(None);
    };
    if !(16..=256).contains(&value.len()) || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("a room key (?key=) is 16 to 256 printable ASCII characters".to_owned());
    }
    Ok(Some(value.to_owned()))
}

/// Removes the token file a mode wrote, if any (when it stops).
pub(crate) fn remove_token_file(file: Option<&std::path::Path>) {
    if let Some(file) = file {
        let _ = std::fs::remove_file(file);
    }
}

#[cfg(test)]
mod places {
    use super::app_places;

    #[test]
    fn apps_leave_an_eighth_to_the_token_s_holders() {
        assert_eq!(app_places(1024), 896);
        // A cap too small to share is the apps' in full.
        assert_eq!(app_places(3), 3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_the_mode_s() {
        let all = Routes {
            agent_rooms: None,
            control: true,
            relay: true,
            exit: false,
            mcp_hosts: false,
        };
        assert_eq!(
            all.route("/agent"),
            Some(Endpoint::Agent {
                room: String::new()
            })
        );
        assert_eq!(
            all.route("/agent/r1/"),
            Some(Endpoint::Agent { room: "r1".into() })
        );
        assert_eq!(
            all.route("/relay/r/agent"),
            Some(Endpoint::Relay {
                room: "r".into(),
                agent: true
            })
        );
        assert_eq!(all.route("/relay/r/other"), None);
        assert_eq!(all.route("/admin/exit"), None);
        assert_eq!(all.route("/"), None);
        assert_eq!(all.route("/agent/a/b"), None);
        let one = Routes {
            agent_rooms: Some("r1".into()),
            control: false,
            relay: false,
            exit: false,
            mcp_hosts: true,
        };
        assert_eq!(
            one.route("/agent/r1"),
            Some(Endpoint::Agent { room: "r1".into() })
        );
        assert_eq!(one.route("/agent"), None);
        assert_eq!(one.route("/control/r1"), None);
        assert_eq!(
            Endpoint::Relay {
                room: "r".into(),
                agent: false
            }
            .access(),
            Access::App
        );
        assert_eq!(Endpoint::Exit.access(), Access::Driver);
        assert_eq!(
            one.route("/mcp-host/r1"),
            Some(Endpoint::McpHost { room: "r1".into() })
        );
        assert_eq!(one.route("/mcp-host/other"), None);
        assert_eq!(all.route("/mcp-host"), None, "only the MCP gateway has it");
        assert_eq!(
            Endpoint::McpHost { room: "r1".into() }.access(),
            Access::Driver
        );
    }
}
