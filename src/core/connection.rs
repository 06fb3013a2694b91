//! One connection per role: the role's state machine, the dialect's codec and who this side is, behind one
//! surface in the shape of quinn-proto's `Connection`. Every driver (the browser's `AbpClient` and `AbpApp`,
//! `abp-peer`'s native agent and MCP gateway, the core's own tests) moves values between its transport and a
//! connection and turns the connection's events into actions; none of them calls a codec.
//!
//! - **In:** wire values with the time ([`AgentConnection::receive`], [`AppConnection::receive`]), or a
//!   message the transport already read ([`receive_read`](AgentConnection::receive_read), the private
//!   channel's one-pass reader); commands through the state machine's own methods, reached by `Deref`
//!   (`start_call`, `abort_call`, `complete`, `progress`, …); and [`handle_timeout`](AgentCore::handle_timeout)
//!   when the deadline passes.
//! - **Out:** [`poll`](AgentConnection::poll) gives, in the order the machine made them, wire values to send
//!   ([`Transmit`]) and events for the driver; [`poll_timeout`](AgentCore::poll_timeout) the next deadline.
//!
//! The polling order: after anything goes in (a message, a command, a timeout), call `poll` until it returns
//! `None`, then `poll_timeout`, and arm the timer with it. Events may make the driver run user code that
//! issues more commands; `poll` picks up what they add, so one loop until `None` is enough.
//!
//! Times are milliseconds on the driver's monotonic clock. The wire's `timestamp` is Unix milliseconds, read
//! through the `clock` given to `poll` only when a message carries one.

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};

use super::agent::{AgentConfig, AgentCore, AgentOutput};
use super::app::{AppConfig, AppConn, AppOutput};
use super::capability::Registry;
use super::dialect::{Carrier, Codec, DialectKind, Policy};
use super::dialect::{Hello, Ignored};
use super::error::AbpError;
use super::message::{Control, ControlOut, FromAgent, FromApp, Incoming, Outcome, ToApp};
use super::payload::{Timestamp, Wire};

/// One encoded message to send.
#[derive(Clone, Debug)]
pub struct Transmit<P> {
    /// The wire value (a structured-clone value, or what becomes one text frame).
    pub message: P,
    /// The postMessage transfer list a call or a result carries.
    pub transfer: Option<P>,
    /// Which message it is, where the driver sends it differently or must report that it could not.
    pub sent: Sent,
}

impl<P> Transmit<P> {
    fn other(message: P) -> Self {
        Transmit {
            message,
            transfer: None,
            sent: Sent::Other,
        }
    }
}

/// What a [`Transmit`] is, for the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The agent's `initialize` (it may carry the offer of a private channel).
    Initialize,
    /// A `shutdown`: the page may be unloading, so it also (the app: only) goes by window, where a closing
    /// channel may not deliver it.
    Shutdown,
    /// A call. If it cannot be sent, [`AgentConnection::unsent`] settles it with the reason.
    Call { call_id: String },
    /// A call's result. If it cannot be sent, [`AppConnection::unsent`] tells the agent instead.
    Result { id: String, call_id: String },
    /// Anything else.
    Other,
}

/// An agent's connection: [`AgentCore`] with the dialect's codec and the agent's `{ name, version }`.
/// Commands and state (`connect`, `start_call`, `cancel`, `is_ready`, …) are the core's, through `Deref`.
pub struct AgentConnection<P> {
    core: AgentCore<P>,
    codec: Codec<P>,
    info: P,
}

impl<P: Wire> AgentConnection<P> {
    /// `config.policy` is replaced by the one `dialect` and `carrier` make.
    pub fn new(
        dialect: DialectKind,
        carrier: Carrier,
        config: AgentConfig,
        info: P,
        id_prefix: impl Into<String>,
    ) -> Self {
        let config = AgentConfig {
            policy: Policy::of(dialect, carrier),
            ..config
        };
        AgentConnection {
            core: AgentCore::new(config, id_prefix),
            codec: Codec::new(dialect, true),
            info,
        }
    }

    pub fn dialect(&self) -> DialectKind {
        self.codec.kind()
    }

    pub fn policy(&self) -> Policy {
        self.core.config().policy
    }

    /// One value from the wire. `Ok(false)`: a message, but not an agent's to read (another agent's, or our
    /// own seen on a shared window). `Err`: not a message of this dialect (counted by the driver).
    pub fn receive(&mut self, msg: &P, now: f64) -> Result<bool, Ignored> {
        let read = self.codec.decode(msg)?;
        Ok(self.receive_read(read, now))
    }

    /// A message the transport already read (the private channel's one-pass reader). Whether it was the
    /// agent's to read.
    pub fn receive_read(&mut self, msg: Incoming<P>, now: f64) -> bool {
        match msg.for_agent() {
            Some(m) => {
                self.core.handle(m, now);
                true
            }
            None => false,
        }
    }

    /// Whether `msg`, which came from no window the transport can name (its frame is already gone), is the
    /// app's `shutdown` of this session: only the app of the session can name it.
    pub fn names_session(&mut self, msg: &P) -> bool {
        match self.codec.decode(msg) {
            Ok(Incoming::Control(Control::Shutdown {
                session_id: Some(s),
                ..
            })) => self.core.session_id() == Some(s.as_str()),
            _ => false,
        }
    }

    /// Speak this protocol version and no other, before `connect` (MCP: a dated version, which also picks the
    /// era: `2025-11-25` or older starts with `initialize`, `2026-07-28` never does). By default an MCP client
    /// asks `server/discover` first and falls back to `initialize` when the server does not answer it.
    /// False for a version the dialect does not speak (and in dialects with one version): nothing changes.
    pub fn pin_version(&mut self, version: &str) -> bool {
        self.codec.pin_version(version)
    }

    /// Whether a client of `dialect` can be pinned to `version` ([`pin_version`](Self::pin_version)), asked
    /// before there is a connection to pin.
    pub fn speaks_version(dialect: DialectKind, version: &str) -> bool {
        Codec::<P>::new(dialect, true).pin_version(version)
    }

    /// A call could not be sent (`sent` is its [`Sent::Call`]): it settles with `error`.
    pub fn unsent(&mut self, sent: &Sent, error: AbpError<P>) {
        if let Sent::Call { call_id } = sent {
            self.core.fail_call(call_id, error);
        }
    }

    /// What to do next: wire values to send and events, in order; `None` when there is nothing. `clock`:
    /// Unix milliseconds, for the messages that carry a timestamp.
    pub fn poll(&mut self, clock: Timestamp<'_>) -> Option<AgentOutput<P, Transmit<P>>> {
        if let Some(own) = self.codec.queued() {
            return Some(AgentOutput::Transmit(Transmit::other(own)));
        }
        loop {
            let m = match self.core.poll()?.event() {
                Ok(event) => return Some(event),
                Err(m) => m,
            };
            let sent = match &m {
                FromAgent::Initialize { .. } => Sent::Initialize,
                FromAgent::Control(ControlOut::Shutdown { .. }) => Sent::Shutdown,
                FromAgent::Call { call_id, .. } => Sent::Call {
                    call_id: call_id.clone(),
                },
                _ => Sent::Other,
            };
            let hello = Hello {
                info: &self.info,
                capabilities: None,
            };
            // `None`: the dialect has no such message.
            if let Some((message, transfer)) = self.codec.encode_agent(m, clock, &hello) {
                return Some(AgentOutput::Transmit(Transmit {
                    message,
                    transfer,
                    sent,
                }));
            }
        }
    }
}

impl<P> Deref for AgentConnection<P> {
    type Target = AgentCore<P>;
    fn deref(&self) -> &AgentCore<P> {
        &self.core
    }
}

impl<P> DerefMut for AgentConnection<P> {
    fn deref_mut(&mut self) -> &mut AgentCore<P> {
        &mut self.core
    }
}

/// An app's connection: [`AppConn`] with the dialect's codec and the app's `{ id, name, version, … }`.
/// Commands and state (`complete`, `progress`, `elicit`, `session_id`, …) are the core's, through `Deref`.
/// The registry is the app's, shared by its connections: calls are checked against it as they arrive, and
/// the capability list is read from it when a message carries it.
pub struct AppConnection<P> {
    core: AppConn<P>,
    codec: Codec<P>,
    info: P,
    /// Sent before anything the core has queued: a result's failure, when the result could not be sent.
    urgent: VecDeque<FromApp<P>>,
}

impl<P: Wire> AppConnection<P> {
    /// `config.policy` is replaced by the one `dialect` and `carrier` make, and `config.progress_interval`
    /// is raised to the dialect's least.
    pub fn new(
        dialect: DialectKind,
        carrier: Carrier,
        config: AppConfig,
        info: P,
        id_prefix: impl Into<String>,
    ) -> Self {
        let policy = Policy::of(dialect, carrier);
        let config = AppConfig {
            progress_interval: config
                .progress_interval
                .max(f64::from(policy.min_progress_interval)),
            policy,
            ..config
        };
        AppConnection {
            core: AppConn::new(config, id_prefix),
            codec: Codec::new(dialect, false),
            info,
            urgent: VecDeque::new(),
        }
    }

    pub fn dialect(&self) -> DialectKind {
        self.codec.kind()
    }

    pub fn policy(&self) -> Policy {
        self.core.config().policy
    }

    pub fn info(&self) -> &P {
        &self.info
    }

    /// One value from the wire. `Ok(false)`: a message, but not an app's to read (another app's, or our own
    /// seen on a shared window). `Err`: not a message of this dialect (counted by the driver).
    pub fn receive(&mut self, msg: &P, now: f64, registry: &Registry<P>) -> Result<bool, Ignored> {
        let read = self.codec.decode(msg)?;
        Ok(self.receive_read(read, now, registry))
    }

    /// A message the transport already read (the private channel's one-pass reader). Whether it was the
    /// app's to read.
    pub fn receive_read(&mut self, msg: Incoming<P>, now: f64, registry: &Registry<P>) -> bool {
        match msg.for_app() {
            Some(m) => {
                self.core.handle(m, now, registry);
                true
            }
            None => false,
        }
    }

    /// Reads one value from the wire without acting on it, for a driver that answers some messages itself
    /// ([`answer`](Self::answer)) and gives the rest to [`handle`](Self::handle). `Ok(None)`: not an app's
    /// to read.
    pub fn read(&mut self, msg: &P) -> Result<Option<ToApp<P>>, Ignored> {
        Ok(self.codec.decode(msg)?.for_app())
    }

    /// A message [`read`](Self::read) returned.
    pub fn handle(&mut self, msg: ToApp<P>, now: f64, registry: &Registry<P>) {
        self.core.handle(msg, now, registry);
    }

    /// Answers a call that the driver read and did not hand on (`id` and `call_id` as it came), before
    /// anything else.
    pub fn answer(&mut self, id: String, call_id: String, outcome: Outcome<P>) {
        self.urgent.push_back(FromApp::CallResult {
            id,
            call_id,
            outcome,
            duration: 0.0,
            transfer: None,
        });
    }

    /// Whether `msg` is an `initialize` that opens this connection's session, or is the one that opened it
    /// (re-sent): the private channel it offers is then the one to answer on.
    pub fn opens_session(&mut self, msg: &P) -> bool {
        if !self.policy().abp_envelope() {
            return false; // only ABP's agent offers a channel
        }
        match self.codec.decode(msg) {
            Ok(Incoming::ToApp(ToApp::Initialize { id, .. })) => {
                let opened = self.core.session_init_id();
                opened.is_none() || opened == Some(id.as_str())
            }
            _ => false,
        }
    }

    /// This side serves the protocol extension `name` (MCP: `io.modelcontextprotocol/tasks`, which `abp-peer
    /// mcp` serves), and its dialect advertises it.
    pub fn offer_extension(&mut self, name: &str) {
        self.codec.offer_extension(name);
    }

    /// A task this side keeps changed (MCP's tasks extension; `detailed` as `tasks/get` shows it): each
    /// `subscriptions/listen` that follows it hears `notifications/tasks`, which `poll` gives.
    pub fn task_changed(&mut self, task_id: &str, detailed: &P) {
        self.codec.task_changed(task_id, detailed);
    }

    /// This side is going away (the process stops): the dialect says what it says then (MCP: each open listen
    /// is torn down), and every call still running is aborted. `poll` gives both.
    pub fn close(&mut self) {
        self.codec.close();
        self.core.transport_lost();
    }

    /// A result could not be sent (`sent` is its [`Sent::Result`]; the value could not be cloned): the agent
    /// gets OPERATION_FAILED with `error`'s message instead, before anything else. That answer is sent once: if
    /// it cannot be sent either, it is dropped.
    pub fn unsent(&mut self, sent: &Sent, error: AbpError<P>) {
        if let Sent::Result { id, call_id } = sent {
            self.answer(id.clone(), call_id.clone(), Outcome::Failure(error));
        }
    }

    /// What to do next: wire values to send and events, in order; `None` when there is nothing. `clock`: Unix
    /// milliseconds, for the messages that carry a timestamp; `capabilities`: the descriptors, for the
    /// messages that carry the list.
    pub fn poll(
        &mut self,
        clock: Timestamp<'_>,
        capabilities: &dyn Fn() -> P,
    ) -> Option<AppOutput<P, Transmit<P>>> {
        if let Some(own) = self.codec.queued() {
            return Some(AppOutput::Transmit(Transmit::other(own)));
        }
        loop {
            if let Some((id, payload)) = self.codec.given() {
                self.core.elicitation_answered(id, payload);
            }
            let (m, sent) = match self.urgent.pop_front() {
                // An answer that stands in for a result is not replaced again if it cannot be sent either (the
                // link is gone): it is dropped, and nothing loops.
                Some(m) => (m, Sent::Other),
                None => match self.core.poll()?.event() {
                    Ok(event) => return Some(event),
                    Err(m) => {
                        let sent = match &m {
                            FromApp::Control(ControlOut::Shutdown { .. }) => Sent::Shutdown,
                            FromApp::CallResult { id, call_id, .. } => Sent::Result {
                                id: id.clone(),
                                call_id: call_id.clone(),
                            },
                            _ => Sent::Other,
                        };
                        (m, sent)
                    }
                },
            };
            let hello = Hello {
                info: &self.info,
                capabilities: Some(capabilities),
            };
            // `None`: the dialect has no such message.
            if let Some((message, transfer)) = self.codec.encode_app(m, clock, &hello) {
                return Some(AppOutput::Transmit(Transmit {
                    message,
                    transfer,
                    sent,
                }));
            }
        }
    }
}

impl<P> Deref for AppConnection<P> {
    type Target = AppConn<P>;
    fn deref(&self) -> &AppConn<P> {
        &self.core
    }
}

impl<P> DerefMut for AppConnection<P> {
    fn deref_mut(&mut self) -> &mut AppConn<P> {
        &mut self.core
    }
}
