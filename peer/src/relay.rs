//! The relay: `/relay/<room>/agent` and `/relay/<room>/app` meet, and text frames pass between them
//! unchanged. Frames sent while the other side is absent wait (up to [`WAITING_LIMIT`]). When one side goes,
//! the other is closed, so both ends see the connection drop (and their pending calls settle).

use std::sync::Arc;

use axum::extract::ws::WebSocket;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::hub::{lock, Hub};
use crate::ws::{Conn, Incoming};

const WAITING_LIMIT: usize = 256;

#[derive(Default)]
pub(crate) struct Room {
    /// Each side's id and inbox; dropping an inbox's sender closes that side.
    sides: [Option<(u64, UnboundedSender<String>)>; 2],
    waiting: [Vec<String>; 2],
}

fn index(is_agent: bool) -> usize {
    usize::from(!is_agent)
}

pub(crate) async fn serve(socket: WebSocket, hub: Arc<Hub>, room: String, is_agent: bool) {
    let mut conn = Conn::new(socket);
    let me = index(is_agent);
    let other = 1 - me;
    let (tx, mut inbox) = unbounded_channel();
    let id = hub.next_id();
    {
        let mut rooms = lock(&hub.relay);
        let r = rooms.entry(room.clone()).or_default();
        // A newer connection for the same role replaces the old one (whose inbox closes).
        r.sides[me] = Some((id, tx.clone()));
        for text in r.waiting[other].drain(..) {
            let _ = tx.send(text);
        }
    }
    drop(tx);
    loop {
        tokio::select! {
            incoming = conn.recv() => match incoming {
                Incoming::Text(text) => {
                    let mut rooms = lock(&hub.relay);
                    let r = rooms.entry(room.clone()).or_default();
                    match &r.sides[other] {
                        Some((_, peer)) => {
                            let _ = peer.send(text);
                        }
                        None if r.waiting[me].len() < WAITING_LIMIT => r.waiting[me].push(text),
                        None => {}
                    }
                }
                Incoming::Other => {}
                Incoming::Closed => break,
            },
            out = inbox.recv() => match out {
                Some(text) => {
                    if !conn.send(text).await {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    {
        let mut rooms = lock(&hub.relay);
        if let Some(r) = rooms.get_mut(&room) {
            if r.sides[me].as_ref().is_some_and(|(i, _)| *i == id) {
                r.sides[me] = None;
                r.waiting = Default::default();
                // Dropping the other side's sender closes it once it has sent what it was given.
                r.sides[other] = None;
            }
            if r.sides.iter().all(Option::is_none) {
                rooms.remove(&room);
            }
        }
    }
    conn.close().await;
}
