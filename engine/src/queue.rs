//! The event queue: a min-heap ordered by (virtual time, sequence number).
//!
//! The sequence number is assigned at push time, so two events at the same virtual
//! time pop in the order they were scheduled. That tie-break is what makes the loop
//! deterministic without comparing event payloads.
//!
//! The heap orders small keys (time, sequence, slot); the events themselves wait
//! in a [`Slab`]. An event is moved twice (into its slot and out), never
//! shuffled up and down the heap. (The simulator keeps its events small too:
//! a tool result or an action waits in a slab of its own, its event carries
//! the slot.)

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

/// The buffer of an [`EventQueue`]'s heap of keys, empty, kept between queues.
#[derive(Default)]
pub(crate) struct HeapBuffer(Vec<Entry>);

impl HeapBuffer {
    /// Whether it holds no key (it never does between queues).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Values waiting by slot number: a value is moved in once and out once, and
/// what refers to it carries a 4-byte slot instead. Free slots are reused
/// before the slab grows, so a run's steady state allocates nothing here.
pub struct Slab<T> {
    /// Values by slot; `None` for a free slot.
    slots: Vec<Option<T>>,
    /// Free slots.
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self { slots: Vec::new(), free: Vec::new() }
    }
}

impl<T> Slab<T> {
    /// An empty slab with room for `capacity` values.
    pub fn with_capacity(capacity: usize) -> Self {
        Self { slots: Vec::with_capacity(capacity), free: Vec::new() }
    }

    /// Puts `value` in a free slot; returns the slot.
    pub fn insert(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                let place = &mut self.slots[slot as usize];
                assert!(place.is_none(), "a free slot holds no value");
                *place = Some(value);
                slot
            }
            None => {
                self.slots.push(Some(value));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 values waiting")
            }
        }
    }

    /// Drops every value waiting and frees every slot, keeping the capacity.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
    }

    /// Takes the value out of `slot`, which becomes free. Panics on a free
    /// slot: a slot is taken once.
    pub fn take(&mut self, slot: u32) -> T {
        let value = self.slots[slot as usize].take().expect("a slot is taken once, after it was filled");
        self.free.push(slot);
        value
    }

    /// Values waiting.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// True when no value waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A queue of events on the virtual clock, popped in (time, sequence) order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry>,
    /// Pending events by slot.
    events: Slab<E>,
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
        Self { heap: BinaryHeap::with_capacity(64), events: Slab::with_capacity(64), next_seq: 0 }
    }

    /// An empty queue whose heap of keys is `heap` (its capacity kept from an
    /// earlier queue, see [`EventQueue::into_heap`]).
    pub(crate) fn with_heap(heap: HeapBuffer) -> Self {
        assert!(heap.is_empty(), "a queue starts empty");
        Self { heap: BinaryHeap::from(heap.0), events: Slab::with_capacity(16), next_seq: 0 }
    }

    /// Drops the events still waiting and gives back the heap's buffer, empty.
    pub(crate) fn into_heap(self) -> HeapBuffer {
        let mut keys = self.heap.into_vec();
        keys.clear();
        HeapBuffer(keys)
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
        let slot = self.events.insert(event);
        self.heap.push(Entry { at_ms, rank, seq, slot });
        assert_eq!(self.heap.len(), self.events.len(), "every event waiting is on the heap");
        seq
    }

    /// Removes and returns the earliest event with its time and sequence number.
    pub fn pop(&mut self) -> Option<(TimeMs, u64, E)> {
        let entry = self.heap.pop()?;
        assert!(entry.seq < self.next_seq, "a popped event was pushed");
        let event = self.events.take(entry.slot);
        assert_eq!(self.heap.len(), self.events.len(), "every event waiting is on the heap");
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
    fn a_slab_reuses_free_slots_and_gives_back_what_each_holds() {
        let mut slab = Slab::with_capacity(1);
        let (a, b) = (slab.insert("a"), slab.insert("b"));
        assert_eq!((a, b, slab.len()), (0, 1, 2));
        assert_eq!(slab.take(a), "a");
        assert_eq!(slab.len(), 1);
        // The freed slot is reused before the slab grows.
        assert_eq!(slab.insert("c"), a);
        assert_eq!((slab.take(b), slab.take(a)), ("b", "c"));
        assert!(slab.is_empty());
    }

    #[test]
    #[should_panic(expected = "a slot is taken once")]
    fn a_slot_is_taken_once() {
        let mut slab = Slab::default();
        let slot = slab.insert(1);
        slab.take(slot);
        slab.take(slot);
    }

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
