//! The MCP-B envelope, a framing of the MCP dialect over window messages: `{ channel, type: 'mcp',
//! direction, payload }`, as `@mcp-b/transports`' `IframeParentTransport`/`IframeChildTransport` speak it,
//! with its ready handshake. Builds without the MCP dialect have no envelope (the `channel` option is refused).

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::MessageEvent;

#[cfg(feature = "mcp")]
use super::sink::Received;
use super::sink::Sink;
#[cfg(feature = "mcp")]
use crate::core::message::ToAgent;
use crate::core::payload::Payload;
use crate::web::value::type_error;

#[cfg(feature = "mcp")]
#[wasm_bindgen(module = "/src/web/link/mcpb.js")]
extern "C" {
    #[wasm_bindgen(js_name = mcpbWrap)]
    pub(crate) fn mcpb_wrap(channel: &JsValue, direction: &JsValue, payload: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = mcpbPayload)]
    pub(crate) fn mcpb_payload(data: &JsValue, channel: &JsValue, direction: &JsValue) -> JsValue;
}

/// The MCP-B envelope `{ channel, type: 'mcp', direction, payload }` that `@mcp-b/transports`'
/// `IframeParentTransport`/`IframeChildTransport` speak, with its ready handshake (`'mcp-check-ready'`,
/// `'mcp-server-ready'`, `'mcp-server-stopped'` as payloads).
#[cfg(feature = "mcp")]
#[derive(Clone)]
pub(crate) struct Envelope {
    /// The channel and both directions as JS strings, made once: passing a `&str` to JS decodes it from
    /// UTF-8 on every message.
    channel: JsValue,
    outgoing: JsValue,
    incoming: JsValue,
    /// This side is the MCP client (the agent).
    client: bool,
}

#[cfg(feature = "mcp")]
impl Envelope {
    pub(crate) fn new(channel: String, client: bool) -> Option<Envelope> {
        let (to_server, to_client) = (
            JsValue::from_str("client-to-server"),
            JsValue::from_str("server-to-client"),
        );
        let (outgoing, incoming) = if client {
            (to_server, to_client)
        } else {
            (to_client, to_server)
        };
        Some(Envelope {
            channel: JsValue::from_str(&channel),
            outgoing,
            incoming,
            client,
        })
    }

    pub(crate) fn wrap(&self, payload: &JsValue) -> JsValue {
        mcpb_wrap(&self.channel, &self.outgoing, payload)
    }

    /// The payload of `data` if it is our channel's envelope in the direction that comes to this side, else
    /// undefined.
    pub(crate) fn open(&self, data: &JsValue) -> JsValue {
        mcpb_payload(data, &self.channel, &self.incoming)
    }

    /// The ready handshake: a server answers `'mcp-check-ready'` (to the origin that asked, which has passed
    /// the origin check); a client takes `'mcp-server-ready'` as the server now listening (an `initialize` sent
    /// before it was lost) and `'mcp-server-stopped'` as the server being gone.
    pub(crate) fn handshake<S: Sink>(&self, signal: &str, e: &MessageEvent, sink: &Rc<S>) {
        match (self.client, signal) {
            (false, "mcp-check-ready") => {
                let ready = self.wrap(&JsValue::from_str("mcp-server-ready"));
                if let Some(parent) =
                    crate::web::dom::window().and_then(|w| w.parent().ok().flatten())
                {
                    let _ = parent.post_message(&ready, &e.origin());
                }
            }
            (true, "mcp-server-ready") => {
                let ready = Received::Read(ToAgent::AppReady.into());
                sink.clone().on_message(ready, &e.origin(), None)
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
pub(crate) enum Envelope {}

#[cfg(not(feature = "mcp"))]
impl Envelope {
    pub(crate) fn new(_channel: String, _client: bool) -> Option<Envelope> {
        None
    }

    pub(crate) fn wrap(&self, _payload: &JsValue) -> JsValue {
        match *self {}
    }

    pub(crate) fn open(&self, _data: &JsValue) -> JsValue {
        match *self {}
    }

    pub(crate) fn handshake<S: Sink>(&self, _signal: &str, _e: &MessageEvent, _sink: &Rc<S>) {
        match *self {}
    }
}

/// The `channel` option (the MCP-B envelope's channel, e.g. `'mcp-iframe'`).
pub(crate) fn channel_option(options: &JsValue, what: &str) -> Result<Option<String>, JsValue> {
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
