//! The Tesseron dialect (protocol 1.2.0, as the PyPI and crates.io `tesseron` packages speak it), gateway role:
//! `AbpClient` dials the app's WebSocket (subprotocol `tesseron-gateway`), answers the app's `tesseron/hello`
//! (the app speaks first), invokes actions and cancels them.
//!
//! - A call is the request `actions/invoke { name, input, invocationId }` (the call id is the invocation id);
//!   its result is `{ invocationId, output }`.
//! - Abort sends the notification `actions/cancel { invocationId }` and waits for the app's -32001 Cancelled;
//!   the app's own per-action timeout answers -32002 (TIMEOUT). -32003 is an unknown action, -32004 bad input.
//! - `actions/progress { invocationId, percent?, message?, data? }` is the call's progress (`progress` = percent
//!   of `total: 100`).
//! - The hello's actions (with their `timeoutMs`) are the capability list.
//!
//! App role (an `AbpApp` dialing a gateway, as `@tesseron/web` does): says hello with its capabilities as
//! actions (`timeoutMs` from the descriptor), serves `actions/invoke`, answers -32001 for a cancelled invocation
//! and -32002 when its own per-action timeout passes (the state machine keeps it), -32003 for an unknown
//! action, -32004 for bad input, -32005 for a handler's error, -32603 for anything else; progress is
//! `actions/progress` with `percent` monotonic (and at most about two a second: the app's progress interval).

use super::super::dialect::{Hello, Ignored};
use super::super::error::encode_error;
use super::super::error::{AbpError, ErrorCode};
use super::super::map::StrMap;
use super::super::message::{
    Control, ElicitAnswer, FromAgent, FromApp, Incoming, Outcome, ToAgent, ToApp,
};
use super::super::payload::Kind;
use super::super::payload::Wire;
use super::super::text::text;
use super::jsonrpc::{
    abp_error_of, elicitation_answer, key_of, notification, rpc, Frame, Peer, Sent,
};
use super::Policy;

pub const PROTOCOL_VERSION: &str = "1.2.0";

/// One of our elicitations in flight: the ABP method it stands for, and the property of the answer's `value`
/// that holds the ABP answer (`None`: the whole value).
struct Asked {
    method: String,
    unwrap: Option<&'static str>,
}

/// Tesseron's error codes.
pub mod code {
    pub const PROTOCOL_MISMATCH: i32 = -32000;
    pub const CANCELLED: i32 = -32001;
    pub const TIMEOUT: i32 = -32002;
    pub const ACTION_NOT_FOUND: i32 = -32003;
    pub const INPUT_VALIDATION: i32 = -32004;
    pub const HANDLER_ERROR: i32 = -32005;
}

pub struct TesseronCodec<P> {
    peer: Peer<P>,
    /// This side is the gateway (the agent); else the app.
    gateway: bool,
    /// App role: the highest percent sent per invocation (percent never goes down).
    percent: StrMap<f64>,
    /// App role: the session id and one-shot resume token of the latest welcome. The next handshake (after
    /// the socket came back) presents them in a `tesseron/resume`, and the welcome to that rotates the token.
    resume: Option<(String, String)>,
    /// App role: the handshake in flight is a resume.
    resuming: bool,
    /// App role: our elicitations in flight, by request id → the ABP method each stands for, so the
    /// gateway's `{ action, value? }` is read as that method's answer.
    asked: StrMap<Asked>,
}

/// An action of the hello as an ABP capability descriptor.
fn descriptor_of_action<P: Wire>(a: &P) -> Option<P> {
    let name = a.get_string("name")?;
    let mut d = a.shallow_copy();
    d.set("name", P::string(&name));
    d.set("available", P::boolean(true));
    d.set("requirements", P::array(Vec::new()));
    d.set("features", P::object());
    Some(d)
}

/// A Tesseron error as an ABP error: its own codes first, then JSON-RPC's.
fn error_of<P: Wire>(e: &P) -> AbpError<P> {
    let mut error = abp_error_of(e);
    let code = e.get_f64("code").map(|c| c as i32);
    let mapped = match code {
        Some(code::CANCELLED) => Some(ErrorCode::Cancelled),
        Some(code::TIMEOUT) => Some(ErrorCode::Timeout),
        Some(code::ACTION_NOT_FOUND) => Some(ErrorCode::UnknownCapability),
        Some(code::INPUT_VALIDATION) => Some(ErrorCode::InvalidParams),
        Some(code::HANDLER_ERROR) => Some(ErrorCode::OperationFailed),
        _ => None,
    };
    if let Some(c) = mapped {
        error.retryable = c.retryable();
        error.code = c;
    }
    error
}

/// Tesseron: the app says hello first; a cancelled invocation is answered -32001; the app owns the action
/// timeout (-32002).
pub const POLICY: Policy = Policy {
    cancel_answered: false,
    cancelled_call_answered: true,
    resend_initialize: false,
    list_capabilities: false,
    abp_version_check: false,
    cancel_nested: false,
    app_speaks_first: true,
    app_timeouts: true,
    abp_envelope: false,
    min_progress_interval: 500,
    stateless_requests: false,
    max_total_timeout: 0,
};

jsonrpc_dialect_codec!(TesseronCodec, |agent| TesseronCodec::new(agent));

impl<P: Wire> TesseronCodec<P> {
    pub fn new(gateway: bool) -> TesseronCodec<P> {
        TesseronCodec {
            peer: Peer::default(),
            gateway,
            percent: StrMap::new(),
            resume: None,
            resuming: false,
            asked: StrMap::new(),
        }
    }

    pub fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
        match self.peer.read(msg)? {
            Frame::Request { id, method, params } => Ok(self.request(id, &method, params)),
            Frame::Notification { method, params } => self.notification(method, params),
            Frame::Response {
                id,
                sent,
                result,
                error,
            } => Ok(self.response(id, sent, result, error)),
            Frame::Invalid(i) => Ok(i.into()),
        }
    }

    fn request(&mut self, id: String, method: &str, params: P) -> Incoming<P> {
        if !self.gateway {
            return self.app_request(id, method, params);
        }
        match method {
            "tesseron/hello" | "tesseron/resume" => {
                let actions = params.get("actions");
                let list = actions
                    .map(|a| {
                        (0..a.array_len().unwrap_or(0))
                            .filter_map(|i| a.index(i))
                            .filter_map(|a| descriptor_of_action(&a))
                            .collect()
                    })
                    .unwrap_or_default();
                let payload = P::object_of(&mut [
                    ("app", params.get_object("app")),
                    ("protocolVersion", params.get("protocolVersion")),
                    ("capabilities", Some(P::array(list))),
                    ("tesseron", Some(params)),
                ]);
                ToAgent::Hello { id, payload }.into()
            }
            // The app asks the gateway something during an invocation (elicitation, sampling).
            _ => {
                let payload = P::object_of(&mut [
                    ("method", Some(P::string(method))),
                    ("params", Some(params.clone())),
                ]);
                ToAgent::ElicitationRequest {
                    id,
                    call_id: params.get("invocationId").as_ref().and_then(key_of),
                    payload,
                }
                .into()
            }
        }
    }

    fn notification(&mut self, method: String, params: P) -> Result<Incoming<P>, Ignored> {
        if !self.gateway && method == "actions/cancel" {
            let Some(call_id) = params.get("invocationId").as_ref().and_then(key_of) else {
                return Err(Ignored::NotAMessage);
            };
            return Ok(ToApp::Cancel {
                id: None,
                call_id,
                reason: None,
            }
            .into());
        }
        if method == "actions/progress" {
            let Some(call_id) = params.get("invocationId").as_ref().and_then(key_of) else {
                return Err(Ignored::NotAMessage);
            };
            let mut info = params.shallow_copy();
            if let Some(percent) = params.get("percent").filter(|p| p.kind() == Kind::Number) {
                info.set("progress", percent.clone());
                info.set("percentage", percent);
                info.set("total", P::number(100.0));
            }
            if let Some(m) = params.get("message") {
                info.set("status", m);
            }
            info.set("callId", P::string(&call_id));
            return Ok(ToAgent::Progress {
                call_id: Some(call_id),
                token: None,
                payload: info,
            }
            .into());
        }
        let payload =
            P::object_of(&mut [("event", Some(P::string(&method))), ("data", Some(params))]);
        Ok(ToAgent::Notification {
            event: method,
            payload,
        }
        .into())
    }

    fn response(
        &mut self,
        id: String,
        sent: Sent,
        result: Option<P>,
        error: Option<P>,
    ) -> Incoming<P> {
        match sent {
            Sent::Initialize => self.welcome(id, result, error),
            Sent::Elicit => {
                let error = error.map(|e| error_of(&e));
                let payload = match self.asked.remove(&id) {
                    Some(asked) if error.is_none() => answer_of(&asked, result),
                    _ => elicitation_answer(result, error),
                };
                ToApp::ElicitationResponse { id, payload }.into()
            }
            Sent::Call => {
                let (cancelled, payload) = match (error, result) {
                    (Some(e), _) => {
                        let error = error_of(&e);
                        // Cancelled by us, or ended by the app's own timeout: the call was stopped.
                        let stopped =
                            matches!(error.code, ErrorCode::Cancelled | ErrorCode::Timeout);
                        let p = P::object_of(&mut [
                            ("success", Some(P::boolean(false))),
                            ("cancelled", stopped.then(|| P::boolean(true))),
                            ("error", Some(encode_error(error))),
                            ("callId", Some(P::string(&id))),
                        ]);
                        (stopped, p)
                    }
                    (None, r) => {
                        let output = r.and_then(|r| r.get("output")).unwrap_or_else(P::null);
                        let p = P::object_of(&mut [
                            ("success", Some(P::boolean(true))),
                            ("data", Some(output)),
                            ("callId", Some(P::string(&id))),
                        ]);
                        (false, p)
                    }
                };
                ToAgent::CallResult {
                    id: Some(id.clone()),
                    call_id: Some(id),
                    cancelled,
                    payload,
                }
                .into()
            }
            // Any answer to a probe shows the app is there.
            Sent::Ping => Control::Pong { id }.into(),
            _ => Control::Noted.into(),
        }
    }

    /// App role: the gateway's welcome to our hello or resume. A welcome keeps its resume token for the next
    /// handshake (replacing the used one: tokens are one-shot). A refused resume forgets the credentials and
    /// reads as SESSION_EXPIRED, on which the state machine says hello afresh; any other refusal (a protocol
    /// mismatch) ends the connection.
    fn welcome(&mut self, id: String, result: Option<P>, error: Option<P>) -> Incoming<P> {
        let resumed = core::mem::take(&mut self.resuming);
        let session_id = result
            .as_ref()
            .and_then(|r| r.get_string("sessionId"))
            .filter(|_| error.is_none());
        let error = match (error, &session_id) {
            (Some(e), _) => {
                let mut error = error_of(&e);
                let mismatch = e.get_f64("code").map(|c| c as i32) == Some(code::PROTOCOL_MISMATCH);
                if resumed && !mismatch {
                    self.resume = None;
                    error.code = ErrorCode::SessionExpired;
                    error.retryable = true;
                } else if error.code == ErrorCode::SessionExpired {
                    // Only a refused resume leads to a fresh hello; a hello refused with that code would loop.
                    error.code = ErrorCode::OperationFailed;
                }
                Some(error)
            }
            (None, None) => Some(AbpError::new(
                ErrorCode::OperationFailed,
                "The welcome had no sessionId",
            )),
            (None, Some(_)) if !result.as_ref().is_some_and(same_major) => Some(AbpError::new(
                ErrorCode::NotSupported,
                "The gateway speaks another major version of the Tesseron protocol",
            )),
            (None, Some(session)) => {
                self.resume = result
                    .as_ref()
                    .and_then(|r| r.get_string("resumeToken"))
                    .map(|token| (session.clone(), token));
                None
            }
        };
        ToApp::Welcome {
            id,
            session_id,
            error,
        }
        .into()
    }

    fn app_request(&mut self, id: String, method: &str, params: P) -> Incoming<P> {
        if method != "actions/invoke" {
            return Control::Invalid {
                id: Some(id),
                code: rpc::METHOD_NOT_FOUND,
                message: "Method not found",
            }
            .into();
        }
        let (Some(name), Some(call_id)) = (
            params.get_string("name"),
            params
                .get("invocationId")
                .filter(|i| i.kind() == Kind::String)
                .as_ref()
                .and_then(key_of),
        ) else {
            return Control::Invalid {
                id: Some(id),
                code: rpc::INVALID_PARAMS,
                message:
                    "Invalid actions/invoke params: name and invocationId are required strings",
            }
            .into();
        };
        ToApp::Call {
            id,
            call_id: call_id.clone(),
            capability: name,
            params: params.get("input").unwrap_or_else(P::null),
            timeout: None,
            // Progress is always wanted in Tesseron; the invocation names it.
            progress_token: Some(call_id),
            // An invocation has no `_meta`: no trace context travels in Tesseron.
            trace: None,
            features: None,
        }
        .into()
    }

    /// App role: the hello, results, progress and questions; `None` for what Tesseron's app does not send
    /// (ABP's handshake answers and capability messages, a generic notification, a withdrawn question).
    pub fn encode_app(&mut self, msg: FromApp<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            FromApp::Hello { id } => self.say_hello(&id, hello),
            FromApp::CallResult {
                id,
                call_id,
                outcome,
                ..
            } => self.call_result(&id, &call_id, outcome),
            FromApp::Progress { call_id, info, .. } => self.progress(&call_id?, &info),
            FromApp::ElicitationRequest {
                id,
                call_id,
                request: r,
            } => self.elicitation_request(&id, call_id.as_deref(), &r),
            FromApp::Control(m) => return self.peer.control(m, "$/ping"),
            FromApp::InitializeResult { .. }
            | FromApp::InitializeError { .. }
            | FromApp::CancelResult { .. }
            | FromApp::Notification { .. }
            | FromApp::CapabilitiesChanged { .. }
            | FromApp::WithdrawElicitation { .. }
            | FromApp::CapabilityList { .. } => return None,
        })
    }

    /// App role: `tesseron/hello`, or after a reconnect `tesseron/resume` with the stored credentials (the
    /// gateway keeps the session, its claim included).
    fn say_hello(&mut self, id: &str, hello: &Hello<'_, P>) -> P {
        let mut params = hello_params(hello);
        let method = match &self.resume {
            Some((session_id, token)) => {
                params.set("sessionId", P::string(session_id));
                params.set("resumeToken", P::string(token));
                "tesseron/resume"
            }
            None => "tesseron/hello",
        };
        self.resuming = self.resume.is_some();
        self.peer
            .request(id, Sent::Initialize, method, Some(params))
    }

    /// App role: the response to `actions/invoke`: `{ invocationId, output }`, or the error with Tesseron's
    /// code (the ABP error as `data`).
    fn call_result(&mut self, id: &str, call_id: &str, outcome: Outcome<P>) -> P {
        self.percent.remove(call_id);
        match outcome {
            Outcome::Success { data } => {
                let result = P::object_of(&mut [
                    ("invocationId", Some(P::string(call_id))),
                    ("output", Some(data)),
                ]);
                self.peer.response(id, result)
            }
            Outcome::Cancelled { .. } => {
                let message = text(&["Invocation ", call_id, " was cancelled"]);
                self.peer.error(Some(id), code::CANCELLED, &message, None)
            }
            Outcome::Failure(e) => {
                let (code, message) = match e.code {
                    ErrorCode::Timeout => (code::TIMEOUT, e.message.clone()),
                    ErrorCode::UnknownCapability => (code::ACTION_NOT_FOUND, e.message.clone()),
                    ErrorCode::InvalidParams => {
                        (code::INPUT_VALIDATION, "Invalid input".to_owned())
                    }
                    ErrorCode::InternalError => (rpc::INTERNAL_ERROR, "Internal error".to_owned()),
                    _ => (code::HANDLER_ERROR, e.message.clone()),
                };
                self.peer
                    .error(Some(id), code, &message, Some(encode_error(e)))
            }
        }
    }

    /// App role: `actions/progress` for a call, its `percent` a whole number in 0..=100 that never goes down.
    fn progress(&mut self, call_id: &str, info: &P) -> P {
        let total = info.get_f64("total").filter(|t| *t > 0.0);
        let raw = info
            .get_f64("percentage")
            .or_else(|| match (info.get_f64("progress"), total) {
                (Some(p), Some(t)) => Some(p * 100.0 / t),
                (p, None) => p,
                _ => None,
            });
        let percent = raw.map(|p| {
            let p = p.clamp(0.0, 100.0).round();
            let best = self.percent.get(call_id).copied().unwrap_or(0.0).max(p);
            self.percent.insert(call_id.to_owned(), best);
            best
        });
        let message = info
            .get("status")
            .or_else(|| info.get("message"))
            .filter(|m| m.kind() == Kind::String);
        let p = P::object_of(&mut [
            ("invocationId", Some(P::string(call_id))),
            ("percent", percent.map(P::number)),
            ("message", message),
            ("data", info.get("data")),
        ]);
        notification("actions/progress", Some(p))
    }

    /// App role: an ABP elicitation as Tesseron's `elicitation/request` (remembered, so the answer is read as
    /// that method's), or a Tesseron request of the app's own as it is.
    fn elicitation_request(&mut self, id: &str, call_id: Option<&str>, r: &P) -> P {
        let method = r
            .get_string("method")
            .unwrap_or_else(|| "elicitation/request".to_owned());
        let params = r.get_object("params").unwrap_or_else(P::object);
        match question_of(&method, &params, call_id) {
            Some((question, unwrap)) => {
                self.asked.insert(id.to_owned(), Asked { method, unwrap });
                self.peer
                    .request(id, Sent::Elicit, "elicitation/request", Some(question))
            }
            // Tesseron's own requests (`elicitation/request`, `sampling/request`) pass as they are.
            None => self.peer.request(id, Sent::Elicit, &method, Some(params)),
        }
    }

    /// Gateway role: the welcome, invocations, cancels and answers; `None` for what the gateway does not
    /// send (it answers the hello rather than sending an initialize of its own).
    pub fn encode_agent(&mut self, msg: FromAgent<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            FromAgent::Welcome { id, session_id } => {
                let welcome = welcome_result(&session_id, hello);
                self.peer.response(&id, welcome)
            }
            FromAgent::Call {
                id,
                call_id,
                capability,
                params,
                ..
            } => {
                let input = (!matches!(params.kind(), Kind::Undefined)).then_some(params);
                let p = P::object_of(&mut [
                    ("name", Some(P::string(&capability))),
                    ("input", input),
                    ("invocationId", Some(P::string(&call_id))),
                ]);
                self.peer
                    .request(&id, Sent::Call, "actions/invoke", Some(p))
            }
            FromAgent::Cancel { call_id, .. } => {
                // Not forgotten: the app answers the invocation -32001.
                let p = P::object_of(&mut [("invocationId", Some(P::string(&call_id)))]);
                notification("actions/cancel", Some(p))
            }
            FromAgent::ElicitationResponse { id, answer } => match answer {
                ElicitAnswer::Answer(r)
                    if r.get("success").and_then(|s| s.as_bool()) == Some(true) =>
                {
                    let data = r.get("data").unwrap_or_else(P::null);
                    self.peer.response(&id, data)
                }
                ElicitAnswer::Answer(_) | ElicitAnswer::Failed(_) => {
                    self.peer
                        .error(Some(&id), -32007, "Elicitation not available", None)
                }
                ElicitAnswer::Cancelled => {
                    self.peer
                        .error(Some(&id), code::CANCELLED, "Cancelled", None)
                }
            },
            // No application-level ping in Tesseron: a request the app does not know is answered -32601,
            // which is enough to show it is there.
            FromAgent::Control(m) => return self.peer.control(m, "$/ping"),
            FromAgent::Initialize { .. }
            | FromAgent::Initialized
            | FromAgent::ListCapabilities { .. } => return None,
        })
    }
}

/// Gateway role: the welcome that answers the app's hello: the session, what this gateway supports, and who
/// the agent is.
fn welcome_result<P: Wire>(session_id: &str, hello: &Hello<'_, P>) -> P {
    let capabilities = P::object_of(&mut [
        ("streaming", Some(P::boolean(true))),
        ("subscriptions", Some(P::boolean(false))),
        ("sampling", Some(P::boolean(false))),
        ("elicitation", Some(P::boolean(true))),
    ]);
    let agent = P::object_of(&mut [
        ("id", hello.info.get("name")),
        ("name", hello.info.get("name")),
    ]);
    P::object_of(&mut [
        ("sessionId", Some(P::string(session_id))),
        ("protocolVersion", Some(P::constant(PROTOCOL_VERSION))),
        ("capabilities", Some(capabilities)),
        ("agent", Some(agent)),
    ])
}

/// App role: the manifest a `tesseron/hello` (and a `tesseron/resume`) publishes: the capabilities as actions
/// (`timeoutMs` from the descriptor), no resources.
fn hello_params<P: Wire>(hello: &Hello<'_, P>) -> P {
    let list = hello
        .capabilities
        .map(|f| f())
        .unwrap_or_else(|| P::array(Vec::new()));
    let actions = (0..list.array_len().unwrap_or(0))
        .filter_map(|i| list.index(i))
        .map(|d| {
            P::object_of(&mut [
                ("name", d.get("name")),
                (
                    "description",
                    Some(d.get("description").unwrap_or_else(|| P::string(""))),
                ),
                (
                    "inputSchema",
                    Some(d.get_object("inputSchema").unwrap_or_else(P::object)),
                ),
                ("outputSchema", d.get_object("outputSchema")),
                (
                    "timeoutMs",
                    d.get("timeoutMs").filter(|t| t.kind() == Kind::Number),
                ),
            ])
        })
        .collect();
    let app = P::object_of(&mut [
        ("id", hello.info.get("id")),
        ("name", hello.info.get("name")),
        (
            "origin",
            Some(
                hello
                    .info
                    .get("origin")
                    .unwrap_or_else(|| P::string("null")),
            ),
        ),
        ("description", hello.info.get("description")),
        ("version", hello.info.get("version")),
    ]);
    let capabilities = P::object_of(&mut [
        ("streaming", Some(P::boolean(true))),
        ("subscriptions", Some(P::boolean(false))),
        ("sampling", Some(P::boolean(false))),
        ("elicitation", Some(P::boolean(true))),
    ]);
    P::object_of(&mut [
        ("protocolVersion", Some(P::constant(PROTOCOL_VERSION))),
        ("app", Some(app)),
        ("actions", Some(P::array(actions))),
        ("resources", Some(P::array(Vec::new()))),
        ("capabilities", Some(capabilities)),
    ])
}

/// A welcome in protocol major 1 (or one that does not say).
fn same_major<P: Wire>(welcome: &P) -> bool {
    welcome
        .get_string("protocolVersion")
        .is_none_or(|v| v.split('.').next() == PROTOCOL_VERSION.split('.').next())
}

/// ABP's standard elicitations as Tesseron's `elicitation/request { invocationId, question, schema }` (the
/// schema of an object, as MCP clients render it): `elicitation/confirm { message }` asks with an empty object
/// (a bare yes or no); `elicitation/input` and `elicitation/preference { prompt, schema }` with the schema given
/// when it is an object's, else wrapped as the property `value`; `elicitation/select { prompt, options }` with
/// the property `selected`, an enum of the options' values. Also says which property of the answer is the ABP
/// answer. `None` for any other method.
fn question_of<P: Wire>(
    method: &str,
    params: &P,
    call_id: Option<&str>,
) -> Option<(P, Option<&'static str>)> {
    let text = |key| params.get(key).filter(|m| m.kind() == Kind::String);
    let object = |properties: Option<(&'static str, P)>| {
        let (props, required) = match properties {
            Some((key, schema)) => (
                P::object_of(&mut [(key, Some(schema))]),
                vec![P::constant(key)],
            ),
            None => (P::object(), Vec::new()),
        };
        P::object_of(&mut [
            ("type", Some(P::constant("object"))),
            ("properties", Some(props)),
            ("required", Some(P::array(required))),
        ])
    };
    let (question, schema, unwrap) = match method {
        "elicitation/confirm" => (text("message"), object(None), None),
        "elicitation/input" | "elicitation/preference" => match params.get_object("schema") {
            Some(s) if s.get_string("type").as_deref() == Some("object") => {
                (text("prompt"), s, None)
            }
            s => {
                let s = s.unwrap_or_else(P::object);
                (text("prompt"), object(Some(("value", s))), Some("value"))
            }
        },
        "elicitation/select" => {
            let options = params.get("options");
            let values = (0..options.as_ref().and_then(P::array_len).unwrap_or(0))
                .filter_map(|i| options.as_ref().and_then(|o| o.index(i)))
                .filter_map(|o| o.get("value"))
                .collect();
            let selected = P::object_of(&mut [("enum", Some(P::array(values)))]);
            (
                text("prompt"),
                object(Some(("selected", selected))),
                Some("selected"),
            )
        }
        _ => return None,
    };
    let question = P::object_of(&mut [
        ("invocationId", call_id.map(P::string)),
        (
            "question",
            Some(question.unwrap_or_else(|| P::string(method))),
        ),
        ("schema", Some(schema)),
    ]);
    Some((question, unwrap))
}

/// The gateway's `{ action, value? }` as the answer to an ABP elicitation: accept → the method's result
/// (`{ confirmed: true }`, `{ value }`, `{ selected }`); a declined confirmation is `{ confirmed: false }` (a
/// "no" is an answer); any other decline fails, and a cancel is cancelled.
fn answer_of<P: Wire>(asked: &Asked, result: Option<P>) -> P {
    let result = result.unwrap_or_else(P::object);
    let action = result.get_string("action");
    let one = |key: &'static str, value: P| P::object_of(&mut [(key, Some(value))]);
    let data = match (action.as_deref(), asked.method.as_str()) {
        (Some("accept"), "elicitation/confirm") => Some(one("confirmed", P::boolean(true))),
        (Some("decline"), "elicitation/confirm") => Some(one("confirmed", P::boolean(false))),
        (Some("accept"), method) => {
            let value = result.get("value").unwrap_or_else(P::null);
            let value = match asked.unwrap {
                Some(key) => value.get(key).unwrap_or_else(P::null),
                None => value,
            };
            let key = if method == "elicitation/select" {
                "selected"
            } else {
                "value"
            };
            Some(one(key, value))
        }
        _ => None,
    };
    match (data, action.as_deref()) {
        (Some(data), _) => {
            P::object_of(&mut [("success", Some(P::boolean(true))), ("data", Some(data))])
        }
        (None, Some("cancel")) => {
            elicitation_answer(None, Some(AbpError::cancelled(Some("The user cancelled"))))
        }
        (None, _) => elicitation_answer(
            None,
            Some(AbpError::new(
                ErrorCode::OperationFailed,
                "The user declined",
            )),
        ),
    }
}
