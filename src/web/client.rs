//! `AbpClient`: the agent side. Calls return Promises that always resolve to an `ABPResponse`;
//! an `AbortSignal` or a timeout cancels them on the app too.

use crate::core::capability::{apply_changes, support_info};
use crate::core::map::{StrMap, StrSet};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{AbortController, AbortSignal, MessagePort};

use super::dom::{later, now, timestamp, when_settled, Timer};
use super::link::{take_target, Link, Received, Sink};
use super::options::{call, connect, OptionRead};
use super::types::{CallOptions, ClientOptions};
use super::value::{
    console_error2, console_warn, dialect_option, id_prefix, is_thenable, js_error, js_string,
    keep_id, local_call_response, new_call_id, opt_function, opt_number, opt_string, to_str,
    try_call, type_error, Deferred,
};
use crate::core::payload::Wire;
use crate::core::payload::{Kind, Payload};
use crate::core::text::text;
use crate::core::trace::Trace;
use crate::core::{
    AbortKind, AbpError, AgentConfig, AgentConnection, AgentOutput, CallRequest, CancelAnswer,
    ElicitAnswer, ErrorCode, Sent, Settlement, Transmit, NO_ANSWER_TO_INITIALIZE,
};

#[wasm_bindgen(module = "/src/web/client.js")]
extern "C" {
    #[wasm_bindgen(js_name = watchAbort)]
    pub(crate) fn watch_abort(
        signal: &JsValue,
        on_abort: &JsValue,
        call_id: &JsValue,
    ) -> js_sys::Function;
    /// `client.call`'s options in one pass: the signal, and into `numbers` (`call::VIEW_LEN` of them) the
    /// number options and a bit per option given, at the places src/web/options.rs declares (`call`).
    #[wasm_bindgen(js_name = readCallOptions)]
    pub(crate) fn read_call_options(options: &JsValue, numbers: &mut [f64]) -> JsValue;
}

struct CallJs {
    /// The caller's promise.
    deferred: Deferred,
    on_progress: Option<Function>,
    /// Stops watching the call's signal (from `watchAbort`); called when the call goes.
    unwatch: Option<Function>,
    /// When the call was sent (`now()`), for the `metadata.duration` of a response settled here.
    started: f64,
}

impl CallJs {
    fn stop_watching(&mut self) {
        if let Some(f) = self.unwatch.take() {
            let _ = f.call0(&JsValue::NULL);
        }
    }
}

impl Drop for CallJs {
    fn drop(&mut self) {
        self.stop_watching();
    }
}

#[derive(Default)]
struct Hooks {
    on_progress: Option<Function>,
    on_notification: Option<Function>,
    on_elicitation: Option<Function>,
    on_capabilities_changed: Option<Function>,
}

struct ClientJs {
    calls: StrMap<CallJs>,
    cancels: StrMap<Deferred>,
    elicits: StrMap<AbortController>,
    connect: Option<Deferred>,
    capabilities: JsValue,
    /// Deprecated or experimental capabilities not warned about yet: name → the warning.
    warn_once: StrMap<String>,
    warned: StrSet,
    app: JsValue,
}

impl ClientInner {
    /// Warns (once per name, in the console) before the first call to a deprecated or experimental
    /// capability.
    fn warn_once(&self, capability: &str) {
        let warning = {
            let mut js = self.js.borrow_mut();
            if js.warn_once.is_empty() {
                return;
            }
            let w = js.warn_once.remove(capability);
            if w.is_some() {
                js.warned.insert(capability.to_owned());
            }
            w
        };
        if let Some(w) = warning {
            console_warn(&w);
        }
    }
}

impl ClientJs {
    /// Takes the app's capability list, and notes which ones deserve a warning on first use.
    fn set_capabilities(&mut self, list: JsValue) {
        for d in Array::from(&list).iter() {
            let Some(name) = opt_string(&d, "name") else {
                continue;
            };
            let flag = |key: &str| d.get(key).and_then(|v| v.as_bool()) == Some(true);
            let warning = if flag("deprecated") {
                let why = opt_string(&d, "deprecationMessage").unwrap_or_default();
                text(&["abp-wasm: capability '", &name, "' is deprecated. ", &why])
            } else if flag("experimental") {
                text(&[
                    "abp-wasm: capability '",
                    &name,
                    "' is experimental and may change",
                ])
            } else {
                continue;
            };
            if !self.warned.contains(&name) {
                self.warn_once.insert(name, warning);
            }
        }
        self.capabilities = list;
    }
}

type AbortHook = Closure<dyn FnMut(String, JsValue)>;

pub(crate) struct ClientInner {
    /// Speaking ABP unless `dialect` says otherwise.
    core: RefCell<AgentConnection<JsValue>>,
    js: RefCell<ClientJs>,
    hooks: RefCell<Hooks>,
    // Boxed, like the timer: a closed client, kept until the garbage collector finds its handle, then holds
    // neither inline.
    link: RefCell<Option<Box<Link>>>,
    timer: RefCell<Option<Box<Timer>>>,
    ignored: Cell<u32>,
    rejected: Cell<u32>,
    /// `(callId, reason)` from any call's signal (one closure for all calls; see `watchAbort`).
    on_abort: RefCell<Option<AbortHook>>,
    /// `initialize` offers the app a private channel: ABP, unless `messages: 'window'` (the link offers it only to
    /// a frame or window).
    offer_channel: bool,
}

thread_local! {
    /// Clients stay alive from `connect` until they disconnect or shut down, even if the page drops its handle,
    /// so a pending call always settles (`(await AbpClient.connect(…)).call(…)` must not hang).
    static LIVE: RefCell<Vec<Rc<ClientInner>>> = const { RefCell::new(Vec::new()) };
}

// wasm-bindgen cannot put type parameters on a method: this interface merges into the generated class and adds
// the generic form of `call`, so `abp.call<{ url: string }>(…)` gives a typed `data` without a cast.
#[wasm_bindgen(typescript_custom_section)]
const TS_CLIENT: &'static str = r#"
export interface AbpClient {
  /** `T` is what the caller expects in `data` on success; nothing checks it. */
  call<T = unknown>(capability: string, params?: unknown, options?: CallOptions | null): Promise<ABPResponse<T>>;
}
"#;

/// The agent side of an ABP connection. Make one with `AbpClient.connect(transport, options)`.
#[wasm_bindgen]
pub struct AbpClient {
    inner: Rc<ClientInner>,
}

fn report(what: &str, err: &JsValue) {
    console_error2(what, err);
}

fn call_hook(f: &Function, arg: &JsValue) {
    let thrown = try_call(f, arg);
    if !thrown.is_undefined() {
        report("abp-wasm: a callback threw", &thrown);
    }
}

/// `options.agent`, checked; without one the agent introduces itself as this package.
fn agent_info(options: &JsValue) -> Result<JsValue, JsValue> {
    if options.get(connect::AGENT.name).is_none() {
        let mut info = JsValue::object();
        info.set("name", JsValue::from_str("abp-wasm"));
        info.set("version", JsValue::from_str(env!("CARGO_PKG_VERSION")));
        return Ok(info);
    }
    let agent = options
        .get(connect::AGENT.name)
        .filter(|a| a.kind() == Kind::Object);
    let valid = agent
        .as_ref()
        .is_some_and(|a| opt_string(a, "name").is_some() && opt_string(a, "version").is_some());
    match agent {
        Some(a) if valid => {
            let mut info = JsValue::object();
            info.set("name", a.get("name").unwrap_or(JsValue::UNDEFINED));
            info.set("version", a.get("version").unwrap_or(JsValue::UNDEFINED));
            Ok(info)
        }
        _ => Err(type_error(
            "AbpClient.connect: options.agent must be { name: string, version: string }",
        )),
    }
}

/// The connection's settings from `AbpClient.connect`'s options, and whether its messages stay on the window
/// (`messages: 'window'`).
fn agent_config(options: &JsValue) -> Result<(AgentConfig, bool), JsValue> {
    let mut config = AgentConfig::default();
    if let Some(t) =
        opt_number(options, connect::CONNECT_TIMEOUT.name).filter(|t| t.is_finite() && *t >= 0.0)
    {
        config.connect_timeout = t;
    }
    match opt_number(options, connect::HEARTBEAT.name) {
        Some(h) if h.is_finite() && h > 0.0 => config.heartbeat = Some(h),
        Some(_) => {
            return Err(type_error(
                "AbpClient.connect: options.heartbeat must be a positive number of milliseconds",
            ))
        }
        None => {}
    }
    let window_messages = match options.get(connect::MESSAGES.name).map(|v| v.as_string()) {
        None => false,
        Some(Some(path)) if path == "channel" => false,
        Some(Some(path)) if path == "window" => true,
        Some(_) => {
            return Err(type_error(
                "AbpClient.connect: options.messages must be 'channel' or 'window'",
            ))
        }
    };
    if let Some(g) =
        opt_number(options, connect::CANCEL_GRACE.name).filter(|g| g.is_finite() && *g >= 0.0)
    {
        config.cancel_grace = g;
    }
    Ok((config, window_messages))
}

impl ClientInner {
    /// A client's state around its connection, with the closures the page calls back (a call's abort, the
    /// timer), which hold it weakly.
    fn new(core: AgentConnection<JsValue>, hooks: Hooks, offer_channel: bool) -> Rc<ClientInner> {
        let inner = Rc::new(ClientInner {
            core: RefCell::new(core),
            js: RefCell::new(ClientJs {
                calls: StrMap::new(),
                cancels: StrMap::new(),
                elicits: StrMap::new(),
                connect: None,
                capabilities: Array::new().into(),
                warn_once: StrMap::new(),
                warned: StrSet::new(),
                app: JsValue::UNDEFINED,
            }),
            hooks: RefCell::new(hooks),
            link: RefCell::new(None),
            timer: RefCell::new(None),
            ignored: Cell::new(0),
            rejected: Cell::new(0),
            on_abort: RefCell::new(None),
            offer_channel,
        });
        let weak = Rc::downgrade(&inner);
        *inner.on_abort.borrow_mut() =
            Some(Closure::new(move |call_id: String, reason: JsValue| {
                if let Some(inner) = weak.upgrade() {
                    // `reason` is already String(signal.reason); it goes out again in the cancel.
                    let text = reason.as_string().unwrap_or_default();
                    keep_id(&text, &reason);
                    let reason = Some(text);
                    inner
                        .core
                        .borrow_mut()
                        .abort_call(&call_id, AbortKind::Signal(reason), now());
                    inner.drive();
                }
            }));
        let weak = Rc::downgrade(&inner);
        *inner.timer.borrow_mut() = Some(Box::new(Timer::new(move || {
            if let Some(inner) = weak.upgrade() {
                if let Some(t) = inner.timer.borrow().as_ref() {
                    t.fired();
                }
                inner.core.borrow_mut().handle_timeout(now());
                inner.drive();
            }
        })));
        inner
    }
}

fn abort_reason(signal: &AbortSignal) -> String {
    to_str(&signal.reason())
}

#[wasm_bindgen]
impl AbpClient {
    /// Connects to the app behind `transport`: sends `initialize` (again and again, so an iframe that has not
    /// loaded yet still gets it) and resolves once the app answers. Rejects with an `Error` whose `code` is
    /// TIMEOUT after `connectTimeout`, or the app's error code.
    #[wasm_bindgen(unchecked_return_type = "Promise<AbpClient>")]
    pub fn connect(
        #[wasm_bindgen(unchecked_param_type = "PostMessageTransport | WebSocketTransport")]
        transport: JsValue,
        options: Option<ClientOptions>,
    ) -> Result<Promise, JsValue> {
        let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let info = agent_info(&options)?;
        let dialect = dialect_option(&options, "AbpClient.connect")?;
        let pinned = opt_string(&options, connect::PROTOCOL_VERSION.name);
        if let Some(v) = &pinned {
            // Checked before the transport is taken: a refused option leaves it to its owner, still open.
            if !AgentConnection::<JsValue>::speaks_version(dialect, v) {
                let message = text(&[
                    "AbpClient.connect: options.protocolVersion '",
                    v,
                    "' is not a version of the '",
                    dialect.name(),
                    "' dialect this build speaks",
                ]);
                return Err(type_error(&message));
            }
        }
        let (mut config, window_messages) = agent_config(&options)?;
        let target = take_target(transport, "AbpClient.connect")?;
        config.reconnects = target.comes_back();
        target.warn_if_src_elsewhere();
        let hooks = Hooks {
            on_progress: opt_function(&options, connect::ON_PROGRESS.name),
            on_notification: opt_function(&options, connect::ON_NOTIFICATION.name),
            on_elicitation: opt_function(&options, connect::ON_ELICITATION.name),
            on_capabilities_changed: opt_function(&options, connect::ON_CAPABILITIES_CHANGED.name),
        };
        let mut core = AgentConnection::new(dialect, target.carrier(), config, info, id_prefix());
        if let Some(v) = pinned {
            core.pin_version(&v);
        }
        let abp_envelope = core.policy().abp_envelope();
        let offer_channel = !window_messages && abp_envelope;
        let inner = ClientInner::new(core, hooks, offer_channel);
        let link = Link::open(target, Rc::downgrade(&inner), true, abp_envelope)?;
        *inner.link.borrow_mut() = Some(Box::new(link));
        LIVE.with(|l| l.borrow_mut().push(inner.clone()));
        let connected = Deferred::new();
        let promise = connected.promise();
        inner.js.borrow_mut().connect = Some(connected);
        inner.core.borrow_mut().connect(now());
        inner.drive();
        Ok(promise)
    }

    /// Calls a capability. Always resolves to an `ABPResponse`: `{ success, data }`, or `{ success:false,
    /// error }`, or `{ success:false, cancelled:true, error }` when your signal aborted (code CANCELLED) or
    /// the timeout passed (code TIMEOUT). Rejects only if `capability` is not a string.
    #[wasm_bindgen(unchecked_return_type = "Promise<ABPResponse>")]
    pub fn call(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] capability: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "unknown")] params: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "CallOptions | null")] options: Option<
            CallOptions,
        >,
    ) -> Promise {
        let params = params.unwrap_or(JsValue::UNDEFINED);
        let Some(name) = capability.as_string() else {
            return Promise::reject(&type_error("abp.call: capability must be a string"));
        };
        // The name goes back out in the message: reuse this JS string rather than decode a new one.
        keep_id(&name, &capability);
        let capability = name;
        // The options in one pass (readCallOptions, written from src/web/options.rs): the signal, the numbers,
        // and a bit for each option given; the rarer ones are read again only when they are there.
        let options: Option<JsValue> = options.map(Into::into);
        let mut numbers = [0.0; call::VIEW_LEN];
        let signal = options
            .as_ref()
            .map(|o| read_call_options(o, &mut numbers))
            .unwrap_or(JsValue::UNDEFINED);
        let bits = numbers[call::BITS] as u32;
        let has = |o: OptionRead| bits & o.bit != 0;
        let get = |o: OptionRead| {
            options
                .as_ref()
                .filter(|_| has(o))
                .and_then(|v| v.get(o.name))
        };
        let number = |o: OptionRead| o.slot.filter(|_| has(o)).map(|i| numbers[i]);
        let signal: Option<AbortSignal> = has(call::SIGNAL.read()).then(|| signal.unchecked_into());
        let call_id = get(call::CALL_ID.read())
            .and_then(|v| v.as_string())
            .unwrap_or_else(new_call_id);
        if bits & call::ABORTED != 0 {
            // Nothing is sent for a call whose signal has already aborted.
            let reason = signal.as_ref().map(abort_reason);
            let r =
                local_call_response(AbpError::cancelled(reason.as_deref()), true, &call_id, 0.0);
            return Promise::resolve(&r);
        }
        self.inner.warn_once(&capability);
        let on_progress = get(call::ON_PROGRESS.read()).and_then(|f| f.dyn_into().ok());
        let wants_progress =
            on_progress.is_some() || self.inner.hooks.borrow().on_progress.is_some();
        let progress_token = get(call::PROGRESS_TOKEN.read())
            .and_then(|v| v.as_string())
            .or_else(|| wants_progress.then(|| call_id.clone()));
        let req = CallRequest {
            call_id: call_id.clone(),
            capability,
            params,
            timeout: number(call::TIMEOUT.read()),
            progress_token,
            trace: get(call::TRACE.read()).and_then(|t| trace_option(&t)),
            reset_timeout_on_progress: has(call::RESET_TIMEOUT_ON_PROGRESS.read()),
            max_total_timeout: number(call::MAX_TOTAL_TIMEOUT.read()),
            transfer: get(call::TRANSFER.read()).filter(Array::is_array),
            cancel_grace: number(call::CANCEL_GRACE.read()),
        };
        let deferred = Deferred::new();
        let promise = deferred.promise();
        // Refused locally (not connected, callId in flight): settle now, send nothing.
        if self.inner.core.borrow().is_pending(&call_id) || !self.inner.core.borrow().is_ready() {
            let err = self.inner.core.borrow_mut().start_call(req, now());
            let error = err
                .err()
                .unwrap_or_else(|| AbpError::new(ErrorCode::InvalidParams, "refused"));
            deferred.resolve(&local_call_response(error, false, &call_id, 0.0));
            return promise;
        }
        let unwatch = signal.and_then(|signal| {
            let on_abort = self.inner.on_abort.borrow();
            on_abort
                .as_ref()
                .map(|f| watch_abort(&signal, f.as_ref(), &js_string(&call_id)))
        });
        let started = now();
        self.inner.js.borrow_mut().calls.insert(
            call_id.clone(),
            CallJs {
                deferred,
                on_progress,
                unwatch,
                started,
            },
        );
        if let Err(error) = self.inner.core.borrow_mut().start_call(req, started) {
            if let Some(call) = self.inner.js.borrow_mut().calls.remove(&call_id) {
                call.deferred
                    .resolve(&local_call_response(error, false, &call_id, 0.0));
            }
        }
        self.inner.drive();
        promise
    }

    /// Cancels a call by id (yours or anyone's on this connection) and resolves to the app's answer:
    /// `{ callId, cancelled, reason? }`.
    #[wasm_bindgen(unchecked_return_type = "Promise<CancelResponse>")]
    #[allow(non_snake_case)]
    pub fn cancel(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] callId: JsValue,
        reason: Option<String>,
    ) -> Promise {
        let Some(call_id) = callId.as_string() else {
            return Promise::reject(&type_error("abp.cancel: callId must be a string"));
        };
        let handle = self.inner.core.borrow_mut().cancel(&call_id, reason, now());
        match handle {
            Ok(handle) => {
                let deferred = Deferred::new();
                let promise = deferred.promise();
                self.inner.js.borrow_mut().cancels.insert(handle, deferred);
                self.inner.drive();
                promise
            }
            Err(error) => Promise::resolve(&cancel_failure(&call_id, error)),
        }
    }

    /// Ends the session: tells the app, and every pending call resolves DISCONNECTED.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn shutdown(&self, reason: Option<String>) -> Promise {
        self.inner.core.borrow_mut().shutdown(reason);
        self.inner.drive();
        Promise::resolve(&JsValue::UNDEFINED)
    }

    /// The capabilities the app announced (kept current when it announces changes).
    #[wasm_bindgen(js_name = listCapabilities, unchecked_return_type = "CapabilityDescriptor[]")]
    pub fn list_capabilities(&self) -> JsValue {
        let js = self.inner.js.borrow();
        Array::from(&js.capabilities).slice(0, u32::MAX).into()
    }

    #[wasm_bindgen(js_name = describeCapability, unchecked_return_type = "CapabilityDescriptor | null")]
    pub fn describe_capability(&self, name: &str) -> JsValue {
        let js = self.inner.js.borrow();
        Array::from(&js.capabilities)
            .iter()
            .find(|c| opt_string(c, "name").as_deref() == Some(name))
            .unwrap_or(JsValue::NULL)
    }

    /// `{ supported, available, reason?, requirements?, features?, alternatives? }` for a capability name,
    /// from the descriptor the app sent (`available` is false while not connected).
    #[wasm_bindgen(unchecked_return_type = "SupportInfo")]
    pub fn supports(&self, name: &str) -> JsValue {
        let d = Some(self.describe_capability(name)).filter(|d| !d.is_null());
        let mut info = support_info(d.as_ref());
        if d.is_some() && !self.inner.core.borrow().is_ready() {
            info.set("available", JsValue::FALSE);
            info.set("reason", JsValue::from_str("Not connected"));
        }
        info
    }

    #[wasm_bindgen(getter, js_name = sessionId)]
    pub fn session_id(&self) -> Option<String> {
        self.inner.core.borrow().session_id().map(str::to_owned)
    }

    /// The app's `{ id, name, version }` from the handshake.
    #[wasm_bindgen(getter, unchecked_return_type = "AppInfo | undefined")]
    pub fn app(&self) -> JsValue {
        self.inner.js.borrow().app.clone()
    }

    #[wasm_bindgen(getter, js_name = pendingCalls)]
    pub fn pending_calls(&self) -> u32 {
        self.inner.core.borrow().pending_calls() as u32
    }

    #[wasm_bindgen(getter)]
    pub fn connected(&self) -> bool {
        self.inner.core.borrow().is_ready()
    }

    /// How many received messages were ignored because they were not ABP messages (a debug counter).
    #[wasm_bindgen(getter, js_name = ignoredMessages)]
    pub fn ignored_messages(&self) -> u32 {
        self.inner.ignored.get()
    }

    /// How messages travel now: `'channel'` (a private `MessagePort`: a `fromPort` transport, or a frame or
    /// window whose app accepted the channel offered at `initialize`), `'window'` (window messages, e.g. a
    /// hand-written app), `'socket'` (a `WebSocketTransport`; see `connected` for whether it is up), or
    /// `'closed'`.
    #[wasm_bindgen(
        getter,
        unchecked_return_type = "'channel' | 'window' | 'socket' | 'closed'"
    )]
    pub fn channel(&self) -> JsValue {
        let s = match self.inner.link.borrow().as_ref() {
            Some(link) if link.is_socket() => "socket",
            Some(link) if link.on_port() || link.is_port() => "channel",
            Some(_) => "window",
            None => "closed",
        };
        JsValue::from_str(s)
    }

    /// How many messages were dropped because they came from the wrong window or origin (a debug counter).
    #[wasm_bindgen(getter, js_name = rejectedMessages)]
    pub fn rejected_messages(&self) -> u32 {
        self.inner.rejected.get()
    }

    #[wasm_bindgen(setter = onProgress)]
    pub fn set_on_progress(
        &self,
        #[wasm_bindgen(unchecked_param_type = "((progress: ProgressInfo) => void) | null")]
        f: JsValue,
    ) {
        self.inner.hooks.borrow_mut().on_progress = f.dyn_into().ok();
    }

    #[wasm_bindgen(setter = onNotification)]
    pub fn set_on_notification(
        &self,
        #[wasm_bindgen(unchecked_param_type = "((notification: NotificationInfo) => void) | null")]
        f: JsValue,
    ) {
        self.inner.hooks.borrow_mut().on_notification = f.dyn_into().ok();
    }

    #[wasm_bindgen(setter = onElicitation)]
    pub fn set_on_elicitation(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ElicitationHandler | null")] f: JsValue,
    ) {
        self.inner.hooks.borrow_mut().on_elicitation = f.dyn_into().ok();
    }

    #[wasm_bindgen(setter = onCapabilitiesChanged)]
    pub fn set_on_capabilities_changed(
        &self,
        #[wasm_bindgen(unchecked_param_type = "((changes: CapabilityChanges) => void) | null")]
        f: JsValue,
    ) {
        self.inner.hooks.borrow_mut().on_capabilities_changed = f.dyn_into().ok();
    }
}

fn cancel_failure(call_id: &str, error: AbpError<JsValue>) -> JsValue {
    let mut r = JsValue::object();
    r.set("callId", js_string(call_id));
    r.set("cancelled", JsValue::FALSE);
    r.set("error", crate::core::error::encode_error(error));
    r
}

impl ClientInner {
    /// Runs everything the core has to do, then re-arms the timer. Borrows are never held across calls
    /// into user code, so callbacks may call back into the client.
    fn drive(self: &Rc<Self>) {
        loop {
            let next = self.core.borrow_mut().poll(&timestamp);
            match next {
                Some(out) => self.perform(out),
                None => break,
            }
        }
        let at = self.core.borrow().poll_timeout();
        if let Some(t) = self.timer.borrow().as_ref() {
            t.arm(at);
        }
    }

    fn perform(self: &Rc<Self>, out: AgentOutput<JsValue, Transmit<JsValue>>) {
        match out {
            AgentOutput::Transmit(m) => self.transmit(m),
            AgentOutput::Connected { payload, .. } => self.connected(&payload),
            AgentOutput::ConnectFailed(error) => self.connect_failed(error),
            AgentOutput::Settled {
                call_id,
                settlement,
            } => {
                let call = self.js.borrow_mut().calls.remove(&call_id);
                if let Some(call) = call {
                    let response = match settlement {
                        Settlement::Remote(p) => p,
                        Settlement::Local { error, cancelled } => {
                            local_call_response(error, cancelled, &call_id, now() - call.started)
                        }
                    };
                    let mut call = call;
                    call.stop_watching(); // before the caller runs
                    call.deferred.resolve(&response);
                }
            }
            AgentOutput::CancelAnswered { handle, answer } => self.cancel_answered(&handle, answer),
            AgentOutput::CancelAcknowledged { .. } => {}
            AgentOutput::Progress { call_id, payload } => {
                let per_call = self
                    .js
                    .borrow()
                    .calls
                    .get(&call_id)
                    .and_then(|c| c.on_progress.clone());
                let global = self.hooks.borrow().on_progress.clone();
                for f in per_call.iter().chain(global.iter()) {
                    call_hook(f, &payload);
                }
            }
            AgentOutput::Notification { payload, .. } => {
                let hook = self.hooks.borrow().on_notification.clone();
                if let Some(f) = hook {
                    call_hook(&f, &payload);
                }
            }
            AgentOutput::CapabilitiesChanged { payload } => {
                let changes = {
                    let mut js = self.js.borrow_mut();
                    let (list, changes) = apply_changes(&js.capabilities, &payload);
                    js.set_capabilities(list);
                    changes
                };
                let hook = self.hooks.borrow().on_capabilities_changed.clone();
                if let Some(f) = hook {
                    call_hook(&f, &changes);
                }
            }
            AgentOutput::Elicitation { id, payload, .. } => self.elicit(id, payload),
            AgentOutput::ElicitationAborted { id } => {
                let controller = self.js.borrow_mut().elicits.remove(&id);
                if let Some(c) = controller {
                    c.abort_with_reason(&JsValue::from_str("The call that asked was cancelled"));
                }
            }
            AgentOutput::Disconnected => {
                // A reconnecting WebSocket keeps the client: it starts a new session once the socket is back.
                if !(self.core.borrow().is_lost() && self.reconnects()) {
                    self.drop_link();
                }
            }
        }
    }

    /// The handshake is done: the client has the app's capabilities, and `connect` resolves.
    fn connected(self: &Rc<Self>, payload: &JsValue) {
        let caps = payload
            .get("capabilities")
            .filter(Array::is_array)
            .unwrap_or_else(|| Array::new().into());
        let connect = {
            let mut js = self.js.borrow_mut();
            js.set_capabilities(caps);
            js.app = payload.get("app").unwrap_or(JsValue::UNDEFINED);
            js.connect.take()
        };
        if let Some(connected) = connect {
            connected.resolve(
                &AbpClient {
                    inner: self.clone(),
                }
                .into(),
            );
        }
    }

    /// The handshake failed: `connect` rejects (a timeout toward a frame or window says its usual cause), or a
    /// reconnecting socket goes round again.
    fn connect_failed(self: &Rc<Self>, mut error: AbpError<JsValue>) {
        let connect = self.js.borrow_mut().connect.take();
        match connect {
            Some(connected) => {
                if error.message == NO_ANSWER_TO_INITIALIZE {
                    let why = self.link.borrow().as_ref().and_then(|l| l.why_unanswered());
                    if let Some(why) = why {
                        error.message = text(&[&error.message, ". ", &why, "."]);
                    }
                }
                connected.reject(&js_error(&error));
                self.drop_link();
            }
            // A new handshake after a reconnect failed: let the socket go round again.
            None if self.reconnects() => {
                if let Some(link) = self.link.borrow().as_ref() {
                    link.bounce();
                }
            }
            None => self.drop_link(),
        }
    }

    /// The app's answer to an explicit `cancel()`, or the client's own.
    fn cancel_answered(&self, handle: &str, answer: CancelAnswer<JsValue>) {
        let deferred = self.js.borrow_mut().cancels.remove(handle);
        if let Some(deferred) = deferred {
            let value = match answer {
                CancelAnswer::Remote(p) => p,
                CancelAnswer::Local { call_id, error } => cancel_failure(&call_id, error),
                CancelAnswer::Settled {
                    call_id,
                    cancelled,
                    reason,
                } => {
                    let mut r = JsValue::object();
                    r.set("callId", js_string(&call_id));
                    r.set("cancelled", JsValue::from_bool(cancelled));
                    if let Some(why) = reason {
                        r.set("reason", JsValue::from_str(why));
                    }
                    r
                }
            };
            deferred.resolve(&value);
        }
    }

    fn transmit(self: &Rc<Self>, t: Transmit<JsValue>) {
        let link = self.link.borrow();
        let sent = match (link.as_ref(), &t.sent) {
            (Some(link), Sent::Initialize) => link.send_initialize(&t.message, self.offer_channel),
            (Some(link), Sent::Shutdown) if link.on_port() => {
                // Also on the window: a page that is unloading may not get a channel message out.
                let _ = link.send_window(&t.message, None);
                link.send(&t.message, None)
            }
            (Some(link), _) => link.send(&t.message, t.transfer.as_ref()),
            (None, _) => Err(type_error("not connected")),
        };
        drop(link);
        if let (Err(e), Sent::Call { .. }) = (sent, &t.sent) {
            // The transport says why when it can (a WebSocket over its size limit: TRANSPORT_ERROR, with its
            // own message); otherwise what postMessage threw, as text ("DataCloneError: …", the same whether
            // it was thrown on a window or a port, where it arrives as text).
            let code = opt_string(&e, "code").map(|c| ErrorCode::parse(&c));
            let message = match code {
                Some(_) => opt_string(&e, "message").unwrap_or_else(|| to_str(&e)),
                None => to_str(&e),
            };
            let code = code.unwrap_or(ErrorCode::InvalidParams);
            let error = AbpError::new(code, text(&["The call could not be sent: ", &message]));
            self.core.borrow_mut().unsent(&t.sent, error);
        }
    }

    fn elicit(self: &Rc<Self>, id: String, request: JsValue) {
        let handler = self.hooks.borrow().on_elicitation.clone();
        let Some(handler) = handler else {
            let error = AbpError::new(
                ErrorCode::NotSupported,
                "The agent does not answer elicitation requests",
            );
            self.core
                .borrow_mut()
                .answer_elicitation(&id, ElicitAnswer::Failed(error));
            return;
        };
        let controller = match AbortController::new() {
            Ok(c) => c,
            Err(_) => return,
        };
        self.js
            .borrow_mut()
            .elicits
            .insert(id.clone(), controller.clone());
        let mut options = JsValue::object();
        options.set("signal", controller.signal().into());
        let result = handler.call2(&JsValue::NULL, &request, &options);
        match result {
            Ok(v) if is_thenable(&v) => {
                let weak: Weak<ClientInner> = Rc::downgrade(self);
                when_settled(
                    &v,
                    Box::new(move |r| {
                        if let Some(inner) = weak.upgrade() {
                            inner.finish_elicitation(&id, r);
                            inner.drive();
                        }
                    }),
                );
            }
            other => self.finish_elicitation(&id, other),
        }
    }

    fn finish_elicitation(&self, id: &str, result: Result<JsValue, JsValue>) {
        self.js.borrow_mut().elicits.remove(id);
        let answer = match result {
            Ok(v) if v.kind() == Kind::Object => ElicitAnswer::Answer(v),
            Ok(v) => {
                let mut r = JsValue::object();
                r.set("success", JsValue::TRUE);
                r.set("data", v);
                ElicitAnswer::Answer(r)
            }
            Err(e) => {
                let message = opt_string(&e, "message").unwrap_or_else(|| to_str(&e));
                ElicitAnswer::Failed(AbpError::new(ErrorCode::OperationFailed, message))
            }
        };
        self.core.borrow_mut().answer_elicitation(id, answer);
    }

    fn reconnects(&self) -> bool {
        self.link.borrow().as_ref().is_some_and(|l| l.reconnects())
    }

    /// Removes the listeners, and lets go of what a closed client no longer needs (its timer, abort hook and
    /// callbacks): the page may keep the handle long after, and only the garbage collector frees it. Deferred
    /// to a microtask: this may run inside one of the link's listeners or the timer's own callback.
    fn drop_link(self: &Rc<Self>) {
        LIVE.with(|l| l.borrow_mut().retain(|c| !Rc::ptr_eq(c, self)));
        {
            // Every call has settled by now; only the map's buffers are left.
            let mut js = self.js.borrow_mut();
            if js.calls.is_empty() {
                js.calls = StrMap::new();
            }
        }
        let gone = (
            self.link.borrow_mut().take(),
            self.timer.borrow_mut().take(),
            self.on_abort.borrow_mut().take(),
            std::mem::take(&mut *self.hooks.borrow_mut()),
        );
        later(Box::new(move || drop(gone)));
    }
}

impl Sink for ClientInner {
    fn on_message(self: Rc<Self>, data: Received, _origin: &str, _port: Option<MessagePort>) {
        let read = match data {
            Received::Read(m) => Ok(self.core.borrow_mut().receive_read(m, now())),
            Received::Raw(data) => self.core.borrow_mut().receive(&data, now()),
        };
        match read {
            Ok(true) => self.drive(),
            // An agent's message (another agent's, or ours seen on a shared window): not for this side.
            Ok(false) => {}
            Err(_) => self.ignored.set(self.ignored.get().saturating_add(1)),
        }
    }

    fn on_lost(self: Rc<Self>) {
        self.core.borrow_mut().transport_lost();
        self.drive();
    }

    fn on_page_hide(self: Rc<Self>) {
        self.core.borrow_mut().shutdown(Some("pagehide".to_owned()));
        self.drive();
    }

    fn on_offered_reply(self: Rc<Self>, port: &MessagePort, data: Received) {
        if let Some(link) = self.link.borrow().as_ref() {
            link.accept_offered(port);
        }
        self.on_message(data, "", None);
    }

    fn on_orphan(self: Rc<Self>, data: JsValue) {
        // Only the app of this session can name it: orphans cannot be traced to a window otherwise.
        let ours = self.core.borrow_mut().names_session(&data);
        if ours {
            self.on_lost();
        } else {
            self.rejected.set(self.rejected.get().saturating_add(1));
        }
    }

    fn on_rejected(self: Rc<Self>) {
        self.rejected.set(self.rejected.get().saturating_add(1));
    }

    fn on_reconnected(self: Rc<Self>) {
        if self.core.borrow_mut().reconnect(now()) {
            self.drive();
        }
    }
}

/// `CallOptions.trace` (`{ traceparent, tracestate? }`), when its context is valid.
fn trace_option(t: &JsValue) -> Option<Trace> {
    let text = |key: &str| t.get(key).and_then(|v| v.as_string());
    Trace::read(
        text("traceparent").as_deref(),
        text("tracestate").as_deref(),
    )
}
