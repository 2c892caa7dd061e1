//! Statistics over trajectories: rates with Wilson intervals and percentiles.
//!
//! Inputs are integer counts and sorted integer samples, and the only float
//! operations are IEEE basic operations and `sqrt` (correctly rounded), so results
//! are identical on every platform.

use serde::Serialize;

/// The 97.5th percentile of the standard normal: two-sided 95% intervals.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// The 99.5th percentile of the standard normal: two-sided 99% intervals.
pub const Z_99: f64 = 2.575_829_303_548_900_4;

/// A proportion with its Wilson 95% score interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// Number of hits.
    pub count: u64,
    /// Number of trials.
    pub n: u64,
    /// `count / n` (0 when `n` is 0).
    pub rate: f64,
    /// Lower bound of the 95% interval.
    pub lo: f64,
    /// Upper bound of the 95% interval.
    pub hi: f64,
}

impl Rate {
    /// The rate of `count` hits in `n` trials with its Wilson interval. With no
    /// trials the interval is the whole of [0, 1]: nothing is known.
    pub fn wilson(count: u64, n: u64) -> Rate {
        Rate::wilson_z(count, n, Z_95)
    }

    /// The rate with a Wilson interval at the normal quantile `z` (for example
    /// [`Z_99`] for a 99% interval).
    pub fn wilson_z(count: u64, n: u64, z: f64) -> Rate {
        assert!(count <= n, "count {count} exceeds trials {n}");
        assert!(z > 0.0, "z must be positive");
        if n == 0 {
            return Rate { count, n, rate: 0.0, lo: 0.0, hi: 1.0 };
        }
        let nf = n as f64;
        let p = count as f64 / nf;
        let z2 = z * z;
        let denom = 1.0 + z2 / nf;
        let center = (p + z2 / (2.0 * nf)) / denom;
        let half = z * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
        // At the edges the bound is exactly 0 or 1; rounding would leave a crumb.
        let lo = if count == 0 { 0.0 } else { (center - half).max(0.0) };
        let hi = if count == n { 1.0 } else { (center + half).min(1.0) };
        Rate { count, n, rate: p, lo, hi }
    }

    /// Whether `p` lies inside the interval.
    pub fn contains(&self, p: f64) -> bool {
        self.lo <= p && p <= self.hi
    }
}

/// The `p`-th percentile (0..=100) of sorted samples, by nearest rank; 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "samples must be sorted");
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p.clamp(0.0, 100.0) / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_reference_values() {
        // Reference: 8 of 10 gives [0.4902, 0.9433] (Wilson 1927; any stats package).
        let r = Rate::wilson(8, 10);
        assert!((r.lo - 0.4902).abs() < 1e-4 && (r.hi - 0.9433).abs() < 1e-4, "{r:?}");
        let r = Rate::wilson(0, 50);
        assert_eq!(r.lo, 0.0);
        assert!((r.hi - 0.0714).abs() < 1e-4, "{r:?}");
        assert_eq!(Rate::wilson(0, 0).hi, 1.0);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 90.0), 90);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[7], 1.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }
}
