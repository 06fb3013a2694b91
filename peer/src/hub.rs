//! What the connections of one process share: per room, the native agent serving the app connected there (its
//! command inbox), whoever controls that agent (where its events go), and the relay's pairs.
//!
//! A registration is a handle: dropping it unregisters, unless a newer one for the same room has replaced it.
//! Replacing one drops the old inbox's sender, so the replaced connection sees its inbox close and ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::cluster::{Cluster, Task};
use crate::control::{no_app, Envelope, Event};
use crate::relay::Relay;

/// Per room: the registration's id, its inbox, and (for an app's slot) the room key it holds the slot with.
type Registry<T> = Mutex<HashMap<String, (u64, UnboundedSender<T>, Option<String>)>>;

#[derive(Default)]
pub(crate) struct Hub {
    agents: Registry<Envelope>,
    controllers: Registry<Event>,
    /// Per room, the MCP gateway that hosts joining through `/mcp-host` reach.
    mcp_gateways: Registry<crate::edge::HostInput>,
    pub(crate) relay: Arc<Relay>,
    next_id: AtomicU64,
    /// With `--nats`: the other processes sharing the rooms.
    pub(crate) cluster: Option<Arc<Cluster>>,
    /// With `--nats`: per room, where this process's controller sends commands for an agent elsewhere.
    remote: Mutex<HashMap<String, (u64, UnboundedSender<Envelope>)>>,
}

/// A lock that survives a panicked holder (the maps stay usable; each entry is replaced whole).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether an app may have a room's app slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Nobody holds it, and no key is asked for (or the right one was given).
    Free,
    /// Another app holds it: the first app wins.
    Taken,
    /// The room was joined with a key, and this one is missing or wrong.
    WrongKey,
    /// Another app holds it, and this one has the key it was joined with: it takes the holder's place.
    Retake,
}

/// The app slot's rule: `held` whether someone holds it, `pinned` the key the room asks for, `key` the
/// newcomer's. Keys are compared in constant time.
pub(crate) fn slot(held: bool, pinned: Option<&str>, key: Option<&str>) -> Slot {
    use subtle::ConstantTimeEq;
    match (pinned, key) {
        (Some(p), Some(k)) if bool::from(p.as_bytes().ct_eq(k.as_bytes())) => {
            if held {
                Slot::Retake
            } else {
                Slot::Free
            }
        }
        (Some(_), _) => Slot::WrongKey,
        (None, _) if held => Slot::Taken,
        (None, _) => Slot::Free,
    }
}

/// The agent of `room` is gone or was never there.
#[derive(Debug)]
pub(crate) struct NoAgent;

impl Hub {
    /// With `--nats`, while the link to the NATS server is down: a sentence that says so.
    pub(crate) fn link_down(&self) -> Option<String> {
        self.cluster.as_ref().and_then(|c| c.link_down())
    }

    /// A hub whose rooms are shared with the other processes of `cluster`.
    pub(crate) fn clustered(cluster: Arc<Cluster>) -> Hub {
        Hub {
            cluster: Some(cluster),
            ..Hub::default()
        }
    }

    /// A number for a registration, so a connection only removes its own entry.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn register<T>(
        self: &Arc<Self>,
        which: fn(&Hub) -> &Registry<T>,
        room: &str,
    ) -> Registration<T> {
        let (tx, inbox) = unbounded_channel();
        let id = self.next_id();
        lock(which(self)).insert(room.to_owned(), (id, tx, None));
        Registration {
            hub: self.clone(),
            which,
            room: room.to_owned(),
            id,
            inbox,
            task: None,
        }
    }

    /// Becomes the agent of `room` (the app that joined it is served by it), unless another app holds the room:
    /// the first app wins, unless the newcomer has the key the holder joined with (then it takes the holder's
    /// place, and the holder's connection ends).
    pub(crate) fn try_attach_agent(
        self: &Arc<Self>,
        room: &str,
        key: Option<&str>,
    ) -> Result<Registration<Envelope>, Slot> {
        let (tx, inbox) = unbounded_channel();
        let id = self.next_id();
        {
            let mut agents = lock(&self.agents);
            match agents.get(room) {
                Some((_, held, pinned)) if !held.is_closed() => {
                    match slot(true, pinned.as_deref(), key) {
                        Slot::Free | Slot::Retake => {}
                        refused => return Err(refused),
                    }
                }
                _ => {}
            }
            agents.insert(room.to_owned(), (id, tx, key.map(str::to_owned)));
        }
        Ok(Registration {
            hub: self.clone(),
            which: |h| &h.agents,
            room: room.to_owned(),
            id,
            inbox,
            task: None,
        })
    }

    /// Whether an app is connected to `room` on this process.
    pub(crate) fn has_agent(&self, room: &str) -> bool {
        lock(&self.agents)
            .get(room)
            .is_some_and(|(_, tx, _)| !tx.is_closed())
    }

    /// Lets `room`'s app go, if the registration `id` still holds it (an app with its key took the room back on
    /// another process): its inbox closes, and its connection ends.
    pub(crate) fn release_agent(&self, room: &str, id: u64) {
        let mut agents = lock(&self.agents);
        if agents.get(room).is_some_and(|(i, _, _)| *i == id) {
            agents.remove(room);
        }
    }

    /// Becomes the controller of `room`'s agent: its events arrive in the returned inbox. With `--nats`, also of
    /// an agent on another process, while none is here.
    pub(crate) fn attach_controller(self: &Arc<Self>, room: &str) -> Registration<Event> {
        let mut registration = self.register(|h| &h.controllers, room);
        if let Some(cluster) = &self.cluster {
            let (task, commands) = cluster.control(self.clone(), room.to_owned(), registration.id);
            lock(&self.remote).insert(room.to_owned(), (registration.id, commands));
            registration.task = Some(task);
        }
        registration
    }

    /// Lets `room`'s controller go, if the registration `id` still is it (a newer one joined another process): its
    /// inbox closes, and its connection ends.
    pub(crate) fn release_controller(&self, room: &str, id: u64) {
        let mut controllers = lock(&self.controllers);
        if controllers.get(room).is_some_and(|(i, _, _)| *i == id) {
            controllers.remove(room);
        }
    }

    /// Becomes the controller of `room`'s agent on this process only (with `--nats` too): the MCP gateway, whose
    /// requests go to the gateway of the process holding the app instead.
    pub(crate) fn attach_local_controller(self: &Arc<Self>, room: &str) -> Registration<Event> {
        self.register(|h| &h.controllers, room)
    }

    /// Becomes the MCP gateway of `room`: hosts that join it arrive in the returned inbox.
    pub(crate) fn attach_mcp_gateway(
        self: &Arc<Self>,
        room: &str,
    ) -> Registration<crate::edge::HostInput> {
        self.register(|h| &h.mcp_gateways, room)
    }

    /// Sends a joined host's input to the MCP gateway of `room`.
    pub(crate) fn to_mcp_gateway(
        &self,
        room: &str,
        input: crate::edge::HostInput,
    ) -> Result<(), NoAgent> {
        let gateways = lock(&self.mcp_gateways);
        let (_, tx, _) = gateways.get(room).ok_or(NoAgent)?;
        tx.send(input).map_err(|_| NoAgent)
    }

    /// Sends an event to the controller of `room`, if there is one.
    pub(crate) fn emit(&self, room: &str, event: Event) {
        if let Some((_, tx, _)) = lock(&self.controllers).get(room) {
            let _ = tx.send(event);
        }
    }

    /// Sends a command to the agent of `room`.
    pub(crate) fn command(&self, room: &str, envelope: Envelope) -> Result<(), NoAgent> {
        let agents = lock(&self.agents);
        let (_, tx, _) = agents.get(room).ok_or(NoAgent)?;
        tx.send(envelope).map_err(|_| NoAgent)
    }

    /// A command from a controller of `room`: to the agent (with `--nats`, the one on another process when
    /// none is here), or an `error` event back when no app is connected.
    pub(crate) fn command_or_error(&self, room: &str, envelope: Envelope) {
        let reference = envelope.reference.clone();
        let local = lock(&self.agents)
            .get(room)
            .is_some_and(|(_, tx, _)| !tx.is_closed());
        let sent = if local {
            self.command(room, envelope).is_ok()
        } else {
            lock(&self.remote)
                .get(room)
                .is_some_and(|(_, tx)| tx.send(envelope).is_ok())
        };
        if !sent {
            self.emit(room, no_app(room, reference));
        }
    }

    /// An event of the agent of `room`, which lives on this process: to the room's controller here and, with
    /// `--nats`, to those on other processes.
    pub(crate) fn emit_from_agent(&self, room: &str, event: Event) {
        if let Some(cluster) = &self.cluster {
            cluster.publish_event(room, &event);
        }
        self.emit(room, event);
    }
}

/// An entry in one of the hub's registries, with its inbox; removed when dropped (if still its own).
#[must_use = "dropping the registration unregisters it at once"]
pub(crate) struct Registration<T> {
    hub: Arc<Hub>,
    which: fn(&Hub) -> &Registry<T>,
    room: String,
    id: u64,
    pub(crate) inbox: UnboundedReceiver<T>,
    /// With `--nats`: what serves this registration to the other processes; stopped with it.
    task: Option<Task>,
}

impl<T> Registration<T> {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Keeps `task` running for as long as this registration.
    pub(crate) fn serve_with(&mut self, task: Task) {
        self.task = Some(task);
    }
}

impl<T> Drop for Registration<T> {
    fn drop(&mut self) {
        let mut map = lock((self.which)(&self.hub));
        if map.get(&self.room).is_some_and(|(i, _, _)| *i == self.id) {
            map.remove(&self.room);
        }
        drop(map);
        let mut remote = lock(&self.hub.remote);
        if remote.get(&self.room).is_some_and(|(i, _)| *i == self.id) {
            remote.remove(&self.room);
        }
    }
}
