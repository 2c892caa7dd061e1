//! The 10-call model's parameters, the same in every implementation (the
//! scenario file `benches/peer/ten_calls/ten_calls.ron`, its stack file, and
//! the SimPy model state them again).

use agentsim::engine::TimeMs;

/// Calls in a trajectory, in sequence.
pub const CALLS: u32 = 10;
/// The chance that an attempt fails with 503.
pub const P_503: f64 = 0.2;
/// Attempts per call: the first and up to 3 retries.
pub const ATTEMPTS_MAX: u32 = 4;
/// The backoff ceiling of the first retry, doubled for each later one.
pub const BACKOFF_BASE_MS: TimeMs = 200;
/// The largest backoff ceiling.
pub const BACKOFF_CAP_MS: TimeMs = 5_000;
/// An attempt's latency, uniform in this range (inclusive), 503 or not.
pub const LATENCY_MS: (TimeMs, TimeMs) = (50, 250);
/// One model turn (an agent decision), uniform in this range (inclusive).
pub const THINK_MS: (TimeMs, TimeMs) = (600, 2_400);

/// The ceiling of the wait before retry `retry` (1 for the first):
/// `min(cap, base · 2^(retry-1))`; the wait is uniform in `[0, ceiling]`.
pub fn backoff_ceiling_ms(retry: u32) -> TimeMs {
    assert!((1..ATTEMPTS_MAX).contains(&retry), "retries are numbered 1..{ATTEMPTS_MAX}");
    (BACKOFF_BASE_MS << (retry - 1)).min(BACKOFF_CAP_MS)
}

/// The completion rate the model implies: a call succeeds unless all its
/// attempts fail, and the trajectory needs every call.
pub fn completion_closed_form() -> f64 {
    (1.0 - P_503.powi(ATTEMPTS_MAX as i32)).powi(CALLS as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_form() {
        assert!((completion_closed_form() - 0.984_115).abs() < 1e-6);
    }

    #[test]
    fn ceilings() {
        assert_eq!([1, 2, 3].map(backoff_ceiling_ms), [200, 400, 800]);
    }
}
