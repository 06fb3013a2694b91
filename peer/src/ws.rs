//! One accepted WebSocket, as the endpoints use it: text in, text out, and an end.

use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use futures_util::SinkExt;

/// What one `recv` produced.
pub(crate) enum Incoming {
    Text(String),
    /// A frame that is not text (binary, ping, pong): not a message.
    Other,
    /// Closed, reset, a protocol error or a frame over the size limit: this connection is over.
    Closed,
}

pub(crate) struct Conn {
    ws: WebSocket,
    open: bool,
    /// When the other end last sent anything (a frame, a pong).
    heard: Instant,
}

/// A slot's holder that answers nothing for this many ping intervals is gone.
const SILENT_PINGS: u32 = 3;

impl Conn {
    pub(crate) fn new(ws: WebSocket) -> Conn {
        Conn {
            ws,
            open: true,
            heard: Instant::now(),
        }
    }

    /// Pings the other end (a browser answers by itself); false when it has been silent for three `interval`s,
    /// which is the end of it (a page that froze, a laptop that slept, a socket half open).
    pub(crate) async fn keep_alive(&mut self, interval: Duration) -> bool {
        if self.heard.elapsed() > interval * SILENT_PINGS {
            return false;
        }
        self.open && self.ws.send(Message::Ping(Vec::new().into())).await.is_ok()
    }

    /// The next frame. Cancel-safe while waiting for one (it may be a branch of a `select!`).
    pub(crate) async fn recv(&mut self) -> Incoming {
        if !self.open {
            return std::future::pending().await;
        }
        let frame = self.ws.recv().await;
        if matches!(frame, Some(Ok(_))) {
            self.heard = Instant::now();
        }
        match frame {
            Some(Ok(Message::Text(t))) => Incoming::Text(t.as_str().to_owned()),
            Some(Ok(Message::Close(_))) => {
                // One more read sends the close frame queued in answer (and then reports the end).
                let _ = tokio::time::timeout(Duration::from_secs(1), self.ws.recv()).await;
                self.open = false;
                Incoming::Closed
            }
            Some(Err(_)) | None => {
                self.open = false;
                Incoming::Closed
            }
            Some(Ok(_)) => Incoming::Other,
        }
    }

    /// Sends a text frame; false once the connection is gone.
    pub(crate) async fn send(&mut self, text: String) -> bool {
        if self.open && self.ws.send(Message::text(text)).await.is_err() {
            self.open = false;
        }
        self.open
    }

    /// Sends text frames in one write (each queued, then one flush), so that messages produced in one turn
    /// wake the other end once; false once the connection is gone.
    pub(crate) async fn send_all(&mut self, texts: Vec<String>) -> bool {
        if texts.is_empty() || !self.open {
            return self.open;
        }
        for text in texts {
            if self.ws.feed(Message::text(text)).await.is_err() {
                self.open = false;
                return false;
            }
        }
        if self.ws.flush().await.is_err() {
            self.open = false;
        }
        self.open
    }

    /// Sends a binary frame; false once the connection is gone.
    pub(crate) async fn send_binary(&mut self, bytes: &'static [u8]) -> bool {
        if self.open && self.ws.send(Message::binary(bytes)).await.is_err() {
            self.open = false;
        }
        self.open
    }

    /// A close frame if the connection is still open, then the socket is dropped.
    pub(crate) async fn close(mut self) {
        if self.open {
            let _ = self.ws.send(Message::Close(None)).await;
        }
    }
}
