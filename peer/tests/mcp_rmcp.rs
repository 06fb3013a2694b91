//! `abp-peer mcp` driven by an MCP client nobody here wrote: the official Rust SDK `rmcp`, its client over its
//! child-process transport (so it speaks MCP on the gateway's stdin/stdout), with a native ABP app (this crate's
//! `AppConnection` speaking ABP) joining `ws://127.0.0.1:PORT/agent`. Covers:
//! - no app: `tools/list` is empty and `tools/call` is an `isError` result that says no app is connected;
//! - the app joining: `notifications/tools/list_changed`, then `tools/list` shows its tools and descriptions;
//! - a result as `structuredContent` (and its JSON as text); an ABP error as `isError` naming the ABP code;
//! - progress with rmcp's own progress token, every notification on the wire before the result;
//! - rmcp's request cancellation (`notifications/cancelled`): the app's call is aborted, with the client's
//!   reason, within 2 s, and nothing is written back for that request;
//! - the app's socket closing mid-call: an `isError` result within 1 s, and the tools are gone;
//! - the client closing (stdin closed): the call still running in the app is aborted there, and the gateway
//!   exits within 1 s (rmcp signals it only after 3 s), leaving nothing listening.

use std::future::Future;
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest,
    ProgressNotificationParam, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestHandle, RoleClient, RunningService,
};
use rmcp::transport::{TokioChildProcess, Transport};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

mod common;
mod native_app;
use common::TempDir;
use native_app::{within, App, AppEvent, TOOLS, WAIT};

// ---------------------------------------------------------------------------------------------------------
// The MCP host: rmcp's client.

/// What the client's handler hears, in the order rmcp hands it over.
#[derive(Debug)]
enum Heard {
    ToolsChanged,
    Progress(ProgressNotificationParam),
}

struct Host {
    heard: mpsc::UnboundedSender<Heard>,
}

impl ClientHandler for Host {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.heard.send(Heard::ToolsChanged);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.heard.send(Heard::Progress(params));
    }
}

/// rmcp's child-process transport, keeping every message it reads from the gateway, in order (as JSON again,
/// from rmcp's types): rmcp hands notifications to its handler on tasks of their own, so only the order of
/// reading says what came before the result.
struct Recorded {
    inner: TokioChildProcess,
    wire: Arc<Mutex<Vec<Value>>>,
}

impl Transport<RoleClient> for Recorded {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<rmcp::service::RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let (Ok(value), Ok(mut wire)) = (serde_json::to_value(&message), self.wire.lock()) {
            wire.push(value);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

struct Gateway {
    client: RunningService<RoleClient, Host>,
    heard: mpsc::UnboundedReceiver<Heard>,
    wire: Arc<Mutex<Vec<Value>>>,
    /// `ws://127.0.0.1:PORT`.
    url: String,
    port: u16,
    /// The gateway's state and runtime folders, shared with a second host's copy that joins it.
    dir: Arc<TempDir>,
}

impl Gateway {
    /// `abp-peer mcp --listen 127.0.0.1:0`, started by rmcp, initialized, its address read off its stderr.
    async fn start() -> Gateway {
        Gateway::start_on(
            "127.0.0.1:0",
            "abp-peer listening on ",
            Arc::new(TempDir::new()),
        )
        .await
    }

    /// A second host's `abp-peer mcp --listen 127.0.0.1:PORT` on the port `first` serves: it joins that one.
    async fn join(first: &Gateway) -> Gateway {
        let listen = format!("127.0.0.1:{}", first.port);
        let ready = "abp-peer mcp: another host's abp-peer mcp serves ";
        Gateway::start_on(&listen, ready, first.dir.clone()).await
    }

    /// `abp-peer mcp --listen LISTEN`, started by rmcp and initialized once its stderr has a line starting with
    /// `ready` (the address follows it).
    async fn start_on(listen: &str, ready: &str, dir: Arc<TempDir>) -> Gateway {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_abp-peer"));
        command
            .args(["mcp", "--listen", listen])
            .env_remove("ABP_PEER_TOKEN")
            .env("XDG_STATE_HOME", dir.0.join("state"))
            .env("XDG_RUNTIME_DIR", dir.0.join("run"));
        let (process, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .expect("rmcp starts abp-peer mcp");
        let stderr = stderr.expect("the gateway's stderr, piped");
        let mut lines = BufReader::new(stderr).lines();
        let url = within(WAIT, "abp-peer ready on ws://…", async {
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) => {
                        if let Some(rest) = line.strip_prefix(ready) {
                            let address = rest.split(' ').next().unwrap_or_default();
                            let address = address.trim_end_matches(':');
                            break match address.strip_prefix("ws://") {
                                Some(_) => address.to_owned(),
                                None => format!("ws://{address}"),
                            };
                        }
                    }
                    _ => panic!("the gateway's stderr ended before it was listening"),
                }
            }
        })
        .await;
        // Keep reading stderr, so that the gateway never blocks on a full pipe; shown with the test's output.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[gateway] {line}");
            }
        });
        let port = url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("ws://127.0.0.1:PORT");
        let (tx, heard) = mpsc::unbounded_channel();
        let wire = Arc::new(Mutex::new(Vec::new()));
        let transport = Recorded {
            inner: process,
            wire: wire.clone(),
        };
        let client = within(
            WAIT,
            "rmcp's initialize",
            Host { heard: tx }.serve(transport),
        )
        .await
        .expect("rmcp initializes with the gateway");
        Gateway {
            client,
            heard,
            wire,
            url,
            port,
            dir,
        }
    }

    /// A `tools/call` whose request id and progress token rmcp chose (it gives every request one).
    async fn call(&self, name: &'static str, arguments: Value) -> RequestHandle<RoleClient> {
        let mut params = CallToolRequestParams::new(name);
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        within(
            WAIT,
            "sending tools/call",
            self.client
                .peer()
                .send_cancellable_request(request, PeerRequestOptions::no_options()),
        )
        .await
        .expect("rmcp sends tools/call")
    }

    async fn call_tool(&self, name: &'static str, arguments: Value) -> CallToolResult {
        let handle = self.call(name, arguments).await;
        result_of(handle).await
    }

    async fn tools_changed(&mut self) {
        within(WAIT, "notifications/tools/list_changed", async {
            loop {
                match self.heard.recv().await {
                    Some(Heard::ToolsChanged) => break,
                    Some(Heard::Progress(_)) => {}
                    None => panic!("the client stopped"),
                }
            }
        })
        .await
    }

    /// The tools, as `name: description`.
    async fn tools(&self) -> Vec<String> {
        let list = within(WAIT, "tools/list", self.client.list_tools(None))
            .await
            .expect("tools/list answers");
        list.tools
            .iter()
            .map(|t| {
                assert_eq!(
                    t.input_schema.get("type"),
                    Some(&json!("object")),
                    "{}",
                    t.name
                );
                format!("{}: {}", t.name, t.description.as_deref().unwrap_or(""))
            })
            .collect()
    }

    /// Closes the client (the gateway's stdin), waiting for the gateway to exit.
    async fn close(self) {
        let quit = within(WAIT, "closing the client", self.client.cancel()).await;
        assert!(quit.is_ok(), "{quit:?}");
    }

    /// What the gateway wrote, as rmcp read it.
    fn wire(&self) -> Vec<Value> {
        self.wire.lock().map(|w| w.clone()).unwrap_or_default()
    }
}

async fn result_of(handle: RequestHandle<RoleClient>) -> CallToolResult {
    match within(WAIT, "the tool's result", handle.await_response()).await {
        Ok(ServerResult::CallToolResult(result)) => result,
        other => panic!("not a tool result: {other:?}"),
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The gateway's tools, and an app joined to it.
async fn joined() -> (Gateway, App) {
    let mut gateway = Gateway::start().await;
    let mut app = App::join(&gateway.url).await;
    assert!(matches!(
        app.next("the app's session").await,
        AppEvent::Joined
    ));
    gateway.tools_changed().await;
    (gateway, app)
}

// ---------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_sees_no_app_then_the_apps_tools_results_errors_progress_and_cancellation() {
    let mut gateway = Gateway::start().await;

    // No app yet.
    assert!(gateway.tools().await.is_empty(), "no app, no tools");
    let result = gateway.call_tool("echo", json!({ "x": 1 })).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text_of(&result).contains("No app is connected"),
        "{}",
        text_of(&result)
    );

    // The app joins: the client hears of it, and its (cached) list is read again.
    let mut app = App::join(&gateway.url).await;
    assert!(matches!(
        app.next("the app's session").await,
        AppEvent::Joined
    ));
    gateway.tools_changed().await;
    let expected: Vec<String> = TOOLS.iter().map(|(n, d)| format!("{n}: {d}")).collect();
    assert_eq!(gateway.tools().await, expected);

    // A result: structured content, and its JSON as text.
    let params = json!({ "text": "héllo", "n": 2, "nested": { "list": [1, 2, 3] } });
    let result = gateway.call_tool("echo", params.clone()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(result.structured_content.as_ref(), Some(&params));
    let text: Value =
        serde_json::from_str(&text_of(&result)).expect("the text is the result's JSON");
    assert_eq!(text, params);
    assert_eq!(app.started().await.1, "echo");

    // An ABP error: isError, with the code in the text.
    let result = gateway.call_tool("fail", json!({})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text_of(&result).contains("PERMISSION_DENIED"),
        "{}",
        text_of(&result)
    );
    assert!(text_of(&result).contains("The user said no"));
    assert_eq!(app.started().await.1, "fail");

    // Progress with rmcp's own token, all of it before the result.
    let handle = gateway.call("steps", json!({})).await;
    let token = serde_json::to_value(&handle.progress_token).expect("a token");
    let request_id = serde_json::to_value(&handle.id).expect("an id");
    let result = result_of(handle).await;
    assert_eq!(result.structured_content, Some(json!({ "steps": 3 })));
    assert_eq!(app.started().await.1, "steps");
    let wire = gateway.wire();
    let answer = wire
        .iter()
        .position(|m| m["id"] == request_id && m.get("result").is_some())
        .expect("the result was read");
    let progress: Vec<(usize, &Value)> = wire
        .iter()
        .enumerate()
        .filter(|(_, m)| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{wire:#?}");
    for (step, (at, m)) in progress.iter().enumerate() {
        assert!(*at < answer, "progress after the result: {wire:#?}");
        let p = &m["params"];
        assert_eq!(p["progressToken"], token);
        // (rmcp reads the numbers as f64.)
        assert_eq!(p["progress"].as_f64(), Some(step as f64 + 1.0));
        assert_eq!(p["total"].as_f64(), Some(3.0));
        assert_eq!(p["message"], json!(format!("step {} of 3", step + 1)));
    }
    // rmcp's handler got them too, with the token it chose.
    let heard = within(WAIT, "three progress notifications", async {
        let mut heard = Vec::new();
        while heard.len() < 3 {
            match gateway.heard.recv().await {
                Some(Heard::Progress(p)) => heard.push(p),
                Some(Heard::ToolsChanged) => {}
                None => panic!("the client stopped"),
            }
        }
        heard
    })
    .await;
    for p in &heard {
        assert_eq!(
            serde_json::to_value(&p.progress_token).expect("a token"),
            token
        );
    }

    // Cancellation: rmcp's notifications/cancelled aborts the app's call, with the client's reason.
    let handle = gateway.call("slow", json!({})).await;
    let slow_id = serde_json::to_value(&handle.id).expect("an id");
    let (call_id, capability) = app.started().await;
    assert_eq!(capability, "slow");
    let t0 = Instant::now();
    within(
        WAIT,
        "sending notifications/cancelled",
        handle.cancel(Some("the user pressed stop".into())),
    )
    .await
    .expect("rmcp sends notifications/cancelled");
    match app.next("the slow call's abort").await {
        AppEvent::Aborted {
            call_id: aborted,
            reason,
            at,
        } => {
            assert_eq!(aborted, call_id);
            let took = at.duration_since(t0);
            assert!(took < Duration::from_secs(2), "the abort took {took:?}");
            assert_eq!(reason.as_deref(), Some("the user pressed stop"));
        }
        other => panic!("expected the slow call's abort, got {other:?}"),
    }
    // Nothing comes back for the cancelled request: what the app answered for it (before the next call's
    // result, on the same socket) is not written to the client.
    let result = gateway
        .call_tool("echo", json!({ "after": "cancel" }))
        .await;
    assert_eq!(
        result.structured_content,
        Some(json!({ "after": "cancel" }))
    );
    let answered: Vec<Value> = gateway
        .wire()
        .into_iter()
        .filter(|m| m["id"] == slow_id)
        .collect();
    assert!(
        answered.is_empty(),
        "a cancelled request was answered: {answered:?}"
    );

    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_leaving_mid_call_is_an_error_result_within_a_second() {
    let (mut gateway, mut app) = joined().await;
    let handle = gateway.call("slow", json!({})).await;
    assert_eq!(app.started().await.1, "slow");
    let t0 = Instant::now();
    app.leave();
    let result = within(
        Duration::from_secs(1),
        "the result once the app left",
        result_of(handle),
    )
    .await;
    let took = t0.elapsed();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(
        text_of(&result).contains("DISCONNECTED"),
        "{}",
        text_of(&result)
    );
    // Its tools went with it.
    gateway.tools_changed().await;
    assert!(gateway.tools().await.is_empty());
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_closing_aborts_the_running_call_and_the_gateway_exits_within_a_second() {
    let (gateway, mut app) = joined().await;
    let handle = gateway.call("slow", json!({})).await;
    let (call_id, _) = app.started().await;
    let port = gateway.port;
    // rmcp's close, as its drop does it, awaited: the gateway's stdin closes, and rmcp waits up to 3 s for the
    // process to exit before it sends SIGTERM. Done within 1 s, the gateway exited of itself.
    let t0 = Instant::now();
    let quit = within(
        Duration::from_secs(1),
        "the gateway exiting once its stdin closed",
        gateway.client.cancel(),
    )
    .await;
    let took = t0.elapsed();
    assert!(quit.is_ok(), "{quit:?}");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    // The call that was still running was cancelled in the app, and the app's socket closed.
    assert!(app.aborted_after(&call_id, t0).await < Duration::from_secs(1));
    assert!(matches!(
        app.next("the app's socket closing").await,
        AppEvent::Closed
    ));
    // The client's pending request ends with the transport.
    assert!(within(WAIT, "the pending call", handle.await_response())
        .await
        .is_err());
    // Nothing is left listening.
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something still listens on {port}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_app_in_the_room_is_refused_and_the_first_keeps_the_hosts_calls() {
    let (gateway, mut first) = joined().await;
    let running = gateway.call("slow", json!({})).await;
    assert_eq!(first.started().await.1, "slow");
    // A second program joins the same room (anything that can reach the port): the first app wins.
    let refused = tokio_tungstenite::connect_async(format!("{}/agent", gateway.url)).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(
                response.status().as_u16(),
                409,
                "a conflict, not an upgrade"
            )
        }
        other => panic!("expected the second app to be refused with 409, got {other:?}"),
    }
    // The first app still has the host's call, and its cancel.
    running
        .cancel(Some("stop".into()))
        .await
        .expect("the cancel goes out");
    match first.next("the first app's abort").await {
        AppEvent::Aborted { reason, .. } => assert_eq!(reason.as_deref(), Some("stop")),
        other => panic!("expected the abort in the first app, got {other:?}"),
    }
    let echoed = gateway.call_tool("echo", json!({ "still": "first" })).await;
    assert_eq!(echoed.structured_content, Some(json!({ "still": "first" })));
    // Once the first app has gone, the room is free: a reloaded page joins.
    first.leave();
    let mut second = within(WAIT, "the next app joining", async {
        loop {
            if let Ok((ws, _)) =
                tokio_tungstenite::connect_async(format!("{}/agent", gateway.url)).await
            {
                break App::serve(ws);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(matches!(
        second.next("the next app's session").await,
        AppEvent::Joined
    ));
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_joins_the_first_gateway_and_both_use_the_app() {
    let (first, mut app) = joined().await;
    // A second host, configured the same way (same port), starts its own copy: it joins the first.
    let second = Gateway::join(&first).await;
    let expected: Vec<String> = TOOLS.iter().map(|(n, d)| format!("{n}: {d}")).collect();
    assert_eq!(
        second.tools().await,
        expected,
        "the second host sees the app's tools"
    );
    let params = json!({ "from": "second" });
    let result = second.call_tool("echo", params.clone()).await;
    assert_eq!(result.structured_content.as_ref(), Some(&params));
    assert_eq!(app.started().await.1, "echo");
    let params = json!({ "from": "first" });
    let result = first.call_tool("echo", params.clone()).await;
    assert_eq!(
        result.structured_content.as_ref(),
        Some(&params),
        "the first host still works"
    );
    assert_eq!(app.started().await.1, "echo");
    // A call of the second host's still running when it goes is cancelled in the app.
    let _slow = second.call("slow", json!({})).await;
    assert_eq!(app.started().await.1, "slow");
    let t0 = Instant::now();
    second.close().await;
    loop {
        match app.next("the second host's call aborted").await {
            AppEvent::Aborted { reason, .. } => {
                assert!(reason.unwrap_or_default().contains("went away"));
                break;
            }
            _ => continue,
        }
    }
    assert!(t0.elapsed() < Duration::from_secs(5));
    // The first host is unaffected.
    let result = first.call_tool("echo", json!({ "after": true })).await;
    assert_eq!(result.structured_content, Some(json!({ "after": true })));
    first.close().await;
}
