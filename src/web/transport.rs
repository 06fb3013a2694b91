//! `PostMessageTransport`: where messages go and which incoming ones count.
//!
//! A transport is a description until a client or app opens it; [`Link::open`] then installs the message
//! listener (checking `event.source` and `event.origin`), the page-hide hook and, for frames and windows, a
//! watchdog that notices when the other side is gone.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::Array;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{EventTarget, HtmlIFrameElement, MessageEvent, MessagePort, Window};

use super::dom::{global, window, Interval, Listener};
use super::socket::{Socket, WebSocketTransport};
use super::types::{IframeOptions, ParentOptions, WindowOptions};
use super::value::{abp_port_listener, console_warn, keep_id, opt_string, port_post, type_error};
#[cfg(feature = "mcp")]
use super::value::{mcpb_payload, mcpb_wrap};
use crate::core::dialect::Carrier;
use crate::core::message::{Incoming, ToAgent, ToApp};
use crate::core::payload::Payload;

#[derive(Clone)]
pub(crate) enum Target {
    Iframe {
        iframe: HtmlIFrameElement,
        origin: String,
        channel: Option<String>,
    },
    Window {
        win: Window,
        origin: String,
        channel: Option<String>,
    },
    Parent {
        allowed: Vec<String>,
        channel: Option<String>,
    },
    Port(MessagePort),
    Socket(Rc<Socket>),
}

impl Target {
    /// What the connection's policy needs to know of it: a frame or window may not be listening yet; a port
    /// queues what is sent before the other end listens, and a socket is open.
    pub(crate) fn carrier(&self) -> Carrier {
        match self {
            Target::Iframe { .. } | Target::Window { .. } | Target::Parent { .. } => {
                Carrier::Window
            }
            Target::Port(_) | Target::Socket(_) => Carrier::Stream,
        }
    }
}

/// The MCP-B envelope `{ channel, type: 'mcp', direction, payload }` that `@mcp-b/transports`'
/// `IframeParentTransport`/`IframeChildTransport` speak, with its ready handshake (`'mcp-check-ready'`,
/// `'mcp-server-ready'`, `'mcp-server-stopped'` as payloads).
#[cfg(feature = "mcp")]
#[derive(Clone)]
struct Envelope {
    channel: String,
    /// This side is the MCP client (the agent).
    client: bool,
}

#[cfg(feature = "mcp")]
impl Envelope {
    fn new(channel: String, client: bool) -> Option<Envelope> {
        Some(Envelope { channel, client })
    }

    fn outgoing(&self) -> &'static str {
        if self.client {
            "client-to-server"
        } else {
            "server-to-client"
        }
    }

    fn incoming(&self) -> &'static str {
        if self.client {
            "server-to-client"
        } else {
            "client-to-server"
        }
    }

    fn wrap(&self, payload: &JsValue) -> JsValue {
        mcpb_wrap(&self.channel, self.outgoing(), payload)
    }

    /// The payload of `data` if it is our channel's envelope in the direction that comes to this side, else
    /// undefined.
    fn open(&self, data: &JsValue) -> JsValue {
        mcpb_payload(data, &self.channel, self.incoming())
    }

    /// The ready handshake: a server answers `'mcp-check-ready'` (to the origin that asked, which has passed
    /// the origin check); a client takes `'mcp-server-stopped'` as the server being gone.
    fn handshake<S: Sink>(&self, signal: &str, e: &MessageEvent, sink: &Rc<S>) {
        match (self.client, signal) {
            (false, "mcp-check-ready") => {
                let ready = self.wrap(&JsValue::from_str("mcp-server-ready"));
                if let Some(parent) = window().and_then(|w| w.parent().ok().flatten()) {
                    let _ = post_to(&parent, &ready, &e.origin(), None);
                }
            }
            (true, "mcp-server-stopped") => sink.clone().on_lost(),
            _ => {}
        }
    }
}

/// Without the MCP dialect there is no MCP-B envelope (a `channel` option is refused): this type has no
/// values, so the compiler drops every path that handles one (gzipped wasm: see BENCHMARKS.md).
#[cfg(not(feature = "mcp"))]
#[derive(Clone)]
enum Envelope {}

#[cfg(not(feature = "mcp"))]
impl Envelope {
    fn new(_channel: String, _client: bool) -> Option<Envelope> {
        None
    }

    fn wrap(&self, _payload: &JsValue) -> JsValue {
        match *self {}
    }

    fn open(&self, _data: &JsValue) -> JsValue {
        match *self {}
    }

    fn handshake<S: Sink>(&self, _signal: &str, _e: &MessageEvent, _sink: &Rc<S>) {
        match *self {}
    }
}

/// The `channel` option (the MCP-B envelope's channel, e.g. `'mcp-iframe'`).
fn channel_option(options: &JsValue, what: &str) -> Result<Option<String>, JsValue> {
    match options.get("channel") {
        None => Ok(None),
        Some(_) if !cfg!(feature = "mcp") => Err(type_error(&crate::core::text::text(&[
            "PostMessageTransport.",
            what,
            ": options.channel is the MCP-B envelope of the MCP dialect, and this build of abp-wasm speaks ABP only; import 'abp-wasm' (the full package) for it",
        ]))),
        Some(c) => match c.as_string().filter(|c| !c.is_empty()) {
            Some(c) => Ok(Some(c)),
            None => Err(type_error(&crate::core::text::text(&[
                "PostMessageTransport.",
                what,
                ": options.channel must be a non-empty string (the MCP-B channel, e.g. 'mcp-iframe')",
            ]))),
        },
    }
}

/// Where ABP messages travel over `postMessage`: an iframe or window (agent side), the parent page (app side
/// inside an iframe), or a `MessagePort` (either side).
#[wasm_bindgen]
pub struct PostMessageTransport {
    target: RefCell<Option<Target>>,
}

fn target_origin(options: &JsValue, what: &str) -> Result<String, JsValue> {
    let origin = opt_string(options, "targetOrigin").ok_or_else(|| {
        type_error(&crate::core::text::text(&[
            "PostMessageTransport.",
            what,
            ": options.targetOrigin is required (the app's origin, e.g. 'https://app.example'; '*' only if you mean it)",
        ]))
    })?;
    if origin == "*" {
        console_warn("abp-wasm: targetOrigin '*' sends every message to whatever page the frame holds; name the app's origin instead");
    }
    Ok(origin)
}

#[wasm_bindgen]
impl PostMessageTransport {
    /// Agent side: talk to the app inside `iframe`. Messages are sent to `targetOrigin` and only messages
    /// whose `event.source` is this iframe's window and whose origin matches are accepted.
    #[wasm_bindgen(js_name = toIframe)]
    pub fn to_iframe(
        iframe: &HtmlIFrameElement,
        options: IframeOptions,
    ) -> Result<PostMessageTransport, JsValue> {
        let origin = target_origin(&options, "toIframe")?;
        let channel = channel_option(&options, "toIframe")?;
        if !iframe.is_instance_of::<HtmlIFrameElement>() {
            return Err(type_error(
                "PostMessageTransport.toIframe: expected an <iframe> element",
            ));
        }
        Ok(Self::with(Target::Iframe {
            iframe: iframe.clone(),
            origin,
            channel,
        }))
    }

    /// Talk to another window: the agent to an app it opened (`window.open`), or an app in a popup to its
    /// `window.opener`. Only messages from that window and `targetOrigin` count; replies go to `targetOrigin`.
    #[wasm_bindgen(js_name = toWindow)]
    pub fn to_window(
        win: &Window,
        options: WindowOptions,
    ) -> Result<PostMessageTransport, JsValue> {
        let origin = target_origin(&options, "toWindow")?;
        let channel = channel_option(&options, "toWindow")?;
        Ok(Self::with(Target::Window {
            win: win.clone(),
            origin,
            channel,
        }))
    }

    /// App side, inside an iframe: serve the parent page. Only messages from `window.parent` whose origin is
    /// in `allowedOrigins` count (default: this page's own origin). Replies go only to the origin that
    /// initialized the session.
    #[wasm_bindgen(js_name = toParent)]
    pub fn to_parent(options: Option<ParentOptions>) -> Result<PostMessageTransport, JsValue> {
        let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let mut allowed: Vec<String> = match options.get("allowedOrigins") {
            Some(list) if Array::is_array(&list) => Array::from(&list)
                .iter()
                .filter_map(|o| o.as_string())
                .collect(),
            Some(_) => {
                return Err(type_error(
                    "PostMessageTransport.toParent: allowedOrigins must be an array of origins",
                ))
            }
            None => Vec::new(),
        };
        if allowed.is_empty() {
            let own = window().and_then(|w| w.location().origin().ok());
            allowed.extend(own);
        }
        if allowed.iter().any(|o| o == "*") {
            console_warn(
                "abp-wasm: allowedOrigins ['*'] lets any page that frames this app call it",
            );
        }
        let channel = channel_option(&options, "toParent")?;
        Ok(Self::with(Target::Parent { allowed, channel }))
    }

    /// Either side: talk over a `MessagePort` (a `MessageChannel` end, or a worker's port).
    #[wasm_bindgen(js_name = fromPort)]
    pub fn from_port(port: &MessagePort) -> PostMessageTransport {
        Self::with(Target::Port(port.clone()))
    }
}

/// The page's own WebMCP tools (`document.modelContext`, native or the `@mcp-b/webmcp-polyfill`) as an app
/// for `AbpClient`: `AbpClient.connect(WebMCPTransport.document())`.
#[cfg(feature = "agent")]
#[wasm_bindgen]
pub struct WebMCPTransport;

#[cfg(feature = "agent")]
#[wasm_bindgen]
impl WebMCPTransport {
    /// A transport to the tools of this page's `document.modelContext` (those it registered and those exposed
    /// to it): `listCapabilities()` is `getTools()`, a call is `executeTool` with a signal that the caller's
    /// signal and timeout abort (CANCELLED and TIMEOUT as everywhere), an `isError` result is `{ success:
    /// false, error }`, and `toolchange` is `onCapabilitiesChanged`. Throws a TypeError on a page without
    /// `document.modelContext` and its `executeTool`.
    pub fn document() -> Result<PostMessageTransport, JsValue> {
        let port = super::value::webmcp_port()?;
        Ok(PostMessageTransport::from_port(&port))
    }
}

impl PostMessageTransport {
    fn with(target: Target) -> Self {
        PostMessageTransport {
            target: RefCell::new(Some(target)),
        }
    }

    /// Takes the description out; a transport serves one connection.
    pub(crate) fn take(&self) -> Result<Target, JsValue> {
        self.target.borrow_mut().take().ok_or_else(|| {
            type_error("This PostMessageTransport is already in use; make a new one per connection")
        })
    }
}

/// The transport a client or app was handed: a `PostMessageTransport` or a `WebSocketTransport`. JavaScript
/// gives the object up (a transport serves one connection).
pub(crate) fn take_target(transport: JsValue, who: &str) -> Result<Target, JsValue> {
    let transport = match PostMessageTransport::try_from_js_value(transport) {
        Ok(t) => return t.take(),
        Err(v) => v,
    };
    match WebSocketTransport::try_from_js_value(transport) {
        Ok(t) => t.take().map(Target::Socket),
        Err(_) => Err(type_error(&crate::core::text::text(&[
            who,
            ": expected a PostMessageTransport or a WebSocketTransport (one per connection; this one may be in use already)",
        ]))),
    }
}

/// A message as a link hands it on: a value for the sink's codec to read, or a call or result that the
/// private channel's listener already read (`abpPortListener` in glue.js: one crossing per message).
pub(crate) enum Received {
    Raw(JsValue),
    Read(Incoming<JsValue>),
}

/// What a link reports to its owner. Implemented by the client and app connections.
pub(crate) trait Sink: 'static {
    /// An accepted message (source and origin already checked). `port`: a `MessagePort` the message carried
    /// (an agent offers one with `initialize`).
    fn on_message(self: Rc<Self>, data: Received, origin: &str, port: Option<MessagePort>);
    /// Agent side: the app answered on one of the ports offered with `initialize`.
    fn on_offered_reply(self: Rc<Self>, _port: &MessagePort, _data: Received) {}
    /// The other side is gone.
    fn on_lost(self: Rc<Self>);
    /// This page is going away.
    fn on_page_hide(self: Rc<Self>);
    /// A message from the wrong window or origin was dropped (a debug counter).
    fn on_rejected(self: Rc<Self>) {}
    /// A message from the right origin whose window is already gone (`event.source` is null): what a frame
    /// posts while it unloads. Only a `shutdown` may be taken from it.
    fn on_orphan(self: Rc<Self>, _data: JsValue) {}
    /// A reconnecting WebSocket is open again (after an `on_lost`).
    fn on_reconnected(self: Rc<Self>) {}
}

/// How a received message relates to the expected sender.
enum Verdict {
    Accept,
    /// Right origin, but the sending window is gone.
    Orphan,
    Reject,
}

/// An open transport: sends, and owns every listener it installed.
///
/// Frames and windows start on window messages, whose source and origin are checked. With each `initialize`
/// the agent offers a fresh `MessageChannel` port; an app of this SDK answers on it and both sides then talk
/// over the private channel (cheaper than window messages, and nobody else can write to it). An app that
/// ignores the port (a hand-written one) keeps answering on the window and everything stays there.
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

/// What a port listener hands on: a message, and its event unless it was read in one pass.
type Deliver = dyn Fn(Received, Option<&MessageEvent>);

/// The listener of a port that speaks ABP (the private channel offered with `initialize`, or a `fromPort`
/// transport): calls and results are read in JS in one pass (`abpPortListener`) and arrive as
/// [`Received::Read`], anything else as [`Received::Raw`] with its event.
/// One instance for its three uses (`deliver` as a trait object): each copy of the three closures costs gzipped
/// wasm (BENCHMARKS.md, the `fromPort` step in the entry of `56f4aab`).
fn channel_listener(port: &MessagePort, deliver: Rc<Deliver>) -> Listener {
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

fn first_port(e: &MessageEvent) -> Option<MessagePort> {
    let ports = e.ports();
    (ports.length() > 0).then(|| ports.get(0).unchecked_into::<MessagePort>())
}

fn global_target() -> Option<EventTarget> {
    global().dyn_into::<EventTarget>().ok()
}

fn same(a: &JsValue, b: &JsValue) -> bool {
    js_sys::Object::is(a, b)
}

impl Link {
    /// `client`: this side is the agent (for the direction of an MCP-B envelope). `abp`: the connection speaks
    /// ABP (a port then reads calls and results in one pass).
    pub(crate) fn open<S: Sink>(
        target: Target,
        sink: Weak<S>,
        client: bool,
        abp: bool,
    ) -> Result<Link, JsValue> {
        let dyn_sink: Weak<dyn Sink> = sink.clone();
        let envelope = match &target {
            Target::Iframe { channel, .. }
            | Target::Window { channel, .. }
            | Target::Parent { channel, .. } => channel
                .clone()
                .and_then(|channel| Envelope::new(channel, client)),
            _ => None,
        };
        let mut listeners = Vec::new();
        let mut watchdog = None;
        let accept: Box<dyn Fn(&MessageEvent) -> Verdict> = match &target {
            Target::Iframe { iframe, origin, .. } => {
                let (iframe, origin) = (iframe.clone(), origin.clone());
                let w = sink.clone();
                let frame = iframe.clone();
                watchdog = Some(Interval::new(200, move || {
                    if !frame.is_connected() || frame.content_window().is_none() {
                        if let Some(s) = w.upgrade() {
                            s.on_lost();
                        }
                    }
                }));
                Box::new(move |e| {
                    let origin_ok = origin == "*" || e.origin() == origin;
                    match (e.source(), iframe.content_window()) {
                        (Some(src), Some(win)) if origin_ok && same(&src, &win) => Verdict::Accept,
                        (None, _) if origin_ok => Verdict::Orphan,
                        _ => Verdict::Reject,
                    }
                })
            }
            Target::Window { win, origin, .. } => {
                let (win, origin) = (win.clone(), origin.clone());
                let w = sink.clone();
                let watched = win.clone();
                watchdog = Some(Interval::new(200, move || {
                    if watched.closed().unwrap_or(true) {
                        if let Some(s) = w.upgrade() {
                            s.on_lost();
                        }
                    }
                }));
                Box::new(move |e| {
                    let origin_ok = origin == "*" || e.origin() == origin;
                    match e.source() {
                        Some(src) if origin_ok && same(&src, &win) => Verdict::Accept,
                        None if origin_ok => Verdict::Orphan,
                        _ => Verdict::Reject,
                    }
                })
            }
            Target::Parent { allowed, .. } => {
                let allowed = allowed.clone();
                let parent = window().and_then(|w| w.parent().ok().flatten());
                Box::new(move |e| {
                    let from_parent = match (e.source(), &parent) {
                        (Some(src), Some(p)) => same(&src, p),
                        _ => false,
                    };
                    if from_parent && allowed.iter().any(|o| o == "*" || *o == e.origin()) {
                        Verdict::Accept
                    } else {
                        Verdict::Reject
                    }
                })
            }
            Target::Port(_) => Box::new(|_| Verdict::Accept),
            Target::Socket(socket) => {
                socket.attach(dyn_sink.clone());
                return Ok(Link {
                    target,
                    sink: dyn_sink,
                    reply_origin: RefCell::new(None),
                    port: RefCell::new(None),
                    offered: RefCell::new(Vec::new()),
                    envelope: None,
                    _listeners: Self::page_hide(sink).into_iter().collect(),
                    _watchdog: None,
                });
            }
        };
        let events: EventTarget = match &target {
            Target::Port(port) => port.clone().into(),
            _ => {
                global_target().ok_or_else(|| type_error("postMessage transports need a window"))?
            }
        };
        let w = sink.clone();
        let env = envelope.clone();
        if let (Target::Port(port), true) = (&target, abp) {
            // ABP over a port: calls and results are read in one pass, as on the private channel (the generic
            // read below made a round trip over a MessageChannel slower: `bench/ab.mjs --port`; BENCHMARKS.md).
            listeners.push(channel_listener(
                port,
                Rc::new(move |data, e: Option<&MessageEvent>| {
                    if let Some(s) = w.upgrade() {
                        let origin = e.map(MessageEvent::origin).unwrap_or_default();
                        s.on_message(data, &origin, e.and_then(first_port));
                    }
                }),
            ));
        } else {
            listeners.push(Listener::new(&events, "message", move |event| {
                let Some(e) = event.dyn_ref::<MessageEvent>() else {
                    return;
                };
                let Some(s) = w.upgrade() else { return };
                let verdict = accept(e);
                let data = match (&env, &verdict) {
                    (Some(env), Verdict::Accept | Verdict::Orphan) => {
                        // Only our channel's envelopes, in the direction that comes to this side.
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
                match verdict {
                    Verdict::Accept => {
                        s.on_message(Received::Raw(data), &e.origin(), first_port(e))
                    }
                    Verdict::Orphan => s.on_orphan(data),
                    Verdict::Reject => s.on_rejected(),
                }
            }));
        }
        if let Target::Port(port) = &target {
            port.start();
            // Newer browsers fire `close` on a port whose other end went away.
            let w = sink.clone();
            listeners.push(Listener::new(port, "close", move |_| {
                if let Some(s) = w.upgrade() {
                    s.on_lost();
                }
            }));
        }
        listeners.extend(Self::page_hide(sink));
        if let (Some(env), Target::Parent { allowed, .. }) = (&envelope, &target) {
            // An MCP-B client waits for the server to say it is ready before it sends anything.
            let ready = env.wrap(&JsValue::from_str("mcp-server-ready"));
            if let Some(parent) = window().and_then(|w| w.parent().ok().flatten()) {
                for origin in allowed {
                    let _ = post_to(&parent, &ready, origin, None);
                }
            }
        }
        Ok(Link {
            target,
            sink: dyn_sink,
            reply_origin: RefCell::new(None),
            port: RefCell::new(None),
            offered: RefCell::new(Vec::new()),
            envelope,
            _listeners: listeners,
            _watchdog: watchdog,
        })
    }

    fn page_hide<S: Sink>(sink: Weak<S>) -> Option<Listener> {
        let win = global_target()?;
        Some(Listener::new(&win, "pagehide", move |_| {
            if let Some(s) = sink.upgrade() {
                s.on_page_hide();
            }
        }))
    }

    /// A WebSocket link that opens a new socket when one is lost.
    pub(crate) fn reconnects(&self) -> bool {
        matches!(&self.target, Target::Socket(s) if s.reconnects())
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
        let listener = channel_listener(
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

    /// Whether a window message to the target could arrive. A frame starts on an `about:blank` document of
    /// this page's origin (until the app's page commits); posting to it with another `targetOrigin` is dropped
    /// and the browser logs "Failed to execute 'postMessage' … does not match the recipient window's origin"
    /// for every attempt. A frame's document is readable only while it is same-origin with this page
    /// (`contentDocument` is null otherwise, without throwing), so only then is its origin compared.
    fn recipient_ready(&self) -> bool {
        let Target::Iframe { iframe, origin, .. } = &self.target else {
            return true;
        };
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

    /// Agent side: the app answered on `port`; talk over it from now on and drop the other offers.
    pub(crate) fn accept_offered(&self, port: &MessagePort) {
        if self.port.borrow().is_some() {
            return;
        }
        let mut offered = self.offered.borrow_mut();
        if let Some(i) = offered.iter().position(|(p, _)| same(p, port)) {
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
        let listener = channel_listener(
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
                post_to(&win, msg, origin, transfer)
            }
            Target::Window { win, origin, .. } => post_to(win, msg, origin, transfer),
            Target::Parent { .. } => {
                let parent = window()
                    .and_then(|w| w.parent().ok().flatten())
                    .ok_or_else(|| type_error("no parent window"))?;
                let origin = self.reply_origin.borrow().clone().unwrap_or_default();
                // An opaque ("null") origin cannot be named; the message still goes only to window.parent.
                let origin = if origin.is_empty() || origin == "null" {
                    "*".to_owned()
                } else {
                    origin
                };
                post_to(&parent, msg, &origin, transfer)
            }
            Target::Port(port) => port_post(port, msg, transfer),
            Target::Socket(socket) => socket.send(msg),
        }
    }
}

fn post_to(
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
