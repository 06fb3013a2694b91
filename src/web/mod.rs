//! Browser glue: drives the plain-Rust core from `postMessage`, timers and `AbortSignal`s.
//!
//! Every `#[wasm_bindgen]` export lives in `client.rs` (agent side), `app.rs` (app side), `transport.rs`,
//! `discover.rs` (`discover()`, with its own typings, behind the `discovery` feature) and `types.rs` (the
//! TypeScript surface). Payloads stay `JsValue`s end to end.

mod app;
mod client;
#[cfg(feature = "discovery")]
mod discover;
mod dom;
mod global;
mod socket;
mod transport;
mod types;
mod value;

pub use app::AbpApp;
pub use client::AbpClient;
#[cfg(feature = "discovery")]
pub use discover::discover;
pub use socket::WebSocketTransport;
pub use transport::PostMessageTransport;
