//! pass^k (tau-bench): the chance that a stack solves a task instance in all of k
//! independent attempts, estimated from K >= k trials per instance.
//!
//! With `c` successes in `n` trials of one instance, C(c, k) / C(n, k) is the
//! unbiased estimate of that instance's pass^k; pass^k is their mean over
//! instances. The sums are kept as exact integers, so the result does not depend
//! on the order or grouping of instances, and is divided once at the end.

use std::collections::BTreeMap;

/// The most trials per instance: C(64, 32) still fits comfortably in an integer.
pub const TRIALS_MAX: u32 = 64;

/// Accumulates per-instance success counts into pass^k for k = 1..=trials.
#[derive(Clone, Debug)]
pub struct PassK {
    trials: u32,
    instances: u64,
    /// For each k in 1..=trials: the sum over instances of C(c, k).
    sums: Vec<u128>,
}

impl PassK {
    /// An empty accumulator for `trials` trials per instance (1..=[`TRIALS_MAX`]).
    pub fn new(trials: u32) -> PassK {
        assert!((1..=TRIALS_MAX).contains(&trials), "trials must be in 1..={TRIALS_MAX}, got {trials}");
        PassK { trials, instances: 0, sums: vec![0; trials as usize] }
    }

    /// Adds one instance that succeeded in `successes` of its trials.
    pub fn add(&mut self, successes: u32) {
        assert!(successes <= self.trials, "{successes} successes in {} trials", self.trials);
        self.instances += 1;
        for k in 1..=self.trials {
            self.sums[k as usize - 1] += binomial(successes, k);
        }
    }

    /// Instances added.
    pub fn instances(&self) -> u64 {
        self.instances
    }

    /// pass^k for k = 1..=trials (empty when no instance was added).
    pub fn values(&self) -> BTreeMap<u32, f64> {
        if self.instances == 0 {
            return BTreeMap::new();
        }
        (1..=self.trials)
            .map(|k| {
                let denominator = self.instances as f64 * binomial(self.trials, k) as f64;
                (k, self.sums[k as usize - 1] as f64 / denominator)
            })
            .collect()
    }
}

/// C(n, k), exactly.
pub fn binomial(n: u32, k: u32) -> u128 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut out: u128 = 1;
    for i in 0..k {
        // Exact at every step: the product of i + 1 consecutive integers is
        // divisible by (i + 1)!.
        out = out * u128::from(n - i) / u128::from(i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomials() {
        assert_eq!(binomial(5, 2), 10);
        assert_eq!(binomial(5, 0), 1);
        assert_eq!(binomial(3, 4), 0);
        assert_eq!(binomial(64, 32), 1_832_624_140_942_590_534);
    }

    #[test]
    fn pass_k_follows_tau_bench() {
        // Two instances with 4 trials: one solved 4/4, one 2/4.
        let mut p = PassK::new(4);
        p.add(4);
        p.add(2);
        let v = p.values();
        assert_eq!(v[&1], (1.0 + 0.5) / 2.0);
        assert_eq!(v[&2], (1.0 + 1.0 / 6.0) / 2.0);
        assert_eq!(v[&3], 0.5);
        assert_eq!(v[&4], 0.5);
        // pass^k never rises with k.
        assert!(v.values().zip(v.values().skip(1)).all(|(a, b)| a >= b));
    }

    #[test]
    fn with_independent_trials_pass_k_approaches_p_to_the_k() {
        // Every instance c successes spread as a binomial would: exact expectation.
        let mut p = PassK::new(3);
        // p = 1/2: c = 0,1,1,1,2,2,2,3 over 8 equally likely outcomes.
        for c in [0, 1, 1, 1, 2, 2, 2, 3] {
            p.add(c);
        }
        let v = p.values();
        assert_eq!(v[&1], 0.5);
        assert_eq!(v[&2], 0.25);
        assert_eq!(v[&3], 0.125);
    }
}
