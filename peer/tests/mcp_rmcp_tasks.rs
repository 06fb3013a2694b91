//! MCP tasks (`io.modelcontextprotocol/tasks`, an extension of revision 2026-07-28) in `abp-peer mcp`, driven by
//! the official Rust SDK `rmcp`: its client over its child-process transport, in the modern era (`server/discover`),
//! declaring the extension as rmcp does (in its client capabilities, which it puts in every request's `_meta`), with
//! the native ABP app the gateway tests share (`native_app/`). Every answer is read through rmcp's own task types,
//! so a parser nobody here wrote accepts the shapes the gateway sends. Covers:
//! - a task: `tools/call` answered with a `CreateTaskResult`, `tasks/get` polled at its `pollIntervalMs` from
//!   `working` to `completed`, the tool's result read from it; `tasks/cancel` after the end leaves it completed;
//! - `tasks/cancel` of a running task: the app's handler sees its abort, and the task ends `cancelled`;
//! - a task that asks (`ctx.elicit`): `input_required` with its question in `inputRequests`, answered through
//!   `tasks/update`, then `completed` with the answer the handler got;
//! - a task whose app leaves: `failed`, with the JSON-RPC error that says so; an unknown task id is -32602;
//! - a host that does not declare the extension: the same tool is a plain call, and the task methods are -32021.
//!
//! rmcp has no `tasks/list` (the extension has none) and no typed way to follow a task's `notifications/tasks`
//! (its subscription filter has no `taskIds`); `mcp_http.rs` covers that one over raw HTTP.

use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, CreateTaskResult, ElicitResult, ElicitationAction, ElicitationCapability,
    ExtensionCapabilities, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    InputResponses, ProtocolVersion, TaskPayload, TaskStatus, UpdateTaskParams, TASKS_EXTENSION_ID,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceError};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

mod common;
mod native_app;
use common::TempDir;
use native_app::{within, App, AppEvent, WAIT};

/// The reason the gateway gives the app's handler for a `tasks/cancel`.
const CANCEL_REASON: &str = "cancelled by the MCP client (tasks/cancel)";

// ---------------------------------------------------------------------------------------------------------
// The MCP host: rmcp's client, with the capabilities it declares.

struct Host {
    config: ClientConfig,
}

impl ClientHandler for Host {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }
}

/// A host's capabilities: the tasks extension (as rmcp's `supports_tasks` reads it) and elicitation, or nothing.
fn capabilities(tasks: bool) -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    if tasks {
        let mut extensions = ExtensionCapabilities::new();
        extensions.insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
        capabilities.extensions = Some(extensions);
        capabilities.elicitation = Some(ElicitationCapability::default());
    }
    assert_eq!(capabilities.supports_tasks(), tasks);
    capabilities
}

/// A directory under the system temp dir for the gateway's `XDG_STATE_HOME` and `XDG_RUNTIME_DIR`, so that the
/// tests never read or change the user's own; removed with the gateway.
struct Gateway {
    client: RunningService<RoleClient, Host>,
    /// `ws://127.0.0.1:PORT`.
    url: String,
    _dir: TempDir,
}

impl Gateway {
    /// `abp-peer mcp --listen 127.0.0.1:0`, started by rmcp, which opens a 2026-07-28 session with
    /// `server/discover` (no `initialize`) and then sends `capabilities` in every request's `_meta`.
    async fn start(capabilities: ClientCapabilities) -> Gateway {
        let dir = TempDir::new();
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_abp-peer"));
        command
            .args(["mcp", "--listen", "127.0.0.1:0"])
            .env_remove("ABP_PEER_TOKEN")
            .env("XDG_STATE_HOME", dir.0.join("state"))
            .env("XDG_RUNTIME_DIR", dir.0.join("run"));
        let (process, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .expect("rmcp starts abp-peer mcp");
        let mut lines = BufReader::new(stderr.expect("the gateway's stderr, piped")).lines();
        let url = within(WAIT, "abp-peer listening on ws://…", async {
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) => {
                        if let Some(rest) = line.strip_prefix("abp-peer listening on ") {
                            let address = rest.split(' ').next().unwrap_or_default();
                            break address.trim_end_matches(':').to_owned();
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
        let host = Host {
            config: ClientConfig::new(capabilities, Implementation::new("abp-rmcp-tasks", "1")),
        };
        let modern = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let client = within(
            WAIT,
            "rmcp's server/discover",
            host.serve_with_lifecycle(process, modern),
        )
        .await
        .expect("rmcp opens a 2026-07-28 session with the gateway");
        let server = client.peer_info().expect("what server/discover said");
        assert_eq!(server.protocol_version, ProtocolVersion::V_2026_07_28);
        assert!(
            server.capabilities.supports_tasks(),
            "the gateway advertises the tasks extension: {:?}",
            server.capabilities
        );
        Gateway {
            client,
            url,
            _dir: dir,
        }
    }

    /// The app joins, and the gateway has its tools (a task is only made for a tool the gateway knows).
    async fn app(&self) -> App {
        let mut app = App::join(&self.url).await;
        assert!(matches!(
            app.next("the app's session").await,
            AppEvent::Joined
        ));
        within(WAIT, "the app's tools listed", async {
            loop {
                let list = self.client.list_tools(None).await.expect("tools/list");
                if list.tools.iter().any(|t| t.name == "job") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        app
    }

    /// `tools/call` as a host that takes tasks sends it, answered as rmcp reads it.
    async fn call(&self, name: &'static str, arguments: Value) -> CallToolResponse {
        let mut params = CallToolRequestParams::new(name);
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        within(WAIT, "tools/call", self.client.call_tool_once(params))
            .await
            .expect("tools/call answers")
    }

    /// `tools/call` of `job`, answered with a task: its `CreateTaskResult`, checked.
    async fn task(&self, arguments: Value) -> CreateTaskResult {
        let created = match self.call("job", arguments).await {
            CallToolResponse::Task(created) => created,
            other => panic!("expected a task, got {other:?}"),
        };
        assert!(created.result_type.is_task(), "{created:?}");
        let task = &created.task;
        assert_eq!(task.status, TaskStatus::Working, "{created:?}");
        assert_eq!(
            task.task_id.len(),
            32,
            "128 random bits as hex: {created:?}"
        );
        assert_eq!(task.ttl_ms, Some(60 * 60 * 1000), "{created:?}");
        assert_eq!(task.poll_interval_ms, Some(500), "{created:?}");
        for at in [&task.created_at, &task.last_updated_at] {
            assert!(at.len() == 24 && at.ends_with('Z'), "ISO 8601 in UTC: {at}");
        }
        created
    }

    async fn get(&self, task_id: &str) -> Result<GetTaskResult, ServiceError> {
        within(
            WAIT,
            "tasks/get",
            self.client.get_task(GetTaskParams::new(task_id)),
        )
        .await
    }

    /// Polls `tasks/get` at the task's `pollIntervalMs` until `done` says its state will do: that state, and
    /// every status seen on the way.
    async fn poll(
        &self,
        created: &CreateTaskResult,
        done: impl Fn(TaskStatus) -> bool,
    ) -> (GetTaskResult, Vec<TaskStatus>) {
        let every = Duration::from_millis(created.task.poll_interval_ms.unwrap_or(500));
        let id = &created.task.task_id;
        within(WAIT, "the task's state", async {
            let mut seen = Vec::new();
            loop {
                let got = self.get(id).await.expect("tasks/get answers");
                assert!(got.result_type.is_complete(), "{got:?}");
                assert_eq!(&got.task.task.task_id, id);
                seen.push(got.task.status());
                if done(got.task.status()) {
                    break (got, seen);
                }
                tokio::time::sleep(every).await;
            }
        })
        .await
    }

    async fn until_ended(&self, created: &CreateTaskResult) -> (GetTaskResult, Vec<TaskStatus>) {
        self.poll(created, |s| s.is_terminal()).await
    }

    async fn cancel(&self, task_id: &str) -> Result<(), ServiceError> {
        within(
            WAIT,
            "tasks/cancel",
            self.client.cancel_task(CancelTaskParams::new(task_id)),
        )
        .await
    }

    async fn close(self) {
        let quit = within(WAIT, "closing the client", self.client.cancel()).await;
        assert!(quit.is_ok(), "{quit:?}");
    }
}

/// A completed task's result, read as rmcp's `CallToolResult`.
fn completed(got: &GetTaskResult) -> CallToolResult {
    match &got.task.payload {
        TaskPayload::Completed { result } => {
            serde_json::from_value(Value::Object(result.clone())).expect("a CallToolResult")
        }
        other => panic!("expected a completed task, got {other:?}"),
    }
}

/// The JSON-RPC error of a request the gateway refused: (code, message, data).
fn refused(answer: Result<impl std::fmt::Debug, ServiceError>) -> (i32, String, Option<Value>) {
    match answer {
        Err(ServiceError::McpError(e)) => (e.code.0, e.message.to_string(), e.data),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_takes_a_task_polls_it_to_completed_and_reads_the_tools_result() {
    let gateway = Gateway::start(capabilities(true)).await;
    let mut app = gateway.app().await;

    // A tool the app did not register as a task is answered at once, even to a host that takes tasks.
    match gateway.call("echo", json!({ "x": 1 })).await {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.structured_content, Some(json!({ "x": 1 })))
        }
        other => panic!("expected a plain result, got {other:?}"),
    }
    assert_eq!(app.started().await.1, "echo");

    let t0 = Instant::now();
    let created = gateway.task(json!({ "ms": 1000 })).await;
    let (call_id, capability) = app.started().await;
    assert_eq!(capability, "job");
    let (done, seen) = gateway.until_ended(&created).await;
    assert_eq!(
        seen.first(),
        Some(&TaskStatus::Working),
        "asked at once, it still runs"
    );
    assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{done:?}");
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t0.elapsed()
    );
    match app.next("the job's end").await {
        AppEvent::Finished { call_id: c } => assert_eq!(c, call_id),
        other => panic!("expected the job to finish, got {other:?}"),
    }
    assert_eq!(done.task.task.created_at, created.task.created_at);
    assert!(done.task.task.last_updated_at >= created.task.last_updated_at);
    let result = completed(&done);
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(result.structured_content, Some(json!({ "done": true })));

    // Cancelled once it has ended: acknowledged, and it stays completed with the same result.
    gateway
        .cancel(&created.task.task_id)
        .await
        .expect("tasks/cancel is acknowledged");
    let again = gateway.get(&created.task.task_id).await.expect("tasks/get");
    assert_eq!(again.task.status(), TaskStatus::Completed);
    assert_eq!(completed(&again), result);
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_cancels_a_running_task_and_the_handler_sees_its_abort() {
    let gateway = Gateway::start(capabilities(true)).await;
    let mut app = gateway.app().await;
    let created = gateway.task(json!({ "ms": 60_000 })).await;
    let (call_id, capability) = app.started().await;
    assert_eq!(capability, "job");
    let (running, _) = gateway.poll(&created, |_| true).await;
    assert_eq!(running.task.status(), TaskStatus::Working);

    let asked = Instant::now();
    gateway
        .cancel(&created.task.task_id)
        .await
        .expect("tasks/cancel is acknowledged");
    match app.next("the handler's abort").await {
        AppEvent::Aborted {
            call_id: c,
            reason,
            at,
        } => {
            assert_eq!(c, call_id);
            assert_eq!(reason.as_deref(), Some(CANCEL_REASON));
            let took = at.duration_since(asked);
            assert!(took < Duration::from_millis(500), "the abort took {took:?}");
        }
        other => panic!("expected the handler's abort, got {other:?}"),
    }
    let (ended, _) = gateway.until_ended(&created).await;
    assert_eq!(ended.task.status(), TaskStatus::Cancelled, "{ended:?}");
    assert!(matches!(ended.task.payload, TaskPayload::Cancelled));
    let wire = serde_json::to_value(&ended).expect("JSON");
    for absent in ["result", "error", "inputRequests"] {
        assert!(wire.get(absent).is_none(), "{absent}: {wire}");
    }
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_answers_a_tasks_question_with_tasks_update() {
    let gateway = Gateway::start(capabilities(true)).await;
    let mut app = gateway.app().await;
    let created = gateway.task(json!({ "ask": "Your name?" })).await;
    assert_eq!(app.started().await.1, "job");

    let (asking, _) = gateway.poll(&created, |s| s != TaskStatus::Working).await;
    let requests = match &asking.task.payload {
        TaskPayload::InputRequired { input_requests } => input_requests,
        other => panic!("expected the task to ask, got {other:?}"),
    };
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["answer"],
        "{requests:?}"
    );
    // rmcp reads the question as its own `elicitation/create` request.
    let question = match &requests["answer"] {
        InputRequest::Elicitation(request) => serde_json::to_value(&request.params).expect("JSON"),
        other => panic!("expected an elicitation, got {other:?}"),
    };
    assert_eq!(question["message"], "Your name?", "{question}");
    assert_eq!(
        question["requestedSchema"]["required"],
        json!(["answer"]),
        "{question}"
    );

    let answer =
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "answer": "Ada" }));
    let mut responses = InputResponses::new();
    responses.insert(
        "answer".to_owned(),
        serde_json::to_value(answer).expect("JSON"),
    );
    within(
        WAIT,
        "tasks/update",
        gateway.client.update_task(UpdateTaskParams::new(
            created.task.task_id.clone(),
            responses,
        )),
    )
    .await
    .expect("tasks/update is acknowledged");
    let (done, _) = gateway.until_ended(&created).await;
    assert!(matches!(
        app.next("the job's end").await,
        AppEvent::Finished { .. }
    ));
    assert_eq!(
        completed(&done).structured_content,
        Some(json!({ "done": true, "answered": { "success": true, "data": { "answer": "Ada" } } }))
    );
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_app_leaves_fails_and_an_unknown_task_is_invalid_params() {
    let gateway = Gateway::start(capabilities(true)).await;
    let mut app = gateway.app().await;
    let created = gateway.task(json!({ "ms": 60_000 })).await;
    assert_eq!(app.started().await.1, "job");
    app.leave();
    let (failed, _) = gateway.until_ended(&created).await;
    let error = match &failed.task.payload {
        TaskPayload::Failed { error } => Value::Object(error.clone()),
        other => panic!("expected a failed task, got {other:?}"),
    };
    assert_eq!(error["code"], -32603, "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("The app left before the task finished: "),
        "{error}"
    );
    assert_eq!(failed.task.task.status_message.as_deref(), Some(message));

    let (code, message, _) = refused(gateway.get("0123456789abcdef").await);
    assert_eq!(code, -32602);
    assert!(
        message.starts_with("Failed to retrieve task: no task 0123456789abcdef"),
        "{message}"
    );
    gateway.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_without_the_extension_gets_a_plain_result_and_no_task_methods() {
    let gateway = Gateway::start(capabilities(false)).await;
    let mut app = gateway.app().await;
    match gateway.call("job", json!({ "ms": 50 })).await {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.structured_content, Some(json!({ "done": true })))
        }
        other => panic!("expected a plain result, got {other:?}"),
    }
    assert_eq!(app.started().await.1, "job");
    let (code, _, data) = refused(gateway.get("0123456789abcdef").await);
    assert_eq!(code, -32021);
    assert_eq!(
        data,
        Some(json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION_ID: {} } } }))
    );
    let (code, _, _) = refused(gateway.cancel("0123456789abcdef").await);
    assert_eq!(code, -32021);
    gateway.close().await;
}
