//! abp-wasm: cancellable Agentic Browser Protocol (ABP) calls between web apps, bound to real `AbortSignal`s.
//!
//! - [`core`]: the protocol state machines, plain Rust, natively testable.
//! - `web` (only on `wasm32`): the browser glue exported to JavaScript: `AbpClient`, `AbpApp`,
//!   `PostMessageTransport` and `WebSocketTransport` (with either role), and `discover()` (feature `discovery`,
//!   on by default; with `discovery-lazy` instead, its first call loads a build made with `discovery` alone).

pub mod core;

#[cfg(target_arch = "wasm32")]
mod web;

#[cfg(all(
    target_arch = "wasm32",
    any(feature = "discovery", feature = "discovery-lazy")
))]
pub use web::discover;
#[cfg(all(target_arch = "wasm32", feature = "app"))]
pub use web::AbpApp;
#[cfg(all(target_arch = "wasm32", feature = "agent"))]
pub use web::AbpClient;
#[cfg(all(target_arch = "wasm32", feature = "agent"))]
pub use web::WebMCPTransport;
#[cfg(all(target_arch = "wasm32", any(feature = "agent", feature = "app")))]
pub use web::{PostMessageTransport, WebSocketTransport};

/// The wasm's allocator: talc instead of std's dlmalloc, for size: it makes every build's gzipped wasm smaller
/// (BENCHMARKS.md has the figures, "Changelog of figures", one crossing per message on the call path).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
// SAFETY: `new_global` needs single-threaded wasm that nothing else allocates in; this package's wasm is
// built without threads (no shared memory or atomics) and only Rust's allocator uses its heap.
static ALLOCATOR: talc::TalckWasm = unsafe { talc::TalckWasm::new_global() };
