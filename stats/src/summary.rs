//! Aggregates a sweep, in seed order, into the numbers of `summary.json`, the rows
//! of `trajectories.csv` and the printed table.

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::measures::{ClusterSumsView, HISTOGRAM_BINS_MAX, Histogram, Spread, ValueCounts, clustered};
use crate::pass_k::PassK;
use crate::rate::Rate;
use agentsim_engine::{DigestChain, Outcome, Trajectory};

use crate::importance::{ImportanceBuilder, ImportanceSummary};
pub use crate::rows::{CHECK_COLUMN, Record, Row, append_check, parse_usd, row_check, usd};

/// A failing run kept for an incident that was not written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkippedFailure {
    /// The incident's path relative to the output directory, as it would have
    /// been written (`failures/OUTCOME_seedN.ron`).
    pub file: String,
    /// Why it was not written, in words.
    pub reason: String,
}

/// What `summary.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Agent spec as given.
    pub agent: String,
    /// First seed (inclusive).
    pub seed_start: u64,
    /// Last seed (exclusive).
    pub seed_end: u64,
    /// Fault probability multiplier.
    pub fault_scale: f64,
    /// Number of trajectories.
    pub trajectories: u64,
    /// Share of trajectories that succeeded.
    pub completion: Rate,
    /// Among trajectories that met a fault, the share that ended safely (success or
    /// escalation).
    pub recovery: Rate,
    /// Share of trajectories where a minefield fired.
    pub violation: Rate,
    /// Trajectories in which each minefield fired, by name.
    pub minefields: BTreeMap<String, u64>,
    /// Per planner or stack-layer decision (`source.what`, as in the timeline):
    /// in how many trajectories it was taken, and how often in all.
    pub decisions: BTreeMap<String, DecisionCount>,
    /// Trajectories per outcome, every outcome listed, in reporting order.
    #[serde(serialize_with = "as_map")]
    pub outcomes: Vec<(String, u64)>,
    /// Planner turns.
    pub turns: Spread,
    /// Tool calls.
    pub tool_calls: Spread,
    /// Model cost in millionths of a dollar.
    pub cost_micro_usd: Spread,
    /// Virtual time to finish.
    pub virtual_ms: Spread,
    /// Total tokens over all trajectories.
    pub tokens_total: u64,
    /// Total cost, dollars.
    pub cost_usd_total: String,
    /// Cost per successful trajectory, dollars (all cost, divided by successes).
    pub cost_usd_per_success: Option<String>,
    /// Digest over all trajectory digests in seed order.
    pub digest: String,
    /// Incident files written for the first failures of each failure mode (paths
    /// relative to the output directory), ready for `agentsim replay`.
    pub failures: Vec<String>,
    /// Failing runs whose incident was not written, each with why (too large to
    /// be read back, or a re-run that was not the run its row records): the rows
    /// and this summary are written whatever their incidents do. Left out when
    /// empty, so a sweep with none writes the bytes it always did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures_skipped: Vec<SkippedFailure>,
    /// Attempts per seed (`--trials`); 1 unless pass^k was asked for. With more,
    /// every rate above counts each (seed, trial) as one trajectory.
    pub trials: u32,
    /// Contextual accuracy: among trajectories where the agent told the user an
    /// outcome, the share where what it said matched the world at that moment.
    pub contextual_accuracy: Rate,
    /// Tool fidelity: the share of trajectories with no minefield and no call the
    /// world refused as malformed or unknown (a 4xx that was not an injected fault).
    pub tool_fidelity: Rate,
    /// Calls the world refused with a 4xx, over all trajectories.
    pub rejected_calls_total: u64,
    /// Recovery per kind of fault: among trajectories that met that kind, the
    /// share that ended safely (success or escalation).
    pub recovery_by_fault: BTreeMap<String, Rate>,
    /// Prompt plus completion tokens per trajectory.
    pub tokens: Spread,
    /// pass^k for k = 1..=trials, present when `trials` > 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_k: Option<PassKSummary>,
    /// With `trials` > 1, the design effect of each rate whose interval is
    /// computed by seed cluster (`completion`, `violation`, `tool_fidelity`): the
    /// trials of one seed share the world and its faults, so they are not
    /// independent, and the intervals are Wilson intervals on the effective
    /// sample size `n / design_effect` (see [`clustered`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub design_effect: Option<BTreeMap<String, f64>>,
    /// Importance-sampling estimates of the nominal rates, present only in a
    /// sweep with `--importance` (see [`crate::importance`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub importance: Option<ImportanceSummary>,
    /// In a world that reports checks (tau2's reward basis): how often each
    /// passed, over all trajectories and per task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<crate::checks::ChecksSummary>,
    /// In a sweep of runs of many sessions: how the sessions fared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<crate::sessions::SessionsSummary>,
    /// Present only when the sweep was interrupted (and so absent from a complete
    /// run's bytes): which seeds the other fields cover.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
}

/// Per-seed sums of one rate's hits over a seed's trials, for its interval by
/// seed cluster.
#[derive(Clone, Copy, Debug, Default)]
struct ClusterSums {
    /// Hits among the open seed's trials.
    open: u32,
    /// Over closed seeds: the sum of the per-seed shares y_s, and of y_s^2.
    sum_y: f64,
    sum_y2: f64,
}

impl ClusterSums {
    fn close(&mut self, trials: u32) {
        let y = f64::from(self.open) / f64::from(trials);
        self.sum_y += y;
        self.sum_y2 += y * y;
        self.open = 0;
    }
}

/// What an interrupted sweep covers: seeds `seed_start..done_until_seed`, every
/// trial of each; `sweep --resume` continues from `done_until_seed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Partial {
    /// The first seed not done.
    pub done_until_seed: u64,
}

/// pass^k as tau-bench defines it: the mean over task instances (seeds) of
/// C(c, k) / C(n, k), for c successes in n trials.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassKSummary {
    /// Trials per instance.
    pub trials: u32,
    /// Instances (seeds).
    pub instances: u64,
    /// pass^k by k, for k = 1..=trials.
    pub values: BTreeMap<u32, f64>,
    /// The share of instances solved in every trial (pass^trials, a plain
    /// proportion of instances) with its Wilson interval.
    pub all_trials: Rate,
}

fn as_map<S: serde::Serializer>(pairs: &[(String, u64)], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// How often one kind of decision was taken in a sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DecisionCount {
    /// Trajectories in which it was taken at least once.
    pub trajectories: u64,
    /// Times it was taken, in all trajectories.
    pub times: u64,
}

/// Accumulates trajectories, in seed order, into a [`Summary`].
pub struct SummaryBuilder {
    outcomes: [u64; Outcome::ALL.len()],
    met_fault: u64,
    recovered: u64,
    violated: u64,
    minefields: BTreeMap<String, u64>,
    decisions: BTreeMap<String, DecisionCount>,
    turns: ValueCounts,
    tool_calls: ValueCounts,
    cost: ValueCounts,
    virtual_ms: ValueCounts,
    tokens_total: u64,
    cost_total: u64,
    chain: DigestChain,
    told: u64,
    told_accurately: u64,
    faithful: u64,
    rejected_calls_total: u64,
    /// Per fault kind met: (trajectories, of which ended safely).
    by_fault: BTreeMap<String, (u64, u64)>,
    tokens: ValueCounts,
    trials: u32,
    pass_k: Option<PassK>,
    /// The seed whose trials are being counted, and its successes so far.
    open_seed: Option<(u64, u32, u32)>,
    solved_all: u64,
    importance: Option<ImportanceBuilder>,
    /// With trials: per-seed sums of completion, violation and tool fidelity.
    clusters: [ClusterSums; 3],
    seeds_closed: u64,
    checks: crate::checks::ChecksBuilder,
    sessions: crate::sessions::SessionsBuilder,
}

impl Default for SummaryBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl SummaryBuilder {
    /// Empty.
    pub fn new() -> Self {
        Self {
            outcomes: [0; Outcome::ALL.len()],
            met_fault: 0,
            recovered: 0,
            violated: 0,
            minefields: BTreeMap::new(),
            decisions: BTreeMap::new(),
            turns: ValueCounts::default(),
            tool_calls: ValueCounts::default(),
            cost: ValueCounts::default(),
            virtual_ms: ValueCounts::default(),
            tokens_total: 0,
            cost_total: 0,
            chain: DigestChain::new(),
            told: 0,
            told_accurately: 0,
            faithful: 0,
            rejected_calls_total: 0,
            by_fault: BTreeMap::new(),
            tokens: ValueCounts::default(),
            trials: 1,
            pass_k: None,
            open_seed: None,
            solved_all: 0,
            importance: None,
            clusters: [ClusterSums::default(); 3],
            seeds_closed: 0,
            checks: crate::checks::ChecksBuilder::default(),
            sessions: crate::sessions::SessionsBuilder::default(),
        }
    }

    /// Adds importance-sampling estimates for a sweep tilted by `scale` (`None`:
    /// a plain sweep).
    pub fn with_importance(mut self, scale: Option<f64>) -> Self {
        self.importance = scale.map(ImportanceBuilder::new);
        self
    }

    /// Adds importance-sampling estimates for a sweep drawn under `plan`, whose
    /// tilts the summary lists (`None`: a plain sweep).
    pub fn with_importance_plan(mut self, plan: Option<crate::tilts::Plan>) -> Self {
        self.importance = plan.map(ImportanceBuilder::with_plan);
        self
    }

    /// Empty, for `trials` attempts per seed (pass^k). Trajectories must then
    /// arrive in (seed, trial) order, `trials` per seed.
    pub fn with_trials(trials: u32) -> Self {
        let mut builder = Self::new();
        builder.trials = trials;
        if trials > 1 {
            builder.pass_k = Some(PassK::new(trials));
        }
        builder
    }

    fn close_seed(&mut self) {
        if let Some((seed, seen, successes)) = self.open_seed.take() {
            assert_eq!(seen, self.trials, "seed {seed}: {seen} trials, expected {}", self.trials);
            if let Some(pass_k) = &mut self.pass_k {
                pass_k.add(successes);
            }
            self.solved_all += u64::from(successes == self.trials);
            for sums in &mut self.clusters {
                sums.close(self.trials);
            }
            self.seeds_closed += 1;
        }
    }

    /// Counts one trial of `seed`: `hits` are its completion, violation and
    /// tool fidelity.
    fn count_trial(&mut self, seed: u64, hits: [bool; 3]) {
        match &mut self.open_seed {
            Some((open, seen, successes)) if *open == seed => {
                *seen += 1;
                *successes += u32::from(hits[0]);
            }
            _ => {
                self.close_seed();
                self.open_seed = Some((seed, 1, u32::from(hits[0])));
            }
        }
        for (sums, hit) in self.clusters.iter_mut().zip(hits) {
            sums.open += u32::from(hit);
        }
    }

    /// Adds the next trajectory (in seed order).
    pub fn add(&mut self, t: &Trajectory) {
        self.add_record(&Record::of(t));
    }

    /// Adds the next record (in seed order): a trajectory's, or a CSV row's.
    pub fn add_record(&mut self, r: &Record) {
        let index = Outcome::ALL.iter().position(|o| *o == r.outcome).expect("every outcome is listed");
        self.outcomes[index] += 1;
        if r.faults_seen > 0 {
            self.met_fault += 1;
            self.recovered += u64::from(r.recovered);
        }
        self.violated += u64::from(r.violations > 0);
        for name in &r.minefields {
            *self.minefields.entry(name.clone()).or_default() += 1;
        }
        for (name, times) in &r.decisions {
            let count = self.decisions.entry(name.clone()).or_default();
            count.trajectories += 1;
            count.times += times;
        }
        self.turns.push(r.turns);
        self.tool_calls.push(r.tool_calls);
        self.cost.push(r.cost_micro_usd);
        self.virtual_ms.push(r.virtual_ms);
        self.tokens_total += r.tokens;
        self.cost_total += r.cost_micro_usd;
        self.chain.push(&r.digest);
        if let Some(accurate) = r.told_accurately {
            self.told += 1;
            self.told_accurately += u64::from(accurate);
        }
        self.faithful += u64::from(r.violations == 0 && r.rejected_calls == 0);
        self.rejected_calls_total += r.rejected_calls;
        for kind in &r.fault_kinds {
            let entry = self.by_fault.entry(kind.clone()).or_default();
            entry.0 += 1;
            entry.1 += u64::from(r.outcome.is_safe_end());
        }
        self.tokens.push(r.tokens);
        self.checks.add(&r.checks, r.task.as_deref(), r.outcome == Outcome::Success);
        if self.pass_k.is_some() {
            let hits = [r.outcome == Outcome::Success, r.violations > 0, r.violations == 0 && r.rejected_calls == 0];
            self.count_trial(r.seed, hits);
        }
        if let Some(importance) = &mut self.importance {
            importance.add(r);
        }
        if let Some(sessions) = &r.sessions {
            self.sessions.add(sessions);
        }
    }

    /// The summary of everything added.
    pub fn finish(mut self, scenario: &str, agent: &str, seeds: std::ops::Range<u64>, fault_scale: f64) -> Summary {
        self.close_seed();
        let n = self.turns.len();
        let instances = self.pass_k.as_ref().map_or(0, PassK::instances);
        let pass_k = self.pass_k.as_ref().map(|p| PassKSummary {
            trials: self.trials,
            instances,
            values: p.values(),
            all_trials: Rate::wilson(self.solved_all, instances),
        });
        let successes = self.outcomes[0];
        debug_assert_eq!(Outcome::ALL[0], Outcome::Success);
        // With trials, rates over trajectories get their intervals by seed cluster.
        let clusters = self.seeds_closed;
        let by_cluster = |i: usize, count: u64| {
            let sums = ClusterSumsView { sum_y: self.clusters[i].sum_y, sum_y2: self.clusters[i].sum_y2 };
            if self.pass_k.is_some() { clustered(count, n, clusters, &sums) } else { (Rate::wilson(count, n), 1.0) }
        };
        let (completion, completion_deff) = by_cluster(0, successes);
        let (violation, violation_deff) = by_cluster(1, self.violated);
        let (tool_fidelity, fidelity_deff) = by_cluster(2, self.faithful);
        let design_effect = self.pass_k.is_some().then(|| {
            BTreeMap::from([
                ("completion".to_string(), completion_deff),
                ("violation".to_string(), violation_deff),
                ("tool_fidelity".to_string(), fidelity_deff),
            ])
        });
        Summary {
            scenario: scenario.to_string(),
            agent: agent.to_string(),
            seed_start: seeds.start,
            seed_end: seeds.end,
            fault_scale,
            trajectories: n,
            completion,
            recovery: Rate::wilson(self.recovered, self.met_fault),
            violation,
            minefields: self.minefields,
            decisions: self.decisions,
            outcomes: Outcome::ALL.iter().zip(self.outcomes).map(|(o, c)| (o.name().to_string(), c)).collect(),
            turns: Spread::of(&self.turns),
            tool_calls: Spread::of(&self.tool_calls),
            cost_micro_usd: Spread::of(&self.cost),
            virtual_ms: Spread::of(&self.virtual_ms),
            tokens_total: self.tokens_total,
            cost_usd_total: usd(self.cost_total),
            cost_usd_per_success: (successes > 0).then(|| usd(self.cost_total / successes)),
            digest: self.chain.finish().to_string(),
            failures: Vec::new(),
            failures_skipped: Vec::new(),
            trials: self.trials,
            contextual_accuracy: Rate::wilson(self.told_accurately, self.told),
            tool_fidelity,
            rejected_calls_total: self.rejected_calls_total,
            recovery_by_fault: self
                .by_fault
                .iter()
                .map(|(kind, (met, safe))| (kind.clone(), Rate::wilson(*safe, *met)))
                .collect(),
            tokens: Spread::of(&self.tokens),
            pass_k,
            design_effect,
            importance: self.importance.map(|i| i.finish(n)),
            checks: self.checks.finish(),
            sessions: self.sessions.finish(),
            partial: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::percentile;
    use proptest::prelude::*;

    proptest! {
        /// Counting distinct values gives exactly what sorting every sample gave.
        #[test]
        fn counts_give_the_spread_of_the_samples(values in proptest::collection::vec(0u64..5_000, 0..400)) {
            let mut counts = ValueCounts::default();
            for v in &values {
                counts.push(*v);
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            for p in [0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 100.0] {
                prop_assert_eq!(counts.percentile(p), percentile(&sorted, p));
            }
            prop_assert_eq!(counts.max(), sorted.last().copied().unwrap_or(0));
            let spread = Spread::of(&counts);
            let mean = if sorted.is_empty() { 0.0 } else { sorted.iter().sum::<u64>() as f64 / sorted.len() as f64 };
            prop_assert_eq!(spread.mean, mean);
            let bin_width = spread.histogram.bin_width;
            let mut bins = vec![0u64; spread.histogram.counts.len()];
            for v in &sorted {
                bins[(v / bin_width) as usize] += 1;
            }
            prop_assert_eq!(bins, spread.histogram.counts);
        }
    }
}
