//! Latency in log-linear bins: a bucket's latencies kept as counts per bin, so
//! that the sessions of many runs add up (bins are additive, percentiles are
//! not) and a percentile over all of them is read back to within 1/8 of its
//! value.
//!
//! Values below 16 ms have a bin each; above, each power of two is cut into 8
//! equal bins (bin `16 + 8 (e - 4) + (m - 8)` holds the values whose top four
//! bits are `m`, `e` being the position of the highest bit), so a bin is never
//! wider than 1/8 of its smallest value.

/// The number of bins: the last holds `u64::MAX`.
pub const BINS: u32 = 16 + 8 * 60;

/// The bin of a latency.
pub fn bin_of(ms: u64) -> u32 {
    if ms < 16 {
        return ms as u32;
    }
    let e = 63 - ms.leading_zeros();
    let m = (ms >> (e - 3)) as u32;
    16 + 8 * (e - 4) + (m - 8)
}

/// The smallest and largest latency `bin` holds.
pub fn bin_range(bin: u32) -> (u64, u64) {
    assert!(bin < BINS, "latency bin {bin} out of range");
    if bin < 16 {
        return (u64::from(bin), u64::from(bin));
    }
    let k = bin - 16;
    let (e, m) = (k / 8 + 4, u64::from(k % 8 + 8));
    let lo = m << (e - 3);
    // The last bin of the highest power of two ends at u64::MAX.
    let hi = ((m + 1) << (e - 3)).wrapping_sub(1);
    (lo, if m == 15 && e == 63 { u64::MAX } else { hi })
}

/// The nearest-rank `percent`-th percentile of the latencies counted in `bins`
/// (`(bin, count)` in increasing bin order): the largest value of the bin that
/// holds it, never above `max_ms` (the largest latency counted). `None` when
/// nothing is counted.
pub fn percentile(bins: impl IntoIterator<Item = (u32, u64)>, total: u64, percent: u64, max_ms: u64) -> Option<u64> {
    if total == 0 {
        return None;
    }
    let rank = (u128::from(total) * u128::from(percent)).div_ceil(100).max(1);
    let mut seen = 0u128;
    for (bin, count) in bins {
        seen += u128::from(count);
        if seen >= rank {
            return Some(bin_range(bin).1.min(max_ms));
        }
    }
    unreachable!("the bins' counts sum to the total")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_its_bin_and_bins_are_at_most_an_eighth_wide() {
        for ms in (0..5_000u64).chain([65_535, 65_536, 1 << 40, u64::MAX - 1, u64::MAX]) {
            let bin = bin_of(ms);
            assert!(bin < BINS, "{ms}");
            let (lo, hi) = bin_range(bin);
            assert!(lo <= ms && ms <= hi, "{ms} in bin {bin} = [{lo}, {hi}]");
            assert!((hi - lo) <= lo / 8, "bin {bin} = [{lo}, {hi}] is wider than an eighth");
        }
        // Bins follow each other without a gap.
        for bin in 1..BINS {
            assert_eq!(bin_range(bin).0, bin_range(bin - 1).1 + 1, "bin {bin}");
        }
        assert_eq!(bin_range(BINS - 1).1, u64::MAX);
    }

    #[test]
    fn the_percentile_is_the_top_of_its_bin_capped_by_the_largest_value() {
        // 99 values of 20 s and one of 300 s: p99 is in the bin of 20 s.
        let bins = [(bin_of(20_000), 99), (bin_of(300_000), 1)];
        let (lo, hi) = bin_range(bin_of(20_000));
        assert_eq!(percentile(bins, 100, 99, 300_000), Some(hi));
        assert!(lo <= 20_000 && hi >= 20_000);
        assert_eq!(percentile(bins, 100, 100, 300_000), Some(300_000));
        assert_eq!(percentile([(bin_of(7), 1)], 1, 99, 7), Some(7));
        assert_eq!(percentile([], 0, 99, 0), None);
    }
}
