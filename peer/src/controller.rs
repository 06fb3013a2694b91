//! A controller of a room's native agent: `/control/<room>` (a WebSocket) or `--stdin` (for the room `""`). Its
//! commands go to the room's agent, wherever that is, and the agent's events come back, in the control protocol
//! of [`crate::control`].

use std::sync::Arc;

use axum::extract::ws::WebSocket;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::control::parse;
use crate::switchboard::Switchboard;
use crate::ws::{Conn, Incoming};

/// `/control/<room>`: commands in, the room's agent events out. A newer controller of the room replaces this one
/// (its inbox closes, and so does this socket).
pub(crate) async fn serve(socket: WebSocket, switchboard: Arc<Switchboard>, room: String) {
    let mut conn = Conn::new(socket);
    let mut registration = switchboard.attach_controller(&room);
    loop {
        tokio::select! {
            incoming = conn.recv() => match incoming {
                Incoming::Text(line) => match parse(&line) {
                    Ok(envelope) => switchboard.command_or_error(&room, envelope),
                    Err(error) => switchboard.emit(&room, error),
                },
                Incoming::Other => {}
                Incoming::Closed => break,
            },
            event = registration.inbox.recv() => match event {
                Some(event) => {
                    if !conn.send(event.to_line()).await {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    drop(registration);
    conn.close().await;
}

/// `--stdin`: commands for the room `""` (`/agent`) from standard input, one per line; its events to standard
/// output, one per line. Runs until the process ends (stdin reaching its end stops only the reading).
pub(crate) fn serve_stdin(switchboard: Arc<Switchboard>) {
    let mut registration = switchboard.attach_controller("");
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(event) = registration.inbox.recv().await {
            let mut line = event.to_line();
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            match parse(&line) {
                Ok(envelope) => switchboard.command_or_error("", envelope),
                Err(error) => switchboard.emit("", error),
            }
        }
    });
}
