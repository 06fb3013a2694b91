//! The test harness: a [`Pair`] is an agent connection and an app connection driven against each other in
//! memory, every message going through the real codecs of their dialect (ABP's envelope unless told
//! otherwise), with simulated time (`now`, moved by [`Pair::advance`]). Each side's sent messages and events
//! are kept for the tests to read. Also the helpers the test files share: [`request`] (a plain call request),
//! [`remote`] and [`local`] (what a settlement holds).

use std::collections::VecDeque;

use serde_json::{json, Value};

use crate::core::agent::{AgentConfig, AgentOutput, CallRequest, Settlement};
use crate::core::app::{AppConfig, AppOutput};
use crate::core::capability::Registry;
use crate::core::connection::{AgentConnection, AppConnection};
use crate::core::dialect::{Carrier, DialectKind};
use crate::core::error::ErrorCode;
use crate::core::message::Outcome;
use crate::core::trace::Trace;

pub(crate) struct Pair {
    pub(crate) now: f64,
    pub(crate) dialect: DialectKind,
    pub(crate) agent: AgentConnection<Value>,
    pub(crate) app: AppConnection<Value>,
    pub(crate) reg: Registry<Value>,
    pub(crate) to_app: VecDeque<Value>,
    pub(crate) to_agent: VecDeque<Value>,
    pub(crate) agent_events: Vec<AgentOutput<Value>>,
    pub(crate) app_events: Vec<AppOutput<Value>>,
    /// Every message the agent sent, in order.
    pub(crate) agent_sent: Vec<Value>,
    /// Every message the app sent, in order.
    pub(crate) app_sent: Vec<Value>,
}

impl Pair {
    pub(crate) fn with(app_config: AppConfig) -> Pair {
        Pair::speaking(DialectKind::Abp, app_config)
    }

    /// Both sides speaking `dialect`, over a window (the agent re-sends its initialize).
    pub(crate) fn speaking(dialect: DialectKind, app_config: AppConfig) -> Pair {
        let mut reg = Registry::default();
        reg.register("echo", Some(json!({ "name": "echo" })))
            .unwrap();
        reg.register(
            "export.pdf",
            Some(json!({ "name": "export.pdf", "inputSchema": { "type": "object", "required": ["pages"],
                "properties": { "pages": { "type": "integer", "minimum": 1, "maximum": 500 } } } })),
        )
        .unwrap();
        let app_info = json!({ "id": "com.test", "name": "test", "version": "1" });
        Pair {
            now: 1000.0,
            dialect,
            agent: Pair::agent_of(dialect, AgentConfig::default(), "a"),
            app: AppConnection::new(dialect, Carrier::Window, app_config, app_info, "s"),
            reg,
            to_app: VecDeque::new(),
            to_agent: VecDeque::new(),
            agent_events: Vec::new(),
            app_events: Vec::new(),
            agent_sent: Vec::new(),
            app_sent: Vec::new(),
        }
    }

    /// An agent speaking `dialect` over a window, with `config` (its policy is the dialect's).
    pub(crate) fn agent_of(
        dialect: DialectKind,
        config: AgentConfig,
        prefix: &str,
    ) -> AgentConnection<Value> {
        let info = json!({ "name": "test-agent", "version": "1" });
        AgentConnection::new(dialect, Carrier::Window, config, info, prefix)
    }

    /// A new agent in this pair's dialect (a reloaded agent page, or other settings).
    pub(crate) fn new_agent(&mut self, config: AgentConfig, prefix: &str) {
        self.agent = Pair::agent_of(self.dialect, config, prefix);
    }

    pub(crate) fn new() -> Pair {
        Pair::with(AppConfig::default())
    }

    pub(crate) fn connected() -> Pair {
        let mut p = Pair::new();
        p.agent.connect(p.now);
        p.run();
        assert!(p.agent.is_ready());
        p.agent_events.clear();
        p.app_events.clear();
        p
    }

    pub(crate) fn drain(&mut self) {
        let now = self.now;
        while let Some(o) = self.agent.poll(&|| now) {
            match o.event() {
                Err(t) => {
                    self.agent_sent.push(t.message.clone());
                    self.to_app.push_back(t.message);
                }
                Ok(e) => self.agent_events.push(e),
            }
        }
        let reg = &self.reg;
        let caps = || reg.list();
        while let Some(o) = self.app.poll(&|| now, &caps) {
            match o.event() {
                Err(t) => {
                    self.app_sent.push(t.message.clone());
                    self.to_agent.push_back(t.message);
                }
                Ok(e) => self.app_events.push(e),
            }
        }
    }

    pub(crate) fn deliver_to_app(&mut self) {
        if let Some(v) = self.to_app.pop_front() {
            let _ = self.app.receive(&v, self.now, &self.reg);
        }
        self.drain();
    }

    pub(crate) fn deliver_to_agent(&mut self) {
        if let Some(v) = self.to_agent.pop_front() {
            let _ = self.agent.receive(&v, self.now);
        }
        self.drain();
    }

    /// Delivers everything in both directions until quiet.
    pub(crate) fn run(&mut self) {
        self.drain();
        while !self.to_app.is_empty() || !self.to_agent.is_empty() {
            self.deliver_to_app();
            self.deliver_to_agent();
        }
    }

    pub(crate) fn advance(&mut self, ms: f64) {
        self.now += ms;
        self.agent.handle_timeout(self.now);
        self.app.handle_timeout(self.now);
        self.run();
    }

    pub(crate) fn call(&mut self, call_id: &str, capability: &str, params: Value) {
        self.call_with(CallRequest {
            params,
            ..request(call_id, capability)
        });
    }

    pub(crate) fn call_with(&mut self, req: CallRequest<Value>) {
        self.agent.start_call(req, self.now).expect("call accepted");
        self.drain();
    }

    pub(crate) fn settled(&self, call_id: &str) -> Vec<&Settlement<Value>> {
        settled_in(&self.agent_events, call_id)
    }

    /// Each handler the app started, in order: its call id and the trace context it was given.
    pub(crate) fn starts(&self) -> impl Iterator<Item = (&str, Option<&Trace>)> {
        self.app_events.iter().filter_map(|e| match e {
            AppOutput::Start { call_id, trace, .. } => Some((call_id.as_str(), trace.as_ref())),
            _ => None,
        })
    }

    pub(crate) fn started(&self) -> Vec<&str> {
        self.starts().map(|(call_id, _)| call_id).collect()
    }

    pub(crate) fn aborted(&self) -> Vec<&str> {
        self.app_events
            .iter()
            .filter_map(|e| match e {
                AppOutput::Abort { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn app_sent_of(&self, ty: &str) -> Vec<&Value> {
        self.app_sent.iter().filter(|m| m["type"] == ty).collect()
    }

    pub(crate) fn agent_sent_of(&self, ty: &str) -> Vec<&Value> {
        self.agent_sent.iter().filter(|m| m["type"] == ty).collect()
    }

    pub(crate) fn complete(&mut self, call_id: &str, data: Value) {
        self.app
            .complete(call_id, Outcome::Success { data }, None, self.now);
        self.drain();
    }
}

/// How `call_id` settled, in an agent's events (once, unless something is wrong).
pub(crate) fn settled_in<'a>(
    events: &'a [AgentOutput<Value>],
    call_id: &str,
) -> Vec<&'a Settlement<Value>> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentOutput::Settled {
                call_id: c,
                settlement,
            } if c == call_id => Some(settlement),
            _ => None,
        })
        .collect()
}

/// A plain call request; tests change the fields they care about with `..request(…)`.
pub(crate) fn request(call_id: &str, capability: &str) -> CallRequest<Value> {
    CallRequest {
        call_id: call_id.into(),
        capability: capability.into(),
        params: json!({}),
        timeout: None,
        progress_token: None,
        trace: None,
        reset_timeout_on_progress: false,
        max_total_timeout: None,
        transfer: None,
        cancel_grace: None,
    }
}

pub(crate) fn remote(s: &Settlement<Value>) -> &Value {
    match s {
        Settlement::Remote(v) => v,
        other => panic!("expected the app's response, got {other:?}"),
    }
}

pub(crate) fn local(s: &Settlement<Value>) -> (ErrorCode, bool, bool) {
    match s {
        Settlement::Local { error, cancelled } => (error.code.clone(), *cancelled, error.retryable),
        other => panic!("expected a local settlement, got {other:?}"),
    }
}
