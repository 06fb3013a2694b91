//! Owned event listeners and timers: each holds its `Closure` and unregisters it on drop
//! (the gloo pattern), so nothing outlives the connection that made it.

use std::cell::{Cell, RefCell};

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, EventTarget};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
    #[wasm_bindgen(js_name = setInterval)]
    fn set_interval(handler: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearInterval)]
    fn clear_interval(handle: &JsValue);
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// Monotonic milliseconds for the core's timers.
pub(crate) fn now() -> f64 {
    performance_now()
}

/// Unix milliseconds for envelope timestamps.
pub(crate) fn timestamp() -> f64 {
    js_sys::Date::now()
}

/// An event listener that is removed when dropped.
#[must_use = "the listener is removed when this is dropped"]
pub(crate) struct Listener {
    target: EventTarget,
    kind: &'static str,
    closure: Closure<dyn FnMut(Event)>,
}

impl Listener {
    pub(crate) fn new(
        target: &EventTarget,
        kind: &'static str,
        f: impl FnMut(Event) + 'static,
    ) -> Listener {
        let closure = Closure::<dyn FnMut(Event)>::new(f);
        let _ = target.add_event_listener_with_callback(kind, closure.as_ref().unchecked_ref());
        Listener {
            target: target.clone(),
            kind,
            closure,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self
            .target
            .remove_event_listener_with_callback(self.kind, self.closure.as_ref().unchecked_ref());
    }
}

/// One re-armable timeout driving a core's `poll_timeout`. Only re-scheduled when the deadline moves earlier
/// or the armed one has fired.
#[must_use = "the timer is cleared when this is dropped"]
pub(crate) struct Timer {
    closure: Closure<dyn FnMut()>,
    armed_at: Cell<Option<f64>>,
    handle: RefCell<JsValue>,
}

impl Timer {
    pub(crate) fn new(f: impl FnMut() + 'static) -> Timer {
        Timer {
            closure: Closure::<dyn FnMut()>::new(f),
            armed_at: Cell::new(None),
            handle: RefCell::new(JsValue::UNDEFINED),
        }
    }

    /// Makes sure the callback runs at (or soon after) `at` (monotonic ms). `None`: nothing is due; a pending
    /// timeout may still fire (the callback then finds nothing to do).
    pub(crate) fn arm(&self, at: Option<f64>) {
        match (at, self.armed_at.get()) {
            // Nothing due: an armed timeout is left to fire and find nothing to do (cheaper than clearing it
            // now and setting a new one for the next call with a timeout).
            (None, _) => {}
            (Some(t), Some(a)) if a <= t => {} // an earlier wake-up is pending; it re-arms when it fires
            (Some(t), _) => {
                self.clear();
                let delay = (t - now()).max(0.0).ceil();
                *self.handle.borrow_mut() =
                    set_timeout(self.closure.as_ref().unchecked_ref(), delay);
                self.armed_at.set(Some(t));
            }
        }
    }

    /// Called at the start of the callback: the armed timeout has fired.
    pub(crate) fn fired(&self) {
        self.armed_at.set(None);
    }

    fn clear(&self) {
        if self.armed_at.take().is_some() {
            clear_timeout(&self.handle.borrow());
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A repeating interval, cleared on drop.
#[must_use = "the interval is cleared when this is dropped"]
pub(crate) struct Interval {
    _closure: Closure<dyn FnMut()>,
    handle: JsValue,
}

impl Interval {
    pub(crate) fn new(ms: f64, f: impl FnMut() + 'static) -> Interval {
        let closure = Closure::<dyn FnMut()>::new(f);
        let handle = set_interval(closure.as_ref().unchecked_ref(), ms);
        Interval {
            _closure: closure,
            handle,
        }
    }
}

impl Drop for Interval {
    fn drop(&mut self) {
        clear_interval(&self.handle);
    }
}
