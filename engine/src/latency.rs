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
    fn uniform_bounds_are_checked() {
        assert!(ron::from_str::<Latency>("Uniform(min_ms: 5, max_ms: 1)").is_err());
    }
}
