//! The link interface: what a link hands its owner (the client's or the app's connection) and what it
//! reports. Every transport below speaks to its owner through this and nothing else.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::MessagePort;

use crate::core::message::Incoming;

/// A message as a link hands it on: a value for the sink's codec to read, or a call or result that the
/// private channel's listener already read (`abpPortListener` in link/port.js: one crossing per message).
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
