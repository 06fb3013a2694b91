//! Window messages: an iframe, another window, or the parent page. Which messages count (`event.source` is
//! the expected window and `event.origin` is allowed), a watchdog that notices the other window going, and
//! posting to a window's origin.

use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{EventTarget, HtmlIFrameElement, MessageEvent, Window};

use super::mcpb::Envelope;
use super::port::first_port;
use super::sink::{Received, Sink};
use crate::core::text::text;
use crate::web::dom::{window, Interval, Listener};
use crate::web::value::console_warn;

/// How a received message relates to the expected sender.
pub(crate) enum Verdict {
    Accept,
    /// Right origin, but the sending window is gone.
    Orphan,
    Reject,
}

/// Which messages count, by their event.
pub(crate) type Accept = Box<dyn Fn(&MessageEvent) -> Verdict>;

fn same(a: &JsValue, b: &JsValue) -> bool {
    js_sys::Object::is(a, b)
}

fn origin_ok(origin: &str, e: &MessageEvent) -> bool {
    origin == "*" || e.origin() == origin
}

/// Every 200 ms, `gone()` decides whether the other side is still there.
fn watchdog<S: Sink>(sink: Weak<S>, gone: impl Fn() -> bool + 'static) -> Interval {
    Interval::new(200, move || {
        if gone() {
            if let Some(s) = sink.upgrade() {
                s.on_lost();
            }
        }
    })
}

/// An app in `iframe` on `origin`: its window's messages count; the frame removed or emptied is the app gone.
pub(crate) fn iframe<S: Sink>(
    iframe: &HtmlIFrameElement,
    origin: &str,
    sink: Weak<S>,
) -> (Accept, Interval) {
    let frame = iframe.clone();
    let dog = watchdog(sink, move || {
        !frame.is_connected() || frame.content_window().is_none()
    });
    let (iframe, origin) = (iframe.clone(), origin.to_owned());
    let accept = Box::new(
        move |e: &MessageEvent| match (e.source(), iframe.content_window()) {
            (Some(src), Some(win)) if origin_ok(&origin, e) && same(&src, &win) => Verdict::Accept,
            (None, _) if origin_ok(&origin, e) => Verdict::Orphan,
            _ => Verdict::Reject,
        },
    );
    (accept, dog)
}

/// Another window on `origin`: its messages count; the window closed is the other side gone.
pub(crate) fn other_window<S: Sink>(
    win: &Window,
    origin: &str,
    sink: Weak<S>,
) -> (Accept, Interval) {
    let watched = win.clone();
    let dog = watchdog(sink, move || watched.closed().unwrap_or(true));
    let (win, origin) = (win.clone(), origin.to_owned());
    let accept = Box::new(move |e: &MessageEvent| match e.source() {
        Some(src) if origin_ok(&origin, e) && same(&src, &win) => Verdict::Accept,
        None if origin_ok(&origin, e) => Verdict::Orphan,
        _ => Verdict::Reject,
    });
    (accept, dog)
}

/// The parent page, from one of the `allowed` origins. An opaque (`"null"`) parent counts only when `"null"` is
/// listed itself: `'*'` does not let it in, since replies to it could only go to `'*'`.
///
/// A protocol message from the parent on an origin not allowed is dropped, and the console says so once (else
/// the agent there waits out its connect timeout and nothing says why).
pub(crate) fn parent(allowed: &[String]) -> Accept {
    let allowed = allowed.to_vec();
    let parent = window().and_then(|w| w.parent().ok().flatten());
    let warned = std::cell::Cell::new(false);
    Box::new(move |e| {
        let from_parent = match (e.source(), &parent) {
            (Some(src), Some(p)) => same(&src, p),
            _ => false,
        };
        let origin = e.origin();
        if from_parent
            && allowed
                .iter()
                .any(|o| *o == origin || (o == "*" && origin != "null"))
        {
            Verdict::Accept
        } else {
            if from_parent && !warned.get() && looks_like_protocol(&e.data()) {
                warned.set(true);
                console_warn(&text(&[
                    "abp-wasm: dropped a message from the parent page at ",
                    &origin,
                    ": that origin is not in this transport's allowedOrigins (",
                    &allowed.join(", "),
                    "), so the agent there gets no answer. Add it to allowedOrigins if that page may drive this one.",
                ]));
            }
            Verdict::Reject
        }
    })
}

/// Whether a posted value looks like a message of one of the protocols (ABP's `type`, JSON-RPC's `jsonrpc`, or
/// MCP-B's `channel` envelope), not another script's traffic.
fn looks_like_protocol(data: &JsValue) -> bool {
    data.is_object()
        && ["type", "jsonrpc", "channel"]
            .iter()
            .any(|k| js_sys::Reflect::has(data, &JsValue::from_str(k)).unwrap_or(false))
}

/// The listener of window messages on `events` (this page's global): what `accept` lets through, opened
/// from the MCP-B `envelope` when there is one (only our channel's, in the direction that comes to this side).
pub(crate) fn listen<S: Sink>(
    events: &EventTarget,
    accept: Accept,
    envelope: Option<Envelope>,
    sink: Weak<S>,
) -> Listener {
    Listener::new(events, "message", move |event| {
        let Some(e) = event.dyn_ref::<MessageEvent>() else {
            return;
        };
        let Some(s) = sink.upgrade() else { return };
        let verdict = accept(e);
        let data = match (&envelope, &verdict) {
            (Some(env), Verdict::Accept | Verdict::Orphan) => {
                let payload = env.open(&e.data());
                if payload.is_undefined() {
                    return;
                }
                if let Some(signal) = payload.as_string() {
                    return env.handshake(&signal, e, &s);
                }
                payload
            }
            _ => e.data(),
        };
        deliver(&s, verdict, data, e);
    })
}

fn deliver<S: Sink>(s: &Rc<S>, verdict: Verdict, data: JsValue, e: &MessageEvent) {
    match verdict {
        Verdict::Accept => s
            .clone()
            .on_message(Received::Raw(data), &e.origin(), first_port(e)),
        Verdict::Orphan => s.clone().on_orphan(data),
        Verdict::Reject => s.clone().on_rejected(),
    }
}

/// Whether a message posted to `iframe` for `origin` could arrive. A frame starts on an `about:blank`
/// document of this page's origin (until the app's page commits); posting to it with another `targetOrigin`
/// is dropped and the browser logs "Failed to execute 'postMessage' … does not match the recipient window's
/// origin" for every attempt. A frame's document is readable only while it is same-origin with this page
/// (`contentDocument` is null otherwise, without throwing), so only then is its origin compared.
pub(crate) fn frame_ready(iframe: &HtmlIFrameElement, origin: &str) -> bool {
    if origin == "*" || origin == "/" || iframe.content_document().is_none() {
        return true;
    }
    let theirs = iframe
        .content_window()
        .and_then(|w| js_sys::Reflect::get(&w, &JsValue::from_str("origin")).ok())
        .and_then(|o| o.as_string());
    let wanted = web_sys::Url::new(origin).map(|u| u.origin());
    match (theirs, wanted) {
        (Some(theirs), Ok(wanted)) => theirs == wanted,
        // Cannot tell (or a targetOrigin postMessage will reject): post and let it say so.
        _ => true,
    }
}

pub(crate) fn post_to(
    win: &Window,
    msg: &JsValue,
    origin: &str,
    transfer: Option<&JsValue>,
) -> Result<(), JsValue> {
    match transfer {
        Some(t) => win.post_message_with_transfer(msg, origin, t),
        None => win.post_message(msg, origin),
    }
}
