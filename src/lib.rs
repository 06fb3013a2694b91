//! abp-wasm: cancellable Agentic Browser Protocol (ABP) calls between web apps, bound to real `AbortSignal`s.
//!
//! - [`core`]: the protocol state machines, plain Rust, natively testable.
//! - `web` (only on `wasm32`): the browser glue exported to JavaScript: `AbpClient`, `AbpApp`,
//!   `PostMessageTransport`, `WebSocketTransport`, and `discover()` (feature `discovery`, on by default).

pub mod core;

#[cfg(target_arch = "wasm32")]
mod web;

#[cfg(all(target_arch = "wasm32", feature = "discovery"))]
pub use web::discover;
#[cfg(all(target_arch = "wasm32", feature = "app"))]
pub use web::AbpApp;
#[cfg(all(target_arch = "wasm32", feature = "agent"))]
pub use web::AbpClient;
#[cfg(target_arch = "wasm32")]
pub use web::{PostMessageTransport, WebSocketTransport};
