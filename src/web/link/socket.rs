//! `WebSocketTransport`: ABP over a WebSocket, as JSON text frames.
//!
//! The transport owns the socket for its whole life: it opens it (`connect` resolves once it is open), hands
//! received frames to whichever client or app connection attached to it, reports a close as a lost transport,
//! and, when `reconnect` is on, opens a new socket with exponential backoff and says so
//! ([`Sink::on_reconnected`]). Binary values become ABP `BinaryData` (base64) on the way out and bytes on the
//! way in (done by `wsEncode`/`wsDecode` in the JS glue).

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, WebSocket};

use super::sink::{Received, Sink};
use crate::core::payload::{Kind, Payload};
use crate::core::text::text;
use crate::web::dom::{later, now, when_settled, Listener, Timer};
use crate::web::types::WebSocketOptions;
use crate::web::value::{error_with_code, opt_number, type_error, Deferred};

#[wasm_bindgen(module = "/src/web/link/socket.js")]
extern "C" {
    #[wasm_bindgen(js_name = wsEncode, catch)]
    pub(crate) fn ws_encode(msg: &JsValue, max: f64) -> Result<String, JsValue>;
    #[wasm_bindgen(js_name = wsDecode)]
    pub(crate) fn ws_decode(data: &JsValue, max: f64) -> JsValue;
    #[wasm_bindgen(js_name = wsBlockedBy)]
    fn ws_blocked_by(url: &str) -> Promise;
}

/// Default limit for one frame, either way: 16 MiB of UTF-8 text.
const DEFAULT_MAX_BYTES: f64 = 16.0 * 1024.0 * 1024.0;
/// The relay's notices (abp-peer): the app behind it left; another app joined.
const APP_LEFT: &[u8] = b"abp-relay: app left";
const APP_JOINED: &[u8] = b"abp-relay: app joined";
/// Frames kept while nobody has attached yet (between `connect` resolving and `listen`/`AbpClient.connect`).
const EARLY_LIMIT: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Backoff {
    initial: f64,
    max: f64,
    attempts: f64,
}

impl Backoff {
    /// The wait before attempt `n` (0-based): doubling from `initial` up to `max`, with ±20 % jitter so many
    /// pages do not come back in lockstep.
    fn delay(&self, n: u32, jitter: f64) -> f64 {
        let base = self.initial * 2f64.powi(n.min(30) as i32);
        base.min(self.max) * (0.8 + 0.4 * jitter)
    }
}

fn parse_reconnect(options: &JsValue) -> Result<Option<Backoff>, JsValue> {
    let Some(r) = options.get("reconnect") else {
        return Ok(None);
    };
    let mut b = Backoff {
        initial: 250.0,
        max: 5000.0,
        attempts: f64::INFINITY,
    };
    match r.kind() {
        Kind::Bool if r.as_bool() == Some(true) => Ok(Some(b)),
        Kind::Bool | Kind::Null | Kind::Undefined => Ok(None),
        Kind::Object => {
            let field = |k: &str| opt_number(&r, k).filter(|v| v.is_finite() && *v >= 0.0);
            if let Some(v) = field("initialDelay") {
                b.initial = v.max(1.0);
            }
            if let Some(v) = field("maxDelay") {
                b.max = v.max(b.initial);
            }
            if let Some(v) = opt_number(&r, "maxAttempts").filter(|v| *v >= 0.0) {
                b.attempts = v;
            }
            Ok(Some(b))
        }
        _ => Err(type_error(
            "WebSocketTransport.connect: reconnect must be true, false or { initialDelay?, maxDelay?, maxAttempts? }",
        )),
    }
}

thread_local! {
    /// Sockets between `connect` and their first `open`/`close`: nothing else holds them yet.
    static OPENING: RefCell<Vec<Rc<Socket>>> = const { RefCell::new(Vec::new()) };
}

pub(crate) struct Socket {
    url: String,
    protocols: JsValue,
    max_bytes: f64,
    reconnect: Option<Backoff>,
    ws: RefCell<Option<WebSocket>>,
    listeners: RefCell<Vec<Listener>>,
    sink: RefCell<Option<Weak<dyn Sink>>>,
    early: RefCell<Vec<JsValue>>,
    retry: RefCell<Option<Timer>>,
    attempt: Cell<u32>,
    /// Closed by its owner: no more reconnects, nothing more reported.
    closed: Cell<bool>,
    /// A relay said the app behind it left (and has not said another joined).
    app_away: Cell<bool>,
    /// `connect`'s resolve/reject, until the first socket opened or failed.
    opening: RefCell<Option<Deferred>>,
}

/// ABP over a WebSocket: `await WebSocketTransport.connect('wss://…')`, then hand it to `AbpClient.connect` or
/// `app.listen`. One transport serves one connection.
#[wasm_bindgen]
pub struct WebSocketTransport {
    socket: RefCell<Option<Rc<Socket>>>,
    url: String,
}

#[wasm_bindgen]
impl WebSocketTransport {
    /// Opens a WebSocket to `url` and resolves once it is open. Rejects with an `Error` whose `code` is
    /// DISCONNECTED if it cannot be opened (with `reconnect`, once its attempts run out, or at once when the
    /// browser blocked it: Local Network Access; the message says what may have happened), or a `TypeError` for a
    /// bad URL or options (never throws).
    #[wasm_bindgen(unchecked_return_type = "Promise<WebSocketTransport>")]
    pub fn connect(
        #[wasm_bindgen(unchecked_param_type = "string")] url: JsValue,
        options: Option<WebSocketOptions>,
    ) -> Promise {
        // Every failure becomes a rejection, so `connect(…).catch(…)` sees it as the typings promise.
        Self::open_socket(url, options).unwrap_or_else(|e| Promise::reject(&e))
    }

    /// Closes the socket of a transport that was never handed to a client or app (once handed over, the
    /// client's `shutdown()` or the app's `close()` closes it).
    pub fn close(&self) {
        if let Some(socket) = self.socket.borrow_mut().take() {
            socket.close();
        }
    }

    /// The subprotocol the server chose (`''` if none).
    #[wasm_bindgen(getter)]
    pub fn protocol(&self) -> String {
        let socket = self.socket.borrow();
        let ws = socket.as_ref().and_then(|s| s.ws.borrow().clone());
        ws.map(|ws| ws.protocol()).unwrap_or_default()
    }

    /// The URL this transport connects to.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }
}

impl WebSocketTransport {
    fn open_socket(url: JsValue, options: Option<WebSocketOptions>) -> Result<Promise, JsValue> {
        let url = url.as_string().ok_or_else(|| {
            type_error("WebSocketTransport.connect: url must be a string (ws:// or wss://)")
        })?;
        let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let protocols =
            match options.get("protocols") {
                None => JsValue::UNDEFINED,
                Some(p) if p.is_string() => Array::of1(&p).into(),
                Some(p) if Array::is_array(&p) => p,
                Some(_) => return Err(type_error(
                    "WebSocketTransport.connect: protocols must be a string or an array of strings",
                )),
            };
        let max_bytes = match options.get("maxMessageBytes") {
            None => DEFAULT_MAX_BYTES,
            Some(v) => v
                .as_f64()
                .filter(|m| m.is_finite() && *m >= 64.0)
                .ok_or_else(|| {
                    type_error("WebSocketTransport.connect: maxMessageBytes must be a number ≥ 64")
                })?,
        };
        let reconnect = parse_reconnect(&options)?;
        let socket = Rc::new(Socket {
            url,
            protocols,
            max_bytes,
            reconnect,
            ws: RefCell::new(None),
            listeners: RefCell::new(Vec::new()),
            sink: RefCell::new(None),
            early: RefCell::new(Vec::new()),
            retry: RefCell::new(None),
            attempt: Cell::new(0),
            closed: Cell::new(false),
            app_away: Cell::new(false),
            opening: RefCell::new(None),
        });
        socket.open()?;
        let opening = Deferred::new();
        let promise = opening.promise();
        *socket.opening.borrow_mut() = Some(opening);
        OPENING.with(|o| o.borrow_mut().push(socket));
        Ok(promise)
    }

    pub(crate) fn take(&self) -> Result<Rc<Socket>, JsValue> {
        self.socket.borrow_mut().take().ok_or_else(|| {
            type_error(
                "This WebSocketTransport is already in use; connect a new one per connection",
            )
        })
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        if let Some(ws) = self.ws.get_mut().take() {
            let _ = ws.close_with_code(1000);
        }
    }
}

impl Socket {
    /// Opens a new WebSocket and listens to it (weakly: the owner keeps the socket alive).
    fn open(self: &Rc<Self>) -> Result<(), JsValue> {
        let ws = if self.protocols.is_undefined() {
            WebSocket::new(&self.url)
        } else {
            WebSocket::new_with_str_sequence(&self.url, &self.protocols)
        }
        .map_err(|e| {
            let message = crate::web::value::opt_string(&e, "message").unwrap_or_default();
            type_error(&text(&["WebSocketTransport.connect: ", &message]))
        })?;
        let target: &web_sys::EventTarget = ws.as_ref();
        let w = Rc::downgrade(self);
        let on_open = Listener::new(target, "open", move |_| {
            if let Some(s) = w.upgrade() {
                s.opened();
            }
        });
        let w = Rc::downgrade(self);
        let on_message = Listener::new(target, "message", move |event| {
            let (Some(e), Some(s)) = (event.dyn_ref::<MessageEvent>(), w.upgrade()) else {
                return;
            };
            let data = e.data();
            if let Some(bytes) = data.dyn_ref::<js_sys::ArrayBuffer>() {
                if s.relay_notice(&js_sys::Uint8Array::new(bytes).to_vec()) {
                    return;
                }
            }
            s.received(ws_decode(&data, s.max_bytes));
        });
        let w = Rc::downgrade(self);
        let on_close = Listener::new(target, "close", move |_| {
            if let Some(s) = w.upgrade() {
                s.lost();
            }
        });
        let old = std::mem::replace(
            &mut *self.listeners.borrow_mut(),
            vec![on_open, on_message, on_close],
        );
        later(Box::new(move || drop(old)));
        // Binary frames arrive as bytes at once (a Blob would need an asynchronous read): only the relay's notices
        // are binary.
        ws.set_binary_type(web_sys::BinaryType::Arraybuffer);
        *self.ws.borrow_mut() = Some(ws);
        Ok(())
    }

    /// abp-peer's relay keeps an agent's socket open when the app behind it leaves, and says so with a binary
    /// frame, and again when another app joins: the session ends there and the next one starts then (the owner
    /// without `reconnect` lets the socket go). False for any other frame.
    fn relay_notice(self: &Rc<Self>, bytes: &[u8]) -> bool {
        match bytes {
            APP_LEFT => {
                self.app_away.set(true);
                if let Some(sink) = self.sink() {
                    sink.on_lost();
                }
                true
            }
            APP_JOINED => {
                if self.app_away.replace(false) {
                    if let Some(sink) = self.sink() {
                        sink.on_reconnected();
                    }
                }
                true
            }
            _ => false,
        }
    }

    fn opened(self: &Rc<Self>) {
        self.attempt.set(0);
        let opening = self.opening.borrow_mut().take();
        if let Some(opening) = opening {
            OPENING.with(|o| o.borrow_mut().retain(|s| !Rc::ptr_eq(s, self)));
            let transport = WebSocketTransport {
                socket: RefCell::new(Some(self.clone())),
                url: self.url.clone(),
            };
            opening.resolve(&transport.into());
        } else if let Some(sink) = self.sink() {
            sink.on_reconnected();
        }
    }

    fn received(&self, message: JsValue) {
        match self.sink() {
            Some(sink) => sink.on_message(Received::Raw(message), "", None),
            None => {
                let mut early = self.early.borrow_mut();
                if early.len() < EARLY_LIMIT {
                    early.push(message);
                }
            }
        }
    }

    fn lost(self: &Rc<Self>) {
        let ws = self.ws.borrow_mut().take();
        let old = std::mem::take(&mut *self.listeners.borrow_mut());
        later(Box::new(move || drop(old)));
        drop(ws);
        let opening = self.opening.borrow_mut().take();
        if let Some(opening) = opening {
            // Whether the browser stopped it decides between retrying and telling the page what to do.
            let s = Rc::clone(self);
            when_settled(
                &ws_blocked_by(&self.url),
                Box::new(move |blocked| {
                    let blocked = blocked.ok().and_then(|b| b.as_string()).unwrap_or_default();
                    s.not_opened(opening, &blocked);
                }),
            );
            return;
        }
        if self.closed.get() {
            return;
        }
        if let Some(sink) = self.sink() {
            sink.on_lost();
        }
        self.schedule_retry();
    }

    /// The first socket did not open. With `reconnect`, it is retried as a lost one would be (an app page may be
    /// opened before its gateway): `connect` resolves when one opens, and rejects once the attempts run out, or at
    /// once when the browser blocked it (`blocked` says why), which no retry changes until the user acts.
    fn not_opened(self: &Rc<Self>, opening: Deferred, blocked: &str) {
        if blocked.is_empty() && !self.closed.get() && self.schedule_retry() {
            *self.opening.borrow_mut() = Some(opening);
            return;
        }
        OPENING.with(|o| o.borrow_mut().retain(|s| !Rc::ptr_eq(s, self)));
        let why = if !blocked.is_empty() {
            blocked
        } else {
            "nothing may be listening there, the server may have refused this page (its Origin or Host, or a \
             missing key or token), or the browser may have blocked it (Local Network Access, mixed content); \
             browsers do not tell pages which, but the server's log and this page's console do"
        };
        let tries = if self.reconnect.is_some() && blocked.is_empty() {
            " (after every reconnect attempt)"
        } else {
            ""
        };
        let error = error_with_code(
            "DISCONNECTED",
            &text(&[
                "WebSocketTransport.connect: could not open ",
                &self.url,
                tries,
                ": ",
                why,
            ]),
        );
        opening.reject(&error);
    }

    /// Schedules the next attempt, if `reconnect` allows one more; whether it did.
    fn schedule_retry(self: &Rc<Self>) -> bool {
        let Some(backoff) = self.reconnect else {
            return false;
        };
        if self.closed.get() || f64::from(self.attempt.get()) >= backoff.attempts {
            return false;
        }
        let delay = backoff.delay(self.attempt.get(), js_sys::Math::random());
        self.attempt.set(self.attempt.get().saturating_add(1));
        let w = Rc::downgrade(self);
        let timer = Timer::new(move || {
            let Some(s) = w.upgrade() else { return };
            if s.closed.get() {
                return;
            }
            // A URL that parsed once keeps parsing; should `new WebSocket` still throw, try again later.
            if s.open().is_err() {
                s.schedule_retry();
            }
        });
        timer.arm(Some(now() + delay));
        let old = self.retry.borrow_mut().replace(timer);
        later(Box::new(move || drop(old)));
        true
    }

    fn sink(&self) -> Option<Rc<dyn Sink>> {
        self.sink.borrow().as_ref().and_then(Weak::upgrade)
    }

    /// A client or app connection takes the socket over. Frames that arrived before are delivered after
    /// the current task (the caller is still setting itself up).
    pub(crate) fn attach(self: &Rc<Self>, sink: Weak<dyn Sink>) {
        *self.sink.borrow_mut() = Some(sink);
        let s = self.clone();
        later(Box::new(move || {
            let early = std::mem::take(&mut *s.early.borrow_mut());
            for m in early {
                s.received(m);
            }
            if s.ws.borrow().is_none() && !s.closed.get() {
                // Closed before anyone listened: report it now.
                if let Some(sink) = s.sink() {
                    sink.on_lost();
                }
            }
        }));
    }

    /// Sends one message as a text frame.
    pub(crate) fn send(&self, msg: &JsValue) -> Result<(), JsValue> {
        let ws = self.ws.borrow();
        let ws = ws
            .as_ref()
            .filter(|ws| ws.ready_state() == WebSocket::OPEN)
            .ok_or_else(|| error_with_code("DISCONNECTED", "The WebSocket is not open"))?;
        let frame = ws_encode(msg, self.max_bytes)?;
        ws.send_with_str(&frame)
    }

    /// Whether a lost socket will be replaced.
    pub(crate) fn reconnects(&self) -> bool {
        self.reconnect.is_some() && !self.closed.get()
    }

    /// Drops the current socket (a reconnecting transport then opens a new one).
    pub(crate) fn bounce(&self) {
        if let Some(ws) = self.ws.borrow().as_ref() {
            let _ = ws.close();
        }
    }

    /// The owner is done: closes the socket and stops reconnecting.
    pub(crate) fn close(&self) {
        self.closed.set(true);
        self.sink.borrow_mut().take();
        let retry = self.retry.borrow_mut().take();
        let listeners = std::mem::take(&mut *self.listeners.borrow_mut());
        if let Some(ws) = self.ws.borrow_mut().take() {
            let _ = ws.close_with_code(1000);
        }
        later(Box::new(move || {
            drop(retry);
            drop(listeners);
        }));
    }
}
