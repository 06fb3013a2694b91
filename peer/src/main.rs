//! `abp-peer`: the native side of ABP over WebSocket, built on the same protocol core as the browser SDK.
//!
//! One server, three kinds of endpoint:
//! - `/agent/<room>`: a browser app connects (`app.listen(await WebSocketTransport.connect(url))`) and this
//!   process is its agent. It is driven by JSON commands from `/control/<room>` (another WebSocket) or, with
//!   `--stdin`, from standard input for the room `""` (`/agent`); see [`agent`], [`control`] and [`controller`].
//! - `/relay/<room>/agent` and `/relay/<room>/app`: pairs an agent connection with an app connection and
//!   forwards text frames both ways; when one side goes, the other is closed (see [`relay`]).
//! - `/admin/exit` (only with `--allow-exit`): the process exits at once, as if killed. For tests.
//!
//! Every request passes the checks of [`security`] first (see [`server`]): `/control`, `/relay/…/agent` and
//! `/admin/exit` need the launch token, which is kept in the user's state folder and so stays the same across
//! restarts until `--new-token` (see [`token`]).
//!
//! `abp-peer discover URL` instead runs ABP discovery on a page and prints the `DiscoveryResult` (see
//! [`discover`]).
//!
//! Logs go to stderr, among them `abp-peer listening on ws://HOST:PORT` once it accepts connections.

/// mimalloc: the gateway and the relay make and drop a few JSON values per message (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod agent;
mod cluster;
mod control;
mod controller;
mod discover;
mod edge;
mod gateway;
mod hub;
mod mcp;
mod mcp_host;
mod mcp_http;
mod mcp_remote;
mod nats;
mod params;
mod relay;
mod relay_remote;
mod security;
mod server;
mod switchboard;
mod telemetry;
mod token;
mod ws;

use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::server::{Routes, Server, ServerOptions};

#[derive(Parser, Debug)]
#[command(
    name = "abp-peer",
    version,
    about = "A native ABP agent for browser apps, and a relay between an agent and an app, over WebSocket",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Mode>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
enum Mode {
    /// Finds a page's <link rel="abp-manifest">, fetches and checks the manifest, and prints the DiscoveryResult
    /// as JSON. Exit code 0 when supported, 1 when not, 2 for bad arguments.
    Discover(discover::Args),
    /// An MCP server on stdin/stdout (for an LLM host) whose tools are the capabilities of the browser app that
    /// joins ws://HOST:PORT/agent (or /agent/ROOM); logs on stderr.
    Mcp(Box<mcp::Args>),
}

/// The default mode: the native agent (`/agent`, `/control`) and the relay.
#[derive(clap::Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    server: ServerOptions,
    /// Read agent commands (JSON, one per line) from stdin for /agent; print its events to stdout.
    #[arg(long)]
    stdin: bool,
    /// A connection to /admin/exit (with the token) ends the process; tests use it to kill the server.
    #[arg(long)]
    allow_exit: bool,
    /// With --nats: a controller on any of the processes given the same NATS server reaches the app connected to
    /// any other.
    #[command(flatten)]
    nats: nats::NatsArgs,
    /// `--otlp URL`: spans of each hop of the calls this process makes to its apps, exported to a collector.
    #[command(flatten)]
    otlp: telemetry::OtlpArgs,
}

fn main() {
    let cli = Cli::parse();
    let otlp = match &cli.command {
        Some(Mode::Mcp(args)) => Some(&args.otlp),
        Some(Mode::Discover(_)) => None,
        None => Some(&cli.serve.otlp),
    };
    if let Err(e) = otlp.map_or(Ok(()), telemetry::export) {
        eprintln!("abp-peer: {e}");
        std::process::exit(2);
    }
    let code = match cli.command {
        Some(Mode::Discover(args)) => discover::main(&args),
        Some(Mode::Mcp(args)) => run(mcp::main(*args), Threads::One),
        None => run(serve(cli.serve), Threads::Many),
    };
    std::process::exit(code);
}

/// How many threads a mode's runtime runs its tasks on.
enum Threads {
    /// `abp-peer mcp`: its work passes through one gateway loop anyway, and hopping between threads on the way
    /// cost more CPU than it gained.
    One,
    /// The server mode: rooms are independent, so their relays and agents run in parallel.
    Many,
}

/// Runs a server mode on a tokio runtime; its error is printed, and the exit code returned.
fn run(mode: impl std::future::Future<Output = Result<(), String>>, threads: Threads) -> i32 {
    let mut builder = match threads {
        Threads::One => tokio::runtime::Builder::new_current_thread(),
        Threads::Many => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("abp-peer: cannot start the runtime: {e}");
            return 1;
        }
    };
    let code = match runtime.block_on(mode) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("abp-peer: {e}");
            1
        }
    };
    // Not waiting for tasks that block (reading stdin never ends by itself).
    runtime.shutdown_background();
    // Spans still waiting in the exporter's queue are sent before the process ends.
    telemetry::flush();
    code
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let routes = Routes {
        agent_rooms: None,
        control: true,
        relay: true,
        exit: args.allow_exit,
        mcp_hosts: false,
    };
    let stop = server::stop_signal();
    tokio::pin!(stop);
    let server = Server::bind(&args.server, &routes).await?;
    let token_file = server.token_file();
    // Stopped while waiting for NATS too.
    let cluster = tokio::select! {
        joined = cluster::Cluster::join(&args.nats) => joined,
        () = &mut stop => Ok(None),
    };
    let switchboard = Arc::new(match cluster {
        Ok(Some(cluster)) => switchboard::Switchboard::clustered(cluster),
        Ok(None) if args.nats.nats.is_some() => {
            server::remove_token_file(token_file.as_deref());
            return Ok(());
        }
        Ok(None) => switchboard::Switchboard::default(),
        Err(e) => {
            server::remove_token_file(token_file.as_deref());
            return Err(e);
        }
    });
    if args.stdin {
        controller::serve_stdin(switchboard.clone());
    }
    let result = tokio::select! {
        r = server.run(routes, switchboard) => r.map_err(|e| format!("the server stopped: {e}")),
        () = &mut stop => Ok(()),
    };
    server::remove_token_file(token_file.as_deref());
    result
}
