//! `AbpApp`: the app side. A registry of capability handlers; each call gets a `ctx` with its own
//! `AbortSignal`, made by the SDK when the handler first reads it (app.js `HandlerCancel`).

use crate::core::map::StrMap;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::MessagePort;

use super::dom::{later, now, timestamp, Timer};
use super::link::{take_target, Link, Received, Sink};
use super::types::{AppInfo, AppOptions, CapabilityHandler, CapabilityOptions, ListenOptions};
use super::value::{
    console_warn, dialect_option, id_prefix, js_string, opt_number, opt_string, to_str, type_error,
    Deferred,
};
use crate::core::capability::{self, Changes};
use crate::core::dialect::{Carrier, DialectKind};
use crate::core::error::encode_error;
use crate::core::message::{outcome_of_return, outcome_of_throw};
use crate::core::payload::Wire;
use crate::core::payload::{Kind, Payload};
use crate::core::text::text;
use crate::core::text::IdGen;
use crate::core::trace::Trace;
use crate::core::{
    AbpError, AppConfig, AppConnection, AppOutput, ErrorCode, Outcome, Registry, Sent, Transmit,
};

#[wasm_bindgen(module = "/src/web/app.js")]
extern "C" {
    #[wasm_bindgen(js_name = ctxHooks)]
    pub(crate) fn ctx_hooks(
        progress: &JsValue,
        elicit: &JsValue,
        notify: &JsValue,
        transfer: &JsValue,
        resolved: &JsValue,
        rejected: &JsValue,
    ) -> JsValue;
    #[wasm_bindgen(js_name = runHandler)]
    pub(crate) fn run_handler(
        f: &js_sys::Function,
        params: &JsValue,
        hooks: &JsValue,
        call_id: &JsValue,
        progress_token: &JsValue,
        traceparent: &JsValue,
        tracestate: &JsValue,
        cancel: &HandlerCancel,
        run: u32,
    );
    /// How a running handler is told it was cancelled: `ctx.signal`, made when the handler first reads it
    /// (app.js `HandlerCancel`).
    #[derive(Clone)]
    pub(crate) type HandlerCancel;
    /// Never throws: it makes no AbortController yet.
    #[wasm_bindgen(constructor)]
    pub(crate) fn new() -> HandlerCancel;
    /// Aborts `cancel` with an `AbortError` carrying `message` (the handler's signal fires if it was read).
    #[wasm_bindgen(js_name = abortWith)]
    pub(crate) fn abort_with(cancel: &HandlerCancel, message: &JsValue);
}

/// One hook of a connection's `ctx` (app.js `ctxHooks`): `(callId or event, argument)`.
type CtxHook = Closure<dyn Fn(JsValue, JsValue) -> JsValue>;
/// How a handler ended (app.js `runHandler`): `(run, value or error, flags)`, `run` as in [`Running`].
type SettleHook = Closure<dyn Fn(u32, JsValue, u32)>;

/// `runHandler`'s flags (app.js): the handler's signal had aborted when it settled; the value is an object
/// with a boolean `success` (it may be a whole ABPResponse).
const ABORTED: u32 = 1;
const RESPONSE: u32 = 2;

/// What every `ctx` of a connection reports through: the JS object of named functions and the closures
/// behind them (owned here, dropped at `close()`; a handler still running then reaches nothing).
struct CtxHooks {
    js: JsValue,
    _closures: ([CtxHook; 4], [SettleHook; 2]),
}

impl CtxHooks {
    fn new(conn: &Rc<AppConnInner>) -> CtxHooks {
        fn hook(
            conn: &Rc<AppConnInner>,
            f: fn(&Rc<AppConnInner>, String, JsValue) -> JsValue,
        ) -> CtxHook {
            let weak = Rc::downgrade(conn);
            Closure::new(move |a: JsValue, b: JsValue| match weak.upgrade() {
                Some(c) => {
                    let r = f(&c, a.as_string().unwrap_or_default(), b);
                    c.drive();
                    r
                }
                None => JsValue::UNDEFINED,
            })
        }
        let closures = [
            hook(conn, AppConnInner::ctx_progress),
            hook(conn, |c, call_id, request| {
                c.elicit(Some(&call_id), request).into()
            }),
            hook(conn, |c, event, data| {
                c.core.borrow_mut().notify(&event, data);
                JsValue::UNDEFINED
            }),
            hook(conn, |c, call_id, list| {
                let mut running = c.running.borrow_mut();
                if let Some(r) = running.iter_mut().find(|r| r.call_id == call_id) {
                    r.transfer = Some(list).filter(Array::is_array);
                }
                JsValue::UNDEFINED
            }),
        ];
        fn settle(conn: &Rc<AppConnInner>, ok: bool) -> SettleHook {
            let weak = Rc::downgrade(conn);
            Closure::new(move |run: u32, value: JsValue, flags: u32| {
                if let Some(c) = weak.upgrade() {
                    c.finish(run, if ok { Ok(value) } else { Err(value) }, flags);
                    c.drive();
                }
            })
        }
        let settles = [settle(conn, true), settle(conn, false)];
        let [progress, elicit, notify, transfer] = closures.each_ref();
        let [resolved, rejected] = settles.each_ref();
        let js = ctx_hooks(
            progress.as_ref(),
            elicit.as_ref(),
            notify.as_ref(),
            transfer.as_ref(),
            resolved.as_ref(),
            rejected.as_ref(),
        );
        CtxHooks {
            js,
            _closures: (closures, settles),
        }
    }
}

/// State shared by every connection of one app.
pub(crate) struct AppShared {
    pub(crate) info: JsValue,
    pub(crate) config: AppConfig,
    pub(crate) registry: RefCell<Registry<JsValue>>,
    handlers: RefCell<StrMap<Function>>,
    pub(crate) conns: RefCell<Vec<Rc<AppConnInner>>>,
    /// `exposeGlobal()`'s `window.abp` and `exposeWebMCP()`'s tools (`global.rs`), until `close()`.
    pub(crate) global: RefCell<Option<Box<dyn Exposure>>>,
    pub(crate) webmcp: RefCell<Option<Box<dyn Exposure>>>,
}

/// What `exposeGlobal()` or `exposeWebMCP()` (`global.rs`) leaves with the app.
pub(crate) trait Exposure {
    /// What the call returned, returned again by a second call.
    fn handle(&self) -> JsValue;
    /// `close()`: takes it down (the page's tools go; `window.abp` stops being served).
    fn close(&self);
}

impl AppShared {
    pub(crate) fn capabilities(&self) -> JsValue {
        self.registry.borrow().list()
    }
}

/// Where a connection's messages go: a postMessage link, or `window.abp` callers.
pub(crate) trait Outlet {
    /// Delivers one encoded message. `Err` when it could not be sent (e.g. not cloneable).
    fn deliver(
        &self,
        conn: &Rc<AppConnInner>,
        msg: JsValue,
        transfer: Option<JsValue>,
    ) -> Result<(), JsValue>;

    /// The session ended (shutdown, a new initialize, the app closed).
    fn session_closed(&self) {}
}

/// A handler that is running. A few at a time (as many as calls in flight), so a vector searched from the
/// end: its handler reports back by `run`, a number, instead of the call id, which would be copied into wasm
/// and searched by text.
struct Running {
    run: u32,
    call_id: String,
    cancel: HandlerCancel,
    transfer: Option<JsValue>,
}

pub(crate) struct AppConnInner {
    shared: Weak<AppShared>,
    pub(crate) core: RefCell<AppConnection<JsValue>>,
    running: RefCell<Vec<Running>>,
    /// The `run` of the next handler started.
    next_run: Cell<u32>,
    elicits: RefCell<StrMap<Deferred>>,
    link: RefCell<Option<Link>>,
    pub(crate) outlet: RefCell<Option<Rc<dyn Outlet>>>,
    timer: RefCell<Option<Timer>>,
    hooks: RefCell<Option<CtxHooks>>,
    ids: RefCell<IdGen>,
    ignored: Cell<u32>,
}

thread_local! {
    /// Apps that are listening keep serving until `close()`, whether or not the page keeps its handle.
    static LIVE: RefCell<Vec<Rc<AppShared>>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn keep_alive(shared: &Rc<AppShared>) {
    LIVE.with(|l| {
        let mut l = l.borrow_mut();
        if !l.iter().any(|s| Rc::ptr_eq(s, shared)) {
            l.push(shared.clone());
        }
    });
}

// wasm-bindgen cannot put type parameters on a method: this interface merges into the generated class and adds
// the generic form of `register`, so `app.register<{ pages: number }>(name, (params, ctx) => …)` types the params.
#[wasm_bindgen(typescript_custom_section)]
const TS_APP: &'static str = r#"
export interface AbpApp {
  /** `P` is the params the handler expects (`inputSchema` checks them at run time, if given). */
  register<P = unknown, R = unknown>(name: string, handler: CapabilityHandler<P, R>, descriptor?: CapabilityOptions | null): void;
}
"#;

/// The app side: register capabilities, then `listen` on one or more transports.
#[wasm_bindgen]
pub struct AbpApp {
    pub(crate) shared: Rc<AppShared>,
}

fn app_info(info: &JsValue) -> Result<JsValue, JsValue> {
    let ok = info.kind() == Kind::Object
        && ["id", "name", "version"]
            .iter()
            .all(|k| opt_string(info, k).is_some());
    if !ok {
        return Err(type_error(
            "new AbpApp(info): info must be { id: string, name: string, version: string }",
        ));
    }
    let mut copy = JsValue::object();
    for key in ["id", "name", "version", "description"] {
        if let Some(v) = info.get(key) {
            copy.set(key, v);
        }
    }
    Ok(copy)
}

#[wasm_bindgen]
impl AbpApp {
    #[wasm_bindgen(constructor)]
    pub fn new(info: AppInfo, options: Option<AppOptions>) -> Result<AbpApp, JsValue> {
        let info = app_info(&info.into())?;
        let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let mut config = AppConfig::default();
        if let Some(m) = opt_number(&options, "maxConcurrent") {
            if !(m.is_finite() && m >= 1.0) {
                return Err(type_error("AbpApp: maxConcurrent must be a number >= 1"));
            }
            config.max_concurrent = Some(m as usize);
        }
        Ok(AbpApp {
            shared: Rc::new(AppShared {
                info,
                config,
                registry: RefCell::new(Registry::default()),
                handlers: RefCell::new(StrMap::new()),
                conns: RefCell::new(Vec::new()),
                global: RefCell::new(None),
                webmcp: RefCell::new(None),
            }),
        })
    }

    /// Registers (or replaces) a capability. `handler(params, ctx)` returns a value or a Promise. The
    /// descriptor's fields are checked (a TypeError names the first bad one) and `available: true`,
    /// `requirements: []`, `features: {}` filled in when missing. Connected agents are told.
    pub fn register(
        &self,
        name: &str,
        handler: CapabilityHandler,
        descriptor: Option<CapabilityOptions>,
    ) -> Result<(), JsValue> {
        let handler: JsValue = handler.into();
        let Ok(handler) = handler.dyn_into::<Function>() else {
            return Err(type_error(
                "app.register(name, handler): handler must be a function",
            ));
        };
        let descriptor = descriptor.map(JsValue::from);
        let added = self
            .shared
            .registry
            .borrow_mut()
            .register(name, descriptor)
            .map_err(|e| type_error(&text(&["app.register('", name, "'): ", &e])))?;
        self.shared
            .handlers
            .borrow_mut()
            .insert(name.to_owned(), handler);
        let names = vec![name.to_owned()];
        self.capabilities_changed(if added {
            Changes {
                added: names,
                ..Changes::default()
            }
        } else {
            Changes {
                changed: names,
                ..Changes::default()
            }
        });
        Ok(())
    }

    /// Changes a registered capability's descriptor: `app.update('camera.snap', { available: false })`, or
    /// new `requirements`. Calls that arrive afterwards see the new state; running ones are not touched.
    /// Connected agents are told. A TypeError for an unknown name or a field of the wrong type.
    pub fn update(
        &self,
        name: &str,
        #[wasm_bindgen(unchecked_param_type = "Partial<CapabilityOptions>")] patch: JsValue,
    ) -> Result<(), JsValue> {
        self.shared
            .registry
            .borrow_mut()
            .update(name, &patch)
            .map_err(|e| type_error(&text(&["app.update('", name, "'): ", &e])))?;
        self.capabilities_changed(Changes {
            changed: vec![name.to_owned()],
            ..Changes::default()
        });
        Ok(())
    }

    /// Removes a capability. Returns whether it was registered. Calls already running finish.
    pub fn unregister(&self, name: &str) -> bool {
        let removed = self.shared.registry.borrow_mut().unregister(name);
        self.shared.handlers.borrow_mut().remove(name);
        if removed {
            self.capabilities_changed(Changes {
                removed: vec![name.to_owned()],
                ..Changes::default()
            });
        }
        removed
    }

    /// The ABP manifest of this app, to serve as `/abp.json` (linked from the page's `<head>` with
    /// `<link rel="abp-manifest" href="/abp.json">`): `{ abp, app, capabilities }` from the registry.
    /// `extra` adds `description`, `homepage`, `icon` (a 192×192 PNG URL) or `support` to `app`.
    #[wasm_bindgen(unchecked_return_type = "AbpManifest")]
    pub fn manifest(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ManifestExtra")] extra: Option<JsValue>,
    ) -> Result<JsValue, JsValue> {
        let registry = self.shared.registry.borrow();
        capability::manifest(
            &self.shared.info,
            registry.iter().map(|(_, d)| d),
            extra.as_ref(),
        )
        .map_err(|e| type_error(&text(&["app.", &e])))
    }

    /// Serves agents over `transport`. An app may listen on several transports; each is its own session.
    /// `options.dialect`: `'abp'` (the default) or `'mcp'` (serve the registry as MCP tools).
    pub fn listen(
        &self,
        #[wasm_bindgen(unchecked_param_type = "PostMessageTransport | WebSocketTransport")]
        transport: JsValue,
        options: Option<ListenOptions>,
    ) -> Result<(), JsValue> {
        let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let dialect = dialect_option(&options, "AbpApp.listen")?;
        let target = take_target(transport, "AbpApp.listen")?;
        let config = self.shared.config.clone();
        let conn = AppConnInner::new(&self.shared, config, dialect, target.carrier());
        let abp_envelope = conn.core.borrow().policy().abp_envelope();
        let link = Link::open(target, Rc::downgrade(&conn), false, abp_envelope)?;
        *conn.link.borrow_mut() = Some(link);
        // Dialects where the app speaks first (Tesseron's hello).
        conn.core.borrow_mut().connect();
        conn.drive();
        self.shared.conns.borrow_mut().push(conn);
        keep_alive(&self.shared);
        Ok(())
    }

    /// Sends a notification to every connected agent. Returns how many sessions were told.
    pub fn notify(
        &self,
        event: &str,
        #[wasm_bindgen(unchecked_optional_param_type = "unknown")] data: Option<JsValue>,
    ) -> u32 {
        let data = data.unwrap_or(JsValue::UNDEFINED);
        let conns: Vec<_> = self.shared.conns.borrow().clone();
        let mut told = 0;
        for c in conns {
            if c.core.borrow_mut().notify(event, data.clone()) {
                told += 1;
            }
            c.drive();
        }
        told
    }

    /// Handlers running now, over all sessions.
    #[wasm_bindgen(getter, js_name = activeCalls)]
    pub fn active_calls(&self) -> u32 {
        self.shared
            .conns
            .borrow()
            .iter()
            .map(|c| c.core.borrow().active_calls() as u32)
            .sum()
    }

    /// Calls waiting for a free slot (`maxConcurrent`).
    #[wasm_bindgen(getter, js_name = queuedCalls)]
    pub fn queued_calls(&self) -> u32 {
        self.shared
            .conns
            .borrow()
            .iter()
            .map(|c| c.core.borrow().queued_calls() as u32)
            .sum()
    }

    /// Received values that were not ABP messages (a debug counter).
    #[wasm_bindgen(getter, js_name = ignoredMessages)]
    pub fn ignored_messages(&self) -> u32 {
        self.shared
            .conns
            .borrow()
            .iter()
            .map(|c| c.ignored.get())
            .sum()
    }

    /// Stops serving: aborts every running handler and removes every listener. (Dropping the handle does not
    /// stop a listening app; this does.)
    pub fn close(&self) {
        let webmcp = self.shared.webmcp.borrow_mut().take();
        if let Some(tools) = webmcp {
            tools.close();
        }
        let conns: Vec<_> = self.shared.conns.borrow_mut().drain(..).collect();
        for c in conns {
            c.core.borrow_mut().transport_lost();
            c.drive();
            c.link.borrow_mut().take();
            c.outlet.borrow_mut().take();
            c.timer.borrow_mut().take();
            c.hooks.borrow_mut().take();
        }
        let global = self.shared.global.borrow_mut().take();
        if let Some(global) = global {
            global.close();
        }
        LIVE.with(|l| l.borrow_mut().retain(|s| !Rc::ptr_eq(s, &self.shared)));
    }
}

impl AbpApp {
    fn capabilities_changed(&self, changes: Changes) {
        let conns: Vec<_> = self.shared.conns.borrow().clone();
        for c in conns {
            c.core.borrow_mut().capabilities_changed(&changes);
            c.drive();
        }
    }
}

impl AppConnInner {
    /// A connection in the page itself (`window.abp`, WebMCP), speaking ABP with `config`.
    pub(crate) fn in_page(shared: &Rc<AppShared>, config: AppConfig) -> Rc<AppConnInner> {
        Self::new(shared, config, DialectKind::Abp, Carrier::Stream)
    }

    pub(crate) fn new(
        shared: &Rc<AppShared>,
        config: AppConfig,
        dialect: DialectKind,
        carrier: Carrier,
    ) -> Rc<AppConnInner> {
        let info = shared.info.clone();
        let core = AppConnection::new(dialect, carrier, config, info, id_prefix());
        let conn = Rc::new(AppConnInner {
            shared: Rc::downgrade(shared),
            core: RefCell::new(core),
            running: RefCell::new(Vec::new()),
            next_run: Cell::new(0),
            elicits: RefCell::new(StrMap::new()),
            link: RefCell::new(None),
            outlet: RefCell::new(None),
            timer: RefCell::new(None),
            hooks: RefCell::new(None),
            ids: RefCell::new(IdGen::new(id_prefix())),
            ignored: Cell::new(0),
        });
        let weak = Rc::downgrade(&conn);
        *conn.timer.borrow_mut() = Some(Timer::new(move || {
            if let Some(c) = weak.upgrade() {
                if let Some(t) = c.timer.borrow().as_ref() {
                    t.fired();
                }
                c.core.borrow_mut().handle_timeout(now());
                c.drive();
            }
        }));
        *conn.hooks.borrow_mut() = Some(CtxHooks::new(&conn));
        conn
    }

    /// `ctx.progress(info)`: an object, or a bare number as `{ progress }`; anything else is ignored.
    fn ctx_progress(self: &Rc<Self>, call_id: String, info: JsValue) -> JsValue {
        let info = match info.kind() {
            Kind::Object => info,
            Kind::Number => {
                let mut o = JsValue::object();
                o.set("progress", info);
                o
            }
            _ => return JsValue::UNDEFINED,
        };
        self.core.borrow_mut().progress(&call_id, info, now());
        JsValue::UNDEFINED
    }

    /// Asks the agent; the Promise resolves to its ElicitationResponse, or `cancelled` if the call ends first.
    pub(crate) fn elicit(self: &Rc<Self>, call_id: Option<&str>, request: JsValue) -> Promise {
        if request.kind() != Kind::Object || opt_string(&request, "method").is_none() {
            return Promise::reject(&type_error(
                "elicit(request): request must be { method: string, params? }",
            ));
        }
        let asked = self.core.borrow_mut().elicit(call_id, request, now());
        match asked {
            Ok(id) => {
                let deferred = Deferred::new();
                let promise = deferred.promise();
                self.elicits.borrow_mut().insert(id, deferred);
                self.drive();
                promise
            }
            Err(error) => {
                let cancelled = error.code == ErrorCode::Cancelled;
                let mut r = JsValue::object();
                r.set("success", JsValue::FALSE);
                if cancelled {
                    r.set("cancelled", JsValue::TRUE);
                }
                r.set("error", encode_error(error));
                Promise::resolve(&r)
            }
        }
    }

    /// This connection is over: the app stops serving it and its link (the socket) goes, without reconnecting.
    fn end(self: &Rc<Self>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.conns.borrow_mut().retain(|c| !Rc::ptr_eq(c, self));
        }
        let link = self.link.borrow_mut().take();
        later(Box::new(move || drop(link)));
    }

    pub(crate) fn drive(self: &Rc<Self>) {
        // The registry's list, read only when a message carries it; the app is looked up once per drive.
        let shared = self.shared.upgrade();
        let capabilities = || match &shared {
            Some(s) => s.capabilities(),
            None => Array::new().into(),
        };
        loop {
            let next = self.core.borrow_mut().poll(&timestamp, &capabilities);
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

    fn perform(self: &Rc<Self>, out: AppOutput<JsValue, Transmit<JsValue>>) {
        match out {
            AppOutput::Transmit(m) => self.transmit(m),
            AppOutput::Start {
                call_id,
                capability,
                params,
                progress_token,
                trace,
            } => self.start(call_id, capability, params, progress_token, trace),
            AppOutput::Abort { call_id, reason } => {
                if let Some(r) = self.take_running(|r| r.call_id == call_id) {
                    let message = reason.as_deref().unwrap_or("Operation cancelled");
                    abort_with(&r.cancel, &js_string(message));
                }
            }
            AppOutput::ElicitDone { id, end } => {
                let deferred = self.elicits.borrow_mut().remove(&id);
                if let Some(deferred) = deferred {
                    deferred.resolve(&end.into_response());
                }
            }
            AppOutput::SessionOpened { .. } => {}
            AppOutput::HandshakeRefused { error } => {
                console_warn(&text(&[
                    "abp-wasm: the agent refused the app's introduction, so the connection is closed: ",
                    &error.message,
                ]));
                self.core.borrow_mut().transport_lost();
                self.end();
            }
            AppOutput::SessionClosed => {
                let outlet = self.outlet.borrow().clone();
                if let Some(o) = outlet {
                    o.session_closed();
                }
                if let Some(link) = self.link.borrow().as_ref() {
                    link.set_reply_origin(None);
                    link.drop_port();
                }
            }
        }
    }

    fn transmit(self: &Rc<Self>, t: Transmit<JsValue>) {
        if t.sent == Sent::Shutdown {
            // The page is going: on the window, not the channel, which may not get a message out in time.
            if let Some(link) = self.link.borrow().as_ref() {
                let _ = link.send_window(&t.message, None);
                return;
            }
        }
        if let Err(e) = self.deliver(t.message, t.transfer) {
            // The result could not be cloned (a function, a DOM node…): tell the agent instead of going quiet.
            let error = AbpError::new(
                ErrorCode::OperationFailed,
                text(&["The handler's result could not be sent: ", &to_str(&e)]),
            );
            self.core.borrow_mut().unsent(&t.sent, error);
        }
    }

    fn deliver(self: &Rc<Self>, msg: JsValue, transfer: Option<JsValue>) -> Result<(), JsValue> {
        let outlet = self.outlet.borrow().clone();
        if let Some(o) = outlet {
            return o.deliver(self, msg, transfer);
        }
        match self.link.borrow().as_ref() {
            Some(link) => link.send(&msg, transfer.as_ref()),
            None => Ok(()),
        }
    }

    fn start(
        self: &Rc<Self>,
        call_id: String,
        capability: String,
        params: JsValue,
        token: Option<String>,
        trace: Option<Trace>,
    ) {
        let handler = self
            .shared
            .upgrade()
            .and_then(|s| s.handlers.borrow().get(&capability).cloned());
        // The hooks' JS object, held without borrowing it: a handler may close the app.
        let hooks = self.hooks.borrow().as_ref().map(|h| h.js.clone());
        let (Some(handler), Some(hooks)) = (handler, hooks) else {
            let error = AbpError::new(
                ErrorCode::UnknownCapability,
                "The capability was unregistered",
            );
            self.core
                .borrow_mut()
                .complete(&call_id, Outcome::Failure(error), None, now());
            return;
        };
        let cancel = HandlerCancel::new();
        let token_js = token.map(|t| js_string(&t)).unwrap_or(JsValue::UNDEFINED);
        let call_id_js = js_string(&call_id);
        let text = |t: Option<&String>| t.map_or(JsValue::UNDEFINED, |t| js_string(t));
        let traceparent = text(trace.as_ref().map(|t| &t.traceparent));
        let tracestate = text(trace.as_ref().and_then(|t| t.tracestate.as_ref()));
        let run = self.next_run.get();
        self.next_run.set(run.wrapping_add(1));
        self.running.borrow_mut().push(Running {
            run,
            call_id,
            cancel: cancel.clone(),
            transfer: None,
        });
        // Reports through `hooks.resolved`/`rejected`: at once for a value or a throw, later for a promise.
        run_handler(
            &handler,
            &params,
            &hooks,
            &call_id_js,
            &token_js,
            &traceparent,
            &tracestate,
            &cancel,
            run,
        );
    }

    /// Takes the running handler that `which` picks out of the table (the newest first).
    fn take_running(&self, which: impl Fn(&Running) -> bool) -> Option<Running> {
        let mut all = self.running.borrow_mut();
        let at = all.iter().rposition(which)?;
        Some(all.swap_remove(at))
    }

    /// `flags`: `runHandler`'s (ABORTED, RESPONSE).
    fn finish(&self, run: u32, result: Result<JsValue, JsValue>, flags: u32) {
        let Some(running) = self.take_running(|r| r.run == run) else {
            return; // cancelled meanwhile: whatever the handler produced is discarded
        };
        let aborted = flags & ABORTED != 0;
        let outcome = match result {
            // Not an object with a boolean `success`: plain data (what `outcome_of_return` would find).
            Ok(value) if !aborted && flags & RESPONSE == 0 => Outcome::Success { data: value },
            Ok(value) => outcome_of_return(value, aborted),
            Err(e) => outcome_of_throw(&e, aborted, || to_str(&e)),
        };
        self.core
            .borrow_mut()
            .complete(&running.call_id, outcome, running.transfer, now());
    }

    fn handle_incoming(self: &Rc<Self>, data: Received) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let read = {
            let registry = shared.registry.borrow();
            let mut core = self.core.borrow_mut();
            match data {
                Received::Read(m) => Ok(core.receive_read(m, now(), &registry)),
                Received::Raw(data) => core.receive(&data, now(), &registry),
            }
        };
        // `Ok(false)`: an app's message (another app's, or ours seen on a shared window), not for this side.
        if read.is_err() {
            self.ignored.set(self.ignored.get().saturating_add(1));
        }
        self.drive();
    }

    /// Feeds a message from `window.abp` (no origin checks apply in-page).
    pub(crate) fn feed(self: &Rc<Self>, data: JsValue) {
        self.handle_incoming(Received::Raw(data));
    }

    pub(crate) fn next_id(&self) -> String {
        self.ids.borrow_mut().next_id()
    }

    pub(crate) fn info(&self) -> JsValue {
        self.shared
            .upgrade()
            .map(|s| s.info.clone())
            .unwrap_or(JsValue::UNDEFINED)
    }

    pub(crate) fn capabilities(&self) -> JsValue {
        self.shared
            .upgrade()
            .map(|s| s.capabilities())
            .unwrap_or_else(|| Array::new().into())
    }
}

impl Sink for AppConnInner {
    fn on_message(self: Rc<Self>, data: Received, origin: &str, port: Option<MessagePort>) {
        // An `initialize` that offers a private channel: once it has opened the session, answer over it.
        let offer = match &data {
            Received::Raw(_) => port,
            Received::Read(_) => None,
        };
        if let Some(link) = self.link.borrow().as_ref() {
            if link.is_parent() {
                let has_session = self.core.borrow().session_id().is_some();
                match link.replies_to(origin) {
                    // Only the origin that initialized the session is served.
                    Some(false) if has_session => return,
                    Some(true) => {}
                    _ => link.set_reply_origin(Some(origin.to_owned())),
                }
            }
        }
        // Only a message that carried a port can be an offer (so ordinary messages are not read twice).
        if let (Some(port), Received::Raw(data)) = (offer, &data) {
            // Adopt before answering, so the initialize-result already travels over the channel.
            if self.core.borrow_mut().opens_session(data) {
                if let Some(link) = self.link.borrow().as_ref() {
                    link.adopt_port(port, origin.to_owned());
                }
            }
        }
        self.handle_incoming(data);
    }

    fn on_lost(self: Rc<Self>) {
        self.core.borrow_mut().transport_lost();
        self.drive();
        // A WebSocket that will not come back: this connection is over.
        let over = self
            .link
            .borrow()
            .as_ref()
            .is_some_and(|l| l.is_socket() && !l.reconnects());
        if over {
            self.end();
        }
    }

    fn on_reconnected(self: Rc<Self>) {
        // A new socket: an app that speaks first introduces itself again (or resumes its session).
        self.core.borrow_mut().connect();
        self.drive();
    }

    fn on_page_hide(self: Rc<Self>) {
        // Tell the agent this page is going (a reload or navigation), so its calls settle now.
        self.core.borrow_mut().page_hidden();
        self.drive();
    }
}
