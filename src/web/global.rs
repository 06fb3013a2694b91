//! The app in the page itself: `app.exposeGlobal()` installs `window.abp`, the in-page ABP API for
//! Puppeteer/Playwright agents, exactly as the ABP API reference types it; `app.exposeWebMCP()` offers the
//! registry as the page's WebMCP tools. Each is a session of its own over the same app core. Calls become messages fed to the core; its
//! answers resolve the Promises the page returned. There is no agent library on this path, so the page
//! itself enforces a call's `timeout`, and a new `initialize` replaces an active session (a reattaching
//! automation agent must not be locked out).

use crate::core::map::StrMap;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::app::{keep_alive, AbpApp, AppConnInner, Exposure, Outlet};
use super::dom::{global, later, now, when_settled, Timer};
use super::options::call::{CALL_ID, PROGRESS_TOKEN, TIMEOUT};
use super::types::WebMcpExposeOptions;
use super::value::{
    js_string, local_call_response, local_response, new_call_id, opt_string, type_error, Deferred,
};
use crate::core::capability::PROTOCOL_VERSION;
use crate::core::capability::{apply_changes, support_info};
use crate::core::dialect::abp::{self, types};
use crate::core::payload::{CallFields, Wire};
use crate::core::payload::{Kind, Payload};
use crate::core::text::text;
use crate::core::{AbpError, AppConfig, ErrorCode};

#[wasm_bindgen(module = "/src/web/global.js")]
extern "C" {
    /// `window.abp`'s API object; `private`: not the page's `window.abp` (the page's `window.__abp_*` hooks are
    /// not called for it).
    #[wasm_bindgen(js_name = makeGlobal)]
    pub(crate) fn make_global(
        dispatch: &JsValue,
        protocol_version: &str,
        app: &JsValue,
        private: bool,
    ) -> JsValue;
    /// `app.exposeWebMCP()`'s tools over the private session `api` (see global.js): `{ ready, close }`.
    #[wasm_bindgen(catch, js_name = webmcpExpose)]
    pub(crate) fn webmcp_expose(api: &JsValue, exposed_to: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = emitGlobal)]
    pub(crate) fn emit_global(api: &JsValue, kind: &str, value: &JsValue);
    #[wasm_bindgen(js_name = askGlobal)]
    fn ask_global_js(api: &JsValue, request: &JsValue) -> JsValue;
}

/// The one closure behind every `window.abp` method: `(method name, a, b, c)`.
type GlobalDispatch = Closure<dyn Fn(String, JsValue, JsValue, JsValue) -> JsValue>;

/// What a page's Promise waits for, by the id of the message fed to the core.
enum Waiting {
    Initialize(Deferred),
    /// `started`: when the call was made (`now()`), for the `metadata.duration` of a response settled here.
    Call {
        call_id: String,
        resolve: Deferred,
        started: f64,
    },
    Cancel(Deferred),
}

pub(crate) struct GlobalSession {
    conn: Weak<AppConnInner>,
    waiting: RefCell<StrMap<Waiting>>,
    /// Calls with a `timeout`: call id → (message id, deadline).
    deadlines: RefCell<StrMap<(String, f64)>>,
    timer: RefCell<Option<Timer>>,
    api: RefCell<JsValue>,
    _dispatch: RefCell<Option<GlobalDispatch>>,
}

fn resolved(v: &JsValue) -> JsValue {
    Promise::resolve(v).into()
}

fn rejected(message: &str) -> JsValue {
    Promise::reject(&type_error(message)).into()
}

impl GlobalSession {
    /// `window.abp` for `conn`, installed on the page.
    pub(crate) fn install(conn: &Rc<AppConnInner>) -> Result<Rc<GlobalSession>, JsValue> {
        let session = Self::new(conn, false);
        // Replace the bootstrap's placeholder (if the page has one) and wake whatever waits on it.
        let api = session.api();
        let global = global();
        Reflect::set(&global, &JsValue::from_str("abp"), &api)?;
        let ready = Reflect::get(&global, &JsValue::from_str("__abpReadyResolve"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        if let Some(ready) = ready {
            let _ = ready.call1(&JsValue::NULL, &api);
        }
        Ok(session)
    }

    /// The same API for `conn`, kept out of `window` (the session `app.exposeWebMCP()` serves tools through).
    pub(crate) fn private(conn: &Rc<AppConnInner>) -> Rc<GlobalSession> {
        Self::new(conn, true)
    }

    fn new(conn: &Rc<AppConnInner>, private: bool) -> Rc<GlobalSession> {
        let session = Rc::new(GlobalSession {
            conn: Rc::downgrade(conn),
            waiting: RefCell::new(StrMap::new()),
            deadlines: RefCell::new(StrMap::new()),
            timer: RefCell::new(None),
            api: RefCell::new(JsValue::UNDEFINED),
            _dispatch: RefCell::new(None),
        });
        let weak = Rc::downgrade(&session);
        *session.timer.borrow_mut() = Some(Timer::new(move || {
            if let Some(s) = weak.upgrade() {
                if let Some(t) = s.timer.borrow().as_ref() {
                    t.fired();
                }
                s.expire(now());
            }
        }));
        let weak = Rc::downgrade(&session);
        let dispatch = Closure::<dyn Fn(String, JsValue, JsValue, JsValue) -> JsValue>::new(
            move |method: String, a, b, c| match weak.upgrade() {
                Some(s) => s.method(&method, a, b, c),
                None => rejected("window.abp is no longer served"),
            },
        );
        let api = make_global(dispatch.as_ref(), PROTOCOL_VERSION, &conn.info(), private);
        *session.api.borrow_mut() = api;
        *session._dispatch.borrow_mut() = Some(dispatch);
        session
    }

    pub(crate) fn api(&self) -> JsValue {
        self.api.borrow().clone()
    }

    /// Feeds a request to the core, written by the dialect (`build` given its id); the returned Promise resolves
    /// with its answer. `waiting` makes what waits from the pending promise.
    fn request(
        &self,
        conn: &Rc<AppConnInner>,
        build: impl FnOnce(&str) -> JsValue,
        waiting: impl FnOnce(Deferred) -> Waiting,
    ) -> (String, JsValue) {
        let id = conn.next_id();
        let deferred = Deferred::new();
        let promise = deferred.promise();
        self.waiting
            .borrow_mut()
            .insert(id.clone(), waiting(deferred));
        conn.feed(build(&id));
        (id, promise.into())
    }

    fn method(self: &Rc<Self>, method: &str, a: JsValue, b: JsValue, c: JsValue) -> JsValue {
        let Some(conn) = self.conn.upgrade() else {
            return rejected("window.abp is no longer served");
        };
        let session = conn.core.borrow().session_id().map(str::to_owned);
        match method {
            "initialized" => JsValue::from_bool(session.is_some()),
            "sessionId" => session.map(|s| js_string(&s)).unwrap_or(JsValue::NULL),
            "initialize" => {
                let params = if a.kind() == Kind::Object {
                    a
                } else {
                    JsValue::object()
                };
                let build = |id: &str| abp::request(types::INITIALIZE, id, now(), params);
                self.request(&conn, build, Waiting::Initialize).1
            }
            "shutdown" => {
                // `shutdown({ reason })` as the reference types it, or `shutdown(reason)`.
                let reason = a.as_string().or_else(|| opt_string(&a, "reason"));
                let id = conn.next_id();
                conn.feed(abp::shutdown_message(&id, reason.as_deref(), None, &now));
                resolved(&JsValue::UNDEFINED)
            }
            "call" => self.call(&conn, a, b, c),
            "cancel" => {
                // `cancel(callId, reason)` or `cancel({ callId, reason })`.
                let (call_id, reason) = if a.kind() == Kind::Object {
                    (opt_string(&a, "callId"), opt_string(&a, "reason"))
                } else {
                    (a.as_string(), b.as_string())
                };
                let Some(call_id) = call_id else {
                    return rejected("abp.cancel: callId must be a string");
                };
                let build = |id: &str| abp::cancel_message(id, &call_id, reason.as_deref(), &now);
                self.request(&conn, build, Waiting::Cancel).1
            }
            "listCapabilities" => resolved(&conn.capabilities()),
            "describeCapability" => {
                let name = a.as_string().unwrap_or_default();
                resolved(&describe(&conn.capabilities(), &name).unwrap_or(JsValue::NULL))
            }
            "supports" => {
                let name = a.as_string().unwrap_or_default();
                resolved(&support_info(
                    describe(&conn.capabilities(), &name).as_ref(),
                ))
            }
            "notify" => {
                let Some(event) = a.as_string() else {
                    return JsValue::FALSE;
                };
                let told = conn.core.borrow_mut().notify(&event, b);
                conn.drive();
                JsValue::from_bool(told)
            }
            "notifyProgress" => {
                self.notify_progress(&conn, a);
                JsValue::UNDEFINED
            }
            "elicit" => {
                let call_id = opt_string(&a, "callId");
                conn.elicit(call_id.as_deref(), a).into()
            }
            _ => JsValue::UNDEFINED,
        }
    }

    fn call(
        self: &Rc<Self>,
        conn: &Rc<AppConnInner>,
        cap: JsValue,
        params: JsValue,
        options: JsValue,
    ) -> JsValue {
        let Some(capability) = cap.as_string() else {
            return rejected("abp.call: capability must be a string");
        };
        // `window.abp.call` takes the client's option names (the ones it has: no signal or callbacks).
        let call_id = opt_string(&options, CALL_ID.name).unwrap_or_else(new_call_id);
        let in_flight = self
            .waiting
            .borrow()
            .values()
            .any(|w| matches!(w, Waiting::Call { call_id: c, .. } if *c == call_id));
        if in_flight {
            // The app would take it for a duplicated delivery and never answer it.
            let error = AbpError::new(
                ErrorCode::InvalidParams,
                text(&["callId '", &call_id, "' is already in flight"]),
            );
            return resolved(&local_call_response(error, false, &call_id, 0.0));
        }
        // `params = {}` as the reference declares it.
        let params = if params.is_undefined() {
            JsValue::object()
        } else {
            params
        };
        let timeout = options
            .get_f64(TIMEOUT.name)
            .filter(|t| t.is_finite() && *t >= 0.0);
        let progress_token = opt_string(&options, PROGRESS_TOKEN.name);
        let started = now();
        if let Some(t) = timeout {
            // Before feeding: a refused call is answered (and forgets its deadline) inside `request`.
            self.deadlines
                .borrow_mut()
                .insert(call_id.clone(), (String::new(), started + t));
        }
        let waiting = |resolve| Waiting::Call {
            call_id: call_id.clone(),
            resolve,
            started,
        };
        let build = |id: &str| {
            let call = CallFields {
                id,
                call_id: &call_id,
                capability: &capability,
                timeout,
                progress_token: progress_token.as_deref(),
                trace: None,
            };
            abp::call_message(&call, &now, params)
        };
        let (id, promise) = self.request(conn, build, waiting);
        if let Some(d) = self.deadlines.borrow_mut().get_mut(&call_id) {
            d.0 = id;
        }
        self.arm();
        promise
    }

    /// `notifyProgress(info)`: progress of a running call (named by `callId`, or by `operationId` when that
    /// is the call's progress token) goes through the call's coalescing; progress of any other operation of
    /// the page is reported as it is.
    fn notify_progress(&self, conn: &Rc<AppConnInner>, info: JsValue) {
        if info.kind() != Kind::Object {
            return;
        }
        let operation = opt_string(&info, "operationId");
        let call_id = {
            let core = conn.core.borrow();
            opt_string(&info, "callId")
                .or_else(|| operation.as_deref().and_then(|t| core.call_of_token(t)))
        };
        match (call_id, operation) {
            (Some(call_id), _) => conn.core.borrow_mut().progress(&call_id, info, now()),
            (None, Some(op)) => {
                conn.core.borrow_mut().free_progress(&op, info);
            }
            (None, None) => {}
        }
        conn.drive();
    }

    fn arm(&self) {
        let next = self
            .deadlines
            .borrow()
            .values()
            .map(|(_, d)| *d)
            .min_by(|a, b| a.total_cmp(b));
        if let Some(t) = self.timer.borrow().as_ref() {
            t.arm(next);
        }
    }

    /// Calls past their `timeout`: resolved TIMEOUT (retryable) now, then cancelled in the core, whose
    /// answers then find nobody waiting.
    fn expire(&self, at: f64) {
        let due = self.deadlines.borrow_mut().take_where(|(_, d)| *d <= at);
        let conn = self.conn.upgrade();
        for (call_id, (msg_id, _)) in due {
            let waiting = self.waiting.borrow_mut().remove(&msg_id);
            if let Some(Waiting::Call {
                resolve, started, ..
            }) = waiting
            {
                let r = local_call_response(AbpError::timeout(), true, &call_id, at - started);
                resolve.resolve(&r);
            }
            if let Some(conn) = &conn {
                let id = conn.next_id();
                conn.feed(abp::cancel_message(&id, &call_id, Some("timeout"), &now));
            }
        }
        self.arm();
    }

    fn settle(&self, id: Option<String>, payload: &JsValue) {
        let Some(w) = id.and_then(|id| self.waiting.borrow_mut().remove(&id)) else {
            return;
        };
        let resolve = match w {
            Waiting::Initialize(f) | Waiting::Cancel(f) => f,
            Waiting::Call {
                call_id, resolve, ..
            } => {
                self.deadlines.borrow_mut().remove(&call_id);
                resolve
            }
        };
        resolve.resolve(payload);
    }
}

fn describe(list: &JsValue, name: &str) -> Option<JsValue> {
    Array::from(list)
        .iter()
        .find(|d| opt_string(d, "name").as_deref() == Some(name))
}

impl Outlet for GlobalSession {
    fn deliver(
        &self,
        conn: &Rc<AppConnInner>,
        msg: JsValue,
        _transfer: Option<JsValue>,
    ) -> Result<(), JsValue> {
        let ty = opt_string(&msg, "type").unwrap_or_default();
        let payload = msg.get("payload").unwrap_or(JsValue::UNDEFINED);
        let id = opt_string(&msg, "id");
        let api = self.api();
        match ty.as_str() {
            types::INITIALIZE_RESULT | types::CALL_RESULT | types::CANCEL_RESULT => {
                self.settle(id, &payload);
            }
            types::PROGRESS => emit_global(&api, "progress", &payload),
            types::NOTIFICATION => {
                let event = opt_string(&payload, "event");
                if event.as_deref() == Some(types::CAPABILITIES_CHANGED) {
                    // `{ added, removed, changed, capabilities }`, as agents receive it.
                    let data = payload.get("data").unwrap_or_else(JsValue::object);
                    let (_, changes) = apply_changes(&conn.capabilities(), &data);
                    emit_global(&api, "capabilitiesChanged", &changes);
                } else {
                    emit_global(&api, "notification", &payload);
                }
            }
            types::ELICITATION_REQUEST => {
                let id = id.unwrap_or_default();
                let weak = Rc::downgrade(conn);
                let answer = move |response: JsValue| {
                    if let Some(c) = weak.upgrade() {
                        c.feed(abp::request(
                            types::ELICITATION_RESPONSE,
                            &id,
                            now(),
                            response,
                        ));
                    }
                };
                let asked = ask_global(&api, &payload);
                // Answered after this message's handling returns, also when the answer is already there.
                let answered: Box<dyn FnOnce(Result<JsValue, JsValue>)> =
                    Box::new(move |r| answer(elicitation_answer(r)));
                match asked {
                    Some(Ok(v)) => when_settled(&v, answered),
                    other => {
                        let r = other.unwrap_or_else(|| {
                            Ok(local_response(
                                AbpError::new(
                                    ErrorCode::NotSupported,
                                    "Nobody answers elicitations on this page (expose __abp_elicitation or call abp.onElicitation)",
                                ),
                                false,
                                None,
                            ))
                        });
                        later(Box::new(move || answered(r)));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn session_closed(&self) {
        // The calls of the ended session will get no answer: they were cancelled with it.
        let calls = self
            .waiting
            .borrow_mut()
            .take_where(|w| matches!(w, Waiting::Call { .. }));
        self.deadlines.borrow_mut().clear();
        let at = now();
        for (_, w) in calls {
            let Waiting::Call {
                call_id,
                resolve,
                started,
            } = w
            else {
                continue;
            };
            let r = local_call_response(
                AbpError::cancelled(Some("The session ended")),
                true,
                &call_id,
                at - started,
            );
            resolve.resolve(&r);
        }
    }
}

/// The agent's answer to an elicitation: an `ElicitationResponse` object as it is, any other value as its
/// `data`, a thrown error as OPERATION_FAILED.
fn elicitation_answer(r: Result<JsValue, JsValue>) -> JsValue {
    match r {
        Ok(v) if v.kind() == Kind::Object && v.get("success").is_some() => v,
        Ok(v) => {
            let mut o = JsValue::object();
            o.set("success", JsValue::TRUE);
            o.set("data", v);
            o
        }
        Err(e) => local_response(
            AbpError::new(
                ErrorCode::OperationFailed,
                opt_string(&e, "message").unwrap_or_default(),
            ),
            false,
            None,
        ),
    }
}

#[wasm_bindgen]
impl AbpApp {
    /// Installs `window.abp`, the conformant in-page API for Puppeteer/Playwright agents. It is a session of
    /// its own, separate from postMessage sessions. Returns the object.
    #[wasm_bindgen(js_name = exposeGlobal, unchecked_return_type = "AbpGlobal")]
    pub fn expose_global(&self) -> Result<JsValue, JsValue> {
        if let Some(g) = self.shared.global.borrow().as_ref() {
            return Ok(g.handle());
        }
        // A new `initialize` replaces an active `window.abp` session: a reattaching automation agent must
        // not be locked out.
        let config = AppConfig {
            reinitialize: true,
            ..self.shared.config.clone()
        };
        let conn = AppConnInner::in_page(&self.shared, config);
        let global = GlobalSession::install(&conn)?;
        *conn.outlet.borrow_mut() = Some(global.clone());
        let api = global.api();
        self.shared.conns.borrow_mut().push(conn);
        *self.shared.global.borrow_mut() = Some(Box::new(global));
        keep_alive(&self.shared);
        Ok(api)
    }

    /// Offers every available capability as a WebMCP tool on `document.modelContext` (native, or the
    /// `@mcp-b/webmcp-polyfill`), for the browser's agents: name, `title`, description, inputSchema, and the
    /// `readOnlyHint` and `untrustedContentHint` annotations where the descriptor has them. The tools follow the
    /// registry (`register`, `unregister`, `update`) and go with `close()`. WebMCP runs a tool as
    /// `execute(input, { signal })`: the handler's `ctx.signal` aborts with that signal (the polyfill passes
    /// none). It answers an MCP `CallToolResult` (errors as `isError` with the ABP code and message).
    /// `exposedTo` is passed to `registerTool`. Rejects with a TypeError on a page without
    /// `document.modelContext`, or for an `exposedTo` that is not an array of strings.
    #[wasm_bindgen(js_name = exposeWebMCP, unchecked_return_type = "Promise<void>")]
    pub fn expose_webmcp(&self, options: Option<WebMcpExposeOptions>) -> Promise {
        if let Some(tools) = self.shared.webmcp.borrow().as_ref() {
            return tools.handle().unchecked_into();
        }
        let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let exposed_to = match options.get("exposedTo") {
            None => JsValue::UNDEFINED,
            Some(list)
                if Array::is_array(&list) && Array::from(&list).iter().all(|o| o.is_string()) =>
            {
                list
            }
            Some(_) => {
                return Promise::reject(&type_error(
                    "app.exposeWebMCP: exposedTo must be an array of origins (strings)",
                ))
            }
        };
        // Its own session, as `window.abp` has: calls from WebMCP callers are not another agent's.
        let config = AppConfig {
            reinitialize: true,
            ..self.shared.config.clone()
        };
        let conn = AppConnInner::in_page(&self.shared, config);
        let session = GlobalSession::private(&conn);
        *conn.outlet.borrow_mut() = Some(session.clone());
        let handle = match webmcp_expose(&session.api(), &exposed_to) {
            Ok(h) => h,
            Err(e) => return Promise::reject(&e),
        };
        self.shared.conns.borrow_mut().push(conn);
        let tools = WebMcpTools {
            _session: session,
            handle,
        };
        let ready = tools.handle().unchecked_into();
        *self.shared.webmcp.borrow_mut() = Some(Box::new(tools));
        keep_alive(&self.shared);
        ready
    }
}

impl Exposure for Rc<GlobalSession> {
    fn handle(&self) -> JsValue {
        self.api()
    }

    /// `window.abp` stays on the page, answering that it is no longer served once the session is dropped.
    fn close(&self) {}
}

/// `exposeWebMCP()`'s tools: their private session, and the handle `webmcpExpose` returned (`{ ready,
/// close }`, global.js).
struct WebMcpTools {
    _session: Rc<GlobalSession>,
    handle: JsValue,
}

impl Exposure for WebMcpTools {
    /// The `ready` promise.
    fn handle(&self) -> JsValue {
        self.handle
            .get("ready")
            .filter(|r| r.is_instance_of::<Promise>())
            .unwrap_or_else(|| Promise::resolve(&JsValue::UNDEFINED).into())
    }

    /// Unregisters the tools.
    fn close(&self) {
        let close = self
            .handle
            .get("close")
            .and_then(|f| f.dyn_into::<Function>().ok());
        if let Some(close) = close {
            let _ = close.call0(&self.handle);
        }
    }
}

/// Asks `window.abp`'s automation agent an elicitation: `None` when nobody answers, else what its answer
/// function returned (`Ok`) or threw (`Err`).
pub(crate) fn ask_global(api: &JsValue, request: &JsValue) -> Option<Result<JsValue, JsValue>> {
    let r = ask_global_js(api, request);
    if r.is_undefined() {
        return None;
    }
    let value = r.get("value").unwrap_or(JsValue::UNDEFINED);
    Some(match r.get("ok").and_then(|ok| ok.as_bool()) {
        Some(true) => Ok(value),
        _ => Err(value),
    })
}
