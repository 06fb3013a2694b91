//! `--nats URL`: processes given the same NATS server share their rooms. An app's WebSocket lives on one
//! process, and so does the native agent serving it (its protocol state ends with that socket); what crosses
//! processes is what a controller exchanges with that agent, as NATS messages on the room's subjects:
//!
//! - `abp.<room>.cmd`: a controller's command, as a request. The process holding the room's app answers `ok`
//!   once the agent has it; nobody answering is NATS's "no responders", which is "no app connected" at once.
//! - `abp.<room>.events`: the agent's events, published by its process for controllers elsewhere (those on the
//!   same process get them directly, and skip these by the `Abp-Node` header).
//! - `abp.<room>.alive`: the holder's heartbeat, every [`ALIVE_EVERY`]. A controller with calls pending that
//!   hears none for [`GONE_AFTER`] settles them `DISCONNECTED` (the holder's process was killed, or the NATS
//!   server went away) instead of waiting for answers that will not come.
//! - `abp.<room>.controller`: a controller of the room joined a process; an older one elsewhere is let go, as a
//!   newer controller replaces the older one on one process.
//! - `abp.<room>.hold`: an app asking to join the room elsewhere. The holder answers by the slot's rule (the
//!   first app wins; a key holder takes the room back), and on a take-back lets its app go.
//!
//! `<room>` is the room's name in hex behind an `r` (subjects cannot hold every character a room name can).
//! Messages are the control protocol's JSON, as on `/control`. One NATS connection per process.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use abp_wasm::core::error::{encode_error, ErrorCode};
use abp_wasm::core::trace::Trace;
use abp_wasm::core::AbpError;
use async_nats::{Client, HeaderMap, Message, RequestErrorKind, Subscriber};
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::control::{no_app, signal, Command, Envelope, Event};
use crate::hub::{lock, slot, Rooms, Slot, Task};
use crate::nats::{Link, ALIVE_EVERY, GONE_AFTER};
use crate::telemetry::{self, cancel_attributes, Span};

/// The header naming the process that published an event.
const NODE: &str = "Abp-Node";

pub(crate) struct Cluster {
    /// The connection to the NATS server, its subject prefix and how its URL may be shown.
    link: Link,
    /// This process, among those on the NATS server (random).
    node: String,
    /// The agents' events, published in the order they happened.
    events: UnboundedSender<(String, String)>,
    /// The calls of other processes' controllers running in this process's apps.
    origins: Origins,
}

/// Per room held here, the calls other processes made that have not settled yet: call id → the process that made
/// it. A call whose process stops saying `asking` is aborted in the app: nobody is left to take its result.
#[derive(Default)]
struct Origins(std::sync::Mutex<HashMap<String, HashMap<String, String>>>);

impl Origins {
    fn add(&self, room: &str, call_id: String, node: String) {
        lock(&self.0)
            .entry(room.to_owned())
            .or_default()
            .insert(call_id, node);
    }

    fn settled(&self, room: &str, call_id: &str) {
        let mut rooms = lock(&self.0);
        if let Some(calls) = rooms.get_mut(room) {
            calls.remove(call_id);
            if calls.is_empty() {
                rooms.remove(room);
            }
        }
    }

    /// Takes the calls of `room` whose process is not among those heard recently (`alive`).
    fn orphans(&self, room: &str, alive: impl Fn(&str) -> bool) -> Vec<String> {
        let mut rooms = lock(&self.0);
        let Some(calls) = rooms.get_mut(room) else {
            return Vec::new();
        };
        let orphans: Vec<String> = calls
            .iter()
            .filter(|(_, node)| !alive(node))
            .map(|(call, _)| call.clone())
            .collect();
        for call in &orphans {
            calls.remove(call);
        }
        orphans
    }

    fn forget(&self, room: &str) {
        lock(&self.0).remove(room);
    }
}

fn subject(prefix: &str, room: &str, what: &str) -> String {
    let mut s = String::with_capacity(prefix.len() + 4 + 2 * room.len() + what.len());
    s.push_str(prefix);
    s.push_str(".r");
    for b in room.bytes() {
        s.push_str(&format!("{b:02x}"));
    }
    s.push('.');
    s.push_str(what);
    s
}

impl Cluster {
    /// Connects to the NATS server of `--nats` and shares this process's rooms over it; `None` without `--nats`.
    pub(crate) async fn join(args: &crate::nats::NatsArgs) -> Result<Option<Arc<Cluster>>, String> {
        match args.connect("abp-peer".into()).await? {
            Some(link) => Cluster::start(link).map(Some),
            None => Ok(None),
        }
    }

    /// Shares this process's rooms over `link` (see [`crate::nats`] for how it was made).
    pub(crate) fn start(link: Link) -> Result<Arc<Cluster>, String> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)
            .map_err(|e| format!("the OS random number generator failed: {e}"))?;
        let node: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let (events, mut outbox) = unbounded_channel::<(String, String)>();
        let publisher = link.client.clone();
        let from = node.clone();
        tokio::spawn(async move {
            while let Some((subject, line)) = outbox.recv().await {
                let _ = publisher
                    .publish_with_headers(subject, node_header(&from), line.into())
                    .await;
            }
        });
        eprintln!(
            "abp-peer: sharing rooms over NATS at {} under {}.> (this process: {node})",
            link.shown, link.prefix
        );
        Ok(Arc::new(Cluster {
            link,
            node,
            events,
            origins: Origins::default(),
        }))
    }

    /// `room`'s subject `what`.
    fn subject(&self, room: &str, what: &str) -> String {
        subject(&self.link.prefix, room, what)
    }

    /// Process `node`'s inbox `what`.
    fn node_subject(&self, node: &str, what: &str) -> String {
        format!("{}.node.{node}.{what}", self.link.prefix)
    }

    /// Whether the link to the NATS server is down at this moment (what a host or controller is told then says so).
    pub(crate) fn link_down(&self) -> Option<String> {
        (!self.link.is_up()).then(|| {
            format!(
                "the link to the NATS server at {} is down, so an app on another abp-peer process cannot be \
                 reached; abp-peer is reconnecting",
                self.link.shown
            )
        })
    }

    /// Publishes an event of the agent of `room`, which lives on this process.
    pub(crate) fn publish_event(&self, room: &str, event: &Event) {
        if let Event::Settled { call_id, .. } = event {
            self.origins.settled(room, call_id);
        }
        let _ = self
            .events
            .send((self.subject(room, "events"), event.to_line()));
    }

    /// Asks whoever holds `room`'s app elsewhere whether an app with `key` may join: `Free` when nobody holds it
    /// (or its holder let it go for this key), else the refusal. An unreachable NATS server refuses too, since
    /// the room could be held where this process cannot see.
    pub(crate) async fn claim(&self, room: &str, key: Option<&str>) -> Result<Slot, String> {
        let ask = json!({ "key": key }).to_string();
        match self
            .link
            .client
            .request(self.subject(room, "hold"), ask.into())
            .await
        {
            Ok(answer) => Ok(match answer.payload.as_ref() {
                b"free" => Slot::Free,
                b"wrong-key" => Slot::WrongKey,
                _ => Slot::Taken,
            }),
            Err(e) if e.kind() == RequestErrorKind::NoResponders => Ok(Slot::Free),
            Err(e) => Err(format!("the NATS server did not answer ({e})")),
        }
    }

    /// Serves the room whose app just connected here (held in `agents` by `registration`) to the other
    /// processes: their commands reach the room's agent, holders-to-be are answered, and the room's heartbeat
    /// goes out. Subscribed before it returns, so a command sent once the app is told it joined finds it.
    pub(crate) async fn hold(
        self: &Arc<Self>,
        agents: Arc<Rooms<Envelope>>,
        room: String,
        key: Option<String>,
        registration: u64,
    ) -> Result<Task, String> {
        let fail = |e: &dyn std::fmt::Display| format!("NATS: {e}");
        let mut commands = self
            .link
            .client
            .subscribe(self.subject(&room, "cmd"))
            .await
            .map_err(|e| fail(&e))?;
        let mut asks = self
            .link
            .client
            .subscribe(self.subject(&room, "hold"))
            .await
            .map_err(|e| fail(&e))?;
        let mut asking = self
            .link
            .client
            .subscribe(self.subject(&room, "asking"))
            .await
            .map_err(|e| fail(&e))?;
        self.link.client.flush().await.map_err(|e| fail(&e))?;
        let client = self.link.client.clone();
        let alive = self.subject(&room, "alive");
        let node = self.node.clone();
        let cluster = self.clone();
        Ok(Task::spawn(async move {
            let mut beats = tokio::time::interval(ALIVE_EVERY);
            // When each process with calls here last said it is still waiting for them.
            let mut heard: HashMap<String, Instant> = HashMap::new();
            loop {
                tokio::select! {
                    Some(m) = commands.next() => {
                        let command = envelope(&m.payload);
                        if let (Some(Envelope { command: Command::Call { call_id: Some(id), .. }, .. }), Some(from)) =
                            (&command, sender(&m))
                        {
                            heard.insert(from.to_owned(), Instant::now());
                            cluster.origins.add(&room, id.clone(), from.to_owned());
                        }
                        let answer: &'static [u8] = match command.map(|e| agents.send(&room, e)) {
                            Some(Ok(())) => b"ok",
                            Some(Err(_)) => b"gone",
                            None => b"bad",
                        };
                        reply(&client, &m, answer).await;
                    }
                    Some(m) = asks.next() => {
                        let key_asked = serde_json::from_slice::<Value>(&m.payload)
                            .ok()
                            .and_then(|v| v.get("key").and_then(Value::as_str).map(str::to_owned));
                        let answer: &'static [u8] = match slot(true, key.as_deref(), key_asked.as_deref()) {
                            Slot::Retake => {
                                eprintln!("abp-peer: an app with the key of /agent/{room} joined on another process; this one's app goes");
                                agents.release(&room, registration);
                                b"free"
                            }
                            Slot::WrongKey => b"wrong-key",
                            _ => b"taken",
                        };
                        reply(&client, &m, answer).await;
                    }
                    Some(m) = asking.next() => {
                        if let Some(from) = sender(&m) {
                            heard.insert(from.to_owned(), Instant::now());
                        }
                    }
                    _ = beats.tick() => {
                        let _ = client.publish_with_headers(alive.clone(), node_header(&node), Vec::new().into()).await;
                        // The process that made a call was killed, or NATS is gone: nobody is left to take its
                        // result, so the app stops working on it.
                        heard.retain(|_, at| at.elapsed() <= GONE_AFTER);
                        for call_id in cluster.origins.orphans(&room, |n| heard.contains_key(n)) {
                            let abort = Command::Abort {
                                call_id,
                                reason: Some("the process that made this call is gone (or the link to NATS)".into()),
                                signal: Some(signal::PROCESS_GONE.into()),
                            };
                            let _ = agents.send(&room, Envelope { reference: Value::Null, command: abort });
                        }
                    }
                    else => break,
                }
            }
            cluster.origins.forget(&room);
        }))
    }

    /// Subscribes to `room`'s subject `what` (`abp.<room>.<what>`), in effect once it returns.
    pub(crate) async fn subscribe(&self, room: &str, what: &str) -> Result<Subscriber, String> {
        self.subscribed(self.subject(room, what)).await
    }

    /// Subscribes to `subject`, in effect once it returns (the NATS server has it).
    async fn subscribed(&self, subject: String) -> Result<Subscriber, String> {
        let s = self
            .link
            .client
            .subscribe(subject)
            .await
            .map_err(|e| format!("NATS: {e}"))?;
        self.link
            .client
            .flush()
            .await
            .map_err(|e| format!("NATS: {e}"))?;
        Ok(s)
    }

    /// Publishes on `room`'s subject `what`; false when NATS did not take it (gone, or `payload` over its
    /// largest message). One process's messages arrive in the order they were published.
    pub(crate) async fn publish(&self, room: &str, what: &str, payload: Vec<u8>) -> bool {
        self.link
            .client
            .publish(self.subject(room, what), payload.into())
            .await
            .is_ok()
    }

    /// Asks on `room`'s subject `what`: the first answer, or `None` when nobody listens there.
    pub(crate) async fn request(
        &self,
        room: &str,
        what: &str,
        payload: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, String> {
        match self
            .link
            .client
            .request(self.subject(room, what), payload.into())
            .await
        {
            Ok(m) => Ok(Some(m.payload.to_vec())),
            Err(e) if e.kind() == RequestErrorKind::NoResponders => Ok(None),
            Err(e) => Err(format!("the NATS server did not answer ({e})")),
        }
    }

    /// This process's name among those on the NATS server.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// Follows which process holds `room`'s app (for as long as the process runs).
    pub(crate) async fn follow_holder(&self, room: &str) -> Result<Arc<Holder>, String> {
        let mut beats = self
            .link
            .client
            .subscribe(self.subject(room, "alive"))
            .await
            .map_err(|e| format!("NATS: {e}"))?;
        let holder = Arc::new(Holder::default());
        let h = holder.clone();
        tokio::spawn(async move {
            while let Some(m) = beats.next().await {
                if let Some(node) = sender(&m) {
                    *lock(&h.seen) = Some((node.to_owned(), Instant::now()));
                }
            }
        });
        Ok(holder)
    }

    /// What other processes send this one under `what` (`abp.node.<this>.<what>`).
    pub(crate) async fn inbox(&self, what: &str) -> Result<Subscriber, String> {
        self.subscribed(self.node_subject(&self.node, what)).await
    }

    /// Asks process `node` (its inbox `what`), and waits for its answer (at most [`GONE_AFTER`]).
    pub(crate) async fn ask(
        &self,
        node: &str,
        what: &str,
        payload: String,
    ) -> Result<Vec<u8>, String> {
        match self
            .link
            .client
            .request(self.node_subject(node, what), payload.into())
            .await
        {
            Ok(m) => Ok(m.payload.to_vec()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Tells process `node` (its inbox `what`); what one process tells another arrives in order.
    pub(crate) async fn tell(&self, node: &str, what: &str, payload: String) {
        let _ = self
            .link
            .client
            .publish(self.node_subject(node, what), payload.into())
            .await;
    }

    /// Answers a message received in an inbox.
    pub(crate) async fn answer(&self, m: &Message, answer: &[u8]) {
        if let Some(to) = &m.reply {
            let _ = self
                .link
                .client
                .publish(to.clone(), answer.to_vec().into())
                .await;
        }
    }

    /// Carries the commands of a controller of `room` on this process to the room's agent wherever it is, and
    /// that agent's events back to `controllers` (to this process's controller of the room). Commands go in
    /// order. Controller `id` of this process is replaced when a newer one of the room joins another process, as
    /// on one process.
    pub(crate) fn control(
        self: &Arc<Self>,
        controllers: Arc<Rooms<Event>>,
        room: String,
        id: u64,
    ) -> (Task, UnboundedSender<Envelope>) {
        let (tx, commands) = unbounded_channel();
        let cluster = self.clone();
        (
            Task::spawn(cluster.relay_control(controllers, room, id, commands)),
            tx,
        )
    }

    async fn relay_control(
        self: Arc<Self>,
        controllers: Arc<Rooms<Event>>,
        room: String,
        id: u64,
        mut commands: UnboundedReceiver<Envelope>,
    ) {
        // Commands are published one after another without waiting for their answers (NATS keeps one
        // connection's messages in order, and the holder answers them in order); each answer comes to this
        // controller's own inbox, under the command's number.
        let inbox = self.link.client.new_inbox();
        let (mut events, mut alive, mut answers, mut others) =
            match self.follow_room(&room, &inbox).await {
                Ok(s) => s,
                Err(e) => {
                    let why = format!("NATS: cannot follow the room's agent: {e}");
                    let _ = controllers.send(&room, Event::error(None, why));
                    return;
                }
            };
        let _ = self.link.client.flush().await;
        // Controllers joining at once on two processes both hear each other: the later stamp (then the greater
        // process name) stays.
        let stamp = format!("{:020} {}", unix_nanos(), self.node);
        let _ = self
            .link
            .client
            .publish_with_headers(
                self.subject(&room, "controller"),
                node_header(&self.node),
                stamp.clone().into(),
            )
            .await;
        let mut c = Controlling {
            cluster: &self,
            controllers: &controllers,
            room: &room,
            inbox,
            unanswered: HashMap::new(),
            sent: 0,
            pending: HashMap::new(),
            given_up: HashSet::new(),
            heard: Instant::now(),
            next_call: 0,
            hops: HashMap::new(),
        };
        let mut watch = tokio::time::interval(ALIVE_EVERY);
        loop {
            tokio::select! {
                Some(envelope) = commands.recv() => c.command(envelope).await,
                Some(m) = answers.next() => c.answer(&m),
                Some(m) = events.next() => c.event(&m),
                Some(_) = alive.next() => c.heard = Instant::now(),
                Some(m) = others.next() => {
                    if sender(&m) != Some(self.node.as_str()) && m.payload.as_ref() > stamp.as_bytes() {
                        controllers.release(&room, id);
                    }
                }
                _ = watch.tick() => c.tick().await,
                else => break,
            }
        }
    }

    /// The room's subjects a controller follows: its agent's events, its holder's heartbeat, the answers to its
    /// commands (under `inbox`), and the other controllers.
    async fn follow_room(
        &self,
        room: &str,
        inbox: &str,
    ) -> Result<
        (
            async_nats::Subscriber,
            async_nats::Subscriber,
            async_nats::Subscriber,
            async_nats::Subscriber,
        ),
        async_nats::SubscribeError,
    > {
        let client = &self.link.client;
        let events = client.subscribe(self.subject(room, "events")).await?;
        let alive = client.subscribe(self.subject(room, "alive")).await?;
        let answers = client.subscribe(format!("{inbox}.*")).await?;
        let controllers = client.subscribe(self.subject(room, "controller")).await?;
        Ok((events, alive, answers, controllers))
    }
}

/// A controller of a room whose agent is on another process: what it sent, and what it still waits for.
struct Controlling<'a> {
    cluster: &'a Cluster,
    /// This process's controllers, among them the one of `room`.
    controllers: &'a Rooms<Event>,
    room: &'a str,
    /// Where the answers to its commands come (`<inbox>.<number>`).
    inbox: String,
    /// Commands sent and not answered yet, by number.
    unanswered: HashMap<u64, Sent>,
    sent: u64,
    /// The calls sent to another process's agent and not settled yet: callId → the command's `ref`.
    pending: HashMap<String, Value>,
    /// Those settled here when their agent was lost: should it answer after all, the controller has its answer.
    given_up: HashSet<String>,
    /// When the holder was last heard from.
    heard: Instant,
    next_call: u64,
    /// callId → the span of its hop across NATS (only with `--otlp`).
    hops: HashMap<String, Span>,
}

impl Controlling<'_> {
    /// An event for this process's controller of the room, if it has one.
    fn emit(&self, event: Event) {
        let _ = self.controllers.send(self.room, event);
    }

    /// A command of the controller's, to the holder.
    async fn command(&mut self, mut envelope: Envelope) {
        // A call's id is ours to give when it has none, so that it can be settled here if its agent is lost (ids
        // the agent gives would not be known until it answered).
        let mut call = None;
        let mut hop = None;
        match &mut envelope.command {
            Command::Call {
                call_id,
                capability,
                traceparent,
                tracestate,
                ..
            } => {
                let id = call_id.get_or_insert_with(|| {
                    self.next_call += 1;
                    format!("{}-{}", self.cluster.node, self.next_call)
                });
                call = Some(id.clone());
                // The hop across NATS is a span of its own, and the next hop's parent.
                let caller = Trace::read(traceparent.as_deref(), tracestate.as_deref());
                hop = telemetry::call_hop(
                    capability.as_deref().unwrap_or_default(),
                    id,
                    self.room,
                    "nats",
                    caller.as_ref(),
                );
                if let Some(onward) = telemetry::onward(hop.as_ref(), caller.as_ref()) {
                    *traceparent = Some(onward.traceparent);
                    *tracestate = onward.tracestate;
                }
            }
            Command::Abort {
                call_id,
                reason,
                signal,
            }
            | Command::Cancel {
                call_id,
                reason,
                signal,
            } => {
                if let Some(span) = self.hops.get_mut(call_id.as_str()) {
                    let signal = signal.as_deref().unwrap_or("cancel");
                    span.event("cancel", cancel_attributes(signal, reason.as_deref()), None);
                }
            }
            _ => {}
        }
        let reference = envelope.reference.clone();
        let line = json!({ "ref": envelope.reference, "command": envelope.command }).to_string();
        self.sent += 1;
        let published = self
            .cluster
            .link
            .client
            .publish_with_reply_and_headers(
                self.cluster.subject(self.room, "cmd"),
                format!("{}.{}", self.inbox, self.sent),
                node_header(&self.cluster.node),
                line.into(),
            )
            .await;
        let command = Sent {
            reference,
            call,
            at: Instant::now(),
        };
        match published {
            Ok(()) => {
                // Counted as pending from now (its settlement may come before the holder's `ok`); the holder has
                // a heartbeat's time to be heard from.
                if let (Some(id), Some(span)) = (&command.call, hop) {
                    self.hops.insert(id.clone(), span);
                }
                if let Some(id) = &command.call {
                    if self.pending.is_empty() {
                        self.heard = Instant::now();
                    }
                    self.pending.insert(id.clone(), command.reference.clone());
                }
                self.unanswered.insert(self.sent, command);
            }
            Err(e) => {
                if let Some(span) = hop {
                    end_lost(span, "NATS did not take the call");
                }
                undelivered(self.controllers, self.room, command, &mut self.given_up, &e)
            }
        }
    }

    /// The holder's answer to a command: `ok`, or none (no process holds the app, or its agent has just gone).
    fn answer(&mut self, m: &Message) {
        let number = m
            .subject
            .rsplit('.')
            .next()
            .and_then(|n| n.parse::<u64>().ok());
        let Some(command) = number.and_then(|n| self.unanswered.remove(&n)) else {
            return;
        };
        if m.status.is_none() && m.payload.as_ref() == b"ok" {
            self.heard = Instant::now();
            return;
        }
        if let Some(id) = &command.call {
            self.pending.remove(id);
            if let Some(span) = self.hops.remove(id) {
                end_lost(span, "no process holds the app");
            }
        }
        self.emit(no_app(self.room, command.reference));
    }

    /// An event of the room's agent, from the process holding it.
    fn event(&mut self, m: &Message) {
        if sender(m) == Some(self.cluster.node.as_str()) {
            return;
        }
        self.heard = Instant::now();
        let Ok(event) = serde_json::from_slice::<Event>(&m.payload) else {
            return;
        };
        if let Event::Settled {
            call_id, response, ..
        } = &event
        {
            if self.given_up.remove(call_id) {
                return;
            }
            self.pending.remove(call_id);
            if let Some(span) = self.hops.remove(call_id) {
                end_nats_hop(span, response);
            }
        }
        self.emit(event);
    }

    /// Every [`ALIVE_EVERY`]: says it still waits (the holder aborts the calls of a process it stops hearing this
    /// from), and settles as lost the commands NATS did not answer for and the calls of a holder gone silent.
    async fn tick(&mut self) {
        if !self.pending.is_empty() {
            let _ = self
                .cluster
                .link
                .client
                .publish_with_headers(
                    self.cluster.subject(self.room, "asking"),
                    node_header(&self.cluster.node),
                    Vec::new().into(),
                )
                .await;
        }
        // Commands NATS did not answer for: they may have reached the app's process before NATS failed.
        let late: Vec<u64> = self
            .unanswered
            .iter()
            .filter(|(_, c)| c.at.elapsed() > GONE_AFTER)
            .map(|(n, _)| *n)
            .collect();
        for n in late {
            if let Some(command) = self.unanswered.remove(&n) {
                if let Some(id) = &command.call {
                    self.pending.remove(id);
                    if let Some(span) = self.hops.remove(id) {
                        end_lost(span, "no answer from NATS");
                    }
                }
                let why = self
                    .cluster
                    .link_down()
                    .unwrap_or_else(|| "no answer from NATS".into());
                undelivered(
                    self.controllers,
                    self.room,
                    command,
                    &mut self.given_up,
                    &why,
                );
            }
        }
        if !self.pending.is_empty() && self.heard.elapsed() > GONE_AFTER {
            let why = match self.cluster.link_down() {
                Some(down) => format!("The call's result cannot come back: {down}"),
                None => {
                    "The process holding the app stopped answering before the call settled".into()
                }
            };
            for (call_id, reference) in self.pending.drain() {
                if let Some(span) = self.hops.remove(&call_id) {
                    end_lost(span, &why);
                }
                self.given_up.insert(call_id.clone());
                let _ = self
                    .controllers
                    .send(self.room, lost(reference, call_id, &why));
            }
            self.emit(Event::Disconnected);
        }
    }
}

fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A controller's command on its way to the agent of another process.
struct Sent {
    reference: Value,
    /// A call's id.
    call: Option<String>,
    at: Instant,
}

/// Ends a NATS hop's span as its call settled at the other process.
fn end_nats_hop(mut span: Span, response: &Value) {
    span.settled(response);
    span.end(None);
}

/// Ends a NATS hop's span whose call was lost on the way: the process holding the app (or NATS) went.
fn end_lost(mut span: Span, why: &str) {
    span.event(
        "cancel",
        cancel_attributes(signal::PROCESS_GONE, Some(why)),
        None,
    );
    span.fail("DISCONNECTED".into(), why.to_owned());
    span.end(None);
}

/// A command NATS did not confirm: it may have reached the app's process, so a call is settled as lost here (and
/// its answer dropped should it come); anything else is an error.
fn undelivered(
    controllers: &Rooms<Event>,
    room: &str,
    command: Sent,
    given_up: &mut HashSet<String>,
    why: &dyn std::fmt::Display,
) {
    match command.call {
        Some(call_id) => {
            given_up.insert(call_id.clone());
            let why = format!("NATS did not confirm the call reached the app's process ({why})");
            let _ = controllers.send(room, lost(command.reference, call_id, &why));
        }
        None => {
            let why = format!("NATS: the command was not delivered ({why})");
            let _ = controllers.send(room, Event::error(Some(command.reference), why));
        }
    }
}

fn node_header(node: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(NODE, node);
    headers
}

/// The process that published `m` (its `Abp-Node` header).
fn sender(m: &Message) -> Option<&str> {
    m.headers
        .as_ref()
        .and_then(|h| h.get(NODE))
        .map(|n| n.as_str())
}

/// Which process holds a room's app, as its heartbeat says.
#[derive(Default)]
pub(crate) struct Holder {
    seen: std::sync::Mutex<Option<(String, Instant)>>,
}

impl Holder {
    /// The process holding the app, if it is another one and was heard within [`GONE_AFTER`].
    pub(crate) fn elsewhere(&self, here: &str) -> Option<String> {
        let seen = lock(&self.seen);
        seen.as_ref()
            .filter(|(node, at)| node != here && at.elapsed() <= GONE_AFTER)
            .map(|(node, _)| node.clone())
    }

    /// Whether `node` still holds the app: heard within [`GONE_AFTER`], and no other process since.
    pub(crate) fn holds(&self, node: &str) -> bool {
        let seen = lock(&self.seen);
        seen.as_ref()
            .is_some_and(|(n, at)| n == node && at.elapsed() <= GONE_AFTER)
    }
}

/// A call settled `DISCONNECTED` here, because its agent on another process was lost.
fn lost(reference: Value, call_id: String, why: &str) -> Event {
    let error = AbpError::<Value>::new(ErrorCode::Disconnected, why);
    let response = json!({ "success": false, "error": encode_error(error), "callId": call_id });
    Event::Settled {
        reference,
        call_id,
        response,
    }
}

/// A command as it travels: `{"ref", "command"}`.
fn envelope(payload: &[u8]) -> Option<Envelope> {
    let v: Value = serde_json::from_slice(payload).ok()?;
    let command = serde_json::from_value(v.get("command")?.clone()).ok()?;
    Some(Envelope {
        reference: v.get("ref").cloned().unwrap_or(Value::Null),
        command,
    })
}

async fn reply(client: &Client, m: &Message, answer: &'static [u8]) {
    if let Some(to) = &m.reply {
        let _ = client.publish(to.clone(), answer.into()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_room_name_makes_a_subject() {
        assert_eq!(subject("abp", "", "cmd"), "abp.r.cmd");
        assert_eq!(
            subject("abp", "a.b *>", "events"),
            "abp.r612e62202a3e.events"
        );
        assert_eq!(subject("team.abp", "a", "cmd"), "team.abp.r61.cmd");
    }

    #[test]
    fn a_command_survives_the_trip() {
        let line = json!({ "ref": 7, "command": { "op": "call", "capability": "echo", "params": { "x": 1 },
            "callId": "n-1", "progress": true } })
        .to_string();
        let e = envelope(line.as_bytes()).expect("a command");
        assert_eq!(e.reference, json!(7));
        let back = json!({ "ref": e.reference, "command": e.command });
        assert_eq!(back["command"]["op"], "call");
        assert_eq!(back["command"]["callId"], "n-1");
        assert_eq!(back["command"]["params"], json!({ "x": 1 }));
        assert!(envelope(b"{\"ref\":1,\"command\":{\"op\":\"dance\"}}").is_none());
    }
}
