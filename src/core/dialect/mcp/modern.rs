//! MCP's stateless era (revision 2026-07-28 and later), the server's side: what a request that carries its
//! version in `_meta` needs beyond the legacy codec.
//!
//! - Every request says its version, its client and what that client can do; nothing is negotiated, so a
//!   modern call runs without a session, with the features its own `_meta` declares.
//! - A server sends no requests. A handler's `ctx.elicit` answers its call with an `InputRequiredResult`
//!   (`resultType: 'input_required'`, the question under a key, and an opaque `requestState`) while the handler
//!   keeps waiting; the client retries the call with a new id, the answer in `inputResponses` and the same
//!   `requestState`, and the retry's response is the call's outcome. The state is a key into a table here: one
//!   that is not in it (altered, already used, or withdrawn because the call ended or nobody retried in time) is
//!   refused, and one presented with another tool or other arguments than its call's is refused.
//! - `subscriptions/listen` is the only way a modern client hears of changes: acknowledged first, then each
//!   change carries the listen's id; a server sends `notifications/cancelled` for nothing but tearing a listen
//!   down.

use std::collections::VecDeque;

use super::super::super::map::StrMap;
use super::super::super::message::Features;
use super::super::super::payload::{Kind, Payload, Wire};
use super::super::super::text::push_u64;

/// The `_meta` keys of the stateless era.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

/// The stateless revisions this SDK speaks, newest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// JSON-RPC errors of the stateless era.
pub const UNSUPPORTED_VERSION: i32 = -32022;

/// A modern request's era, read from its `_meta`.
pub enum Era {
    /// No version in `_meta`: a legacy request (or `initialize`, which opens a legacy session).
    Legacy,
    /// A version this SDK speaks.
    Modern,
    /// A version it does not: answered with -32022 and the versions it does.
    Unsupported(String),
}

/// Reads the era of a request from its params.
pub fn era_of<P: Wire>(params: &P) -> Era {
    let Some(v) = params.get_object("_meta").and_then(|m| m.get(META_VERSION)) else {
        return Era::Legacy;
    };
    match v.as_string() {
        Some(s) if MODERN_VERSIONS.contains(&s.as_str()) => Era::Modern,
        Some(s) => Era::Unsupported(s),
        None => Era::Unsupported(v.json_text()),
    }
}

/// What a modern request's client declared it can do: elicitation (answered by retrying), progress when it
/// gives a token.
pub fn features_of<P: Payload>(params: &P) -> Features {
    let elicitation = params
        .get_object("_meta")
        .and_then(|m| m.get_object(META_CLIENT_CAPABILITIES))
        .is_some_and(|c| c.get_object("elicitation").is_some());
    Features {
        notifications: false,
        progress: true,
        elicitation,
        allowed_requests: None,
        answer_by_retry: true,
    }
}

/// A modern call the app is running.
struct Call<P> {
    /// The request whose response is the call's next word (the call's own, then each retry's); `None` while
    /// the call waits for a retry (its last response asked for input).
    reply: Option<String>,
    tool: String,
    /// Its arguments as JSON text: a retry must bring the same.
    arguments: String,
    /// The elicitations it asked, waiting to be put to the client one at a time: (id, key, request params).
    asks: VecDeque<Ask<P>>,
    /// The question on the client's screen: the elicitation id and its `requestState`.
    asked: Option<(String, String)>,
    /// The call finished while it waited for a retry: the retry gets this result.
    result: Option<P>,
    /// The `inputResponses` its last request brought: a question asked under one of their keys is answered
    /// from them instead of being put to the client (each once).
    given: Option<P>,
}

struct Ask<P> {
    id: String,
    key: String,
    method: &'static str,
    params: P,
}

/// A `requestState` given out: the call and the question it answers.
struct Pending<P> {
    call_id: String,
    elicit_id: String,
    key: String,
    confirm: bool,
    /// The question, to put again if the retry does not answer it.
    params: P,
}

/// What a retry brought.
pub enum Retry<P> {
    /// The answer to the elicitation `id`, as MCP's `ElicitResult` (`None`: the retry did not answer the key).
    Answer {
        id: String,
        key: String,
        result: Option<P>,
        confirm: bool,
        params: P,
    },
    /// The call had finished: its result is queued as the retry's response.
    Finished,
    /// Not a state this server gave out for this call, or one already used or withdrawn.
    Refused(&'static str),
}

/// What becomes of a question a handler asks.
pub enum Asked<P> {
    /// The request brought its answer (an `ElicitResult`): the handler gets it, the client is not asked.
    Given(P),
    /// The `InputRequiredResult` to send now, with the request key it answers.
    Put(String, P),
    /// It waits for the question before it, or for a request to answer.
    Queued,
}

/// An open `subscriptions/listen`: its request key, its id as it came, whether it asked for tool list
/// changes, and the tasks it follows (the tasks extension's `taskIds`).
struct Listen<P> {
    key: String,
    id: P,
    tools: bool,
    tasks: Vec<String>,
}

/// The stateless era's state: running modern calls, the states given out, the open listens, and the requests
/// whose responses carry `resultType`.
pub struct Modern<P> {
    calls: StrMap<Call<P>>,
    /// A retry's request id → the call it continues (a cancel may name either).
    aliases: StrMap<String>,
    pending: StrMap<Pending<P>>,
    /// Open `subscriptions/listen`.
    listens: Vec<Listen<P>>,
    /// Requests of the stateless era awaiting our response.
    requests: StrMap<()>,
    next_state: u64,
}

impl<P: Wire> Default for Modern<P> {
    fn default() -> Self {
        Modern {
            calls: StrMap::new(),
            aliases: StrMap::new(),
            pending: StrMap::new(),
            listens: Vec::new(),
            requests: StrMap::new(),
            next_state: 0,
        }
    }
}

impl<P: Wire> Modern<P> {
    /// A modern request arrived: its response carries `resultType`.
    pub fn request(&mut self, key: &str) {
        self.requests.insert(key.to_owned(), ());
    }

    /// Whether request `key` is a modern one awaiting our response.
    pub fn is_request(&self, key: &str) -> bool {
        self.requests.contains_key(key)
    }

    /// Whether the response to `key` is a modern one (and forgets it: one response per request).
    pub fn answered(&mut self, key: &str) -> bool {
        self.requests.remove(key).is_some()
    }

    /// A modern `tools/call` starts (`given`: the `inputResponses` it brought, answers to questions its
    /// handler has not asked yet).
    pub fn call(&mut self, key: &str, tool: &str, arguments: &P, given: Option<P>) {
        let call = Call {
            reply: Some(key.to_owned()),
            tool: tool.to_owned(),
            arguments: arguments.json_text(),
            asks: VecDeque::new(),
            asked: None,
            result: None,
            given,
        };
        self.calls.insert(key.to_owned(), call);
    }

    pub fn is_modern_call(&self, call_id: &str) -> bool {
        self.calls.contains_key(call_id)
    }

    /// The call a request id names: the call's own id, or a retry's.
    pub fn call_of(&self, key: &str) -> String {
        self.aliases
            .get(key)
            .cloned()
            .unwrap_or_else(|| key.to_owned())
    }

    /// Where the call's response goes now: `Some(request key)`, or `None` while it waits for a retry.
    pub fn reply_of(&self, call_id: &str) -> Option<String> {
        self.calls.get(call_id).and_then(|c| c.reply.clone())
    }

    /// The call finished with `response` (a result or an error, already built for `reply`): the call is
    /// forgotten. While it waits for a retry, the result is kept for that retry (`false`: nothing to send now).
    pub fn finish(&mut self, call_id: &str, result: P) -> bool {
        let Some(call) = self.calls.get_mut(call_id) else {
            return true;
        };
        if call.reply.is_none() && call.asked.is_some() {
            call.result = Some(result);
            call.asks.clear();
            return false;
        }
        self.forget(call_id);
        true
    }

    /// Forgets a call and everything that points at it.
    pub fn forget(&mut self, call_id: &str) {
        if self.calls.remove(call_id).is_some() {
            self.aliases.remove_where(|c| c == call_id);
            self.pending.remove_where(|p| p.call_id == call_id);
        }
    }

    /// A handler of a modern call asks for input: answered from what the call's last request brought under
    /// the question's key, or else the call's response asks the client when it can (now, or after the
    /// question before it is answered).
    pub fn ask(
        &mut self,
        call_id: &str,
        elicit_id: &str,
        key: Option<String>,
        method: &'static str,
        params: P,
    ) -> Asked<P> {
        let Some(call) = self.calls.get_mut(call_id) else {
            return Asked::Queued;
        };
        let key = key.unwrap_or_else(|| elicit_id.to_owned());
        if let Some(answer) = call.given.as_mut().and_then(|g| take_answer(g, &key)) {
            return Asked::Given(answer);
        }
        call.asks.push_back(Ask {
            id: elicit_id.to_owned(),
            key,
            method,
            params,
        });
        match self.next_question(call_id) {
            Some((reply, result)) => Asked::Put(reply, result),
            None => Asked::Queued,
        }
    }

    /// Puts the call's next question to the client, if it has an open request and a question waits.
    fn next_question(&mut self, call_id: &str) -> Option<(String, P)> {
        let call = self.calls.get_mut(call_id)?;
        if call.asked.is_some() {
            return None;
        }
        let reply = call.reply.clone()?;
        let ask = call.asks.pop_front()?;
        self.next_state += 1;
        let state = state_token(self.next_state, call_id, &ask.id);
        let call = self.calls.get_mut(call_id)?;
        call.reply = None;
        call.asked = Some((ask.id.clone(), state.clone()));
        self.pending.insert(
            state.clone(),
            Pending {
                call_id: call_id.to_owned(),
                elicit_id: ask.id,
                key: ask.key.clone(),
                confirm: ask.method == "elicitation/confirm",
                params: ask.params.clone(),
            },
        );
        let request = P::object_of(&mut [
            ("method", Some(P::constant("elicitation/create"))),
            ("params", Some(ask.params)),
        ]);
        let mut requests = P::object();
        requests.set(&ask.key, request);
        let result = P::object_of(&mut [
            ("resultType", Some(P::constant("input_required"))),
            ("inputRequests", Some(requests)),
            ("requestState", Some(P::string(&state))),
        ]);
        Some((reply, result))
    }

    /// The app no longer wants the answer to `elicit_id` (its call ended, or nobody retried in time): the
    /// state given out for it is no longer good. Whether it was one of ours.
    pub fn withdraw(&mut self, elicit_id: &str) -> bool {
        let Some(call_id) = self
            .calls
            .iter()
            .find(|(_, c)| {
                c.asks.iter().any(|a| a.id == elicit_id)
                    || c.asked.as_ref().is_some_and(|(id, _)| id == elicit_id)
            })
            .map(|(id, _)| id.clone())
        else {
            return false;
        };
        if let Some(call) = self.calls.get_mut(&call_id) {
            call.asks.retain(|a| a.id != elicit_id);
            if call.asked.as_ref().is_some_and(|(id, _)| id == elicit_id) && call.result.is_none() {
                // Nobody answers it now: a retry that still brings the state is refused.
                if let Some((_, state)) = call.asked.take() {
                    self.pending.remove(&state);
                }
                self.forget(&call_id);
            }
        }
        true
    }

    /// A `tools/call` with a `requestState` (request `key`): the retry of the call that state was given for.
    pub fn retry(
        &mut self,
        key: &str,
        state: &str,
        tool: &str,
        arguments: &P,
        responses: Option<P>,
    ) -> Retry<P> {
        let Some(pending) = self.pending.get(state) else {
            return Retry::Refused("The requestState is unknown, already used or expired");
        };
        let Some(call) = self.calls.get(&pending.call_id) else {
            self.pending.remove(state);
            return Retry::Refused("The requestState is unknown, already used or expired");
        };
        if call.tool != tool || call.arguments != arguments.json_text() {
            return Retry::Refused("The requestState belongs to another call");
        }
        let Some(pending) = self.pending.remove(state) else {
            return Retry::Refused("The requestState is unknown, already used or expired");
        };
        let call_id = pending.call_id.clone();
        self.aliases.insert(key.to_owned(), call_id.clone());
        let Some(call) = self.calls.get_mut(&call_id) else {
            return Retry::Refused("The requestState is unknown, already used or expired");
        };
        call.reply = Some(key.to_owned());
        call.asked = None;
        if call.result.is_some() {
            return Retry::Finished;
        }
        call.given = responses;
        let result = call
            .given
            .as_mut()
            .and_then(|g| take_answer(g, &pending.key));
        Retry::Answer {
            id: pending.elicit_id,
            key: pending.key,
            result,
            confirm: pending.confirm,
            params: pending.params,
        }
    }

    /// The result a finished call kept for its retry, with the request it answers.
    pub fn take_finished(&mut self, call_id: &str) -> Option<(String, P)> {
        let call = self.calls.get_mut(call_id)?;
        let result = call.result.take()?;
        let reply = call.reply.clone()?;
        self.forget(call_id);
        Some((reply, result))
    }

    /// After a retry delivered its answer: the call's next question, if one waits.
    pub fn after_answer(&mut self, call_id: &str) -> Option<(String, P)> {
        self.next_question(call_id)
    }

    /// The question for an elicitation the retry did not answer is put again, with a fresh state.
    pub fn ask_again(
        &mut self,
        call_id: &str,
        elicit_id: &str,
        key: String,
        method: &'static str,
        params: P,
    ) -> Option<(String, P)> {
        let call = self.calls.get_mut(call_id)?;
        call.asks.push_front(Ask {
            id: elicit_id.to_owned(),
            key,
            method,
            params,
        });
        self.next_question(call_id)
    }

    /// A `subscriptions/listen` opens (`id` as it came; `tools`: it asked for tool list changes).
    pub fn listen(&mut self, key: &str, id: P, tools: bool, tasks: Vec<String>) {
        self.listens.push(Listen {
            key: key.to_owned(),
            id,
            tools,
            tasks,
        });
    }

    /// The client cancelled request `key`: whether it was a listen (which then ends).
    pub fn end_listen(&mut self, key: &str) -> bool {
        let before = self.listens.len();
        self.listens.retain(|l| l.key != key);
        self.listens.len() != before
    }

    /// The ids (as they came) of the open listens that asked for tool list changes.
    pub fn tool_listeners(&self) -> impl Iterator<Item = &P> {
        self.listens.iter().filter(|l| l.tools).map(|l| &l.id)
    }

    /// The ids (as they came) of the open listens that follow the task `task_id`.
    pub fn task_listeners<'a>(&'a self, task_id: &'a str) -> impl Iterator<Item = &'a P> {
        self.listens
            .iter()
            .filter(move |l| l.tasks.iter().any(|t| t == task_id))
            .map(|l| &l.id)
    }

    /// Every listen ends (this side is going away): their keys and ids.
    pub fn take_listens(&mut self) -> Vec<(String, P)> {
        std::mem::take(&mut self.listens)
            .into_iter()
            .map(|l| (l.key, l.id))
            .collect()
    }
}

/// A `requestState`: opaque to the client, unique per question. It is a key into the server's table, so one
/// that was altered names nothing.
/// The answer under `key` in `inputResponses`, taken out so it answers one question only; `None` when it is
/// not there or is no object (not an answer: the question is put to the client).
fn take_answer<P: Wire>(given: &mut P, key: &str) -> Option<P> {
    let answer = given.get_object(key)?;
    given.set(key, P::undefined());
    Some(answer)
}

fn state_token(seq: u64, call_id: &str, elicit_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in call_id.bytes().chain([0]).chain(elicit_id.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut s = String::from("rs1.");
    push_u64(&mut s, seq);
    s.push('.');
    push_u64(&mut s, h ^ seq.rotate_left(17));
    s
}

/// Adds `resultType: 'complete'` to a modern result that has none.
pub fn complete<P: Wire>(result: P) -> P {
    if result.kind() != Kind::Object || result.get("resultType").is_some() {
        return result;
    }
    let mut r = result.shallow_copy();
    r.set("resultType", P::constant("complete"));
    r
}
