//! Browser glue: drives the plain-Rust core from `postMessage`, timers and `AbortSignal`s.
//!
//! Every `#[wasm_bindgen]` export lives in `client.rs` (agent side), `app.rs` (app side), `transport.rs`
//! and `types.rs` (the TypeScript surface). Payloads stay `JsValue`s end to end.

mod app;
mod client;
mod dom;
mod global;
mod socket;
mod transport;
mod types;
mod value;

pub use app::AbpApp;
pub use client::AbpClient;
pub use socket::WebSocketTransport;
pub use transport::PostMessageTransport;
