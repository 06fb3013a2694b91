//! The app side of one ABP connection: the session, running and queued calls, the cancel table, progress
//! coalescing and elicitation bookkeeping. Handlers themselves live outside (in JavaScript); this state
//! machine tells the glue when to start or abort one and what to send.

use std::collections::VecDeque;

use super::capability::{Changes, Registry, PROTOCOL_VERSION};
use super::dialect::Policy;
use super::error::{encode_error, AbpError, ErrorCode};
use super::map::{str_hash, StrMap, StrSet};
use super::message::{
    CancelVerdict, Control, ControlOut, Features, FromApp, MalformedKind, Outcome, ToApp,
};
use super::payload::Wire;
use super::text::{text, IdGen};
use super::timers::{TimerId, Timers};
use super::trace::Trace;

#[derive(Clone, Debug)]
pub struct AppConfig {
    /// Calls beyond this many wait in a FIFO queue (per session). `None`: no limit.
    pub max_concurrent: Option<usize>,
    /// Progress for one call is sent at most once per this many milliseconds; the latest value wins.
    pub progress_interval: f64,
    /// How many finished call ids each session remembers for the cancel table.
    pub remember: usize,
    /// An `initialize` with a new id while a session is active ends that session and opens a new one
    /// (`window.abp`, where a reattaching automation agent must not be locked out) instead of being answered
    /// ALREADY_INITIALIZED (postMessage and WebSocket sessions).
    pub reinitialize: bool,
    /// The dialect's rules (ABP by default).
    pub policy: Policy,
    /// How long a call whose elicitation is answered by a retry ([`Features::answer_by_retry`]) waits for
    /// that retry before it is cancelled, in milliseconds.
    pub retry_wait: f64,
}

/// How long an MCP client has to answer an elicitation by retrying its call: the time a person takes to fill
/// in a form, bounded so that a client that went away does not keep the handler waiting for ever.
pub const DEFAULT_RETRY_WAIT_MS: f64 = 10.0 * 60.0 * 1000.0;

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            max_concurrent: None,
            progress_interval: 16.0,
            remember: 1024,
            reinitialize: false,
            policy: Policy::ABP,
            retry_wait: DEFAULT_RETRY_WAIT_MS,
        }
    }
}

/// What the app state machine asks for. `T` is what goes on the wire: the machine's own [`FromApp`] messages,
/// or the encoded [`Transmit`](super::connection::Transmit) that an
/// [`AppConnection`](super::connection::AppConnection) makes of them.
#[derive(Clone, Debug)]
pub enum AppOutput<P, T = FromApp<P>> {
    Transmit(T),
    /// Run the handler for `capability` with a fresh AbortSignal.
    Start {
        call_id: String,
        capability: String,
        params: P,
        progress_token: Option<String>,
        /// The caller's trace context, for `ctx.trace`.
        trace: Option<Trace>,
    },
    /// Abort the running handler's signal with `reason`.
    Abort {
        call_id: String,
        reason: Option<String>,
    },
    /// Resolve `ctx.elicit()`.
    ElicitDone {
        id: String,
        end: ElicitEnd<P>,
    },
    SessionOpened {
        session_id: String,
    },
    SessionClosed,
    /// The agent refused the app's introduction (a protocol it cannot speak): the connection is over, and
    /// introducing the app again on it would only be refused again.
    HandshakeRefused {
        error: AbpError<P>,
    },
}

impl<P, T> AppOutput<P, T> {
    /// The same event for another kind of transmit; `Err` holds a transmit, which has no such counterpart.
    pub(crate) fn event<U>(self) -> Result<AppOutput<P, U>, T> {
        use AppOutput as O;
        Ok(match self {
            O::Transmit(m) => return Err(m),
            O::Start {
                call_id,
                capability,
                params,
                progress_token,
                trace,
            } => O::Start {
                call_id,
                capability,
                params,
                progress_token,
                trace,
            },
            O::Abort { call_id, reason } => O::Abort { call_id, reason },
            O::ElicitDone { id, end } => O::ElicitDone { id, end },
            O::SessionOpened { session_id } => O::SessionOpened { session_id },
            O::SessionClosed => O::SessionClosed,
            O::HandshakeRefused { error } => O::HandshakeRefused { error },
        })
    }
}

/// How an elicitation the app asked ended.
#[derive(Clone, Debug)]
pub enum ElicitEnd<P> {
    /// The agent's `ElicitationResponse`.
    Answer(P),
    /// The call that asked (or the session) ended first.
    Ended,
    /// Its `timeout` passed without an answer.
    TimedOut,
}

impl<P: Wire> ElicitEnd<P> {
    /// What `ctx.elicit()` resolves to: the agent's answer, or a response that says why there is none
    /// (`cancelled` when the call ended first, TIMEOUT when the elicitation's own timeout passed).
    pub fn into_response(self) -> P {
        let error = match self {
            ElicitEnd::Answer(r) => return r,
            ElicitEnd::Ended => AbpError::cancelled(Some("The call ended first")),
            ElicitEnd::TimedOut => AbpError::new(ErrorCode::Timeout, "The elicitation timed out"),
        };
        let cancelled = error.code == ErrorCode::Cancelled;
        P::object_of(&mut [
            ("success", Some(P::boolean(false))),
            ("cancelled", cancelled.then(|| P::boolean(true))),
            ("error", Some(encode_error(error))),
        ])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finished {
    Completed,
    Cancelled,
    /// Cancelled before it arrived (the cancel overtook the call): answered "not found", and the call is
    /// refused if it shows up later, since the agent has already settled it.
    Tombstone,
}

struct Active<P> {
    msg_id: String,
    started: f64,
    /// Order of arrival, for deterministic ordering of aborts.
    seq: u64,
    token: Option<String>,
    /// Latest progress not yet sent.
    progress: Option<P>,
    /// When it goes out, if it waits.
    progress_timer: Option<TimerId>,
    last_progress: f64,
    /// When the app gives up on it (dialects where the app owns the timeout).
    deadline: Option<TimerId>,
    /// Its `timeoutMs`, for the message.
    timeout_ms: Option<f64>,
    /// What its request enabled, when it says so itself (no session).
    features: Option<Features>,
}

/// A call as it arrived: started at once, or waiting for a free slot under `max_concurrent`.
struct Queued<P> {
    msg_id: String,
    call_id: String,
    capability: String,
    params: P,
    token: Option<String>,
    trace: Option<Trace>,
    received: f64,
    timeout_ms: Option<f64>,
    features: Option<Features>,
}

struct Session {
    id: String,
    init_id: String,
    features: Features,
}

/// An elicitation the app asked and is waiting on.
struct Elicit {
    /// The call that asked.
    call_id: Option<String>,
    /// When it times out (its request's `timeout`), or when its call is cancelled for want of a retry.
    timer: Option<TimerId>,
    /// It is answered by the agent retrying the call: when `timer` fires, the call is cancelled.
    by_retry: bool,
}

/// What a deadline in [`AppConn`]'s timers is for.
enum Due {
    /// A call's held-back progress is due (by call id).
    Progress(String),
    /// A call's own timeout (by call id).
    Call(String),
    /// An elicitation's own timeout (by request id).
    Elicit(String),
}

/// Bounded memory of finished calls: the last `cap` ids, each kept once (an id in an arrival-order queue and
/// again as a map key would cost twice the memory).
///
/// Found through a hash table of ring positions (open addressing, linear probing). A binary search over the
/// ids sorted, as before, compared dozens of ids scattered through memory per call and moved the positions
/// once full: a visible share of the app's wasm time per round trip in a browser profile (BENCHMARKS.md has
/// the figures).
/// The hash is not keyed, so ids chosen to collide can make a lookup walk the table: at most `2 * cap`
/// comparisons, the same bound as scanning the ring.
struct Recent {
    /// In arrival order once `head` is taken into account: the oldest entry is at `head` when full. Each id with
    /// its hash, so that probing and moving entries compare numbers and rarely touch the ids' text.
    ring: Vec<(String, u32, Finished)>,
    /// Ring position + 1 for each id at its hash's slot or the next free one after; 0 is an empty slot. A power
    /// of two at least twice `cap`, made with the first insert.
    table: Vec<u32>,
    head: usize,
    cap: usize,
}

impl Recent {
    fn new(cap: usize) -> Recent {
        Recent {
            ring: Vec::new(),
            table: Vec::new(),
            head: 0,
            cap: cap.clamp(1, 1 << 24),
        }
    }

    fn mask(&self) -> usize {
        self.table.len().wrapping_sub(1)
    }

    /// The table slot that holds `id` (Ok), or the free slot where it would go (Err). `table` must not be
    /// empty.
    fn find(&self, id: &str, hash: u32) -> Result<usize, usize> {
        let mask = self.mask();
        let mut slot = hash as usize & mask;
        loop {
            match self.table[slot] {
                0 => return Err(slot),
                at => {
                    let (text, h, _) = &self.ring[at as usize - 1];
                    if *h == hash && text == id {
                        return Ok(slot);
                    }
                }
            }
            slot = (slot + 1) & mask;
        }
    }

    fn get(&self, id: &str) -> Option<&Finished> {
        if self.table.is_empty() {
            return None;
        }
        let slot = self.find(id, str_hash(id)).ok()?;
        self.ring
            .get(self.table[slot] as usize - 1)
            .map(|(_, _, how)| how)
    }

    fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Empties `slot` and moves later entries of its probe run back, so that every lookup still finds them.
    fn vacate(&mut self, mut slot: usize) {
        let mask = self.mask();
        let mut next = (slot + 1) & mask;
        while self.table[next] != 0 {
            let home = self.ring[self.table[next] as usize - 1].1 as usize & mask;
            // `next` may move to `slot` if its home is not in the cyclic range (slot, next].
            if (next.wrapping_sub(home) & mask) >= (next.wrapping_sub(slot) & mask) {
                self.table[slot] = self.table[next];
                slot = next;
            }
            next = (next + 1) & mask;
        }
        self.table[slot] = 0;
    }

    /// Records how `id` finished: updates an id already there, else adds it, forgetting the oldest when full.
    fn insert(&mut self, id: String, how: Finished) {
        if self.table.is_empty() {
            self.table = vec![0; (2 * self.cap).next_power_of_two()];
        }
        let hash = str_hash(&id);
        let free = match self.find(&id, hash) {
            Ok(slot) => {
                let at = self.table[slot] as usize - 1;
                self.ring[at].2 = how;
                return;
            }
            Err(free) => free,
        };
        if self.ring.len() < self.cap {
            self.ring.push((id, hash, how));
            self.table[free] = self.ring.len() as u32;
            return;
        }
        // Full: the oldest entry's ring position takes the new id.
        let at = self.head;
        self.head = (at + 1) % self.cap;
        let (old, old_hash, _) = &self.ring[at];
        if let Ok(slot) = self.find(old, *old_hash) {
            self.vacate(slot);
        }
        self.ring[at] = (id, hash, how);
        // Vacating may have moved entries, so look for the free slot again.
        if let Err(free) = self.find(&self.ring[at].0, hash) {
            self.table[free] = at as u32 + 1;
        }
    }

    fn clear(&mut self) {
        self.ring.clear();
        self.table.fill(0);
        self.head = 0;
    }
}

pub struct AppConn<P> {
    config: AppConfig,
    session: Option<Session>,
    ids: IdGen,
    active: StrMap<Active<P>>,
    queued: VecDeque<Queued<P>>,
    queued_ids: StrSet,
    finished: Recent,
    elicits: StrMap<Elicit>,
    /// Every deadline above, in time order.
    timers: Timers<Due>,
    out: VecDeque<AppOutput<P>>,
    next_seq: u64,
    /// The id of our own hello, while it waits for its answer (dialects where the app speaks first).
    hello: Option<String>,
}

/// The app's own timeout when a capability names none (Tesseron's default).
const DEFAULT_APP_TIMEOUT_MS: f64 = 60_000.0;

impl<P: Wire> AppConn<P> {
    pub fn new(config: AppConfig, id_prefix: impl Into<String>) -> Self {
        let cap = config.remember.max(1);
        AppConn {
            config,
            session: None,
            ids: IdGen::new(id_prefix),
            active: StrMap::new(),
            queued: VecDeque::new(),
            queued_ids: StrSet::new(),
            finished: Recent::new(cap),
            elicits: StrMap::new(),
            timers: Timers::new(),
            out: VecDeque::new(),
            next_seq: 0,
            hello: None,
        }
    }

    /// Dialects where the app speaks first: introduces the app (the capabilities go with it, from the
    /// encoder's `Hello`). The session opens when the agent answers. Does nothing in the other dialects.
    pub fn connect(&mut self) {
        if !self.config.policy.app_speaks_first() || self.session.is_some() || self.hello.is_some()
        {
            return;
        }
        let id = self.ids.next_id();
        self.hello = Some(id.clone());
        self.transmit(FromApp::Hello { id });
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.id.as_str())
    }

    /// The id of the `initialize` that opened the current session.
    pub fn session_init_id(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.init_id.as_str())
    }

    /// What the agent of the current session enabled.
    pub fn features(&self) -> Option<&Features> {
        self.session.as_ref().map(|s| &s.features)
    }

    /// The call a running handler's progress token belongs to.
    pub fn call_of_token(&self, token: &str) -> Option<String> {
        self.active
            .iter()
            .find(|(_, a)| a.token.as_deref() == Some(token))
            .map(|(c, _)| c.clone())
    }

    /// Running handlers.
    pub fn active_calls(&self) -> usize {
        self.active.len()
    }

    pub fn queued_calls(&self) -> usize {
        self.queued.len()
    }

    fn transmit(&mut self, m: FromApp<P>) {
        self.out.push_back(AppOutput::Transmit(m));
    }

    fn refuse_call(&mut self, id: String, call_id: String, error: AbpError<P>) {
        self.transmit(FromApp::CallResult {
            id,
            call_id,
            outcome: Outcome::Failure(error),
            duration: 0.0,
            transfer: None,
        });
    }

    /// Feeds one decoded message from the agent.
    pub(crate) fn handle(&mut self, msg: ToApp<P>, now: f64, registry: &Registry<P>) {
        match msg {
            ToApp::Initialize { id, payload } => self.initialize(id, payload),
            ToApp::Welcome {
                id,
                session_id,
                error,
            } if self.config.policy.app_speaks_first()
                && self.hello.as_deref() == Some(id.as_str()) =>
            {
                self.hello_answered(id, session_id, error)
            }
            ToApp::Call {
                id,
                call_id,
                capability,
                params,
                progress_token,
                trace,
                features,
                ..
            } => {
                let call = Queued {
                    msg_id: id,
                    call_id,
                    capability,
                    params,
                    token: progress_token,
                    trace,
                    received: now,
                    timeout_ms: None,
                    features,
                };
                self.call(call, registry)
            }
            ToApp::Cancel {
                id,
                call_id,
                reason,
            } => self.cancel(id, call_id, reason, now),
            ToApp::ElicitationResponse { id, payload } => self.elicitation_answered(id, payload),
            ToApp::ListCapabilities { id } => {
                self.transmit(FromApp::CapabilityList { id });
            }
            ToApp::Malformed {
                kind,
                id,
                call_id,
                reason,
            } => self.malformed(kind, id, call_id.unwrap_or_default(), reason),
            ToApp::Control(m) => self.control(m),
            ToApp::Welcome { .. } => {}
        }
    }

    /// The messages about the connection: a ping answered, a refusal sent, the session ended.
    fn control(&mut self, m: Control) {
        if let Control::Shutdown { .. } = m {
            self.end_session();
        } else if let Some(reply) = m.reply() {
            self.transmit(reply.into());
        }
    }

    /// A call or cancel that cannot be read: refused with INVALID_PARAMS (a call without an id cannot be).
    fn malformed(
        &mut self,
        kind: MalformedKind,
        id: Option<String>,
        call_id: String,
        reason: &'static str,
    ) {
        let error = AbpError::new(ErrorCode::InvalidParams, reason);
        match (kind, id) {
            (MalformedKind::Call, Some(id)) => self.refuse_call(id, call_id, error),
            (MalformedKind::Call, None) => {}
            (MalformedKind::Cancel, id) => self.transmit(FromApp::CancelResult {
                id,
                call_id,
                verdict: CancelVerdict::Refused(error),
            }),
        }
    }

    /// The agent's `initialize`: opens a session (ending any earlier one), or refuses it.
    fn initialize(&mut self, id: String, payload: P) {
        if let Some(s) = &self.session {
            if s.init_id == id {
                // A re-sent initialize (the agent could not know it was answered): same answer.
                let (session_id, features) = (s.id.clone(), s.features.clone());
                return self.transmit(FromApp::InitializeResult {
                    id,
                    session_id,
                    features,
                });
            }
            if !self.config.reinitialize {
                let error =
                    AbpError::new(ErrorCode::AlreadyInitialized, "A session is already active");
                return self.transmit(FromApp::InitializeError { id, error });
            }
        }
        let version_error = self
            .config
            .policy
            .abp_version_check()
            .then(|| unsupported_version(&payload))
            .flatten();
        if let Some(error) = version_error {
            return self.transmit(FromApp::InitializeError { id, error });
        }
        self.end_session();
        let session_id = self.ids.next_id();
        let features = Features::from_initialize(&payload);
        self.session = Some(Session {
            id: session_id.clone(),
            init_id: id.clone(),
            features: features.clone(),
        });
        self.finished.clear();
        self.out.push_back(AppOutput::SessionOpened {
            session_id: session_id.clone(),
        });
        self.transmit(FromApp::InitializeResult {
            id,
            session_id,
            features,
        });
    }

    /// The agent's answer to our hello (dialects where the app speaks first).
    fn hello_answered(
        &mut self,
        id: String,
        session_id: Option<String>,
        error: Option<AbpError<P>>,
    ) {
        self.hello = None;
        match (error, session_id) {
            (None, Some(session_id)) => {
                self.session = Some(Session {
                    id: session_id.clone(),
                    init_id: id,
                    features: Features::default(),
                });
                self.out.push_back(AppOutput::SessionOpened { session_id });
            }
            // The agent no longer knows the session we asked to resume: introduce the app afresh.
            (Some(e), _) if e.code == ErrorCode::SessionExpired => self.connect(),
            (error, _) => {
                let error = error.unwrap_or_else(|| {
                    AbpError::new(ErrorCode::OperationFailed, "The answer opened no session")
                });
                self.out.push_back(AppOutput::HandshakeRefused { error });
            }
        }
    }

    /// A call from the agent: started, queued behind `max_concurrent`, refused, or dropped as a duplicate.
    fn call(&mut self, mut call: Queued<P>, registry: &Registry<P>) {
        if self.session.is_none() && call.features.is_none() {
            return self.refuse_call(call.msg_id, call.call_id, AbpError::not_initialized());
        }
        let id = &call.call_id;
        if self.active.contains_key(id)
            || self.queued_ids.contains(id)
            || self.finished.contains(id)
        {
            return; // a duplicated delivery: never run a handler twice
        }
        if let Err(error) = registry.check_call(&call.capability, &call.params) {
            self.finished
                .insert(call.call_id.clone(), Finished::Completed);
            return self.refuse_call(call.msg_id, call.call_id, error);
        }
        call.timeout_ms = self.config.policy.app_timeouts().then(|| {
            registry
                .timeout_ms(&call.capability)
                .unwrap_or(DEFAULT_APP_TIMEOUT_MS)
        });
        let full = self
            .config
            .max_concurrent
            .is_some_and(|m| self.active.len() >= m);
        if full {
            self.queued_ids.insert(call.call_id.clone());
            self.queued.push_back(call);
        } else {
            self.start(call);
        }
    }

    /// Starts a call's handler; its clock starts when the call arrived, even if it waited in the queue.
    fn start(&mut self, call: Queued<P>) {
        let Queued {
            msg_id,
            call_id,
            capability,
            params,
            token,
            trace,
            received: now,
            timeout_ms,
            features,
        } = call;
        self.next_seq += 1;
        self.active.insert(
            call_id.clone(),
            Active {
                msg_id,
                started: now,
                seq: self.next_seq,
                token: token.clone(),
                progress: None,
                progress_timer: None,
                last_progress: f64::NEG_INFINITY,
                deadline: timeout_ms
                    .map(|t| self.timers.schedule(now + t, Due::Call(call_id.clone()))),
                timeout_ms,
                features,
            },
        );
        self.out.push_back(AppOutput::Start {
            call_id,
            capability,
            params,
            progress_token: token,
            trace,
        });
    }

    fn start_queued(&mut self) {
        while self
            .config
            .max_concurrent
            .is_none_or(|m| self.active.len() < m)
        {
            let Some(q) = self.queued.pop_front() else {
                break;
            };
            self.queued_ids.remove(&q.call_id);
            self.start(q);
        }
    }

    fn cancel(&mut self, id: Option<String>, call_id: String, reason: Option<String>, now: f64) {
        let policy = self.config.policy;
        let stateless = |c: &str| {
            self.active.get(c).is_some_and(|a| a.features.is_some())
                || self
                    .queued
                    .iter()
                    .any(|q| q.call_id == c && q.features.is_some())
        };
        if self.session.is_none() && !stateless(&call_id) {
            if !policy.cancel_answered() {
                return;
            }
            let error = AbpError::not_initialized();
            return self.transmit(FromApp::CancelResult {
                id,
                call_id,
                verdict: CancelVerdict::Refused(error),
            });
        }
        let answer = |verdict: CancelVerdict<AbpError<P>>| {
            policy.cancel_answered().then(|| FromApp::CancelResult {
                id: id.clone(),
                call_id: call_id.clone(),
                verdict,
            })
        };
        if let Some(active) = self.take_active(&call_id) {
            // The handler's signal first: stopping the work is what the agent is waiting for; the answers
            // follow in the same turn.
            self.out.push_back(AppOutput::Abort {
                call_id: call_id.clone(),
                reason: reason.clone(),
            });
            if let Some(a) = answer(CancelVerdict::Cancelled) {
                self.transmit(a);
            }
            if policy.cancelled_call_answered() {
                self.transmit(FromApp::CallResult {
                    id: active.msg_id,
                    call_id: call_id.clone(),
                    outcome: Outcome::Cancelled { reason },
                    duration: now - active.started,
                    transfer: None,
                });
            }
            self.finished.insert(call_id.clone(), Finished::Cancelled);
            self.end_elicitations_of(&call_id);
            self.start_queued();
        } else if self.queued_ids.remove(&call_id) {
            let pos = self.queued.iter().position(|q| q.call_id == call_id);
            if let Some(q) = pos.and_then(|p| self.queued.remove(p)) {
                if let Some(a) = answer(CancelVerdict::Cancelled) {
                    self.transmit(a);
                }
                if policy.cancelled_call_answered() {
                    self.transmit(FromApp::CallResult {
                        id: q.msg_id,
                        call_id: call_id.clone(),
                        outcome: Outcome::Cancelled { reason },
                        duration: now - q.received,
                        transfer: None,
                    });
                }
                self.finished.insert(call_id, Finished::Cancelled);
            }
        } else {
            let a = match self.finished.get(&call_id) {
                Some(Finished::Cancelled) => answer(CancelVerdict::Cancelled),
                Some(Finished::Completed) => answer(CancelVerdict::AlreadyCompleted),
                Some(Finished::Tombstone) => answer(CancelVerdict::NotFound),
                None => {
                    self.finished.insert(call_id.clone(), Finished::Tombstone);
                    answer(CancelVerdict::NotFound)
                }
            };
            if let Some(a) = a {
                self.transmit(a);
            }
        }
    }

    /// Removes a running call and its deadlines.
    fn take_active(&mut self, call_id: &str) -> Option<Active<P>> {
        let active = self.active.remove(call_id)?;
        for t in [active.progress_timer, active.deadline]
            .into_iter()
            .flatten()
        {
            self.timers.cancel(t);
        }
        Some(active)
    }

    /// Forgets an elicitation and its deadline. False if it was not open.
    /// The answer to the handler's elicitation `id` (from the agent, or found by the dialect in what the agent
    /// already sent); an answer to one no longer waiting is dropped.
    pub fn elicitation_answered(&mut self, id: String, payload: P) {
        if self.forget_elicitation(&id) {
            self.out.push_back(AppOutput::ElicitDone {
                id,
                end: ElicitEnd::Answer(payload),
            });
        }
    }

    fn forget_elicitation(&mut self, id: &str) -> bool {
        let Some(e) = self.elicits.remove(id) else {
            return false;
        };
        if let Some(t) = e.timer {
            self.timers.cancel(t);
        }
        true
    }

    fn end_elicitations_of(&mut self, call_id: &str) {
        if self.elicits.is_empty() {
            return;
        }
        for (id, e) in self
            .elicits
            .take_where(|e| e.call_id.as_deref() == Some(call_id))
        {
            if let Some(t) = e.timer {
                self.timers.cancel(t);
            }
            if self.config.policy.cancel_nested() {
                // Cascade: the agent's answer is no longer wanted.
                self.transmit(FromApp::WithdrawElicitation {
                    id: id.clone(),
                    reason: Some("The call that asked has ended".to_owned()),
                });
            }
            self.out.push_back(AppOutput::ElicitDone {
                id,
                end: ElicitEnd::Ended,
            });
        }
    }

    /// The handler finished. Discarded if the call was cancelled meanwhile.
    pub fn complete(&mut self, call_id: &str, outcome: Outcome<P>, transfer: Option<P>, now: f64) {
        let Some(mut active) = self.take_active(call_id) else {
            return;
        };
        if let (Some(info), Some(token)) = (active.progress.take(), active.token.clone()) {
            self.transmit(FromApp::Progress {
                call_id: Some(call_id.to_owned()),
                token,
                info,
            });
        }
        let how = if matches!(outcome, Outcome::Cancelled { .. }) {
            Finished::Cancelled
        } else {
            Finished::Completed
        };
        self.transmit(FromApp::CallResult {
            id: active.msg_id,
            call_id: call_id.to_owned(),
            outcome,
            duration: now - active.started,
            transfer,
        });
        self.finished.insert(call_id.to_owned(), how);
        self.end_elicitations_of(call_id);
        self.start_queued();
    }

    /// `ctx.progress(info)`: sent at once unless one went out less than `progress_interval` ago, in which case
    /// it waits and later updates replace it. Dropped for calls without a progress token or no longer running.
    pub fn progress(&mut self, call_id: &str, info: P, now: f64) {
        if !self.features_of(Some(call_id)).is_some_and(|f| f.progress) {
            return;
        }
        let interval = self.config.progress_interval;
        let Some(active) = self.active.get_mut(call_id) else {
            return;
        };
        let Some(token) = active.token.clone() else {
            return;
        };
        if active.progress_timer.is_none() && now - active.last_progress >= interval {
            active.last_progress = now;
            self.transmit(FromApp::Progress {
                call_id: Some(call_id.to_owned()),
                token,
                info,
            });
        } else {
            active.progress = Some(info);
            if active.progress_timer.is_none() {
                let at = active.last_progress + interval;
                active.progress_timer =
                    Some(self.timers.schedule(at, Due::Progress(call_id.to_owned())));
            }
        }
    }

    /// `ctx.elicit(request)`: returns the request id to wait on, or an error when it cannot be asked:
    /// NOT_INITIALIZED without a session, NOT_SUPPORTED when the agent did not enable elicitation or does not
    /// allow the method, CANCELLED when the call that asks has ended. The request's `timeout` (ms), if any,
    /// ends the wait with [`ElicitEnd::TimedOut`].
    pub fn elicit(
        &mut self,
        call_id: Option<&str>,
        request: P,
        now: f64,
    ) -> Result<String, AbpError<P>> {
        let Some(features) = self.features_of(call_id) else {
            return Err(AbpError::not_initialized());
        };
        let by_retry = features.answer_by_retry;
        let method = request.get_string("method").unwrap_or_default();
        if !features.allows(&method) {
            return Err(AbpError::new(
                ErrorCode::NotSupported,
                text(&["The agent does not accept '", &method, "' requests"]),
            ));
        }
        if let Some(c) = call_id {
            if !self.active.contains_key(c) {
                return Err(AbpError::cancelled(Some("The call that asked has ended")));
            }
        }
        let id = self.ids.next_id();
        let wait = if by_retry {
            Some(self.config.retry_wait)
        } else {
            request
                .get_f64("timeout")
                .filter(|t| t.is_finite() && *t >= 0.0)
        };
        let timer = wait.map(|t| self.timers.schedule(now + t, Due::Elicit(id.clone())));
        self.elicits.insert(
            id.clone(),
            Elicit {
                call_id: call_id.map(str::to_owned),
                timer,
                by_retry,
            },
        );
        self.transmit(FromApp::ElicitationRequest {
            id: id.clone(),
            call_id: call_id.map(str::to_owned),
            request,
        });
        Ok(id)
    }

    /// What the agent enabled for `call_id`: what its request said, else the session's. `None` without a
    /// session, for a call that brought no features of its own.
    fn features_of(&self, call_id: Option<&str>) -> Option<&Features> {
        call_id
            .and_then(|c| self.active.get(c))
            .and_then(|a| a.features.as_ref())
            .or_else(|| self.session.as_ref().map(|s| &s.features))
    }

    /// Progress the page reports for an operation of its own (`window.abp.notifyProgress` with an
    /// `operationId` that names no running call): sent as it is, when the agent enabled progress.
    pub fn free_progress(&mut self, token: &str, info: P) -> bool {
        if !self.session.as_ref().is_some_and(|s| s.features.progress) {
            return false;
        }
        self.transmit(FromApp::Progress {
            call_id: None,
            token: token.to_owned(),
            info,
        });
        true
    }

    /// `app.notify(event, data)`: returns false when there is no session to tell.
    pub fn notify(&mut self, event: &str, data: P) -> bool {
        if !self
            .session
            .as_ref()
            .is_some_and(|s| s.features.notifications)
        {
            return false;
        }
        self.transmit(FromApp::Notification {
            event: event.to_owned(),
            data,
        });
        true
    }

    /// The registry changed: tells the agent (`notifications/capabilities/list_changed`) unless it turned
    /// notifications off.
    pub fn capabilities_changed(&mut self, changes: &Changes) {
        let told = match &self.session {
            Some(s) => s.features.notifications,
            None => self.config.policy.stateless_requests(),
        };
        if !changes.is_empty() && told {
            self.transmit(FromApp::CapabilitiesChanged {
                changes: changes.clone(),
            });
        }
    }

    /// The transport is gone: abort every handler, drop the queue, end the session.
    pub fn transport_lost(&mut self) {
        self.end_session();
    }

    /// The page is going (a reload or navigation): tells the agent of the session, so its calls settle now,
    /// and ends the session.
    pub fn page_hidden(&mut self) {
        if let Some(session) = &self.session {
            let bye = ControlOut::Shutdown {
                id: self.ids.next_id(),
                reason: Some("pagehide".to_owned()),
                session_id: Some(session.id.clone()),
            };
            self.out
                .push_back(AppOutput::Transmit(FromApp::Control(bye)));
        }
        self.transport_lost();
    }

    pub fn config(&self) -> &AppConfig {
        &self.config
    }

    fn end_session(&mut self) {
        self.hello = None;
        let mut ids: Vec<(u64, String)> = self.active.drain().map(|(id, a)| (a.seq, id)).collect();
        ids.sort_unstable();
        for (_, call_id) in ids {
            self.out.push_back(AppOutput::Abort {
                call_id,
                reason: Some("session ended".to_owned()),
            });
        }
        self.queued.clear();
        self.queued_ids.clear();
        for (id, _) in self.elicits.drain() {
            self.out.push_back(AppOutput::ElicitDone {
                id,
                end: ElicitEnd::Ended,
            });
        }
        self.timers.clear();
        if self.session.take().is_some() {
            self.out.push_back(AppOutput::SessionClosed);
        }
    }

    pub fn poll_timeout(&self) -> Option<f64> {
        self.timers.next()
    }

    pub fn handle_timeout(&mut self, now: f64) {
        let mut expired = Vec::new();
        let mut progress = Vec::new();
        let mut elicits = Vec::new();
        while let Some(due) = self.timers.pop_due(now) {
            match due {
                Due::Call(id) => expired.push(id),
                Due::Progress(id) => progress.push(id),
                Due::Elicit(id) => elicits.push(id),
            }
        }
        // Only a dialect with the app's own timeouts schedules them (the check lets ABP-only builds drop this).
        if !expired.is_empty() && self.config.policy.app_timeouts() {
            self.expire_calls(expired, now);
        }
        for id in elicits {
            let retried_call = match self.elicits.get(&id) {
                Some(e) if e.by_retry => e.call_id.clone(),
                _ => None,
            };
            if let Some(call_id) = retried_call {
                // Nobody retried the call: the agent has gone, so its call stops (the elicitation ends with it).
                let reason = Some(
                    "The client did not retry the call with the input it asked for".to_owned(),
                );
                self.cancel(None, call_id, reason, now);
            } else if self.elicits.remove(&id).is_some() {
                self.out.push_back(AppOutput::ElicitDone {
                    id,
                    end: ElicitEnd::TimedOut,
                });
            }
        }
        for call_id in progress {
            self.send_held_progress(call_id, now);
        }
    }

    /// A call's held-back progress, now that its interval has passed.
    fn send_held_progress(&mut self, call_id: String, now: f64) {
        let Some(a) = self.active.get_mut(&call_id) else {
            return;
        };
        a.progress_timer = None;
        a.last_progress = now;
        if let (Some(info), Some(token)) = (a.progress.take(), a.token.clone()) {
            self.transmit(FromApp::Progress {
                call_id: Some(call_id),
                token,
                info,
            });
        }
    }

    /// Calls past the app's own timeout: the handler's signal aborts ("timeout") and the agent gets TIMEOUT.
    /// In deadline order, and in order of arrival for equal deadlines (the timers keep both).
    fn expire_calls(&mut self, ids: Vec<String>, now: f64) {
        for call_id in ids {
            if let Some(a) = self.active.get_mut(&call_id) {
                a.deadline = None; // it just fired
            }
            let Some(active) = self.take_active(&call_id) else {
                continue;
            };
            self.out.push_back(AppOutput::Abort {
                call_id: call_id.clone(),
                reason: Some("timeout".to_owned()),
            });
            let mut ms = String::new();
            super::text::push_u64(&mut ms, active.timeout_ms.unwrap_or(0.0) as u64);
            let error = AbpError::new(
                ErrorCode::Timeout,
                text(&["Invocation ", &call_id, " exceeded ", &ms, " ms"]),
            );
            self.transmit(FromApp::CallResult {
                id: active.msg_id,
                call_id: call_id.clone(),
                outcome: Outcome::Failure(error),
                duration: now - active.started,
                transfer: None,
            });
            self.finished.insert(call_id.clone(), Finished::Completed);
            self.end_elicitations_of(&call_id);
        }
        self.start_queued();
    }

    pub(crate) fn poll(&mut self) -> Option<AppOutput<P>> {
        self.out.pop_front()
    }
}

/// NOT_SUPPORTED for an `initialize` whose `protocolVersion` has another major version than ours.
fn unsupported_version<P: Wire>(payload: &P) -> Option<AbpError<P>> {
    let theirs = payload.get_string("protocolVersion")?;
    let major = |v: &str| v.split('.').next().unwrap_or("").trim().to_owned();
    if major(&theirs) == major(PROTOCOL_VERSION) {
        return None;
    }
    Some(AbpError::new(
        ErrorCode::NotSupported,
        text(&[
            "Protocol version ",
            &theirs,
            " is not supported; this app speaks ",
            PROTOCOL_VERSION,
        ]),
    ))
}

#[cfg(test)]
mod recent_tests {
    use super::{Finished, Recent};
    use std::collections::VecDeque;

    /// `Recent` against the obvious model (an arrival-order queue and a lookup), through inserts of new and
    /// repeated ids, with the window full most of the time.
    #[test]
    fn recent_keeps_the_last_ids_like_a_queue_and_a_map() {
        for cap in [1, 2, 3, 7, 64] {
            let mut recent = Recent::new(cap);
            let mut model: VecDeque<(String, Finished)> = VecDeque::new();
            let kinds = [
                Finished::Completed,
                Finished::Cancelled,
                Finished::Tombstone,
            ];
            // A cheap deterministic sequence with repeats (ids come back while still remembered, and after).
            let mut x: u32 = 12345;
            for step in 0..2000u32 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let id = format!("id-{}", (x >> 8) % (3 * cap as u32 + 2));
                let how = kinds[(step % 3) as usize];
                match model.iter_mut().find(|(k, _)| *k == id) {
                    Some(entry) => entry.1 = how,
                    None => {
                        model.push_back((id.clone(), how));
                        if model.len() > cap {
                            model.pop_front();
                        }
                    }
                }
                recent.insert(id, how);
                for n in 0..(3 * cap as u32 + 2) {
                    let probe = format!("id-{n}");
                    let want = model.iter().find(|(k, _)| *k == probe).map(|(_, h)| *h);
                    assert_eq!(
                        recent.get(&probe).copied(),
                        want,
                        "cap {cap}, step {step}, {probe}"
                    );
                    assert_eq!(recent.contains(&probe), want.is_some());
                }
            }
            recent.clear();
            assert!(!recent.contains("id-0") && recent.get("id-1").is_none());
            recent.insert("again".into(), Finished::Completed);
            assert_eq!(recent.get("again"), Some(&Finished::Completed));
        }
    }
}
