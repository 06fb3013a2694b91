//! What the MCP gateway's edges hand it through the hub: the hosts that join, what each says (read once, at the
//! edge that received it), and their leaving. The gateway's own loop (see [`crate::mcp`]) gives each input to the
//! sans-IO endpoint in [`crate::gateway`].

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

/// What a host that joins through the hub (`/mcp-host`, a 2025-11-25 HTTP session, the HTTP endpoint's requests,
/// another process's host) sends the gateway, one message at a time.
#[derive(Debug)]
pub(crate) enum HostInput {
    /// A host joined: what the gateway says to it goes to `out`.
    Joined {
        host: u64,
        out: UnboundedSender<Value>,
    },
    /// A message from the host, read by its edge.
    Message {
        host: u64,
        message: Value,
    },
    /// A line from the host that is not JSON: the gateway answers it with a parse error.
    Unreadable {
        host: u64,
    },
    Left {
        host: u64,
    },
}

/// A line of text from `host` (stdio, a `/mcp-host` socket), read once.
pub(crate) fn read(host: u64, line: &str) -> HostInput {
    match serde_json::from_str::<Value>(line) {
        Ok(message) => HostInput::Message { host, message },
        Err(_) => HostInput::Unreadable { host },
    }
}
