//! The buffers a thread's runs hand on: a run takes them when it starts and
//! gives them back, emptied, when it ends, so that a sweep's steady state
//! does not allocate and free the same buffers once per trajectory.
//!
//! Only capacity crosses from one run to the next, never content: every
//! buffer is asserted empty when it is given back and when it is taken, so
//! what a run computes cannot depend on the runs before it on its thread.

use std::cell::RefCell;

use crate::agent::Action;
use crate::call::ToolResult;
use crate::queue::{HeapBuffer, Slab};
use crate::runtime::ToolStates;
use crate::time::TimeMs;

/// The buffers of one run, between runs.
pub(super) struct Spare {
    /// The event queue's heap of keys.
    pub heap: HeapBuffer,
    /// Tool results on their way.
    pub results: Slab<ToolResult>,
    /// Actions waiting for the think time to pass.
    pub actions: Slab<(Action, Option<TimeMs>)>,
    /// The digest's batch of encoded events.
    pub digest_batch: Vec<u8>,
    /// The tool runtime's state per tool.
    pub tool_states: ToolStates,
}

impl Spare {
    fn assert_empty(&self) {
        assert!(
            self.heap.is_empty()
                && self.results.is_empty()
                && self.actions.is_empty()
                && self.digest_batch.is_empty()
                && self.tool_states.is_empty(),
            "only empty buffers pass from one run to the next"
        );
    }
}

thread_local! {
    static SPARE: RefCell<Option<Spare>> = const { RefCell::new(None) };
}

/// The buffers the thread's last run gave back, or new ones.
pub(super) fn take() -> Spare {
    let spare = SPARE.with(|cell| cell.borrow_mut().take()).unwrap_or_else(|| Spare {
        heap: HeapBuffer::default(),
        results: Slab::with_capacity(4),
        actions: Slab::with_capacity(4),
        digest_batch: Vec::new(),
        tool_states: ToolStates::default(),
    });
    spare.assert_empty();
    spare
}

/// Gives the buffers back for the thread's next run.
pub(super) fn give(spare: Spare) {
    spare.assert_empty();
    SPARE.with(|cell| *cell.borrow_mut() = Some(spare));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_given_back_are_taken_again_with_their_capacity() {
        let mut spare = take();
        spare.digest_batch.reserve(1 << 12);
        let capacity = spare.digest_batch.capacity();
        give(spare);
        assert_eq!(take().digest_batch.capacity(), capacity);
        // Taken and not given back: the next run starts with new buffers.
        assert_eq!(take().digest_batch.capacity(), 0);
    }

    #[test]
    #[should_panic(expected = "only empty buffers")]
    fn a_buffer_with_content_is_refused() {
        let mut spare = take();
        spare.digest_batch.push(1);
        give(spare);
    }
}
