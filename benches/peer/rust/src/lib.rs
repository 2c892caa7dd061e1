//! The peer comparison's 10-call model (`benches/peer/README.md`): ten tool
//! calls in sequence, each failing with 503 on a fifth of attempts, up to 3
//! retries with full-jitter exponential backoff (base 200 ms, cap 5 s); a
//! trajectory succeeds when all ten calls succeed. Every agent decision is one
//! model turn of `Uniform(600, 2400)` ms: reading the opening and each of the
//! ten results (eleven turns on success).
//!
//! Four of its five implementations live here: the scripted world's files
//! loaded and swept in process ([`scripted`]), the same model as Rust code
//! against agentsim's public API with `WorldBuilder` and the agent stack
//! ([`built`]), the same model written directly against the engine, a
//! hand-written world and agent doing its own retries ([`engine`]: the
//! engine's own cost, the line comparable to SimPy's hand-written process),
//! and a minimal event loop without the engine ([`minimal`]), the practical
//! limit. The fifth is SimPy (`benches/peer/ten_calls/ten_calls_simpy.py`).

pub mod built;
pub mod engine;
pub mod minimal;
pub mod model;
pub mod scripted;

/// What a batch of trajectories came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Trajectories that succeeded.
    pub successes: u64,
    /// Trajectories run.
    pub n: u64,
    /// Their virtual time, summed.
    pub virtual_ms: u64,
}

/// Two batches' tallies together.
impl std::ops::Add for Tally {
    type Output = Tally;

    fn add(self, other: Tally) -> Tally {
        Tally {
            successes: self.successes + other.successes,
            n: self.n + other.n,
            virtual_ms: self.virtual_ms + other.virtual_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim::rate::Rate;
    use rayon::prelude::*;

    /// z of a two-sided 99.9% interval: five implementations are checked, so
    /// each check is held to a stricter level than 95%.
    const Z_999: f64 = 3.290_526_731_491_926;

    /// The closed form lies in the tally's 99.9% Wilson interval.
    fn agrees_with_closed_form(what: &str, tally: Tally) {
        let rate = Rate::wilson_z(tally.successes, tally.n, Z_999);
        let p = model::completion_closed_form();
        assert!(
            rate.lo <= p && p <= rate.hi,
            "{what}: completion {:.4} [{:.4}, {:.4}] misses the closed form {p:.4}",
            rate.rate,
            rate.lo,
            rate.hi
        );
    }

    #[test]
    fn minimal_loop_completes_as_the_closed_form_says() {
        agrees_with_closed_form("minimal loop", minimal::Loop::default().run(0..20_000));
    }

    #[test]
    fn built_world_completes_as_the_closed_form_says() {
        agrees_with_closed_form("built world", built::sweep_seeds(&built::world(), 0..4_000));
    }

    #[test]
    fn engine_world_completes_as_the_closed_form_says() {
        agrees_with_closed_form("engine world", engine::Scenario::new().sweep_seeds(0..20_000));
    }

    #[test]
    fn engine_world_gives_the_same_tally_and_digests_on_1_2_and_4_threads() {
        let scenario = engine::Scenario::new();
        let on_threads = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("the pool starts");
            pool.install(|| {
                let digests: Vec<_> = (0..500u64).into_par_iter().map(|seed| scenario.run(seed).digest).collect();
                (scenario.sweep_seeds(0..2_000), digests)
            })
        };
        let (tally, digests) = on_threads(1);
        assert_eq!(tally, scenario.sweep_seeds(0..2_000), "the same seeds give the same tally twice");
        let one = (tally, digests);
        assert_eq!(on_threads(2), one, "and the same tally and digests on 2 threads");
        assert_eq!(on_threads(4), one, "and on 4");
    }

    #[test]
    fn scripted_world_completes_as_the_closed_form_says() {
        let tally = scripted::sweep_seeds(&scripted::world(), &scripted::stack(), 0..4_000);
        agrees_with_closed_form("scripted world", tally);
    }

    #[test]
    fn the_built_stack_is_the_stack_file() {
        assert_eq!(built::stack(), scripted::stack());
    }
}
