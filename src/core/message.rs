//! The ABP messages as the state machines see them.
//!
//! A dialect's codec (`core::dialect`) turns wire messages into [`Incoming`], and [`FromAgent`] and
//! [`FromApp`] into wire messages. Each message is declared once, by who reads it ([`ToAgent`], [`ToApp`]) or
//! who sends it ([`FromAgent`], [`FromApp`]); [`Control`] and [`ControlOut`] are either side's. The state
//! machines read only the control fields (ids, names, flags); everything the user sees (`params`, `data`,
//! progress details, whole responses) stays an opaque `P`. Also here: what an agent enabled ([`Features`]) and
//! what a handler's return value or throw means ([`Outcome`]).

use super::capability::Changes;
use super::error::{decode_error, AbpError, ErrorCode};
use super::payload::{Kind, Payload, Wire};
use super::trace::Trace;

/// Cancel-result reasons of the cancel table.
pub const REASON_NOT_FOUND: &str = "Operation not found";
pub const REASON_COMPLETED: &str = "Operation already completed";

/// A decoded message, sorted by who reads it. A codec decodes whatever arrives; [`Incoming::for_agent`] and
/// [`Incoming::for_app`] give each state machine its own messages (the other role's are not for it).
#[derive(Clone, Debug)]
pub enum Incoming<P> {
    /// Sent by an app.
    ToAgent(ToAgent<P>),
    /// Sent by an agent.
    ToApp(ToApp<P>),
    /// Sent by either side.
    Control(Control),
    /// A message that the role this build lacks would read (a role build does not read the other role's
    /// messages): for neither side here, as the full build's [`ToApp`] is not for its agent.
    OtherRole,
}

impl<P> Incoming<P> {
    /// The message, if an agent reads it.
    pub fn for_agent(self) -> Option<ToAgent<P>> {
        match self {
            Incoming::ToAgent(m) => Some(m),
            Incoming::Control(m) => Some(ToAgent::Control(m)),
            Incoming::ToApp(_) | Incoming::OtherRole => None,
        }
    }

    /// The message, if an app reads it.
    pub fn for_app(self) -> Option<ToApp<P>> {
        match self {
            Incoming::ToApp(m) => Some(m),
            Incoming::Control(m) => Some(ToApp::Control(m)),
            Incoming::ToAgent(_) | Incoming::OtherRole => None,
        }
    }
}

impl<P> From<ToAgent<P>> for Incoming<P> {
    fn from(m: ToAgent<P>) -> Self {
        Incoming::ToAgent(m)
    }
}

impl<P> From<ToApp<P>> for Incoming<P> {
    fn from(m: ToApp<P>) -> Self {
        Incoming::ToApp(m)
    }
}

impl<P> From<Control> for Incoming<P> {
    fn from(m: Control) -> Self {
        Incoming::Control(m)
    }
}

/// What an agent reads: the app's messages. `payload` fields hold the whole wire payload for the glue to read
/// what it needs.
#[derive(Clone, Debug)]
pub enum ToAgent<P> {
    /// The app introduces itself (Tesseron's `tesseron/hello`), in a dialect where the app speaks first.
    Hello {
        id: String,
        payload: P,
    },
    /// The answer to our `initialize`: a session, or the app's refusal in `error`.
    InitializeResult {
        id: String,
        session_id: Option<String>,
        error: Option<AbpError<P>>,
        payload: P,
    },
    CallResult {
        id: Option<String>,
        call_id: Option<String>,
        cancelled: bool,
        payload: P,
    },
    CancelResult {
        id: Option<String>,
        call_id: Option<String>,
        verdict: CancelVerdict,
        payload: P,
    },
    Progress {
        call_id: Option<String>,
        token: Option<String>,
        payload: P,
    },
    Notification {
        event: String,
        payload: P,
    },
    CapabilitiesChanged {
        payload: P,
    },
    /// The app asks the agent something while a call runs.
    ElicitationRequest {
        id: String,
        call_id: Option<String>,
        payload: P,
    },
    /// The app no longer wants an answer to its request `id` (the JSON-RPC dialects' cancel, sent when the
    /// call that asked ends).
    ElicitationWithdrawn {
        id: String,
    },
    /// The answer to our [`FromAgent::ListCapabilities`]: the descriptors, as an array.
    CapabilityList {
        id: String,
        capabilities: P,
    },
    /// The app's page says it has started listening (ABP's `app/ready`, MCP-B's `'mcp-server-ready'`): an
    /// agent still connecting sends `initialize` again at once.
    AppReady,
    Control(Control),
}

/// What an app reads: the agent's messages.
#[derive(Clone, Debug)]
pub enum ToApp<P> {
    Initialize {
        id: String,
        payload: P,
    },
    /// The agent's answer to our hello ([`FromApp::Hello`]): a session, or its refusal in `error`.
    Welcome {
        id: String,
        session_id: Option<String>,
        error: Option<AbpError<P>>,
    },
    Call {
        id: String,
        call_id: String,
        capability: String,
        params: P,
        timeout: Option<f64>,
        progress_token: Option<String>,
        /// The caller's trace context (`_meta`'s `traceparent` and `tracestate`), when it gave a valid one.
        trace: Option<Trace>,
        /// `Some`: the request says itself what its agent enabled, and runs without a session (MCP's
        /// stateless era); `None`: the session's features apply.
        features: Option<Features>,
    },
    Cancel {
        id: Option<String>,
        call_id: String,
        reason: Option<String>,
    },
    ElicitationResponse {
        id: String,
        payload: P,
    },
    /// The agent asks for the capability list (MCP `tools/list`).
    ListCapabilities {
        id: String,
    },
    /// A call or a cancel whose payload is unusable; answered with INVALID_PARAMS when it has an id.
    Malformed {
        kind: MalformedKind,
        id: Option<String>,
        call_id: Option<String>,
        reason: &'static str,
    },
    Control(Control),
}

/// What either side reads: the messages about the connection itself.
#[derive(Clone, Debug)]
pub enum Control {
    /// `ping` (JSON-RPC dialects): answered with [`ControlOut::Pong`].
    Ping { id: String },
    /// The answer to our [`ControlOut::Ping`].
    Pong { id: String },
    /// `session_id`: sent by an app that is unloading, so an agent can tell which session ended even when
    /// the browser no longer says which window sent it.
    Shutdown {
        id: Option<String>,
        reason: Option<String>,
        session_id: Option<String>,
    },
    /// A well-formed message that asks for nothing (MCP `notifications/initialized`).
    Noted,
    /// A JSON-RPC request the dialect cannot take: answered with this error when it has an id.
    Invalid {
        id: Option<String>,
        code: i32,
        message: &'static str,
    },
    /// A known message that cannot be used and needs no answer (an `initialize-result` without an id).
    Malformed { reason: &'static str },
    /// The agent asks who the app is and what it speaks (MCP `server/discover`): answered with
    /// [`ControlOut::Describe`], which the codec writes from the app's info.
    Describe { id: String },
}

impl Control {
    /// What either side answers: a ping with a pong, an invalid request with its error.
    pub fn reply(self) -> Option<ControlOut> {
        match self {
            Control::Ping { id } => Some(ControlOut::Pong { id }),
            Control::Describe { id } => Some(ControlOut::Describe { id }),
            Control::Invalid { id, code, message } => Some(ControlOut::RpcError {
                id,
                code,
                message: message.to_owned(),
            }),
            Control::Pong { .. }
            | Control::Shutdown { .. }
            | Control::Noted
            | Control::Malformed { .. } => None,
        }
    }
}

/// What a cancel-result says about its call: `cancelled: true`, or why not (the cancel table's reasons, or an
/// error instead of an answer). `E` is the error an app sends; as received, only that there was one matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelVerdict<E = ()> {
    /// The app stopped the call, now or earlier.
    Cancelled,
    /// The call finished first; its result is, or was, on its way.
    AlreadyCompleted,
    /// The app never saw the call.
    NotFound,
    /// The app refused the cancel (not initialized, malformed).
    Refused(E),
}

/// Which request [`ToApp::Malformed`] was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MalformedKind {
    Call,
    Cancel,
}

/// How a call ended, from the app's side.
#[derive(Clone, Debug)]
pub enum Outcome<P> {
    Success { data: P },
    Failure(AbpError<P>),
    Cancelled { reason: Option<String> },
}

/// What the agent answers to an elicitation request.
#[derive(Clone, Debug)]
pub enum ElicitAnswer<P> {
    /// The handler's `ElicitationResponse`, passed through.
    Answer(P),
    /// The call that asked was cancelled or settled first.
    Cancelled,
    /// No handler, or the handler failed.
    Failed(AbpError<P>),
}

/// A message an agent sends, to encode.
#[derive(Clone, Debug)]
pub enum FromAgent<P> {
    Initialize {
        id: String,
    },
    /// The answer to the app's [`ToAgent::Hello`]: the session it opens.
    Welcome {
        id: String,
        session_id: String,
    },
    /// The handshake is complete (MCP `notifications/initialized`; nothing in ABP).
    Initialized,
    Call {
        id: String,
        call_id: String,
        capability: String,
        params: P,
        timeout: Option<f64>,
        progress_token: Option<String>,
        trace: Option<Trace>,
        transfer: Option<P>,
    },
    Cancel {
        id: String,
        call_id: String,
        reason: Option<String>,
    },
    ElicitationResponse {
        id: String,
        answer: ElicitAnswer<P>,
    },
    ListCapabilities {
        id: String,
    },
    Control(ControlOut),
}

/// A message an app sends, to encode.
#[derive(Clone, Debug)]
pub enum FromApp<P> {
    /// The app introduces itself, in a dialect where the app speaks first (Tesseron).
    Hello {
        id: String,
    },
    InitializeResult {
        id: String,
        session_id: String,
        /// What was agreed: the features the agent enabled.
        features: Features,
    },
    InitializeError {
        id: String,
        error: AbpError<P>,
    },
    CallResult {
        id: String,
        call_id: String,
        outcome: Outcome<P>,
        duration: f64,
        transfer: Option<P>,
    },
    CancelResult {
        id: Option<String>,
        call_id: String,
        verdict: CancelVerdict<AbpError<P>>,
    },
    /// `call_id`: `None` for progress of an operation that is not a call (`window.abp.notifyProgress`).
    Progress {
        call_id: Option<String>,
        token: String,
        info: P,
    },
    Notification {
        event: String,
        data: P,
    },
    CapabilitiesChanged {
        changes: Changes,
    },
    ElicitationRequest {
        id: String,
        call_id: Option<String>,
        request: P,
    },
    /// The answer to the elicitation request `id` is no longer wanted (the JSON-RPC dialects' cancel).
    WithdrawElicitation {
        id: String,
        reason: Option<String>,
    },
    /// The app's capability list, answering [`ToApp::ListCapabilities`].
    CapabilityList {
        id: String,
    },
    Control(ControlOut),
}

/// A message either side sends about the connection itself.
#[derive(Clone, Debug)]
pub enum ControlOut {
    Ping {
        id: String,
    },
    Pong {
        id: String,
    },
    Shutdown {
        id: String,
        reason: Option<String>,
        session_id: Option<String>,
    },
    /// A JSON-RPC error response (`id: None`: the request's id could not be read).
    RpcError {
        id: Option<String>,
        code: i32,
        message: String,
    },
    /// The answer to [`Control::Describe`].
    Describe {
        id: String,
    },
}

impl<P> From<ControlOut> for FromAgent<P> {
    fn from(m: ControlOut) -> Self {
        FromAgent::Control(m)
    }
}

impl<P> From<ControlOut> for FromApp<P> {
    fn from(m: ControlOut) -> Self {
        FromApp::Control(m)
    }
}

/// What the agent enabled in `initialize.features` (absent fields count as enabled), and which elicitation
/// methods it allows (`agentCapabilities.allowedRequests`; `None`: any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    pub notifications: bool,
    pub progress: bool,
    pub elicitation: bool,
    pub allowed_requests: Option<Vec<String>>,
    /// An elicitation is answered by the agent retrying the call (MCP's stateless era: the call's response
    /// asks for the input, and the retry brings it), not by a message of its own. A call whose elicitation
    /// nobody answers is then cancelled after [`AppConfig::retry_wait`](super::app::AppConfig::retry_wait).
    pub answer_by_retry: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            notifications: true,
            progress: true,
            elicitation: true,
            allowed_requests: None,
            answer_by_retry: false,
        }
    }
}

impl Features {
    /// Reads `features` and `agentCapabilities.allowedRequests` from an `initialize` payload.
    pub fn from_initialize<P: Payload>(payload: &P) -> Features {
        let f = payload.get_object("features");
        let on = |key: &str| {
            f.as_ref()
                .and_then(|f| f.get(key))
                .and_then(|v| v.as_bool())
                != Some(false)
        };
        let allowed = payload
            .get_object("agentCapabilities")
            .and_then(|a| a.get("allowedRequests"))
            .filter(|a| a.kind() == Kind::Array)
            .map(|a| {
                (0..a.array_len().unwrap_or(0))
                    .filter_map(|i| a.index(i)?.as_string())
                    .collect()
            });
        Features {
            notifications: on("notifications"),
            progress: on("progress"),
            elicitation: on("elicitation"),
            allowed_requests: allowed,
            answer_by_retry: false,
        }
    }

    pub(crate) fn allows(&self, method: &str) -> bool {
        self.elicitation
            && self
                .allowed_requests
                .as_ref()
                .is_none_or(|a| a.iter().any(|m| m == method))
    }
}

/// What a handler's return value means. A ready-made `ABPResponse` (an object whose keys are only among
/// `success` (a boolean, required), `data`, `error`, `metadata`, `cancelled`), as the ABP docs' app examples
/// return, is taken as the response; anything else is the result's `data`. `aborted`: the call's signal had
/// aborted, so the call counts as cancelled whatever the handler returned.
pub fn outcome_of_return<P: Wire>(value: P, aborted: bool) -> Outcome<P> {
    if aborted {
        return Outcome::Cancelled { reason: None };
    }
    let success = match value.get("success").and_then(|s| s.as_bool()) {
        Some(s) if value.kind() == Kind::Object => s,
        _ => return Outcome::Success { data: value },
    };
    const RESPONSE_KEYS: [&str; 5] = ["success", "data", "error", "metadata", "cancelled"];
    if !value
        .keys()
        .iter()
        .all(|k| RESPONSE_KEYS.contains(&k.as_str()))
    {
        return Outcome::Success { data: value };
    }
    let error = value.get_object("error").map(|e| decode_error(&e));
    if value.get("cancelled").and_then(|c| c.as_bool()) == Some(true) {
        return Outcome::Cancelled {
            reason: error.map(|e| e.message).filter(|m| !m.is_empty()),
        };
    }
    if success {
        return Outcome::Success {
            data: value.get("data").unwrap_or_else(P::undefined),
        };
    }
    Outcome::Failure(error.unwrap_or_else(|| {
        AbpError::new(
            ErrorCode::OperationFailed,
            "The handler reported failure without an error",
        )
    }))
}

/// What a value a handler threw means: a cancellation if the signal had aborted or it is an `AbortError`;
/// the ABP error it describes if it has a string `code` (with `retryable`, `details`, `retryAfter` and
/// `alternatives` kept); else OPERATION_FAILED with its `message` (or `describe()` of it).
pub fn outcome_of_throw<P: Wire>(
    thrown: &P,
    aborted: bool,
    describe: impl FnOnce() -> String,
) -> Outcome<P> {
    if aborted || thrown.get_string("name").as_deref() == Some("AbortError") {
        return Outcome::Cancelled {
            reason: thrown.get_string("message"),
        };
    }
    if thrown.get_string("code").is_some() {
        return Outcome::Failure(decode_error(thrown));
    }
    let message = thrown.get_string("message").unwrap_or_else(describe);
    Outcome::Failure(AbpError::new(ErrorCode::OperationFailed, message))
}
