//! The switchboard of one process: what its connections share, and where each message between them goes. Per
//! room, the native agent serving the app connected there (its command inbox), whoever controls that agent
//! (where its events go), the MCP gateway that hosts join, and the relay's pairs; with `--nats`, the other
//! processes sharing the rooms.
//!
//! Each of these is kept by a module below, which knows none of the others: the hub's [`Rooms`], the relay's
//! [`Relay`], the [`Cluster`]. What joins them is here: a controller's command goes to the agent on this process
//! or on another one, an agent's events to the controllers here and elsewhere, and an app takes a room's slot
//! only where no other process holds it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cluster::Cluster;
use crate::control::{no_app, Envelope, Event};
use crate::edge::HostInput;
use crate::hub::{Registration, Rooms, Slot, Vacant};
use crate::relay::Relay;

#[derive(Default)]
pub(crate) struct Switchboard {
    /// Per room, the native agent serving the app connected there: where its commands go.
    agents: Arc<Rooms<Envelope>>,
    /// Per room, the controller of its agent: where the agent's events go.
    controllers: Arc<Rooms<Event>>,
    /// Per room, the MCP gateway that hosts joining through `/mcp-host` reach.
    mcp_gateways: Arc<Rooms<HostInput>>,
    pub(crate) relay: Arc<Relay>,
    /// With `--nats`: the other processes sharing the rooms.
    pub(crate) cluster: Option<Arc<Cluster>>,
    /// With `--nats`: per room, where this process's controller sends commands for an agent elsewhere.
    remote: Arc<Rooms<Envelope>>,
    next_id: AtomicU64,
}

impl Switchboard {
    /// With `--nats`, while the link to the NATS server is down: a sentence that says so.
    pub(crate) fn link_down(&self) -> Option<String> {
        self.cluster.as_ref().and_then(|c| c.link_down())
    }

    /// A switchboard whose rooms are shared with the other processes of `cluster`.
    pub(crate) fn clustered(cluster: Arc<Cluster>) -> Switchboard {
        Switchboard {
            cluster: Some(cluster),
            ..Switchboard::default()
        }
    }

    /// A number no other call gives in this process (the hosts joining an MCP gateway are told apart by it).
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Becomes the agent of `room` (the app that joined it is served by it), unless another app holds the room,
    /// here or (with `--nats`) on another process: the first app wins, unless the newcomer has the key the holder
    /// joined with (then it takes the holder's place, and the holder's connection ends). With `--nats`, the room
    /// is then served to the other processes before this returns, so a command sent once the app is told it
    /// joined finds it; an error is NATS not answering.
    pub(crate) async fn attach_agent(
        &self,
        room: &str,
        key: Option<&str>,
    ) -> Result<Result<Registration<Envelope>, Slot>, String> {
        if let Some(cluster) = &self.cluster {
            match cluster.claim(room, key).await? {
                Slot::Free | Slot::Retake => {}
                refused => return Ok(Err(refused)),
            }
        }
        let mut registration = match self.agents.try_attach(room, key) {
            Ok(r) => r,
            Err(refused) => return Ok(Err(refused)),
        };
        if let Some(cluster) = &self.cluster {
            let task = cluster
                .hold(
                    self.agents.clone(),
                    room.to_owned(),
                    key.map(str::to_owned),
                    registration.id(),
                )
                .await?;
            registration.serve_with(task);
        }
        Ok(Ok(registration))
    }

    /// Whether an app is connected to `room` on this process.
    pub(crate) fn has_agent(&self, room: &str) -> bool {
        self.agents.has(room)
    }

    /// Becomes the controller of `room`'s agent: its events arrive in the returned inbox. With `--nats`, also of
    /// an agent on another process, while none is here.
    pub(crate) fn attach_controller(&self, room: &str) -> Registration<Event> {
        let mut registration = self.controllers.register(room);
        if let Some(cluster) = &self.cluster {
            let (task, commands) =
                cluster.control(self.controllers.clone(), room.to_owned(), registration.id());
            // Its place among the remote rooms goes first, then the task carrying its commands.
            registration.serve_with((self.remote.hold(room, commands), task));
        }
        registration
    }

    /// Becomes the controller of `room`'s agent on this process only (with `--nats` too): the MCP gateway, whose
    /// requests go to the gateway of the process holding the app instead.
    pub(crate) fn attach_local_controller(&self, room: &str) -> Registration<Event> {
        self.controllers.register(room)
    }

    /// Becomes the MCP gateway of `room`: hosts that join it arrive in the returned inbox.
    pub(crate) fn attach_mcp_gateway(&self, room: &str) -> Registration<HostInput> {
        self.mcp_gateways.register(room)
    }

    /// Sends a joined host's input to the MCP gateway of `room`.
    pub(crate) fn to_mcp_gateway(&self, room: &str, input: HostInput) -> Result<(), Vacant> {
        self.mcp_gateways.send(room, input)
    }

    /// Sends an event to the controller of `room`, if there is one.
    pub(crate) fn emit(&self, room: &str, event: Event) {
        let _ = self.controllers.send(room, event);
    }

    /// Sends a command to the agent of `room` on this process.
    pub(crate) fn command(&self, room: &str, envelope: Envelope) -> Result<(), Vacant> {
        self.agents.send(room, envelope)
    }

    /// A command from a controller of `room`: to the agent (with `--nats`, the one on another process when
    /// none is here), or an `error` event back when no app is connected.
    pub(crate) fn command_or_error(&self, room: &str, envelope: Envelope) {
        let reference = envelope.reference.clone();
        let sent = if self.agents.has(room) {
            self.command(room, envelope).is_ok()
        } else {
            self.remote.send(room, envelope).is_ok()
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
