//! Deadlines in time order: the next one is at the front, so `poll_timeout` does not look at every pending
//! call, and `handle_timeout` takes only the ones that are due.
//!
//! A double-ended queue kept sorted by time, then by order of scheduling. Deadlines are mostly `now + t` for
//! the same few `t`, so a new one usually goes at the back, and calls mostly end in the order they started, so
//! the one removed is usually at the front: both ends cost nothing, and the middle costs a move of the shorter
//! side, as the core's `StrMap` does.

use std::cmp::Ordering;
use std::collections::VecDeque;

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
    queue: VecDeque<(TimerId, K)>,
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
            queue: VecDeque::new(),
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
        let at_back = self
            .queue
            .back()
            .is_none_or(|(last, _)| last.cmp(&id).is_lt());
        if at_back {
            self.queue.push_back((id, key));
        } else {
            let i = self
                .queue
                .binary_search_by(|(t, _)| t.cmp(&id))
                .unwrap_or_else(|i| i);
            self.queue.insert(i, (id, key));
        }
        id
    }

    /// Unschedules a deadline; nothing happens if it already came out of [`Timers::pop_due`].
    pub fn cancel(&mut self, id: TimerId) -> Option<K> {
        let i = self.queue.binary_search_by(|(t, _)| t.cmp(&id)).ok()?;
        self.queue.remove(i).map(|(_, k)| k)
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<f64> {
        self.queue.front().map(|(t, _)| t.at)
    }

    /// Takes the earliest deadline if it is at or before `now`.
    pub fn pop_due(&mut self, now: f64) -> Option<K> {
        if self.queue.front()?.0.at.total_cmp(&now).is_gt() {
            return None;
        }
        self.queue.pop_front().map(|(_, k)| k)
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Forgets every deadline and frees the buffer.
    pub fn clear(&mut self) {
        self.queue = VecDeque::new();
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
