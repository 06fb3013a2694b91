//! The MCP dialect: JSON-RPC 2.0 as the MCP specification and its TypeScript SDK speak it, for both roles.
//!
//! - App (server role): answers `initialize` (echoing the client's `protocolVersion` when supported),
//!   `ping`, `tools/list` (the registry) and `tools/call` (the handlers); `notifications/cancelled` aborts the
//!   handler and nothing is sent for that request. Results become `CallToolResult`s.
//! - Agent (client role): `initialize`, `notifications/initialized`, `tools/list`, `tools/call`; abort sends
//!   `notifications/cancelled` and the call settles at once. A `CallToolResult` becomes an `ABPResponse`.
//!
//! JSON-RPC ids are read as strings for the state machines (numbers in decimal); the original id value is
//! kept for the reply, so a peer that uses numbers gets numbers back. The codec remembers which of its own
//! requests each response answers, and drops responses it did not ask for (late replies after a cancel).

use super::super::dialect::{Hello, Ignored};
use super::super::error::encode_error;
use super::super::error::{AbpError, ErrorCode};
use super::super::map::StrMap;
use super::super::message::{
    Control, ElicitAnswer, FromAgent, FromApp, Incoming, Outcome, ToAgent, ToApp,
};
use super::super::payload::Wire;
use super::super::payload::{Kind, Payload};
use super::jsonrpc::{cancel_of, key_of, notification, rpc, Frame, Peer, Sent};
use super::Policy;

pub use super::jsonrpc::abp_error_of;

/// Protocol versions this SDK speaks, newest first. A client asking for one of them gets it echoed.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

fn failure<P: Wire>(error: AbpError<P>, call_id: &str, data: Option<P>) -> P {
    P::object_of(&mut [
        ("success", Some(P::boolean(false))),
        ("error", Some(encode_error(error))),
        ("data", data),
        ("callId", Some(P::string(call_id))),
    ])
}

/// A `CallToolResult` as an `ABPResponse`: `isError` → OPERATION_FAILED (the result kept in `data`);
/// otherwise `data` is its `structuredContent` when there is one, else the whole result.
fn response_of_tool_result<P: Wire>(result: &P, call_id: &str) -> P {
    if result.get("isError").and_then(|e| e.as_bool()) == Some(true) {
        let message = first_text(result).unwrap_or_else(|| "The tool reported an error".to_owned());
        return failure(
            AbpError::new(ErrorCode::OperationFailed, message),
            call_id,
            Some(result.clone()),
        );
    }
    let data = result
        .get("structuredContent")
        .unwrap_or_else(|| result.clone());
    P::object_of(&mut [
        ("success", Some(P::boolean(true))),
        ("data", Some(data)),
        ("callId", Some(P::string(call_id))),
    ])
}

fn first_text<P: Payload>(result: &P) -> Option<String> {
    let content = result.get("content")?;
    (0..content.array_len().unwrap_or(0))
        .filter_map(|i| content.index(i))
        .find_map(|c| c.get_string("text"))
}

/// A handler's value as a `CallToolResult`: passed through if it already has a `content` array, else
/// `{ content: [{ type: 'text', text: JSON of the value }], structuredContent: value }` (structuredContent
/// only for objects).
fn tool_result_of<P: Wire>(data: P) -> P {
    if data.kind() == Kind::Object && data.get("content").is_some_and(|c| c.kind() == Kind::Array) {
        return data;
    }
    let text = data.json_text();
    let item = P::object_of(&mut [
        ("type", Some(P::constant("text"))),
        ("text", Some(P::string(&text))),
    ]);
    let structured = (data.kind() == Kind::Object).then_some(data);
    P::object_of(&mut [
        ("content", Some(P::array(vec![item]))),
        ("structuredContent", structured),
    ])
}

fn error_result<P: Wire>(message: &str) -> P {
    let item = P::object_of(&mut [
        ("type", Some(P::constant("text"))),
        ("text", Some(P::string(message))),
    ]);
    P::object_of(&mut [
        ("content", Some(P::array(vec![item]))),
        ("isError", Some(P::boolean(true))),
    ])
}

/// A tool as `tools/list` lists it: `inputSchema` defaults to `{ type: 'object' }`, and always says
/// `type: 'object'` (MCP clients reject the whole list otherwise).
fn tool_of<P: Wire>(d: &P) -> P {
    let mut schema = d
        .get_object("inputSchema")
        .map(|s| s.shallow_copy())
        .unwrap_or_else(P::object);
    if schema.get_string("type").as_deref() != Some("object") {
        schema.set("type", P::constant("object"));
    }
    P::object_of(&mut [
        ("name", d.get("name")),
        ("description", d.get("description")),
        ("inputSchema", Some(schema)),
        ("outputSchema", d.get_object("outputSchema")),
    ])
}

/// A listed tool as an ABP capability descriptor (the reference's defaults filled in).
fn descriptor_of_tool<P: Wire>(t: &P) -> Option<P> {
    let name = t.get_string("name")?;
    let mut d = t.shallow_copy();
    d.set("name", P::string(&name));
    d.set("available", P::boolean(true));
    d.set("requirements", P::array(Vec::new()));
    d.set("features", P::object());
    Some(d)
}

pub struct McpCodec<P> {
    /// This side is the client (the agent): a cancel that arrives withdraws one of the server's requests.
    agent: bool,
    peer: Peer<P>,
    /// Progress tokens of running calls as they came (a token may be a number): call key → token.
    tokens: StrMap<P>,
    /// The protocol version the client asked for.
    requested: Option<String>,
    /// Our `elicitation/confirm` requests in flight (by id): their answer is a boolean `confirmed`.
    confirms: StrMap<()>,
}

/// MCP: a cancel is a notification nobody answers, and a cancelled request gets no response; the agent
/// lists the tools itself.
pub const POLICY: Policy = Policy {
    cancel_answered: false,
    cancelled_call_answered: false,
    resend_initialize: true,
    list_capabilities: true,
    abp_version_check: false,
    cancel_nested: true,
    app_speaks_first: false,
    app_timeouts: false,
    abp_envelope: false,
    min_progress_interval: 0,
};

jsonrpc_dialect_codec!(McpCodec, |agent| McpCodec::new(agent));

impl<P: Wire> McpCodec<P> {
    pub fn new(agent: bool) -> McpCodec<P> {
        McpCodec {
            agent,
            peer: Peer::default(),
            tokens: StrMap::new(),
            requested: None,
            confirms: StrMap::new(),
        }
    }

    /// Reads one JSON-RPC message.
    pub fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
        match self.peer.read(msg)? {
            Frame::Request { id, method, params } => Ok(self.request(id, &method, params)),
            Frame::Notification { method, params } => self.notification(&method, params),
            Frame::Response {
                id,
                sent,
                result,
                error,
            } => Ok(self.response(id, sent, result, error)),
            Frame::Invalid(i) => Ok(i.into()),
        }
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
                let result = result.unwrap_or_else(P::object);
                let mut payload = P::object();
                if let Some(info) = result.get_object("serverInfo") {
                    let mut app = info.shallow_copy();
                    if app.get("id").is_none() {
                        if let Some(n) = info.get("name") {
                            app.set("id", n);
                        }
                    }
                    payload.set("app", app);
                }
                if let Some(v) = result.get("protocolVersion") {
                    payload.set("protocolVersion", v);
                }
                payload.set("capabilities", P::array(Vec::new()));
                payload.set("mcp", result);
                let mut session = String::from("mcp-");
                session.push_str(&id);
                ToAgent::InitializeResult {
                    error: error.map(|e| abp_error_of(&e)),
                    session_id: Some(session),
                    id,
                    payload,
                }
                .into()
            }
            Sent::List => {
                let tools = result.and_then(|r| r.get("tools"));
                let list = tools
                    .map(|t| {
                        (0..t.array_len().unwrap_or(0))
                            .filter_map(|i| t.index(i))
                            .filter_map(|t| descriptor_of_tool(&t))
                            .collect()
                    })
                    .unwrap_or_default();
                ToAgent::CapabilityList {
                    id,
                    capabilities: P::array(list),
                }
                .into()
            }
            Sent::Call => {
                let payload = match (error, result) {
                    (Some(e), _) => failure(abp_error_of(&e), &id, None),
                    (None, Some(r)) => response_of_tool_result(&r, &id),
                    (None, None) => failure(
                        AbpError::new(ErrorCode::OperationFailed, "The response had no result"),
                        &id,
                        None,
                    ),
                };
                ToAgent::CallResult {
                    id: Some(id.clone()),
                    call_id: Some(id),
                    cancelled: false,
                    payload,
                }
                .into()
            }
            Sent::Elicit => {
                let payload = match (error, result) {
                    (Some(e), _) => {
                        let mut r = P::object();
                        r.set("success", P::boolean(false));
                        r.set("error", encode_error(abp_error_of(&e)));
                        r
                    }
                    (None, r) => {
                        let confirm = self.confirms.remove(&id).is_some();
                        elicitation_response_of(&r.unwrap_or_else(P::object), confirm)
                    }
                };
                ToApp::ElicitationResponse { id, payload }.into()
            }
            Sent::Ping => Control::Pong { id }.into(),
        }
    }

    fn request(&mut self, id: String, method: &str, params: P) -> Incoming<P> {
        match method {
            "initialize" => {
                self.requested = params.get_string("protocolVersion");
                let elicitation = params
                    .get_object("capabilities")
                    .is_some_and(|c| c.get_object("elicitation").is_some());
                let features = P::object_of(&mut [
                    ("notifications", Some(P::boolean(true))),
                    ("progress", Some(P::boolean(true))),
                    ("elicitation", Some(P::boolean(elicitation))),
                ]);
                let payload = P::object_of(&mut [
                    ("agent", params.get("clientInfo")),
                    ("features", Some(features)),
                ]);
                ToApp::Initialize { id, payload }.into()
            }
            "ping" => Control::Ping { id }.into(),
            "tools/list" => ToApp::ListCapabilities { id }.into(),
            "tools/call" => {
                let Some(name) = params.get_string("name") else {
                    return Control::Invalid {
                        id: Some(id),
                        code: rpc::INVALID_PARAMS,
                        message: "tools/call needs a string name",
                    }
                    .into();
                };
                let arguments = params
                    .get("arguments")
                    .filter(|a| !matches!(a.kind(), Kind::Null | Kind::Undefined))
                    .unwrap_or_else(P::object);
                let token = params
                    .get_object("_meta")
                    .and_then(|m| m.get("progressToken"));
                let progress_token = token.as_ref().and_then(key_of);
                if let (Some(t), Some(_)) = (token, &progress_token) {
                    self.tokens.insert(id.clone(), t);
                }
                ToApp::Call {
                    call_id: id.clone(),
                    id,
                    capability: name,
                    params: arguments,
                    timeout: None,
                    progress_token,
                }
                .into()
            }
            "elicitation/create" => {
                let payload = P::object_of(&mut [
                    ("method", Some(P::constant("elicitation/create"))),
                    ("params", Some(params)),
                ]);
                ToAgent::ElicitationRequest {
                    id,
                    call_id: None,
                    payload,
                }
                .into()
            }
            _ => Control::Invalid {
                id: Some(id),
                code: rpc::METHOD_NOT_FOUND,
                message: "Method not found",
            }
            .into(),
        }
    }

    fn notification(&mut self, method: &str, params: P) -> Result<Incoming<P>, Ignored> {
        Ok(match method {
            "notifications/initialized" => Control::Noted.into(),
            "notifications/cancelled" => {
                let Some(call_id) = params.get("requestId").as_ref().and_then(key_of) else {
                    return Err(Ignored::NotAMessage);
                };
                // No response will be sent for it.
                self.peer.drop_reply(&call_id);
                self.tokens.remove(&call_id);
                cancel_of(self.agent, call_id, params.get_string("reason"))
            }
            "notifications/progress" => {
                let token = params.get("progressToken");
                let Some(key) = token.as_ref().and_then(key_of) else {
                    return Err(Ignored::NotAMessage);
                };
                let mut info = params.shallow_copy();
                if let Some(m) = params.get("message") {
                    info.set("status", m);
                }
                info.set("operationId", P::string(&key));
                ToAgent::Progress {
                    call_id: None,
                    token: Some(key),
                    payload: info,
                }
                .into()
            }
            "notifications/tools/list_changed" => ToAgent::CapabilitiesChanged {
                payload: P::object(),
            }
            .into(),
            _ => {
                let payload =
                    P::object_of(&mut [("event", Some(P::string(method))), ("data", Some(params))]);
                ToAgent::Notification {
                    event: method.to_owned(),
                    payload,
                }
                .into()
            }
        })
    }

    /// Builds the client's JSON-RPC message; `None` for what MCP does not send (ABP's shutdown).
    pub fn encode_agent(&mut self, msg: FromAgent<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            FromAgent::Initialize { id } => {
                let params = initialize_params(hello);
                self.peer
                    .request(&id, Sent::Initialize, "initialize", Some(params))
            }
            FromAgent::Initialized => notification("notifications/initialized", None),
            FromAgent::ListCapabilities { id } => {
                self.peer.request(&id, Sent::List, "tools/list", None)
            }
            FromAgent::Call {
                id,
                capability,
                params,
                progress_token,
                ..
            } => {
                let p = call_params(&capability, params, progress_token.as_deref());
                self.peer.request(&id, Sent::Call, "tools/call", Some(p))
            }
            FromAgent::Cancel {
                call_id, reason, ..
            } => self.cancel(&call_id, reason.as_deref()),
            FromAgent::ElicitationResponse { id, answer } => {
                let result = elicitation_result(answer);
                self.peer.response(&id, result)
            }
            FromAgent::Control(m) => return self.peer.control(m, "ping"),
            // MCP's server speaks second.
            FromAgent::Welcome { .. } => return None,
        })
    }

    /// Builds the server's JSON-RPC message; `None` for what MCP does not send (a cancel's answer, a
    /// cancelled call's response, a generic notification, ABP's shutdown).
    pub fn encode_app(&mut self, msg: FromApp<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            FromApp::InitializeResult { id, .. } => {
                let result = initialize_result(self.requested.as_deref(), hello);
                self.peer.response(&id, result)
            }
            FromApp::InitializeError { id, error } => {
                self.peer
                    .error(Some(&id), rpc::INVALID_REQUEST, &error.message, None)
            }
            FromApp::CapabilityList { id } => {
                let result = tool_list(hello);
                self.peer.response(&id, result)
            }
            FromApp::CallResult {
                id,
                call_id,
                outcome,
                ..
            } => return self.call_result(&id, &call_id, outcome),
            FromApp::Progress {
                call_id,
                token,
                info,
            } => self.progress(call_id.as_deref(), &token, &info),
            FromApp::CapabilitiesChanged { .. } => {
                notification("notifications/tools/list_changed", None)
            }
            FromApp::ElicitationRequest { id, request: r, .. } => self.elicitation_request(&id, &r),
            FromApp::WithdrawElicitation { id, reason } => self.cancel(&id, reason.as_deref()),
            FromApp::Control(m) => return self.peer.control(m, "ping"),
            FromApp::Hello { .. } | FromApp::CancelResult { .. } | FromApp::Notification { .. } => {
                return None
            }
        })
    }

    /// `notifications/cancelled`; whatever answers the call later is dropped.
    fn cancel(&mut self, call_id: &str, reason: Option<&str>) -> P {
        self.peer.forget(call_id);
        let p = P::object_of(&mut [
            ("requestId", Some(P::string(call_id))),
            ("reason", reason.map(P::string)),
        ]);
        notification("notifications/cancelled", Some(p))
    }

    /// A call's outcome as the response to its `tools/call`: a `CallToolResult`, a tool error the model sees,
    /// or a protocol error; `None` for a cancelled call (MCP sends nothing for a cancelled request).
    fn call_result(&mut self, id: &str, call_id: &str, outcome: Outcome<P>) -> Option<P> {
        self.tokens.remove(call_id);
        Some(match outcome {
            Outcome::Success { data } => self.peer.response(id, tool_result_of(data)),
            Outcome::Failure(e) => match e.code {
                // Protocol errors, as the MCP SDK answers them.
                ErrorCode::UnknownCapability | ErrorCode::InvalidParams => {
                    self.peer
                        .error(Some(id), rpc::INVALID_PARAMS, &e.message, None)
                }
                ErrorCode::NotInitialized => {
                    self.peer
                        .error(Some(id), rpc::INVALID_REQUEST, &e.message, None)
                }
                // Tool errors: the model should see them.
                _ => self.peer.response(id, error_result(&e.message)),
            },
            Outcome::Cancelled { .. } => return None,
        })
    }

    /// `notifications/progress` with the progress token the call came with (a number stays a number).
    fn progress(&self, call_id: Option<&str>, token: &str, info: &P) -> P {
        let original = call_id
            .and_then(|c| self.tokens.get(c).cloned())
            .unwrap_or_else(|| P::string(token));
        let message = info
            .get("message")
            .or_else(|| info.get("status"))
            .filter(|m| m.kind() == Kind::String);
        let p = P::object_of(&mut [
            ("progressToken", Some(original)),
            ("progress", info.get("progress")),
            ("total", info.get("total")),
            ("message", message),
        ]);
        notification("notifications/progress", Some(p))
    }

    /// `elicitation/create`, remembering an `elicitation/confirm` so its answer is read as `{ confirmed }`.
    fn elicitation_request(&mut self, id: &str, r: &P) -> P {
        if r.get_string("method").as_deref() == Some("elicitation/confirm") {
            self.confirms.insert(id.to_owned(), ());
        }
        let params = elicitation_params(r);
        self.peer
            .request(id, Sent::Elicit, "elicitation/create", Some(params))
    }
}

/// The client's `initialize` params: the newest protocol version, and elicitation offered.
fn initialize_params<P: Wire>(hello: &Hello<'_, P>) -> P {
    let capabilities = P::object_of(&mut [("elicitation", Some(P::object()))]);
    P::object_of(&mut [
        ("protocolVersion", Some(P::constant(SUPPORTED_VERSIONS[0]))),
        ("capabilities", Some(capabilities)),
        ("clientInfo", Some(hello.info.clone())),
    ])
}

/// `tools/call` params: `arguments` left out when there are none, the progress token in `_meta`.
fn call_params<P: Wire>(capability: &str, params: P, progress_token: Option<&str>) -> P {
    let meta = progress_token.map(|t| P::object_of(&mut [("progressToken", Some(P::string(t)))]));
    let arguments = (!matches!(params.kind(), Kind::Undefined | Kind::Null)).then_some(params);
    P::object_of(&mut [
        ("name", Some(P::string(capability))),
        ("arguments", arguments),
        ("_meta", meta),
    ])
}

/// The server's `initialize` result: the client's protocol version when this SDK speaks it (else the newest),
/// tools that announce list changes, and who the app is.
fn initialize_result<P: Wire>(requested: Option<&str>, hello: &Hello<'_, P>) -> P {
    let version = requested
        .and_then(|r| SUPPORTED_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(SUPPORTED_VERSIONS[0]);
    let tools = P::object_of(&mut [("listChanged", Some(P::boolean(true)))]);
    let capabilities = P::object_of(&mut [("tools", Some(tools))]);
    let server = P::object_of(&mut [
        ("name", hello.info.get("name")),
        ("version", hello.info.get("version")),
    ]);
    P::object_of(&mut [
        ("protocolVersion", Some(P::string(version))),
        ("capabilities", Some(capabilities)),
        ("serverInfo", Some(server)),
    ])
}

/// The `tools/list` result: the app's capabilities as tools.
fn tool_list<P: Wire>(hello: &Hello<'_, P>) -> P {
    let list = hello
        .capabilities
        .map(|f| f())
        .unwrap_or_else(|| P::array(Vec::new()));
    let tools = (0..list.array_len().unwrap_or(0))
        .filter_map(|i| list.index(i))
        .map(|d| tool_of(&d))
        .collect();
    P::object_of(&mut [("tools", Some(P::array(tools)))])
}

fn action<P: Wire>(action: &'static str, content: Option<P>) -> P {
    P::object_of(&mut [("action", Some(P::constant(action))), ("content", content)])
}

/// The agent's answer to an elicitation as MCP's elicitation result (one it could not give is declined).
fn elicitation_result<P: Wire>(answer: ElicitAnswer<P>) -> P {
    match answer {
        ElicitAnswer::Answer(r) => elicitation_result_of(&r),
        ElicitAnswer::Cancelled => action::<P>("cancel", None),
        ElicitAnswer::Failed(_) => action::<P>("decline", None),
    }
}

/// An ABP `ElicitationResponse` as MCP's elicitation result: success → accept (with `data` as content),
/// cancelled → cancel, anything else → decline.
fn elicitation_result_of<P: Wire>(r: &P) -> P {
    if r.get("success").and_then(|s| s.as_bool()) == Some(true) {
        let content = r.get("data").filter(|d| d.kind() == Kind::Object);
        return action("accept", content);
    }
    if r.get("cancelled").and_then(|c| c.as_bool()) == Some(true) {
        return action("cancel", None);
    }
    action("decline", None)
}

/// MCP's elicitation result as an ABP `ElicitationResponse`. The answer to an `elicitation/confirm` is ABP's
/// `{ confirmed }`: true on accept, false on decline (a "no" is an answer).
fn elicitation_response_of<P: Wire>(r: &P, confirm: bool) -> P {
    let action = r.get_string("action");
    if confirm && matches!(action.as_deref(), Some("accept" | "decline")) {
        let yes = action.as_deref() == Some("accept");
        let data = P::object_of(&mut [("confirmed", Some(P::boolean(yes)))]);
        return P::object_of(&mut [("success", Some(P::boolean(true))), ("data", Some(data))]);
    }
    match action.as_deref() {
        Some("accept") => P::object_of(&mut [
            ("success", Some(P::boolean(true))),
            ("data", Some(r.get("content").unwrap_or_else(P::object))),
        ]),
        Some("cancel") => P::object_of(&mut [
            ("success", Some(P::boolean(false))),
            ("cancelled", Some(P::boolean(true))),
            (
                "error",
                Some(encode_error(AbpError::<P>::cancelled(Some(
                    "The user cancelled",
                )))),
            ),
        ]),
        _ => P::object_of(&mut [
            ("success", Some(P::boolean(false))),
            (
                "error",
                Some(encode_error(AbpError::<P>::new(
                    ErrorCode::OperationFailed,
                    "The user declined",
                ))),
            ),
        ]),
    }
}

/// An ABP elicitation request as `elicitation/create` params: an `elicitation/create` request's params pass
/// through; the standard ABP methods become `{ message, requestedSchema }`.
fn elicitation_params<P: Wire>(r: &P) -> P {
    let params = r.get_object("params").unwrap_or_else(P::object);
    if r.get_string("method").as_deref() == Some("elicitation/create") {
        return params;
    }
    let message = params
        .get("message")
        .or_else(|| params.get("prompt"))
        .filter(|m| m.kind() == Kind::String)
        .or_else(|| r.get("method"))
        .unwrap_or_else(|| P::string(""));
    let schema = params
        .get_object("schema")
        .or_else(|| params.get_object("requestedSchema"))
        .unwrap_or_else(|| {
            P::object_of(&mut [
                ("type", Some(P::constant("object"))),
                ("properties", Some(P::object())),
            ])
        });
    P::object_of(&mut [
        ("message", Some(message)),
        ("requestedSchema", Some(schema)),
    ])
}
