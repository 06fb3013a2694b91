//! Links: a transport opened for one connection. A link sends, owns every listener and timer it installed,
//! and reports to its owner through the link interface ([`Sink`], `sink.rs`). One module per transport and
//! framing: window messages (`window.rs`), `MessagePort`s and the private channel (`port.rs`), WebSockets
//! (`socket.rs`), the MCP-B envelope (`mcpb.rs`); the transports as a page hands them over are in
//! `target.rs` and `webmcp.rs`.

mod mcpb;
mod port;
mod sink;
mod socket;
mod target;
#[cfg(feature = "agent")]
mod webmcp;
mod window;

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{EventTarget, MessageEvent, MessagePort};

use self::mcpb::Envelope;
use self::port::port_post;
pub(crate) use self::sink::{Received, Sink};
pub use self::socket::WebSocketTransport;
pub use self::target::PostMessageTransport;
pub(crate) use self::target::{take_target, Target};
#[cfg(feature = "agent")]
pub use self::webmcp::WebMCPTransport;
use crate::web::dom::{global, window as page, Interval, Listener};
use crate::web::value::type_error;

/// An open transport: sends, and owns every listener it installed.
///
/// Frames and windows start on window messages, whose source and origin are checked. With each `initialize`
/// the agent offers a fresh `MessageChannel` port; an app of this SDK answers on it and both sides then talk
/// over the private channel (nobody else can write to it; in Chromium it is also cheaper than window messages).
/// An app that ignores the port (a hand-written one), or a client that offers none (`messages: 'window'`), keeps
/// everything on the window.
pub(crate) struct Link {
    target: Target,
    sink: Weak<dyn Sink>,
    /// App side: the origin replies go to (the one that initialized the session).
    reply_origin: RefCell<Option<String>>,
    /// The private channel, once both sides moved to it.
    port: RefCell<Option<(MessagePort, Listener)>>,
    /// Agent side: ports offered with `initialize`, until the app answers on one of them.
    offered: RefCell<Vec<(MessagePort, Listener)>>,
    /// The MCP-B envelope, when the transport was given a `channel`.
    envelope: Option<Envelope>,
    _listeners: Vec<Listener>,
    _watchdog: Option<Interval>,
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Target::Socket(socket) = &self.target {
            socket.close();
        }
        if let (Some(env), Target::Parent { .. }) = (&self.envelope, &self.target) {
            // Tell an MCP-B client the server is gone (its pending calls then fail at once).
            if self.reply_origin.borrow().is_some() {
                let _ = self.send_window(&env.wrap(&JsValue::from_str("mcp-server-stopped")), None);
            }
        }
        if let Some((port, _)) = self.port.borrow_mut().take() {
            port.close();
        }
        for (port, _) in self.offered.borrow_mut().drain(..) {
            port.close();
        }
    }
}

fn global_target() -> Option<EventTarget> {
    global().dyn_into::<EventTarget>().ok()
}

impl Link {
    /// Opens `target` for `sink`. `client`: this side is the agent (for the direction of an MCP-B envelope).
    /// `abp`: the connection speaks ABP envelopes (a port then reads calls and results in one pass).
    pub(crate) fn open<S: Sink>(
        target: Target,
        sink: Weak<S>,
        client: bool,
        abp: bool,
    ) -> Result<Link, JsValue> {
        match &target {
            Target::Iframe {
                iframe,
                origin,
                channel,
            } => {
                let (accept, dog) = window::iframe(iframe, origin, sink.clone());
                let envelope = channel.clone().and_then(|c| Envelope::new(c, client));
                Self::on_window(target, sink, accept, envelope, Some(dog))
            }
            Target::Window {
                win,
                origin,
                channel,
            } => {
                let (accept, dog) = window::other_window(win, origin, sink.clone());
                let envelope = channel.clone().and_then(|c| Envelope::new(c, client));
                Self::on_window(target, sink, accept, envelope, Some(dog))
            }
            Target::Parent { allowed, channel } => {
                let accept = window::parent(allowed);
                let envelope = channel.clone().and_then(|c| Envelope::new(c, client));
                let link = Self::on_window(target, sink, accept, envelope, None)?;
                if !client {
                    link.announce(abp);
                }
                Ok(link)
            }
            Target::Port(port) => {
                let listeners = port::listen(port, abp, sink.clone());
                Ok(Self::with(target, sink, listeners, None, None))
            }
            Target::Socket(socket) => {
                socket.attach(sink.clone());
                Ok(Self::with(target, sink, Vec::new(), None, None))
            }
        }
    }

    /// A link on window messages: the listener of what `accept` lets through, and an MCP-B server's first
    /// word (an MCP-B client waits for the server to say it is ready before it sends anything).
    fn on_window<S: Sink>(
        target: Target,
        sink: Weak<S>,
        accept: window::Accept,
        envelope: Option<Envelope>,
        watchdog: Option<Interval>,
    ) -> Result<Link, JsValue> {
        let events =
            global_target().ok_or_else(|| type_error("postMessage transports need a window"))?;
        let listener = window::listen(&events, accept, envelope.clone(), sink.clone());
        Ok(Self::with(target, sink, vec![listener], envelope, watchdog))
    }

    /// App side, in a frame: tells the parent page that this page now listens, so that an agent whose
    /// `initialize` went out before (and was lost: nothing listened yet) sends it again at once rather than at
    /// its next re-send. An MCP-B server says `'mcp-server-ready'` to each allowed origin, as
    /// `@mcp-b/transports` does; ABP (`abp`) posts `app/ready`, which carries nothing but its type and time, to
    /// the one allowed origin, or to `'*'` when several (or any) are allowed: posting to an origin the parent
    /// is not on would log an error in this page's console. Other dialects say nothing. A top-level page (its
    /// own parent) has nobody to tell.
    fn announce(&self, abp: bool) {
        let Target::Parent { allowed, .. } = &self.target else {
            return;
        };
        let Some(win) = page() else { return };
        let Some(parent) = win.parent().ok().flatten() else {
            return;
        };
        if js_sys::Object::is(&parent, &win) {
            return;
        }
        if let Some(env) = &self.envelope {
            let ready = env.wrap(&JsValue::from_str("mcp-server-ready"));
            for origin in allowed {
                let to = if origin == "null" {
                    "*"
                } else {
                    origin.as_str()
                };
                let _ = window::post_to(&parent, &ready, to, None);
            }
        } else if abp {
            let to = match allowed.as_slice() {
                [one] if one != "null" => one.as_str(),
                _ => "*",
            };
            let ready: JsValue = crate::core::dialect::abp::app_ready(crate::web::dom::timestamp());
            let _ = window::post_to(&parent, &ready, to, None);
        }
    }

    fn with<S: Sink>(
        target: Target,
        sink: Weak<S>,
        mut listeners: Vec<Listener>,
        envelope: Option<Envelope>,
        watchdog: Option<Interval>,
    ) -> Link {
        listeners.extend(Self::page_hide(sink.clone()));
        Link {
            target,
            sink: sink as Weak<dyn Sink>,
            reply_origin: RefCell::new(None),
            port: RefCell::new(None),
            offered: RefCell::new(Vec::new()),
            envelope,
            _listeners: listeners,
            _watchdog: watchdog,
        }
    }

    fn page_hide<S: Sink>(sink: Weak<S>) -> Option<Listener> {
        let win = global_target()?;
        Some(Listener::new(&win, "pagehide", move |_| {
            if let Some(s) = sink.upgrade() {
                s.on_page_hide();
            }
        }))
    }

    /// Why the app may not have answered the handshake (a frame or window), for the connect timeout's message.
    pub(crate) fn why_unanswered(&self) -> Option<String> {
        self.target.why_unanswered()
    }

    /// A WebSocket link that opens a new socket when one is lost.
    pub(crate) fn reconnects(&self) -> bool {
        self.target.comes_back()
    }

    /// Drops the current socket of a reconnecting WebSocket link, so that a new one is opened.
    pub(crate) fn bounce(&self) {
        if let Target::Socket(s) = &self.target {
            s.bounce();
        }
    }

    /// Agent side: sends `initialize`, offering a new private channel with it (frames and windows only).
    /// Until the app's page is there (an iframe still on its first `about:blank`), nothing is sent: the connect
    /// loop sends again shortly.
    /// `offer`: offer the private channel (ABP); other dialects just send.
    pub(crate) fn send_initialize(&self, msg: &JsValue, offer: bool) -> Result<(), JsValue> {
        if self.port.borrow().is_some()
            || !matches!(self.target, Target::Iframe { .. } | Target::Window { .. })
        {
            return self.send(msg, None);
        }
        if !self.recipient_ready() {
            return Ok(());
        }
        if !offer || self.envelope.is_some() {
            return self.send(msg, None);
        }
        let channel = web_sys::MessageChannel::new()?;
        let (mine, theirs) = (channel.port1(), channel.port2());
        let w = self.sink.clone();
        let port = mine.clone();
        let listener = port::channel_listener(
            &mine,
            Rc::new(move |data, _: Option<&MessageEvent>| {
                if let Some(s) = w.upgrade() {
                    // Lent, not cloned: a clone per reply took and gave back a slot in the externref table.
                    s.on_offered_reply(&port, data);
                }
            }),
        );
        mine.start();
        self.offered.borrow_mut().push((mine, listener));
        let transfer: JsValue = Array::of1(&theirs).into();
        self.send_window(msg, Some(&transfer))
    }

    /// Whether a window message to the target could arrive (see [`window::frame_ready`]).
    fn recipient_ready(&self) -> bool {
        match &self.target {
            Target::Iframe { iframe, origin, .. } => window::frame_ready(iframe, origin),
            _ => true,
        }
    }

    /// Agent side: the app answered on `port`; talk over it from now on and drop the other offers.
    pub(crate) fn accept_offered(&self, port: &MessagePort) {
        if self.port.borrow().is_some() {
            return;
        }
        let mut offered = self.offered.borrow_mut();
        if let Some(i) = offered
            .iter()
            .position(|(p, _)| js_sys::Object::is(p, port))
        {
            let chosen = offered.swap_remove(i);
            *self.port.borrow_mut() = Some(chosen);
        }
        offered.clear();
    }

    /// Whether this side talks over the private channel (as opposed to window messages).
    pub(crate) fn on_port(&self) -> bool {
        self.port.borrow().is_some()
    }

    /// App side: answer this session over the port its `initialize` carried.
    pub(crate) fn adopt_port(&self, port: MessagePort, origin: String) {
        if self.port.borrow().is_some() {
            return;
        }
        let w = self.sink.clone();
        let listener = port::channel_listener(
            &port,
            Rc::new(move |data, _: Option<&MessageEvent>| {
                if let Some(s) = w.upgrade() {
                    s.on_message(data, &origin, None);
                }
            }),
        );
        port.start();
        *self.port.borrow_mut() = Some((port, listener));
    }

    /// App side: the session ended; back to window messages until the next `initialize`.
    pub(crate) fn drop_port(&self) {
        if let Some((port, listener)) = self.port.borrow_mut().take() {
            drop(listener);
            port.close();
        }
    }

    pub(crate) fn set_reply_origin(&self, origin: Option<String>) {
        *self.reply_origin.borrow_mut() = origin;
    }

    /// Whether replies go to `origin`; `None` while no origin has been chosen.
    pub(crate) fn replies_to(&self, origin: &str) -> Option<bool> {
        self.reply_origin.borrow().as_deref().map(|o| o == origin)
    }

    pub(crate) fn is_port(&self) -> bool {
        matches!(self.target, Target::Port(_))
    }

    pub(crate) fn is_socket(&self) -> bool {
        matches!(self.target, Target::Socket(_))
    }

    pub(crate) fn is_parent(&self) -> bool {
        matches!(self.target, Target::Parent { .. })
    }

    /// Posts one message: over the private channel once there is one, else as a window message.
    /// Fails when the other side is gone or the message cannot be cloned.
    pub(crate) fn send(&self, msg: &JsValue, transfer: Option<&JsValue>) -> Result<(), JsValue> {
        // The two-argument postMessage when there is nothing to transfer: an empty transfer list still costs.
        let transfer = transfer.filter(|t| Array::is_array(t) && Array::from(t).length() > 0);
        if let Some((port, _)) = self.port.borrow().as_ref() {
            return port_post(port, msg, transfer);
        }
        self.send_window(msg, transfer)
    }

    /// Posts on the window (or the transport's own port), never on the private channel: for messages sent
    /// while a page unloads, which a channel may not deliver.
    pub(crate) fn send_window(
        &self,
        msg: &JsValue,
        transfer: Option<&JsValue>,
    ) -> Result<(), JsValue> {
        let wrapped;
        let msg = match &self.envelope {
            Some(env) => {
                wrapped = env.wrap(msg);
                &wrapped
            }
            None => msg,
        };
        match &self.target {
            Target::Iframe { iframe, origin, .. } => {
                let win = iframe
                    .content_window()
                    .ok_or_else(|| type_error("the iframe is gone"))?;
                window::post_to(&win, msg, origin, transfer)
            }
            Target::Window { win, origin, .. } => window::post_to(win, msg, origin, transfer),
            Target::Parent { allowed, .. } => {
                let parent = page()
                    .and_then(|w| w.parent().ok().flatten())
                    .ok_or_else(|| type_error("no parent window"))?;
                let reply = self.reply_origin.borrow().clone();
                match reply.as_deref() {
                    // An opaque parent, which `allowedOrigins` named itself: it cannot be named in postMessage.
                    Some("null") => window::post_to(&parent, msg, "*", transfer),
                    Some(origin) => window::post_to(&parent, msg, origin, transfer),
                    // Before the parent has said anything (an app that speaks first): to each allowed origin,
                    // which the browser delivers only if it is the parent's.
                    // (What carries a transfer list goes once: its objects move with the first message.)
                    None => {
                        let count = if transfer.is_some() { 1 } else { allowed.len() };
                        for origin in allowed.iter().take(count) {
                            let to = if origin == "null" {
                                "*"
                            } else {
                                origin.as_str()
                            };
                            window::post_to(&parent, msg, to, transfer)?;
                        }
                        Ok(())
                    }
                }
            }
            Target::Port(port) => port_post(port, msg, transfer),
            Target::Socket(socket) => socket.send(msg),
        }
    }
}
