//! A sliding window of call outcomes (the circuit breaker's): the latest
//! `window` outcomes, each a failure or not, and how many of them failed.
//!
//! A window of at most 64 calls (the default is 10) is a word of bits, newest
//! in the lowest: adding an outcome is a shift, counting failures a popcount,
//! and a circuit costs no allocation. A longer window is a deque, as it was.

use std::collections::VecDeque;

/// The longest window kept as bits.
const BITS_MAX: u32 = u64::BITS;

/// The latest outcomes of a circuit's calls.
#[derive(Clone, Debug)]
pub(crate) enum Outcomes {
    /// Bit `i` is the outcome `i` calls before the newest (1: failed); `len`
    /// outcomes are held, at most the window.
    Bits { bits: u64, len: u32 },
    /// Oldest first.
    Deque(VecDeque<bool>),
}

impl Outcomes {
    /// An empty window for `window` calls (0 counts as 1).
    pub(crate) fn new(window: u32) -> Self {
        if window.max(1) <= BITS_MAX { Outcomes::Bits { bits: 0, len: 0 } } else { Outcomes::Deque(VecDeque::new()) }
    }

    /// Adds `failed` as the newest outcome and forgets those beyond the latest
    /// `window` (0 counts as 1; the same `window` as at [`Outcomes::new`]).
    pub(crate) fn push(&mut self, failed: bool, window: u32) {
        let window = window.max(1);
        match self {
            Outcomes::Bits { bits, len } => {
                assert!(window <= BITS_MAX, "a window of bits holds at most {BITS_MAX} outcomes");
                let mask = if window == BITS_MAX { u64::MAX } else { (1u64 << window) - 1 };
                *bits = ((*bits << 1) | u64::from(failed)) & mask;
                *len = (*len + 1).min(window);
            }
            Outcomes::Deque(outcomes) => {
                outcomes.push_back(failed);
                while outcomes.len() > window as usize {
                    outcomes.pop_front();
                }
            }
        }
    }

    /// How many outcomes the window holds.
    pub(crate) fn calls(&self) -> u64 {
        match self {
            Outcomes::Bits { len, .. } => u64::from(*len),
            Outcomes::Deque(outcomes) => outcomes.len() as u64,
        }
    }

    /// How many of them are failures.
    pub(crate) fn failures(&self) -> u64 {
        match self {
            Outcomes::Bits { bits, .. } => u64::from(bits.count_ones()),
            Outcomes::Deque(outcomes) => outcomes.iter().filter(|f| **f).count() as u64,
        }
    }

    /// Forgets every outcome.
    pub(crate) fn clear(&mut self) {
        match self {
            Outcomes::Bits { bits, len } => (*bits, *len) = (0, 0),
            Outcomes::Deque(outcomes) => outcomes.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The window as the breaker kept it before: a deque, trimmed after each push.
    fn deque_model(window: u32, ops: &[Option<bool>]) -> Vec<(u64, u64)> {
        let mut outcomes = VecDeque::new();
        let mut seen = Vec::new();
        for op in ops {
            match op {
                Some(failed) => {
                    outcomes.push_back(*failed);
                    while outcomes.len() > window.max(1) as usize {
                        outcomes.pop_front();
                    }
                }
                None => outcomes.clear(),
            }
            seen.push((outcomes.len() as u64, outcomes.iter().filter(|f| **f).count() as u64));
        }
        seen
    }

    proptest! {
        /// Bits or deque, the window counts calls and failures as the deque did,
        /// through pushes and clears, at every window size around the bits' limit.
        #[test]
        fn counts_as_the_deque_did(
            window in prop_oneof![0u32..6, 60u32..70, Just(1u32), Just(64u32), Just(65u32)],
            ops in proptest::collection::vec(prop_oneof![8 => any::<bool>().prop_map(Some), 1 => Just(None)], 0..300),
        ) {
            let mut outcomes = Outcomes::new(window);
            prop_assert_eq!(matches!(outcomes, Outcomes::Bits { .. }), window <= 64);
            let mut seen = Vec::new();
            for op in &ops {
                match op {
                    Some(failed) => outcomes.push(*failed, window),
                    None => outcomes.clear(),
                }
                seen.push((outcomes.calls(), outcomes.failures()));
            }
            prop_assert_eq!(seen, deque_model(window, &ops));
        }
    }
}
