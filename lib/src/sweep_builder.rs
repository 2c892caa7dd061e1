//! A sweep from code: a world (built with `agentsim_worlds::builder`, or any
//! [`Prepared`]), an agent, the seeds once, and defaults for the rest (those
//! of `agentsim sweep`: the `resilient` preset, seeds 0..1000, fault scale 1,
//! one trial, three incidents per failure mode). [`SweepBuilder::run`] keeps
//! everything in memory; [`SweepBuilder::write_to`] writes the folder `agentsim
//! sweep --out DIR` writes, through the same code ([`crate::sweep::Sweep`]),
//! so `agentsim report` and `check` read it; [`SweepBuilder::compare`]
//! compares two agents on the same seeds as `agentsim compare` does.
//!
//! ```no_run
//! # fn world() -> agentsim_worlds::Prepared { unimplemented!() }
//! use agentsim::prelude::*;
//! let world = world();
//! let naive = sweep(&world).agent("naive").seeds(0..1000).run()?;
//! println!("completion {:.3}", naive.summary.completion.rate);
//! sweep(&world).agent("resilient").write_to("out/resilient")?;
//! # Ok::<(), SweepError>(())
//! ```

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_worlds::builder::BuiltWorld;
use agentsim_worlds::{Prepared, WorldConfig};

use crate::compare::{Comparison, ComparisonBuilder};
use crate::rows::{Record, Row};
use crate::runner::Runner;
use crate::summary::{Summary, SummaryBuilder};

/// What can be swept: a prepared scenario, or a built world (which knows
/// whether it has an expert).
pub trait Sweepable {
    /// The world as the runners take it.
    fn prepared(&self) -> &Prepared;
    /// Whether the world has an expert for the presets to wrap.
    fn has_expert(&self) -> bool {
        true
    }
}

impl Sweepable for Prepared {
    fn prepared(&self) -> &Prepared {
        self
    }
}

impl Sweepable for BuiltWorld {
    fn prepared(&self) -> &Prepared {
        BuiltWorld::prepared(self)
    }

    fn has_expert(&self) -> bool {
        BuiltWorld::has_expert(self)
    }
}

/// A sweep being set up; start one with [`sweep`].
pub struct SweepBuilder<'w> {
    prepared: &'w Prepared,
    has_expert: bool,
    /// The agent's label (in `summary.json`) and its stack, or the preset
    /// name not found.
    agent: AgentChoice,
    seeds: Range<u64>,
    trials: u32,
    fault_scale: f64,
    failures: usize,
    swarm: bool,
    in_flight: Option<usize>,
}

/// The agent a sweep was given: refused only when the sweep starts, so the
/// builder's methods chain without a `Result` each.
// One per builder, and the large variant is the usual one: boxing it would
// save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum AgentChoice {
    /// A label (in `summary.json`) and its stack.
    Stack(String, StackSpec),
    /// A preset name that names no preset.
    UnknownPreset(String),
}

/// The sweep of `world` with the defaults of `agentsim sweep`.
pub fn sweep<W: Sweepable + ?Sized>(world: &W) -> SweepBuilder<'_> {
    SweepBuilder {
        prepared: world.prepared(),
        has_expert: world.has_expert(),
        agent: AgentChoice::Stack("resilient".to_string(), agentsim_agents::preset("resilient").expect("a preset")),
        seeds: 0..1000,
        trials: 1,
        fault_scale: 1.0,
        failures: 3,
        swarm: false,
        in_flight: None,
    }
}

/// A sweep kept in memory: its summary (as `summary.json` holds it, without
/// incidents) and its rows (as `trajectories.csv` holds them), in seed order.
pub struct SweepOutput {
    /// The summary.
    pub summary: Summary,
    /// One row per seed and trial.
    pub rows: Vec<Row>,
}

/// Why a sweep could not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepErrorKind {
    /// The agent is no preset.
    UnknownAgent,
    /// The agent wraps the world's expert, and the world has none.
    NoExpert,
    /// An argument is out of range (no seeds, no trials, a negative scale).
    BadArgument,
    /// The stack does not fit the world, or the output folder could not be
    /// written (the message names the file).
    Refused,
}

/// A sweep that could not run: a kind to match, and a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepError {
    /// What is wrong.
    pub kind: SweepErrorKind,
    /// What is wrong, for a person.
    pub message: String,
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SweepError {}

impl From<crate::Error> for SweepError {
    fn from(e: crate::Error) -> Self {
        SweepError { kind: SweepErrorKind::Refused, message: e.message }
    }
}

fn refused(kind: SweepErrorKind, message: String) -> SweepError {
    SweepError { kind, message }
}

impl<'w> SweepBuilder<'w> {
    /// The agent: a preset by name (`oracle`, `naive`, `resilient`, ...).
    pub fn agent(mut self, preset: &str) -> Self {
        self.agent = match agentsim_agents::preset(preset) {
            Some(stack) => AgentChoice::Stack(preset.to_string(), stack),
            None => AgentChoice::UnknownPreset(preset.to_string()),
        };
        self
    }

    /// The agent: any stack (layers around a planner), labelled `label` in
    /// the summary.
    pub fn stack(mut self, label: &str, stack: StackSpec) -> Self {
        self.agent = AgentChoice::Stack(label.to_string(), stack);
        self
    }

    /// The seeds (default 0..1000).
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// Attempts per seed, for pass^k (default 1).
    pub fn trials(mut self, trials: u32) -> Self {
        self.trials = trials;
        self
    }

    /// Multiplies every fault probability (default 1; 0 turns faults off).
    pub fn fault_scale(mut self, scale: f64) -> Self {
        self.fault_scale = scale;
        self
    }

    /// The first N failing trajectories of each failure mode written as
    /// incidents by [`SweepBuilder::write_to`] (default 3). A world built in
    /// code has none: an incident replays from its scenario's text, and such
    /// a world has no text (`WorldConfig::Named`).
    pub fn failures(mut self, n: usize) -> Self {
        self.failures = n;
        self
    }

    /// Swarm mode: each seed draws its fault parameters from the scenario's
    /// ranges (default off).
    pub fn swarm(mut self, on: bool) -> Self {
        self.swarm = on;
        self
    }

    /// Episodes in flight on threads of their own, for an agent or user that
    /// waits on a network (a model asked live); `None` (the default): one per
    /// core. The output does not depend on it.
    pub fn in_flight(mut self, threads: Option<usize>) -> Self {
        self.in_flight = threads;
        self
    }

    /// The agent's label and stack, once every argument is checked.
    fn checked(&self) -> Result<(&str, &StackSpec), SweepError> {
        let (label, stack) = match &self.agent {
            AgentChoice::Stack(label, stack) => (label.as_str(), stack),
            AgentChoice::UnknownPreset(name) => {
                let names: Vec<&str> = agentsim_agents::PRESETS.iter().map(|(n, _)| *n).collect();
                let message = format!("agent: unknown preset `{name}` (presets: {})", names.join(", "));
                return Err(refused(SweepErrorKind::UnknownAgent, message));
            }
        };
        if !self.has_expert && matches!(stack.planner, PlannerSpec::Oracle | PlannerSpec::Noisy(_)) {
            let message = format!(
                "agent `{label}` wraps the world's expert, and world `{}` has none: give the world a plan, or sweep an agent of your own (`stack`)",
                self.prepared.scenario.name
            );
            return Err(refused(SweepErrorKind::NoExpert, message));
        }
        let bad = |message: String| Err(refused(SweepErrorKind::BadArgument, message));
        if self.seeds.is_empty() {
            return bad(format!("seeds {}..{}: no seeds to run", self.seeds.start, self.seeds.end));
        }
        if !(1..=64).contains(&self.trials) {
            return bad(format!("trials: expected 1..=64, found {}", self.trials));
        }
        if !self.fault_scale.is_finite() || self.fault_scale < 0.0 {
            return bad(format!("fault scale: expected a finite number >= 0, found {}", self.fault_scale));
        }
        crate::load::check_tools(stack, label, self.prepared, None)?;
        Ok((label, stack))
    }

    /// Runs the sweep in memory, on rayon's pool (the same trajectories on any
    /// number of threads).
    pub fn run(self) -> Result<SweepOutput, SweepError> {
        let (label, stack) = self.checked()?;
        let prepared = self.prepared;
        let runner = Runner::new(prepared, stack, false, self.fault_scale).with_swarm(self.swarm);
        let mut builder = SummaryBuilder::with_trials(self.trials);
        let mut rows = Vec::new();
        let reduce = |_trial: u32, t: agentsim_engine::Trajectory| {
            let mut row = Row::of(&t);
            row.swarm = runner.swarm_values(t.seed);
            row.task = prepared.task_of(t.seed);
            let mut record = Record::of(&t);
            record.task.clone_from(&row.task);
            (row, record)
        };
        let seeds = self.seeds.clone();
        let run = || {
            runner.sweep_mapped(seeds, self.trials, reduce, |(row, record)| {
                builder.add_record(&record);
                rows.push(row);
                Ok::<(), SweepError>(())
            })
        };
        crate::ordered::in_flight(self.in_flight, run).map_err(|e| refused(SweepErrorKind::BadArgument, e))??;
        let summary = builder.finish(&prepared.scenario.name, label, self.seeds.clone(), self.fault_scale);
        Ok(SweepOutput { summary, rows })
    }

    /// Runs this sweep's agent (the baseline) and the preset `candidate` on
    /// the same seeds and compares them pair by pair, as `agentsim compare`
    /// does: what `compare.json` holds (serialise it there for `agentsim
    /// report`). Trials and swarm mode do not apply.
    pub fn compare(self, candidate: &str) -> Result<Comparison, SweepError> {
        let (label, stack) = self.checked()?;
        let other = self.clone_settings().agent(candidate);
        let (candidate_label, candidate_stack) = other.checked()?;
        let baseline_runner = Runner::new(self.prepared, stack, false, self.fault_scale);
        let candidate_runner = Runner::new(self.prepared, candidate_stack, false, self.fault_scale);
        let mut builder = ComparisonBuilder::default();
        crate::ordered::for_each_ordered(
            self.seeds.clone(),
            |seed| (baseline_runner.run(seed), candidate_runner.run(seed)),
            |(b, c)| {
                builder.add(&b, &c);
                Ok::<(), SweepError>(())
            },
        )?;
        let name = &self.prepared.scenario.name;
        Ok(builder.finish(name, label, candidate_label, self.seeds.clone(), self.fault_scale))
    }

    /// Everything but the agent, for a second sweep of the same world.
    fn clone_settings(&self) -> SweepBuilder<'w> {
        SweepBuilder {
            prepared: self.prepared,
            has_expert: self.has_expert,
            agent: AgentChoice::UnknownPreset(String::new()),
            seeds: self.seeds.clone(),
            trials: self.trials,
            fault_scale: self.fault_scale,
            failures: self.failures,
            swarm: self.swarm,
            in_flight: self.in_flight,
        }
    }

    /// Runs the sweep into the folder `dir` (created if missing, locked while
    /// written) as `agentsim sweep --out DIR` does: `trajectories.csv`,
    /// `summary.json`, `run.json` and `failures/` (see
    /// [`SweepBuilder::failures`]). Returns the summary.
    pub fn write_to(self, dir: impl AsRef<Path>) -> Result<Summary, SweepError> {
        let (label, stack) = self.checked()?;
        let out = dir.as_ref();
        let _lock = crate::files::lock_dir(out, true)?;
        // Never set: an interrupted sweep is the command's business (its
        // signal handler); a sweep from code runs to its end.
        let stop = AtomicBool::new(false);
        let sweep = crate::sweep::Sweep {
            prepared: self.prepared,
            stack,
            agent: label,
            seeds: self.seeds.clone(),
            trials: self.trials,
            failures: if matches!(self.prepared.scenario.world, WorldConfig::Named(_)) { 0 } else { self.failures },
            swarm: self.swarm,
            importance: None,
            importance_plan: None,
            chunk_seeds: (crate::ordered::CHUNK_SEEDS / u64::from(self.trials)).max(1),
            in_flight: self.in_flight,
            stop: &stop,
            incident_bytes_max: crate::incident::INCIDENT_BYTES_MAX,
        };
        let manifest = sweep.manifest(self.fault_scale, 0, 1);
        let ran = sweep.one(self.seeds.clone(), self.fault_scale, out, &manifest, false, &mut ())?;
        Ok(ran.summary)
    }
}
