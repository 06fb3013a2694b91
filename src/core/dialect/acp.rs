//! The ACP dialect: JSON-RPC 2.0 with the Agent Client Protocol's per-request cancellation, as
//! `@agentclientprotocol/sdk` 2.x and the `agent-client-protocol` crate implement the stabilised RFD.
//!
//! - A call is a request whose method is the capability's name; its params are the call's params.
//! - Abort sends the notification `$/cancel_request { requestId }` (the proposal's `$/cancelRequest { id }` is
//!   accepted on receipt) and keeps waiting: the answer is error -32800 "Request cancelled" (→ `cancelled`,
//!   CANCELLED) or the normal result if the request had finished; `cancelGrace` is the fallback.
//! - The app aborts the handler and answers -32800 unless the handler had finished; requests the handler
//!   made (`ctx.elicit`) are cancelled with it (cascade). `initialize` is never cancellable.
//! - Requests the app sends the agent (an elicitation, with the request's own method) are answered by the
//!   agent's `onElicitation`.
//! - An ABP error of an app of this SDK travels as the JSON-RPC error's `data`, so another ABP-aware side gets
//!   its code back.

use super::super::dialect::{Hello, Ignored};
use super::super::error::encode_error;
use super::super::error::{AbpError, ErrorCode};
use super::super::message::{
    Control, ElicitAnswer, FromAgent, FromApp, Incoming, Outcome, ToAgent, ToApp,
};
use super::super::payload::Kind;
use super::super::payload::Wire;
use super::super::trace::Trace;
use super::jsonrpc::{
    abp_error_of, cancel_of, elicitation_answer, key_of, notification, rpc, Frame, Peer, Sent,
};
use super::Policy;

/// ACP's protocol version (a number).
pub const PROTOCOL_VERSION: f64 = 1.0;

/// The notification that cancels a request, and the proposal's spelling (accepted on receipt).
pub const CANCEL_REQUEST: &str = "$/cancel_request";
pub const CANCEL_REQUEST_PROPOSAL: &str = "$/cancelRequest";

pub struct AcpCodec<P> {
    peer: Peer<P>,
    /// This side is the agent (the caller): requests that arrive are the app's questions (elicitations).
    agent: bool,
}

/// ACP answers a cancelled request itself (-32800, or its result if it had finished), but not the cancel.
pub const POLICY: Policy = Policy {
    cancel_answered: false,
    cancelled_call_answered: true,
    resend_initialize: true,
    list_capabilities: false,
    abp_version_check: false,
    cancel_nested: true,
    app_speaks_first: false,
    app_timeouts: false,
    abp_envelope: false,
    min_progress_interval: 0,
    stateless_requests: false,
    max_total_timeout: 0,
};

jsonrpc_dialect_codec!(AcpCodec, |agent| AcpCodec::new(agent));

impl<P: Wire> AcpCodec<P> {
    pub fn new(agent: bool) -> AcpCodec<P> {
        AcpCodec {
            peer: Peer::default(),
            agent,
        }
    }

    pub fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
        match self.peer.read(msg)? {
            Frame::Request { id, method, params } => Ok(self.request(id, method, params)),
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

    fn request(&mut self, id: String, method: String, params: P) -> Incoming<P> {
        if method == "initialize" {
            return ToApp::Initialize {
                id,
                payload: P::object_of(&mut [("acp", Some(params))]),
            }
            .into();
        }
        if method.starts_with("$/") {
            return Control::Invalid {
                id: Some(id),
                code: rpc::METHOD_NOT_FOUND,
                message: "Method not found",
            }
            .into();
        }
        if self.agent {
            // The app asks the agent something: an elicitation, answered by `onElicitation`.
            let payload = P::object_of(&mut [
                ("method", Some(P::string(&method))),
                ("params", Some(params)),
            ]);
            return ToAgent::ElicitationRequest {
                id,
                call_id: None,
                payload,
            }
            .into();
        }
        ToApp::Call {
            call_id: id.clone(),
            id,
            capability: method,
            trace: super::trace_from_meta(params.get_object("_meta").as_ref()),
            params,
            timeout: None,
            progress_token: None,
            features: None,
        }
        .into()
    }

    fn notification(&mut self, method: String, params: P) -> Result<Incoming<P>, Ignored> {
        let target = match method.as_str() {
            CANCEL_REQUEST => params.get("requestId"),
            CANCEL_REQUEST_PROPOSAL => params.get("id"),
            _ => {
                let payload = P::object_of(&mut [
                    ("event", Some(P::string(&method))),
                    ("data", Some(params)),
                ]);
                return Ok(ToAgent::Notification {
                    event: method,
                    payload,
                }
                .into());
            }
        };
        let Some(call_id) = target.as_ref().and_then(key_of) else {
            return Err(Ignored::NotAMessage);
        };
        Ok(cancel_of(self.agent, call_id, params.get_string("reason")))
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
                let mut payload = P::object();
                payload.set("capabilities", P::array(Vec::new()));
                if let Some(r) = result {
                    if let Some(info) = r.get_object("agentInfo") {
                        payload.set("app", info);
                    }
                    payload.set("acp", r);
                }
                let mut session = String::from("acp-");
                session.push_str(&id);
                ToAgent::InitializeResult {
                    error: error.map(|e| abp_error_of(&e)),
                    session_id: Some(session),
                    id,
                    payload,
                }
                .into()
            }
            Sent::Call => {
                let cancelled = error
                    .as_ref()
                    .and_then(|e| e.get_f64("code"))
                    .is_some_and(|c| c == f64::from(rpc::REQUEST_CANCELLED));
                let payload = match (error, result) {
                    (Some(e), _) => {
                        let error = abp_error_of(&e);
                        P::object_of(&mut [
                            ("success", Some(P::boolean(false))),
                            ("cancelled", cancelled.then(|| P::boolean(true))),
                            ("error", Some(encode_error(error))),
                            ("callId", Some(P::string(&id))),
                        ])
                    }
                    (None, r) => P::object_of(&mut [
                        ("success", Some(P::boolean(true))),
                        ("data", Some(r.unwrap_or_else(P::null))),
                        ("callId", Some(P::string(&id))),
                    ]),
                };
                ToAgent::CallResult {
                    id: Some(id.clone()),
                    call_id: Some(id),
                    cancelled,
                    payload,
                }
                .into()
            }
            Sent::Elicit => ToApp::ElicitationResponse {
                id,
                payload: elicitation_answer(result, error.map(|e| abp_error_of(&e))),
            }
            .into(),
            // Any answer to a probe (even "method not found") shows the peer is there.
            Sent::Ping => Control::Pong { id }.into(),
            Sent::List | Sent::Discover | Sent::Listen => Control::Noted.into(),
        }
    }

    /// Builds the client's JSON-RPC message; `None` for what ACP does not send (capability lists, ABP's
    /// shutdown).
    pub fn encode_agent(&mut self, msg: FromAgent<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            FromAgent::Initialize { id } => {
                let params = initialize_params(hello);
                self.peer
                    .request(&id, Sent::Initialize, "initialize", Some(params))
            }
            FromAgent::Call {
                id,
                capability,
                params,
                trace,
                ..
            } => {
                let params =
                    (!matches!(params.kind(), Kind::Undefined | Kind::Null)).then_some(params);
                let params = match trace {
                    Some(trace) => traced(params, &trace),
                    None => params,
                };
                self.peer.request(&id, Sent::Call, &capability, params)
            }
            FromAgent::Cancel { call_id, .. } => cancel_request(&call_id),
            FromAgent::ElicitationResponse { id, answer } => self.elicitation_response(&id, answer),
            FromAgent::Control(m) => return self.peer.control(m, "$/ping"),
            FromAgent::Welcome { .. }
            | FromAgent::Initialized
            | FromAgent::ListCapabilities { .. } => return None,
        })
    }

    /// Builds the server's JSON-RPC message; `None` for what ACP does not send (a cancel's answer, standard
    /// progress, capability lists, ABP's shutdown).
    pub fn encode_app(&mut self, msg: FromApp<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            FromApp::InitializeResult { id, .. } => {
                let result = initialize_result(hello);
                self.peer.response(&id, result)
            }
            FromApp::InitializeError { id, error } => {
                let data = encode_error(error.clone());
                self.peer
                    .error(Some(&id), rpc::INVALID_REQUEST, &error.message, Some(data))
            }
            FromApp::CallResult { id, outcome, .. } => self.call_result(&id, outcome),
            FromApp::ElicitationRequest { id, request: r, .. } => {
                let method = r
                    .get_string("method")
                    .unwrap_or_else(|| "elicitation/input".to_owned());
                let params = r.get("params");
                self.peer.request(&id, Sent::Elicit, &method, params)
            }
            FromApp::WithdrawElicitation { id, .. } => cancel_request(&id),
            FromApp::Notification { event, data } => {
                let params = (!matches!(data.kind(), Kind::Undefined)).then_some(data);
                notification(&event, params)
            }
            FromApp::Control(m) => return self.peer.control(m, "$/ping"),
            FromApp::Hello { .. }
            | FromApp::CancelResult { .. }
            | FromApp::Progress { .. }
            | FromApp::CapabilityList { .. }
            | FromApp::CapabilitiesChanged { .. } => return None,
        })
    }

    /// The response to a call: its result (`null` for none), -32800 for a cancelled call, or an error whose
    /// `data` is the ABP error.
    fn call_result(&mut self, id: &str, outcome: Outcome<P>) -> P {
        match outcome {
            Outcome::Success { data } => {
                let data = if matches!(data.kind(), Kind::Undefined) {
                    P::null()
                } else {
                    data
                };
                self.peer.response(id, data)
            }
            Outcome::Cancelled { .. } => {
                self.peer
                    .error(Some(id), rpc::REQUEST_CANCELLED, "Request cancelled", None)
            }
            Outcome::Failure(e) => {
                let code = match e.code {
                    ErrorCode::UnknownCapability => rpc::METHOD_NOT_FOUND,
                    ErrorCode::InvalidParams => rpc::INVALID_PARAMS,
                    _ => rpc::INTERNAL_ERROR,
                };
                let message = e.message.clone();
                self.peer
                    .error(Some(id), code, &message, Some(encode_error(e)))
            }
        }
    }

    /// The agent's answer to the app's request: a successful answer's `data` as the result, else an error
    /// (a refusal or failure carries the ABP error as `data`).
    fn elicitation_response(&mut self, id: &str, answer: ElicitAnswer<P>) -> P {
        match answer {
            ElicitAnswer::Answer(r) if r.get("success").and_then(|s| s.as_bool()) == Some(true) => {
                let data = r.get("data").unwrap_or_else(P::null);
                self.peer.response(id, data)
            }
            ElicitAnswer::Answer(r) => {
                let error = r
                    .get_object("error")
                    .map(|e| super::super::error::decode_error(&e))
                    .unwrap_or_else(|| AbpError::new(ErrorCode::OperationFailed, "Declined"));
                let message = error.message.clone();
                self.peer.error(
                    Some(id),
                    rpc::INTERNAL_ERROR,
                    &message,
                    Some(encode_error(error)),
                )
            }
            ElicitAnswer::Cancelled => {
                self.peer
                    .error(Some(id), rpc::REQUEST_CANCELLED, "Request cancelled", None)
            }
            ElicitAnswer::Failed(e) => {
                let message = e.message.clone();
                self.peer.error(
                    Some(id),
                    rpc::METHOD_NOT_FOUND,
                    &message,
                    Some(encode_error(e)),
                )
            }
        }
    }
}

/// The agent's `initialize` params: ACP's protocol version and who the agent is.
fn initialize_params<P: Wire>(hello: &Hello<'_, P>) -> P {
    P::object_of(&mut [
        ("protocolVersion", Some(P::number(PROTOCOL_VERSION))),
        ("clientCapabilities", Some(P::object())),
        ("clientInfo", Some(hello.info.clone())),
    ])
}

/// The app's `initialize` result: ACP's protocol version, no authentication, and who the app is.
fn initialize_result<P: Wire>(hello: &Hello<'_, P>) -> P {
    P::object_of(&mut [
        ("protocolVersion", Some(P::number(PROTOCOL_VERSION))),
        ("agentCapabilities", Some(P::object())),
        ("authMethods", Some(P::array(Vec::new()))),
        ("agentInfo", Some(hello.info.clone())),
    ])
}

/// `$/cancel_request` for one of our requests. It is not forgotten: ACP answers a cancelled request (-32800,
/// or its result).
fn cancel_request<P: Wire>(request_id: &str) -> P {
    let p = P::object_of(&mut [("requestId", Some(P::string(request_id)))]);
    notification(CANCEL_REQUEST, Some(p))
}

/// A request's params with `trace` in their `_meta` (copies: the caller's objects stay as they were); params
/// that are not an object have no place for it.
fn traced<P: Wire>(params: Option<P>, trace: &Trace) -> Option<P> {
    let mut p = match params {
        None => P::object(),
        Some(p) if p.kind() == Kind::Object => p.shallow_copy(),
        other => return other,
    };
    let mut meta = p
        .get_object("_meta")
        .map_or_else(P::object, |m| m.shallow_copy());
    super::set_trace_meta(&mut meta, trace);
    p.set("_meta", meta);
    Some(p)
}
