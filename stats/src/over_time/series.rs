//! A sweep's sessions over virtual time: the runs' buckets added up, on the
//! widest grid any run needed, and what `summary.json` says of each bucket.
//! Every sum is of integers, so the series is the same whatever the order the
//! runs were added in and whatever grid they came on; only the last step,
//! means and shares, is in floating point.

use serde::Serialize;

use super::latency_bins;
use super::{Bucket, RunBuckets};

/// What `summary.json` says of the sessions of every run over virtual time,
/// by the bucket they arrived in (`SessionsSummary::over_time`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverTime {
    /// The width of a bucket in minutes (the widest any run needed: 1 when
    /// every run's sessions ended within two hours).
    pub bucket_minutes: u64,
    /// Runs the series is over.
    pub runs: u64,
    /// The buckets from time 0, at most [`super::BUCKETS_MAX`].
    pub buckets: Vec<TimeBucket>,
}

/// One bucket of [`OverTime`]: the sessions, over all runs, that arrived in it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeBucket {
    /// Its start, minutes of virtual time from the start of a run.
    pub start_minute: u64,
    /// Sessions that arrived in it, over all runs.
    pub sessions: u64,
    /// Of those, the sessions that succeeded.
    pub succeeded: u64,
    /// `succeeded / sessions` (null when none arrived).
    pub success_share: Option<f64>,
    /// Their mean latency, arrival to end (null when none arrived).
    pub latency_mean_ms: Option<f64>,
    /// The 99th percentile of their latency, over all runs' sessions that
    /// arrived in it: the top of the latency bin that holds it (at most 1/8
    /// above the exact value), never above the largest (null when none arrived).
    pub latency_p99_ms: Option<u64>,
    /// Their mean wait for the model's shared capacity (null when none arrived).
    pub model_queue_mean_ms: Option<f64>,
    /// Sessions in flight at the bucket's start (arrived, not yet ended), the
    /// mean over runs.
    pub in_flight_mean: f64,
}

/// Adds runs' buckets up, in any order.
#[derive(Clone, Debug)]
pub struct OverTimeBuilder {
    /// The runs' buckets added up (`in_flight` summed over runs too).
    sums: Option<RunBuckets>,
    runs: u64,
    /// False once a run came without buckets (a row of an older agentsim):
    /// a series over some of the runs would say less than it seems to.
    complete: bool,
}

impl Default for OverTimeBuilder {
    fn default() -> Self {
        OverTimeBuilder { sums: None, runs: 0, complete: true }
    }
}

impl OverTimeBuilder {
    /// Adds one run of many sessions: its buckets, or `None` when its row
    /// carried none.
    pub fn add(&mut self, run: Option<&RunBuckets>) {
        self.runs += 1;
        let Some(run) = run else {
            self.complete = false;
            return;
        };
        let Some(sums) = &mut self.sums else {
            self.sums = Some(run.clone());
            return;
        };
        let width_minutes = sums.width_minutes.max(run.width_minutes);
        if sums.width_minutes < width_minutes {
            *sums = sums.widened(width_minutes);
        }
        let widened;
        let run = if run.width_minutes < width_minutes {
            widened = run.widened(width_minutes);
            &widened
        } else {
            run
        };
        if sums.buckets.len() < run.buckets.len() {
            sums.buckets.resize(run.buckets.len(), Bucket::default());
        }
        for (sum, bucket) in sums.buckets.iter_mut().zip(&run.buckets) {
            sum.add_arrivals(bucket);
            sum.in_flight += bucket.in_flight;
        }
        assert!(sums.buckets.len() as u64 <= super::BUCKETS_MAX, "a series of more than the most buckets");
    }

    /// The series, or `None` when there was no run or one came without buckets.
    pub fn finish(&self) -> Option<OverTime> {
        let sums = self.sums.as_ref().filter(|_| self.complete)?;
        let runs = self.runs as f64;
        let buckets = sums
            .buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let per_session = |sum: f64| (b.arrived > 0).then(|| sum / b.arrived as f64);
                TimeBucket {
                    start_minute: i as u64 * sums.width_minutes,
                    sessions: b.arrived,
                    succeeded: b.succeeded,
                    success_share: per_session(b.succeeded as f64),
                    latency_mean_ms: per_session(b.latency_sum_ms as f64),
                    latency_p99_ms: latency_bins::percentile(
                        b.latency_bins.iter().map(|(bin, n)| (*bin, *n)),
                        b.arrived,
                        99,
                        b.latency_max_ms,
                    ),
                    model_queue_mean_ms: per_session(b.model_queue_ms as f64),
                    in_flight_mean: b.in_flight as f64 / runs,
                }
            })
            .collect();
        Some(OverTime { bucket_minutes: sums.width_minutes, runs: self.runs, buckets })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::session;
    use super::*;

    fn run(sessions: &[agentsim_engine::SessionResult]) -> RunBuckets {
        RunBuckets::of(sessions)
    }

    #[test]
    fn runs_add_up_per_bucket_and_the_means_are_over_runs_or_sessions() {
        let a = run(&[session(0, 0, 20_000, true, 10), session(1, 70_000, 100_000, false, 0)]);
        let b = run(&[session(0, 0, 40_000, true, 30)]);
        let mut builder = OverTimeBuilder::default();
        builder.add(Some(&a));
        builder.add(Some(&b));
        let series = builder.finish().unwrap();
        assert_eq!(series.bucket_minutes, 1);
        assert_eq!(series.runs, 2);
        assert_eq!(series.buckets.len(), 2);
        let first = &series.buckets[0];
        assert_eq!((first.sessions, first.succeeded), (2, 2));
        assert_eq!(first.latency_mean_ms, Some(30_000.0));
        assert_eq!(first.model_queue_mean_ms, Some(20.0));
        assert_eq!(first.in_flight_mean, 1.0, "one session in flight at 0 in each run");
        let second = &series.buckets[1];
        assert_eq!(second.success_share, Some(0.0));
        assert_eq!(second.in_flight_mean, 0.0, "nothing in flight at 60 s");
        // A run alone holds exactly its latency as the p99 when it is the largest.
        assert_eq!(second.latency_p99_ms, Some(30_000));
    }

    #[test]
    fn the_order_of_runs_and_their_widths_do_not_change_the_series() {
        let narrow = run(&[session(0, 0, 20_000, true, 10), session(1, 150_000, 190_000, true, 0)]);
        let wide = run(&[session(0, 0, 10_000, true, 0), session(1, 8_000_000, 8_100_000, false, 5)]);
        assert_eq!((narrow.width_minutes, wide.width_minutes), (1, 2));
        let series = |runs: &[&RunBuckets]| {
            let mut builder = OverTimeBuilder::default();
            for r in runs {
                builder.add(Some(r));
            }
            builder.finish().unwrap()
        };
        let one = series(&[&narrow, &wide]);
        assert_eq!(one, series(&[&wide, &narrow]));
        assert_eq!(one.bucket_minutes, 2);
        assert_eq!(one.buckets[1].start_minute, 2);
        assert_eq!(one.buckets[1].sessions, 1, "the narrow run's arrival at 150 s is in minutes 2 to 4");
        assert!(one.buckets.len() <= 120);
    }

    #[test]
    fn a_run_without_buckets_leaves_no_series() {
        let mut builder = OverTimeBuilder::default();
        builder.add(Some(&run(&[session(0, 0, 1, true, 0)])));
        builder.add(None);
        assert_eq!(builder.finish(), None);
        assert_eq!(OverTimeBuilder::default().finish(), None);
    }
}
