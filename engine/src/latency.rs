//! Latency distributions for tool calls and planner think time.

use serde::{Deserialize, Serialize};

use crate::input_error::{InputError, InputErrorKind};
use crate::rng::Stream;
use crate::time::{TimeMs, check_ms};

/// A distribution of virtual durations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LatencyUnchecked")]
pub enum Latency {
    /// Always the same.
    Fixed {
        /// The duration.
        ms: TimeMs,
    },
    /// Uniform in `[min_ms, max_ms]`.
    Uniform {
        /// Smallest value.
        min_ms: TimeMs,
        /// Largest value, at least `min_ms`.
        max_ms: TimeMs,
    },
    /// Log-normal with the given median and 99th percentile (the usual long tail of
    /// network services); draws are capped at 10 times the p99.
    LogNormal {
        /// Median.
        median_ms: TimeMs,
        /// 99th percentile, at least the median.
        p99_ms: TimeMs,
    },
}

#[derive(Deserialize)]
enum LatencyUnchecked {
    Fixed { ms: TimeMs },
    Uniform { min_ms: TimeMs, max_ms: TimeMs },
    LogNormal { median_ms: TimeMs, p99_ms: TimeMs },
}

impl TryFrom<LatencyUnchecked> for Latency {
    type Error = InputError;
    fn try_from(l: LatencyUnchecked) -> Result<Self, InputError> {
        Ok(match l {
            LatencyUnchecked::Fixed { ms } => Latency::Fixed { ms: check_ms("ms", ms)? },
            LatencyUnchecked::Uniform { min_ms, max_ms } => {
                check_ms("max_ms", max_ms)?;
                if max_ms < min_ms {
                    return Err(InputError::at(
                        InputErrorKind::Inconsistent,
                        "max_ms",
                        format!("expected at least min_ms ({min_ms}), found {max_ms}"),
                    ));
                }
                Latency::Uniform { min_ms, max_ms }
            }
            LatencyUnchecked::LogNormal { median_ms, p99_ms } => {
                if median_ms == 0 {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "median_ms",
                        "expected a positive median, found 0",
                    ));
                }
                check_ms("p99_ms", p99_ms)?;
                if p99_ms < median_ms {
                    return Err(InputError::at(
                        InputErrorKind::Inconsistent,
                        "p99_ms",
                        format!("expected at least median_ms ({median_ms}), found {p99_ms}"),
                    ));
                }
                Latency::LogNormal { median_ms, p99_ms }
            }
        })
    }
}

/// One of `of` equal bands of a distribution's quantiles, `rank` from the
/// fastest (0) to the slowest (`of - 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Band {
    /// Which band, from 0.
    pub rank: u32,
    /// How many bands.
    pub of: u32,
}

/// The standard normal's quantile at `u` in `(0, 1)` (0 maps to the smallest
/// positive double's): Acklam's rational approximation, then one step of
/// Halley's method on `erfc`, to about 1e-15.
fn normal_quantile(u: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    const LOW: f64 = 0.024_25;
    let p = u.max(f64::MIN_POSITIVE);
    let tail = |q: f64| {
        let r = libm::sqrt(-2.0 * libm::log(q));
        (((((C[0] * r + C[1]) * r + C[2]) * r + C[3]) * r + C[4]) * r + C[5])
            / ((((D[0] * r + D[1]) * r + D[2]) * r + D[3]) * r + 1.0)
    };
    let x = if p < LOW {
        tail(p)
    } else if p <= 1.0 - LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail(1.0 - p)
    };
    // Halley's step: the error of Phi(x) against p, through erfc.
    let e = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2) - p;
    let step = e * libm::sqrt(2.0 * std::f64::consts::PI) * libm::exp(x * x / 2.0);
    let refined = x - step / (1.0 + x * step / 2.0);
    assert!(refined.is_finite(), "a normal quantile in (0, 1) is finite");
    refined
}

/// The z-score of the 99th percentile of a standard normal.
const Z_P99: f64 = 2.326_347_874_040_841;

impl Latency {
    /// Draws one duration.
    pub fn sample(&self, rng: &mut Stream) -> TimeMs {
        match *self {
            Latency::Fixed { ms } => ms,
            Latency::Uniform { min_ms, max_ms } => rng.between(min_ms, max_ms),
            Latency::LogNormal { median_ms, p99_ms } => {
                let sigma = libm::log(p99_ms as f64 / median_ms as f64) / Z_P99;
                let z = rng.standard_normal();
                let ms = median_ms as f64 * libm::exp(sigma * z);
                let cap = p99_ms.saturating_mul(10) as f64;
                ms.clamp(0.0, cap).round() as TimeMs
            }
        }
    }

    /// Draws one duration from band `band` of the distribution: the
    /// quantile at `(band.rank + U) / band.of`, `U` uniform in `[0, 1)`.
    /// Band 0 holds the fastest `1 / of` of the draws. Over a band drawn
    /// uniformly at random the draw has the distribution of [`Latency::sample`]
    /// (`Explore::Priorities`: a session's priority is its band).
    pub fn sample_in_band(&self, rng: &mut Stream, band: Band) -> TimeMs {
        assert!(band.rank < band.of, "a band is one of `of`");
        let u = (f64::from(band.rank) + rng.unit()) / f64::from(band.of);
        self.quantile(u)
    }

    /// The duration at quantile `u` in `[0, 1)`.
    pub fn quantile(&self, u: f64) -> TimeMs {
        assert!((0.0..1.0).contains(&u), "a quantile is in [0, 1)");
        match *self {
            Latency::Fixed { ms } => ms,
            Latency::Uniform { min_ms, max_ms } => {
                let width = (max_ms - min_ms) as f64 + 1.0;
                min_ms.saturating_add((u * width) as TimeMs).min(max_ms)
            }
            Latency::LogNormal { median_ms, p99_ms } => {
                let sigma = libm::log(p99_ms as f64 / median_ms as f64) / Z_P99;
                let ms = median_ms as f64 * libm::exp(sigma * normal_quantile(u));
                let cap = p99_ms.saturating_mul(10) as f64;
                ms.clamp(0.0, cap).round() as TimeMs
            }
        }
    }

    /// The largest value a draw can take.
    pub fn max_ms(&self) -> TimeMs {
        match *self {
            Latency::Fixed { ms } => ms,
            Latency::Uniform { max_ms, .. } => max_ms,
            Latency::LogNormal { p99_ms, .. } => p99_ms.saturating_mul(10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StreamSource;

    #[test]
    fn lognormal_median_and_tail_are_roughly_right() {
        let mut rng = StreamSource::new([1; 32], 9).stream("latency");
        let l = Latency::LogNormal { median_ms: 100, p99_ms: 1000 };
        let mut draws: Vec<_> = (0..20_000).map(|_| l.sample(&mut rng)).collect();
        draws.sort_unstable();
        let median = draws[draws.len() / 2];
        let p99 = draws[draws.len() * 99 / 100];
        assert!((90..=110).contains(&median), "median {median}");
        assert!((850..=1150).contains(&p99), "p99 {p99}");
    }

    #[test]
    fn the_normal_quantile_inverts_the_normal_distribution() {
        for (u, z) in
            [(0.5, 0.0), (0.99, Z_P99), (0.01, -Z_P99), (0.975, 1.959_963_984_540_054), (1e-10, -6.361_340_902_404_056)]
        {
            assert!((normal_quantile(u) - z).abs() < 1e-9, "{u}: {} against {z}", normal_quantile(u));
        }
        assert!(normal_quantile(0.0).is_finite());
    }

    #[test]
    fn bands_split_the_distribution_and_together_are_the_distribution() {
        for l in [
            Latency::LogNormal { median_ms: 100, p99_ms: 1000 },
            Latency::Uniform { min_ms: 600, max_ms: 2_400 },
            Latency::Fixed { ms: 7 },
        ] {
            let mut rng = StreamSource::new([1; 32], 9).stream("bands");
            let of = 4;
            let mut banded: Vec<TimeMs> = Vec::new();
            let mut prev_max = 0;
            for rank in 0..of {
                let draws: Vec<TimeMs> = (0..5_000).map(|_| l.sample_in_band(&mut rng, Band { rank, of })).collect();
                let (lo, hi) = (*draws.iter().min().unwrap(), *draws.iter().max().unwrap());
                assert!(lo >= prev_max, "{l:?}: band {rank} starts where band {} ended", rank.saturating_sub(1));
                prev_max = hi;
                banded.extend(draws);
            }
            let mut plain: Vec<TimeMs> = (0..20_000).map(|_| l.sample(&mut rng)).collect();
            banded.sort_unstable();
            plain.sort_unstable();
            for q in [10, 50, 90, 99] {
                let (a, b) = (banded[banded.len() * q / 100] as f64, plain[plain.len() * q / 100] as f64);
                assert!((a - b).abs() <= 0.06 * b.max(10.0), "{l:?} p{q}: {a} banded against {b}");
            }
        }
    }

    #[test]
    fn uniform_bounds_are_checked() {
        assert!(ron::from_str::<Latency>("Uniform(min_ms: 5, max_ms: 1)").is_err());
    }
}
