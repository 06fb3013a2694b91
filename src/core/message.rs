//! The ABP messages as the state machines see them.
//!
//! A codec (the JS envelope codec in `web/`, a JSON one in tests) turns wire messages into [`Incoming`] and
//! [`Outgoing`] into wire messages. The state machines read only the control fields (ids, names, flags);
//! everything the user sees (`params`, `data`, progress details, whole responses) stays an opaque `P`.

use super::app::Features;
use super::capability::Changes;
use super::error::AbpError;

/// Wire `type` strings.
pub mod types {
    pub const INITIALIZE: &str = "initialize";
    pub const INITIALIZE_RESULT: &str = "initialize-result";
    pub const CALL: &str = "capabilities/call";
    pub const CALL_RESULT: &str = "capabilities/call-result";
    pub const CANCEL: &str = "capabilities/cancel";
    pub const CANCEL_RESULT: &str = "capabilities/cancel-result";
    pub const PROGRESS: &str = "progress";
    pub const NOTIFICATION: &str = "notification";
    pub const ELICITATION_REQUEST: &str = "elicitation/request";
    pub const ELICITATION_RESPONSE: &str = "elicitation/response";
    pub const SHUTDOWN: &str = "shutdown";
    /// Sent as a `notification` event (and accepted as a message type) when the app's capabilities change.
    pub const CAPABILITIES_CHANGED: &str = "notifications/capabilities/list_changed";
}

pub const PROTOCOL_VERSION: &str = "0.1";

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
}

impl Control {
    /// What either side answers: a ping with a pong, an invalid request with its error.
    pub fn reply(self) -> Option<ControlOut> {
        match self {
            Control::Ping { id } => Some(ControlOut::Pong { id }),
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

/// Makes message ids and session ids. Ids only need to be unique per connection; a random prefix keeps two
/// connections (or a reloaded page) from colliding.
#[derive(Clone, Debug)]
pub struct IdGen {
    prefix: String,
    next: u64,
}

impl IdGen {
    pub fn new(prefix: impl Into<String>) -> Self {
        IdGen {
            prefix: prefix.into(),
            next: 0,
        }
    }

    pub fn next_id(&mut self) -> String {
        self.next += 1;
        let mut s = String::with_capacity(self.prefix.len() + 8);
        s.push_str(&self.prefix);
        push_u64(&mut s, self.next);
        s
    }
}

/// Appends a number without the formatting machinery (keeps the wasm small).
pub fn push_u64(s: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        s.push(b as char);
    }
}

/// Joins pieces of text. Used instead of `format!` so the wasm build carries no formatting machinery.
pub fn text(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

/// Writes a number the way JavaScript would for the values schemas use: integers exactly, other values
/// with up to six decimals. (No float formatting machinery in the wasm build.)
pub fn number(n: f64) -> String {
    let mut s = String::new();
    if !n.is_finite() {
        s.push_str(if n.is_nan() {
            "NaN"
        } else if n > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        });
        return s;
    }
    if n < 0.0 {
        s.push('-');
    }
    let a = n.abs();
    if a >= 1e18 {
        s.push_str("a very large number");
        return s;
    }
    let scaled = (a * 1e6).round() as u64;
    push_u64(&mut s, scaled / 1_000_000);
    let mut frac = scaled % 1_000_000;
    if frac != 0 {
        s.push('.');
        let mut digits = [b'0'; 6];
        for d in digits.iter_mut().rev() {
            *d = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        let end = digits.iter().rposition(|&d| d != b'0').map_or(0, |i| i + 1);
        for &d in &digits[..end] {
            s.push(d as char);
        }
    }
    s
}
