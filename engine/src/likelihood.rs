//! Likelihood ratios for importance sampling.
//!
//! An importance-sampling run draws its faults with tilted probabilities
//! (`p_sampled`) instead of the nominal ones (`p_nominal`). Each random fault
//! decision that shapes the trajectory multiplies the trajectory's likelihood
//! ratio by `p_nominal(x) / p_sampled(x)` for the value `x` it drew; the product
//! over a trajectory, `w`, makes `E_sampled[w * f] = E_nominal[f]` exactly for any
//! outcome `f` of the run, as long as every value with nominal probability
//! above 0 also has sampled probability above 0 (callers check this).
//!
//! The ratio is kept as a sum of logs: a trajectory with many decisions has a
//! product far beyond the range of an `f64`.
//!
//! Exactness: a Bernoulli draw ([`crate::rng::Stream::chance`]) compares a 53-bit
//! draw with `floor(p * 2^53)`, so the probability it realises is
//! `floor(p * 2^53) / 2^53`, not `p`. The ratios here are of those realised
//! probabilities, written as integers over `2^53` (every such integer is exact in
//! an `f64`), and the logs are `libm`'s, the same on every platform.
//!
//! A decision whose value the run ignores (a rule outside its schedule, a second
//! fault when one is already chosen for the call) is left out: whether it is
//! ignored depends only on what happened before it, so it integrates out of the
//! ratio and would only add noise.

use std::sync::Arc;

use serde::Serialize;

use crate::rng::{CHANCE_ONE, chance_threshold};

/// One fault rule's decisive draws in one trajectory: how many of its draws
/// shaped the run (those [`LogWeight`] accounts for) and how many of them hit.
/// The cross-entropy method (`sweep --importance auto`) reads them to learn
/// which probabilities make a failure likely.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RuleDraws {
    /// Decisive draws.
    pub draws: u32,
    /// Of those, the ones that drew the fault.
    pub hits: u32,
}

/// The probability each fault rule is drawn with in an importance-sampling run
/// whose tilt differs per rule: tools in id order, then each tool's rules in
/// order (a rate-limit rule's entry is never read). Shared by every trajectory
/// of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleProbabilities(Arc<Vec<Vec<f64>>>);

impl RuleProbabilities {
    /// The table, one row per tool with one probability per rule, each in [0, 1].
    pub fn new(rows: Vec<Vec<f64>>) -> Self {
        assert!(
            rows.iter().flatten().all(|p| (0.0..=1.0).contains(p)),
            "a sampled probability outside [0, 1]: {rows:?}"
        );
        Self(Arc::new(rows))
    }

    /// The sampled probability of rule `rule` of tool number `tool`.
    pub fn get(&self, tool: usize, rule: usize) -> f64 {
        self.0[tool][rule]
    }

    /// The rows, tools in id order.
    pub fn rows(&self) -> &[Vec<f64>] {
        &self.0
    }
}

/// The log of a trajectory's likelihood ratio, nominal over sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LogWeight(f64);

impl LogWeight {
    /// The ratio 1: nothing drawn differently.
    pub const ONE: LogWeight = LogWeight(0.0);

    /// The natural log of the ratio (`-inf` when the run is impossible nominally).
    pub fn ln(self) -> f64 {
        self.0
    }

    /// Accounts for one Bernoulli decision drawn by `Stream::chance(p_sampled)`
    /// that came out `hit`, whose nominal probability is `p_nominal`.
    pub fn bernoulli(&mut self, p_nominal: f64, p_sampled: f64, hit: bool) {
        let nominal = chance_threshold(p_nominal);
        let sampled = chance_threshold(p_sampled);
        if nominal == sampled {
            return;
        }
        // Counts out of 2^53 of the value drawn, under each measure.
        let (nominal_count, sampled_count) =
            if hit { (nominal, sampled) } else { (CHANCE_ONE - nominal, CHANCE_ONE - sampled) };
        assert!(sampled_count > 0, "a value drawn with probability 0 (hit: {hit}, p_sampled: {p_sampled})");
        self.0 += libm::log(nominal_count as f64) - libm::log(sampled_count as f64);
    }

    /// Accounts for one outcome chosen among several, which had probability
    /// `p_sampled` as drawn and `p_nominal` nominally (both as realised by the
    /// draw, in `(0, 1]` for the sampled one).
    pub fn choice(&mut self, p_nominal: f64, p_sampled: f64) {
        assert!(p_sampled > 0.0, "an outcome drawn with probability 0");
        if p_nominal != p_sampled {
            self.0 += libm::log(p_nominal) - libm::log(p_sampled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StreamSource;

    #[test]
    fn equal_measures_weigh_nothing() {
        let mut w = LogWeight::ONE;
        w.bernoulli(0.3, 0.3, true);
        w.bernoulli(0.3, 0.3, false);
        w.choice(0.5, 0.5);
        assert_eq!(w.ln(), 0.0);
    }

    #[test]
    fn bernoulli_ratios_are_of_the_realised_probabilities() {
        let mut hit = LogWeight::ONE;
        hit.bernoulli(0.01, 0.5, true);
        assert!((hit.ln() - (0.02f64).ln()).abs() < 1e-12, "{}", hit.ln());
        let mut miss = LogWeight::ONE;
        miss.bernoulli(0.01, 0.5, false);
        assert!((miss.ln() - (0.99f64 / 0.5).ln()).abs() < 1e-12, "{}", miss.ln());
        let mut impossible = LogWeight::ONE;
        impossible.bernoulli(0.0, 0.5, true);
        assert_eq!(impossible.ln(), f64::NEG_INFINITY);
    }

    /// The defining property: the weighted mean of any function of the draws
    /// under the tilted measure is its nominal mean. Checked exactly on all 2^3
    /// outcomes of three draws (the tilted probabilities times the weights sum
    /// to the nominal ones), then by simulation.
    #[test]
    fn weights_undo_the_tilt() {
        let (p, q) = (0.01, 0.4);
        let mut total = 0.0;
        let mut all_hit = 0.0;
        for bits in 0..8u32 {
            let mut w = LogWeight::ONE;
            let mut q_prob = 1.0;
            for i in 0..3 {
                let hit = bits >> i & 1 == 1;
                w.bernoulli(p, q, hit);
                q_prob *= if hit { q } else { 1.0 - q };
            }
            total += q_prob * w.ln().exp();
            if bits == 7 {
                all_hit = q_prob * w.ln().exp();
            }
        }
        assert!((total - 1.0).abs() < 1e-12, "{total}");
        assert!((all_hit - 1e-6).abs() < 1e-15, "{all_hit}");

        let mut stream = StreamSource::new([1; 32], 0).stream("test");
        let n = 200_000;
        let mut estimate = 0.0;
        for _ in 0..n {
            let mut w = LogWeight::ONE;
            let mut hits = 0;
            for _ in 0..3 {
                let hit = stream.chance(q);
                w.bernoulli(p, q, hit);
                hits += u32::from(hit);
            }
            if hits == 3 {
                estimate += w.ln().exp();
            }
        }
        let estimate = estimate / n as f64;
        assert!((estimate / 1e-6 - 1.0).abs() < 0.05, "{estimate}");
    }
}
