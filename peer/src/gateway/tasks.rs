//! MCP tasks (`io.modelcontextprotocol/tasks`, an extension of revision 2026-07-28) in `abp-peer mcp`: a tool
//! call the host polls instead of waiting on, for a browser app's long jobs.
//!
//! A capability the app registered with `task: 'optional'` or `'required'` is answered with a `CreateTaskResult`
//! when the request declares the extension in its `_meta` client capabilities; the call then runs in the app
//! as any other, and the host asks `tasks/get` for its state: `working` (with the last progress as
//! `statusMessage`), `input_required` (the questions the handler's `ctx.elicit` is waiting on, answered by
//! `tasks/update`), then `completed` (the tool's result, a tool error included), `failed` (a JSON-RPC error) or
//! `cancelled`.
//!
//! `tasks/cancel` is ABP's acknowledged cancel: the app says whether its handler stopped or had already
//! finished, so a cancelled task ends `cancelled` only when the work did not happen, and `completed` with the
//! real result when it did. The host going away does not cancel a task: it keeps running until its `ttlMs`
//! passes (then it is cancelled in the app and ends `failed`); a task whose app leaves ends `failed` with a
//! JSON-RPC error that says so. A task is kept until its `ttlMs` from creation, then forgotten.
//!
//! A task belongs to the host that made it: the host on stdio, the HTTP endpoint (every holder of the launch token
//! there is one principal), or a host joined through `/mcp-host`. Another host asking after its id is told that no
//! such task exists, as for an unknown one (each task id is 128 random bits besides).
//!
//! Tasks are bounded: at most [`MAX_TASKS`] per gateway, and [`KEPT_BYTES`] for the results of finished ones. Past
//! either, the oldest finished tasks are forgotten first (`tasks/get` of one is then "not found", as for a task
//! whose `ttlMs` passed); a new task while [`MAX_TASKS`] still run is refused with a JSON-RPC error.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use abp_wasm::core::dialect::mcp::{elicitation_params, elicitation_response_of, tool_result_of};
use serde_json::{json, Map, Value};

use super::Clock;

/// The extension's name, in `capabilities.extensions` and in a request's client capabilities.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How long a task is kept from its creation (its `ttlMs`): one that still runs then is cancelled and fails.
pub(crate) const TTL: Duration = Duration::from_secs(60 * 60);

/// The most tasks a gateway keeps, running and finished.
pub(crate) const MAX_TASKS: usize = 1024;

/// The most bytes of finished tasks' results (their JSON) a gateway keeps.
pub(crate) const KEPT_BYTES: usize = 64 * 1024 * 1024;

/// How often a host should ask `tasks/get` (`pollIntervalMs`).
const POLL_INTERVAL_MS: u64 = 500;

/// JSON-RPC errors of the extension.
pub(crate) const MISSING_CAPABILITY: i64 = -32021;
const INVALID_PARAMS: i64 = -32602;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// A question the task's handler is waiting on: its key in `inputRequests`, the app's elicitation id, and the
/// request as `inputRequests` shows it.
struct Input {
    key: String,
    elicit_id: String,
    confirm: bool,
    request: Value,
}

struct Task {
    /// The ABP call that runs it in the app.
    abp_id: String,
    status: Status,
    created: SystemTime,
    updated: SystemTime,
    /// When it is forgotten (cancelled in the app first, if it still runs).
    expires: Instant,
    message: Option<String>,
    inputs: Vec<Input>,
    /// `result` (completed) or `error` (failed).
    outcome: Option<(&'static str, Value)>,
    /// The request that made it declared `elicitation`: its handler's questions may be asked.
    elicitation: bool,
    /// It changed since its followers last heard of it.
    changed: bool,
    /// The host it belongs to.
    owner: u64,
    /// When it ended among the tasks (running: `None`), and the size of what it keeps (its outcome's JSON).
    finished: Option<(u64, usize)>,
}

impl Task {
    fn set(&mut self, status: Status, wall: SystemTime) {
        self.status = status;
        self.touch(wall);
    }

    fn touch(&mut self, wall: SystemTime) {
        self.updated = wall;
        self.changed = true;
    }

    /// The task as the extension's `Task` (and `DetailedTask`, with `detailed`).
    fn shape(&self, id: &str, detailed: bool) -> Map<String, Value> {
        let mut t = Map::new();
        t.insert("taskId".into(), json!(id));
        t.insert("status".into(), json!(self.status.name()));
        t.insert("createdAt".into(), json!(iso8601(self.created)));
        t.insert("lastUpdatedAt".into(), json!(iso8601(self.updated)));
        t.insert("ttlMs".into(), json!(TTL.as_millis() as u64));
        t.insert("pollIntervalMs".into(), json!(POLL_INTERVAL_MS));
        if let Some(m) = &self.message {
            t.insert("statusMessage".into(), json!(m));
        }
        if detailed {
            if self.status == Status::InputRequired {
                let asked: Map<String, Value> = self
                    .inputs
                    .iter()
                    .map(|i| (i.key.clone(), i.request.clone()))
                    .collect();
                t.insert("inputRequests".into(), Value::Object(asked));
            }
            if let Some((field, value)) = &self.outcome {
                t.insert((*field).into(), value.clone());
            }
        }
        t
    }
}

/// What became of a `tasks/cancel`.
pub(crate) enum Cancel {
    /// The app is asked to cancel this ABP call; the task ends as it answers.
    Ask(String),
    /// Nothing to do: the task had ended.
    Ended,
}

/// The gateway's tasks, by id.
pub(crate) struct Tasks {
    tasks: HashMap<String, Task>,
    /// The running ones, by their ABP call: every app event asks whether its call is a task's.
    by_call: HashMap<String, String>,
    /// Some task changed since [`Self::take_changed`] last looked.
    dirty: bool,
    next_key: u64,
    /// The bytes the finished tasks keep.
    kept: usize,
    /// How many tasks have ended: the order they ended in, oldest first (several may end at one time).
    ended: u64,
    /// The time, as the gateway gave it last.
    clock: Clock,
}

impl Tasks {
    /// No tasks yet, at `now`.
    pub(crate) fn new(now: Clock) -> Tasks {
        Tasks {
            tasks: HashMap::new(),
            by_call: HashMap::new(),
            dirty: false,
            next_key: 0,
            kept: 0,
            ended: 0,
            clock: now,
        }
    }

    /// The time of what is handled now.
    pub(crate) fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    fn now(&self) -> Clock {
        self.clock
    }

    /// Whether a new task may start: finished tasks are forgotten, oldest first, to make room; false when
    /// [`MAX_TASKS`] still run.
    pub(crate) fn has_room(&mut self) -> bool {
        self.trim(1);
        self.tasks.len() < MAX_TASKS
    }

    /// A task of host `owner` for the ABP call `abp_id` starts: its `CreateTaskResult`.
    pub(crate) fn create(&mut self, abp_id: String, elicitation: bool, owner: u64) -> Value {
        let now = self.now();
        self.next_key += 1;
        let id = new_task_id(now.wall, self.next_key);
        let task = Task {
            abp_id,
            status: Status::Working,
            created: now.wall,
            updated: now.wall,
            expires: now.at + TTL,
            message: None,
            inputs: Vec::new(),
            outcome: None,
            elicitation,
            changed: false,
            owner,
            finished: None,
        };
        let mut created = task.shape(&id, false);
        created.insert("resultType".into(), json!("task"));
        self.by_call.insert(task.abp_id.clone(), id.clone());
        self.tasks.insert(id, task);
        Value::Object(created)
    }

    /// Forgets the oldest finished tasks until `room` more fit under [`MAX_TASKS`] and the kept results under
    /// [`KEPT_BYTES`] (or no finished one is left).
    fn trim(&mut self, room: usize) {
        while self.tasks.len() + room > MAX_TASKS || self.kept > KEPT_BYTES {
            let oldest = self
                .tasks
                .iter()
                .filter_map(|(id, t)| t.finished.map(|(at, _)| (at, id)))
                .min()
                .map(|(_, id)| id.clone());
            let Some(id) = oldest else { break };
            self.forget(&id);
        }
    }

    fn forget(&mut self, id: &str) {
        if let Some((_, bytes)) = self.tasks.remove(id).and_then(|t| t.finished) {
            self.kept -= bytes;
        }
    }

    /// Host `owner`'s task `id` (another host's is as unknown as one that does not exist).
    fn owned(&self, id: &str, owner: u64) -> Result<&Task, (i64, String)> {
        self.tasks
            .get(id)
            .filter(|t| t.owner == owner)
            .ok_or_else(|| not_found(id))
    }

    /// The running task of the ABP call `abp_id` (marked as changed: whoever asks is about to change it).
    fn of_call(&mut self, abp_id: &str) -> Option<&mut Task> {
        let id = self.by_call.get(abp_id)?;
        self.dirty = true;
        self.tasks.get_mut(id)
    }

    /// Whether the ABP call `abp_id` runs a task.
    pub(crate) fn runs(&self, abp_id: &str) -> bool {
        self.by_call.contains_key(abp_id)
    }

    /// `tasks/get`: the task in detail, or the JSON-RPC error for an unknown one.
    pub(crate) fn get(&self, id: &str, owner: u64) -> Result<Value, (i64, String)> {
        let task = self.owned(id, owner)?;
        let mut shown = task.shape(id, true);
        shown.insert("resultType".into(), json!("complete"));
        Ok(Value::Object(shown))
    }

    /// `tasks/update`: the answers among `responses` to questions the task is waiting on, as (the app's
    /// elicitation id, its ABP answer); the rest is ignored, as the extension says.
    pub(crate) fn update(
        &mut self,
        id: &str,
        owner: u64,
        responses: Option<&Value>,
    ) -> Result<Vec<(String, Value)>, (i64, String)> {
        let wall = self.now().wall;
        self.owned(id, owner)?;
        let task = self.tasks.get_mut(id).ok_or_else(|| not_found(id))?;
        self.dirty = true;
        let Some(responses) = responses.and_then(Value::as_object) else {
            return Ok(Vec::new());
        };
        let mut answers = Vec::new();
        task.inputs.retain(|i| match responses.get(&i.key) {
            Some(r) if r.is_object() => {
                answers.push((i.elicit_id.clone(), elicitation_response_of(r, i.confirm)));
                false
            }
            _ => true,
        });
        if !answers.is_empty() && task.inputs.is_empty() && task.status == Status::InputRequired {
            task.set(Status::Working, wall);
        }
        Ok(answers)
    }

    /// `tasks/cancel`.
    pub(crate) fn cancel(&mut self, id: &str, owner: u64) -> Result<Cancel, (i64, String)> {
        let task = self.owned(id, owner)?;
        Ok(if task.status.terminal() {
            Cancel::Ended
        } else {
            Cancel::Ask(task.abp_id.clone())
        })
    }

    /// The task's handler reported progress: its message is the task's `statusMessage`.
    pub(crate) fn progress(&mut self, abp_id: &str, payload: &Value) {
        let wall = self.now().wall;
        if let Some(task) = self.of_call(abp_id) {
            let message = payload
                .get("message")
                .or_else(|| payload.get("status"))
                .and_then(Value::as_str);
            if let Some(m) = message {
                task.message = Some(m.to_owned());
                task.touch(wall);
            }
        }
    }

    /// The task's handler asks (`ctx.elicit`): the task is `input_required` until `tasks/update` answers. False
    /// when the request that made the task did not declare `elicitation` (the app is told it is not supported).
    pub(crate) fn ask(&mut self, abp_id: &str, elicit_id: &str, request: &Value) -> bool {
        let wall = self.now().wall;
        self.next_key += 1;
        let fallback = format!("input-{}", self.next_key);
        let Some(task) = self.of_call(abp_id) else {
            return false;
        };
        if !task.elicitation {
            return false;
        }
        let confirm = request.get("method").and_then(Value::as_str) == Some("elicitation/confirm");
        let key = request
            .get("key")
            .and_then(Value::as_str)
            .filter(|k| !task.inputs.iter().any(|i| i.key == *k))
            .map(str::to_owned)
            .unwrap_or(fallback);
        task.inputs.push(Input {
            key,
            elicit_id: elicit_id.to_owned(),
            confirm,
            request: json!({ "method": "elicitation/create", "params": elicitation_params(request) }),
        });
        task.set(Status::InputRequired, wall);
        true
    }

    /// The app withdrew a question (its handler stopped waiting).
    pub(crate) fn withdrawn(&mut self, elicit_id: &str) {
        let wall = self.now().wall;
        for id in self.by_call.values() {
            let Some(task) = self.tasks.get_mut(id) else {
                continue;
            };
            let before = task.inputs.len();
            task.inputs.retain(|i| i.elicit_id != elicit_id);
            if task.inputs.len() != before
                && task.inputs.is_empty()
                && task.status == Status::InputRequired
            {
                task.set(Status::Working, wall);
                self.dirty = true;
            }
        }
    }

    /// The task's ABP call settled with `response` (as `abp.call` resolves): its final state. A cancel the
    /// handler honoured is `cancelled`; a result, even one that came after a cancel because the work had
    /// finished, is `completed`; a tool error is `completed` with `isError`; the app refusing the arguments
    /// or the call, or leaving, is `failed` with a JSON-RPC error.
    pub(crate) fn settled(
        &mut self,
        abp_id: &str,
        response: &Value,
        tool_error: impl Fn(&str, &str, &Value) -> Value,
    ) {
        let Some(id) = self.by_call.remove(abp_id) else {
            return;
        };
        self.end(&id, response, tool_error);
        self.trim(0);
    }

    /// Task `id`'s final state, from its call's `response` (see [`Self::settled`]), and what it keeps counted.
    fn end(
        &mut self,
        id: &str,
        response: &Value,
        tool_error: impl Fn(&str, &str, &Value) -> Value,
    ) {
        let now = self.now();
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        self.dirty = true;
        task.inputs.clear();
        task.conclude(response, tool_error, now.wall);
        let bytes = task
            .outcome
            .as_ref()
            .map_or(0, |(_, v)| serde_json::to_vec(v).map_or(0, |b| b.len()));
        self.ended += 1;
        task.finished = Some((self.ended, bytes));
        self.kept += bytes;
    }
}

impl Task {
    /// Its status and outcome from its call's `response`.
    fn conclude(
        &mut self,
        response: &Value,
        tool_error: impl Fn(&str, &str, &Value) -> Value,
        wall: SystemTime,
    ) {
        let task = self;
        if response.get("success") == Some(&Value::Bool(true)) {
            let data = response.get("data").cloned().unwrap_or(Value::Null);
            task.outcome = Some(("result", tool_result_of(data)));
            task.set(Status::Completed, wall);
            return;
        }
        let error = response.get("error").cloned().unwrap_or(Value::Null);
        let code = error
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("INTERNAL_ERROR");
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("The app did not say why")
            .to_owned();
        let failed = |code: i64, message: String| json!({ "code": code, "message": message });
        match code {
            "CANCELLED" if response.get("cancelled") == Some(&Value::Bool(true)) => {
                task.set(Status::Cancelled, wall)
            }
            "INVALID_PARAMS" | "UNKNOWN_CAPABILITY" => {
                task.message = Some(message.clone());
                task.outcome = Some(("error", failed(INVALID_PARAMS, message)));
                task.set(Status::Failed, wall);
            }
            "DISCONNECTED" => {
                let message = format!("The app left before the task finished: {message}");
                task.message = Some(message.clone());
                task.outcome = Some(("error", failed(-32603, message)));
                task.set(Status::Failed, wall);
            }
            _ => {
                task.outcome = Some(("result", tool_error(code, &message, &error)));
                task.set(Status::Completed, wall);
            }
        }
    }
}

impl Tasks {
    /// The app left: what it still ran fails.
    pub(crate) fn app_left(&mut self) {
        let gone = self.running();
        let response = json!({ "success": false, "error": { "code": "DISCONNECTED",
            "message": "The connection to the app was lost" } });
        for abp_id in gone {
            self.settled(&abp_id, &response, |_, _, _| Value::Null);
        }
    }

    /// The tasks that changed since this was last asked, each as `notifications/tasks` carries it (the task as
    /// `tasks/get` shows it).
    pub(crate) fn take_changed(&mut self) -> Vec<(String, Value, u64)> {
        if !std::mem::take(&mut self.dirty) {
            return Vec::new();
        }
        let mut changed = Vec::new();
        for (id, task) in &mut self.tasks {
            if std::mem::take(&mut task.changed) {
                changed.push((id.clone(), Value::Object(task.shape(id, true)), task.owner));
            }
        }
        changed
    }

    /// The ABP calls of the tasks still running.
    pub(crate) fn running(&self) -> Vec<String> {
        self.by_call.keys().cloned().collect()
    }

    /// When the next task is due to be forgotten.
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.tasks.values().map(|t| t.expires).min()
    }

    /// Forgets the tasks whose `ttlMs` has passed; returns the ABP calls of those still running, to cancel.
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<String> {
        let mut running = Vec::new();
        let mut freed = 0;
        self.tasks.retain(|_, t| {
            if t.expires > now {
                return true;
            }
            if !t.status.terminal() {
                running.push(t.abp_id.clone());
            }
            freed += t.finished.map_or(0, |(_, bytes)| bytes);
            false
        });
        self.kept -= freed;
        let tasks = &self.tasks;
        self.by_call.retain(|_, id| tasks.contains_key(id));
        running
    }
}

fn not_found(id: &str) -> (i64, String) {
    (
        INVALID_PARAMS,
        format!("Failed to retrieve task: no task {id} (unknown, or its ttlMs has passed)"),
    )
}

/// Whether a request's `_meta` declares the tasks extension among its client capabilities.
pub(crate) fn declared(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// Whether a request's `_meta` declares `elicitation`.
pub(crate) fn declares_elicitation(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/elicitation"))
        .is_some_and(Value::is_object)
}

/// -32021's `data`: the extension the request needed.
pub(crate) fn missing_extension() -> Value {
    json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } })
}

/// 128 random bits, as hex: a task id nobody can guess. `now`: the time, for an id when the system has no
/// randomness to give.
fn new_task_id(now: SystemTime, count: u64) -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness from the system: unique still (the clock and a count), but guessable.
        let nanos = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = (nanos ^ (u128::from(count) << 64)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A time as ISO 8601 in UTC with milliseconds (`2026-11-27T03:45:03.123Z`).
fn iso8601(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since the Unix epoch to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host the tests' tasks belong to.
    const HOST: u64 = 7;

    fn task_id(created: &Value) -> String {
        created["taskId"].as_str().unwrap_or_default().to_owned()
    }

    #[test]
    fn times_are_iso_8601_in_utc() {
        let at = UNIX_EPOCH + Duration::from_millis(1_795_747_022_223);
        assert_eq!(iso8601(at), "2026-11-27T02:37:02.223Z");
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // the leap day of the year 2000
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_task_reports_its_progress_questions_and_end() {
        let mut tasks = Tasks::new(Clock::system());
        let created = tasks.create("mcp-1".into(), true, HOST);
        assert_eq!(created["resultType"], "task");
        assert_eq!(created["status"], "working");
        for absent in [
            "result",
            "error",
            "inputRequests",
            "requestState",
            "task",
            "ttl",
        ] {
            assert!(created.get(absent).is_none(), "{absent}: {created}");
        }
        let id = created["taskId"].as_str().expect("an id").to_owned();
        assert_eq!(id.len(), 32);

        tasks.progress(
            "mcp-1",
            &json!({ "progress": 1, "message": "rendering page 1" }),
        );
        let got = tasks.get(&id, HOST).expect("known");
        assert_eq!(
            (got["status"].as_str(), got["statusMessage"].as_str()),
            (Some("working"), Some("rendering page 1"))
        );
        assert_eq!(got["resultType"], "complete");

        assert!(tasks.ask(
            "mcp-1",
            "e1",
            &json!({ "method": "elicitation/create", "key": "sure",
            "params": { "message": "Overwrite?", "requestedSchema": { "type": "object" } } })
        ));
        let got = tasks.get(&id, HOST).expect("known");
        assert_eq!(got["status"], "input_required");
        assert_eq!(
            got["inputRequests"]["sure"]["params"]["message"],
            "Overwrite?"
        );
        let answers = tasks
            .update(&id, HOST, Some(&json!({ "sure": { "action": "accept", "content": { "ok": true } }, "other": 1 })))
            .expect("known");
        assert_eq!(
            answers,
            [(
                "e1".to_owned(),
                json!({ "success": true, "data": { "ok": true } })
            )]
        );
        assert_eq!(tasks.get(&id, HOST).expect("known")["status"], "working");

        tasks.settled(
            "mcp-1",
            &json!({ "success": true, "data": { "pages": 3 } }),
            |_, _, _| Value::Null,
        );
        let got = tasks.get(&id, HOST).expect("known");
        assert_eq!(got["status"], "completed");
        assert_eq!(got["result"]["structuredContent"], json!({ "pages": 3 }));
        assert!(matches!(tasks.cancel(&id, HOST), Ok(Cancel::Ended)));
        assert_eq!(tasks.get("nope", HOST).expect_err("unknown").0, -32602);
    }

    #[test]
    fn a_cancel_the_handler_honoured_is_cancelled_and_one_it_beat_is_completed() {
        let mut tasks = Tasks::new(Clock::system());
        let a = task_id(&tasks.create("mcp-1".into(), false, HOST));
        let b = task_id(&tasks.create("mcp-2".into(), false, HOST));
        assert!(matches!(tasks.cancel(&a, HOST), Ok(Cancel::Ask(c)) if c == "mcp-1"));
        tasks.settled(
            "mcp-1",
            &json!({ "success": false, "cancelled": true,
            "error": { "code": "CANCELLED", "message": "stop" } }),
            |_, _, _| Value::Null,
        );
        assert_eq!(tasks.get(&a, HOST).expect("known")["status"], "cancelled");
        assert!(matches!(tasks.cancel(&b, HOST), Ok(Cancel::Ask(_))));
        tasks.settled(
            "mcp-2",
            &json!({ "success": true, "data": "done" }),
            |_, _, _| Value::Null,
        );
        assert_eq!(tasks.get(&b, HOST).expect("known")["status"], "completed");
        assert!(!tasks.ask("mcp-3", "e", &json!({})), "no task, no question");
    }

    #[test]
    fn the_app_leaving_fails_what_it_ran_with_an_error_that_says_so() {
        let mut tasks = Tasks::new(Clock::system());
        let id = task_id(&tasks.create("mcp-1".into(), false, HOST));
        let running = task_id(&tasks.create("mcp-2".into(), false, HOST));
        tasks.app_left();
        let got = tasks.get(&id, HOST).expect("known");
        assert_eq!(got["status"], "failed");
        assert_eq!(got["error"]["code"], -32603);
        assert!(got["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("app left"));
        assert!(tasks
            .expire(Instant::now() + TTL + Duration::from_secs(1))
            .is_empty());
        assert!(tasks.get(&id, HOST).is_err(), "forgotten after its ttlMs");
        assert!(tasks.get(&running, HOST).is_err());

        // One still running when its ttlMs passes is forgotten, and its call is to be cancelled in the app.
        let late = task_id(&tasks.create("mcp-3".into(), false, HOST));
        assert!(tasks.expire(Instant::now()).is_empty(), "not yet");
        assert_eq!(
            tasks.expire(Instant::now() + TTL + Duration::from_secs(1)),
            ["mcp-3"]
        );
        assert!(tasks.get(&late, HOST).is_err());
    }

    fn done(tasks: &mut Tasks, abp_id: &str, data: Value) {
        let response = json!({ "success": true, "data": data });
        tasks.settled(abp_id, &response, |_, _, _| Value::Null);
    }

    #[test]
    fn another_host_s_task_is_unknown_to_it() {
        let mut tasks = Tasks::new(Clock::system());
        let id = task_id(&tasks.create("mcp-1".into(), false, HOST));
        assert_eq!(tasks.get(&id, HOST + 1).expect_err("not its own").0, -32602);
        assert!(tasks.cancel(&id, HOST + 1).is_err());
        assert!(tasks.update(&id, HOST + 1, None).is_err());
        assert!(tasks.get(&id, HOST).is_ok());
        done(&mut tasks, "mcp-1", json!("report"));
        assert!(tasks
            .take_changed()
            .iter()
            .all(|(_, _, owner)| *owner == HOST));
    }

    #[test]
    fn finished_tasks_are_forgotten_oldest_first_past_the_byte_budget() {
        let mut tasks = Tasks::new(Clock::system());
        let big = "x".repeat(1024 * 1024);
        let ids: Vec<String> = (0..80)
            .map(|n| {
                let id = task_id(&tasks.create(format!("mcp-{n}"), false, HOST));
                done(&mut tasks, &format!("mcp-{n}"), json!(big));
                id
            })
            .collect();
        assert!(tasks.kept <= KEPT_BYTES, "{} kept", tasks.kept);
        assert!(tasks.get(&ids[0], HOST).is_err(), "the oldest is forgotten");
        assert!(tasks.get(&ids[79], HOST).is_ok(), "the newest is kept");
        // No more forgotten than needed: what is kept fills the budget but for less than two results.
        assert!(
            tasks.kept > KEPT_BYTES - 4 * big.len(),
            "{} kept",
            tasks.kept
        );
        let kept = ids.iter().filter(|id| tasks.get(id, HOST).is_ok()).count();
        assert!(kept <= 64, "{kept} of 80 kept");
    }

    #[test]
    fn at_most_max_tasks_and_running_ones_are_never_dropped() {
        let mut tasks = Tasks::new(Clock::system());
        let running = task_id(&tasks.create("mcp-run".into(), false, HOST));
        for n in 0..MAX_TASKS + 10 {
            assert!(tasks.has_room(), "finished tasks make room ({n})");
            tasks.create(format!("mcp-{n}"), false, HOST);
            done(&mut tasks, &format!("mcp-{n}"), json!(n));
        }
        assert!(tasks.tasks.len() <= MAX_TASKS);
        assert!(tasks.get(&running, HOST).is_ok(), "a running task stays");
        // All running: no room.
        let mut full = Tasks::new(Clock::system());
        for n in 0..MAX_TASKS {
            full.create(format!("mcp-{n}"), false, HOST);
        }
        assert!(!full.has_room());
    }
}
