//! What the MCP gateway's edges hand it through the rooms a process shares: the hosts that join, what each says,
//! and their leaving.

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

/// What a host that joins through `/mcp-host` sends the gateway (by the hub), one message at a time.
#[derive(Debug)]
pub(crate) enum HostInput {
    /// A host joined: its lines go to `out`.
    Joined {
        host: u64,
        out: UnboundedSender<String>,
    },
    /// A line of text from the host (stdio relayed by another copy, or another process's gateway).
    Line {
        host: u64,
        line: String,
    },
    /// A message its edge already read (an HTTP request's body).
    Message {
        host: u64,
        message: Value,
    },
    Left {
        host: u64,
    },
}
