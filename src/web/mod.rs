//! Browser glue: drives the plain-Rust core from `postMessage`, timers and `AbortSignal`s.
//!
//! Every `#[wasm_bindgen]` export lives in `client.rs` (agent side), `app.rs` (app side), `link/`,
//! `discover.rs` (`discover()`, with its own typings, behind `discovery` or `discovery-lazy`) and `types.rs` (the
//! TypeScript surface). Payloads stay `JsValue`s end to end.

// A role build (only `agent` or only `app`) leaves parts of the shared transports unused.
#![cfg_attr(not(all(feature = "agent", feature = "app")), allow(dead_code))]

#[cfg(feature = "app")]
mod app;
#[cfg(feature = "agent")]
mod client;
#[cfg(any(feature = "discovery", feature = "discovery-lazy"))]
mod discover;
mod dom;
#[cfg(feature = "app")]
mod global;
// The discovery build (`discovery` alone, which the full build loads for `discover()`) has no transports.
#[cfg(any(feature = "agent", feature = "app"))]
mod link;
mod options;
mod types;
mod value;

#[cfg(feature = "app")]
pub use app::AbpApp;
#[cfg(feature = "agent")]
pub use client::AbpClient;
#[cfg(any(feature = "discovery", feature = "discovery-lazy"))]
pub use discover::discover;
#[cfg(feature = "agent")]
pub use link::WebMCPTransport;
#[cfg(any(feature = "agent", feature = "app"))]
pub use link::{PostMessageTransport, WebSocketTransport};
