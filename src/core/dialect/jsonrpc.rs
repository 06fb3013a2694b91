//! What the JSON-RPC dialects (MCP, ACP) share: reading a message into a request, notification or response,
//! the ids of both sides' requests in flight, and building messages.
//!
//! Ids are strings for the state machines (numbers in decimal); the peer's ids are kept as they came, so a
//! peer that uses numbers gets numbers back. A response is read only if it answers a request of ours that is
//! still open: late and duplicated responses are dropped here.

use super::super::dialect::Ignored;
use super::super::error::{AbpError, ErrorCode};
use super::super::map::StrMap;
use super::super::message::{Control, ControlOut, Incoming, ToAgent, ToApp};
use super::super::payload::Wire;
use super::super::payload::{Kind, Payload};
use super::super::text::{number, push_u64};

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
pub enum Sent {
    Initialize,
    List,
    Call,
    Elicit,
    Ping,
    /// MCP's `server/discover`, sent first to learn the server's era.
    Discover,
    /// MCP's `subscriptions/listen`.
    Listen,
}

/// One message, read.
pub enum Frame<P> {
    Request {
        id: String,
        method: String,
        params: P,
    },
    Notification {
        method: String,
        params: P,
    },
    /// The answer to a request of ours (`sent` says which kind).
    Response {
        id: String,
        sent: Sent,
        result: Option<P>,
        error: Option<P>,
    },
    /// Not valid JSON-RPC, to be answered with an error.
    Invalid(Control),
}

/// A cancel notification for the request `request_id`, read by role: at an app it cancels that call, at an agent
/// (`agent`) it withdraws the app's own question.
pub fn cancel_of<P>(agent: bool, request_id: String, reason: Option<String>) -> Incoming<P> {
    if agent {
        ToAgent::ElicitationWithdrawn { id: request_id }.into()
    } else {
        ToApp::Cancel {
            id: None,
            call_id: request_id,
            reason,
        }
        .into()
    }
}

/// Both sides' requests in flight.
pub struct Peer<P> {
    /// Our requests awaiting a response, by id.
    sent: StrMap<Sent>,
    /// The peer's requests awaiting our response: key → the id as it came.
    ids: StrMap<P>,
}

impl<P: Wire> Default for Peer<P> {
    fn default() -> Self {
        Peer {
            sent: StrMap::new(),
            ids: StrMap::new(),
        }
    }
}

/// A JSON-RPC id (or progress token) as a string key: strings as they are, integers in decimal, other
/// numbers as JavaScript would mostly write them. `None` for anything else.
pub fn key_of<P: Payload>(id: &P) -> Option<String> {
    match id.kind() {
        Kind::String => id.as_id(),
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

impl<P: Wire> Peer<P> {
    /// Reads one received value. Never fails on bad input: what is not JSON-RPC at all is `Err`, what should
    /// be answered with an error is [`Frame::Invalid`].
    pub fn read(&mut self, msg: &P) -> Result<Frame<P>, Ignored> {
        match msg.kind() {
            Kind::Object => {}
            Kind::Array => {
                return Ok(Frame::Invalid(Control::Invalid {
                    id: None,
                    code: rpc::INVALID_REQUEST,
                    message: "JSON-RPC batches are not supported",
                }))
            }
            _ => return Err(Ignored::NotAMessage),
        }
        let raw_id = msg.get("id").filter(|i| i.kind() != Kind::Null);
        let id = raw_id.as_ref().and_then(key_of);
        if msg.get_string("jsonrpc").as_deref() != Some("2.0") {
            return match (raw_id, id) {
                (Some(raw), Some(id)) => {
                    self.ids.insert(id.clone(), raw);
                    Ok(Frame::Invalid(Control::Invalid {
                        id: Some(id),
                        code: rpc::INVALID_REQUEST,
                        message: "Not a JSON-RPC 2.0 message",
                    }))
                }
                _ => Err(Ignored::NotAMessage),
            };
        }
        let Some(method) = msg.get_string("method") else {
            // A response (or nothing usable).
            let Some(id) = id else {
                return Err(Ignored::NotAMessage);
            };
            let Some(sent) = self.sent.remove(&id) else {
                return Err(Ignored::UnknownType); // not ours, answered already, or cancelled
            };
            return Ok(Frame::Response {
                id,
                sent,
                result: msg.get("result"),
                error: msg.get_object("error"),
            });
        };
        let params = msg.get_object("params").unwrap_or_else(P::object);
        match (raw_id, id) {
            (Some(raw), Some(id)) => {
                self.ids.insert(id.clone(), raw);
                Ok(Frame::Request { id, method, params })
            }
            (Some(_), None) => Ok(Frame::Invalid(Control::Invalid {
                id: None,
                code: rpc::INVALID_REQUEST,
                message: "A JSON-RPC id must be a string or a number",
            })),
            (None, _) => Ok(Frame::Notification { method, params }),
        }
    }

    /// A request of ours, remembered so that its response can be read.
    /// Either side's probe (`ping` is the dialect's method for it), its answer and errors; `None` for a
    /// shutdown, which no JSON-RPC dialect has.
    pub fn control(&mut self, msg: ControlOut, ping: &str) -> Option<P> {
        Some(match msg {
            ControlOut::Ping { id } => self.request(&id, Sent::Ping, ping, None),
            ControlOut::Pong { id } => self.response(&id, P::object()),
            ControlOut::RpcError { id, code, message } => {
                self.error(id.as_deref(), code, &message, None)
            }
            // No JSON-RPC dialect has a shutdown; the dialect that describes itself writes its own answer.
            ControlOut::Shutdown { .. } | ControlOut::Describe { .. } => return None,
        })
    }

    pub fn request(&mut self, id: &str, sent: Sent, method: &str, params: Option<P>) -> P {
        self.sent.insert(id.to_owned(), sent);
        request(P::string(id), method, params)
    }

    /// Forgets a request of ours (cancelled: whatever answers it later is dropped).
    pub fn forget(&mut self, id: &str) {
        self.sent.remove(id);
    }

    /// Forgets a request of the peer's that will get no response (it was cancelled).
    pub fn drop_reply(&mut self, key: &str) {
        self.ids.remove(key);
    }

    /// The peer's request `key`'s id as it came, kept for the reply.
    pub fn id_of(&self, key: &str) -> P {
        self.ids.get(key).cloned().unwrap_or_else(|| P::string(key))
    }

    /// The peer's id for our reply to request `key` (a string id if we never saw it).
    pub fn reply_id(&mut self, key: &str) -> P {
        self.ids.remove(key).unwrap_or_else(|| P::string(key))
    }

    pub fn response(&mut self, key: &str, result: P) -> P {
        let id = self.reply_id(key);
        response(id, result)
    }

    /// An error response; `key: None` (the request's id could not be read) leaves the id out, as the MCP
    /// SDK's strict schema accepts it (it refuses `id: null`).
    pub fn error(&mut self, key: Option<&str>, code: i32, message: &str, data: Option<P>) -> P {
        let id = key.map(|k| self.reply_id(k));
        error_to(id, code, message, data)
    }
}

fn jsonrpc<P: Wire>() -> P {
    P::constant("2.0")
}

fn request<P: Wire>(id: P, method: &str, params: Option<P>) -> P {
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("id", Some(id)),
        ("method", Some(P::string(method))),
        ("params", params),
    ])
}

pub fn notification<P: Wire>(method: &str, params: Option<P>) -> P {
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("method", Some(P::string(method))),
        ("params", params),
    ])
}

/// A response to the peer's request `id`, for a driver that answers a request itself (the MCP gateway's tasks).
pub fn response_to<P: Wire>(id: P, result: P) -> P {
    response(id, result)
}

/// An error response to the peer's request `id` (`None`: its id could not be read, and is left out, as the MCP
/// SDK's strict schema accepts it).
pub fn error_to<P: Wire>(id: Option<P>, code: i32, message: &str, data: Option<P>) -> P {
    let error = P::object_of(&mut [
        ("code", Some(P::number(f64::from(code)))),
        ("message", Some(P::string(message))),
        ("data", data),
    ]);
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("id", id),
        ("error", Some(error)),
    ])
}

fn response<P: Wire>(id: P, result: P) -> P {
    P::object_of(&mut [
        ("jsonrpc", Some(jsonrpc())),
        ("id", Some(id)),
        ("result", Some(result)),
    ])
}

/// The ABP error a JSON-RPC error stands for; the original is kept in `details.jsonrpc`. An error whose
/// `data` is itself an ABP error (`{ code: 'NAME', message, … }`, as this SDK's apps send them) is that error.
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
    let mut error = match e
        .get_object("data")
        .filter(|d| d.get_string("code").is_some())
    {
        Some(data) => super::super::error::decode_error(&data),
        None => AbpError::new(abp, e.get_string("message").unwrap_or_default()),
    };
    if let Some(own) = error.details.take().filter(|d| d.kind() == Kind::Object) {
        let mut merged = own.shallow_copy();
        merged.set("jsonrpc", details.get("jsonrpc").unwrap_or_else(P::object));
        details = merged;
    }
    error.details = Some(details);
    error
}

/// An answer to one of our elicitation requests as an ABP `ElicitationResponse`: the result is its `data`, an
/// error (already read into an ABP error) its `error`.
pub fn elicitation_answer<P: Wire>(result: Option<P>, error: Option<AbpError<P>>) -> P {
    match error {
        Some(e) => P::object_of(&mut [
            ("success", Some(P::boolean(false))),
            ("error", Some(super::super::error::encode_error(e))),
        ]),
        None => P::object_of(&mut [("success", Some(P::boolean(true))), ("data", result)]),
    }
}
