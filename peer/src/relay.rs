//! The relay: `/relay/<room>/agent` and `/relay/<room>/app` meet, and text frames pass between them
//! unchanged. Frames sent while the other side is absent wait (up to [`WAITING_LIMIT`] frames and
//! [`WAITING_BYTES`]; a side that sends more is closed). When one side goes,
//! the other is closed, so both ends see the connection drop (and their pending calls settle).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocket;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::hub::{lock, Hub};
use crate::ws::{Conn, Incoming};

const WAITING_LIMIT: usize = 256;
/// The bytes one side may leave waiting for an absent other side; a side that sends more is closed.
const WAITING_BYTES: usize = 1024 * 1024;

#[derive(Default)]
pub(crate) struct Room {
    /// Each side's id and inbox; dropping an inbox's sender closes that side.
    sides: [Option<(u64, UnboundedSender<String>)>; 2],
    waiting: [Vec<String>; 2],
}

fn index(is_agent: bool) -> usize {
    usize::from(!is_agent)
}

/// Whether an app holds `room`'s app side.
pub(crate) fn app_taken(hub: &Hub, room: &str) -> bool {
    lock(&hub.relay).get(room).is_some_and(|r| {
        r.sides[index(false)]
            .as_ref()
            .is_some_and(|(_, tx)| !tx.is_closed())
    })
}

pub(crate) async fn serve(
    socket: WebSocket,
    hub: Arc<Hub>,
    room: String,
    is_agent: bool,
    ping: Duration,
) {
    let mut conn = Conn::new(socket);
    let me = index(is_agent);
    let other = 1 - me;
    let (tx, mut inbox) = unbounded_channel();
    let id = hub.next_id();
    let refused = {
        let mut rooms = lock(&hub.relay);
        let r = rooms.entry(room.clone()).or_default();
        let held = r.sides[me].as_ref().is_some_and(|(_, t)| !t.is_closed());
        // The first app wins: a second one must not take the user's app's place (a race the 409 before the
        // upgrade did not catch ends here). A newer agent (it holds the token) replaces the old one, whose inbox
        // closes.
        let refused = held && !is_agent;
        if !refused {
            r.sides[me] = Some((id, tx.clone()));
            for text in r.waiting[other].drain(..) {
                let _ = tx.send(text);
            }
        }
        refused
    };
    if refused {
        eprintln!("abp-peer: 409 for /relay/{room}/app: another app holds it");
        conn.close_with(crate::agent::ROOM_TAKEN, "another app holds this room")
            .await;
        return;
    }
    drop(tx);
    let mut pings = tokio::time::interval_at(tokio::time::Instant::now() + ping, ping);
    loop {
        tokio::select! {
            _ = pings.tick() => {
                if !conn.keep_alive(ping).await {
                    eprintln!("abp-peer: a side of /relay/{room} stopped answering; its place is free");
                    break;
                }
            }
            incoming = conn.recv() => match incoming {
                Incoming::Text(text) => {
                    let mut rooms = lock(&hub.relay);
                    let r = rooms.entry(room.clone()).or_default();
                    match &r.sides[other] {
                        Some((_, peer)) => {
                            let _ = peer.send(text);
                        }
                        None => {
                            let held: usize = r.waiting[me].iter().map(String::len).sum();
                            if r.waiting[me].len() >= WAITING_LIMIT || held + text.len() > WAITING_BYTES {
                                // Nobody reads these: a side that keeps sending into an empty room is closed
                                // rather than held in memory.
                                r.waiting[me].clear();
                                drop(rooms);
                                eprintln!(
                                    "abp-peer: closed a side of /relay/{room}: more than {WAITING_LIMIT} frames or \
                                     {WAITING_BYTES} bytes for an absent other side"
                                );
                                break;
                            }
                            r.waiting[me].push(text);
                        }
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
