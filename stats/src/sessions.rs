//! Runs of many sessions: what each row says of its sessions (the `sessions`
//! column) and what a sweep says of them all (`Summary::sessions`): the share
//! of sessions that succeeded and that another session hurt, with intervals
//! by seed (the sessions of one run share its world, so they are not
//! independent), each run's latency of a task under load, and the sessions
//! over virtual time ([`crate::over_time`]).

use serde::Serialize;

use agentsim_engine::sim::is_agents;
use agentsim_engine::{Outcome, SessionResult};

use crate::measures::{ClusterSumsView, Spread, ValueCounts, clustered};
use crate::over_time::RunBuckets;
use crate::over_time::series::{OverTime, OverTimeBuilder};
use crate::rate::Rate;

/// One run's sessions, reduced to what a row keeps. Every count but `absent`
/// and `not_started` is over the agents' sessions: a session whose agent never
/// came (an MCP client that never initialized) or that never started (it would
/// have arrived after the horizon) says nothing of the agent, so it is
/// outside its rates, latencies and buckets, and counted apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    /// The agents' sessions in the run (`absent` and `not_started` apart).
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
    /// Sessions whose agent never came (outcome `absent`).
    pub absent: u64,
    /// Sessions that never started (outcome `not_started`).
    pub not_started: u64,
}

impl SessionCounts {
    /// The counts of a run's sessions; `None` for a run of one (no sessions listed).
    pub fn of(all: &[SessionResult]) -> Option<SessionCounts> {
        if all.is_empty() {
            return None;
        }
        let count_of = |outcome: Outcome| all.iter().filter(|s| s.outcome == outcome).count() as u64;
        let (absent, not_started) = (count_of(Outcome::Absent), count_of(Outcome::NotStarted));
        // Copied only when some are left out (rarely): the common run is read in place.
        let kept: Vec<SessionResult>;
        let sessions = if absent + not_started == 0 {
            all
        } else {
            kept = all.iter().filter(|s| is_agents(s.outcome)).cloned().collect();
            &kept
        };
        let mut latencies: Vec<u64> = sessions.iter().map(SessionResult::latency_ms).collect();
        latencies.sort_unstable();
        let percentile = |percent| if latencies.is_empty() { 0 } else { nearest_rank(&latencies, percent) };
        Some(SessionCounts {
            sessions: sessions.len() as u64,
            succeeded: sessions.iter().filter(|s| s.outcome == Outcome::Success).count() as u64,
            hurt: sessions.iter().filter(|s| s.hurt_by.is_some()).count() as u64,
            latency_p50_ms: percentile(50),
            latency_p99_ms: percentile(99),
            model_queue_ms: sessions.iter().map(|s| s.model_queue_ms).fold(0, u64::saturating_add),
            over_time: (!sessions.is_empty()).then(|| RunBuckets::of(sessions)),
            absent,
            not_started,
        })
    }

    /// The `sessions` column:
    /// `n=50;ok=12;hurt=9;p50_ms=120400;p99_ms=610000;queue_ms=3400;t=1:...`,
    /// with `absent=K` and `not_started=K` before the buckets when there are
    /// any (so a row without them is the row it always was), the buckets over
    /// time last ([`crate::over_time::column`]).
    pub fn to_column(&self) -> String {
        let mut column = format!(
            "n={};ok={};hurt={};p50_ms={};p99_ms={};queue_ms={}",
            self.sessions, self.succeeded, self.hurt, self.latency_p50_ms, self.latency_p99_ms, self.model_queue_ms
        );
        for (key, count) in [("absent", self.absent), ("not_started", self.not_started)] {
            if count > 0 {
                column.push_str(&format!(";{key}={count}"));
            }
        }
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
                "absent" => (&mut counts.absent, 6),
                "not_started" => (&mut counts.not_started, 7),
                other => return Err(format!("column `sessions`: unknown count `{other}`")),
            };
            if seen & (1 << bit) != 0 {
                return Err(format!("column `sessions`: `{key}` given twice"));
            }
            *slot = value;
            seen |= 1 << bit;
        }
        if seen & 0b11_1111 != 0b11_1111 {
            return Err("column `sessions`: expected n, ok, hurt, p50_ms, p99_ms and queue_ms".into());
        }
        // A run holds at least one session, if only an absent one.
        let none = counts.sessions == 0 && counts.absent == 0 && counts.not_started == 0;
        if none || counts.succeeded > counts.sessions || counts.hurt > counts.sessions {
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
    /// The agents' sessions over all runs: the denominator of the shares.
    pub sessions: u64,
    /// Sessions whose agent never came, over all runs: outside the shares.
    #[serde(skip_serializing_if = "is_zero")]
    pub absent: u64,
    /// Sessions that never started (past the horizon), over all runs:
    /// outside the shares.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_started: u64,
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

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Adds runs' session counts up, in seed order.
#[derive(Clone, Debug, Default)]
pub struct SessionsBuilder {
    sessions: u64,
    absent: u64,
    not_started: u64,
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
        self.absent += counts.absent;
        self.not_started += counts.not_started;
        if counts.sessions == 0 {
            // No session of the agents' (every client absent): nothing of
            // this run is in the shares, latencies or buckets.
            return;
        }
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
            absent: self.absent,
            not_started: self.not_started,
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
            absent: 0,
            not_started: 0,
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

    /// Absent and not-started sessions are counted apart: outside the shares,
    /// latencies and buckets, in the column only when there are any, and in
    /// the summary; a run of absent sessions only adds to the shares nothing.
    #[test]
    fn absent_and_not_started_sessions_are_counted_apart_from_the_agents() {
        let outside = |i, outcome| SessionResult { outcome, ..crate::over_time::tests::session(i, 0, 0, false, 0) };
        let sessions = [
            crate::over_time::tests::session(0, 0, 41_000, true, 0),
            crate::over_time::tests::session(1, 10_000, 30_000, false, 0),
            outside(2, Outcome::Absent),
            SessionResult { arrived_ms: 900_000, ended_ms: 900_000, ..outside(3, Outcome::NotStarted) },
            SessionResult { arrived_ms: 950_000, ended_ms: 950_000, ..outside(4, Outcome::NotStarted) },
        ];
        let counts = SessionCounts::of(&sessions).unwrap();
        let agents_only = SessionCounts::of(&sessions[..2]).unwrap();
        assert_eq!(counts, SessionCounts { absent: 1, not_started: 2, ..agents_only.clone() });
        let column = counts.to_column();
        assert!(column.starts_with("n=2;ok=1;hurt=0;") && column.contains(";absent=1;not_started=2;t="), "{column}");
        assert!(!agents_only.to_column().contains("absent"), "a row without any is the row it always was");
        assert_eq!(SessionCounts::parse_column(&column).unwrap(), Some(counts.clone()));
        let twice = column.replace(";absent=1", ";absent=1;absent=1");
        assert!(SessionCounts::parse_column(&twice).unwrap_err().contains("given twice"));
        // Every client absent: the run is in the counts, not in the shares.
        let nobody = SessionCounts::of(&[outside(0, Outcome::Absent)]).unwrap();
        assert_eq!((nobody.sessions, nobody.absent, nobody.over_time.is_none()), (0, 1, true));
        assert_eq!(SessionCounts::parse_column(&nobody.to_column()).unwrap(), Some(nobody.clone()));
        let mut builder = SessionsBuilder::default();
        builder.add(&counts);
        builder.add(&nobody);
        let summary = builder.finish().unwrap();
        assert_eq!((summary.sessions, summary.absent, summary.not_started), (2, 2, 2));
        assert_eq!((summary.completion.count, summary.completion.n), (1, 2));
        let json = serde_json::to_string(&summary).unwrap();
        assert!(json.contains("\"absent\":2,\"not_started\":2"), "{json}");
    }

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&values, 50), 50);
        assert_eq!(nearest_rank(&values, 99), 99);
        assert_eq!(nearest_rank(&[7], 99), 7);
    }
}
