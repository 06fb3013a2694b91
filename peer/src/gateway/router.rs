//! Where what the gateway says to one host goes, when that host reads it on more than one stream: a 2025-11-25
//! HTTP session (a stream per POSTed request, and a GET stream), the 2026-07-28 HTTP endpoint (a stream per
//! request, every client one host to the gateway), and the host on stdio while another process's gateway serves
//! it (one stream, but its requests there are answered here if that process goes).
//!
//! One [`Router`] does the matching for all of them: a response ends its request's stream, progress goes to the
//! stream of the request that gave the token, a listen's notifications to the listen's stream, and each carries
//! back the id and token its host wrote. A request the gateway will never answer (its process went) is answered
//! with an error by [`Router::abandon`]. The router holds no channel: its streams are whatever the edge writes to,
//! and it hands each message to the edge with the stream it belongs to.

use std::collections::HashMap;

use abp_wasm::core::dialect::jsonrpc::{error_to, rpc};
use abp_wasm::core::dialect::mcp::META_SUBSCRIPTION;
use serde_json::Value;

/// A stream the router hands messages to; it only needs to know whether its reader is still there.
pub(crate) trait Stream {
    fn is_open(&self) -> bool;
}

/// The host reads everything on one stream that is always there (stdout).
impl Stream for () {
    fn is_open(&self) -> bool {
        true
    }
}

/// One JSON-RPC message, by what it is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A method with an id (a string or a number).
    Request,
    /// A method without an id.
    Notification,
    /// An id without a method: the answer to a request.
    Response,
    /// Neither.
    Other,
}

/// What `message` is.
pub(crate) fn shape_of(message: &Value) -> Shape {
    let id = message.get("id").filter(|i| i.is_string() || i.is_number());
    match (message.get("method").is_some(), id.is_some()) {
        (true, true) => Shape::Request,
        (true, false) if message.get("id").is_none() => Shape::Notification,
        (false, true) => Shape::Response,
        _ => Shape::Other,
    }
}

/// A request whose answer is awaited.
struct Pending<S> {
    stream: S,
    /// The id its host gave it (the gateway may know it by another).
    id: Value,
    /// The progress token as the gateway knows it (JSON text), and as the host wrote it.
    token: Option<(String, Value)>,
    /// Who sent it, for a cancel notice naming it.
    principal: String,
    /// Its place in the order requests came in.
    order: u64,
}

/// What became of a message given to [`Router::route`].
#[derive(Debug, PartialEq)]
pub(crate) enum Routed {
    /// Handed to its stream.
    Delivered,
    /// It names a request, token or listen that no stream here waits for: the name, and the message.
    Unknown(Value, Value),
    /// It names nothing, and there is no stream for such messages.
    Unclaimed(Value),
}

/// One host's streams: its requests in flight, by the id the gateway knows them by (as JSON text), and where
/// what names no request goes.
pub(crate) struct Router<S> {
    requests: HashMap<String, Pending<S>>,
    /// Progress token (JSON text, as the gateway knows it) → the request it came with.
    tokens: HashMap<String, String>,
    /// The stream for what names no request (a session's GET stream).
    listening: Option<S>,
    /// Whether what names no request goes to the listening stream or, without one, to the newest request's.
    spills: bool,
    next: u64,
}

/// A request id as the router keys it.
pub(crate) fn key_of(id: &Value) -> String {
    id.to_string()
}

impl<S: Stream> Router<S> {
    /// A router that drops what names no request (`spills` false) or hands it to the listening stream, else the
    /// newest request's (the server may speak there about a running request).
    pub(crate) fn new(spills: bool) -> Router<S> {
        Router {
            requests: HashMap::new(),
            tokens: HashMap::new(),
            listening: None,
            spills,
            next: 0,
        }
    }

    /// A request of the host, which the gateway knows by `key` (see [`key_of`]): its messages go to `stream`,
    /// given back the host's `id` and, with `token` (as the gateway knows it, and as the host wrote it), its
    /// progress token.
    pub(crate) fn open(
        &mut self,
        key: String,
        id: Value,
        token: Option<(Value, Value)>,
        principal: String,
        stream: S,
    ) {
        // A request under a key still open (its host used the id again) takes its place.
        let _ = self.take(&key);
        let token = token.map(|(known, written)| (key_of(&known), written));
        if let Some((known, _)) = &token {
            self.tokens.insert(known.clone(), key.clone());
        }
        self.next += 1;
        let pending = Pending {
            stream,
            id,
            token,
            principal,
            order: self.next,
        };
        self.requests.insert(key, pending);
    }

    /// What names no request goes to `stream` from now on.
    pub(crate) fn listen(&mut self, stream: S) {
        self.listening = Some(stream);
    }

    /// The request `key` is no longer awaited (its stream closed, or it went elsewhere): its stream.
    pub(crate) fn take(&mut self, key: &str) -> Option<S> {
        let pending = self.requests.remove(key)?;
        self.forget_token(key, &pending);
        Some(pending.stream)
    }

    pub(crate) fn is_open(&self, key: &str) -> bool {
        self.requests.contains_key(key)
    }

    /// The request in flight that `principal` calls `id`, taken: its key and stream. None when no request or
    /// more than one answers to that id (a cancel notice must name one request).
    pub(crate) fn take_named(&mut self, principal: &str, id: &Value) -> Option<(String, S)> {
        let mut named = self
            .requests
            .iter()
            .filter(|(_, p)| p.principal == principal && &p.id == id)
            .map(|(key, _)| key);
        let key = named.next()?.clone();
        if named.next().is_some() {
            return None;
        }
        self.take(&key).map(|stream| (key, stream))
    }

    /// Whether nothing is awaited and nobody listens: no request's stream is open, nor a listening one.
    pub(crate) fn is_idle(&self) -> bool {
        self.requests.values().all(|p| !p.stream.is_open())
            && self.listening.as_ref().is_none_or(|s| !s.is_open())
    }

    /// Hands `message` to `deliver` with the stream it belongs to, its host's id and token given back. A response
    /// ends its request (the stream is dropped after `deliver`, which ends it).
    pub(crate) fn route(&mut self, mut message: Value, deliver: impl FnOnce(&S, Value)) -> Routed {
        if self.spills {
            self.forget_closed();
        }
        let shape = shape_of(&message);
        if shape == Shape::Response {
            let key = key_of(&message["id"]);
            let Some(pending) = self.requests.remove(&key) else {
                let id = message["id"].clone();
                return Routed::Unknown(id, message);
            };
            self.forget_token(&key, &pending);
            message["id"] = pending.id;
            deliver(&pending.stream, message);
            return Routed::Delivered;
        }
        let params = message.get("params");
        if let Some(token) = params.and_then(|p| p.get("progressToken")).cloned() {
            let pending = self
                .tokens
                .get(&key_of(&token))
                .and_then(|key| self.requests.get(key));
            let Some(pending) = pending else {
                return Routed::Unknown(token, message);
            };
            if let Some((_, written)) = &pending.token {
                message["params"]["progressToken"] = written.clone();
            }
            deliver(&pending.stream, message);
            return Routed::Delivered;
        }
        let listen = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_SUBSCRIPTION))
            .cloned();
        if let Some(listen) = listen {
            let Some(pending) = self.requests.get(&key_of(&listen)) else {
                return Routed::Unknown(listen, message);
            };
            message["params"]["_meta"][META_SUBSCRIPTION] = pending.id.clone();
            deliver(&pending.stream, message);
            return Routed::Delivered;
        }
        if shape == Shape::Other {
            // An answer to nothing (an error without an id): no stream of a request waits for it.
            return Routed::Unclaimed(message);
        }
        self.spill(message, deliver)
    }

    /// Requests whose streams closed: forgotten, with their tokens (their host reads nothing more of them).
    fn forget_closed(&mut self) {
        if self.requests.values().all(|p| p.stream.is_open()) {
            return;
        }
        let closed: Vec<String> = self
            .requests
            .iter()
            .filter(|(_, p)| !p.stream.is_open())
            .map(|(key, _)| key.clone())
            .collect();
        for key in closed {
            let _ = self.take(&key);
        }
    }

    /// What names no request: to the listening stream, else the newest request's, if this router spills.
    fn spill(&mut self, message: Value, deliver: impl FnOnce(&S, Value)) -> Routed {
        if !self.spills {
            return Routed::Unclaimed(message);
        }
        let listening = self.listening.as_ref().filter(|s| s.is_open());
        let newest = || {
            self.requests
                .values()
                .max_by_key(|p| p.order)
                .map(|p| &p.stream)
        };
        match listening.or_else(newest) {
            Some(stream) => {
                deliver(stream, message);
                Routed::Delivered
            }
            None => Routed::Unclaimed(message),
        }
    }

    /// The gateway that was to answer has gone: every request awaited, with the error that answers it (given
    /// back its host's id), and the router forgets them.
    pub(crate) fn abandon(&mut self, why: &str) -> Vec<(S, Value)> {
        self.tokens.clear();
        self.requests
            .drain()
            .map(|(_, p)| {
                (
                    p.stream,
                    error_to(Some(p.id), rpc::INTERNAL_ERROR, why, None),
                )
            })
            .collect()
    }

    /// As [`Router::abandon`], for the request `key` alone.
    pub(crate) fn abandon_one(&mut self, key: &str, why: &str) -> Option<(S, Value)> {
        let pending = self.requests.remove(key)?;
        self.forget_token(key, &pending);
        let error = error_to(Some(pending.id), rpc::INTERNAL_ERROR, why, None);
        Some((pending.stream, error))
    }

    /// Forgets the token of request `key`, unless another request has taken it since.
    fn forget_token(&mut self, key: &str, pending: &Pending<S>) {
        if let Some((known, _)) = &pending.token {
            if self.tokens.get(known).is_some_and(|k| k == key) {
                self.tokens.remove(known);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::cell::Cell;

    /// A stream that is a name, open unless closed.
    #[derive(Clone, Debug, PartialEq)]
    struct Named(&'static str, bool);

    impl Stream for Named {
        fn is_open(&self) -> bool {
            self.1
        }
    }

    fn routed(router: &mut Router<Named>, message: Value) -> Option<(&'static str, Value)> {
        let got = Cell::new(None);
        router.route(message, |s, m| got.set(Some((s.0, m))));
        got.into_inner()
    }

    #[test]
    fn a_response_ends_its_request_with_the_hosts_id_back() {
        let mut r = Router::new(false);
        r.open(
            key_of(&json!("g-1")),
            json!(7),
            None,
            String::new(),
            Named("a", true),
        );
        let (to, m) = routed(
            &mut r,
            json!({ "jsonrpc": "2.0", "id": "g-1", "result": {} }),
        )
        .unwrap();
        assert_eq!((to, m["id"].clone()), ("a", json!(7)));
        assert!(!r.is_open(&key_of(&json!("g-1"))));
        let again = r.route(
            json!({ "jsonrpc": "2.0", "id": "g-1", "result": {} }),
            |_, _| {},
        );
        assert!(matches!(again, Routed::Unknown(id, _) if id == json!("g-1")));
    }

    #[test]
    fn progress_goes_by_its_token_and_a_listen_by_its_subscription() {
        let mut r = Router::new(false);
        let token = Some((json!("g-1"), json!("mine")));
        r.open(
            key_of(&json!("g-1")),
            json!(1),
            token,
            String::new(),
            Named("call", true),
        );
        r.open(
            key_of(&json!("g-2")),
            json!(2),
            None,
            String::new(),
            Named("listen", true),
        );
        let progress =
            json!({ "method": "notifications/progress", "params": { "progressToken": "g-1" } });
        let (to, m) = routed(&mut r, progress).unwrap();
        assert_eq!(
            (to, &m["params"]["progressToken"]),
            ("call", &json!("mine"))
        );
        let changed = json!({ "method": "notifications/tools/list_changed",
            "params": { "_meta": { META_SUBSCRIPTION: "g-2" } } });
        let (to, m) = routed(&mut r, changed).unwrap();
        assert_eq!(
            (to, &m["params"]["_meta"][META_SUBSCRIPTION]),
            ("listen", &json!(2))
        );
        let stray = r.route(
            json!({ "method": "notifications/message" }),
            |_, _| panic!(),
        );
        assert!(matches!(stray, Routed::Unclaimed(_)));
    }

    #[test]
    fn what_names_no_request_spills_to_the_listening_stream_else_the_newest_open_request() {
        let mut r = Router::new(true);
        r.open(
            key_of(&json!(1)),
            json!(1),
            None,
            String::new(),
            Named("old", true),
        );
        r.open(
            key_of(&json!(2)),
            json!(2),
            None,
            String::new(),
            Named("new", true),
        );
        r.open(
            key_of(&json!(3)),
            json!(3),
            None,
            String::new(),
            Named("closed", false),
        );
        let ask = json!({ "jsonrpc": "2.0", "id": "s-1", "method": "elicitation/create" });
        assert_eq!(routed(&mut r, ask.clone()).unwrap().0, "new");
        r.listen(Named("get", true));
        assert_eq!(routed(&mut r, ask).unwrap().0, "get");
    }

    #[test]
    fn abandoned_requests_are_answered_with_their_hosts_ids() {
        let mut r = Router::new(false);
        r.open(
            key_of(&json!("g-1")),
            json!("a"),
            None,
            "me".into(),
            Named("a", true),
        );
        r.open(
            key_of(&json!("g-2")),
            json!("b"),
            None,
            "me".into(),
            Named("b", true),
        );
        let (stream, error) = r.abandon_one(&key_of(&json!("g-2")), "gone").unwrap();
        assert_eq!(
            (stream.0, &error["id"], &error["error"]["message"]),
            ("b", &json!("b"), &json!("gone"))
        );
        let rest = r.abandon("gone too");
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].1["id"], json!("a"));
        assert!(r.is_idle());
    }

    #[test]
    fn a_cancel_notice_takes_only_the_one_request_its_sender_calls_that() {
        let mut r = Router::new(false);
        r.open(
            key_of(&json!("g-1")),
            json!(5),
            None,
            "alice".into(),
            Named("a", true),
        );
        r.open(
            key_of(&json!("g-2")),
            json!(5),
            None,
            "bob".into(),
            Named("b", true),
        );
        r.open(
            key_of(&json!("g-3")),
            json!(6),
            None,
            "bob".into(),
            Named("c", true),
        );
        r.open(
            key_of(&json!("g-4")),
            json!(6),
            None,
            "bob".into(),
            Named("d", true),
        );
        assert_eq!(r.take_named("mallory", &json!(5)), None);
        assert_eq!(
            r.take_named("bob", &json!(6)),
            None,
            "two of bob's are called 6"
        );
        let (key, stream) = r.take_named("alice", &json!(5)).unwrap();
        assert_eq!((key, stream.0), (key_of(&json!("g-1")), "a"));
    }

    #[test]
    fn a_token_two_requests_share_stays_with_the_one_still_running() {
        let mut r = Router::new(true);
        let token = || Some((json!("t"), json!("t")));
        r.open(
            key_of(&json!(1)),
            json!(1),
            token(),
            String::new(),
            Named("first", true),
        );
        r.open(
            key_of(&json!(2)),
            json!(2),
            token(),
            String::new(),
            Named("second", true),
        );
        routed(&mut r, json!({ "id": 1, "result": {} }));
        let progress =
            json!({ "method": "notifications/progress", "params": { "progressToken": "t" } });
        assert_eq!(routed(&mut r, progress).unwrap().0, "second");
    }

    #[test]
    fn an_answer_to_nothing_is_not_spilled_onto_a_stream() {
        let mut r = Router::new(true);
        r.listen(Named("get", true));
        let error = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32600 } });
        assert!(matches!(
            r.route(error, |_, _| panic!()),
            Routed::Unclaimed(_)
        ));
    }

    #[test]
    fn shapes() {
        assert_eq!(shape_of(&json!({ "id": 1, "method": "m" })), Shape::Request);
        assert_eq!(shape_of(&json!({ "method": "m" })), Shape::Notification);
        assert_eq!(
            shape_of(&json!({ "id": "x", "result": {} })),
            Shape::Response
        );
        assert_eq!(
            shape_of(&json!({ "id": null, "method": "m" })),
            Shape::Other
        );
        assert_eq!(shape_of(&json!([])), Shape::Other);
    }
}
