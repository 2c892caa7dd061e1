//! Runs of many sessions: what each row says of its sessions (the `sessions`
//! column) and what a sweep says of them all (`Summary::sessions`): the share
//! of sessions that succeeded and that another session hurt, with intervals
//! by seed (the sessions of one run share its world, so they are not
//! independent), each run's latency of a task under load, and the sessions
//! over virtual time ([`crate::over_time`]).

use serde::Serialize;

use agentsim_engine::{Outcome, SessionResult};

use crate::measures::{ClusterSumsView, Spread, ValueCounts, clustered};
use crate::over_time::RunBuckets;
use crate::over_time::series::{OverTime, OverTimeBuilder};
use crate::rate::Rate;

/// One run's sessions, reduced to what a row keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    /// Sessions in the run.
    pub sessions: u64,
    /// Sessions whose outcome was a success.
    pub succeeded: u64,
    /// Sessions another session hurt (a race: `SessionResult::hurt_by`).
    pub hurt: u64,
    /// Median time from a session's arrival to its end.
    pub latency_p50_ms: u64,
    /// 99th percentile of that time.
    pub latency_p99_ms: u64,
    /// Time the sessions' model requests waited for the shared capacity, summed.
    pub model_queue_ms: u64,
    /// The sessions by the bucket of virtual time they arrived in; `None` in a
    /// row written before the column carried them.
    pub over_time: Option<RunBuckets>,
}

impl SessionCounts {
    /// The counts of a run's sessions; `None` for a run of one (no sessions listed).
    pub fn of(sessions: &[SessionResult]) -> Option<SessionCounts> {
        if sessions.is_empty() {
            return None;
        }
        let mut latencies: Vec<u64> = sessions.iter().map(SessionResult::latency_ms).collect();
        latencies.sort_unstable();
        Some(SessionCounts {
            sessions: sessions.len() as u64,
            succeeded: sessions.iter().filter(|s| s.outcome == Outcome::Success).count() as u64,
            hurt: sessions.iter().filter(|s| s.hurt_by.is_some()).count() as u64,
            latency_p50_ms: nearest_rank(&latencies, 50),
            latency_p99_ms: nearest_rank(&latencies, 99),
            model_queue_ms: sessions.iter().map(|s| s.model_queue_ms).fold(0, u64::saturating_add),
            over_time: Some(RunBuckets::of(sessions)),
        })
    }

    /// The `sessions` column:
    /// `n=50;ok=12;hurt=9;p50_ms=120400;p99_ms=610000;queue_ms=3400;t=1:...`,
    /// the buckets over time last ([`crate::over_time::column`]).
    pub fn to_column(&self) -> String {
        let mut column = format!(
            "n={};ok={};hurt={};p50_ms={};p99_ms={};queue_ms={}",
            self.sessions, self.succeeded, self.hurt, self.latency_p50_ms, self.latency_p99_ms, self.model_queue_ms
        );
        if let Some(over_time) = &self.over_time {
            column.push_str(";t=");
            column.push_str(&over_time.to_text());
        }
        column
    }

    /// Reads the `sessions` column back; an empty cell is a run of one. A cell
    /// without `t=` (written before the column carried the buckets) still reads,
    /// with no buckets.
    pub fn parse_column(text: &str) -> Result<Option<SessionCounts>, String> {
        if text.is_empty() {
            return Ok(None);
        }
        let mut counts = SessionCounts::default();
        let mut seen = 0u32;
        for part in text.split(';') {
            if let Some(buckets) = part.strip_prefix("t=") {
                if counts.over_time.is_some() {
                    return Err("column `sessions`: `t=` given twice".into());
                }
                let buckets = RunBuckets::parse(buckets).map_err(|e| format!("column `sessions`: {e}"))?;
                counts.over_time = Some(buckets);
                continue;
            }
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("column `sessions`: expected `name=number`, found `{part}`"))?;
            let value: u64 = value
                .parse()
                .map_err(|_| format!("column `sessions`: `{key}` must be a non-negative integer, found `{value}`"))?;
            let (slot, bit) = match key {
                "n" => (&mut counts.sessions, 0),
                "ok" => (&mut counts.succeeded, 1),
                "hurt" => (&mut counts.hurt, 2),
                "p50_ms" => (&mut counts.latency_p50_ms, 3),
                "p99_ms" => (&mut counts.latency_p99_ms, 4),
                "queue_ms" => (&mut counts.model_queue_ms, 5),
                other => return Err(format!("column `sessions`: unknown count `{other}`")),
            };
            *slot = value;
            seen |= 1 << bit;
        }
        if seen != 0b11_1111 {
            return Err("column `sessions`: expected n, ok, hurt, p50_ms, p99_ms and queue_ms".into());
        }
        if counts.sessions == 0 || counts.succeeded > counts.sessions || counts.hurt > counts.sessions {
            return Err(format!("column `sessions`: counts out of range in `{text}`"));
        }
        if let Some(over_time) = &counts.over_time {
            let buckets = &over_time.buckets;
            let arrived: u64 = buckets.iter().map(|b| b.arrived).sum();
            let succeeded: u64 = buckets.iter().map(|b| b.succeeded).sum();
            let queued: u128 = buckets.iter().map(|b| b.model_queue_ms).sum();
            if arrived != counts.sessions
                || succeeded != counts.succeeded
                || queued.min(u128::from(u64::MAX)) != u128::from(counts.model_queue_ms)
            {
                return Err("column `sessions`: the buckets of `t=` do not add up to n, ok and queue_ms".into());
            }
        }
        Ok(Some(counts))
    }
}

/// The nearest-rank percentile of sorted `values` (not empty).
fn nearest_rank(values: &[u64], percent: u64) -> u64 {
    assert!(!values.is_empty(), "a percentile of no values");
    let rank = (values.len() as u64 * percent).div_ceil(100).max(1);
    values[(rank - 1) as usize]
}

/// What a sweep says of its runs' sessions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionsSummary {
    /// Sessions over all runs.
    pub sessions: u64,
    /// Share of sessions that succeeded, with its interval by seed.
    pub completion: Rate,
    /// Share of sessions another session hurt (a race), with its interval by seed.
    pub hurt_by_another: Rate,
    /// Per run: the median latency of a task (arrival to end).
    pub latency_p50_ms: Spread,
    /// Per run: the 99th percentile latency of a task.
    pub latency_p99_ms: Spread,
    /// Per run: the time model requests waited for the shared capacity.
    pub model_queue_ms: Spread,
    /// The sessions over virtual time, by the bucket they arrived in (absent
    /// when a row came without its buckets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_time: Option<OverTime>,
}

/// Adds runs' session counts up, in seed order.
#[derive(Clone, Debug, Default)]
pub struct SessionsBuilder {
    sessions: u64,
    succeeded: u64,
    hurt: u64,
    runs: u64,
    /// Per run, the shares that succeeded and were hurt: sums and sums of squares.
    ok_sums: ClusterSumsView,
    hurt_sums: ClusterSumsView,
    latency_p50_ms: ValueCounts,
    latency_p99_ms: ValueCounts,
    model_queue_ms: ValueCounts,
    over_time: OverTimeBuilder,
}

impl SessionsBuilder {
    /// Adds one run's counts.
    pub fn add(&mut self, counts: &SessionCounts) {
        assert!(counts.sessions > 0, "a run holds at least one session");
        self.sessions += counts.sessions;
        self.succeeded += counts.succeeded;
        self.hurt += counts.hurt;
        self.runs += 1;
        for (sums, hits) in [(&mut self.ok_sums, counts.succeeded), (&mut self.hurt_sums, counts.hurt)] {
            let share = hits as f64 / counts.sessions as f64;
            sums.sum_y += share;
            sums.sum_y2 += share * share;
        }
        self.latency_p50_ms.push(counts.latency_p50_ms);
        self.latency_p99_ms.push(counts.latency_p99_ms);
        self.model_queue_ms.push(counts.model_queue_ms);
        self.over_time.add(counts.over_time.as_ref());
    }

    /// The summary, or `None` when no run had sessions.
    pub fn finish(&self) -> Option<SessionsSummary> {
        if self.runs == 0 {
            return None;
        }
        Some(SessionsSummary {
            sessions: self.sessions,
            completion: clustered(self.succeeded, self.sessions, self.runs, &self.ok_sums).0,
            hurt_by_another: clustered(self.hurt, self.sessions, self.runs, &self.hurt_sums).0,
            latency_p50_ms: Spread::of(&self.latency_p50_ms),
            latency_p99_ms: Spread::of(&self.latency_p99_ms),
            model_queue_ms: Spread::of(&self.model_queue_ms),
            over_time: self.over_time.finish(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_reads_back_and_bad_cells_are_refused() {
        let counts = SessionCounts {
            sessions: 50,
            succeeded: 12,
            hurt: 9,
            latency_p50_ms: 120_400,
            latency_p99_ms: 610_000,
            model_queue_ms: 3_400,
            over_time: None,
        };
        assert_eq!(SessionCounts::parse_column(&counts.to_column()).unwrap(), Some(counts));
        assert_eq!(SessionCounts::parse_column("").unwrap(), None);
        assert!(SessionCounts::parse_column("n=5;ok=6;hurt=0;p50_ms=1;p99_ms=1;queue_ms=0").is_err());
        assert!(SessionCounts::parse_column("n=5;ok=1").unwrap_err().contains("expected n, ok"));
        assert!(SessionCounts::parse_column("n=x").unwrap_err().contains("non-negative integer"));
    }

    #[test]
    fn a_column_with_its_buckets_reads_back_and_an_old_one_without_still_reads() {
        let sessions = [
            crate::over_time::tests::session(0, 0, 41_000, true, 0),
            crate::over_time::tests::session(1, 10_000, 30_000, true, 0),
            crate::over_time::tests::session(2, 130_000, 270_000, false, 50),
        ];
        let counts = SessionCounts::of(&sessions).unwrap();
        let column = counts.to_column();
        assert_eq!(
            column,
            "n=3;ok=2;hurt=0;p50_ms=41000;p99_ms=140000;queue_ms=50;t=1:1.2.2.61000.41000.0.97+106/0/0.1.0.140000.140000.50.120/1/1"
        );
        assert_eq!(SessionCounts::parse_column(&column).unwrap(), Some(counts.clone()));
        // A cell written before the buckets: the same counts, no buckets.
        let old = column.split(";t=").next().unwrap();
        let read = SessionCounts::parse_column(old).unwrap().unwrap();
        assert_eq!(read, SessionCounts { over_time: None, ..counts.clone() });
        // Buckets that do not add up to the counts, or given twice, are refused.
        let wrong = column.replace("n=3;ok=2", "n=4;ok=2");
        assert!(SessionCounts::parse_column(&wrong).unwrap_err().contains("do not add up"), "{wrong}");
        let twice = format!("{column};t=1:0");
        assert!(SessionCounts::parse_column(&twice).unwrap_err().contains("given twice"));
        let bad = column.replace("t=1:", "t=3:");
        assert!(SessionCounts::parse_column(&bad).unwrap_err().contains("power of two"));
        // A summary built from the rows read back is the summary of the runs.
        let summary = |counts: &SessionCounts| {
            let mut builder = SessionsBuilder::default();
            builder.add(counts);
            builder.finish().unwrap()
        };
        let from_row = summary(&SessionCounts::parse_column(&column).unwrap().unwrap());
        assert_eq!(from_row, summary(&counts));
        assert!(from_row.over_time.is_some());
        assert_eq!(summary(&read).over_time, None, "an old row gives no series");
    }

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&values, 50), 50);
        assert_eq!(nearest_rank(&values, 99), 99);
        assert_eq!(nearest_rank(&[7], 99), 7);
    }
}
