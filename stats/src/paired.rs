//! Comparing two stacks: paired analysis of success on the same seeds.
//!
//! Two stacks run on the same seeds meet the same world and the same faults
//! (common random numbers), so their outcomes are correlated and only the seeds
//! where they disagree carry information about the difference. The tests here use
//! that: McNemar's exact test on the discordant pairs, and Newcombe's score
//! interval for the difference of paired proportions (Newcombe 1998, *Statistics
//! in Medicine* 17:2635-2650, method 10). The unpaired interval (Newcombe 1998,
//! *Statistics in Medicine* 17:873-890, method 10: the same construction with the
//! correlation set to zero) is what two independent sweeps would give; it is
//! reported beside the paired one to show how much the pairing buys.
//!
//! Only IEEE basic operations, `sqrt` and `libm` are used, so results are the
//! same on every platform.

use serde::Serialize;

use crate::rate::Rate;

/// The 2x2 table of paired outcomes over seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PairCounts {
    /// Seeds where both stacks succeeded.
    pub both: u64,
    /// Seeds where only the baseline succeeded (the candidate regressed).
    pub baseline_only: u64,
    /// Seeds where only the candidate succeeded (the candidate improved).
    pub candidate_only: u64,
    /// Seeds where neither succeeded.
    pub neither: u64,
}

impl PairCounts {
    /// Adds one seed's pair of outcomes.
    pub fn add(&mut self, baseline_success: bool, candidate_success: bool) {
        match (baseline_success, candidate_success) {
            (true, true) => self.both += 1,
            (true, false) => self.baseline_only += 1,
            (false, true) => self.candidate_only += 1,
            (false, false) => self.neither += 1,
        }
    }

    /// Number of pairs.
    pub fn n(&self) -> u64 {
        self.both + self.baseline_only + self.candidate_only + self.neither
    }

    /// The discordant pairs: seeds where the two stacks disagree.
    pub fn discordant(&self) -> u64 {
        self.baseline_only + self.candidate_only
    }

    /// Successes of the baseline.
    pub fn baseline_successes(&self) -> u64 {
        self.both + self.baseline_only
    }

    /// Successes of the candidate.
    pub fn candidate_successes(&self) -> u64 {
        self.both + self.candidate_only
    }
}

/// A difference of two rates (candidate minus baseline) with a 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// Candidate rate minus baseline rate.
    pub estimate: f64,
    /// Lower bound of the 95% interval.
    pub lo: f64,
    /// Upper bound of the 95% interval.
    pub hi: f64,
}

impl Difference {
    /// The interval's width.
    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }

    /// Whether `d` lies inside the interval.
    pub fn contains(&self, d: f64) -> bool {
        self.lo <= d && d <= self.hi
    }
}

/// What a comparison concludes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareVerdict {
    /// The whole interval on the difference is above zero.
    Better,
    /// The whole interval on the difference is below zero.
    Worse,
    /// The interval contains zero.
    NoSignificantDifference,
}

impl CompareVerdict {
    /// The verdict read from an interval on candidate minus baseline.
    pub fn from_interval(d: &Difference) -> CompareVerdict {
        if d.lo > 0.0 {
            CompareVerdict::Better
        } else if d.hi < 0.0 {
            CompareVerdict::Worse
        } else {
            CompareVerdict::NoSignificantDifference
        }
    }

    /// Words for the terminal.
    pub fn describe(self) -> &'static str {
        match self {
            CompareVerdict::Better => "better",
            CompareVerdict::Worse => "worse",
            CompareVerdict::NoSignificantDifference => "no significant difference",
        }
    }
}

/// Newcombe's hybrid score interval (method 10) for the paired difference
/// candidate minus baseline, at 95%.
pub fn newcombe_paired(counts: &PairCounts) -> Difference {
    let n = counts.n();
    let candidate = Rate::wilson(counts.candidate_successes(), n);
    let baseline = Rate::wilson(counts.baseline_successes(), n);
    // Phi, the correlation of the two outcomes over seeds, as Newcombe defines it:
    // a positive AD - BC is reduced by N/2 (and floored at 0), a negative one is
    // kept; 0 when a margin is empty.
    let (a, b, c, d) =
        (counts.both as f64, counts.candidate_only as f64, counts.baseline_only as f64, counts.neither as f64);
    let margins = (a + b) * (c + d) * (a + c) * (b + d);
    let cross = a * d - b * c;
    let half_n = n as f64 / 2.0;
    let numerator = if cross > half_n {
        cross - half_n
    } else if cross < 0.0 {
        cross
    } else {
        0.0
    };
    let phi = if margins > 0.0 { numerator / margins.sqrt() } else { 0.0 };
    hybrid_score(&candidate, &baseline, phi)
}

/// Newcombe's hybrid score interval (method 10) for the difference of two
/// independent proportions, candidate minus baseline, at 95%.
pub fn newcombe_unpaired(candidate: &Rate, baseline: &Rate) -> Difference {
    hybrid_score(candidate, baseline, 0.0)
}

fn hybrid_score(p1: &Rate, p2: &Rate, phi: f64) -> Difference {
    let estimate = p1.rate - p2.rate;
    if p1.n == 0 || p2.n == 0 {
        return Difference { estimate, lo: -1.0, hi: 1.0 };
    }
    let (down1, up1) = (p1.rate - p1.lo, p1.hi - p1.rate);
    let (down2, up2) = (p2.rate - p2.lo, p2.hi - p2.rate);
    let delta = (down1 * down1 - 2.0 * phi * down1 * up2 + up2 * up2).max(0.0).sqrt();
    let epsilon = (up1 * up1 - 2.0 * phi * up1 * down2 + down2 * down2).max(0.0).sqrt();
    let lo = (estimate - delta).max(-1.0);
    let hi = (estimate + epsilon).min(1.0);
    assert!(lo <= estimate && estimate <= hi, "the interval holds its estimate");
    Difference { estimate, lo, hi }
}

/// McNemar's exact test: the two-sided p-value that `b` and `c` discordant pairs
/// arose with each direction equally likely (a binomial test with p = 1/2 on
/// `b + c` pairs). 1 when there are no discordant pairs.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    if 2 * k == n {
        return 1.0;
    }
    // Terms C(n, i) / 2^n for i = 0..=k in log space; the largest is i = k (k < n/2),
    // so summing exp(l_i - l_k) in order cannot overflow.
    let nf = n as f64;
    let log_term = |i: u64| {
        let i = i as f64;
        libm::lgamma(nf + 1.0) - libm::lgamma(i + 1.0) - libm::lgamma(nf - i + 1.0) - nf * core::f64::consts::LN_2
    };
    let top = log_term(k);
    let mut sum = 0.0;
    for i in 0..=k {
        sum += libm::exp(log_term(i) - top);
    }
    (2.0 * libm::exp(top) * sum).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(x: f64, y: f64) -> bool {
        (x - y).abs() < 5e-5
    }

    #[test]
    fn paired_interval_matches_newcombe_1998_example() {
        // Newcombe (1998, paired), example (a): 36 both, 12 and 2 discordant, 0
        // neither; difference 0.2, method 10 interval 0.0569 to 0.3404.
        let counts = PairCounts { both: 36, candidate_only: 12, baseline_only: 2, neither: 0 };
        let d = newcombe_paired(&counts);
        assert!(near(d.estimate, 0.2), "{d:?}");
        assert!(near(d.lo, 0.0569) && near(d.hi, 0.3404), "{d:?}");
    }

    #[test]
    fn unpaired_interval_matches_newcombe_1998_example() {
        // Newcombe (1998, independent), example (a): 56/70 - 48/80 = 0.2, method 10
        // interval 0.0524 to 0.3339.
        let d = newcombe_unpaired(&Rate::wilson(56, 70), &Rate::wilson(48, 80));
        assert!(near(d.estimate, 0.2), "{d:?}");
        assert!(near(d.lo, 0.0524) && near(d.hi, 0.3339), "{d:?}");
    }

    #[test]
    fn mcnemar_exact_matches_binomial_sums() {
        // b = 1, c = 9: 2 * (1 + 10) / 1024.
        assert!((mcnemar_exact(1, 9) - 22.0 / 1024.0).abs() < 1e-12);
        assert!((mcnemar_exact(9, 1) - 22.0 / 1024.0).abs() < 1e-12);
        // b = 0, c = 5: 2 / 32.
        assert!((mcnemar_exact(0, 5) - 0.0625).abs() < 1e-12);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(4, 4), 1.0);
        assert!(mcnemar_exact(3, 4) <= 1.0);
        // Against exact rational arithmetic: 2 * sum_{i<=26} C(221, i) / 2^221.
        let p = mcnemar_exact(195, 26);
        assert!((p / 3.300_653_285_748_393e-33 - 1.0).abs() < 1e-12, "{p}");
        // Large n does not overflow or underflow to nonsense.
        let p = mcnemar_exact(400, 600);
        assert!(p > 0.0 && p < 1e-9, "{p}");
    }

    #[test]
    fn pairing_narrows_the_interval_when_outcomes_agree() {
        // 1000 seeds, 900 both succeed, 40 only candidate, 10 only baseline.
        let counts = PairCounts { both: 900, candidate_only: 40, baseline_only: 10, neither: 50 };
        let paired = newcombe_paired(&counts);
        let unpaired = newcombe_unpaired(&Rate::wilson(940, 1000), &Rate::wilson(910, 1000));
        assert!(near(paired.estimate, unpaired.estimate));
        assert!(paired.width() < unpaired.width(), "{paired:?} vs {unpaired:?}");
        assert_eq!(CompareVerdict::from_interval(&paired), CompareVerdict::Better);
    }
}
