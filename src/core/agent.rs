//! The agent side of one ABP connection: the handshake, pending calls, timeouts, cancels, progress routing and
//! elicitation bookkeeping. No clock and no I/O: messages go in through [`AgentCore::handle`], time through
//! `now` arguments and [`AgentCore::handle_timeout`], and everything to do comes out of [`AgentCore::poll`].

use std::collections::VecDeque;

use super::map::StrMap;

use super::dialect::Policy;
use super::error::{AbpError, ErrorCode};
use super::message::{
    CancelVerdict, Control, ControlOut, ElicitAnswer, FromAgent, ToAgent, REASON_NOT_FOUND,
};
use super::payload::Kind;
use super::payload::Wire;
use super::text::{text, IdGen};
use super::timers::{TimerId, Timers};
use super::trace::Trace;

#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// How long to wait for the app's answer after sending a cancel before settling the call locally.
    pub cancel_grace: f64,
    /// How long the handshake may take, including the time for the iframe to load.
    pub connect_timeout: f64,
    /// Interval between re-sent ABP `initialize` messages for the first [`FAST_RESENDS_FOR`] of the handshake
    /// (an iframe's app starts listening at any moment in it); after that it doubles up to one second. (The
    /// other dialects start at [`OTHER_DIALECTS_FIRST_RESEND`].)
    pub resend_interval: f64,
    /// While calls are pending, an app silent for this long is asked whether it is there (a
    /// `capabilities/cancel` for a call id that never exists, which every ABP app answers); no answer within
    /// the same time counts as a lost transport. `None`: never (the default).
    pub heartbeat: Option<f64>,
    /// The dialect's rules (ABP by default).
    pub policy: Policy,
    /// Whether the transport comes back once lost (a WebSocket with `reconnect`). When it does not, this
    /// client's DISCONNECTED errors are not retryable and say to connect again: no retry on it can succeed.
    pub reconnects: bool,
}

/// The TIMEOUT message of a handshake the app never answered. The browser shell adds the usual cause for a frame
/// or window (a `targetOrigin` that is not the app page's origin), which only it can see.
pub const NO_ANSWER_TO_INITIALIZE: &str = "The app did not answer initialize before connectTimeout";

/// The call id heartbeat probes cancel: never used for a real call, and always the same, so that the app
/// remembers it once rather than once per probe.
pub const HEARTBEAT_CALL_ID: &str = "abp-heartbeat-probe";

/// How long an ABP agent re-sends `initialize` at the fast [`AgentConfig::resend_interval`], in milliseconds: an
/// app that loads within it is answered within one interval of listening, as a hand-written handshake polling at
/// the same rate would be; one that takes longer (or never answers) is asked ever less often.
pub const FAST_RESENDS_FOR: f64 = 1000.0;

/// The first interval between re-sent `initialize` messages in the other dialects (doubling up to one second).
pub const OTHER_DIALECTS_FIRST_RESEND: f64 = 50.0;

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            cancel_grace: 1000.0,
            connect_timeout: 10_000.0,
            resend_interval: 10.0,
            heartbeat: None,
            policy: Policy::ABP,
            reconnects: false,
        }
    }
}

/// A call to start.
#[derive(Clone, Debug)]
pub struct CallRequest<P> {
    pub call_id: String,
    pub capability: String,
    pub params: P,
    pub timeout: Option<f64>,
    pub progress_token: Option<String>,
    /// The trace context to send with the call (`_meta`'s `traceparent` and `tracestate`).
    pub trace: Option<Trace>,
    pub reset_timeout_on_progress: bool,
    pub max_total_timeout: Option<f64>,
    /// Carried to the outgoing message untouched (postMessage transfer list).
    pub transfer: Option<P>,
    /// Overrides [`AgentConfig::cancel_grace`] for this call.
    pub cancel_grace: Option<f64>,
}

/// How a call settled.
#[derive(Clone, Debug)]
pub enum Settlement<P> {
    /// The app's `call-result` payload, passed through as it came.
    Remote(P),
    /// Settled here: cancelled (signal or timeout), disconnected, refused.
    Local { error: AbpError<P>, cancelled: bool },
}

/// The answer to an explicit `cancel(callId)`.
#[derive(Clone, Debug)]
pub enum CancelAnswer<P> {
    Remote(P),
    Local {
        call_id: String,
        error: AbpError<P>,
    },
    /// Decided here, in a dialect whose cancels get no answer: `cancelled` if the call was in flight
    /// (`reason` says why not otherwise).
    Settled {
        call_id: String,
        cancelled: bool,
        reason: Option<&'static str>,
    },
}

/// What the agent state machine asks for. `T` is what goes on the wire: the machine's own [`FromAgent`]
/// messages, or the encoded [`Transmit`](super::connection::Transmit) that an
/// [`AgentConnection`](super::connection::AgentConnection) makes of them.
#[derive(Clone, Debug)]
pub enum AgentOutput<P, T = FromAgent<P>> {
    Transmit(T),
    Connected {
        session_id: String,
        payload: P,
    },
    ConnectFailed(AbpError<P>),
    Settled {
        call_id: String,
        settlement: Settlement<P>,
    },
    CancelAnswered {
        handle: String,
        answer: CancelAnswer<P>,
    },
    /// The app answered the cancel an abort sent for `call_id` (not an explicit `cancel`, which has its own
    /// answer): `cancelled` when it stopped the handler. For observers; the call settles as before.
    CancelAcknowledged {
        call_id: String,
        cancelled: bool,
    },
    Progress {
        call_id: String,
        payload: P,
    },
    Notification {
        event: String,
        payload: P,
    },
    CapabilitiesChanged {
        payload: P,
    },
    Elicitation {
        id: String,
        call_id: Option<String>,
        payload: P,
    },
    ElicitationAborted {
        id: String,
    },
    Disconnected,
}

impl<P, T> AgentOutput<P, T> {
    /// The same event for another kind of transmit; `Err` holds a transmit, which has no such counterpart.
    pub(crate) fn event<U>(self) -> Result<AgentOutput<P, U>, T> {
        use AgentOutput as O;
        Ok(match self {
            O::Transmit(m) => return Err(m),
            O::Connected {
                session_id,
                payload,
            } => O::Connected {
                session_id,
                payload,
            },
            O::ConnectFailed(e) => O::ConnectFailed(e),
            O::Settled {
                call_id,
                settlement,
            } => O::Settled {
                call_id,
                settlement,
            },
            O::CancelAnswered { handle, answer } => O::CancelAnswered { handle, answer },
            O::CancelAcknowledged { call_id, cancelled } => {
                O::CancelAcknowledged { call_id, cancelled }
            }
            O::Progress { call_id, payload } => O::Progress { call_id, payload },
            O::Notification { event, payload } => O::Notification { event, payload },
            O::CapabilitiesChanged { payload } => O::CapabilitiesChanged { payload },
            O::Elicitation {
                id,
                call_id,
                payload,
            } => O::Elicitation {
                id,
                call_id,
                payload,
            },
            O::ElicitationAborted { id } => O::ElicitationAborted { id },
            O::Disconnected => O::Disconnected,
        })
    }
}

/// Why a call is being cancelled.
#[derive(Clone, Debug, PartialEq)]
pub enum AbortKind {
    Signal(Option<String>),
    Timeout,
}

impl AbortKind {
    fn error<P>(&self) -> AbpError<P> {
        match self {
            AbortKind::Signal(reason) => AbpError::cancelled(reason.as_deref()),
            AbortKind::Timeout => AbpError::timeout(),
        }
    }
}

#[derive(Clone, Debug)]
enum State<P> {
    Idle,
    Connecting {
        init_id: String,
        deadline: f64,
        next_resend: f64,
        interval: f64,
        /// Until when the interval stays as configured.
        fast_until: f64,
    },
    /// Initialized; waiting for the capability list (dialects that list separately).
    Listing {
        session_id: String,
        payload: P,
        list_id: String,
        deadline: f64,
    },
    Ready {
        session_id: String,
    },
    /// `by_user`: closed by `shutdown()` rather than lost.
    Closed {
        by_user: bool,
    },
}

#[derive(Debug)]
struct Pending {
    /// Order of sending, for deterministic ordering of settlements.
    seq: u64,
    timeout: Option<f64>,
    hard_deadline: Option<f64>,
    reset_on_progress: bool,
    token: Option<String>,
    cancel_grace: f64,
    phase: Phase,
}

/// Where a pending call is.
#[derive(Debug)]
enum Phase {
    /// Sent, waiting for its result; `timer` is its timeout, if it has one.
    Running { timer: Option<TimerId> },
    /// A cancel went out (for `kind`); past `timer`, the end of the grace period, it settles here.
    Cancelling { kind: AbortKind, timer: TimerId },
}

impl Phase {
    fn timer(&self) -> Option<TimerId> {
        match self {
            Phase::Running { timer } => *timer,
            Phase::Cancelling { timer, .. } => Some(*timer),
        }
    }

    fn is_running(&self) -> bool {
        matches!(self, Phase::Running { .. })
    }
}

/// What a deadline in [`AgentCore`]'s timers is for.
#[derive(Debug)]
enum Due {
    /// A call's timeout (by call id).
    Call(String),
    /// The end of a call's cancel grace period (by call id).
    Grace(String),
    /// The time to wait for a cancel's answer (by the cancel's handle).
    Cancel(String),
    /// An elicitation request's own timeout (by request id).
    Elicit(String),
}

#[derive(Debug)]
struct CancelReq {
    call_id: String,
    explicit: bool,
    timer: TimerId,
}

/// An elicitation the app asked of this agent and that is not answered yet.
#[derive(Debug)]
struct Elicit {
    /// The call that asked.
    call_id: Option<String>,
    /// Its own timeout, if it has one.
    timer: Option<TimerId>,
}

pub struct AgentCore<P> {
    config: AgentConfig,
    state: State<P>,
    ids: IdGen,
    /// The id of a capability-list request made because the app said its list changed.
    refresh: Option<String>,
    calls: StrMap<Pending>,
    by_token: StrMap<String>,
    cancels: StrMap<CancelReq>,
    elicits: StrMap<Elicit>,
    /// Every deadline above, in time order.
    timers: Timers<Due>,
    out: VecDeque<AgentOutput<P>>,
    next_seq: u64,
    /// When the app was last heard from (any message).
    last_heard: f64,
    /// A heartbeat probe in flight: its message id and when it counts as unanswered.
    probe: Option<(String, f64)>,
}

impl<P: Wire> AgentCore<P> {
    pub fn new(config: AgentConfig, id_prefix: impl Into<String>) -> Self {
        AgentCore {
            config,
            state: State::Idle,
            ids: IdGen::new(id_prefix),
            refresh: None,
            calls: StrMap::new(),
            by_token: StrMap::new(),
            cancels: StrMap::new(),
            elicits: StrMap::new(),
            timers: Timers::new(),
            out: VecDeque::new(),
            next_seq: 0,
            last_heard: 0.0,
            probe: None,
        }
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Starts the handshake: sends `initialize` and keeps re-sending it (same id) until answered.
    pub fn connect(&mut self, now: f64) {
        if !matches!(self.state, State::Idle) {
            return;
        }
        let init_id = self.ids.next_id();
        if !self.config.policy.app_speaks_first() {
            self.out
                .push_back(AgentOutput::Transmit(FromAgent::Initialize {
                    id: init_id.clone(),
                }));
        }
        // An ABP app answers a re-sent initialize from memory. Another dialect's server (an MCP SDK's) handles
        // each as a request of its own, so one that is up but slow to answer is not sent a burst of them: its
        // re-sends start at OTHER_DIALECTS_FIRST_RESEND and double from there.
        let (interval, fast_for) = if self.config.policy.abp_envelope() {
            (self.config.resend_interval, FAST_RESENDS_FOR)
        } else {
            (OTHER_DIALECTS_FIRST_RESEND, 0.0)
        };
        let deadline = now + self.config.connect_timeout;
        self.state = State::Connecting {
            init_id,
            deadline,
            // A dialect whose initialize is not re-sent (or not ours to send) only waits for the deadline.
            next_resend: if self.config.policy.resend_initialize
                && !self.config.policy.app_speaks_first()
            {
                now + interval
            } else {
                deadline
            },
            interval,
            fast_until: now + fast_for,
        };
    }

    /// The transport came back (a socket that reconnected): starts a new handshake, as a new session.
    /// Only after a loss; a client closed by `shutdown()` stays closed. Returns whether it started.
    pub fn reconnect(&mut self, now: f64) -> bool {
        if !self.is_lost() {
            return false;
        }
        self.state = State::Idle;
        self.connect(now);
        true
    }

    /// Closed because the transport was lost (not by `shutdown()`).
    pub fn is_lost(&self) -> bool {
        matches!(self.state, State::Closed { by_user: false })
    }

    pub fn session_id(&self) -> Option<&str> {
        match &self.state {
            State::Ready { session_id } => Some(session_id),
            _ => None,
        }
    }

    pub fn is_ready(&self) -> bool {
        matches!(self.state, State::Ready { .. })
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed { .. })
    }

    pub fn pending_calls(&self) -> usize {
        self.calls.len()
    }

    /// Whether `call_id` is in flight.
    pub fn is_pending(&self, call_id: &str) -> bool {
        self.calls.contains_key(call_id)
    }

    /// Why a call or cancel cannot be sent now. A client closed by `shutdown()` stays closed, so that answer
    /// is PRECONDITION_FAILED and not retryable (NOT_INITIALIZED and DISCONNECTED are, and would invite a
    /// retry on the same client).
    fn not_ready_error(&self) -> AbpError<P> {
        match self.state {
            State::Closed { by_user: false } => self.lost_error(),
            State::Closed { by_user: true } => AbpError::new(
                ErrorCode::PreconditionFailed,
                "This client was shut down: connect a new one",
            ),
            _ => AbpError::not_initialized(),
        }
    }

    /// DISCONNECTED as this client says it: retryable when its transport comes back, else not, with what to do.
    fn lost_error(&self) -> AbpError<P> {
        if self.config.reconnects {
            return AbpError::disconnected();
        }
        AbpError {
            retryable: false,
            ..AbpError::new(
                ErrorCode::Disconnected,
                "The connection to the other side was lost (the frame or window is gone, or the app closed it), and \
                 this client does not reconnect: connect again (AbpClient.connect) to call the app",
            )
        }
    }

    /// Sends a call. An error means nothing was sent and the caller settles it with that error.
    pub fn start_call(&mut self, req: CallRequest<P>, now: f64) -> Result<(), AbpError<P>> {
        if !self.is_ready() {
            return Err(self.not_ready_error());
        }
        if self.calls.is_empty() {
            // The heartbeat counts silence from the first pending call, not from an idle connection.
            self.last_heard = now;
        }
        if self.calls.contains_key(&req.call_id) {
            return Err(AbpError::new(
                ErrorCode::InvalidParams,
                text(&[
                    "callId '",
                    &req.call_id,
                    "' is already in flight on this connection",
                ]),
            ));
        }
        let timeout = req.timeout.filter(|t| t.is_finite() && *t >= 0.0);
        let policy_max = self.config.policy.max_total_timeout;
        let hard_deadline = req
            .max_total_timeout
            .filter(|t| t.is_finite() && *t >= 0.0)
            .or_else(|| (policy_max > 0).then(|| f64::from(policy_max)))
            .map(|t| now + t);
        let deadline = match (timeout.map(|t| now + t), hard_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(token) = &req.progress_token {
            self.by_token.insert(token.clone(), req.call_id.clone());
        }
        self.next_seq += 1;
        let timer = deadline.map(|d| self.timers.schedule(d, Due::Call(req.call_id.clone())));
        self.calls.insert(
            req.call_id.clone(),
            Pending {
                seq: self.next_seq,
                timeout,
                hard_deadline,
                reset_on_progress: req.reset_timeout_on_progress,
                token: req.progress_token.clone(),
                cancel_grace: req
                    .cancel_grace
                    .filter(|g| g.is_finite() && *g >= 0.0)
                    .unwrap_or(self.config.cancel_grace),
                phase: Phase::Running { timer },
            },
        );
        self.out.push_back(AgentOutput::Transmit(FromAgent::Call {
            // The call id doubles as the message id: it is unique among calls in flight, and a reply that
            // carries only `id` still finds its call.
            id: req.call_id.clone(),
            call_id: req.call_id,
            capability: req.capability,
            params: req.params,
            timeout,
            progress_token: req.progress_token,
            trace: req.trace,
            transfer: req.transfer,
        }));
        Ok(())
    }

    /// The caller's signal aborted (or the timer fired): send a cancel and wait, at most the grace period,
    /// for the app's answer. Does nothing for a call that is not pending or already being cancelled.
    pub fn abort_call(&mut self, call_id: &str, kind: AbortKind, now: f64) {
        let reason = match &kind {
            AbortKind::Signal(r) => r.clone(),
            AbortKind::Timeout => Some("timeout".to_owned()),
        };
        let Some(grace) = self.begin_cancel(call_id, kind, now) else {
            return;
        };
        let id = self.ids.next_id();
        let policy = self.config.policy;
        if !policy.cancel_answered() {
            self.out.push_back(AgentOutput::Transmit(FromAgent::Cancel {
                id,
                call_id: call_id.to_owned(),
                reason,
            }));
            if !policy.cancelled_call_answered() {
                // MCP: nothing will answer the cancel, and nothing may answer the call: settle now.
                return self.settle_cancelled(call_id);
            }
            // ACP: the call's own answer (-32800, or its result) settles it; the grace timer guards it.
            return self.abort_elicitations_of(call_id);
        }
        self.await_cancel_answer(&id, call_id, false, now + grace);
        self.out.push_back(AgentOutput::Transmit(FromAgent::Cancel {
            id,
            call_id: call_id.to_owned(),
            reason,
        }));
        self.abort_elicitations_of(call_id);
    }

    /// Moves a running call to cancelling: its timeout is off, its grace period on. Returns the grace, or
    /// `None` if the call is not pending or already being cancelled.
    fn begin_cancel(&mut self, call_id: &str, kind: AbortKind, now: f64) -> Option<f64> {
        let call = self.calls.get_mut(call_id)?;
        let Phase::Running { timer } = call.phase else {
            return None;
        };
        if let Some(t) = timer {
            self.timers.cancel(t);
        }
        let grace = call.cancel_grace;
        let timer = self
            .timers
            .schedule(now + grace, Due::Grace(call_id.to_owned()));
        call.phase = Phase::Cancelling { kind, timer };
        Some(grace)
    }

    /// Remembers a cancel sent as `handle`, whose answer is awaited until `deadline`.
    fn await_cancel_answer(&mut self, handle: &str, call_id: &str, explicit: bool, deadline: f64) {
        let timer = self
            .timers
            .schedule(deadline, Due::Cancel(handle.to_owned()));
        self.cancels.insert(
            handle.to_owned(),
            CancelReq {
                call_id: call_id.to_owned(),
                explicit,
                timer,
            },
        );
    }

    /// The call could not be sent (the transport refused it): settle it with `error`, nothing more to send.
    pub fn fail_call(&mut self, call_id: &str, error: AbpError<P>) {
        self.settle(
            call_id,
            Settlement::Local {
                error,
                cancelled: false,
            },
        );
    }

    /// `cancel(callId, reason)`: sends a cancel and returns the handle its answer will carry.
    pub fn cancel(
        &mut self,
        call_id: &str,
        reason: Option<String>,
        now: f64,
    ) -> Result<String, AbpError<P>> {
        if !self.is_ready() {
            return Err(self.not_ready_error());
        }
        let grace = self.config.cancel_grace;
        let id = self.ids.next_id();
        if !self.config.policy.cancel_answered() {
            let in_flight = self.calls.contains_key(call_id);
            if in_flight {
                self.abort_call(call_id, AbortKind::Signal(reason), now);
            }
            self.out.push_back(AgentOutput::CancelAnswered {
                handle: id.clone(),
                answer: CancelAnswer::Settled {
                    call_id: call_id.to_owned(),
                    cancelled: in_flight,
                    reason: (!in_flight).then_some(REASON_NOT_FOUND),
                },
            });
            return Ok(id);
        }
        // A call already being cancelled keeps its first reason and grace period. The answer is awaited as long
        // as the call's own grace (its `cancelGrace`), so the two end together.
        let grace = self
            .begin_cancel(call_id, AbortKind::Signal(reason.clone()), now)
            .or_else(|| self.calls.get(call_id).map(|c| c.cancel_grace))
            .unwrap_or(grace);
        self.await_cancel_answer(&id, call_id, true, now + grace);
        self.out.push_back(AgentOutput::Transmit(FromAgent::Cancel {
            id: id.clone(),
            call_id: call_id.to_owned(),
            reason,
        }));
        self.abort_elicitations_of(call_id);
        Ok(id)
    }

    /// The agent's answer to an elicitation request. Ignored if the request is no longer open.
    pub fn answer_elicitation(&mut self, id: &str, answer: ElicitAnswer<P>) {
        if self.forget_elicitation(id) {
            self.out
                .push_back(AgentOutput::Transmit(FromAgent::ElicitationResponse {
                    id: id.to_owned(),
                    answer,
                }));
        }
    }

    /// `shutdown()`: tells the app, then settles everything as DISCONNECTED.
    pub fn shutdown(&mut self, reason: Option<String>) {
        if matches!(
            self.state,
            State::Ready { .. } | State::Connecting { .. } | State::Listing { .. }
        ) {
            let id = self.ids.next_id();
            self.out.push_back(AgentOutput::Transmit(FromAgent::Control(
                ControlOut::Shutdown {
                    id,
                    reason,
                    session_id: None,
                },
            )));
        }
        self.close(true);
    }

    /// The transport is gone (iframe removed or reloaded, socket closed, port closed).
    pub fn transport_lost(&mut self) {
        self.close(false);
    }

    fn close(&mut self, by_user: bool) {
        if self.is_closed() {
            return;
        }
        self.probe = None;
        if matches!(
            self.state,
            State::Connecting { .. } | State::Listing { .. } | State::Idle
        ) {
            self.out
                .push_back(AgentOutput::ConnectFailed(self.lost_error()));
        }
        self.state = State::Closed { by_user };
        // What was still pending ends DISCONNECTED; after shutdown() too (the app may have sent what it had).
        let lost = if by_user {
            AbpError {
                retryable: false,
                ..AbpError::new(
                    ErrorCode::Disconnected,
                    "This client was shut down before the app answered: connect again to call the app",
                )
            }
        } else {
            self.lost_error()
        };
        let mut calls: Vec<(u64, String)> = self.calls.drain().map(|(id, c)| (c.seq, id)).collect();
        calls.sort_unstable();
        for (_, call_id) in calls {
            self.out.push_back(AgentOutput::Settled {
                call_id,
                settlement: Settlement::Local {
                    error: lost.clone(),
                    cancelled: false,
                },
            });
        }
        for (handle, req) in self.cancels.drain() {
            if req.explicit {
                self.out.push_back(AgentOutput::CancelAnswered {
                    handle,
                    answer: CancelAnswer::Local {
                        call_id: req.call_id,
                        error: lost.clone(),
                    },
                });
            }
        }
        for (id, _) in self.elicits.drain() {
            self.out.push_back(AgentOutput::ElicitationAborted { id });
        }
        // A closed connection keeps nothing: the maps' buffers go too, not just their entries (`drain` keeps the
        // capacity). A page may hold a closed client for a long time, and only the JS garbage collector frees it,
        // unaware of the wasm memory behind it. (Draining, then replacing, makes less code than taking the maps
        // whole.)
        self.calls = StrMap::new();
        self.cancels = StrMap::new();
        self.elicits = StrMap::new();
        self.timers.clear();
        self.by_token = StrMap::new();
        self.refresh = None;
        self.out.push_back(AgentOutput::Disconnected);
    }

    /// Forgets an open elicitation request and its timeout. False if it was not open.
    fn forget_elicitation(&mut self, id: &str) -> bool {
        let Some(e) = self.elicits.remove(id) else {
            return false;
        };
        if let Some(t) = e.timer {
            self.timers.cancel(t);
        }
        true
    }

    fn abort_elicitations_of(&mut self, call_id: &str) {
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
            self.out
                .push_back(AgentOutput::ElicitationAborted { id: id.clone() });
            self.out
                .push_back(AgentOutput::Transmit(FromAgent::ElicitationResponse {
                    id,
                    answer: ElicitAnswer::Cancelled,
                }));
        }
    }

    fn settle(&mut self, call_id: &str, settlement: Settlement<P>) {
        let Some(call) = self.calls.remove(call_id) else {
            return;
        };
        if let Some(t) = call.phase.timer() {
            self.timers.cancel(t);
        }
        if let Some(token) = &call.token {
            self.by_token.remove(token);
        }
        self.abort_elicitations_of(call_id);
        self.out.push_back(AgentOutput::Settled {
            call_id: call_id.to_owned(),
            settlement,
        });
    }

    /// Settles a call that is being cancelled, locally, with its cancel kind's error.
    fn settle_cancelled(&mut self, call_id: &str) {
        let kind = match self.calls.get(call_id).map(|c| &c.phase) {
            Some(Phase::Cancelling { kind, .. }) => kind.clone(),
            _ => AbortKind::Signal(None),
        };
        self.settle(
            call_id,
            Settlement::Local {
                error: kind.error(),
                cancelled: true,
            },
        );
    }

    /// Feeds one decoded message from the app.
    pub(crate) fn handle(&mut self, msg: ToAgent<P>, now: f64) {
        // Any message shows the app is there; a probe's own answer needs nothing more.
        self.last_heard = now;
        if let Some((probe_id, _)) = self.probe.take() {
            let answered = match &msg {
                ToAgent::CancelResult { id: Some(id), .. }
                | ToAgent::Control(Control::Pong { id }) => *id == probe_id,
                _ => false,
            };
            if answered {
                return;
            }
        }
        match msg {
            ToAgent::InitializeResult {
                id,
                session_id,
                error,
                payload,
            } => self.initialize_result(id, session_id, error, payload),
            ToAgent::Hello { id, payload }
                if self.config.policy.app_speaks_first()
                    && matches!(self.state, State::Connecting { .. }) =>
            {
                self.hello(id, payload)
            }
            // Only a dialect that lists capabilities separately asks for the list (ABP-only builds drop this).
            ToAgent::CapabilityList { id, capabilities }
                if self.config.policy.list_capabilities() =>
            {
                self.capability_list(id, capabilities)
            }
            ToAgent::Control(m) => self.control(m),
            ToAgent::AppReady => self.app_ready(now),
            _ if !self.is_ready() => {}
            ToAgent::CallResult {
                id,
                call_id,
                cancelled,
                payload,
            } => self.call_result(id, call_id, cancelled, payload),
            ToAgent::CancelResult {
                id,
                call_id,
                verdict,
                payload,
            } => self.cancel_result(id, call_id, verdict, payload),
            ToAgent::Progress {
                call_id,
                token,
                payload,
            } => self.progress(call_id, token, payload, now),
            ToAgent::Notification { event, payload } => {
                self.out
                    .push_back(AgentOutput::Notification { event, payload });
            }
            ToAgent::CapabilitiesChanged { payload } => self.capabilities_changed(payload),
            ToAgent::ElicitationRequest {
                id,
                call_id,
                payload,
            } => self.elicitation_request(id, call_id, payload, now),
            // Only a dialect that cancels a call's questions withdraws them (ABP-only builds drop this).
            ToAgent::ElicitationWithdrawn { id } if self.config.policy.cancel_nested() => {
                self.elicitation_withdrawn(id)
            }
            ToAgent::Hello { .. }
            | ToAgent::CapabilityList { .. }
            | ToAgent::ElicitationWithdrawn { .. } => {}
        }
    }

    /// The messages about the connection: a ping answered, a refusal sent, the app gone.
    fn control(&mut self, m: Control) {
        if let Control::Shutdown { .. } = m {
            if self.is_ready() {
                self.transport_lost();
            }
        } else if let Some(reply) = m.reply() {
            self.transmit(reply.into());
        }
    }

    /// The app no longer wants an answer to its request (the JSON-RPC dialects' cascade).
    fn elicitation_withdrawn(&mut self, id: String) {
        if !self.forget_elicitation(&id) {
            return;
        }
        self.out
            .push_back(AgentOutput::ElicitationAborted { id: id.clone() });
        if self.config.policy.cancelled_call_answered() {
            // ACP: a cancelled request is still answered (-32800), or its caller waits forever.
            self.transmit(FromAgent::ElicitationResponse {
                id,
                answer: ElicitAnswer::Cancelled,
            });
        }
    }

    fn transmit(&mut self, m: FromAgent<P>) {
        self.out.push_back(AgentOutput::Transmit(m));
    }

    /// The answer to our `initialize`: the session opens (or, in dialects that list separately, the list is
    /// asked for first), or the handshake fails with the app's error.
    fn initialize_result(
        &mut self,
        id: String,
        session_id: Option<String>,
        error: Option<AbpError<P>>,
        payload: P,
    ) {
        let State::Connecting {
            init_id, deadline, ..
        } = &self.state
        else {
            return;
        };
        if *init_id != id {
            return;
        }
        let deadline = *deadline;
        let session_id = match (error, session_id) {
            (None, Some(session_id)) => session_id,
            (error, _) => {
                let error = error.unwrap_or_else(|| {
                    AbpError::new(
                        ErrorCode::OperationFailed,
                        "initialize-result carried no sessionId",
                    )
                });
                self.state = State::Closed { by_user: false };
                self.out.push_back(AgentOutput::ConnectFailed(error));
                return;
            }
        };
        self.transmit(FromAgent::Initialized);
        if self.config.policy.list_capabilities() {
            let list_id = self.ids.next_id();
            self.transmit(FromAgent::ListCapabilities {
                id: list_id.clone(),
            });
            self.state = State::Listing {
                session_id,
                payload,
                list_id,
                deadline,
            };
            return;
        }
        self.open_session(session_id, payload);
    }

    /// The app introduced itself (Tesseron's hello): welcome it, and the session is open.
    fn hello(&mut self, id: String, payload: P) {
        let session_id = self.ids.next_id();
        self.transmit(FromAgent::Welcome {
            id,
            session_id: session_id.clone(),
        });
        self.open_session(session_id, payload);
    }

    fn open_session(&mut self, session_id: String, payload: P) {
        self.state = State::Ready {
            session_id: session_id.clone(),
        };
        self.out.push_back(AgentOutput::Connected {
            session_id,
            payload,
        });
    }

    /// The call a reply is about: by its `callId`, else by its message id (the call id doubles as it).
    fn pending_of(&self, call_id: Option<String>, id: Option<String>) -> Option<String> {
        match call_id {
            Some(c) if self.calls.contains_key(&c) => Some(c),
            _ => id.filter(|id| self.calls.contains_key(id)),
        }
    }

    fn call_result(
        &mut self,
        id: Option<String>,
        call_id: Option<String>,
        cancelled: bool,
        payload: P,
    ) {
        // None: a late or duplicated reply for a settled call.
        let Some(call_id) = self.pending_of(call_id, id) else {
            return;
        };
        let timed_out = matches!(
            self.calls.get(&call_id).map(|c| &c.phase),
            Some(Phase::Cancelling {
                kind: AbortKind::Timeout,
                ..
            })
        );
        let settlement = if cancelled && timed_out {
            Settlement::Local {
                error: AbpError::timeout(),
                cancelled: true,
            }
        } else {
            Settlement::Remote(payload)
        };
        self.settle(&call_id, settlement);
    }

    fn cancel_result(
        &mut self,
        id: Option<String>,
        call_id: Option<String>,
        verdict: CancelVerdict,
        payload: P,
    ) {
        let handle = match id.filter(|id| self.cancels.contains_key(id)) {
            Some(handle) => Some(handle),
            // Older apps do not echo the id: match the oldest open cancel for that call.
            None => call_id.as_ref().and_then(|c| {
                self.cancels
                    .iter()
                    .find(|(_, r)| &r.call_id == c)
                    .map(|(h, _)| h.clone())
            }),
        };
        let Some((handle, req)) = handle.and_then(|h| self.cancels.remove(&h).map(|r| (h, r)))
        else {
            return;
        };
        self.timers.cancel(req.timer);
        if req.explicit {
            self.out.push_back(AgentOutput::CancelAnswered {
                handle,
                answer: CancelAnswer::Remote(payload),
            });
        } else {
            self.out.push_back(AgentOutput::CancelAcknowledged {
                call_id: req.call_id.clone(),
                cancelled: matches!(verdict, CancelVerdict::Cancelled),
            });
        }
        if !self.calls.contains_key(&req.call_id) {
            return;
        }
        match verdict {
            // Either the app stopped it, or it never saw it: the call-result (if any) adds nothing.
            CancelVerdict::Cancelled | CancelVerdict::NotFound | CancelVerdict::Refused(()) => {
                self.settle_cancelled(&req.call_id)
            }
            // The real result is on its way; the grace timer still guards it.
            CancelVerdict::AlreadyCompleted => {}
        }
    }

    fn progress(&mut self, call_id: Option<String>, token: Option<String>, payload: P, now: f64) {
        let call_id = match call_id {
            Some(c) if self.calls.contains_key(&c) => c,
            _ => match token.as_ref().and_then(|t| self.by_token.get(t)) {
                Some(c) => c.clone(),
                None => return,
            },
        };
        let Some(call) = self.calls.get_mut(&call_id) else {
            return;
        };
        let Phase::Running { timer } = &mut call.phase else {
            return;
        };
        if let (true, Some(t)) = (call.reset_on_progress, call.timeout) {
            let mut d = now + t;
            if let Some(h) = call.hard_deadline {
                d = d.min(h);
            }
            if let Some(old) = timer.take() {
                self.timers.cancel(old);
            }
            *timer = Some(self.timers.schedule(d, Due::Call(call_id.clone())));
        }
        self.out
            .push_back(AgentOutput::Progress { call_id, payload });
    }

    fn capabilities_changed(&mut self, payload: P) {
        if self.config.policy.list_capabilities() {
            // The notice carries no list: ask for it.
            let id = self.ids.next_id();
            self.refresh = Some(id.clone());
            self.transmit(FromAgent::ListCapabilities { id });
        } else {
            self.out
                .push_back(AgentOutput::CapabilitiesChanged { payload });
        }
    }

    fn elicitation_request(&mut self, id: String, call_id: Option<String>, payload: P, now: f64) {
        if self.elicits.contains_key(&id) {
            return; // duplicated
        }
        if let Some(c) = &call_id {
            if !self.calls.get(c).is_some_and(|p| p.phase.is_running()) {
                self.transmit(FromAgent::ElicitationResponse {
                    id,
                    answer: ElicitAnswer::Cancelled,
                });
                return;
            }
        }
        // The request's own timeout: past it the app has stopped waiting, so the handler stops too.
        let timer = payload
            .get_f64("timeout")
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| self.timers.schedule(now + t, Due::Elicit(id.clone())));
        self.elicits.insert(
            id.clone(),
            Elicit {
                call_id: call_id.clone(),
                timer,
            },
        );
        self.out.push_back(AgentOutput::Elicitation {
            id,
            call_id,
            payload,
        });
    }

    /// The app's capability list (dialects that list separately): completes the handshake, or answers a
    /// refresh after the app said its list changed.
    fn capability_list(&mut self, id: String, list: P) {
        if let State::Listing { list_id, .. } = &self.state {
            if *list_id != id {
                return;
            }
            let State::Listing {
                session_id,
                mut payload,
                ..
            } = std::mem::replace(&mut self.state, State::Idle)
            else {
                return;
            };
            if payload.kind() == Kind::Object {
                payload.set("capabilities", list);
            }
            return self.open_session(session_id, payload);
        }
        if self.is_ready() && self.refresh.as_deref() == Some(id.as_str()) {
            self.refresh = None;
            let mut payload = P::object();
            payload.set("capabilities", list);
            self.out
                .push_back(AgentOutput::CapabilitiesChanged { payload });
        }
    }

    /// The earliest time at which [`AgentCore::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<f64> {
        let handshake = match &self.state {
            State::Connecting {
                deadline,
                next_resend,
                ..
            } => Some(deadline.min(*next_resend)),
            State::Listing { deadline, .. } => Some(*deadline),
            _ => None,
        };
        [handshake, self.heartbeat_due(), self.timers.next()]
            .into_iter()
            .flatten()
            .min_by(f64::total_cmp)
    }

    /// When the heartbeat next needs attention: a probe's deadline, or when silence calls for one.
    fn heartbeat_due(&self) -> Option<f64> {
        let interval = self.config.heartbeat?;
        if !self.is_ready() || self.calls.is_empty() {
            return None;
        }
        Some(match &self.probe {
            Some((_, deadline)) => *deadline,
            None => self.last_heard + interval,
        })
    }

    /// Sends a probe after `heartbeat` of silence; an unanswered one loses the transport. True if lost.
    fn heartbeat(&mut self, now: f64) -> bool {
        let (Some(due), Some(interval)) = (self.heartbeat_due(), self.config.heartbeat) else {
            return false;
        };
        if due > now {
            return false;
        }
        if self.probe.is_some() {
            self.transport_lost();
            return true;
        }
        let id = self.ids.next_id();
        let probe = if self.config.policy.cancel_answered() {
            // Every ABP app answers a cancel, even for a call it never saw.
            FromAgent::Cancel {
                id: id.clone(),
                call_id: HEARTBEAT_CALL_ID.to_owned(),
                reason: Some("heartbeat".to_owned()),
            }
        } else {
            FromAgent::Control(ControlOut::Ping { id: id.clone() })
        };
        self.out.push_back(AgentOutput::Transmit(probe));
        self.probe = Some((id, now + interval));
        false
    }

    pub fn handle_timeout(&mut self, now: f64) {
        if self.heartbeat(now) || self.handshake_timeout(now) {
            return;
        }
        let mut timed_out = Vec::new();
        let mut graced = Vec::new();
        let mut unanswered = Vec::new();
        while let Some(due) = self.timers.pop_due(now) {
            match due {
                Due::Call(id) => timed_out.push(id),
                Due::Grace(id) => graced.push(id),
                Due::Cancel(handle) => unanswered.push(handle),
                Due::Elicit(id) => self.elicitation_timed_out(id),
            }
        }
        // In deadline order, and in sending order for equal deadlines (the timers keep both).
        for id in graced {
            self.settle_cancelled(&id);
        }
        for id in timed_out {
            if let Some(Phase::Running { timer }) = self.calls.get_mut(&id).map(|c| &mut c.phase) {
                *timer = None; // it just fired
            }
            self.abort_call(&id, AbortKind::Timeout, now);
        }
        for handle in unanswered {
            self.cancel_unanswered(handle);
        }
    }

    /// The app's page says it now listens (ABP's `app/ready`, or the transport's own sign, MCP-B's
    /// `'mcp-server-ready'`). While connecting, `initialize` is re-sent now rather than at the next re-send,
    /// which after the first second can be up to a second away: an app that loads late is answered within a
    /// message's hop of listening. The re-send schedule goes on from here; its interval is unchanged. Anything
    /// else (connected, a dialect whose app speaks first or whose `initialize` is not re-sent) ignores it.
    pub fn app_ready(&mut self, now: f64) {
        if !self.config.policy.resend_initialize || self.config.policy.app_speaks_first() {
            return;
        }
        let State::Connecting {
            init_id,
            next_resend,
            interval,
            ..
        } = &mut self.state
        else {
            return;
        };
        *next_resend = now + *interval;
        let id = init_id.clone();
        self.transmit(FromAgent::Initialize { id });
    }

    /// The handshake's deadline and `initialize` re-sends. True if the handshake failed.
    fn handshake_timeout(&mut self, now: f64) -> bool {
        match &mut self.state {
            State::Connecting {
                init_id,
                deadline,
                next_resend,
                interval,
                fast_until,
            } => {
                if *deadline <= now {
                    return self.connect_failed(NO_ANSWER_TO_INITIALIZE);
                }
                if self.config.policy.resend_initialize && *next_resend <= now {
                    if *fast_until <= now {
                        *interval = (*interval * 2.0).min(1000.0);
                    }
                    *next_resend = now + *interval;
                    let id = init_id.clone();
                    self.transmit(FromAgent::Initialize { id });
                }
                false
            }
            State::Listing { deadline, .. } if *deadline <= now => {
                self.connect_failed("The app did not list its capabilities before connectTimeout")
            }
            _ => false,
        }
    }

    fn connect_failed(&mut self, message: &'static str) -> bool {
        self.state = State::Closed { by_user: false };
        self.out.push_back(AgentOutput::ConnectFailed(AbpError::new(
            ErrorCode::Timeout,
            message,
        )));
        true
    }

    fn elicitation_timed_out(&mut self, id: String) {
        if self.elicits.remove(&id).is_none() {
            return;
        }
        self.out
            .push_back(AgentOutput::ElicitationAborted { id: id.clone() });
        self.transmit(FromAgent::ElicitationResponse {
            id,
            answer: ElicitAnswer::Failed(AbpError::new(
                ErrorCode::Timeout,
                "The elicitation timed out",
            )),
        });
    }

    /// No answer to a cancel in time: an explicit `cancel()` learns so; the call has its own grace timer.
    fn cancel_unanswered(&mut self, handle: String) {
        let Some(req) = self.cancels.remove(&handle) else {
            return;
        };
        if req.explicit {
            self.out.push_back(AgentOutput::CancelAnswered {
                handle,
                answer: CancelAnswer::Local {
                    call_id: req.call_id,
                    error: AbpError::new(
                        ErrorCode::Timeout,
                        "The app did not answer the cancel in time",
                    ),
                },
            });
        }
    }

    pub(crate) fn poll(&mut self) -> Option<AgentOutput<P>> {
        let next = self.out.pop_front();
        if next.is_none() && self.out.capacity() > 0 && self.is_closed() {
            // The last output of a closed connection is out: free the queue's buffer as well (see `close`).
            self.out = VecDeque::new();
        }
        next
    }
}
