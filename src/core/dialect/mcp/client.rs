//! MCP's client role across the eras: it asks `server/discover` first, stays in the stateless era (2026-07-28)
//! when the server answers it, and falls back to `initialize` on anything else, as the revision's versioning
//! rules say for message transports. In the stateless era every request carries the version, who we are and
//! what we accept in `_meta`; a call whose response asks for input (`InputRequiredResult`) is put to the agent's
//! `onElicitation`, then retried with a new id, the answer and the server's `requestState`; and tool list
//! changes come through a `subscriptions/listen` opened once connected.

use super::super::super::map::StrMap;
use super::super::super::payload::{Kind, Wire};
use super::super::super::text::push_u64;
use super::modern::{META_CLIENT_CAPABILITIES, META_VERSION, MODERN_VERSIONS};

pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// Which era the server speaks, as far as we know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEra {
    /// `server/discover` is on its way.
    Probing,
    Modern,
    Legacy,
}

/// A call of ours in the stateless era.
struct Call<P> {
    tool: String,
    arguments: Option<P>,
    /// The `_meta.progressToken` it carries, as sent.
    token: Option<P>,
    /// The request that continues it now (the call's own id, then each retry's); `None` while the agent
    /// answers a question (no request of ours is open for it).
    current: Option<String>,
    /// The question the agent is answering: (our elicitation id, the server's key, its `requestState`).
    asked: Option<(String, String, Option<P>)>,
    retries: u32,
}

/// What a response to a call says, in the stateless era.
pub enum Answered<P> {
    /// The call's outcome (a `CallToolResult`, or an error): the call is done.
    Done,
    /// It asks the agent a question: our elicitation id and the request to put.
    Ask {
        call_id: String,
        elicit_id: String,
        request: P,
    },
    /// It asks for something this client cannot give (sampling, roots): the call fails.
    Unanswerable { call_id: String, method: String },
}

pub struct Client<P> {
    pub era: ClientEra,
    /// `{ name, version }` as `_meta` names us.
    info: Option<P>,
    /// The `_meta` of the stateless era, made once from `info`; each request gets a copy.
    meta: Option<P>,
    /// The `initialize` to send if the server turns out to be legacy: its id and params.
    fallback: Option<(String, P)>,
    calls: StrMap<Call<P>>,
    /// A retry's id → its call.
    aliases: StrMap<String>,
    /// Our `subscriptions/listen`, once open.
    pub listen: Option<String>,
    /// The version we were told to speak (no fallback to the other era).
    pub pinned: Option<String>,
}

impl<P: Wire> Default for Client<P> {
    fn default() -> Self {
        Client {
            era: ClientEra::Probing,
            info: None,
            meta: None,
            fallback: None,
            calls: StrMap::new(),
            aliases: StrMap::new(),
            listen: None,
            pinned: None,
        }
    }
}

impl<P: Wire> Client<P> {
    /// Speak `version` only: a legacy one skips the probe, a modern one never falls back.
    pub fn pin(&mut self, version: &str) {
        self.pinned = Some(version.to_owned());
        if !MODERN_VERSIONS.contains(&version) {
            self.era = ClientEra::Legacy;
        }
    }

    /// The probe goes out: `info` names us, and `initialize` (with `id` and `params`) is the fallback (unless
    /// a modern version is pinned).
    pub fn probe(&mut self, info: P, id: &str, initialize: P) {
        self.info = Some(info);
        self.meta = Some(self.fresh_meta());
        if self.pinned.is_none() {
            self.fallback = Some((id.to_owned(), initialize));
        }
    }

    /// The legacy `initialize` to send instead, once the probe failed.
    pub fn fall_back(&mut self) -> Option<(String, P)> {
        self.era = ClientEra::Legacy;
        self.fallback.take()
    }

    /// Whether a `server/discover` result says the server speaks a version of ours.
    pub fn accepts(&mut self, result: &P) -> bool {
        let versions = result.get("supportedVersions");
        let ok = versions.as_ref().is_some_and(|v| {
            (0..v.array_len().unwrap_or(0))
                .filter_map(|i| v.index(i)?.as_string())
                .any(|s| MODERN_VERSIONS.contains(&s.as_str()))
        });
        if ok {
            self.era = ClientEra::Modern;
            self.fallback = None;
        }
        ok
    }

    pub fn modern(&self) -> bool {
        self.era == ClientEra::Modern
    }

    /// The `_meta` every request of the stateless era carries.
    pub fn meta(&self) -> P {
        match &self.meta {
            Some(m) => m.shallow_copy(),
            None => self.fresh_meta(),
        }
    }

    /// [`Client::meta`] with the call's `progressToken`, if it has one.
    pub fn meta_with_token(&self, token: Option<P>) -> P {
        let mut meta = self.meta();
        if let Some(t) = token {
            meta.set("progressToken", t);
        }
        meta
    }

    fn fresh_meta(&self) -> P {
        let caps = P::object_of(&mut [("elicitation", Some(P::object()))]);
        P::object_of(&mut [
            (META_VERSION, Some(P::constant(MODERN_VERSIONS[0]))),
            (META_CLIENT_INFO, self.info.clone()),
            (META_CLIENT_CAPABILITIES, Some(caps)),
        ])
    }

    /// `params` with our `_meta` added (keys already in its `_meta` stay).
    pub fn with_meta(&self, params: Option<P>) -> P {
        let mut params = params
            .filter(|p| p.kind() == Kind::Object)
            .map(|p| p.shallow_copy())
            .unwrap_or_else(P::object);
        let mut meta = self.meta();
        if let Some(own) = params.get_object("_meta") {
            for k in own.keys() {
                if let Some(v) = own.get(&k) {
                    meta.set(&k, v);
                }
            }
        }
        params.set("_meta", meta);
        params
    }

    /// A call goes out.
    pub fn call(&mut self, call_id: &str, tool: &str, arguments: Option<P>, token: Option<P>) {
        self.calls.insert(
            call_id.to_owned(),
            Call {
                tool: tool.to_owned(),
                arguments,
                token,
                current: Some(call_id.to_owned()),
                asked: None,
                retries: 0,
            },
        );
    }

    /// The call a response's id belongs to.
    pub fn call_of(&self, id: &str) -> String {
        self.aliases
            .get(id)
            .cloned()
            .unwrap_or_else(|| id.to_owned())
    }

    /// The request to cancel for `call_id`: `None` while no request of ours is open for it.
    pub fn open_request(&self, call_id: &str) -> Option<String> {
        match self.calls.get(call_id) {
            Some(c) => c.current.clone(),
            None => Some(call_id.to_owned()),
        }
    }

    /// The call is over (settled, or cancelled by us).
    pub fn forget(&mut self, call_id: &str) {
        if self.calls.remove(call_id).is_some() {
            self.aliases.remove_where(|c| c == call_id);
        }
    }

    /// A response to one of our calls (`id` as it came back): done, or a question.
    pub fn answered(&mut self, id: &str, result: Option<&P>) -> Answered<P> {
        let call_id = self.call_of(id);
        let input = result
            .filter(|r| r.get_string("resultType").as_deref() == Some("input_required"))
            .cloned();
        let Some(input) = input else {
            self.forget(&call_id);
            return Answered::Done;
        };
        let requests = input.get_object("inputRequests");
        // One question at a time: the server asks again for what a retry did not answer.
        let first = requests.as_ref().and_then(|r| {
            let key = r.keys().into_iter().next()?;
            let request = r.get_object(&key)?;
            Some((key, request))
        });
        let state = input.get("requestState");
        let Some(call) = self.calls.get_mut(&call_id) else {
            return Answered::Done;
        };
        call.current = None;
        match first {
            Some((key, request)) => {
                let method = request.get_string("method").unwrap_or_default();
                if method != "elicitation/create" {
                    self.forget(&call_id);
                    return Answered::Unanswerable { call_id, method };
                }
                let mut elicit_id = call_id.clone();
                elicit_id.push_str("#input-");
                push_u64(&mut elicit_id, u64::from(call.retries) + 1);
                call.asked = Some((elicit_id.clone(), key, state));
                Answered::Ask {
                    call_id,
                    elicit_id,
                    request,
                }
            }
            None => {
                // Only a state: retry at once, with nothing to add.
                call.asked = Some((String::new(), String::new(), state));
                let elicit_id = String::new();
                Answered::Ask {
                    call_id,
                    elicit_id,
                    request: P::undefined(),
                }
            }
        }
    }

    /// The agent answered question `elicit_id` (`answer`: MCP's `ElicitResult`): the retry to send, with its
    /// new id. `None` if the question is not one of ours.
    pub fn retry(&mut self, elicit_id: &str, answer: Option<P>) -> Option<(String, String, P)> {
        let call_id = self
            .calls
            .iter()
            .find(|(_, c)| c.asked.as_ref().is_some_and(|(id, _, _)| id == elicit_id))
            .map(|(id, _)| id.clone())?;
        let meta = self.meta();
        let call = self.calls.get_mut(&call_id)?;
        let (_, key, state) = call.asked.take()?;
        call.retries += 1;
        let mut id = call_id.clone();
        id.push_str("#retry-");
        push_u64(&mut id, u64::from(call.retries));
        call.current = Some(id.clone());
        let mut meta = meta;
        if let Some(t) = &call.token {
            meta.set("progressToken", t.clone());
        }
        let responses = match answer {
            Some(a) if !key.is_empty() => {
                let mut r = P::object();
                r.set(&key, a);
                Some(r)
            }
            _ => None,
        };
        let params = P::object_of(&mut [
            ("name", Some(P::string(&call.tool))),
            ("arguments", call.arguments.clone()),
            ("_meta", Some(meta)),
            ("inputResponses", responses),
            ("requestState", state),
        ]);
        self.aliases.insert(id.clone(), call_id.clone());
        Some((id, call_id, params))
    }
}
