//! An order's status over a trajectory: where it started and when it moved
//! on. An order only moves forward (processing, shipped, delivered), so its
//! history holds at most three entries, kept inline: a world made per
//! trajectory allocates none per order.

use agentsim_engine::TimeMs;

use super::config::OrderStatus;

/// The longest chain of statuses (processing, shipped, delivered).
const STATUSES_MAX: usize = 3;

/// (time, status) changes of one order, oldest first.
#[derive(Clone, Copy, Debug)]
pub(super) struct StatusHistory {
    entries: [(TimeMs, OrderStatus); STATUSES_MAX],
    len: u8,
}

impl StatusHistory {
    /// An order in `status` from time 0.
    pub(super) fn new(status: OrderStatus) -> Self {
        StatusHistory { entries: [(0, status); STATUSES_MAX], len: 1 }
    }

    /// The changes, oldest first.
    pub(super) fn entries(&self) -> &[(TimeMs, OrderStatus)] {
        &self.entries[..usize::from(self.len)]
    }

    /// The status at `at_ms`: the latest change at or before it (the default
    /// before the first, which is at time 0).
    pub(super) fn at(&self, at_ms: TimeMs) -> OrderStatus {
        self.entries().iter().rev().find(|(t, _)| *t <= at_ms).map(|(_, s)| *s).unwrap_or_default()
    }

    /// The order moved to `status` at `at_ms`. A history holds a chain of
    /// statuses, each the next of the one before, so it never overflows.
    pub(super) fn push(&mut self, at_ms: TimeMs, status: OrderStatus) {
        let len = usize::from(self.len);
        assert!(len < STATUSES_MAX, "an order moves at most {} times", STATUSES_MAX - 1);
        self.entries[len] = (at_ms, status);
        self.len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline history answers as the list it replaced, at every time.
    #[test]
    fn answers_as_a_list_of_changes() {
        for start in [OrderStatus::Processing, OrderStatus::Shipped, OrderStatus::Delivered] {
            for moves in [vec![], vec![5], vec![5, 5], vec![0, 7], vec![3, 900]] {
                let mut history = StatusHistory::new(start);
                let mut list = vec![(0, start)];
                let mut status = start;
                for at_ms in moves {
                    let Some(next) = status.next() else { break };
                    history.push(at_ms, next);
                    list.push((at_ms, next));
                    status = next;
                }
                assert_eq!(history.entries(), &list[..]);
                for at_ms in 0..1_000 {
                    let from_list = list.iter().rev().find(|(t, _)| *t <= at_ms).map(|(_, s)| *s).unwrap_or_default();
                    assert_eq!(history.at(at_ms), from_list, "{start:?} at {at_ms}");
                }
            }
        }
    }
}
