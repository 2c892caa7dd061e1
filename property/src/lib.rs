//! # agentsim-property
//!
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
//! use agentsim_property::{Case, case, run_case};
//! use proptest::prelude::*;
//!
//! let prepared = agentsim_property::builtin("support_desk");
//! let stack = agentsim_agents::preset("resilient").unwrap();
//! proptest!(|(c in case(&prepared, 0..50, 6, 8))| {
//!     let t = run_case(&prepared, &stack, &c);
//!     prop_assert!(!t.minefields.contains(&"refund_not_positive"), "{}", c.describe());
//! });
//! ```

#![warn(missing_docs)]

use std::ops::Range;

use proptest::prelude::*;

use agentsim_agents::StackSpec;
use agentsim_engine::tool::ToolDef;
use agentsim_engine::{
    CallFault, Corruption, Fault, FieldPath, InjectedArg, InjectionStyle, MalformedKind, ToolKind, Trajectory,
    ValueKind,
};
use agentsim_worlds::{Prepared, Scenario};

use agentsim::incident::Incident;
use agentsim::shrink::{ToolFault, with_schedule};

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
        let t = agentsim::Runner::new(&edited, stack, true, 1.0).run(self.seed);
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

/// The faults tool `def` can suffer: every kind of [`fault`], and the quiet kinds
/// shaped to fit it as a scenario file must (a `Corrupt` of a documented field,
/// with a corruption of that field's kind; an `Inject` into a string field,
/// asking for a call to one of `tools` with one of its arguments; for a write a
/// `PartialCommit` of an integer argument and a `DuplicateEffect`).
pub fn fault_for(def: &ToolDef, tools: &[ToolDef]) -> BoxedStrategy<Fault> {
    let mut kinds: Vec<BoxedStrategy<Fault>> = vec![fault().boxed()];
    let read = def.kind == ToolKind::Read;
    let fields: Vec<(String, ValueKind)> = def.response.iter().map(|f| (f.name.clone(), f.kind)).collect();
    // A one-field corruption keeps the field's kind: strings, numbers and lists.
    let corruptible: Vec<(String, ValueKind)> = fields
        .iter()
        .filter(|(_, k)| matches!(k, ValueKind::Str | ValueKind::Int | ValueKind::Float | ValueKind::List))
        .cloned()
        .collect();
    if !corruptible.is_empty() {
        kinds.push(
            proptest::sample::select(corruptible)
                .prop_flat_map(move |(name, kind)| (Just(name), corruption(kind, read)))
                .prop_map(|(name, corruption)| Fault::Corrupt { path: field_path(&name), corruption })
                .boxed(),
        );
    }
    let texts: Vec<String> = fields.iter().filter(|(_, k)| *k == ValueKind::Str).map(|(n, _)| n.clone()).collect();
    if !texts.is_empty() && !tools.is_empty() {
        kinds.push(injection(texts, tools.to_vec()));
    }
    if def.kind == ToolKind::Write {
        kinds.push(Just(Fault::DuplicateEffect).boxed());
        let ints: Vec<String> = def.args.iter().filter(|a| a.kind == ValueKind::Int).map(|a| a.name.clone()).collect();
        if !ints.is_empty() {
            kinds.push(
                (proptest::sample::select(ints), 1u8..=99)
                    .prop_map(|(arg, percent)| Fault::PartialCommit { arg, percent })
                    .boxed(),
            );
        }
    }
    proptest::strategy::Union::new(kinds).boxed()
}

fn field_path(name: &str) -> FieldPath {
    FieldPath::try_from(name.to_string()).expect("a documented field name is a one-field path")
}

/// A corruption that fits a field of `kind`, a string, number or list (`Old`
/// only for a read).
fn corruption(kind: ValueKind, read: bool) -> BoxedStrategy<Corruption> {
    let fitting = match kind {
        ValueKind::Str => proptest::sample::select(vec!["delivered", "cancelled", "X-0000"])
            .prop_map(|s| Corruption::OneOf(vec![s.to_string()]))
            .boxed(),
        ValueKind::Int => prop_oneof![
            prop_oneof![-10_000i64..=-1, 1i64..=10_000].prop_map(Corruption::Offset),
            proptest::sample::select(vec![0.1, 0.5, 2.0, 10.0]).prop_map(Corruption::Factor),
        ]
        .boxed(),
        ValueKind::List => Just(Corruption::DropItem).boxed(),
        _ => proptest::sample::select(vec![0.5, 2.0, 10.0]).prop_map(Corruption::Factor).boxed(),
    };
    if read {
        prop_oneof![3 => fitting, 1 => (1u64..600_000).prop_map(|lag_ms| Corruption::Old { lag_ms })].boxed()
    } else {
        fitting
    }
}

/// Text planted in one of `fields`, asking for a call to one of `tools` with up
/// to one of its arguments.
fn injection(fields: Vec<String>, tools: Vec<ToolDef>) -> BoxedStrategy<Fault> {
    let style = proptest::sample::select(vec![
        InjectionStyle::IgnorePrevious,
        InjectionStyle::SystemNotice,
        InjectionStyle::UserNote,
    ]);
    (proptest::sample::select(fields), style, proptest::sample::select(tools), any::<u16>(), any::<bool>())
        .prop_map(|(field, style, target, draw, with_arg)| {
            let mut args = std::collections::BTreeMap::new();
            if with_arg && !target.args.is_empty() {
                let arg = &target.args[usize::from(draw) % target.args.len()];
                let value = match arg.kind {
                    ValueKind::Int => InjectedArg::Int(i64::from(draw)),
                    _ => InjectedArg::Str(format!("X{draw}")),
                };
                args.insert(arg.name.clone(), value);
            }
            Fault::Inject { path: field_path(&field), style, tool: target.name, args }
        })
        .boxed()
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
///
/// Each tool's faults are [`fault_for`] it: every kind, the quiet ones included.
pub fn case(prepared: &Prepared, seeds: Range<u64>, calls_max: u64, faults_max: usize) -> impl Strategy<Value = Case> {
    let defs: Vec<ToolDef> = prepared.catalog.specs().iter().map(|s| s.def.clone()).collect();
    let per_tool: Vec<_> = defs
        .iter()
        .map(|def| {
            let name = def.name.clone();
            schedule(fault_for(def, &defs), calls_max, faults_max).prop_map(move |calls| {
                calls.into_iter().map(|fault| ToolFault { tool: name.clone(), fault }).collect::<Vec<_>>()
            })
        })
        .collect();
    (seeds, per_tool).prop_map(|(seed, schedules)| Case { seed, faults: schedules.into_iter().flatten().collect() })
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
    agentsim::Runner::new(&edited, stack, false, 1.0).run(case.seed)
}

/// A built-in scenario, prepared (panics on an unknown name: for tests).
pub fn builtin(name: &str) -> Prepared {
    let text = agentsim::builtin::scenario(name).unwrap_or_else(|| panic!("no built-in scenario `{name}`"));
    Prepared::new(Scenario::parse(text, name).unwrap_or_else(|e| panic!("{e}")))
}
