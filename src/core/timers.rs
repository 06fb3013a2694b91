//! Deadlines in time order: the next one is at the front, so `poll_timeout` does not look at every pending
//! call, and `handle_timeout` takes only the ones that are due.
//!
//! A vector kept sorted by time, then by order of scheduling, like the core's `StrMap`: deadlines are mostly
//! `now + t` for the same few `t`, so a new one usually goes at the back; taking one out of the middle moves
//! the rest, which for the few deadlines a connection has is cheaper (and far less code in the wasm) than a
//! tree or a ring buffer.

use std::cmp::Ordering;

/// A scheduled deadline, to unschedule it with [`Timers::cancel`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimerId {
    at: f64,
    seq: u64,
}

impl TimerId {
    pub fn at(&self) -> f64 {
        self.at
    }

    fn cmp(&self, other: &TimerId) -> Ordering {
        self.at.total_cmp(&other.at).then(self.seq.cmp(&other.seq))
    }
}

#[derive(Debug)]
pub struct Timers<K> {
    queue: Vec<(TimerId, K)>,
    next_seq: u64,
}

impl<K> Default for Timers<K> {
    fn default() -> Self {
        Timers::new()
    }
}

impl<K> Timers<K> {
    pub const fn new() -> Self {
        Timers {
            queue: Vec::new(),
            next_seq: 0,
        }
    }

    /// Schedules `key` for `at`. Deadlines at the same time come out in the order they were scheduled.
    pub fn schedule(&mut self, at: f64, key: K) -> TimerId {
        self.next_seq += 1;
        let id = TimerId {
            at,
            seq: self.next_seq,
        };
        let i = self
            .queue
            .binary_search_by(|(t, _)| t.cmp(&id))
            .unwrap_or_else(|i| i);
        self.queue.insert(i, (id, key));
        id
    }

    /// Unschedules a deadline; nothing happens if it already came out of [`Timers::pop_due`].
    pub fn cancel(&mut self, id: TimerId) -> Option<K> {
        let i = self.queue.binary_search_by(|(t, _)| t.cmp(&id)).ok()?;
        Some(self.queue.remove(i).1)
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<f64> {
        self.queue.first().map(|(t, _)| t.at)
    }

    /// Takes the earliest deadline if it is at or before `now`.
    pub fn pop_due(&mut self, now: f64) -> Option<K> {
        if self.queue.first()?.0.at.total_cmp(&now).is_gt() {
            return None;
        }
        Some(self.queue.remove(0).1)
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Forgets every deadline and frees the buffer.
    pub fn clear(&mut self) {
        self.queue = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_come_out_in_time_order_then_in_scheduling_order() {
        let mut t = Timers::new();
        t.schedule(30.0, "c");
        t.schedule(10.0, "a");
        t.schedule(20.0, "b1");
        t.schedule(20.0, "b2");
        assert_eq!(t.next(), Some(10.0));
        assert_eq!(t.pop_due(5.0), None);
        let mut due = Vec::new();
        while let Some(k) = t.pop_due(20.0) {
            due.push(k);
        }
        assert_eq!(due, ["a", "b1", "b2"]);
        assert_eq!(t.next(), Some(30.0));
    }

    #[test]
    fn a_cancelled_deadline_never_comes_out_and_a_spent_one_cancels_to_nothing() {
        let mut t = Timers::new();
        let a = t.schedule(10.0, "a");
        let b = t.schedule(10.0, "b");
        let c = t.schedule(5.0, "c");
        assert_eq!(t.cancel(b), Some("b"));
        assert_eq!(t.cancel(b), None);
        assert_eq!(t.pop_due(100.0), Some("c"));
        assert_eq!(t.cancel(c), None);
        assert_eq!(t.pop_due(100.0), Some("a"));
        assert_eq!(t.cancel(a), None);
        assert!(t.is_empty());
        assert_eq!(t.next(), None);
    }

    #[test]
    fn odd_times_order_totally_and_do_not_panic() {
        let mut t = Timers::new();
        t.schedule(f64::INFINITY, "inf");
        let nan = t.schedule(f64::NAN, "nan");
        t.schedule(-1.0, "neg");
        assert_eq!(t.pop_due(0.0), Some("neg"));
        assert_eq!(t.pop_due(1e300), None);
        assert_eq!(t.cancel(nan), Some("nan"));
        assert_eq!(t.len(), 1);
    }
}
