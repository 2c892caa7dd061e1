//! Property-based testing of agent policies: proptest strategies for fault
//! schedules, and a helper that runs a stack against a generated case.
//!
//! A case is a seed plus an *explicit* list of faults per tool (which call suffers
//! what), not a seed that implies faults. So when a property fails, proptest's
//! shrinking removes faults and moves them to earlier calls, and the minimal case it
//! prints is a readable schedule; [`Case::incident`] turns it into an incident file
//! that `agentsim replay` replays exactly.
//!
//! ```no_run
//! use agentsim::property::{Case, case, run_case};
//! use proptest::prelude::*;
//!
//! let prepared = agentsim::property::builtin("support_desk");
//! let stack = agentsim_agents::preset("resilient").unwrap();
//! proptest!(|(c in case(&prepared, 0..50, 6, 8))| {
//!     let t = run_case(&prepared, &stack, &c);
//!     prop_assert!(!t.minefields.contains(&"refund_not_positive"), "{}", c.describe());
//! });
//! ```

use std::ops::Range;

use proptest::prelude::*;

use agentsim_agents::StackSpec;
use agentsim_engine::{CallFault, Fault, MalformedKind, Trajectory};
use agentsim_worlds::{Prepared, Scenario};

use crate::incident::Incident;
use crate::shrink::{ToolFault, with_schedule};

/// A generated case: a seed and the exact faults each tool suffers.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The seed: world, user and every draw not replaced by the schedule.
    pub seed: u64,
    /// Faults by tool and call number; every tool not listed suffers none.
    pub faults: Vec<ToolFault>,
}

impl Case {
    /// One line per fault, for assertion messages.
    pub fn describe(&self) -> String {
        let mut out = format!("seed {}", self.seed);
        for f in &self.faults {
            out.push_str(&format!("\n  {} call {}: {:?}", f.tool, f.fault.call, f.fault.fault));
        }
        out
    }

    /// The scenario with this case's schedule made explicit.
    pub fn scenario(&self, prepared: &Prepared) -> Scenario {
        with_schedule(&prepared.scenario, &self.faults, &[])
    }

    /// This case run with `stack`, as an incident (save it and `agentsim replay` it).
    pub fn incident(&self, prepared: &Prepared, stack: &StackSpec, agent: &str) -> Incident {
        let edited = Prepared::with_key(self.scenario(prepared), prepared.key());
        let t = crate::Runner::new(&edited, stack, true, 1.0).run(self.seed);
        Incident::record(&edited, Some(prepared.key()), self.seed, 1.0, agent, stack, &t)
    }
}

/// The faults a generated schedule draws from: the kinds the issue list names, with
/// realistic parameters.
pub fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        prop_oneof![Just(429u16), Just(500), Just(502), Just(503), Just(504)]
            .prop_flat_map(|status| (Just(status), proptest::option::of(0u64..10_000)))
            .prop_map(|(status, retry_after_ms)| Fault::Error { status, retry_after_ms }),
        Just(Fault::Timeout),
        (1u64..20_000).prop_map(|extra_ms| Fault::Latency { extra_ms }),
        prop_oneof![
            Just(MalformedKind::MissingField),
            Just(MalformedKind::WrongType),
            Just(MalformedKind::Truncated),
            Just(MalformedKind::Garbage)
        ]
        .prop_map(Fault::Malformed),
        Just(Fault::AuthExpired),
        (1u64..300_000).prop_map(|lag_ms| Fault::Stale { lag_ms }),
        Just(Fault::CommitThenTimeout),
    ]
}

/// A schedule for one tool: up to `faults_max` faults on its first `calls_max` calls.
pub fn schedule(
    faults: impl Strategy<Value = Fault>,
    calls_max: u64,
    faults_max: usize,
) -> impl Strategy<Value = Vec<CallFault>> {
    proptest::collection::vec((1..=calls_max.max(1), faults), 0..=faults_max).prop_map(|entries| {
        // A second fault that decides a call would never apply, and a scenario
        // file refuses it: keep each call's first (extra latency adds up).
        let mut deciding = std::collections::BTreeSet::new();
        entries
            .into_iter()
            .filter(|(call, fault)| {
                matches!(fault, Fault::Latency { .. } | Fault::RateLimit { .. }) || deciding.insert(*call)
            })
            .map(|(call, fault)| CallFault { call, fault })
            .collect()
    })
}

/// Cases for `prepared`: a seed from `seeds` and, for every tool, a schedule of up to
/// `faults_max` faults on its first `calls_max` calls.
pub fn case(prepared: &Prepared, seeds: Range<u64>, calls_max: u64, faults_max: usize) -> impl Strategy<Value = Case> {
    case_with(prepared, seeds, calls_max, faults_max, fault)
}

/// Like [`case`], with the faults drawn from `faults` (for example only
/// `CommitThenTimeout`, to test one failure story).
pub fn case_with<S: Strategy<Value = Fault> + 'static>(
    prepared: &Prepared,
    seeds: Range<u64>,
    calls_max: u64,
    faults_max: usize,
    faults: impl Fn() -> S,
) -> impl Strategy<Value = Case> {
    let tools: Vec<String> = prepared.catalog.specs().iter().map(|s| s.def.name.clone()).collect();
    let per_tool: Vec<_> = tools
        .iter()
        .map(|name| {
            let name = name.clone();
            schedule(faults(), calls_max, faults_max).prop_map(move |calls| {
                calls.into_iter().map(|fault| ToolFault { tool: name.clone(), fault }).collect::<Vec<_>>()
            })
        })
        .collect();
    (seeds, per_tool).prop_map(|(seed, schedules)| Case { seed, faults: schedules.into_iter().flatten().collect() })
}

/// Runs `stack` on `case` (digest only; use [`Case::incident`] for the full record).
pub fn run_case(prepared: &Prepared, stack: &StackSpec, case: &Case) -> Trajectory {
    let edited = Prepared::with_key(case.scenario(prepared), prepared.key());
    crate::Runner::new(&edited, stack, false, 1.0).run(case.seed)
}

/// A built-in scenario, prepared (panics on an unknown name: for tests).
pub fn builtin(name: &str) -> Prepared {
    let text = crate::builtin::scenario(name).unwrap_or_else(|| panic!("no built-in scenario `{name}`"));
    Prepared::new(Scenario::parse(text, name).unwrap_or_else(|e| panic!("{e}")))
}
