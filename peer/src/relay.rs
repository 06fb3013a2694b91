//! The relay: `/relay/<room>/agent` and `/relay/<room>/app` meet, and text frames pass between them
//! unchanged.
//!
//! - The first app wins the app side; an app with the room's key (`?key=`, pinned by the first side that gave
//!   one, for as long as anyone is in the room) takes it back from a holder. A newer agent (it holds the token)
//!   replaces the old one.
//! - Only the current holder's frames reach the other side: a frame sent by a side that has since left or been
//!   replaced is dropped, and so is whatever it left waiting.
//! - The app leaving does not close the agent: the agent is told with a binary frame, [`APP_LEFT`], after the
//!   app's last text frame, and [`APP_JOINED`] when the next app takes the room (the app starts a new session
//!   then). The agent leaving closes the app.
//! - Bounded: frames sent while the other side is absent wait (up to [`WAITING_LIMIT`] frames and
//!   [`WAITING_BYTES`]); frames on their way to a side wait in its queue (up to [`QUEUE_BYTES`], or one frame
//!   of any size the server accepts); all of that together, across rooms, up to [`TOTAL_BYTES`]. A side that
//!   sends past a bound is closed: the reader is never the one that pays for a sender's flood.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::WebSocket;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::hub::{lock, slot, Slot, Task};
use crate::ws::{Conn, Incoming};

const WAITING_LIMIT: usize = 256;
/// The bytes one side may leave waiting for an absent other side.
const WAITING_BYTES: usize = 1024 * 1024;
/// The bytes on their way to one side that it has not read yet (a larger single frame still passes).
const QUEUE_BYTES: usize = 4 * 1024 * 1024;
/// The bytes all relay rooms hold together, waiting or on their way.
const TOTAL_BYTES: usize = 256 * 1024 * 1024;

/// The binary frame that tells an agent its app left (text frames are the dialect's alone).
pub(crate) const APP_LEFT: &[u8] = b"abp-relay: app left";
/// The binary frame that tells an agent, after [`APP_LEFT`], that another app has joined.
pub(crate) const APP_JOINED: &[u8] = b"abp-relay: app joined";

pub(crate) enum Out {
    /// A text frame from the holder `from` of the other side.
    Frame { from: u64, text: String },
    /// A notice to an agent.
    Notice(&'static [u8]),
}

struct Side {
    id: u64,
    inbox: UnboundedSender<Out>,
    /// The bytes of the frames in `inbox` (a side's own count; the total of all rooms is [`HELD`]).
    queued: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Room {
    sides: [Option<Side>; 2],
    waiting: [Vec<String>; 2],
    key: Option<String>,
    /// The agent was told its app left, and is to be told when another joins.
    agent_alone: bool,
    /// With `--nats`: what serves this room to sides that joined other processes.
    home: Option<Task>,
}

impl Room {
    fn held(&self, side: usize) -> bool {
        self.sides[side]
            .as_ref()
            .is_some_and(|s| !s.inbox.is_closed())
    }

    pub(crate) fn holder(&self, side: usize) -> Option<u64> {
        self.sides[side].as_ref().map(|s| s.id)
    }
}

pub(crate) const AGENT: usize = 0;
pub(crate) const APP: usize = 1;

fn index(is_agent: bool) -> usize {
    if is_agent {
        AGENT
    } else {
        APP
    }
}

/// What the relay holds in all rooms: waiting frames and frames on their way.
pub(crate) static HELD: AtomicUsize = AtomicUsize::new(0);

fn release(bytes: usize) {
    HELD.fetch_sub(bytes, Ordering::AcqRel);
}

/// Takes `bytes` from the total budget; false if that would pass [`TOTAL_BYTES`].
fn reserve(bytes: usize) -> bool {
    HELD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
        (held + bytes <= TOTAL_BYTES).then_some(held + bytes)
    })
    .is_ok()
}

/// A side's place in its room, taken before the upgrade is answered (so a refused app gets its HTTP status, and
/// two apps racing for a room cannot both be told yes).
pub(crate) struct Joined {
    relay: Arc<Relay>,
    room: String,
    me: usize,
    id: u64,
    inbox: UnboundedReceiver<Out>,
    queued: Arc<AtomicUsize>,
    done: bool,
}

impl Joined {
    /// Which side it is ([`AGENT`] or [`APP`]) and its holder's number.
    pub(crate) fn side(&self) -> (usize, u64) {
        (self.me, self.id)
    }

    /// The next frame or notice for this side; `None` once it no longer holds its place.
    pub(crate) async fn next_out(&mut self) -> Option<Out> {
        let out = self.inbox.recv().await?;
        if let Out::Frame { text, .. } = &out {
            self.queued.fetch_sub(text.len(), Ordering::AcqRel);
            release(text.len());
        }
        Some(out)
    }

    /// Whether a frame from holder `from` of the other side is still that side's to say (it has not left or been
    /// replaced since).
    pub(crate) fn current(&self, from: u64) -> bool {
        lock(&self.relay.rooms)
            .get(&self.room)
            .and_then(|r| r.holder(1 - self.me))
            == Some(from)
    }

    /// Gives the place back, with whatever was still on its way to this side.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.relay.leave(&self.room, self.me, self.id);
        self.inbox.close();
        while let Ok(out) = self.inbox.try_recv() {
            if let Out::Frame { text, .. } = out {
                release(text.len());
            }
        }
    }
}

impl Drop for Joined {
    /// Also when the upgrade never completed.
    fn drop(&mut self) {
        self.finish();
    }
}

/// The relay's rooms on this process.
#[derive(Default)]
pub(crate) struct Relay {
    rooms: Mutex<HashMap<String, Room>>,
    next_id: AtomicU64,
}

impl Relay {
    /// A number no other call of this relay gives: a side's holder's (so that only the current one speaks for
    /// it), or a tunnel's.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Takes side `is_agent` of `room` with `key`: the agent's side always (it holds the token; a newer agent
    /// replaces the old one), the app's side by [`slot`]'s rule.
    pub(crate) fn join(
        self: &Arc<Self>,
        room: &str,
        is_agent: bool,
        key: Option<String>,
    ) -> Result<Joined, Slot> {
        let me = index(is_agent);
        let other = 1 - me;
        let (tx, inbox) = unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let id = self.next_id();
        let mut rooms = lock(&self.rooms);
        let r = rooms.entry(room.to_owned()).or_default();
        if !is_agent {
            match slot(r.held(APP), r.key.as_deref(), key.as_deref()) {
                Slot::Free | Slot::Retake => {}
                refused => {
                    if r.sides.iter().all(Option::is_none) {
                        rooms.remove(room);
                    }
                    return Err(refused);
                }
            }
        }
        // The first key given pins the room; the agent's (it holds the token) always does.
        if r.key.is_none() || (is_agent && key.is_some()) {
            r.key = key;
        }
        if is_agent {
            r.agent_alone = false;
        }
        // A replaced holder's inbox closes with its sender, and that connection ends.
        r.sides[me] = Some(Side {
            id,
            inbox: tx.clone(),
            queued: queued.clone(),
        });
        // What a replaced holder left waiting is not this side's to send.
        for text in r.waiting[me].drain(..) {
            release(text.len());
        }
        let from = r.holder(other).unwrap_or(0);
        for text in r.waiting[other].drain(..) {
            queued.fetch_add(text.len(), Ordering::AcqRel);
            let _ = tx.send(Out::Frame { from, text });
        }
        if !is_agent && r.agent_alone {
            r.agent_alone = false;
            if let Some(agent) = &r.sides[AGENT] {
                let _ = agent.inbox.send(Out::Notice(APP_JOINED));
            }
        }
        Ok(Joined {
            relay: self.clone(),
            room: room.to_owned(),
            me,
            id,
            inbox,
            queued,
            done: false,
        })
    }

    /// A text frame from side `me` (holder `id`) of `room`: to the other side, or waiting for it.
    pub(crate) fn pass(&self, room: &str, me: usize, id: u64, text: String) -> Result<(), String> {
        let other = 1 - me;
        let mut rooms = lock(&self.rooms);
        let Some(r) = rooms.get_mut(room) else {
            return Err("its room is gone".to_owned());
        };
        if r.holder(me) != Some(id) {
            return Err("another holds its place now".to_owned());
        }
        if me == AGENT && r.agent_alone {
            // Said before the agent read that its app left: meant for that app's session, not the next app's.
            return Ok(());
        }
        let bytes = text.len();
        match &r.sides[other] {
            Some(peer) => {
                let queued = peer.queued.load(Ordering::Acquire);
                if queued > 0 && queued + bytes > QUEUE_BYTES {
                    return Err(format!(
                        "the other side has not read {queued} bytes, and {QUEUE_BYTES} may wait"
                    ));
                }
                if !reserve(bytes) {
                    return Err(format!("the relay holds {TOTAL_BYTES} bytes in all"));
                }
                peer.queued.fetch_add(bytes, Ordering::AcqRel);
                let _ = peer.inbox.send(Out::Frame { from: id, text });
            }
            None => {
                let held: usize = r.waiting[me].iter().map(String::len).sum();
                if r.waiting[me].len() >= WAITING_LIMIT || held + bytes > WAITING_BYTES {
                    // Nobody reads these: a side that keeps sending into an empty room is closed rather than held
                    // in memory.
                    for text in r.waiting[me].drain(..) {
                        release(text.len());
                    }
                    return Err(format!(
                        "more than {WAITING_LIMIT} frames or {WAITING_BYTES} bytes for an absent other side"
                    ));
                }
                if !reserve(bytes) {
                    return Err(format!("the relay holds {TOTAL_BYTES} bytes in all"));
                }
                r.waiting[me].push(text);
            }
        }
        Ok(())
    }

    /// Side `me` (holder `id`) of `room` is gone: its place is free and what it left waiting goes. The app leaving
    /// tells the agent; the agent leaving closes the app.
    fn leave(&self, room: &str, me: usize, id: u64) {
        let mut rooms = lock(&self.rooms);
        let Some(r) = rooms.get_mut(room) else {
            return;
        };
        if r.holder(me) != Some(id) {
            return;
        }
        r.sides[me] = None;
        for text in r.waiting[me].drain(..) {
            release(text.len());
        }
        if me == AGENT {
            // Dropping the app's sender closes it once it has sent what it was given.
            r.sides[APP] = None;
            for text in r.waiting[APP].drain(..) {
                release(text.len());
            }
        } else if let Some(agent) = &r.sides[AGENT] {
            let _ = agent.inbox.send(Out::Notice(APP_LEFT));
            r.agent_alone = true;
        }
        if r.sides.iter().all(Option::is_none) {
            rooms.remove(room);
        }
    }

    /// Whether `room` has a side on this process (then a side joining here joins it here).
    pub(crate) fn is_here(&self, room: &str) -> bool {
        lock(&self.rooms).contains_key(room)
    }

    /// With `--nats`: whether `room` is here and nothing serves it to the other processes yet.
    pub(crate) fn wants_home(&self, room: &str) -> bool {
        lock(&self.rooms)
            .get(room)
            .is_some_and(|r| r.home.is_none())
    }

    /// With `--nats`: `task` serves `room` to the other processes for as long as the room is here (dropped with it,
    /// or at once if the room has gone or another task serves it already).
    pub(crate) fn set_home(&self, room: &str, task: Task) {
        if let Some(r) = lock(&self.rooms).get_mut(room) {
            if r.home.is_none() {
                r.home = Some(task);
            }
        }
    }
}

/// Relays for the side `joined` holds until it goes.
pub(crate) async fn serve(socket: WebSocket, mut joined: Joined, ping: Duration) {
    let mut conn = Conn::new(socket);
    let (relay, room, me, id) = (
        joined.relay.clone(),
        joined.room.clone(),
        joined.me,
        joined.id,
    );
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
                    if let Err(why) = relay.pass(&room, me, id, text) {
                        eprintln!("abp-peer: closed a side of /relay/{room}: {why}");
                        break;
                    }
                }
                Incoming::Other => {}
                Incoming::Closed => break,
            },
            out = joined.next_out() => match out {
                Some(Out::Frame { from, text }) => {
                    // Sent by a side that has left or been replaced since: not the current holder's to say.
                    if joined.current(from) && !conn.send(text).await {
                        break;
                    }
                }
                Some(Out::Notice(notice)) => {
                    if !conn.send_binary(notice).await {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    joined.finish();
    conn.close().await;
}
