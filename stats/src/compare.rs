//! Paired comparison of two stacks on the same seeds (common random numbers):
//! the 2x2 table of successes, McNemar's exact test, Newcombe's paired interval
//! on the difference in completion (and the unpaired one, for contrast), a
//! verdict, and the seeds where the stacks disagree, worst first.

use serde::Serialize;

use crate::paired::{CompareVerdict, Difference, PairCounts, mcnemar_exact, newcombe_paired, newcombe_unpaired};
use crate::rate::Rate;
use agentsim_engine::{Outcome, Trajectory};

/// A seed where one stack succeeded and the other did not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    /// The seed.
    pub seed: u64,
    /// The baseline's outcome.
    pub baseline: Outcome,
    /// The candidate's outcome.
    pub candidate: Outcome,
}

impl Disagreement {
    /// Whether the candidate failed where the baseline succeeded.
    pub fn is_regression(&self) -> bool {
        self.candidate != Outcome::Success
    }
}

/// How bad a failed outcome is, for ordering disagreements: the simulator's
/// own broken invariant first (a bug to see), then a minefield (harm done), a
/// wrong result (the world left in a wrong state), the agent's own error, runs
/// that burned their budget, ran out of time or gave up, escalation (safe, only
/// not solved), and last what says nothing of the agent (an uncertain reading,
/// a session absent or never started).
pub fn severity(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::SimError => 0,
        Outcome::Violation => 1,
        Outcome::WrongResult => 2,
        Outcome::AgentError => 3,
        Outcome::Looped => 4,
        Outcome::BudgetExhausted => 5,
        Outcome::Horizon => 6,
        Outcome::GaveUp => 7,
        Outcome::Escalated => 8,
        Outcome::Uncertain => 9,
        Outcome::Absent => 10,
        Outcome::NotStarted => 11,
        Outcome::Success => 12,
    }
}

/// What `compare.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Scenario name.
    pub scenario: String,
    /// Baseline spec.
    pub baseline: String,
    /// Candidate spec.
    pub candidate: String,
    /// First seed (inclusive).
    pub seed_start: u64,
    /// Last seed (exclusive).
    pub seed_end: u64,
    /// Fault probability multiplier.
    pub fault_scale: f64,
    /// The baseline's completion with its Wilson interval.
    pub baseline_completion: Rate,
    /// The candidate's completion with its Wilson interval.
    pub candidate_completion: Rate,
    /// The paired table of successes.
    pub pairs: PairCounts,
    /// McNemar's exact two-sided p-value on the discordant pairs.
    pub mcnemar_p: f64,
    /// Candidate minus baseline completion, Newcombe's paired 95% interval.
    pub paired: Difference,
    /// The same difference analysed as two independent sweeps (Newcombe's
    /// unpaired 95% interval): what pairing the seeds saves.
    pub unpaired: Difference,
    /// Read from the paired interval.
    pub verdict: CompareVerdict,
    /// Seeds where they disagree, worst first: regressions (candidate failed,
    /// baseline succeeded) by the severity of the candidate's outcome, then seed;
    /// then improvements by the severity of the baseline's outcome, then seed.
    pub disagreements: Vec<Disagreement>,
}

/// Accumulates pairs of trajectories, in seed order.
#[derive(Default)]
pub struct ComparisonBuilder {
    pairs: PairCounts,
    disagreements: Vec<Disagreement>,
    next_seed: Option<u64>,
}

impl ComparisonBuilder {
    /// Adds one seed's pair.
    pub fn add(&mut self, baseline: &Trajectory, candidate: &Trajectory) {
        assert_eq!(baseline.seed, candidate.seed, "a pair is one seed");
        assert!(self.next_seed.is_none_or(|s| s == baseline.seed), "pairs arrive in seed order");
        self.next_seed = Some(baseline.seed + 1);
        let (b, c) = (baseline.outcome == Outcome::Success, candidate.outcome == Outcome::Success);
        self.pairs.add(b, c);
        if b != c {
            self.disagreements.push(Disagreement {
                seed: baseline.seed,
                baseline: baseline.outcome,
                candidate: candidate.outcome,
            });
        }
    }

    /// The comparison of everything added.
    pub fn finish(
        mut self,
        scenario: &str,
        baseline: &str,
        candidate: &str,
        seeds: std::ops::Range<u64>,
        fault_scale: f64,
    ) -> Comparison {
        let n = self.pairs.n();
        let baseline_completion = Rate::wilson(self.pairs.baseline_successes(), n);
        let candidate_completion = Rate::wilson(self.pairs.candidate_successes(), n);
        let paired = newcombe_paired(&self.pairs);
        let unpaired = newcombe_unpaired(&candidate_completion, &baseline_completion);
        self.disagreements.sort_by_key(|d| {
            let failed = if d.is_regression() { d.candidate } else { d.baseline };
            (!d.is_regression(), severity(failed), d.seed)
        });
        Comparison {
            scenario: scenario.to_string(),
            baseline: baseline.to_string(),
            candidate: candidate.to_string(),
            seed_start: seeds.start,
            seed_end: seeds.end,
            fault_scale,
            baseline_completion,
            candidate_completion,
            pairs: self.pairs,
            mcnemar_p: mcnemar_exact(self.pairs.baseline_only, self.pairs.candidate_only),
            paired,
            unpaired,
            verdict: CompareVerdict::from_interval(&paired),
            disagreements: self.disagreements,
        }
    }
}
