//! `/relay/<room>/…` with `--nats`: the two sides of a relay room may join different processes. A room lives on
//! one process, its home: the one its first side joined. A side joining another process is carried there over
//! NATS, and the home treats it as one of its own sides, so every rule of the relay (the first app wins, the key,
//! the waiting frames and their bounds, the notices to the agent, the agent leaving closing the app) holds as on
//! one process.
//!
//! On the NATS server, per room (see [`crate::cluster`] for `<room>`):
//! - `abp.<room>.relay.join`: a side asking the home for its place (`{"agent", "key", "tunnel"}`), answered `ok`,
//!   `taken` or `wrong-key`; nobody answering means the room has no home yet, and the side makes its own process
//!   the home.
//! - `abp.<room>.relay.in.<tunnel>`: from the side's process to the home, in order: `f` and a text frame, `p` (it
//!   is still there, every [`ALIVE_EVERY`]), `b` (it left).
//! - `abp.<room>.relay.out.<tunnel>`: from the home to the side's process, in order: `f` and a text frame, `l`
//!   and `j` (the notices [`APP_LEFT`] and [`APP_JOINED`]), `c` (its place is gone: close it).
//! - `abp.<room>.relay.alive`: the home's heartbeat. A side that has not heard it for [`GONE_AFTER`] is closed
//!   (the home's process was killed, or NATS went away), as a side silent as long is let go by the home.
//!
//! A frame crosses as one NATS message, so a frame over the NATS server's `max_payload` (1 MiB unless configured)
//! closes the side that sent it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::Subscriber;
use axum::extract::ws::WebSocket;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::cluster::Cluster;
use crate::hub::{Slot, Task};
use crate::nats::{ALIVE_EVERY, GONE_AFTER};
use crate::relay::{self, Joined, Out, Relay, APP_JOINED, APP_LEFT};
use crate::ws::{Conn, Incoming};

/// A side's place in its room, taken before the upgrade is answered.
pub(crate) enum Place {
    /// The room is on this process.
    Here(Joined),
    /// The room's home is another process.
    There(Tunnel),
}

/// Takes side `is_agent` of `room` with `key`: here when the room is here, or has no home anywhere (or there is
/// no `cluster`); else at its home. A NATS server that does not answer refuses the side (the room may be held
/// where this process cannot see).
pub(crate) async fn join(
    relay: &Arc<Relay>,
    cluster: Option<&Arc<Cluster>>,
    room: &str,
    is_agent: bool,
    key: Option<String>,
) -> Result<Result<Place, Slot>, String> {
    let Some(cluster) = cluster else {
        return Ok(relay.join(room, is_agent, key).map(Place::Here));
    };
    if !relay.is_here(room) {
        if let Some(there) = Tunnel::open(cluster, relay, room, is_agent, key.as_deref()).await? {
            return Ok(there.map(Place::There));
        }
    }
    let joined = match relay.join(room, is_agent, key) {
        Ok(joined) => joined,
        Err(refused) => return Ok(Err(refused)),
    };
    if relay.wants_home(room) {
        let task = serve_home(cluster.clone(), relay.clone(), room.to_owned()).await?;
        relay.set_home(room, task);
    }
    Ok(Ok(Place::Here(joined)))
}

/// Relays for a side until it goes.
pub(crate) async fn serve(socket: WebSocket, place: Place, ping: Duration) {
    match place {
        Place::Here(joined) => relay::serve(socket, joined, ping).await,
        Place::There(tunnel) => tunnel.serve(socket, ping).await,
    }
}

/// A side of a room whose home is another process.
pub(crate) struct Tunnel {
    cluster: Arc<Cluster>,
    room: String,
    id: String,
    out: Subscriber,
    alive: Subscriber,
    done: bool,
}

impl Tunnel {
    /// Asks the room's home for the side's place: `None` when the room has no home.
    async fn open(
        cluster: &Arc<Cluster>,
        relay: &Relay,
        room: &str,
        is_agent: bool,
        key: Option<&str>,
    ) -> Result<Option<Result<Tunnel, Slot>>, String> {
        let id = format!("{}-{}", cluster.node(), relay.next_id());
        // Listening before asking: what the home sends as it answers (frames that waited) is not missed.
        let out = cluster.subscribe(room, &format!("relay.out.{id}")).await?;
        let alive = cluster.subscribe(room, "relay.alive").await?;
        let ask = json!({ "agent": is_agent, "key": key, "tunnel": id }).to_string();
        let answer = cluster
            .request(room, "relay.join", ask.into_bytes())
            .await?;
        Ok(match answer.as_deref() {
            None => None,
            Some(b"ok") => Some(Ok(Tunnel {
                cluster: cluster.clone(),
                room: room.to_owned(),
                id,
                out,
                alive,
                done: false,
            })),
            Some(b"wrong-key") => Some(Err(Slot::WrongKey)),
            Some(_) => Some(Err(Slot::Taken)),
        })
    }

    async fn tell(&self, kind: u8, text: &str) -> bool {
        let mut payload = Vec::with_capacity(1 + text.len());
        payload.push(kind);
        payload.extend_from_slice(text.as_bytes());
        self.cluster
            .publish(&self.room, &format!("relay.in.{}", self.id), payload)
            .await
    }

    async fn serve(mut self, socket: WebSocket, ping: Duration) {
        let mut conn = Conn::new(socket);
        let room = self.room.clone();
        let mut pings = tokio::time::interval_at(tokio::time::Instant::now() + ping, ping);
        let mut beats = tokio::time::interval(ALIVE_EVERY);
        let mut heard = Instant::now();
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
                        if !self.tell(b'f', &text).await {
                            eprintln!("abp-peer: closed a side of /relay/{room}: NATS did not take its frame of {} bytes", text.len());
                            break;
                        }
                    }
                    Incoming::Other => {}
                    Incoming::Closed => break,
                },
                m = self.out.next() => {
                    let Some(m) = m else { break };
                    heard = Instant::now();
                    let sent = match m.payload.split_first() {
                        Some((b'f', text)) => conn.send(String::from_utf8_lossy(text).into_owned()).await,
                        Some((b'l', _)) => conn.send_binary(APP_LEFT).await,
                        Some((b'j', _)) => conn.send_binary(APP_JOINED).await,
                        _ => false,
                    };
                    if !sent {
                        break;
                    }
                }
                Some(_) = self.alive.next() => heard = Instant::now(),
                _ = beats.tick() => {
                    if heard.elapsed() > GONE_AFTER {
                        eprintln!("abp-peer: the process holding /relay/{room} stopped answering; closing its side here");
                        break;
                    }
                    self.tell(b'p', "").await;
                }
            }
        }
        self.done = true;
        self.tell(b'b', "").await;
        conn.close().await;
    }
}

impl Drop for Tunnel {
    /// Joined but never served (the upgrade did not complete): the home is told, so the place is free at once.
    fn drop(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let (cluster, room, id) = (self.cluster.clone(), self.room.clone(), self.id.clone());
        tokio::spawn(async move {
            cluster
                .publish(&room, &format!("relay.in.{id}"), b"b".to_vec())
                .await
        });
    }
}

/// A side served here for another process: its place, and when it was last heard.
struct Remote {
    side: (usize, u64),
    heard: Instant,
    /// Carries what the home has for the side to its process; ends the side here when dropped.
    _carrier: Task,
}

/// Serves `room`, here, to sides that join other processes (until the room goes, which drops the task).
async fn serve_home(
    cluster: Arc<Cluster>,
    relay: Arc<Relay>,
    room: String,
) -> Result<Task, String> {
    let mut joins = cluster.subscribe(&room, "relay.join").await?;
    let mut incoming = cluster.subscribe(&room, "relay.in.*").await?;
    Ok(Task::spawn(async move {
        let mut remotes: HashMap<String, Remote> = HashMap::new();
        let mut beats = tokio::time::interval(ALIVE_EVERY);
        loop {
            tokio::select! {
                Some(m) = joins.next() => {
                    let answer = match take(&cluster, &relay, &room, &m.payload) {
                        Ok((tunnel, remote)) => {
                            remotes.insert(tunnel, remote);
                            "ok"
                        }
                        Err(Slot::WrongKey) => "wrong-key",
                        Err(_) => "taken",
                    };
                    cluster.answer(&m, answer.as_bytes()).await;
                }
                Some(m) = incoming.next() => {
                    let Some(tunnel) = m.subject.rsplit('.').next() else { continue };
                    let Some(remote) = remotes.get_mut(tunnel) else { continue };
                    remote.heard = Instant::now();
                    match m.payload.split_first() {
                        Some((b'f', text)) => {
                            let (me, id) = remote.side;
                            let text = String::from_utf8_lossy(text).into_owned();
                            if let Err(why) = relay.pass(&room, me, id, text) {
                                eprintln!("abp-peer: closed a side of /relay/{room}: {why}");
                                remotes.remove(tunnel);
                            }
                        }
                        Some((b'p', _)) => {}
                        _ => {
                            remotes.remove(tunnel);
                        }
                    }
                }
                _ = beats.tick() => {
                    cluster.publish(&room, "relay.alive", Vec::new()).await;
                    remotes.retain(|_, r| r.heard.elapsed() <= GONE_AFTER);
                }
                else => break,
            }
        }
    }))
}

/// A side asking to join `room` from another process: its place here, and what carries its frames there.
fn take(
    cluster: &Arc<Cluster>,
    relay: &Arc<Relay>,
    room: &str,
    ask: &[u8],
) -> Result<(String, Remote), Slot> {
    let ask: Value = serde_json::from_slice(ask).map_err(|_| Slot::Taken)?;
    let tunnel = ask
        .get("tunnel")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .ok_or(Slot::Taken)?
        .to_owned();
    let is_agent = ask.get("agent").and_then(Value::as_bool).unwrap_or(false);
    let key = ask.get("key").and_then(Value::as_str).map(str::to_owned);
    let joined = relay.join(room, is_agent, key)?;
    let side = joined.side();
    let carrier = Task::spawn(carry(
        cluster.clone(),
        room.to_owned(),
        tunnel.clone(),
        joined,
    ));
    Ok((
        tunnel,
        Remote {
            side,
            heard: Instant::now(),
            _carrier: carrier,
        },
    ))
}

/// What the room has for a side on another process, to that process, until the side's place is gone.
async fn carry(cluster: Arc<Cluster>, room: String, tunnel: String, mut joined: Joined) {
    let out = format!("relay.out.{tunnel}");
    while let Some(next) = joined.next_out().await {
        let payload = match next {
            Out::Frame { from, text } => {
                if !joined.current(from) {
                    continue;
                }
                let mut payload = Vec::with_capacity(1 + text.len());
                payload.push(b'f');
                payload.extend_from_slice(text.as_bytes());
                payload
            }
            Out::Notice(notice) if notice == APP_LEFT => b"l".to_vec(),
            Out::Notice(_) => b"j".to_vec(),
        };
        if !cluster.publish(&room, &out, payload).await {
            break;
        }
    }
    cluster.publish(&room, &out, b"c".to_vec()).await;
}
