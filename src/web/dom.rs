//! Owned event listeners and timers: each holds its `Closure` (timers: gloo-timers' `Timeout`/`Interval`)
//! and unregisters it on drop, so nothing outlives the connection that made it.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use gloo_timers::callback::Timeout;
use js_sys::Function;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, EventTarget};

#[wasm_bindgen]
extern "C" {
    /// `globalThis`: the page's window, or a worker's global scope.
    #[wasm_bindgen(thread_local_v2, js_name = globalThis)]
    static GLOBAL_THIS: JsValue;
    #[wasm_bindgen(js_name = queueMicrotask)]
    fn queue_microtask(f: &JsValue);
}

/// `value.js`, which every build has (time and promises are values too, as far as the JS side goes).
#[wasm_bindgen(module = "/src/web/value.js")]
extern "C" {
    #[wasm_bindgen(js_name = whenSettled)]
    fn when_settled_js(value: &JsValue, then: &JsValue);
    #[wasm_bindgen(js_name = now)]
    fn performance_now() -> f64;
}

/// Runs `f` in a microtask: after the listener or callback that is running now has returned (for work that
/// must not happen inside it, such as dropping that listener's own closure). The queued function frees its
/// closure when it runs, and a queued microtask always runs (`Closure::once_into_js`).
pub(crate) fn later(f: Box<dyn FnOnce()>) {
    queue_microtask(&Closure::once_into_js(f));
}

/// Calls `f` with how `value` settles (`Promise.resolve(value)`: a promise, another thenable, or a value).
/// What wasm-bindgen-futures' `JsFuture` did, without its task queue in every build (gzipped wasm: see
/// BENCHMARKS.md). The closure is freed when it is called; like a `JsFuture`'s, it stays with a promise that
/// never settles.
pub(crate) fn when_settled(value: &JsValue, f: Box<dyn FnOnce(Result<JsValue, JsValue>)>) {
    let then =
        Closure::once_into_js(move |ok: bool, v: JsValue| f(if ok { Ok(v) } else { Err(v) }));
    when_settled_js(value, &then);
}

/// `globalThis`. One binding, where `js_sys::global()` (and `web_sys::window()`, which uses it) probe four names
/// for engines without `globalThis` (gzipped: see BENCHMARKS.md).
pub(crate) fn global() -> JsValue {
    GLOBAL_THIS.with(JsValue::clone)
}

/// The page's window (`None` in a worker).
pub(crate) fn window() -> Option<web_sys::Window> {
    global().dyn_into().ok()
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
    function: Function,
    /// The wasm closures `function` calls, alive as long as it is registered.
    _closures: Box<dyn Any>,
}

impl Listener {
    pub(crate) fn new(
        target: &EventTarget,
        kind: &'static str,
        f: impl FnMut(Event) + 'static,
    ) -> Listener {
        let closure = Closure::<dyn FnMut(Event)>::new(f);
        let function = closure.as_ref().unchecked_ref::<Function>().clone();
        Listener::js(target, kind, function, Box::new(closure))
    }

    /// `function` (made in JS, calling the wasm `closures`) as the listener.
    pub(crate) fn js(
        target: &EventTarget,
        kind: &'static str,
        function: Function,
        closures: Box<dyn Any>,
    ) -> Listener {
        let _ = target.add_event_listener_with_callback(kind, &function);
        Listener {
            target: target.clone(),
            kind,
            function,
            _closures: closures,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self
            .target
            .remove_event_listener_with_callback(self.kind, &self.function);
    }
}

/// One re-armable timeout driving a core's `poll_timeout`, on `gloo_timers`' `Timeout` (cleared on drop).
/// Only re-scheduled when the deadline moves earlier or the armed one has fired, so a call with a timeout
/// rarely makes a new one.
#[must_use = "the timer is cleared when this is dropped"]
pub(crate) struct Timer {
    callback: Rc<dyn Fn()>,
    armed_at: Cell<Option<f64>>,
    pending: RefCell<Option<Timeout>>,
}

impl Timer {
    pub(crate) fn new(f: impl Fn() + 'static) -> Timer {
        Timer {
            callback: Rc::new(f),
            armed_at: Cell::new(None),
            pending: RefCell::new(None),
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
                // Whole milliseconds, at most what setTimeout takes (about 24.8 days).
                let delay = (t - now()).clamp(0.0, 2_147_483_647.0).ceil() as u32;
                let callback = self.callback.clone();
                // Replacing the old Timeout clears it (gloo's Drop).
                *self.pending.borrow_mut() = Some(Timeout::new(delay, move || callback()));
                self.armed_at.set(Some(t));
            }
        }
    }

    /// Called at the start of the callback: the armed timeout has fired.
    pub(crate) fn fired(&self) {
        self.armed_at.set(None);
    }
}

/// A repeating interval, cleared on drop.
pub(crate) type Interval = gloo_timers::callback::Interval;
