//! The 10-call model as a minimal discrete-event loop: a `BinaryHeap` of
//! (time, sequence, event) and `ChaCha8Rng` draws, no engine. It does what
//! decides the outcome and nothing else (no tool arguments, no trajectory, no
//! digest): the practical limit of a Rust simulation of this model.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use agentsim::engine::TimeMs;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::Tally;
use crate::model::{ATTEMPTS_MAX, CALLS, LATENCY_MS, P_503, THINK_MS, backoff_ceiling_ms};

/// What happens at a point in virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The agent has thought: it makes the next call, or finishes.
    Decide,
    /// An attempt's answer arrives.
    Answer { ok: bool },
    /// A backoff ends: the same call is sent again.
    Retry,
}

/// One trajectory at a time; the queue is kept between them.
pub struct Loop {
    queue: BinaryHeap<Reverse<(TimeMs, u64, Event)>>,
    sequence: u64,
}

impl Default for Loop {
    fn default() -> Self {
        Loop { queue: BinaryHeap::with_capacity(4), sequence: 0 }
    }
}

impl Loop {
    /// Runs `seeds`, one trajectory each.
    pub fn run(&mut self, seeds: std::ops::Range<u64>) -> Tally {
        let mut tally = Tally::default();
        for seed in seeds {
            let (ok, end_ms) = self.trajectory(seed);
            tally.successes += u64::from(ok);
            tally.n += 1;
            tally.virtual_ms += end_ms;
        }
        tally
    }

    fn push(&mut self, at_ms: TimeMs, event: Event) {
        self.sequence += 1;
        self.queue.push(Reverse((at_ms, self.sequence, event)));
    }

    /// One trajectory: whether it succeeded, and when it ended.
    pub fn trajectory(&mut self, seed: u64) -> (bool, TimeMs) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        self.queue.clear();
        // The opening arrives at 0; the agent reads it in one turn.
        self.push(between(&mut rng, THINK_MS), Event::Decide);
        let (mut done, mut attempt) = (0u32, 0u32);
        while let Some(Reverse((now_ms, _, event))) = self.queue.pop() {
            match event {
                Event::Decide if done == CALLS => return (true, now_ms),
                Event::Decide | Event::Retry => {
                    attempt += 1;
                    let ok = !chance(&mut rng, P_503);
                    self.push(now_ms + between(&mut rng, LATENCY_MS), Event::Answer { ok });
                }
                Event::Answer { ok: true } => {
                    done += 1;
                    attempt = 0;
                    self.push(now_ms + between(&mut rng, THINK_MS), Event::Decide);
                }
                Event::Answer { ok: false } if attempt < ATTEMPTS_MAX => {
                    let wait_ms = between(&mut rng, (0, backoff_ceiling_ms(attempt)));
                    self.push(now_ms + wait_ms, Event::Retry);
                }
                // The layer gives up; the agent reads the failure in one turn and stops.
                Event::Answer { ok: false } => return (false, now_ms + between(&mut rng, THINK_MS)),
            }
        }
        unreachable!("a trajectory ends before its queue empties")
    }
}

/// True with probability `p` (53-bit draw, as the engine's `Stream::chance`).
fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    ((rng.next_u64() >> 11) as f64) < p * (1u64 << 53) as f64
}

/// Uniform in `[lo, hi]`, unbiased (Lemire's method, as the engine's `Stream::between`).
fn between(rng: &mut ChaCha8Rng, (lo, hi): (u64, u64)) -> u64 {
    let n = hi - lo + 1;
    loop {
        let m = u128::from(rng.next_u64()) * u128::from(n);
        if (m as u64) >= n.wrapping_neg() % n {
            return lo + (m >> 64) as u64;
        }
    }
}
