//! The app side of one ABP connection: the session, running and queued calls, the cancel table, progress
//! coalescing and elicitation bookkeeping. Handlers themselves live outside (in JavaScript); this state
//! machine tells the glue when to start or abort one and what to send.

use std::collections::VecDeque;

use super::map::{StrMap, StrSet};

use super::error::{AbpError, ErrorCode};
use super::message::{
    text, IdGen, Incoming, MalformedKind, Outcome, Outgoing, REASON_COMPLETED, REASON_NOT_FOUND,
};
use super::schema::{validate, Payload};

/// Registered capabilities: name → descriptor (the descriptor may hold an `inputSchema`).
pub struct Registry<P> {
    order: Vec<String>,
    caps: StrMap<Option<P>>,
}

impl<P: Payload> Default for Registry<P> {
    fn default() -> Self {
        Registry {
            order: Vec::new(),
            caps: StrMap::new(),
        }
    }
}

impl<P: Payload> Registry<P> {
    /// Adds or replaces a capability. Returns true if the set of names changed.
    pub fn register(&mut self, name: &str, descriptor: Option<P>) -> bool {
        let added = self.caps.insert(name.to_owned(), descriptor).is_none();
        if added {
            self.order.push(name.to_owned());
        }
        added
    }

    pub fn unregister(&mut self, name: &str) -> bool {
        if self.caps.remove(name).is_some() {
            self.order.retain(|n| n != name);
            true
        } else {
            false
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.caps.contains_key(name)
    }

    pub fn descriptor(&self, name: &str) -> Option<&P> {
        self.caps.get(name).and_then(|d| d.as_ref())
    }

    /// Names and descriptors in registration order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&P>)> {
        self.order
            .iter()
            .map(|n| (n.as_str(), self.caps.get(n).and_then(|d| d.as_ref())))
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn check_params(&self, name: &str, params: &P) -> Result<(), String> {
        match self.descriptor(name).and_then(|d| d.get("inputSchema")) {
            Some(schema) => validate(&schema, params),
            None => Ok(()),
        }
    }
}

#[derive(Clone, Debug)]
pub struct AppConfig {
    /// Calls beyond this many wait in a FIFO queue (per session). `None`: no limit.
    pub max_concurrent: Option<usize>,
    /// Progress for one call is sent at most once per this many milliseconds; the latest value wins.
    pub progress_interval: f64,
    /// How many finished call ids each session remembers for the cancel table.
    pub remember: usize,
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            max_concurrent: None,
            progress_interval: 16.0,
            remember: 1024,
        }
    }
}

#[derive(Clone, Debug)]
pub enum AppOutput<P> {
    Transmit(Outgoing<P>),
    /// Run the handler for `capability` with a fresh AbortSignal.
    Start {
        call_id: String,
        capability: String,
        params: P,
        progress_token: Option<String>,
    },
    /// Abort the running handler's signal with `reason`.
    Abort {
        call_id: String,
        reason: Option<String>,
    },
    /// Resolve `ctx.elicit()`: `Some(response)` from the agent, `None` when its call ended first.
    ElicitDone {
        id: String,
        response: Option<P>,
    },
    SessionOpened {
        session_id: String,
    },
    SessionClosed,
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
    progress_due: Option<f64>,
    last_progress: f64,
}

struct Queued<P> {
    msg_id: String,
    call_id: String,
    capability: String,
    params: P,
    token: Option<String>,
    received: f64,
}

struct Session {
    id: String,
    init_id: String,
}

/// Bounded memory of finished calls.
struct Recent {
    order: VecDeque<String>,
    map: StrMap<Finished>,
    cap: usize,
}

impl Recent {
    fn insert(&mut self, id: String, how: Finished) {
        if self.map.insert(id.clone(), how).is_none() {
            self.order.push_back(id);
            while self.order.len() > self.cap {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
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
    /// elicitation id → the call that asked
    elicits: StrMap<Option<String>>,
    out: VecDeque<AppOutput<P>>,
    next_seq: u64,
}

impl<P: Payload> AppConn<P> {
    pub fn new(config: AppConfig, id_prefix: impl Into<String>) -> Self {
        let cap = config.remember.max(1);
        AppConn {
            config,
            session: None,
            ids: IdGen::new(id_prefix),
            active: StrMap::new(),
            queued: VecDeque::new(),
            queued_ids: StrSet::new(),
            finished: Recent {
                order: VecDeque::new(),
                map: StrMap::new(),
                cap,
            },
            elicits: StrMap::new(),
            out: VecDeque::new(),
            next_seq: 0,
        }
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.id.as_str())
    }

    /// The id of the `initialize` that opened the current session.
    pub fn session_init_id(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.init_id.as_str())
    }

    /// Running handlers.
    pub fn active_calls(&self) -> usize {
        self.active.len()
    }

    pub fn queued_calls(&self) -> usize {
        self.queued.len()
    }

    fn transmit(&mut self, m: Outgoing<P>) {
        self.out.push_back(AppOutput::Transmit(m));
    }

    fn refuse_call(&mut self, id: String, call_id: String, error: AbpError<P>) {
        self.transmit(Outgoing::CallResult {
            id,
            call_id,
            outcome: Outcome::Failure(error),
            duration: 0.0,
            transfer: None,
        });
    }

    /// Feeds one decoded message from the agent.
    pub fn handle(&mut self, msg: Incoming<P>, now: f64, registry: &Registry<P>) {
        match msg {
            Incoming::Initialize { id, .. } => match &self.session {
                None => {
                    let session_id = self.ids.next_id();
                    self.session = Some(Session {
                        id: session_id.clone(),
                        init_id: id.clone(),
                    });
                    self.finished.order.clear();
                    self.finished.map.clear();
                    self.out.push_back(AppOutput::SessionOpened {
                        session_id: session_id.clone(),
                    });
                    self.transmit(Outgoing::InitializeResult { id, session_id });
                }
                Some(s) if s.init_id == id => {
                    let session_id = s.id.clone();
                    self.transmit(Outgoing::InitializeResult { id, session_id });
                }
                Some(_) => {
                    let error =
                        AbpError::new(ErrorCode::AlreadyInitialized, "A session is already active");
                    self.transmit(Outgoing::InitializeError { id, error });
                }
            },
            Incoming::Call {
                id,
                call_id,
                capability,
                params,
                progress_token,
                ..
            } => {
                if self.session.is_none() {
                    return self.refuse_call(id, call_id, AbpError::not_initialized());
                }
                if self.active.contains_key(&call_id)
                    || self.queued_ids.contains(&call_id)
                    || self.finished.map.contains_key(&call_id)
                {
                    return; // a duplicated delivery: never run a handler twice
                }
                if !registry.contains(&capability) {
                    self.finished.insert(call_id.clone(), Finished::Completed);
                    let error = AbpError::new(
                        ErrorCode::UnknownCapability,
                        text(&["Unknown capability '", &capability, "'"]),
                    );
                    return self.refuse_call(id, call_id, error);
                }
                if let Err(problem) = registry.check_params(&capability, &params) {
                    self.finished.insert(call_id.clone(), Finished::Completed);
                    return self.refuse_call(
                        id,
                        call_id,
                        AbpError::new(ErrorCode::InvalidParams, problem),
                    );
                }
                let full = self
                    .config
                    .max_concurrent
                    .is_some_and(|m| self.active.len() >= m);
                if full {
                    self.queued_ids.insert(call_id.clone());
                    self.queued.push_back(Queued {
                        msg_id: id,
                        call_id,
                        capability,
                        params,
                        token: progress_token,
                        received: now,
                    });
                } else {
                    self.start(id, call_id, capability, params, progress_token, now);
                }
            }
            Incoming::Cancel {
                id,
                call_id,
                reason,
            } => self.cancel(id, call_id, reason, now),
            Incoming::ElicitationResponse { id, payload } if self.elicits.remove(&id).is_some() => {
                self.out.push_back(AppOutput::ElicitDone {
                    id,
                    response: Some(payload),
                });
            }
            Incoming::Shutdown { .. } => self.end_session(),
            Incoming::Malformed {
                kind: MalformedKind::Call,
                id: Some(id),
                call_id,
                reason,
            } => {
                let error = AbpError::new(ErrorCode::InvalidParams, reason);
                self.refuse_call(id, call_id.unwrap_or_default(), error);
            }
            Incoming::Malformed {
                kind: MalformedKind::Cancel,
                id,
                call_id,
                reason,
            } => {
                let error = AbpError::new(ErrorCode::InvalidParams, reason);
                let call_id = call_id.unwrap_or_default();
                self.transmit(Outgoing::CancelResult {
                    id,
                    call_id,
                    cancelled: false,
                    reason: None,
                    error: Some(error),
                });
            }
            _ => {}
        }
    }

    fn start(
        &mut self,
        msg_id: String,
        call_id: String,
        capability: String,
        params: P,
        token: Option<String>,
        now: f64,
    ) {
        self.next_seq += 1;
        self.active.insert(
            call_id.clone(),
            Active {
                msg_id,
                started: now,
                seq: self.next_seq,
                token: token.clone(),
                progress: None,
                progress_due: None,
                last_progress: f64::NEG_INFINITY,
            },
        );
        self.out.push_back(AppOutput::Start {
            call_id,
            capability,
            params,
            progress_token: token,
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
            self.start(
                q.msg_id,
                q.call_id,
                q.capability,
                q.params,
                q.token,
                q.received,
            );
        }
    }

    fn cancel(&mut self, id: Option<String>, call_id: String, reason: Option<String>, now: f64) {
        if self.session.is_none() {
            let error = AbpError::not_initialized();
            return self.transmit(Outgoing::CancelResult {
                id,
                call_id,
                cancelled: false,
                reason: None,
                error: Some(error),
            });
        }
        let result = |cancelled: bool, why: Option<&str>| Outgoing::CancelResult {
            id: id.clone(),
            call_id: call_id.clone(),
            cancelled,
            reason: why.map(str::to_owned),
            error: None,
        };
        if let Some(active) = self.active.remove(&call_id) {
            // The handler's signal first: stopping the work is what the agent is waiting for; the answers
            // follow in the same turn.
            self.out.push_back(AppOutput::Abort {
                call_id: call_id.clone(),
                reason: reason.clone(),
            });
            self.transmit(result(true, None));
            self.transmit(Outgoing::CallResult {
                id: active.msg_id,
                call_id: call_id.clone(),
                outcome: Outcome::Cancelled { reason },
                duration: now - active.started,
                transfer: None,
            });
            self.finished.insert(call_id.clone(), Finished::Cancelled);
            self.end_elicitations_of(&call_id);
            self.start_queued();
        } else if self.queued_ids.remove(&call_id) {
            let pos = self.queued.iter().position(|q| q.call_id == call_id);
            if let Some(q) = pos.and_then(|p| self.queued.remove(p)) {
                self.transmit(result(true, None));
                self.transmit(Outgoing::CallResult {
                    id: q.msg_id,
                    call_id: call_id.clone(),
                    outcome: Outcome::Cancelled { reason },
                    duration: now - q.received,
                    transfer: None,
                });
                self.finished.insert(call_id, Finished::Cancelled);
            }
        } else {
            let answer = match self.finished.map.get(&call_id) {
                Some(Finished::Cancelled) => result(true, None),
                Some(Finished::Completed) => result(false, Some(REASON_COMPLETED)),
                Some(Finished::Tombstone) => result(false, Some(REASON_NOT_FOUND)),
                None => {
                    self.finished.insert(call_id.clone(), Finished::Tombstone);
                    result(false, Some(REASON_NOT_FOUND))
                }
            };
            self.transmit(answer);
        }
    }

    fn end_elicitations_of(&mut self, call_id: &str) {
        for id in self.elicits.remove_where(|c| c.as_deref() == Some(call_id)) {
            self.out
                .push_back(AppOutput::ElicitDone { id, response: None });
        }
    }

    /// The handler finished. Discarded if the call was cancelled meanwhile.
    pub fn complete(&mut self, call_id: &str, outcome: Outcome<P>, transfer: Option<P>, now: f64) {
        let Some(mut active) = self.active.remove(call_id) else {
            return;
        };
        if let (Some(info), Some(token)) = (active.progress.take(), active.token.clone()) {
            self.transmit(Outgoing::Progress {
                call_id: call_id.to_owned(),
                token,
                info,
            });
        }
        let how = if matches!(outcome, Outcome::Cancelled { .. }) {
            Finished::Cancelled
        } else {
            Finished::Completed
        };
        self.transmit(Outgoing::CallResult {
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
        let interval = self.config.progress_interval;
        let Some(active) = self.active.get_mut(call_id) else {
            return;
        };
        let Some(token) = active.token.clone() else {
            return;
        };
        if active.progress_due.is_none() && now - active.last_progress >= interval {
            active.last_progress = now;
            self.transmit(Outgoing::Progress {
                call_id: call_id.to_owned(),
                token,
                info,
            });
        } else {
            active.progress = Some(info);
            if active.progress_due.is_none() {
                active.progress_due = Some(active.last_progress + interval);
            }
        }
    }

    /// `ctx.elicit(request)`: returns the request id to wait on, or an error when it cannot be asked.
    pub fn elicit(&mut self, call_id: Option<&str>, request: P) -> Result<String, AbpError<P>> {
        if self.session.is_none() {
            return Err(AbpError::not_initialized());
        }
        if let Some(c) = call_id {
            if !self.active.contains_key(c) {
                return Err(AbpError::cancelled(Some("The call that asked has ended")));
            }
        }
        let id = self.ids.next_id();
        self.elicits.insert(id.clone(), call_id.map(str::to_owned));
        self.transmit(Outgoing::ElicitationRequest {
            id: id.clone(),
            call_id: call_id.map(str::to_owned),
            request,
        });
        Ok(id)
    }

    /// `app.notify(event, data)`: returns false when there is no session to tell.
    pub fn notify(&mut self, event: &str, data: P) -> bool {
        if self.session.is_none() {
            return false;
        }
        self.transmit(Outgoing::Notification {
            event: event.to_owned(),
            data,
        });
        true
    }

    pub fn capabilities_changed(&mut self) {
        if self.session.is_some() {
            self.transmit(Outgoing::CapabilitiesChanged);
        }
    }

    /// The transport is gone: abort every handler, drop the queue, end the session.
    pub fn transport_lost(&mut self) {
        self.end_session();
    }

    fn end_session(&mut self) {
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
            self.out
                .push_back(AppOutput::ElicitDone { id, response: None });
        }
        if self.session.take().is_some() {
            self.out.push_back(AppOutput::SessionClosed);
        }
    }

    pub fn poll_timeout(&self) -> Option<f64> {
        self.active
            .values()
            .filter_map(|a| a.progress_due)
            .min_by(|a, b| a.total_cmp(b))
    }

    pub fn handle_timeout(&mut self, now: f64) {
        let mut due = Vec::new();
        for (call_id, a) in self.active.iter_mut() {
            if a.progress_due.is_some_and(|d| d <= now) {
                a.progress_due = None;
                a.last_progress = now;
                if let (Some(info), Some(token)) = (a.progress.take(), a.token.clone()) {
                    due.push(Outgoing::Progress {
                        call_id: call_id.clone(),
                        token,
                        info,
                    });
                }
            }
        }
        for m in due {
            self.transmit(m);
        }
    }

    pub fn poll(&mut self) -> Option<AppOutput<P>> {
        self.out.pop_front()
    }
}
