//! `/mcp-host`: the edge where a second host's copy of `abp-peer mcp` (one that found the port taken) joins the
//! gateway of this one, over a WebSocket that carries its stdio's lines.

use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;

use crate::edge::HostInput;
use crate::switchboard::Switchboard;

/// `/mcp-host`: a host's copy of this command joined; its lines go to the room's gateway and the gateway's
/// answers come back, until either side goes.
pub(crate) async fn serve_host(
    socket: axum::extract::ws::WebSocket,
    hub: Arc<Switchboard>,
    room: String,
) {
    let mut conn = crate::ws::Conn::new(socket);
    let host = hub.next_id() + 1; // never STDIO
    let (out, mut answers) = unbounded_channel();
    if hub
        .to_mcp_gateway(&room, HostInput::Joined { host, out })
        .is_err()
    {
        conn.close().await;
        return;
    }
    loop {
        tokio::select! {
            incoming = conn.recv() => match incoming {
                crate::ws::Incoming::Text(line) => {
                    if hub.to_mcp_gateway(&room, crate::edge::read(host, &line)).is_err() {
                        break;
                    }
                }
                crate::ws::Incoming::Other => {}
                crate::ws::Incoming::Closed => break,
            },
            answer = answers.recv() => match answer {
                Some(message) => {
                    if !conn.send(message.to_string()).await {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    let _ = hub.to_mcp_gateway(&room, HostInput::Left { host });
    conn.close().await;
}
