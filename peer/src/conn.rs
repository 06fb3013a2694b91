//! One accepted WebSocket, driven by its own thread: read with a short timeout, then do queued work.

use std::io::ErrorKind;
use std::net::TcpStream;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

use tungstenite::{Error, Message, WebSocket};

/// Something for a connection thread to do, sent from another thread.
pub(crate) enum Out {
    Text(String),
    Close,
}

pub(crate) struct Conn {
    ws: WebSocket<TcpStream>,
    open: bool,
}

/// What one `read` produced.
pub(crate) enum Read {
    Text(String),
    /// Nothing within the poll interval, or a frame that is not text (ignored).
    Nothing,
    Closed,
}

impl Conn {
    pub(crate) fn new(ws: WebSocket<TcpStream>) -> Conn {
        // Short reads so one thread can also serve its inbox and timers.
        let _ = ws
            .get_ref()
            .set_read_timeout(Some(Duration::from_millis(2)));
        Conn { ws, open: true }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.open
    }

    pub(crate) fn read(&mut self) -> Read {
        if !self.open {
            return Read::Closed;
        }
        match self.ws.read() {
            Ok(Message::Text(t)) => Read::Text(t.as_str().to_owned()),
            Ok(Message::Close(_)) => {
                let _ = self.ws.flush();
                self.open = false;
                Read::Closed
            }
            Ok(_) => Read::Nothing,
            Err(Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                let _ = self.ws.flush();
                Read::Nothing
            }
            // Closed, reset, a protocol error or a frame over the size limit: this connection is over.
            Err(_) => {
                self.open = false;
                Read::Closed
            }
        }
    }

    pub(crate) fn send(&mut self, text: String) {
        if self.open && self.ws.send(Message::text(text)).is_err() {
            self.open = false;
        }
    }

    pub(crate) fn close(mut self) {
        if self.open {
            let _ = self.ws.close(None);
            let _ = self.ws.flush();
        }
    }

    /// Delivers what other threads queued; false once asked to close.
    pub(crate) fn drain(&mut self, inbox: &Receiver<Out>) -> bool {
        loop {
            match inbox.try_recv() {
                Ok(Out::Text(t)) => self.send(t),
                Ok(Out::Close) | Err(TryRecvError::Disconnected) => return false,
                Err(TryRecvError::Empty) => return true,
            }
        }
    }
}
