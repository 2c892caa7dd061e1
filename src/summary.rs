//! Aggregates a sweep, in seed order, into the numbers of `summary.json`, the rows
//! of `trajectories.csv` and the printed table.

use std::collections::BTreeMap;

use serde::Serialize;

use agentsim_engine::stats::{Rate, percentile};
use agentsim_engine::{DigestChain, Outcome, Trajectory};

/// One row of `trajectories.csv`.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Seed.
    pub seed: u64,
    /// Outcome name.
    pub outcome: &'static str,
    /// 1 for success.
    pub success: u8,
    /// Planner turns.
    pub turns: u32,
    /// Tool calls, retries included.
    pub tool_calls: u32,
    /// Calls that did not return a well-formed success.
    pub failed_calls: u32,
    /// Calls that met an injected fault.
    pub faults_seen: u32,
    /// 1 when faults were met and the run still ended safely.
    pub recovered: u8,
    /// Minefields fired.
    pub violations: u32,
    /// Prompt plus completion tokens.
    pub tokens: u64,
    /// Model cost, US dollars, 6 decimals.
    pub cost_usd: String,
    /// Virtual time at the end.
    pub virtual_ms: u64,
    /// Last milestone reached.
    pub milestone: &'static str,
    /// Kinds of fault met, `;`-separated.
    pub fault_kinds: String,
    /// Minefields that fired, `;`-separated.
    pub minefields: String,
    /// Trajectory digest.
    pub digest: String,
    /// In swarm mode, the fault parameters this seed drew (`name=value;...`);
    /// the column is absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swarm: Option<String>,
}

impl Row {
    /// The row of one trajectory.
    pub fn of(t: &Trajectory) -> Row {
        Row {
            seed: t.seed,
            outcome: t.outcome.name(),
            success: u8::from(t.outcome == Outcome::Success),
            turns: t.metrics.turns,
            tool_calls: t.metrics.tool_calls,
            failed_calls: t.metrics.failed_calls,
            faults_seen: t.metrics.faults_seen,
            recovered: u8::from(t.recovered()),
            violations: t.metrics.violations,
            tokens: t.metrics.tokens(),
            cost_usd: usd(t.metrics.cost_micro_usd),
            virtual_ms: t.metrics.virtual_ms,
            milestone: t.verdict.milestone,
            fault_kinds: t.fault_kinds.iter().map(|f| f.name()).collect::<Vec<_>>().join(";"),
            minefields: t.minefields.join(";"),
            digest: t.digest.to_string(),
            swarm: None,
        }
    }
}

/// Formats millionths of a dollar as dollars with six decimals, exactly.
pub fn usd(micro_usd: u64) -> String {
    format!("{}.{:06}", micro_usd / 1_000_000, micro_usd % 1_000_000)
}

/// p50, p90 and p99 of one measure, with its mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Arithmetic mean (summed in seed order).
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest value.
    pub max: u64,
}

impl Spread {
    fn of(mut values: Vec<u64>) -> Spread {
        let mean = if values.is_empty() { 0.0 } else { values.iter().sum::<u64>() as f64 / values.len() as f64 };
        values.sort_unstable();
        Spread {
            mean,
            p50: percentile(&values, 50.0),
            p90: percentile(&values, 90.0),
            p99: percentile(&values, 99.0),
            max: values.last().copied().unwrap_or(0),
        }
    }
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
    pub minefields: BTreeMap<&'static str, u64>,
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
    minefields: BTreeMap<&'static str, u64>,
    decisions: BTreeMap<String, DecisionCount>,
    turns: Vec<u64>,
    tool_calls: Vec<u64>,
    cost: Vec<u64>,
    virtual_ms: Vec<u64>,
    tokens_total: u64,
    cost_total: u64,
    chain: DigestChain,
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
            turns: Vec::new(),
            tool_calls: Vec::new(),
            cost: Vec::new(),
            virtual_ms: Vec::new(),
            tokens_total: 0,
            cost_total: 0,
            chain: DigestChain::new(),
        }
    }

    /// Adds the next trajectory (in seed order).
    pub fn add(&mut self, t: &Trajectory) {
        let index = Outcome::ALL.iter().position(|o| *o == t.outcome).expect("every outcome is listed");
        self.outcomes[index] += 1;
        if t.metrics.faults_seen > 0 {
            self.met_fault += 1;
            self.recovered += u64::from(t.recovered());
        }
        self.violated += u64::from(t.metrics.violations > 0);
        for name in &t.minefields {
            *self.minefields.entry(name).or_default() += 1;
        }
        for (source, what, times) in &t.decisions {
            let count = self.decisions.entry(format!("{source}.{what}")).or_default();
            count.trajectories += 1;
            count.times += u64::from(*times);
        }
        self.turns.push(u64::from(t.metrics.turns));
        self.tool_calls.push(u64::from(t.metrics.tool_calls));
        self.cost.push(t.metrics.cost_micro_usd);
        self.virtual_ms.push(t.metrics.virtual_ms);
        self.tokens_total += t.metrics.tokens();
        self.cost_total += t.metrics.cost_micro_usd;
        self.chain.push(&t.digest);
    }

    /// The summary of everything added.
    pub fn finish(self, scenario: &str, agent: &str, seeds: std::ops::Range<u64>, fault_scale: f64) -> Summary {
        let n = self.turns.len() as u64;
        let successes = self.outcomes[0];
        debug_assert_eq!(Outcome::ALL[0], Outcome::Success);
        Summary {
            scenario: scenario.to_string(),
            agent: agent.to_string(),
            seed_start: seeds.start,
            seed_end: seeds.end,
            fault_scale,
            trajectories: n,
            completion: Rate::wilson(successes, n),
            recovery: Rate::wilson(self.recovered, self.met_fault),
            violation: Rate::wilson(self.violated, n),
            minefields: self.minefields,
            decisions: self.decisions,
            outcomes: Outcome::ALL.iter().zip(self.outcomes).map(|(o, c)| (o.name().to_string(), c)).collect(),
            turns: Spread::of(self.turns),
            tool_calls: Spread::of(self.tool_calls),
            cost_micro_usd: Spread::of(self.cost),
            virtual_ms: Spread::of(self.virtual_ms),
            tokens_total: self.tokens_total,
            cost_usd_total: usd(self.cost_total),
            cost_usd_per_success: (successes > 0).then(|| usd(self.cost_total / successes)),
            digest: self.chain.finish().to_string(),
            failures: Vec::new(),
        }
    }
}
