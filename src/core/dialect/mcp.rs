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

use super::super::codec::{Hello, Ignored, Wire};
use super::super::error::{AbpError, ErrorCode};
use super::super::map::StrMap;
use super::super::message::{number, push_u64, ElicitAnswer, Incoming, Outcome, Outgoing};
use super::super::schema::{Kind, Payload};
use crate::core::codec::encode_error;

/// Protocol versions this SDK speaks, newest first. A client asking for one of them gets it echoed.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// JSON-RPC error codes.
pub mod rpc {
    pub const PARSE_ERROR: i32 = -32700;
    pub const INVALID_REQUEST: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;
    /// The MCP SDK's ConnectionClosed.
    pub const CONNECTION_CLOSED: i32 = -32000;
    /// The MCP SDK's RequestTimeout.
    pub const REQUEST_TIMEOUT: i32 = -32001;
    /// LSP/ACP RequestCancelled.
    pub const REQUEST_CANCELLED: i32 = -32800;
}

/// What one of our own requests was, so its response can be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
    Initialize,
    List,
    Call,
    Elicit,
    Ping,
}

pub struct McpCodec<P> {
    /// Our requests awaiting a response, by id.
    sent: StrMap<Sent>,
    /// The peer's requests awaiting our response: key → the id as it came.
    ids: StrMap<P>,
    /// Progress tokens of running calls as they came (a token may be a number): call key → token.
    tokens: StrMap<P>,
    /// The protocol version the client asked for.
    requested: Option<String>,
}

impl<P: Wire> Default for McpCodec<P> {
    fn default() -> Self {
        Self::new()
    }
}

/// A JSON-RPC id (or progress token) as a string key: strings as they are, integers in decimal, other
/// numbers as JavaScript would mostly write them. `None` for anything else.
fn key_of<P: Payload>(id: &P) -> Option<String> {
    match id.kind() {
        Kind::String => id.as_string(),
        Kind::Number => {
            let n = id.as_f64()?;
            if n.fract() == 0.0 && n.abs() < 1e15 {
                let mut s = String::new();
                if n < 0.0 {
                    s.push('-');
                }
                push_u64(&mut s, n.abs() as u64);
                Some(s)
            } else {
                Some(number(n))
            }
        }
        _ => None,
    }
}

fn jsonrpc<P: Wire>() -> P {
    P::constant("2.0")
}

fn request<P: Wire>(id: P, method: &'static str, params: Option<P>) -> P {
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("id", Some(id)),
        ("method", Some(P::constant(method))),
        ("params", params),
    ])
}

fn notification<P: Wire>(method: &'static str, params: Option<P>) -> P {
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("method", Some(P::constant(method))),
        ("params", params),
    ])
}

fn response<P: Wire>(id: P, result: P) -> P {
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("id", Some(id)),
        ("result", Some(result)),
    ])
}

/// A JSON-RPC error response; `id: None` (the request's id could not be read) leaves the id out, as the MCP
/// SDK's strict schema accepts it (it refuses `id: null`).
fn error_response<P: Wire>(id: Option<P>, code: i32, message: &str) -> P {
    let error = P::object_of(&mut [
        ("code", Some(P::number(f64::from(code)))),
        ("message", Some(P::string(message))),
    ]);
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("id", id),
        ("error", Some(error)),
    ])
}

/// The ABP error a JSON-RPC error stands for; the original is kept in `details.jsonrpc`.
pub fn abp_error_of<P: Wire>(e: &P) -> AbpError<P> {
    let code = e.get_f64("code").unwrap_or(f64::from(rpc::INTERNAL_ERROR));
    let abp = match code as i32 {
        rpc::INVALID_PARAMS => ErrorCode::InvalidParams,
        rpc::METHOD_NOT_FOUND => ErrorCode::NotSupported,
        rpc::INTERNAL_ERROR => ErrorCode::InternalError,
        rpc::REQUEST_TIMEOUT => ErrorCode::Timeout,
        rpc::REQUEST_CANCELLED => ErrorCode::Cancelled,
        rpc::CONNECTION_CLOSED => ErrorCode::Disconnected,
        _ => ErrorCode::OperationFailed,
    };
    let mut original = P::object();
    original.set("code", P::number(code));
    if let Some(m) = e.get("message") {
        original.set("message", m);
    }
    if let Some(d) = e.get("data") {
        original.set("data", d);
    }
    let mut details = P::object();
    details.set("jsonrpc", original);
    AbpError::new(abp, e.get_string("message").unwrap_or_default()).with_details(details)
}

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

impl<P: Wire> McpCodec<P> {
    pub fn new() -> McpCodec<P> {
        McpCodec {
            sent: StrMap::new(),
            ids: StrMap::new(),
            tokens: StrMap::new(),
            requested: None,
        }
    }

    /// Reads one JSON-RPC message.
    pub fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
        match msg.kind() {
            Kind::Object => {}
            Kind::Array => {
                return Ok(Incoming::Invalid {
                    id: None,
                    code: rpc::INVALID_REQUEST,
                    message: "JSON-RPC batches are not supported",
                })
            }
            _ => return Err(Ignored::NotAMessage),
        }
        let raw_id = msg.get("id").filter(|i| i.kind() != Kind::Null);
        let id = raw_id.as_ref().and_then(key_of);
        if msg.get_string("jsonrpc").as_deref() != Some("2.0") {
            return match (raw_id, id) {
                (Some(raw), Some(id)) => {
                    self.ids.insert(id.clone(), raw);
                    Ok(Incoming::Invalid {
                        id: Some(id),
                        code: rpc::INVALID_REQUEST,
                        message: "Not a JSON-RPC 2.0 message",
                    })
                }
                _ => Err(Ignored::NotAMessage),
            };
        }
        let Some(method) = msg.get_string("method") else {
            // A response (or nothing usable).
            let Some(id) = id else {
                return Err(Ignored::NotAMessage);
            };
            return self.response(id, msg);
        };
        let params = msg.get_object("params").unwrap_or_else(P::object);
        match (raw_id, id) {
            (Some(raw), Some(id)) => {
                self.ids.insert(id.clone(), raw);
                Ok(self.request(id, &method, params))
            }
            (Some(_), None) => Ok(Incoming::Invalid {
                id: None,
                code: rpc::INVALID_REQUEST,
                message: "A JSON-RPC id must be a string or a number",
            }),
            (None, _) => self.notification(&method, params),
        }
    }

    fn response(&mut self, id: String, msg: &P) -> Result<Incoming<P>, Ignored> {
        let Some(sent) = self.sent.remove(&id) else {
            return Err(Ignored::UnknownType); // not ours, or answered already, or cancelled
        };
        let result = msg.get("result");
        let error = msg.get_object("error");
        Ok(match sent {
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
                Incoming::InitializeResult {
                    error: error.map(|e| abp_error_of(&e)),
                    session_id: Some(session),
                    id,
                    payload,
                }
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
                Incoming::CapabilityList {
                    id,
                    capabilities: P::array(list),
                }
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
                Incoming::CallResult {
                    id: Some(id.clone()),
                    call_id: Some(id),
                    cancelled: false,
                    payload,
                }
            }
            Sent::Elicit => {
                let payload = match (error, result) {
                    (Some(e), _) => {
                        let mut r = P::object();
                        r.set("success", P::boolean(false));
                        r.set("error", encode_error(abp_error_of(&e)));
                        r
                    }
                    (None, r) => elicitation_response_of(&r.unwrap_or_else(P::object)),
                };
                Incoming::ElicitationResponse { id, payload }
            }
            Sent::Ping => Incoming::Pong { id },
        })
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
                Incoming::Initialize { id, payload }
            }
            "ping" => Incoming::Ping { id },
            "tools/list" => Incoming::ListCapabilities { id },
            "tools/call" => {
                let Some(name) = params.get_string("name") else {
                    return Incoming::Invalid {
                        id: Some(id),
                        code: rpc::INVALID_PARAMS,
                        message: "tools/call needs a string name",
                    };
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
                Incoming::Call {
                    call_id: id.clone(),
                    id,
                    capability: name,
                    params: arguments,
                    timeout: None,
                    progress_token,
                }
            }
            "elicitation/create" => {
                let payload = P::object_of(&mut [
                    ("method", Some(P::constant("elicitation/create"))),
                    ("params", Some(params)),
                ]);
                Incoming::ElicitationRequest {
                    id,
                    call_id: None,
                    payload,
                }
            }
            _ => Incoming::Invalid {
                id: Some(id),
                code: rpc::METHOD_NOT_FOUND,
                message: "Method not found",
            },
        }
    }

    fn notification(&mut self, method: &str, params: P) -> Result<Incoming<P>, Ignored> {
        Ok(match method {
            "notifications/initialized" => Incoming::Noted,
            "notifications/cancelled" => {
                let Some(call_id) = params.get("requestId").as_ref().and_then(key_of) else {
                    return Err(Ignored::NotAMessage);
                };
                // No response will be sent for it.
                self.ids.remove(&call_id);
                self.tokens.remove(&call_id);
                Incoming::Cancel {
                    id: None,
                    call_id,
                    reason: params.get_string("reason"),
                }
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
                Incoming::Progress {
                    call_id: None,
                    token: Some(key),
                    payload: info,
                }
            }
            "notifications/tools/list_changed" => Incoming::CapabilitiesChanged {
                payload: P::object(),
            },
            _ => {
                let payload =
                    P::object_of(&mut [("event", Some(P::string(method))), ("data", Some(params))]);
                Incoming::Notification {
                    event: method.to_owned(),
                    payload,
                }
            }
        })
    }

    /// The peer's id for our reply to request `key` (a string id if we never saw it).
    fn reply_id(&mut self, key: &str) -> P {
        self.ids.remove(key).unwrap_or_else(|| P::string(key))
    }

    /// Builds the JSON-RPC message; `None` for what MCP does not send (a cancel's answer, a cancelled call's
    /// response, ABP's shutdown).
    pub fn encode(&mut self, msg: Outgoing<P>, hello: &Hello<'_, P>) -> Option<P> {
        Some(match msg {
            // The client role.
            Outgoing::Initialize { id } => {
                self.sent.insert(id.clone(), Sent::Initialize);
                let capabilities = P::object_of(&mut [("elicitation", Some(P::object()))]);
                let params = P::object_of(&mut [
                    ("protocolVersion", Some(P::constant(SUPPORTED_VERSIONS[0]))),
                    ("capabilities", Some(capabilities)),
                    ("clientInfo", Some(hello.info.clone())),
                ]);
                request(P::string(&id), "initialize", Some(params))
            }
            Outgoing::Initialized => notification("notifications/initialized", None),
            Outgoing::ListCapabilities { id } => {
                self.sent.insert(id.clone(), Sent::List);
                request(P::string(&id), "tools/list", None)
            }
            Outgoing::Call {
                id,
                capability,
                params,
                progress_token,
                ..
            } => {
                self.sent.insert(id.clone(), Sent::Call);
                let meta = progress_token
                    .map(|t| P::object_of(&mut [("progressToken", Some(P::string(&t)))]));
                let arguments =
                    (!matches!(params.kind(), Kind::Undefined | Kind::Null)).then_some(params);
                let p = P::object_of(&mut [
                    ("name", Some(P::string(&capability))),
                    ("arguments", arguments),
                    ("_meta", meta),
                ]);
                request(P::string(&id), "tools/call", Some(p))
            }
            Outgoing::Cancel {
                call_id, reason, ..
            } => {
                // Whatever answers the call later is dropped.
                self.sent.remove(&call_id);
                let p = P::object_of(&mut [
                    ("requestId", Some(P::string(&call_id))),
                    ("reason", reason.as_deref().map(P::string)),
                ]);
                notification("notifications/cancelled", Some(p))
            }
            Outgoing::ElicitationResponse { id, answer } => {
                let result = match answer {
                    ElicitAnswer::Answer(r) => elicitation_result_of(&r),
                    ElicitAnswer::Cancelled => action::<P>("cancel", None),
                    ElicitAnswer::Failed(_) => action::<P>("decline", None),
                };
                let rid = self.reply_id(&id);
                response(rid, result)
            }
            Outgoing::Ping { id } => {
                self.sent.insert(id.clone(), Sent::Ping);
                request(P::string(&id), "ping", None)
            }
            Outgoing::Pong { id } => {
                let rid = self.reply_id(&id);
                response(rid, P::object())
            }
            Outgoing::RpcError { id, code, message } => {
                let rid = id.map(|id| self.reply_id(&id));
                error_response(rid, code, &message)
            }
            // The server role.
            Outgoing::InitializeResult { id, .. } => {
                let version = self
                    .requested
                    .as_deref()
                    .and_then(|r| SUPPORTED_VERSIONS.iter().find(|v| **v == r))
                    .copied()
                    .unwrap_or(SUPPORTED_VERSIONS[0]);
                let tools = P::object_of(&mut [("listChanged", Some(P::boolean(true)))]);
                let capabilities = P::object_of(&mut [("tools", Some(tools))]);
                let server = P::object_of(&mut [
                    ("name", hello.info.get("name")),
                    ("version", hello.info.get("version")),
                ]);
                let result = P::object_of(&mut [
                    ("protocolVersion", Some(P::string(version))),
                    ("capabilities", Some(capabilities)),
                    ("serverInfo", Some(server)),
                ]);
                let rid = self.reply_id(&id);
                response(rid, result)
            }
            Outgoing::InitializeError { id, error } => {
                let rid = self.reply_id(&id);
                error_response(Some(rid), rpc::INVALID_REQUEST, &error.message)
            }
            Outgoing::CapabilityList { id } => {
                let list = hello
                    .capabilities
                    .map(|f| f())
                    .unwrap_or_else(|| P::array(Vec::new()));
                let tools = (0..list.array_len().unwrap_or(0))
                    .filter_map(|i| list.index(i))
                    .map(|d| tool_of(&d))
                    .collect();
                let result = P::object_of(&mut [("tools", Some(P::array(tools)))]);
                let rid = self.reply_id(&id);
                response(rid, result)
            }
            Outgoing::CallResult {
                id,
                call_id,
                outcome,
                ..
            } => {
                self.tokens.remove(&call_id);
                let rid = self.reply_id(&id);
                match outcome {
                    Outcome::Success { data } => response(rid, tool_result_of(data)),
                    Outcome::Failure(e) => match e.code {
                        // Protocol errors, as the MCP SDK answers them.
                        ErrorCode::UnknownCapability | ErrorCode::InvalidParams => {
                            error_response(Some(rid), rpc::INVALID_PARAMS, &e.message)
                        }
                        ErrorCode::NotInitialized => {
                            error_response(Some(rid), rpc::INVALID_REQUEST, &e.message)
                        }
                        // Tool errors: the model should see them.
                        _ => response(rid, error_result(&e.message)),
                    },
                    // MCP: nothing is sent for a cancelled request.
                    Outcome::Cancelled { .. } => return None,
                }
            }
            Outgoing::Progress {
                call_id,
                token,
                info,
            } => {
                let original = call_id
                    .as_deref()
                    .and_then(|c| self.tokens.get(c).cloned())
                    .unwrap_or_else(|| P::string(&token));
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
            Outgoing::CapabilitiesChanged { .. } => {
                notification("notifications/tools/list_changed", None)
            }
            Outgoing::ElicitationRequest { id, request: r, .. } => {
                self.sent.insert(id.clone(), Sent::Elicit);
                request(
                    P::string(&id),
                    "elicitation/create",
                    Some(elicitation_params(&r)),
                )
            }
            // MCP has no acknowledgement of a cancel, no generic notification, no shutdown message.
            Outgoing::CancelResult { .. }
            | Outgoing::Notification { .. }
            | Outgoing::Shutdown { .. } => return None,
        })
    }
}

fn action<P: Wire>(action: &'static str, content: Option<P>) -> P {
    P::object_of(&mut [("action", Some(P::constant(action))), ("content", content)])
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

/// MCP's elicitation result as an ABP `ElicitationResponse`.
fn elicitation_response_of<P: Wire>(r: &P) -> P {
    match r.get_string("action").as_deref() {
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
