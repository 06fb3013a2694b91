//! `window.abp`: the in-page ABP API for Puppeteer/Playwright agents, a session of its own over the same
//! app core. Calls become messages fed to the core; its answers resolve the Promises the page returned.

use crate::core::map::StrMap;
use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::app::{AppConnInner, Outlet};
use super::value::{
    is_thenable, make_global, new_call_id, opt_string, promise_and_resolve, type_error,
};
use crate::core::codec::Wire;
use crate::core::message::{types, PROTOCOL_VERSION};
use crate::core::schema::{Kind, Payload};

/// The one closure behind every `window.abp` method: `(op, a, b, c)`.
type GlobalDispatch = Closure<dyn Fn(u32, JsValue, JsValue, JsValue) -> JsValue>;

pub(crate) struct GlobalSession {
    conn: Weak<AppConnInner>,
    pending: RefCell<StrMap<Function>>,
    api: RefCell<JsValue>,
    _dispatch: RefCell<Option<GlobalDispatch>>,
}

fn window_hook(name: &str) -> Option<Function> {
    Reflect::get(&js_sys::global(), &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
}

fn message(ty: &str, id: &str, payload: JsValue) -> JsValue {
    let mut m = JsValue::object();
    m.set("type", JsValue::from_str(ty));
    m.set("id", JsValue::from_str(id));
    m.set("payload", payload);
    m
}

use wasm_bindgen::JsCast;

impl GlobalSession {
    pub(crate) fn install(conn: &Rc<AppConnInner>) -> Result<Rc<GlobalSession>, JsValue> {
        let session = Rc::new(GlobalSession {
            conn: Rc::downgrade(conn),
            pending: RefCell::new(StrMap::new()),
            api: RefCell::new(JsValue::UNDEFINED),
            _dispatch: RefCell::new(None),
        });
        let weak = Rc::downgrade(&session);
        let dispatch = Closure::<dyn Fn(u32, JsValue, JsValue, JsValue) -> JsValue>::new(
            move |op, a, b, c| match weak.upgrade() {
                Some(s) => s.op(op, a, b, c),
                None => Promise::reject(&type_error("window.abp is no longer served")).into(),
            },
        );
        let api = make_global(dispatch.as_ref(), PROTOCOL_VERSION, &conn.info());
        Reflect::set(&js_sys::global(), &JsValue::from_str("abp"), &api)?;
        *session.api.borrow_mut() = api;
        *session._dispatch.borrow_mut() = Some(dispatch);
        Ok(session)
    }

    pub(crate) fn api(&self) -> JsValue {
        self.api.borrow().clone()
    }

    fn request(&self, conn: &Rc<AppConnInner>, ty: &str, payload: JsValue) -> JsValue {
        let id = conn.next_id();
        let (promise, resolve) = promise_and_resolve();
        self.pending.borrow_mut().insert(id.clone(), resolve);
        conn.feed(message(ty, &id, payload));
        promise.into()
    }

    fn op(self: &Rc<Self>, op: u32, a: JsValue, b: JsValue, c: JsValue) -> JsValue {
        let Some(conn) = self.conn.upgrade() else {
            return Promise::reject(&type_error("window.abp is no longer served")).into();
        };
        let session = conn.core.borrow().session_id().map(str::to_owned);
        match op {
            0 => JsValue::from_bool(session.is_some()),
            1 => session
                .map(|s| JsValue::from_str(&s))
                .unwrap_or(JsValue::NULL),
            2 => {
                let params = if a.kind() == Kind::Object {
                    a
                } else {
                    JsValue::object()
                };
                self.request(&conn, types::INITIALIZE, params)
            }
            3 => {
                let mut p = JsValue::object();
                if let Some(r) = a.as_string() {
                    p.set("reason", JsValue::from_str(&r));
                }
                conn.feed(message(types::SHUTDOWN, &conn.next_id(), p));
                Promise::resolve(&JsValue::UNDEFINED).into()
            }
            4 => {
                let Some(capability) = a.as_string() else {
                    return Promise::reject(&type_error("abp.call: capability must be a string"))
                        .into();
                };
                let call_id = opt_string(&c, "callId").unwrap_or_else(new_call_id);
                let mut options = JsValue::object();
                for key in ["timeout", "progressToken"] {
                    if let Some(v) = c.get(key) {
                        options.set(key, v);
                    }
                }
                let mut p = JsValue::object();
                p.set("callId", JsValue::from_str(&call_id));
                p.set("capability", JsValue::from_str(&capability));
                p.set("params", b);
                p.set("options", options);
                self.request(&conn, types::CALL, p)
            }
            5 => {
                let Some(call_id) = a.as_string() else {
                    return Promise::reject(&type_error("abp.cancel: callId must be a string"))
                        .into();
                };
                let mut p = JsValue::object();
                p.set("callId", JsValue::from_str(&call_id));
                if let Some(r) = b.as_string() {
                    p.set("reason", JsValue::from_str(&r));
                }
                self.request(&conn, types::CANCEL, p)
            }
            6 => conn.capabilities(),
            7 => {
                let name = a.as_string().unwrap_or_default();
                Array::from(&conn.capabilities())
                    .iter()
                    .find(|d| opt_string(d, "name").as_deref() == Some(name.as_str()))
                    .unwrap_or(JsValue::NULL)
            }
            8 => {
                let name = a.as_string().unwrap_or_default();
                let supported = Array::from(&conn.capabilities())
                    .iter()
                    .any(|d| opt_string(&d, "name").as_deref() == Some(name.as_str()));
                let mut r = JsValue::object();
                r.set("supported", JsValue::from_bool(supported));
                r.set("available", JsValue::from_bool(supported));
                if !supported {
                    r.set(
                        "reason",
                        JsValue::from_str("The app does not offer this capability"),
                    );
                }
                r
            }
            9 => {
                let event = a.as_string().unwrap_or_default();
                let told = conn.core.borrow_mut().notify(&event, b);
                conn.drive();
                JsValue::from_bool(told)
            }
            10 => {
                let call_id = opt_string(&a, "callId").unwrap_or_default();
                if a.kind() == Kind::Object {
                    conn.core
                        .borrow_mut()
                        .progress(&call_id, a, super::dom::now());
                    conn.drive();
                }
                JsValue::UNDEFINED
            }
            11 => {
                let call_id = opt_string(&a, "callId");
                conn.elicit(call_id.as_deref(), a).into()
            }
            _ => JsValue::UNDEFINED,
        }
    }
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
        match ty.as_str() {
            types::INITIALIZE_RESULT | types::CALL_RESULT | types::CANCEL_RESULT => {
                let resolve = id.and_then(|id| self.pending.borrow_mut().remove(&id));
                if let Some(resolve) = resolve {
                    let _ = resolve.call1(&JsValue::NULL, &payload);
                }
            }
            types::PROGRESS => {
                if let Some(f) = window_hook("__abp_progress") {
                    let _ = f.call1(&JsValue::NULL, &payload);
                }
            }
            types::NOTIFICATION => {
                let event = opt_string(&payload, "event");
                if event.as_deref() == Some(types::CAPABILITIES_CHANGED) {
                    if let Some(f) = window_hook("__abp_capabilities_changed") {
                        let _ = f.call1(&JsValue::NULL, &conn.capabilities());
                    }
                } else if let Some(f) = window_hook("__abp_notification") {
                    let _ = f.call1(&JsValue::NULL, &payload);
                }
            }
            types::ELICITATION_REQUEST => {
                let id = id.unwrap_or_default();
                let weak = Rc::downgrade(conn);
                let answer = move |response: JsValue| {
                    if let Some(c) = weak.upgrade() {
                        c.feed(message(types::ELICITATION_RESPONSE, &id, response));
                    }
                };
                match window_hook("__abp_elicitation") {
                    Some(f) => {
                        let r = f.call1(&JsValue::NULL, &payload);
                        wasm_bindgen_futures::spawn_local(async move {
                            let r = match r {
                                Ok(v) if is_thenable(&v) => {
                                    wasm_bindgen_futures::JsFuture::from(Promise::resolve(&v)).await
                                }
                                other => other,
                            };
                            answer(elicitation_answer(r));
                        });
                    }
                    None => {
                        let mut r = JsValue::object();
                        r.set("success", JsValue::FALSE);
                        let mut e = JsValue::object();
                        e.set("code", JsValue::from_str("NOT_SUPPORTED"));
                        e.set(
                            "message",
                            JsValue::from_str("No __abp_elicitation handler is exposed"),
                        );
                        e.set("retryable", JsValue::FALSE);
                        r.set("error", e);
                        wasm_bindgen_futures::spawn_local(async move { answer(r) });
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn elicitation_answer(r: Result<JsValue, JsValue>) -> JsValue {
    match r {
        Ok(v) if v.kind() == Kind::Object => v,
        Ok(v) => {
            let mut o = JsValue::object();
            o.set("success", JsValue::TRUE);
            o.set("data", v);
            o
        }
        Err(e) => {
            let mut o = JsValue::object();
            o.set("success", JsValue::FALSE);
            let mut err = JsValue::object();
            err.set("code", JsValue::from_str("OPERATION_FAILED"));
            err.set(
                "message",
                JsValue::from_str(&opt_string(&e, "message").unwrap_or_default()),
            );
            err.set("retryable", JsValue::FALSE);
            o.set("error", err);
            o
        }
    }
}
