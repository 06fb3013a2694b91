//! The relay: `/relay/<room>/agent` and `/relay/<room>/app` meet, and text frames pass between them
//! unchanged. Frames sent while the other side is absent wait (up to [`WAITING_LIMIT`]). When one side goes,
//! the other is closed, so both ends see the connection drop (and their pending calls settle).

use std::sync::mpsc::{self, Sender};
use std::sync::Arc;

use crate::{Conn, Out, Shared};

const WAITING_LIMIT: usize = 256;

#[derive(Default)]
pub(crate) struct Room {
    sides: [Option<(u64, Sender<Out>)>; 2],
    waiting: [Vec<String>; 2],
    next_id: u64,
}

fn index(is_agent: bool) -> usize {
    usize::from(!is_agent)
}

pub(crate) fn serve(mut conn: Conn, shared: Arc<Shared>, room: String, is_agent: bool) {
    let me = index(is_agent);
    let other = 1 - me;
    let (tx, inbox) = mpsc::channel();
    let id = {
        let Ok(mut rooms) = shared.rooms.lock() else {
            return;
        };
        let r = rooms.entry(room.clone()).or_default();
        r.next_id += 1;
        let id = r.next_id;
        // A newer connection for the same role replaces the old one.
        if let Some((_, old)) = r.sides[me].replace((id, tx.clone())) {
            let _ = old.send(Out::Close);
        }
        for text in r.waiting[other].drain(..) {
            let _ = tx.send(Out::Text(text));
        }
        id
    };
    while conn.is_open() {
        match conn.read() {
            crate::conn::Read::Text(text) => {
                let Ok(mut rooms) = shared.rooms.lock() else {
                    break;
                };
                let r = rooms.entry(room.clone()).or_default();
                match &r.sides[other] {
                    Some((_, peer)) => {
                        let _ = peer.send(Out::Text(text));
                    }
                    None if r.waiting[me].len() < WAITING_LIMIT => r.waiting[me].push(text),
                    None => {}
                }
            }
            crate::conn::Read::Nothing => {}
            crate::conn::Read::Closed => break,
        }
        if !conn.drain(&inbox) {
            break;
        }
    }
    if let Ok(mut rooms) = shared.rooms.lock() {
        if let Some(r) = rooms.get_mut(&room) {
            if r.sides[me].as_ref().is_some_and(|(i, _)| *i == id) {
                r.sides[me] = None;
                r.waiting = Default::default();
                if let Some((_, peer)) = r.sides[other].take() {
                    let _ = peer.send(Out::Close);
                }
            }
            if r.sides.iter().all(Option::is_none) {
                rooms.remove(&room);
            }
        }
    }
    conn.close();
}
