//! The transports as a page hands them over: `PostMessageTransport` (one constructor per target: an iframe,
//! a window, the parent page, a port) and `WebMCPTransport`, until a client or app opens one (`Link::open`).
//! A `WebSocketTransport` (`socket.rs`) is handed over the same way.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Array;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{HtmlIFrameElement, MessagePort, Window};

use super::mcpb::channel_option;
use super::socket::{Socket, WebSocketTransport};
use crate::core::dialect::Carrier;
use crate::core::payload::Payload;
use crate::core::text::text;
use crate::web::dom::window;
use crate::web::types::{IframeOptions, ParentOptions, WindowOptions};
use crate::web::value::{console_warn, opt_string, type_error};

/// What a transport connects to, as it was described.
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
    /// Whether a lost connection comes back by itself: a WebSocket with `reconnect` opens a new socket; a frame
    /// removed, a window closed, a port closed or a socket without it stay gone.
    pub(crate) fn comes_back(&self) -> bool {
        matches!(self, Target::Socket(s) if s.reconnects())
    }

    /// An iframe whose `src` is at another origin than `targetOrigin`: (the `src`'s origin, `targetOrigin`). The
    /// browser delivers nothing sent to `targetOrigin` while the frame holds a page of another origin.
    fn src_elsewhere(&self) -> Option<(String, String)> {
        let Target::Iframe { iframe, origin, .. } = self else {
            return None;
        };
        let wanted = match origin.as_str() {
            "*" => return None,
            "/" => window()?.location().origin().ok()?,
            o => o.to_owned(),
        };
        let src = web_sys::Url::new(&iframe.src()).ok()?;
        if !matches!(src.protocol().as_str(), "http:" | "https:") {
            return None;
        }
        let at = src.origin();
        (at != wanted).then_some((at, wanted))
    }

    /// Says in the console, at connect, that the iframe's `src` is at another origin than `targetOrigin`. The
    /// client keeps trying (the frame may yet navigate there); this says it now rather than at the timeout.
    pub(crate) fn warn_if_src_elsewhere(&self) {
        if let Some((at, wanted)) = self.src_elsewhere() {
            console_warn(&text(&[
                "abp-wasm: AbpClient.connect: the iframe's src is at ",
                &at,
                " but targetOrigin is ",
                &wanted,
                ". The browser delivers no message to a page of another origin, so connect waits for the frame to \
                 reach ",
                &wanted,
                " until connectTimeout. Give targetOrigin '",
                &at,
                "' if that is the app.",
            ]));
        }
    }

    /// Why a frame or window may not have answered the handshake, as far as this side can see: the iframe's
    /// `src` at another origin, else a `targetOrigin` that may not be the app page's. None for a port or socket.
    pub(crate) fn why_unanswered(&self) -> Option<String> {
        if let Some((at, wanted)) = self.src_elsewhere() {
            return Some(text(&[
                "The iframe's src is at ",
                &at,
                " but targetOrigin is ",
                &wanted,
                ", and the browser delivers no message to a page of another origin: give targetOrigin '",
                &at,
                "' (or load the app from ",
                &wanted,
                ")",
            ]));
        }
        let origin = match self {
            Target::Iframe { origin, .. } | Target::Window { origin, .. } => origin,
            _ => return None,
        };
        Some(text(&[
            "The usual cause is a targetOrigin ('",
            origin,
            "') that is not the origin of the app's page, whose messages the browser then drops; else the app \
             never called listen(), or its allowedOrigins leave this page out (its console says so)",
        ]))
    }

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

/// Where ABP messages travel over `postMessage`: an iframe or window (agent side), the parent page (app side
/// inside an iframe), or a `MessagePort` (either side).
#[wasm_bindgen]
pub struct PostMessageTransport {
    target: RefCell<Option<Target>>,
}

fn target_origin(options: &JsValue, what: &str) -> Result<String, JsValue> {
    let origin = opt_string(options, "targetOrigin").ok_or_else(|| {
        type_error(&text(&[
            "PostMessageTransport.",
            what,
            ": options.targetOrigin is required (the app's origin, e.g. 'https://app.example'; '*' only if you mean it)",
        ]))
    })?;
    if origin == "*" {
        console_warn("abp-wasm: targetOrigin '*' sends every message to whatever page the frame holds; name the app's origin instead");
    }
    normal_origin(&origin, what, "targetOrigin")
}

/// An origin as the browser writes it (`new URL(o).origin`: `https://app.example/` and `HTTPS://App.Example`
/// are `https://app.example`), so that the comparison with `event.origin` holds; `*` and `/` as they are.
/// What is no origin (`file:`, not a URL) is a TypeError rather than a transport that drops every message.
fn normal_origin(origin: &str, what: &str, option: &str) -> Result<String, JsValue> {
    if matches!(origin, "*" | "/" | "null") {
        return Ok(origin.to_owned());
    }
    // A URL without a host (`file:`, `data:`) names no origin a message could come from or go to.
    let parsed = web_sys::Url::new(origin)
        .ok()
        .filter(|u| !u.host().is_empty())
        .map(|u| u.origin());
    match parsed {
        Some(o) if o != "null" => Ok(o),
        _ => Err(type_error(&text(&[
            "PostMessageTransport.",
            what,
            ": options.",
            option,
            " has '",
            origin,
            "', which is not an origin (scheme://host[:port])",
        ]))),
    }
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
                .map(|o| normal_origin(&o, "toParent", "allowedOrigins"))
                .collect::<Result<_, _>>()?,
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
        if allowed.iter().any(|o| o == "null") {
            console_warn(
                "abp-wasm: allowedOrigins ['null'] lets any page that frames this app in a sandboxed frame call it, \
                 and the app's replies then go to '*'",
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
        Err(_) => Err(type_error(&text(&[
            who,
            ": expected a PostMessageTransport or a WebSocketTransport (one per connection; this one may be in use already)",
        ]))),
    }
}
