//! The shapes of a sweep's measures, shared by the summary and its parts:
//! spreads (percentiles, mean, histogram) over counted values, and rates with
//! intervals by seed cluster. A home of their own, so that the summary and the
//! modules it sums (sessions, ...) all import them and none imports another.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::rate::{Rate, Z_95};

/// p50, p90 and p99 of one measure, with its mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Arithmetic mean (summed in seed order).
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest value.
    pub max: u64,
    /// How the values are distributed, for charts.
    pub histogram: Histogram,
}

/// Counts of values in equal bins from 0: bin `i` holds values in
/// `[i * bin_width, (i + 1) * bin_width)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Histogram {
    /// Width of each bin, at least 1.
    pub bin_width: u64,
    /// Count per bin; at most [`HISTOGRAM_BINS_MAX`] bins, the last holding the maximum.
    pub counts: Vec<u64>,
}

/// The most bins in a histogram: enough for a chart, small in `summary.json`.
pub const HISTOGRAM_BINS_MAX: u64 = 20;

impl Histogram {
    fn of(values: &ValueCounts) -> Histogram {
        let max = values.max();
        let bin_width = (max / HISTOGRAM_BINS_MAX + 1).max(1);
        let mut counts = vec![0; (max / bin_width + 1) as usize];
        for (v, n) in values.iter() {
            counts[(v / bin_width) as usize] += n;
        }
        debug_assert!(counts.len() as u64 <= HISTOGRAM_BINS_MAX + 1);
        Histogram { bin_width, counts }
    }
}

/// The values of one measure as a count per distinct value: everything a
/// [`Spread`] needs (mean, exact nearest-rank percentiles, maximum, histogram),
/// in memory that grows with the number of distinct values, not of trajectories.
/// Turns and tool calls take a few dozen values; virtual time and cost at most
/// one per millisecond or micro-dollar within the horizon and budgets, so a
/// million seeds cost what a hundred thousand do.
#[derive(Clone, Debug, Default)]
pub struct ValueCounts {
    counts: BTreeMap<u64, u64>,
    n: u64,
    /// Exact sum; u128 so that no sweep can overflow it.
    sum: u128,
}

impl ValueCounts {
    /// Counts one more `value`.
    pub fn push(&mut self, value: u64) {
        *self.counts.entry(value).or_default() += 1;
        self.n += 1;
        self.sum += u128::from(value);
    }

    /// How many values were counted.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The largest value, 0 when empty.
    pub fn max(&self) -> u64 {
        self.counts.keys().next_back().copied().unwrap_or(0)
    }

    /// `(value, count)` in increasing value order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().map(|(v, n)| (*v, *n))
    }

    /// The nearest-rank `p`-th percentile: the value [`crate::rate::percentile`] picks from
    /// the sorted values.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * self.n as f64).ceil() as u64;
        let rank = rank.clamp(1, self.n);
        let mut seen = 0;
        for (v, n) in self.iter() {
            seen += n;
            if seen >= rank {
                return v;
            }
        }
        unreachable!("the ranks sum to n")
    }
}

impl Spread {
    pub(crate) fn of(values: &ValueCounts) -> Spread {
        // Below 2^64 (any real sweep) `u128 as f64` rounds exactly as the u64 sum of
        // the samples did before, so the mean keeps its bytes; above, it stays right.
        let mean = if values.is_empty() { 0.0 } else { values.sum as f64 / values.len() as f64 };
        Spread {
            mean,
            p50: values.percentile(50.0),
            p90: values.percentile(90.0),
            p95: values.percentile(95.0),
            p99: values.percentile(99.0),
            max: values.max(),
            histogram: Histogram::of(values),
        }
    }
}

/// The rate of `count` hits in `n` trajectories, `n / seeds` trials per seed,
/// with its 95% interval computed by seed cluster; returns it with the design
/// effect.
///
/// Method (Kish's design effect with a Wilson interval on the effective sample
/// size, as Korn and Graubard do for clustered proportions): the variance of the
/// rate by cluster is `s_y^2 / seeds`, with `s_y^2` the sample variance of the
/// per-seed shares; as if independent it is `p (1 - p) / n`. Their ratio is the
/// design effect, taken as at least 1 (trials are never counted as more
/// informative than independent runs), and the Wilson interval is computed for
/// `n / design_effect` runs. With one trial per seed it is the plain Wilson
/// interval.
pub fn clustered(count: u64, n: u64, seeds: u64, sums: &ClusterSumsView) -> (Rate, f64) {
    let plain = Rate::wilson(count, n);
    if seeds < 2 || n == seeds || count == 0 || count == n {
        return (plain, 1.0);
    }
    let p = plain.rate;
    let k = seeds as f64;
    let mean = sums.sum_y / k;
    let variance_y = ((sums.sum_y2 - k * mean * mean) / (k - 1.0)).max(0.0);
    let design_effect = ((variance_y / k) / (p * (1.0 - p) / n as f64)).max(1.0);
    let n_eff = n as f64 / design_effect;
    let z2 = Z_95 * Z_95;
    let denom = 1.0 + z2 / n_eff;
    let center = (p + z2 / (2.0 * n_eff)) / denom;
    let half = Z_95 * (p * (1.0 - p) / n_eff + z2 / (4.0 * n_eff * n_eff)).sqrt() / denom;
    let rate = Rate { count, n, rate: p, lo: (center - half).max(0.0), hi: (center + half).min(1.0) };
    (rate, design_effect)
}

/// The per-seed sums [`clustered`] reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterSumsView {
    /// The sum over seeds of the share of a seed's trials that hit.
    pub sum_y: f64,
    /// The sum over seeds of that share squared.
    pub sum_y2: f64,
}
