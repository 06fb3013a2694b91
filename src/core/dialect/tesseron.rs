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

use super::super::codec::{encode_error, Hello, Ignored, Wire};
use super::super::error::{AbpError, ErrorCode};
use super::super::map::StrMap;
use super::super::message::{text, ElicitAnswer, Incoming, Outcome, Outgoing};
use super::super::schema::Kind;
use super::jsonrpc::{
    abp_error_of, elicitation_answer, key_of, notification, rpc, Frame, Peer, Sent,
};

pub const PROTOCOL_VERSION: &str = "1.2.0";

/// Tesseron's error codes.
pub mod code {
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

impl<P: Wire> TesseronCodec<P> {
    pub fn new(gateway: bool) -> TesseronCodec<P> {
        TesseronCodec {
            peer: Peer::default(),
            gateway,
            percent: StrMap::new(),
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
            Frame::Invalid(i) => Ok(i),
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
                Incoming::Initialize { id, payload }
            }
            // The app asks the gateway something during an invocation (elicitation, sampling).
            _ => {
                let payload = P::object_of(&mut [
                    ("method", Some(P::string(method))),
                    ("params", Some(params.clone())),
                ]);
                Incoming::ElicitationRequest {
                    id,
                    call_id: params.get("invocationId").as_ref().and_then(key_of),
                    payload,
                }
            }
        }
    }

    fn notification(&mut self, method: String, params: P) -> Result<Incoming<P>, Ignored> {
        if !self.gateway && method == "actions/cancel" {
            let Some(call_id) = params.get("invocationId").as_ref().and_then(key_of) else {
                return Err(Ignored::NotAMessage);
            };
            return Ok(Incoming::Cancel {
                id: None,
                call_id,
                reason: None,
            });
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
            return Ok(Incoming::Progress {
                call_id: Some(call_id),
                token: None,
                payload: info,
            });
        }
        let payload =
            P::object_of(&mut [("event", Some(P::string(&method))), ("data", Some(params))]);
        Ok(Incoming::Notification {
            event: method,
            payload,
        })
    }

    fn response(
        &mut self,
        id: String,
        sent: Sent,
        result: Option<P>,
        error: Option<P>,
    ) -> Incoming<P> {
        match sent {
            Sent::Initialize => {
                // The gateway's welcome to our hello.
                let session_id = result
                    .as_ref()
                    .and_then(|r| r.get_string("sessionId"))
                    .filter(|_| error.is_none());
                let error = error.map(|e| error_of(&e)).or_else(|| {
                    session_id.is_none().then(|| {
                        AbpError::new(ErrorCode::OperationFailed, "The welcome had no sessionId")
                    })
                });
                Incoming::InitializeResult {
                    id,
                    session_id,
                    error,
                    payload: result.unwrap_or_else(P::object),
                }
            }
            Sent::Elicit => Incoming::ElicitationResponse {
                id,
                payload: elicitation_answer(result, error.map(|e| error_of(&e))),
            },
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
                Incoming::CallResult {
                    id: Some(id.clone()),
                    call_id: Some(id),
                    cancelled,
                    payload,
                }
            }
            // Any answer to a probe shows the app is there.
            Sent::Ping => Incoming::Pong { id },
            _ => Incoming::Noted,
        }
    }

    fn app_request(&mut self, id: String, method: &str, params: P) -> Incoming<P> {
        if method != "actions/invoke" {
            return Incoming::Invalid {
                id: Some(id),
                code: rpc::METHOD_NOT_FOUND,
                message: "Method not found",
            };
        }
        let (Some(name), Some(call_id)) = (
            params.get_string("name"),
            params
                .get("invocationId")
                .filter(|i| i.kind() == Kind::String)
                .as_ref()
                .and_then(key_of),
        ) else {
            return Incoming::Invalid {
                id: Some(id),
                code: rpc::INVALID_PARAMS,
                message:
                    "Invalid actions/invoke params: name and invocationId are required strings",
            };
        };
        Incoming::Call {
            id,
            call_id: call_id.clone(),
            capability: name,
            params: params.get("input").unwrap_or_else(P::null),
            timeout: None,
            // Progress is always wanted in Tesseron; the invocation names it.
            progress_token: Some(call_id),
        }
    }

    /// App role: the hello, results, progress and questions.
    fn encode_app(&mut self, msg: Outgoing<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            Outgoing::Initialize { id } => {
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
                let params = P::object_of(&mut [
                    ("protocolVersion", Some(P::constant(PROTOCOL_VERSION))),
                    ("app", Some(app)),
                    ("actions", Some(P::array(actions))),
                    ("resources", Some(P::array(Vec::new()))),
                    ("capabilities", Some(capabilities)),
                ]);
                self.peer
                    .request(&id, Sent::Initialize, "tesseron/hello", Some(params))
            }
            Outgoing::CallResult {
                id,
                call_id,
                outcome,
                ..
            } => {
                self.percent.remove(&call_id);
                match outcome {
                    Outcome::Success { data } => {
                        let result = P::object_of(&mut [
                            ("invocationId", Some(P::string(&call_id))),
                            ("output", Some(data)),
                        ]);
                        self.peer.response(&id, result)
                    }
                    Outcome::Cancelled { .. } => {
                        let message = text(&["Invocation ", &call_id, " was cancelled"]);
                        self.peer.error(Some(&id), code::CANCELLED, &message, None)
                    }
                    Outcome::Failure(e) => {
                        let (code, message) = match e.code {
                            ErrorCode::Timeout => (code::TIMEOUT, e.message.clone()),
                            ErrorCode::UnknownCapability => {
                                (code::ACTION_NOT_FOUND, e.message.clone())
                            }
                            ErrorCode::InvalidParams => {
                                (code::INPUT_VALIDATION, "Invalid input".to_owned())
                            }
                            ErrorCode::InternalError => {
                                (rpc::INTERNAL_ERROR, "Internal error".to_owned())
                            }
                            _ => (code::HANDLER_ERROR, e.message.clone()),
                        };
                        self.peer
                            .error(Some(&id), code, &message, Some(encode_error(e)))
                    }
                }
            }
            Outgoing::Progress { call_id, info, .. } => {
                let call_id = call_id?;
                let total = info.get_f64("total").filter(|t| *t > 0.0);
                let raw = info.get_f64("percentage").or_else(|| {
                    match (info.get_f64("progress"), total) {
                        (Some(p), Some(t)) => Some(p * 100.0 / t),
                        (p, None) => p,
                        _ => None,
                    }
                });
                // Whole numbers in 0..=100, never going down.
                let percent = raw.map(|p| {
                    let p = p.clamp(0.0, 100.0).round();
                    let best = self.percent.get(&call_id).copied().unwrap_or(0.0).max(p);
                    self.percent.insert(call_id.clone(), best);
                    best
                });
                let message = info
                    .get("status")
                    .or_else(|| info.get("message"))
                    .filter(|m| m.kind() == Kind::String);
                let p = P::object_of(&mut [
                    ("invocationId", Some(P::string(&call_id))),
                    ("percent", percent.map(P::number)),
                    ("message", message),
                    ("data", info.get("data")),
                ]);
                notification("actions/progress", Some(p))
            }
            Outgoing::ElicitationRequest { id, request: r, .. } => {
                let method = r
                    .get_string("method")
                    .unwrap_or_else(|| "elicitation/request".to_owned());
                self.peer
                    .request(&id, Sent::Elicit, &method, r.get("params"))
            }
            Outgoing::Pong { id } => self.peer.response(&id, P::object()),
            Outgoing::RpcError { id, code, message } => {
                self.peer.error(id.as_deref(), code, &message, None)
            }
            _ => return None,
        })
    }

    /// Builds the JSON-RPC message; `None` for what this role does not send.
    pub fn encode(&mut self, msg: Outgoing<P>, hello: &Hello<'_, P>) -> Option<P> {
        if !self.gateway {
            return self.encode_app(msg, hello);
        }
        Some(match msg {
            Outgoing::InitializeResult { id, session_id, .. } => {
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
                let welcome = P::object_of(&mut [
                    ("sessionId", Some(P::string(&session_id))),
                    ("protocolVersion", Some(P::constant(PROTOCOL_VERSION))),
                    ("capabilities", Some(capabilities)),
                    ("agent", Some(agent)),
                ]);
                self.peer.response(&id, welcome)
            }
            Outgoing::Call {
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
            Outgoing::Cancel { call_id, .. } => {
                // Not forgotten: the app answers the invocation -32001.
                let p = P::object_of(&mut [("invocationId", Some(P::string(&call_id)))]);
                notification("actions/cancel", Some(p))
            }
            Outgoing::ElicitationResponse { id, answer } => match answer {
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
            Outgoing::Ping { id } => self.peer.request(&id, Sent::Ping, "$/ping", None),
            Outgoing::Pong { id } => self.peer.response(&id, P::object()),
            Outgoing::RpcError { id, code, message } => {
                self.peer.error(id.as_deref(), code, &message, None)
            }
            // The gateway answers the hello; it never sends an initialize of its own, nor the app's messages.
            _ => return None,
        })
    }
}
