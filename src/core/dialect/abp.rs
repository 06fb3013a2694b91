//! ABP itself: the envelope `{ type, id?, timestamp, payload }`, read and written once over [`Wire`] (the
//! browser's payloads are `JsValue`s, native peers' and tests' `serde_json::Value`s), and the rules the other
//! dialects differ from.
//!
//! Decoding reads only control fields; the rest of a payload is handed on untouched.

use super::super::capability;
use super::super::capability::PROTOCOL_VERSION;
use super::super::error::{decode_error, encode_error, AbpError};
use super::super::message::{
    CancelVerdict, Control, ControlOut, ElicitAnswer, Features, FromAgent, FromApp, Incoming,
    MalformedKind, Outcome, ToAgent, ToApp, REASON_NOT_FOUND,
};
use super::super::payload::{CallFields, Kind, Payload, Timestamp, Wire};
use super::{DialectCodec, Hello, Ignored, Policy};

pub const POLICY: Policy = Policy {
    cancel_answered: true,
    cancelled_call_answered: true,
    resend_initialize: true,
    list_capabilities: false,
    abp_version_check: true,
    cancel_nested: false,
    app_speaks_first: false,
    app_timeouts: false,
    abp_envelope: true,
    min_progress_interval: 0,
    stateless_requests: false,
    max_total_timeout: 0,
};

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
    /// Posted by an app in a frame to its parent when it starts listening (`{ type, timestamp, payload: {} }`):
    /// an agent whose `initialize` went out before the page listened sends it again at once, instead of at its
    /// next re-send.
    pub const APP_READY: &str = "app/ready";
    /// Sent as a `notification` event (and accepted as a message type) when the app's capabilities change.
    pub const CAPABILITIES_CHANGED: &str = "notifications/capabilities/list_changed";
}

/// ABP keeps no state per connection: every message is read and written on its own.
pub struct AbpCodec;

impl<P: Wire> DialectCodec<P> for AbpCodec {
    fn new(_agent: bool) -> Self {
        AbpCodec
    }

    fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
        decode(msg)
    }

    fn encode_agent(
        &mut self,
        msg: FromAgent<P>,
        clock: Timestamp<'_>,
        hello: &Hello<'_, P>,
    ) -> Option<(P, Option<P>)> {
        encode_agent(msg, clock, hello)
    }

    fn encode_app(
        &mut self,
        msg: FromApp<P>,
        clock: Timestamp<'_>,
        hello: &Hello<'_, P>,
    ) -> Option<(P, Option<P>)> {
        encode_app(msg, clock, hello)
    }
}

fn opt_string<P: Payload>(v: &P, key: &str) -> Option<String> {
    v.get_string(key)
}

fn opt_id<P: Payload>(v: &P, key: &str) -> Option<String> {
    v.get_id(key)
}

/// A cancel-result's answer: `cancelled`, else an error, else its reason (anything but "not found" means the
/// call got as far as the app, whose result then settles it).
fn cancel_verdict<P: Payload>(p: &P) -> CancelVerdict {
    if flag(p, "cancelled") {
        CancelVerdict::Cancelled
    } else if p.get("error").is_some() {
        CancelVerdict::Refused(())
    } else if opt_string(p, "reason").as_deref() == Some(REASON_NOT_FOUND) {
        CancelVerdict::NotFound
    } else {
        CancelVerdict::AlreadyCompleted
    }
}

fn flag<P: Payload>(v: &P, key: &str) -> bool {
    v.get(key).and_then(|x| x.as_bool()).unwrap_or(false)
}

fn opt_number<P: Payload>(v: &P, key: &str) -> Option<f64> {
    v.get_f64(key).filter(|n| n.is_finite())
}

/// Reads one received value. Never fails on bad input: unusable values come back as `Err(Ignored)`, and
/// known requests with unusable payloads as [`ToApp::Malformed`] so the app can answer them.
pub fn decode<P: Wire>(msg: &P) -> Result<Incoming<P>, Ignored> {
    if msg.kind() != Kind::Object {
        return Err(Ignored::NotAMessage);
    }
    let Some(ty) = opt_string(msg, "type") else {
        return Err(Ignored::NotAMessage);
    };
    let id = opt_id(msg, "id");
    let payload = msg.get_object("payload");
    let has_payload = payload.is_some();
    let p = payload.unwrap_or_else(P::object);
    Ok(match ty.as_str() {
        types::INITIALIZE if APP => match id {
            Some(id) => ToApp::Initialize { id, payload: p }.into(),
            None => unusable("initialize needs an id"),
        },
        types::INITIALIZE_RESULT if AGENT => read_initialize_result(id, p),
        types::CALL if APP => read_call(id, p, has_payload).into(),
        types::CALL_RESULT if AGENT => ToAgent::CallResult {
            id,
            call_id: opt_string(&p, "callId"),
            cancelled: flag(&p, "cancelled"),
            payload: p,
        }
        .into(),
        types::CANCEL if APP => read_cancel(id, p).into(),
        types::CANCEL_RESULT if AGENT => ToAgent::CancelResult {
            id,
            call_id: opt_string(&p, "callId"),
            verdict: cancel_verdict(&p),
            payload: p,
        }
        .into(),
        types::PROGRESS if AGENT => ToAgent::Progress {
            call_id: opt_string(&p, "callId"),
            token: opt_string(&p, "operationId"),
            payload: p,
        }
        .into(),
        types::NOTIFICATION if AGENT => read_notification(p),
        types::APP_READY if AGENT => ToAgent::AppReady.into(),
        types::CAPABILITIES_CHANGED if AGENT => ToAgent::CapabilitiesChanged { payload: p }.into(),
        types::ELICITATION_REQUEST if AGENT => read_elicitation_request(id, p),
        types::ELICITATION_RESPONSE if APP => match id {
            Some(id) => ToApp::ElicitationResponse { id, payload: p }.into(),
            None => unusable("elicitation/response needs an id"),
        },
        types::SHUTDOWN => Control::Shutdown {
            id,
            reason: opt_string(&p, "reason"),
            session_id: opt_string(&p, "sessionId"),
        }
        .into(),
        // A role build's other role's messages (the guards above): left unread and given to neither side, as the
        // full build gives a side the other's messages; their readers compile away.
        types::INITIALIZE
        | types::INITIALIZE_RESULT
        | types::CALL
        | types::CALL_RESULT
        | types::CANCEL
        | types::CANCEL_RESULT
        | types::PROGRESS
        | types::NOTIFICATION
        | types::CAPABILITIES_CHANGED
        | types::ELICITATION_REQUEST
        | types::ELICITATION_RESPONSE
        | types::APP_READY => Incoming::OtherRole,
        _ => return Err(Ignored::UnknownType),
    })
}

/// A known request that cannot be served as it is: `id` is the message's (`None` when it had none).
fn malformed<P>(
    kind: MalformedKind,
    id: Option<String>,
    call_id: Option<String>,
    reason: &'static str,
) -> ToApp<P> {
    ToApp::Malformed {
        kind,
        id,
        call_id,
        reason,
    }
}

/// A known message that cannot be used and asks for no answer.
fn unusable<P>(reason: &'static str) -> Incoming<P> {
    Control::Malformed { reason }.into()
}

/// `initialize-result`: the session, or the app's refusal in `error`.
fn read_initialize_result<P: Wire>(id: Option<String>, p: P) -> Incoming<P> {
    let Some(id) = id else {
        return unusable("initialize-result needs an id");
    };
    let error = p.get_object("error").map(|e| decode_error(&e));
    ToAgent::InitializeResult {
        id,
        session_id: opt_string(&p, "sessionId"),
        error,
        payload: p,
    }
    .into()
}

/// `capabilities/call`; `has_payload`: the message had a payload object (`p` is an empty one otherwise).
fn read_call<P: Wire>(id: Option<String>, p: P, has_payload: bool) -> ToApp<P> {
    // callId is in the payload; older senders put it in options.
    let options = p.get_object("options");
    let call_id =
        opt_id(&p, "callId").or_else(|| options.as_ref().and_then(|o| opt_id(o, "callId")));
    match (id, call_id, opt_string(&p, "capability")) {
        (Some(id), Some(call_id), Some(capability)) => ToApp::Call {
            id,
            call_id,
            capability,
            params: p.get("params").unwrap_or_else(P::undefined),
            timeout: options.as_ref().and_then(|o| opt_number(o, "timeout")),
            progress_token: options
                .as_ref()
                .and_then(|o| opt_string(o, "progressToken")),
            trace: super::trace_from_meta(p.get_object("_meta").as_ref()),
            features: None,
        },
        (id, call_id, _) => {
            let reason = if !has_payload {
                "capabilities/call needs a payload object"
            } else if call_id.is_none() {
                "capabilities/call needs a string callId"
            } else {
                "capabilities/call needs an id and a string capability"
            };
            malformed(MalformedKind::Call, id, call_id, reason)
        }
    }
}

fn read_cancel<P: Wire>(id: Option<String>, p: P) -> ToApp<P> {
    match opt_id(&p, "callId") {
        Some(call_id) => ToApp::Cancel {
            id,
            call_id,
            reason: opt_id(&p, "reason"),
        },
        None => malformed(
            MalformedKind::Cancel,
            id,
            None,
            "capabilities/cancel needs a string callId",
        ),
    }
}

/// A `notification`; the event `notifications/capabilities/list_changed` is read as a capability change.
fn read_notification<P: Wire>(p: P) -> Incoming<P> {
    match opt_string(&p, "event") {
        Some(event) if event == types::CAPABILITIES_CHANGED => ToAgent::CapabilitiesChanged {
            payload: p.get("data").unwrap_or_else(P::object),
        }
        .into(),
        Some(event) => ToAgent::Notification { event, payload: p }.into(),
        None => unusable("notification needs an event"),
    }
}

fn read_elicitation_request<P: Wire>(id: Option<String>, p: P) -> Incoming<P> {
    match id {
        Some(id) => ToAgent::ElicitationRequest {
            id,
            call_id: opt_string(&p, "callId"),
            payload: p,
        }
        .into(),
        None => unusable("elicitation/request needs an id"),
    }
}

/// Which roles this build has, for [`decode`]: the full build (and native peers) both.
const AGENT: bool = cfg!(feature = "agent");
const APP: bool = cfg!(feature = "app");

/// `{ type: 'app/ready', timestamp, payload: {} }`, which an app in a frame posts to its parent when it starts
/// listening ([`types::APP_READY`]). It says nothing but that: it may go to any origin.
pub fn app_ready<P: Wire>(timestamp: f64) -> P {
    envelope(types::APP_READY, None, timestamp, P::object())
}

/// A message whose payload its sender wrote (the page's `window.abp.initialize(params)`, its answer to a question),
/// in ABP's envelope.
pub fn request<P: Wire>(ty: &'static str, id: &str, timestamp: f64, payload: P) -> P {
    envelope(ty, Some(id), timestamp, payload)
}

fn envelope<P: Wire>(ty: &'static str, id: Option<&str>, timestamp: f64, payload: P) -> P {
    P::object_of(&mut [
        ("type", Some(P::constant(ty))),
        ("id", id.map(P::string)),
        ("timestamp", Some(P::number(timestamp))),
        ("payload", Some(payload)),
    ])
}

/// `{ type: 'capabilities/call', id, timestamp, payload: { callId, capability, params, options? } }`, with
/// `options` (`{ timeout?, progressToken? }`) only when there is something in it: every property costs in the
/// structured clone. Built in one step where the payload type can ([`Wire::call_message`]).
pub fn call_message<P: Wire>(call: &CallFields<'_>, timestamp: Timestamp<'_>, params: P) -> P {
    let params = match P::call_message(call, timestamp, params) {
        Ok(built) => return built,
        Err(params) => params,
    };
    let options = (call.timeout.is_some() || call.progress_token.is_some()).then(|| {
        P::object_of(&mut [
            ("timeout", call.timeout.map(P::number)),
            ("progressToken", call.progress_token.map(P::string)),
        ])
    });
    let meta = call.trace.map(|t| {
        let mut meta = P::object();
        super::set_trace_meta(&mut meta, t);
        meta
    });
    let p = P::object_of(&mut [
        ("callId", Some(P::string(call.call_id))),
        ("capability", Some(P::string(call.capability))),
        ("params", Some(params)),
        ("options", options),
        ("_meta", meta),
    ]);
    envelope(types::CALL, Some(call.id), timestamp(), p)
}

/// The result of a call that succeeded: `{ type: 'capabilities/call-result', id, timestamp, payload:
/// { success: true, data, metadata: { duration }, callId } }`, built in one step where the payload type can
/// ([`Wire::success_message`]).
pub fn success_message<P: Wire>(
    id: &str,
    timestamp: Timestamp<'_>,
    call_id: &str,
    data: P,
    duration: f64,
) -> P {
    let data = match P::success_message(id, timestamp, call_id, data, duration) {
        Ok(built) => return built,
        Err(data) => data,
    };
    let meta = P::object_of(&mut [("duration", Some(P::number(duration)))]);
    let p = P::object_of(&mut [
        ("success", Some(P::boolean(true))),
        ("data", Some(data)),
        ("metadata", Some(meta)),
        ("callId", Some(P::string(call_id))),
    ]);
    envelope(types::CALL_RESULT, Some(id), timestamp(), p)
}

/// `features` of `initialize` (all on) or of `initialize-result` (what was agreed, plus
/// `dynamicCapabilities`).
fn features<P: Wire>(agreed: Option<&Features>) -> P {
    let mut f = P::object();
    let all = Features::default();
    let on = agreed.unwrap_or(&all);
    f.set("notifications", P::boolean(on.notifications));
    f.set("progress", P::boolean(on.progress));
    f.set("elicitation", P::boolean(on.elicitation));
    if agreed.is_some() {
        f.set("dynamicCapabilities", P::boolean(true));
    }
    f
}

fn capabilities<P: Wire>(hello: &Hello<'_, P>) -> P {
    hello
        .capabilities
        .map(|f| f())
        .unwrap_or_else(|| P::array(Vec::new()))
}

fn cancelled_response<P: Wire>(reason: Option<&str>) -> P {
    P::object_of(&mut [
        ("success", Some(P::boolean(false))),
        ("cancelled", Some(P::boolean(true))),
        (
            "error",
            Some(encode_error(AbpError::<P>::cancelled(reason))),
        ),
    ])
}

/// Builds an agent's wire message, with the transfer list a call carries; `None` for the messages ABP does
/// not have (the JSON-RPC dialects' `initialized`, `tools/list`, the app's hello answered).
pub fn encode_agent<P: Wire>(
    msg: FromAgent<P>,
    clock: Timestamp<'_>,
    hello: &Hello<'_, P>,
) -> Option<(P, Option<P>)> {
    let m = match msg {
        // The only agent message with a transfer list.
        FromAgent::Call {
            id,
            call_id,
            capability,
            params,
            timeout,
            progress_token,
            trace,
            transfer,
        } => {
            let call = CallFields {
                id: &id,
                call_id: &call_id,
                capability: &capability,
                timeout,
                progress_token: progress_token.as_deref(),
                trace: trace.as_ref(),
            };
            return Some((call_message(&call, clock, params), transfer));
        }
        FromAgent::Initialize { id } => initialize_message(&id, clock, hello),
        FromAgent::Cancel {
            id,
            call_id,
            reason,
        } => cancel_message(&id, &call_id, reason.as_deref(), clock),
        FromAgent::ElicitationResponse { id, answer } => {
            elicitation_response_message(&id, answer, clock)
        }
        FromAgent::Control(m) => encode_control(m, clock)?,
        FromAgent::Welcome { .. } | FromAgent::Initialized | FromAgent::ListCapabilities { .. } => {
            return None
        }
    };
    Some((m, None))
}

/// Builds an app's wire message, with the transfer list a call's result carries; `None` for the messages ABP
/// does not have (the JSON-RPC dialects' hello, capability list, withdrawn requests).
pub fn encode_app<P: Wire>(
    msg: FromApp<P>,
    clock: Timestamp<'_>,
    hello: &Hello<'_, P>,
) -> Option<(P, Option<P>)> {
    let m = match msg {
        // The only app message with a transfer list.
        FromApp::CallResult {
            id,
            call_id,
            outcome,
            duration,
            transfer,
        } => {
            let m = call_result_message(&id, &call_id, outcome, duration, clock);
            return Some((m, transfer));
        }
        FromApp::InitializeResult {
            id,
            session_id,
            features: agreed,
        } => initialize_result_message(&id, &session_id, &agreed, clock, hello),
        FromApp::InitializeError { id, error } => initialize_error_message(&id, error, clock),
        FromApp::CancelResult {
            id,
            call_id,
            verdict,
        } => cancel_result_message(id.as_deref(), &call_id, verdict, clock),
        FromApp::Progress {
            call_id,
            token,
            info,
        } => progress_message(call_id.as_deref(), &token, &info, clock),
        FromApp::Notification { event, data } => notification_message(&event, data, clock),
        FromApp::CapabilitiesChanged { changes } => changes_message(&changes, clock, hello),
        FromApp::ElicitationRequest {
            id,
            call_id,
            request,
        } => elicitation_request_message(&id, call_id.as_deref(), &request, clock),
        FromApp::Control(m) => encode_control(m, clock)?,
        FromApp::Hello { .. }
        | FromApp::WithdrawElicitation { .. }
        | FromApp::CapabilityList { .. } => return None,
    };
    Some((m, None))
}

/// Either side's `shutdown`; ABP has no ping or error message of its own.
fn encode_control<P: Wire>(msg: ControlOut, clock: Timestamp<'_>) -> Option<P> {
    match msg {
        ControlOut::Shutdown {
            id,
            reason,
            session_id,
        } => Some(shutdown_message(
            &id,
            reason.as_deref(),
            session_id.as_deref(),
            clock,
        )),
        ControlOut::Ping { .. }
        | ControlOut::Pong { .. }
        | ControlOut::RpcError { .. }
        | ControlOut::Describe { .. } => None,
    }
}

/// `initialize`: who the agent is, the protocol version, and every feature on.
fn initialize_message<P: Wire>(id: &str, clock: Timestamp<'_>, hello: &Hello<'_, P>) -> P {
    let mut p = P::object();
    p.set("agent", hello.info.clone());
    p.set("protocolVersion", P::string(PROTOCOL_VERSION));
    p.set("features", features(None));
    envelope(types::INITIALIZE, Some(id), clock(), p)
}

/// `initialize-result` accepting the agent: the session, who the app is, its capabilities and the features
/// agreed.
fn initialize_result_message<P: Wire>(
    id: &str,
    session_id: &str,
    agreed: &Features,
    clock: Timestamp<'_>,
    hello: &Hello<'_, P>,
) -> P {
    let mut p = P::object();
    p.set("sessionId", P::string(session_id));
    p.set("protocolVersion", P::string(PROTOCOL_VERSION));
    p.set("app", hello.info.clone());
    p.set("capabilities", capabilities(hello));
    p.set("features", features(Some(agreed)));
    envelope(types::INITIALIZE_RESULT, Some(id), clock(), p)
}

/// `initialize-result` refusing the agent: `{ error }`.
fn initialize_error_message<P: Wire>(id: &str, error: AbpError<P>, clock: Timestamp<'_>) -> P {
    let mut p = P::object();
    p.set("error", encode_error(error));
    envelope(types::INITIALIZE_RESULT, Some(id), clock(), p)
}

/// `capabilities/call-result`: an `ABPResponse` with `metadata: { duration }` and `callId` (a success is built
/// by [`success_message`]).
fn call_result_message<P: Wire>(
    id: &str,
    call_id: &str,
    outcome: Outcome<P>,
    duration: f64,
    clock: Timestamp<'_>,
) -> P {
    let meta = || P::object_of(&mut [("duration", Some(P::number(duration)))]);
    let p = match outcome {
        Outcome::Success { data } => return success_message(id, clock, call_id, data, duration),
        Outcome::Failure(e) => P::object_of(&mut [
            ("success", Some(P::boolean(false))),
            ("error", Some(encode_error(e))),
            ("metadata", Some(meta())),
            ("callId", Some(P::string(call_id))),
        ]),
        Outcome::Cancelled { reason } => {
            let mut p: P = cancelled_response(reason.as_deref());
            p.set("metadata", meta());
            p.set("callId", P::string(call_id));
            p
        }
    };
    envelope(types::CALL_RESULT, Some(id), clock(), p)
}

pub fn cancel_message<P: Wire>(
    id: &str,
    call_id: &str,
    reason: Option<&str>,
    clock: Timestamp<'_>,
) -> P {
    let p = P::object_of(&mut [
        ("callId", Some(P::string(call_id))),
        ("reason", reason.map(P::string)),
    ]);
    envelope(types::CANCEL, Some(id), clock(), p)
}

/// `capabilities/cancel-result`: `cancelled`, else the reason or the error.
fn cancel_result_message<P: Wire>(
    id: Option<&str>,
    call_id: &str,
    verdict: CancelVerdict<AbpError<P>>,
    clock: Timestamp<'_>,
) -> P {
    let cancelled = matches!(verdict, CancelVerdict::Cancelled);
    let (reason, error) = match verdict {
        CancelVerdict::Cancelled => (None, None),
        CancelVerdict::AlreadyCompleted => (Some(super::super::message::REASON_COMPLETED), None),
        CancelVerdict::NotFound => (Some(REASON_NOT_FOUND), None),
        CancelVerdict::Refused(e) => (None, Some(e)),
    };
    let p = P::object_of(&mut [
        ("callId", Some(P::string(call_id))),
        ("cancelled", Some(P::boolean(cancelled))),
        ("reason", reason.map(P::string)),
        ("error", error.map(encode_error)),
    ]);
    envelope(types::CANCEL_RESULT, id, clock(), p)
}

/// `progress`: a copy of the handler's report with `operationId` (and `callId` for a call's progress).
fn progress_message<P: Wire>(
    call_id: Option<&str>,
    token: &str,
    info: &P,
    clock: Timestamp<'_>,
) -> P {
    let mut p = info.shallow_copy();
    p.set("operationId", P::string(token));
    if let Some(call_id) = call_id {
        p.set("callId", P::string(call_id));
    }
    envelope(types::PROGRESS, None, clock(), p)
}

fn notification_message<P: Wire>(event: &str, data: P, clock: Timestamp<'_>) -> P {
    let mut p = P::object();
    p.set("event", P::string(event));
    if data.kind() != Kind::Undefined {
        p.set("data", data);
    }
    envelope(types::NOTIFICATION, None, clock(), p)
}

/// The capability list changed: the `notification` `notifications/capabilities/list_changed` with the changes
/// and the whole list.
fn changes_message<P: Wire>(
    changes: &capability::Changes,
    clock: Timestamp<'_>,
    hello: &Hello<'_, P>,
) -> P {
    let d = capability::changes_data(changes, capabilities(hello));
    let mut p = P::object();
    p.set("event", P::string(types::CAPABILITIES_CHANGED));
    p.set("data", d);
    envelope(types::NOTIFICATION, None, clock(), p)
}

/// `elicitation/request`: a copy of the handler's request with `callId` when it is asked during a call.
fn elicitation_request_message<P: Wire>(
    id: &str,
    call_id: Option<&str>,
    request: &P,
    clock: Timestamp<'_>,
) -> P {
    let mut p = request.shallow_copy();
    if let Some(c) = call_id {
        p.set("callId", P::string(c));
    }
    envelope(types::ELICITATION_REQUEST, Some(id), clock(), p)
}

/// `elicitation/response`: the agent's answer as it is, or a cancelled or failed `ABPResponse`.
fn elicitation_response_message<P: Wire>(
    id: &str,
    answer: ElicitAnswer<P>,
    clock: Timestamp<'_>,
) -> P {
    let p = match answer {
        ElicitAnswer::Answer(p) => p,
        ElicitAnswer::Cancelled => cancelled_response(None),
        ElicitAnswer::Failed(e) => {
            let mut p = P::object();
            p.set("success", P::boolean(false));
            p.set("error", encode_error(e));
            p
        }
    };
    envelope(types::ELICITATION_RESPONSE, Some(id), clock(), p)
}

pub fn shutdown_message<P: Wire>(
    id: &str,
    reason: Option<&str>,
    session_id: Option<&str>,
    clock: Timestamp<'_>,
) -> P {
    let mut p = P::object();
    if let Some(r) = reason {
        p.set("reason", P::string(r));
    }
    if let Some(s) = session_id {
        p.set("sessionId", P::string(s));
    }
    envelope(types::SHUTDOWN, Some(id), clock(), p)
}
