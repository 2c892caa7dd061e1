//! A run's sessions over virtual time: bucketed by the minute they arrived, so
//! that a sweep can say how latency, success and load moved during the run
//! (`SessionsSummary::over_time`), and so that the buckets travel in the row
//! (`merge` and `--resume` rebuild the summary from `trajectories.csv`).
//!
//! **The rule for a run's buckets.** They cover virtual time from 0 to the
//! last session's end, `width` minutes each, `width` the smallest power of two
//! (1, 2, 4, ...) that needs at most [`BUCKETS_MAX`] buckets: one a minute for
//! a run whose sessions all end within two hours. Widths that are powers of two
//! divide each other, so runs of different widths add up on the wider grid
//! ([`RunBuckets::widened`]). It depends on the run's sessions only.

use std::collections::BTreeMap;

use agentsim_engine::{Outcome, SessionResult};

pub mod column;
pub mod latency_bins;
pub mod series;

/// The most buckets of a run, and of a sweep's series.
pub const BUCKETS_MAX: u64 = 120;

/// One minute of virtual time.
pub const MINUTE_MS: u64 = 60_000;

/// The sessions that arrived in one bucket of virtual time (of one run, or
/// added up over runs), and the sessions in flight at its start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Sessions that arrived in the bucket.
    pub arrived: u64,
    /// Of those, the sessions that succeeded.
    pub succeeded: u64,
    /// Their latencies (arrival to end), summed.
    pub latency_sum_ms: u128,
    /// The largest of their latencies (0 when none arrived).
    pub latency_max_ms: u64,
    /// Their time waiting for the model's shared capacity, summed.
    pub model_queue_ms: u128,
    /// Sessions in flight at the bucket's start: arrived at or before it and
    /// not yet ended (added up over runs in a series).
    pub in_flight: u64,
    /// Their latencies as counts per [`latency_bins`] bin.
    pub latency_bins: BTreeMap<u32, u64>,
}

impl Bucket {
    /// Adds `other`'s sessions (arrivals, sums, bins) to this bucket's; the
    /// sessions in flight are left alone (they are counted at an instant).
    fn add_arrivals(&mut self, other: &Bucket) {
        self.arrived += other.arrived;
        self.succeeded += other.succeeded;
        self.latency_sum_ms += other.latency_sum_ms;
        self.latency_max_ms = self.latency_max_ms.max(other.latency_max_ms);
        self.model_queue_ms += other.model_queue_ms;
        for (bin, count) in &other.latency_bins {
            *self.latency_bins.entry(*bin).or_default() += count;
        }
    }
}

/// A run's sessions over virtual time: its buckets, `width_minutes` each from 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunBuckets {
    /// The width of a bucket in minutes: a power of two.
    pub width_minutes: u64,
    /// The buckets from time 0, at most [`BUCKETS_MAX`]; the last holds the
    /// last session's end.
    pub buckets: Vec<Bucket>,
}

/// The width (minutes) the rule gives a run whose last session ends at `last_end_ms`.
pub fn width_minutes_for(last_end_ms: u64) -> u64 {
    let mut width = 1u64;
    while last_end_ms / (width * MINUTE_MS) + 1 > BUCKETS_MAX {
        width *= 2;
    }
    width
}

impl RunBuckets {
    /// The buckets of a run's sessions (not empty).
    pub fn of(sessions: &[SessionResult]) -> RunBuckets {
        assert!(!sessions.is_empty(), "buckets of no sessions");
        let last_end_ms = sessions.iter().map(|s| s.ended_ms).max().unwrap_or(0);
        let width_minutes = width_minutes_for(last_end_ms);
        let width_ms = width_minutes * MINUTE_MS;
        let count = (last_end_ms / width_ms + 1) as usize;
        let mut buckets = vec![Bucket::default(); count];
        // Sessions in flight at bucket i's start (i * width): arrived <= start <
        // ended, that is ceil(arrived / width) <= i < ceil(ended / width); as
        // changes at those indices, summed below.
        let mut in_flight_changes = vec![0i64; count + 1];
        for s in sessions {
            let latency_ms = s.latency_ms();
            let bucket = &mut buckets[(s.arrived_ms / width_ms) as usize];
            bucket.arrived += 1;
            bucket.succeeded += u64::from(s.outcome == Outcome::Success);
            bucket.latency_sum_ms += u128::from(latency_ms);
            bucket.latency_max_ms = bucket.latency_max_ms.max(latency_ms);
            bucket.model_queue_ms += u128::from(s.model_queue_ms);
            *bucket.latency_bins.entry(latency_bins::bin_of(latency_ms)).or_default() += 1;
            in_flight_changes[s.arrived_ms.div_ceil(width_ms) as usize] += 1;
            in_flight_changes[s.ended_ms.div_ceil(width_ms) as usize] -= 1;
        }
        let mut in_flight = 0i64;
        for (bucket, change) in buckets.iter_mut().zip(&in_flight_changes) {
            in_flight += change;
            assert!(in_flight >= 0, "more sessions ended than arrived");
            bucket.in_flight = in_flight as u64;
        }
        RunBuckets { width_minutes, buckets }
    }

    /// The same sessions on a grid `width_minutes` wide (a multiple of this
    /// one's): each wide bucket adds up the arrivals of the narrow ones it
    /// covers and keeps the sessions in flight at its start (its first narrow
    /// bucket's).
    pub fn widened(&self, width_minutes: u64) -> RunBuckets {
        assert!(
            width_minutes >= self.width_minutes && width_minutes % self.width_minutes == 0,
            "widen {} minutes to {width_minutes}",
            self.width_minutes
        );
        let factor = (width_minutes / self.width_minutes) as usize;
        let buckets = self
            .buckets
            .chunks(factor)
            .map(|narrow| {
                let mut wide = Bucket { in_flight: narrow[0].in_flight, ..Bucket::default() };
                for b in narrow {
                    wide.add_arrivals(b);
                }
                wide
            })
            .collect();
        RunBuckets { width_minutes, buckets }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use agentsim_engine::{Metrics, Verdict};

    pub(crate) fn session(i: u32, arrived_ms: u64, ended_ms: u64, ok: bool, queue_ms: u64) -> SessionResult {
        SessionResult {
            session: i,
            arrived_ms,
            ended_ms,
            outcome: if ok { Outcome::Success } else { Outcome::WrongResult },
            verdict: Verdict {
                success: ok,
                escalated: false,
                milestone: "sessions",
                detail: String::new(),
                told_accurately: None,
                uncertain: None,
            },
            end_reason: String::new(),
            metrics: Metrics::default(),
            model_queue_ms: queue_ms,
            hurt_by: None,
        }
    }

    #[test]
    fn sessions_fall_in_the_minute_they_arrived_and_are_in_flight_until_they_end() {
        let sessions = [
            session(0, 0, 90_000, true, 100),
            session(1, 30_000, 60_000, false, 0),
            session(2, 60_000, 200_000, true, 50),
            session(3, 125_000, 130_000, true, 0),
        ];
        let run = RunBuckets::of(&sessions);
        assert_eq!(run.width_minutes, 1);
        assert_eq!(run.buckets.len(), 4, "0 to 200 s: minutes 0, 1, 2 and 3");
        let arrived: Vec<u64> = run.buckets.iter().map(|b| b.arrived).collect();
        assert_eq!(arrived, [2, 1, 1, 0]);
        // At 0: session 0; at 60 s: 0 and 2 (1 ended at 60 s); at 120 s: 2; at 180 s: 2.
        let in_flight: Vec<u64> = run.buckets.iter().map(|b| b.in_flight).collect();
        assert_eq!(in_flight, [1, 2, 1, 1]);
        assert_eq!(run.buckets[0].succeeded, 1);
        assert_eq!(run.buckets[0].latency_sum_ms, 120_000);
        assert_eq!(run.buckets[0].latency_max_ms, 90_000);
        assert_eq!(run.buckets[0].model_queue_ms, 100);
        assert_eq!(run.buckets[0].latency_bins.values().sum::<u64>(), 2);
    }

    #[test]
    fn a_run_longer_than_two_hours_gets_wider_buckets_and_never_more_than_120() {
        assert_eq!(width_minutes_for(0), 1);
        assert_eq!(width_minutes_for(119 * MINUTE_MS + 59_999), 1);
        assert_eq!(width_minutes_for(120 * MINUTE_MS), 2);
        assert_eq!(width_minutes_for(240 * MINUTE_MS), 4);
        let run = RunBuckets::of(&[session(0, 0, 10, true, 0), session(1, 7_000_000, 14_000_000, true, 0)]);
        assert_eq!(run.width_minutes, 2);
        assert!(run.buckets.len() as u64 <= BUCKETS_MAX);
        for end_ms in [0, MINUTE_MS, 119 * MINUTE_MS, 121 * MINUTE_MS, 10_000 * MINUTE_MS, u64::MAX / 2] {
            let width = width_minutes_for(end_ms);
            assert!(end_ms / (width * MINUTE_MS) < BUCKETS_MAX, "{end_ms}");
            assert!(width == 1 || end_ms / (width / 2 * MINUTE_MS) >= BUCKETS_MAX, "{end_ms}: not the smallest");
        }
    }

    #[test]
    fn widening_adds_arrivals_and_keeps_the_sessions_in_flight_at_the_start() {
        let sessions = [
            session(0, 0, 90_000, true, 100),
            session(1, 30_000, 60_000, false, 0),
            session(2, 60_000, 200_000, true, 50),
        ];
        let run = RunBuckets::of(&sessions);
        let wide = run.widened(2);
        assert_eq!(wide.buckets.len(), 2);
        assert_eq!(wide.buckets[0].arrived, 3);
        assert_eq!(wide.buckets[0].in_flight, 1);
        assert_eq!(wide.buckets[1].in_flight, 1, "at 120 s only session 2");
        assert_eq!(wide.buckets[0].latency_max_ms, 140_000);
        assert_eq!(wide.widened(2), wide);
    }
}
