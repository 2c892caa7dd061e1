//! The event queue: a min-heap ordered by (virtual time, sequence number).
//!
//! The sequence number is assigned at push time, so two events at the same virtual
//! time pop in the order they were scheduled. That tie-break is what makes the loop
//! deterministic without comparing event payloads.
//!
//! The heap orders small keys (time, sequence, slot); the events themselves wait
//! in a slab of slots. An event is moved twice (into its slot and out), never
//! shuffled up and down the heap: the simulator's events carry whole tool
//! results, more than a hundred bytes each.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::TimeMs;

struct Entry {
    at_ms: TimeMs,
    /// Among events at the same time, lower ranks pop first (0 unless the run
    /// explores interleavings: see `EventQueue::push_ranked`).
    rank: u32,
    seq: u64,
    /// Where the event waits in the slab.
    slot: u32,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.at_ms == other.at_ms && self.rank == other.rank && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
        (other.at_ms, other.rank, other.seq).cmp(&(self.at_ms, self.rank, self.seq))
    }
}

/// A queue of events on the virtual clock, popped in (time, sequence) order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry>,
    /// Pending events by slot; `None` for a free slot.
    slots: Vec<Option<E>>,
    /// Free slots, reused before the slab grows.
    free: Vec<u32>,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self { heap: BinaryHeap::with_capacity(64), slots: Vec::with_capacity(64), free: Vec::new(), next_seq: 0 }
    }

    /// Schedules `event` at `at_ms`; returns its sequence number.
    pub fn push(&mut self, at_ms: TimeMs, event: E) -> u64 {
        self.push_ranked(at_ms, 0, event)
    }

    /// Schedules `event` at `at_ms` with `rank`: among events at the same time,
    /// lower ranks pop first, then the order of scheduling. A run that
    /// explores interleavings draws the ranks; every other run ranks all 0.
    pub fn push_ranked(&mut self, at_ms: TimeMs, rank: u32, event: E) -> u64 {
        let seq = self.next_seq;
        // Sequence numbers strictly increase: the tie-break of equal times.
        self.next_seq = seq.checked_add(1).expect("sequence numbers increase without wrapping");
        let slot = match self.free.pop() {
            Some(slot) => {
                assert!(self.slots[slot as usize].is_none(), "a free slot holds no event");
                self.slots[slot as usize] = Some(event);
                slot
            }
            None => {
                self.slots.push(Some(event));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 pending events")
            }
        };
        self.heap.push(Entry { at_ms, rank, seq, slot });
        assert_eq!(self.heap.len() + self.free.len(), self.slots.len(), "every slot is pending or free");
        seq
    }

    /// Removes and returns the earliest event with its time and sequence number.
    pub fn pop(&mut self) -> Option<(TimeMs, u64, E)> {
        let entry = self.heap.pop()?;
        assert!(entry.seq < self.next_seq, "a popped event was pushed");
        let event = self.slots[entry.slot as usize].take().expect("a queued slot holds its event");
        self.free.push(entry.slot);
        assert_eq!(self.heap.len() + self.free.len(), self.slots.len(), "every slot is pending or free");
        Some((entry.at_ms, entry.seq, event))
    }

    /// The time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<TimeMs> {
        self.heap.peek().map(|e| e.at_ms)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_push_order() {
        let mut q = EventQueue::new();
        q.push(20, "c");
        q.push(10, "a");
        q.push(10, "b");
        q.push(5, "first");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(t, _, e)| (t, e)).collect();
        assert_eq!(order, vec![(5, "first"), (10, "a"), (10, "b"), (20, "c")]);
    }

    #[test]
    fn ranks_order_events_at_the_same_time_only() {
        let mut q = EventQueue::new();
        q.push_ranked(10, 7, "late rank");
        q.push_ranked(10, 2, "early rank");
        q.push_ranked(5, 9, "earlier time");
        q.push_ranked(10, 2, "early rank, pushed later");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, _, e)| e).collect();
        assert_eq!(order, vec!["earlier time", "early rank", "early rank, pushed later", "late rank"]);
    }
}
