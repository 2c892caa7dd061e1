//! The peer comparison's 10-call model (`benches/peer/README.md`): ten tool
//! calls in sequence, each failing with 503 on a fifth of attempts, up to 3
//! retries with full-jitter exponential backoff (base 200 ms, cap 5 s); a
//! trajectory succeeds when all ten calls succeed. Every agent decision is one
//! model turn of `Uniform(600, 2400)` ms: reading the opening and each of the
//! ten results (eleven turns on success).
//!
//! Three of its four implementations live here: the scripted world's files
//! loaded and swept in process ([`scripted`]), the same model as Rust code
//! against agentsim's public API ([`built`]), and a minimal event loop without
//! the engine ([`minimal`]), the practical limit. The fourth is SimPy
//! (`benches/peer/ten_calls/ten_calls_simpy.py`).

pub mod built;
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

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim::rate::Rate;

    /// z of a two-sided 99.9% interval: four implementations are checked, so
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
    fn scripted_world_completes_as_the_closed_form_says() {
        let tally = scripted::sweep_seeds(&scripted::world(), &scripted::stack(), 0..4_000);
        agrees_with_closed_form("scripted world", tally);
    }

    #[test]
    fn the_built_stack_is_the_stack_file() {
        assert_eq!(built::stack(), scripted::stack());
    }
}
