//! `MessagePort`s: a `fromPort` transport, and the private channel an ABP agent offers with `initialize`.
//! A port that carries ABP envelopes has its calls and results read in one pass in JS (`abpPortListener`).

use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, MessagePort};

use super::sink::{Received, Sink};
use crate::core::message::{ToAgent, ToApp};
use crate::web::dom::Listener;
use crate::web::value::keep_id;

#[wasm_bindgen(module = "/src/web/link/port.js")]
extern "C" {
    /// The listener of a private ABP channel: reads calls and results in one pass (see port.js).
    #[wasm_bindgen(js_name = abpPortListener)]
    pub(crate) fn abp_port_listener(
        on_call: &JsValue,
        on_result: &JsValue,
        on_other: &JsValue,
    ) -> js_sys::Function;
    #[wasm_bindgen(js_name = portPost)]
    fn port_post_js(
        port: &web_sys::MessagePort,
        msg: &JsValue,
        transfer: &JsValue,
    ) -> Option<String>;
}

/// What a port listener hands on: a message, and its event unless it was read in one pass.
pub(crate) type Deliver = dyn Fn(Received, Option<&MessageEvent>);

/// The listener of a port that speaks ABP (the private channel offered with `initialize`, or a `fromPort`
/// transport): calls and results are read in JS in one pass (`abpPortListener`) and arrive as
/// [`Received::Read`], anything else as [`Received::Raw`] with its event.
/// One instance for its three uses (`deliver` as a trait object): each copy of the three closures costs gzipped
/// wasm (BENCHMARKS.md, "Changelog of figures", the `fromPort` fast path).
pub(crate) fn channel_listener(port: &MessagePort, deliver: Rc<Deliver>) -> Listener {
    type OnCall = dyn Fn(String, String, JsValue, JsValue, String, JsValue, f64, Option<String>);
    type OnResult = dyn Fn(Option<String>, Option<String>, JsValue, bool);
    let d = deliver.clone();
    let on_call = Closure::<OnCall>::new(
        move |id: String,
              call_id: String,
              id_js,
              call_id_js,
              capability,
              params,
              timeout: f64,
              token| {
            // The ids come as text (copied in by the caller, where reading a JS string from wasm would be a
            // step into JS each) and as the JS strings, kept for the result that sends them back.
            keep_id(&id, &id_js);
            keep_id(&call_id, &call_id_js);
            d(
                Received::Read(
                    ToApp::Call {
                        id,
                        call_id,
                        capability,
                        params,
                        timeout: timeout.is_finite().then_some(timeout),
                        progress_token: token,
                        // A call with a trace context (a `_meta`) is read whole in wasm instead.
                        trace: None,
                        features: None,
                    }
                    .into(),
                ),
                None,
            );
        },
    );
    let d = deliver.clone();
    let on_result = Closure::<OnResult>::new(move |id, call_id, payload, cancelled| {
        d(
            Received::Read(
                ToAgent::CallResult {
                    id,
                    call_id,
                    cancelled,
                    payload,
                }
                .into(),
            ),
            None,
        );
    });
    // Only message events: a page may dispatch any `Event` named "message" on the port (the generic listener
    // skips those too), and reading its origin would throw inside wasm.
    let on_other = Closure::<dyn Fn(JsValue, JsValue)>::new(move |data, e: JsValue| {
        if let Some(e) = e.dyn_ref::<MessageEvent>() {
            deliver(Received::Raw(data), Some(e));
        }
    });
    let function = abp_port_listener(on_call.as_ref(), on_result.as_ref(), on_other.as_ref());
    Listener::js(
        port,
        "message",
        function,
        Box::new((on_call, on_result, on_other)),
    )
}

pub(crate) fn first_port(e: &MessageEvent) -> Option<MessagePort> {
    let ports = e.ports();
    (ports.length() > 0).then(|| ports.get(0).unchecked_into::<MessagePort>())
}

/// The listeners of a `fromPort` transport: its messages (read in one pass when `abp`: the generic read made a
/// round trip over a MessageChannel slower, `bench/ab.mjs --port` in BENCHMARKS.md), and its `close`, which
/// newer browsers fire on a port whose other end went away.
pub(crate) fn listen<S: Sink>(port: &MessagePort, abp: bool, sink: Weak<S>) -> Vec<Listener> {
    let w = sink.clone();
    let deliver = move |data, e: Option<&MessageEvent>| {
        if let Some(s) = w.upgrade() {
            let origin = e.map(MessageEvent::origin).unwrap_or_default();
            s.on_message(data, &origin, e.and_then(first_port));
        }
    };
    let messages = if abp {
        channel_listener(port, Rc::new(deliver))
    } else {
        Listener::new(port, "message", move |event| {
            if let Some(e) = event.dyn_ref::<MessageEvent>() {
                deliver(Received::Raw(e.data()), Some(e));
            }
        })
    };
    port.start();
    let closed = Listener::new(port, "close", move |_| {
        if let Some(s) = sink.upgrade() {
            s.on_lost();
        }
    });
    vec![messages, closed]
}

/// Posts on a `MessagePort`; the error is the text of what `postMessage` threw (a value that cannot be cloned,
/// a detached buffer in the transfer list…), which is all its callers tell the agent.
pub(crate) fn port_post(
    port: &web_sys::MessagePort,
    msg: &JsValue,
    transfer: Option<&JsValue>,
) -> Result<(), JsValue> {
    match port_post_js(port, msg, transfer.unwrap_or(&JsValue::UNDEFINED)) {
        None => Ok(()),
        Some(thrown) => Err(JsValue::from_str(&thrown)),
    }
}
