//! The protocol core: plain Rust, no `web-sys`, no clock. Deterministic and tested natively with
//! `cargo test`; `crate::web` drives it in the browser.

pub mod agent;
pub mod app;
pub mod capability;
pub mod connection;
pub mod dialect;
#[cfg(feature = "discovery")]
pub mod discovery;
pub mod error;
pub mod map;
pub mod message;
pub mod payload;
pub mod schema;
pub mod text;
pub mod timers;
pub mod trace;

#[cfg(any(test, feature = "json"))]
pub mod json;

#[cfg(test)]
mod tests;

pub use agent::{
    AbortKind, AgentConfig, AgentCore, AgentOutput, CallRequest, CancelAnswer, Settlement,
    NO_ANSWER_TO_INITIALIZE,
};
pub use app::{AppConfig, AppConn, AppOutput};
pub use capability::Registry;
pub use connection::{AgentConnection, AppConnection, Sent, Transmit};
pub use error::{AbpError, ErrorCode};
pub use message::{
    Control, ControlOut, ElicitAnswer, FromAgent, FromApp, Incoming, Outcome, ToAgent, ToApp,
};
pub use trace::Trace;
