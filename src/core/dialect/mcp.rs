//! The MCP dialect: JSON-RPC 2.0 as the MCP specification and its TypeScript SDK speak it, for both roles.
//!
//! - App (server role): answers `initialize` (echoing the client's `protocolVersion` when supported),
//!   `ping`, `tools/list` (the registry) and `tools/call` (the handlers); `notifications/cancelled` aborts the
//!   handler and nothing is sent for that request. Results become `CallToolResult`s.
//! - Agent (client role): `initialize`, `notifications/initialized`, `tools/list`, `tools/call`; abort sends
//!   `notifications/cancelled` and the call settles at once. A `CallToolResult` becomes an `ABPResponse`.
//!
//! Both eras of MCP, per request: a request whose `_meta` names its protocol version is of the stateless era
//! (2026-07-28: `server/discover`, no session, elicitation by retry, `subscriptions/listen`; see `modern.rs`);
//! `initialize` without one opens a legacy session (2025-11-25 and older), served as before.
//!
//! JSON-RPC ids are read as strings for the state machines (numbers in decimal); the original id value is
//! kept for the reply, so a peer that uses numbers gets numbers back. The codec remembers which of its own
//! requests each response answers, and drops responses it did not ask for (late replies after a cancel).

mod client;
mod modern;

use std::collections::VecDeque;

use super::super::dialect::{Hello, Ignored};
use super::super::error::encode_error;
use super::super::error::{AbpError, ErrorCode};
use super::super::map::StrMap;
use super::super::message::{
    Control, ControlOut, ElicitAnswer, Features, FromAgent, FromApp, Incoming, Outcome, ToAgent,
    ToApp,
};
use super::super::payload::Wire;
use super::super::payload::{Kind, Payload};
use super::super::text::text;
use super::jsonrpc::{cancel_of, key_of, notification, rpc, Frame, Peer, Sent};
use super::Policy;
use client::{Answered, Client, ClientEra};
use modern::{complete, features_of, Asked, Modern, Retry};
// What tells the eras apart, for the gateway too: it reads a request's era as this codec does.
pub use modern::{
    era_of, Era, META_SUBSCRIPTION, META_VERSION, MODERN_VERSIONS, UNSUPPORTED_VERSION,
};

pub use super::jsonrpc::abp_error_of;

/// Legacy protocol versions (with an `initialize` handshake) this SDK speaks, newest first. A client asking
/// for one of them gets it echoed.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Every version, both eras, newest first: `server/discover`'s `supportedVersions`, and what -32022 lists.
fn all_versions<P: Wire>() -> P {
    let all = MODERN_VERSIONS.iter().chain(SUPPORTED_VERSIONS.iter());
    P::array(all.map(|v| P::constant(v)).collect())
}

/// How long a client may keep `tools/list`: not at all, since the app may change its tools at any moment (a
/// modern client hears of changes through `subscriptions/listen`). `server/discover` says what never changes.
const TOOLS_TTL_MS: f64 = 0.0;
const DISCOVER_TTL_MS: f64 = 3_600_000.0;

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
pub fn tool_result_of<P: Wire>(data: P) -> P {
    if data.kind() == Kind::Object && data.get("content").is_some_and(|c| c.kind() == Kind::Array) {
        return data;
    }
    let item = P::object_of(&mut [
        ("type", Some(P::constant("text"))),
        ("text", Some(data.json_string())),
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
    /// The stateless era's calls, states, listens (server side).
    modern: Box<Modern<P>>,
    /// A legacy client opened a session: it hears `notifications/tools/list_changed` unasked.
    legacy: bool,
    /// The `data` of an error we answer (request key → data): -32022 lists the versions we speak.
    error_data: StrMap<P>,
    /// What the codec sends on its own ([`Self::queued`]).
    outbox: VecDeque<P>,
    /// Extensions `server/discover` advertises (served by whoever drives this side, as `abp-peer mcp` serves
    /// tasks).
    extensions: Vec<String>,
    /// Answers a request brought before its handler asked ([`Self::given`]): elicitation id → the app's
    /// `ElicitationResponse` payload.
    given: VecDeque<(String, P)>,
    /// The client role's era and its calls in the stateless era.
    client: Box<Client<P>>,
}

/// The tasks extension, which a driver may serve (`offer_extension`).
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// -32021: the request needs a capability (here, an extension) its `_meta` does not declare.
const MISSING_CAPABILITY: i32 = -32021;

/// Whether a modern request's `_meta` declares the extension `name` among its client capabilities.
fn declares_extension<P: Wire>(params: &P, name: &str) -> bool {
    params
        .get_object("_meta")
        .and_then(|m| m.get_object(modern::META_CLIENT_CAPABILITIES))
        .and_then(|c| c.get_object("extensions"))
        .and_then(|e| e.get_object(name))
        .is_some()
}

/// The probe's id is the handshake's with this suffix: an answer to a probe re-sent before the server's era was
/// known (a frame still loading) is then never taken for the answer to the `initialize` that follows it.
const DISCOVER_SUFFIX: &str = "~discover";

/// The longest an MCP call may run when the caller names no `maxTotalTimeout`: ten minutes.
pub const DEFAULT_MAX_TOTAL_TIMEOUT_MS: u32 = 10 * 60 * 1000;

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
    stateless_requests: true,
    max_total_timeout: DEFAULT_MAX_TOTAL_TIMEOUT_MS,
};

jsonrpc_dialect_codec!(McpCodec, |agent| McpCodec::new(agent), own messages);

impl<P: Wire> McpCodec<P> {
    pub fn new(agent: bool) -> McpCodec<P> {
        McpCodec {
            agent,
            peer: Peer::default(),
            tokens: StrMap::new(),
            requested: None,
            confirms: StrMap::new(),
            modern: Box::default(),
            legacy: false,
            error_data: StrMap::new(),
            outbox: VecDeque::new(),
            extensions: Vec::new(),
            given: VecDeque::new(),
            client: Box::default(),
        }
    }

    /// The client speaks `version` only; false if it is not one of ours.
    pub fn pin_version(&mut self, version: &str) -> bool {
        let known = MODERN_VERSIONS.contains(&version) || SUPPORTED_VERSIONS.contains(&version);
        if known {
            self.client.pin(version);
        }
        known
    }

    /// A message the codec sends on its own, before what the machine says next.
    pub fn queued(&mut self) -> Option<P> {
        self.outbox.pop_front()
    }

    /// `server/discover` advertises the extension `name` (`capabilities.extensions[name] = {}`).
    pub fn offer_extension(&mut self, name: &str) {
        if !self.extensions.iter().any(|e| e == name) {
            self.extensions.push(name.to_owned());
        }
    }

    /// An answer the client gave before the app's handler asked (a modern call that brought `inputResponses`
    /// under the key it then asked): the elicitation id and its response, for the app to read.
    pub fn given(&mut self) -> Option<(String, P)> {
        self.given.pop_front()
    }

    /// The server is going away: each open listen is torn down with `notifications/cancelled` (the one
    /// notification a modern server sends of its own).
    pub fn close(&mut self) {
        for (key, id) in self.modern.take_listens() {
            self.peer.drop_reply(&key);
            let p = P::object_of(&mut [
                ("requestId", Some(id)),
                ("reason", Some(P::constant("The server is shutting down"))),
            ]);
            self.outbox
                .push_back(notification("notifications/cancelled", Some(p)));
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
                // A retry's response settles the call it continues.
                let call_id = self.client.call_of(&id);
                if let Some(read) = self.call_answered(&id, result.clone(), error.clone()) {
                    return read;
                }
                let id = call_id;
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
            Sent::Discover => self.discovered(id, result),
            Sent::Listen => {
                // The server ended our listen (gracefully): changes no longer reach us.
                self.client.listen = None;
                Control::Noted.into()
            }
        }
    }

    /// The answer to our `server/discover`: a server of the stateless era is connected (and we listen for
    /// its tool changes); anything else, and we fall back to `initialize`.
    fn discovered(&mut self, probe: String, result: Option<P>) -> Incoming<P> {
        let id = probe
            .strip_suffix(DISCOVER_SUFFIX)
            .unwrap_or(&probe)
            .to_owned();
        let result = result.filter(|r| r.kind() == Kind::Object);
        if let Some(result) = result.filter(|r| self.client.accepts(r)) {
            let mut payload = P::object();
            let info = result
                .get_object("_meta")
                .and_then(|m| m.get_object(modern::META_SERVER_INFO));
            if let Some(info) = info {
                let mut app = info.shallow_copy();
                if let (None, Some(n)) = (app.get("id"), info.get("name")) {
                    app.set("id", n);
                }
                payload.set("app", app);
            }
            payload.set("protocolVersion", P::constant(MODERN_VERSIONS[0]));
            payload.set("capabilities", P::array(Vec::new()));
            payload.set("mcp", result);
            let listen = String::from("abp-listen-1");
            let notifications = P::object_of(&mut [("toolsListChanged", Some(P::boolean(true)))]);
            let params = P::object_of(&mut [("notifications", Some(notifications))]);
            let params = self.client.with_meta(Some(params));
            let m = self
                .peer
                .request(&listen, Sent::Listen, "subscriptions/listen", Some(params));
            self.outbox.push_back(m);
            self.client.listen = Some(listen);
            let mut session = String::from("mcp-");
            session.push_str(&id);
            return ToAgent::InitializeResult {
                error: None,
                session_id: Some(session),
                id,
                payload,
            }
            .into();
        }
        match self.client.fall_back() {
            Some((id, params)) => {
                let m = self
                    .peer
                    .request(&id, Sent::Initialize, "initialize", Some(params));
                self.outbox.push_back(m);
                Control::Noted.into()
            }
            None => ToAgent::InitializeResult {
                error: Some(AbpError::new(
                    ErrorCode::NotSupported,
                    "The server does not speak MCP 2026-07-28",
                )),
                session_id: None,
                id,
                payload: P::object(),
            }
            .into(),
        }
    }

    /// A response to one of our calls in the stateless era: the outcome, or a question for the agent (the
    /// retry follows its answer).
    fn call_answered(
        &mut self,
        id: &str,
        result: Option<P>,
        error: Option<P>,
    ) -> Option<Incoming<P>> {
        if !self.client.modern() {
            return None;
        }
        let answered = match &error {
            Some(_) => {
                let call_id = self.client.call_of(id);
                self.client.forget(&call_id);
                Answered::Done
            }
            None => self.client.answered(id, result.as_ref()),
        };
        match answered {
            Answered::Done => None,
            Answered::Ask {
                call_id,
                elicit_id,
                request,
            } => {
                if elicit_id.is_empty() {
                    // Only a state to echo: the retry goes at once.
                    if let Some((rid, _, params)) = self.client.retry("", None) {
                        let m = self
                            .peer
                            .request(&rid, Sent::Call, "tools/call", Some(params));
                        self.outbox.push_back(m);
                    }
                    return Some(Control::Noted.into());
                }
                let payload = P::object_of(&mut [
                    ("method", Some(P::constant("elicitation/create"))),
                    ("params", request.get_object("params")),
                ]);
                Some(
                    ToAgent::ElicitationRequest {
                        id: elicit_id,
                        call_id: Some(call_id),
                        payload,
                    }
                    .into(),
                )
            }
            Answered::Unanswerable { call_id, method } => {
                let error = AbpError::new(
                    ErrorCode::NotSupported,
                    text(&[
                        "The server asked for '",
                        &method,
                        "', which this client does not answer",
                    ]),
                );
                Some(
                    ToAgent::CallResult {
                        id: Some(call_id.clone()),
                        call_id: Some(call_id.clone()),
                        cancelled: false,
                        payload: failure(error, &call_id, None),
                    }
                    .into(),
                )
            }
        }
    }

    fn request(&mut self, id: String, method: &str, params: P) -> Incoming<P> {
        if !self.agent {
            match era_of(&params) {
                Era::Modern => return self.modern_request(id, method, params),
                Era::Unsupported(requested) => return self.unsupported(id, &requested),
                // Discovery is how a client learns the era: it is answered whatever the request says.
                Era::Legacy if method == "server/discover" => {
                    return self.modern_request(id, method, params)
                }
                Era::Legacy => {}
            }
        }
        match method {
            "initialize" => {
                self.legacy = true;
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
            "tools/call" => self.call(id, params, None),
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

    /// A `tools/call`: `features` for a modern one (which runs without a session).
    fn call(&mut self, id: String, params: P, features: Option<Features>) -> Incoming<P> {
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
        if features.is_some() {
            if let Some(state) = params.get("requestState") {
                return self.retry(id, &state, &name, &arguments, &params);
            }
            let given = params.get_object("inputResponses");
            self.modern.call(&id, &name, &arguments, given);
        }
        let progress_token = self.take_token(&id, &params);
        let trace = super::trace_from_meta(params.get_object("_meta").as_ref());
        ToApp::Call {
            call_id: id.clone(),
            id,
            capability: name,
            params: arguments,
            timeout: None,
            progress_token,
            trace,
            features,
        }
        .into()
    }

    /// Remembers a request's progress token (as it came) for the call `call_id`; the token as a key.
    fn take_token(&mut self, call_id: &str, params: &P) -> Option<String> {
        let token = params
            .get_object("_meta")
            .and_then(|m| m.get("progressToken"));
        let key = token.as_ref().and_then(key_of);
        match (token, &key) {
            (Some(t), Some(_)) => {
                self.tokens.insert(call_id.to_owned(), t);
            }
            _ => {
                self.tokens.remove(call_id);
            }
        }
        key
    }

    /// A request of the stateless era: answered from what it carries.
    fn modern_request(&mut self, id: String, method: &str, params: P) -> Incoming<P> {
        match method {
            "server/discover" => {
                self.modern.request(&id);
                Control::Describe { id }.into()
            }
            "tools/list" => {
                self.modern.request(&id);
                ToApp::ListCapabilities { id }.into()
            }
            "tools/call" => {
                self.modern.request(&id);
                self.call(id, params.clone(), Some(features_of(&params)))
            }
            "subscriptions/listen" => self.listen(id, &params),
            // `initialize` included: the stateless era has no handshake; and `ping` and `logging/setLevel`, which
            // the revision removed.
            _ => Control::Invalid {
                id: Some(id),
                code: rpc::METHOD_NOT_FOUND,
                message: "Method not found",
            }
            .into(),
        }
    }

    /// -32022: the versions this server speaks, and the one asked for.
    fn unsupported(&mut self, id: String, requested: &str) -> Incoming<P> {
        let data = P::object_of(&mut [
            ("supported", Some(all_versions())),
            ("requested", Some(P::string(requested))),
        ]);
        self.error_data.insert(id.clone(), data);
        Control::Invalid {
            id: Some(id),
            code: UNSUPPORTED_VERSION,
            message: "Unsupported protocol version",
        }
        .into()
    }

    /// `subscriptions/listen`: acknowledged at once with what it will hear (tool list changes, if it asked),
    /// and left open until the client cancels it or the server goes.
    fn listen(&mut self, id: String, params: &P) -> Incoming<P> {
        let asked = params.get_object("notifications");
        let tools = asked
            .as_ref()
            .and_then(|n| n.get("toolsListChanged"))
            .and_then(|t| t.as_bool())
            == Some(true);
        // Tasks to follow: only where the tasks extension is served, and only for a request that declares it.
        let task_ids = asked
            .as_ref()
            .and_then(|n| n.get("taskIds"))
            .filter(|_| self.extensions.iter().any(|e| e == TASKS_EXTENSION));
        if task_ids.is_some() && !declares_extension(params, TASKS_EXTENSION) {
            let extensions = P::object_of(&mut [(TASKS_EXTENSION, Some(P::object()))]);
            let required = P::object_of(&mut [("extensions", Some(extensions))]);
            let data = P::object_of(&mut [("requiredCapabilities", Some(required))]);
            self.error_data.insert(id.clone(), data);
            return Control::Invalid {
                id: Some(id),
                code: MISSING_CAPABILITY,
                message:
                    "Following tasks needs the io.modelcontextprotocol/tasks extension in _meta",
            }
            .into();
        }
        let tasks: Vec<String> = task_ids
            .as_ref()
            .map(|t| {
                (0..t.array_len().unwrap_or(0))
                    .filter_map(|i| t.index(i)?.as_string())
                    .collect()
            })
            .unwrap_or_default();
        let raw = self.peer.id_of(&id);
        let followed = task_ids
            .is_some()
            .then(|| P::array(tasks.iter().map(|t| P::string(t)).collect()));
        let agreed = P::object_of(&mut [
            ("toolsListChanged", tools.then(|| P::boolean(true))),
            ("taskIds", followed),
        ]);
        let meta = P::object_of(&mut [(modern::META_SUBSCRIPTION, Some(raw.clone()))]);
        let p = P::object_of(&mut [("_meta", Some(meta)), ("notifications", Some(agreed))]);
        self.outbox.push_back(notification(
            "notifications/subscriptions/acknowledged",
            Some(p),
        ));
        self.modern.listen(&id, raw, tools, tasks);
        Control::Noted.into()
    }

    /// The task `task_id` changed (tasks are the driver's: `abp-peer mcp` keeps them): each listen that follows
    /// it hears `notifications/tasks` with `detailed` (the task as `tasks/get` shows it) and its subscription id.
    pub fn task_changed(&mut self, task_id: &str, detailed: &P) {
        let ids: Vec<P> = self.modern.task_listeners(task_id).cloned().collect();
        for id in ids {
            let mut p = detailed.clone();
            let meta = P::object_of(&mut [(modern::META_SUBSCRIPTION, Some(id))]);
            p.set("_meta", meta);
            self.outbox
                .push_back(notification("notifications/tasks", Some(p)));
        }
    }

    /// A `tools/call` that brings a `requestState`: the retry of a call whose handler asked for input.
    fn retry(
        &mut self,
        id: String,
        state: &P,
        name: &str,
        arguments: &P,
        params: &P,
    ) -> Incoming<P> {
        let state = state.as_string().unwrap_or_default();
        let responses = params.get_object("inputResponses");
        match self.modern.retry(&id, &state, name, arguments, responses) {
            Retry::Refused(message) => {
                self.modern.answered(&id);
                Control::Invalid {
                    id: Some(id),
                    code: rpc::INVALID_PARAMS,
                    message,
                }
                .into()
            }
            Retry::Finished => {
                let call_id = self.modern.call_of(&id);
                if let Some((reply, result)) = self.modern.take_finished(&call_id) {
                    let m = self.respond(&reply, result);
                    self.outbox.push_back(m);
                }
                Control::Noted.into()
            }
            Retry::Answer {
                id: elicit_id,
                result: Some(result),
                confirm,
                ..
            } => {
                let call_id = self.modern.call_of(&id);
                self.take_token(&call_id, params);
                // A question the handler asked meanwhile goes out as the retry's response.
                if let Some((reply, r)) = self.modern.after_answer(&call_id) {
                    let m = self.respond(&reply, r);
                    self.outbox.push_back(m);
                }
                ToApp::ElicitationResponse {
                    id: elicit_id,
                    payload: elicitation_response_of(&result, confirm),
                }
                .into()
            }
            Retry::Answer {
                id: elicit_id,
                key,
                result: None,
                confirm,
                params: asked,
            } => {
                // The retry did not answer the question: it is put again.
                let call_id = self.modern.call_of(&id);
                self.take_token(&call_id, params);
                let method = if confirm {
                    "elicitation/confirm"
                } else {
                    "elicitation/create"
                };
                if let Some((reply, r)) = self
                    .modern
                    .ask_again(&call_id, &elicit_id, key, method, asked)
                {
                    let m = self.respond(&reply, r);
                    self.outbox.push_back(m);
                }
                Control::Noted.into()
            }
        }
    }

    /// A response to the peer's request `key` (with `resultType` when the request was modern).
    fn respond(&mut self, key: &str, result: P) -> P {
        let result = if self.modern.answered(key) {
            complete(result)
        } else {
            result
        };
        self.peer.response(key, result)
    }

    /// An error response to the peer's request `key`, with the data kept for it.
    fn error_reply(&mut self, key: Option<&str>, code: i32, message: &str) -> P {
        let data = key.and_then(|k| {
            self.modern.answered(k);
            self.error_data.remove(k)
        });
        self.peer.error(key, code, message, data)
    }

    fn notification(&mut self, method: &str, params: P) -> Result<Incoming<P>, Ignored> {
        Ok(match method {
            "notifications/initialized" | "notifications/subscriptions/acknowledged" => {
                Control::Noted.into()
            }
            "notifications/cancelled" => {
                let Some(request_id) = params.get("requestId").as_ref().and_then(key_of) else {
                    return Err(Ignored::NotAMessage);
                };
                // No response will be sent for it.
                self.peer.drop_reply(&request_id);
                if !self.agent && self.modern.end_listen(&request_id) {
                    return Ok(Control::Noted.into());
                }
                let call_id = if self.agent {
                    request_id
                } else {
                    self.modern.answered(&request_id);
                    let call_id = self.modern.call_of(&request_id);
                    self.modern.forget(&call_id);
                    call_id
                };
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
                let mut params = initialize_params(hello);
                if let Some(v) = self
                    .client
                    .pinned
                    .as_deref()
                    .filter(|v| SUPPORTED_VERSIONS.contains(v))
                {
                    params.set("protocolVersion", P::string(v));
                }
                if self.client.era == ClientEra::Legacy {
                    return Some(self.peer.request(
                        &id,
                        Sent::Initialize,
                        "initialize",
                        Some(params),
                    ));
                }
                // Modern first: a server of the stateless era answers `server/discover`; any other answer
                // sends `initialize` instead.
                self.client.probe(hello.info.clone(), &id, params);
                let p = self.client.with_meta(None);
                let mut probe = id;
                probe.push_str(DISCOVER_SUFFIX);
                self.peer
                    .request(&probe, Sent::Discover, "server/discover", Some(p))
            }
            FromAgent::Initialized if self.client.modern() => return None,
            FromAgent::Initialized => notification("notifications/initialized", None),
            FromAgent::ListCapabilities { id } => {
                let p = self.client.modern().then(|| self.client.with_meta(None));
                self.peer.request(&id, Sent::List, "tools/list", p)
            }
            FromAgent::Call {
                id,
                capability,
                params,
                progress_token,
                trace,
                ..
            } => {
                let token = progress_token.as_deref().map(P::string);
                let mut meta = if self.client.modern() {
                    let arguments = arguments_of(&params);
                    self.client.call(&id, &capability, arguments, token.clone());
                    Some(self.client.meta_with_token(token))
                } else {
                    token.map(|t| P::object_of(&mut [("progressToken", Some(t))]))
                };
                if let Some(trace) = &trace {
                    super::set_trace_meta(meta.get_or_insert_with(P::object), trace);
                }
                let p = call_params(&capability, params, meta);
                self.peer.request(&id, Sent::Call, "tools/call", Some(p))
            }
            FromAgent::Cancel {
                call_id, reason, ..
            } if self.client.modern() => {
                // The request that is open for the call now; none while the agent answers its question.
                let open = self.client.open_request(&call_id);
                self.client.forget(&call_id);
                let request = open?;
                let mut m = self.cancel(&request, reason.as_deref());
                if let Some(mut p) = m.get_object("params") {
                    p.set("_meta", self.client.meta());
                    m.set("params", p);
                }
                m
            }
            FromAgent::Cancel {
                call_id, reason, ..
            } => self.cancel(&call_id, reason.as_deref()),
            FromAgent::ElicitationResponse { id, answer } if self.client.modern() => {
                // The answer to a server's question goes with the call's retry; a call that ended needs none.
                if matches!(answer, ElicitAnswer::Cancelled) {
                    return None;
                }
                let result = elicitation_result(answer);
                let (rid, _, params) = self.client.retry(&id, Some(result))?;
                self.peer
                    .request(&rid, Sent::Call, "tools/call", Some(params))
            }
            FromAgent::ElicitationResponse { id, answer } => {
                let result = elicitation_result(answer);
                self.peer.response(&id, result)
            }
            FromAgent::Control(ControlOut::Ping { id }) if self.client.modern() => {
                let p = self.client.with_meta(None);
                self.peer.request(&id, Sent::Ping, "ping", Some(p))
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
                let result = tool_list(hello, self.modern.is_request(&id));
                self.respond(&id, result)
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
            } => return self.progress(call_id.as_deref(), &token, &info),
            FromApp::CapabilitiesChanged { .. } => return self.tools_changed(),
            FromApp::ElicitationRequest {
                id,
                call_id: Some(call_id),
                request,
            } if self.modern.is_modern_call(&call_id) => {
                return self.ask_by_retry(&id, &call_id, &request)
            }
            FromApp::ElicitationRequest { id, request: r, .. } => self.elicitation_request(&id, &r),
            // A modern server cancels nothing of its own: the state it gave out is simply no longer good.
            FromApp::WithdrawElicitation { id, .. } if self.modern.withdraw(&id) => return None,
            FromApp::WithdrawElicitation { id, reason } => self.cancel(&id, reason.as_deref()),
            FromApp::Control(ControlOut::Describe { id }) => {
                let result = discover_result(hello, &self.extensions);
                self.respond(&id, result)
            }
            FromApp::Control(ControlOut::Pong { id }) => self.respond(&id, P::object()),
            FromApp::Control(ControlOut::RpcError { id, code, message }) => {
                self.error_reply(id.as_deref(), code, &message)
            }
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
    ///
    /// A modern call answers the request that continues it (its last retry's); one that waits for a retry keeps
    /// its result for that retry.
    fn call_result(&mut self, id: &str, call_id: &str, outcome: Outcome<P>) -> Option<P> {
        self.tokens.remove(call_id);
        let mut reply = id.to_owned();
        if self.modern.is_modern_call(call_id) {
            if let Outcome::Cancelled { .. } = outcome {
                self.modern.forget(call_id);
                return None;
            }
            match self.modern.reply_of(call_id) {
                Some(r) => {
                    self.modern.forget(call_id);
                    reply = r;
                }
                None => {
                    let result = match outcome {
                        Outcome::Success { data } => tool_result_of(data),
                        Outcome::Failure(e) => error_result(&e.message),
                        Outcome::Cancelled { .. } => return None,
                    };
                    self.modern.finish(call_id, complete(result));
                    return None;
                }
            }
        }
        let id = reply.as_str();
        Some(match outcome {
            Outcome::Success { data } => self.respond(id, tool_result_of(data)),
            Outcome::Failure(e) => match e.code {
                // Protocol errors, as the MCP SDK answers them.
                ErrorCode::UnknownCapability | ErrorCode::InvalidParams => {
                    self.error_reply(Some(id), rpc::INVALID_PARAMS, &e.message)
                }
                ErrorCode::NotInitialized => {
                    self.error_reply(Some(id), rpc::INVALID_REQUEST, &e.message)
                }
                // Tool errors: the model should see them.
                _ => self.respond(id, error_result(&e.message)),
            },
            Outcome::Cancelled { .. } => return None,
        })
    }

    /// A handler of a modern call asks for input: its call's response asks the client, which answers by
    /// retrying the call. (Only what the client declared in that request's `_meta` reaches here: the state
    /// machine checks it.)
    fn ask_by_retry(&mut self, elicit_id: &str, call_id: &str, request: &P) -> Option<P> {
        let method = if request.get_string("method").as_deref() == Some("elicitation/confirm") {
            "elicitation/confirm"
        } else {
            "elicitation/create"
        };
        let key = request.get_string("key");
        let params = elicitation_params(request);
        match self.modern.ask(call_id, elicit_id, key, method, params) {
            Asked::Put(reply, result) => Some(self.respond(&reply, result)),
            Asked::Given(result) => {
                let confirm = method == "elicitation/confirm";
                let payload = elicitation_response_of(&result, confirm);
                self.given.push_back((elicit_id.to_owned(), payload));
                None
            }
            Asked::Queued => None,
        }
    }

    /// The app's tools changed: a legacy session hears `notifications/tools/list_changed`, and so does each
    /// modern listen that asked for it, with its subscription id. Nothing goes to a modern client unasked.
    fn tools_changed(&mut self) -> Option<P> {
        let mut all: VecDeque<P> = self
            .modern
            .tool_listeners()
            .map(|id| {
                let meta = P::object_of(&mut [(modern::META_SUBSCRIPTION, Some(id.clone()))]);
                let p = P::object_of(&mut [("_meta", Some(meta))]);
                notification("notifications/tools/list_changed", Some(p))
            })
            .collect();
        if self.legacy {
            all.push_front(notification("notifications/tools/list_changed", None));
        }
        let first = all.pop_front();
        self.outbox.extend(all);
        first
    }

    /// `notifications/progress` with the progress token the call came with (a number stays a number); none
    /// for a modern call that waits for its retry (no request of the client's is open for it).
    fn progress(&self, call_id: Option<&str>, token: &str, info: &P) -> Option<P> {
        if call_id
            .is_some_and(|c| self.modern.is_modern_call(c) && self.modern.reply_of(c).is_none())
        {
            return None;
        }
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
        Some(notification("notifications/progress", Some(p)))
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
fn call_params<P: Wire>(capability: &str, params: P, meta: Option<P>) -> P {
    P::object_of(&mut [
        ("name", Some(P::string(capability))),
        ("arguments", arguments_of(&params)),
        ("_meta", meta),
    ])
}

/// A call's `params` as `tools/call` arguments: none for undefined or null.
fn arguments_of<P: Wire>(params: &P) -> Option<P> {
    (!matches!(params.kind(), Kind::Undefined | Kind::Null)).then(|| params.clone())
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

/// The `tools/list` result: the app's capabilities as tools, in its registration order (the same order on
/// every call, in both eras). A modern one says how long it may be kept, and by whom (the tools are this user's
/// app's).
fn tool_list<P: Wire>(hello: &Hello<'_, P>, modern: bool) -> P {
    let list = hello
        .capabilities
        .map(|f| f())
        .unwrap_or_else(|| P::array(Vec::new()));
    let tools: Vec<P> = (0..list.array_len().unwrap_or(0))
        .filter_map(|i| list.index(i))
        .map(|d| tool_of(&d))
        .collect();
    let cache = |v| modern.then_some(v);
    P::object_of(&mut [
        ("tools", Some(P::array(tools))),
        ("ttlMs", cache(P::number(TOOLS_TTL_MS))),
        ("cacheScope", cache(P::constant("private"))),
    ])
}

/// `server/discover`'s result: the versions of both eras, tools that announce changes (to listens), who the app
/// is; it holds for an hour, for anyone.
fn discover_result<P: Wire>(hello: &Hello<'_, P>, extensions: &[String]) -> P {
    let tools = P::object_of(&mut [("listChanged", Some(P::boolean(true)))]);
    let offered = (!extensions.is_empty()).then(|| {
        let mut all = P::object();
        for e in extensions {
            all.set(e, P::object());
        }
        all
    });
    let capabilities = P::object_of(&mut [("tools", Some(tools)), ("extensions", offered)]);
    let server = P::object_of(&mut [
        ("name", hello.info.get("name")),
        ("version", hello.info.get("version")),
    ]);
    let meta = P::object_of(&mut [(modern::META_SERVER_INFO, Some(server))]);
    P::object_of(&mut [
        ("resultType", Some(P::constant("complete"))),
        ("supportedVersions", Some(all_versions())),
        ("capabilities", Some(capabilities)),
        ("_meta", Some(meta)),
        ("ttlMs", Some(P::number(DISCOVER_TTL_MS))),
        ("cacheScope", Some(P::constant("public"))),
    ])
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
pub fn elicitation_response_of<P: Wire>(r: &P, confirm: bool) -> P {
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
pub fn elicitation_params<P: Wire>(r: &P) -> P {
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
