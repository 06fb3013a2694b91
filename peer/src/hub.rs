//! The ground floor of the peer: rooms by name, each held by one registration whose inbox receives what is sent
//! to the room. [`Rooms`] is generic over what it carries and knows none of its users; a process keeps one for
//! each kind of connection (the agents' commands, the controllers' events, …) and puts them together above.
//!
//! A registration is a handle: dropping it unregisters, unless a newer one for the same room has replaced it.
//! Replacing one drops the old inbox's sender, so the replaced connection sees its inbox close and ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

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

/// Nobody holds the room, or its holder has stopped reading its inbox.
#[derive(Debug)]
pub(crate) struct Vacant;

/// Rooms by name, each held by at most one registration: what is sent to a room goes to its holder's inbox.
pub(crate) struct Rooms<T> {
    held: Mutex<HashMap<String, Holder<T>>>,
    next_id: AtomicU64,
}

/// A room's holder: the number of its registration (so that one only removes its own entry), its inbox, and
/// for an app's slot the room key it holds the slot with.
struct Holder<T> {
    id: u64,
    inbox: UnboundedSender<T>,
    key: Option<String>,
}

impl<T> Default for Rooms<T> {
    fn default() -> Self {
        Rooms {
            held: Mutex::default(),
            next_id: AtomicU64::new(0),
        }
    }
}

impl<T> Rooms<T> {
    /// Holds `room` from now on, in the place of its holder (whose inbox closes, so its connection ends).
    pub(crate) fn register(self: &Arc<Self>, room: &str) -> Registration<T> {
        let (tx, inbox) = unbounded_channel();
        let id = self.put(&mut lock(&self.held), room, tx, None);
        self.registration(room, id, inbox)
    }

    /// Holds `room`'s app slot, unless another app holds it: the first app wins, unless the newcomer has the key
    /// the holder joined with (then it takes the holder's place, and the holder's connection ends).
    pub(crate) fn try_attach(
        self: &Arc<Self>,
        room: &str,
        key: Option<&str>,
    ) -> Result<Registration<T>, Slot> {
        let mut held = lock(&self.held);
        if let Some(holder) = held.get(room).filter(|h| !h.inbox.is_closed()) {
            match slot(true, holder.key.as_deref(), key) {
                Slot::Free | Slot::Retake => {}
                refused => return Err(refused),
            }
        }
        let (tx, inbox) = unbounded_channel();
        let id = self.put(&mut held, room, tx, key);
        drop(held);
        Ok(self.registration(room, id, inbox))
    }

    /// Puts `inbox` in `room`'s place, instead of its holder: what is sent to the room goes there until the
    /// returned handle is dropped, or a newer holder takes the room.
    pub(crate) fn hold(self: &Arc<Self>, room: &str, inbox: UnboundedSender<T>) -> Held<T> {
        let id = self.put(&mut lock(&self.held), room, inbox, None);
        Held {
            rooms: self.clone(),
            room: room.to_owned(),
            id,
        }
    }

    /// Sends `message` to whoever holds `room`.
    pub(crate) fn send(&self, room: &str, message: T) -> Result<(), Vacant> {
        let held = lock(&self.held);
        let holder = held.get(room).ok_or(Vacant)?;
        holder.inbox.send(message).map_err(|_| Vacant)
    }

    /// Whether someone holds `room` and still reads its inbox.
    pub(crate) fn has(&self, room: &str) -> bool {
        lock(&self.held)
            .get(room)
            .is_some_and(|h| !h.inbox.is_closed())
    }

    /// Lets `room`'s holder go, if registration `id` still is it (a newer one may have taken the room): its
    /// inbox closes, and its connection ends.
    pub(crate) fn release(&self, room: &str, id: u64) {
        let mut held = lock(&self.held);
        if held.get(room).is_some_and(|h| h.id == id) {
            held.remove(room);
        }
    }

    /// Makes `inbox` (with `key`) the holder of `room` in `held`, in the place of the one before (whose inbox
    /// closes with its sender dropped); its number, so that it only ever removes its own entry.
    fn put(
        &self,
        held: &mut HashMap<String, Holder<T>>,
        room: &str,
        inbox: UnboundedSender<T>,
        key: Option<&str>,
    ) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let key = key.map(str::to_owned);
        held.insert(room.to_owned(), Holder { id, inbox, key });
        id
    }

    fn registration(
        self: &Arc<Self>,
        room: &str,
        id: u64,
        inbox: UnboundedReceiver<T>,
    ) -> Registration<T> {
        Registration {
            rooms: self.clone(),
            room: room.to_owned(),
            id,
            inbox,
            serving: None,
        }
    }
}

/// A room held in [`Rooms`]: given back when this is dropped, unless a newer holder has taken it since.
#[must_use = "dropping it gives the room back at once"]
pub(crate) struct Held<T> {
    rooms: Arc<Rooms<T>>,
    room: String,
    id: u64,
}

impl<T> Drop for Held<T> {
    fn drop(&mut self) {
        self.rooms.release(&self.room, self.id);
    }
}

/// A room held with its inbox; given back when dropped (if still its own). Its `Drop` also keeps it whole: a
/// task that reads its inbox takes the registration with it, not the inbox alone.
#[must_use = "dropping the registration unregisters it at once"]
pub(crate) struct Registration<T> {
    rooms: Arc<Rooms<T>>,
    room: String,
    id: u64,
    pub(crate) inbox: UnboundedReceiver<T>,
    /// What serves this registration elsewhere (to the other processes of a cluster); dropped after it.
    serving: Option<Box<dyn Send + Sync>>,
}

impl<T> Registration<T> {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Keeps `serving` (a [`Task`], say) for as long as this registration, and drops it with it.
    pub(crate) fn serve_with(&mut self, serving: impl Send + Sync + 'static) {
        self.serving = Some(Box::new(serving));
    }
}

impl<T> Drop for Registration<T> {
    fn drop(&mut self) {
        self.rooms.release(&self.room, self.id);
    }
}

/// A task that ends when this is dropped (with the registration or the room that holds it).
pub(crate) struct Task(JoinHandle<()>);

impl Task {
    pub(crate) fn spawn(work: impl std::future::Future<Output = ()> + Send + 'static) -> Task {
        Task(tokio::spawn(work))
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}
