//! A sweep's output folder: `trajectories.csv` (one row per seed and trial, in
//! seed order), `summary.json`, `run.json` (the arguments, for `--resume`),
//! `failures/` (the first failing trajectories of each mode as incidents),
//! resuming an interrupted sweep, and merging shards. The binary (`agentsim
//! sweep`, `merge`) and the Python module (`agentsim.evaluate`) both write their
//! files through this module, so the files are the same whoever ran the agent.

use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use agentsim_agents::StackSpec;
use agentsim_engine::Trajectory;
use agentsim_worlds::Prepared;

use crate::Error;
use crate::Runner;
use crate::files::{AtomicFile, io_failure, lock_dir, read_bounded, read_text, write_atomic};
use crate::incident::{Incident, hex};
use crate::shard::{SHARD_FORMAT, ShardManifest, shard_seeds};
use agentsim_stats::rows_file::{FirstFailures, Kept, SeedOrder, header_line, read_rows};
use agentsim_stats::summary::{Partial, Record, SkippedFailure, Summary};
use agentsim_stats::{Row, SummaryBuilder};

/// The manifest of a sweep's arguments, written with its rows into its output
/// directory; `--resume` refuses a directory whose manifest differs from its own arguments.
pub const RUN_MANIFEST: &str = "run.json";

/// What a sweep reports as it goes: the number of trajectories it will run,
/// then each one done. The binary draws a progress bar; `()` reports nothing.
pub trait Progress {
    /// The sweep will run `total` trajectories.
    fn start(&mut self, _total: u64) {}
    /// `n` more trajectories are done.
    fn advance(&mut self, _n: u64) {}
    /// The sweep is over.
    fn finish(&mut self) {}
}

impl Progress for () {}

/// What every scale of one sweep shares: the scenario, the stack and the
/// arguments that `run.json` records.
pub struct Sweep<'a> {
    /// The scenario.
    pub prepared: &'a Prepared,
    /// The stack.
    pub stack: &'a StackSpec,
    /// The agent as the user named it (a preset, a stack file, `cmd:...`): the
    /// label in `summary.json`, `run.json` and the incidents.
    pub agent: &'a str,
    /// All the seeds of the sweep (a shard runs part of them).
    pub seeds: Range<u64>,
    /// Attempts per seed.
    pub trials: u32,
    /// The first N failing trajectories of each failure mode become incidents.
    pub failures: usize,
    /// Swarm mode.
    pub swarm: bool,
    /// Importance sampling: faults drawn at this many times their probabilities,
    /// each trajectory weighted back (see [`agentsim_stats::importance`]).
    pub importance: Option<f64>,
    /// Importance sampling with a tilt per rule (a tilts file, or the
    /// cross-entropy method's choice), chosen at the sweep's one fault scale;
    /// `importance` is then `None`.
    pub importance_plan: Option<&'a agentsim_stats::tilts::Plan>,
    /// Seeds per chunk: the granularity of an interruption.
    pub chunk_seeds: u64,
    /// Episodes in flight for a network-bound agent or user (a model asked
    /// live): the sweep runs on a pool of this many threads of its own, which
    /// mostly wait on the network; `None`: rayon's pool, one thread per core.
    /// Output is the same bytes either way (results are taken in seed order).
    pub in_flight: Option<usize>,
    /// Set by a signal handler: the sweep stops between chunks.
    pub stop: &'a AtomicBool,
    /// The largest incident written under `failures/`
    /// ([`crate::incident::INCIDENT_BYTES_MAX`] but in tests): a larger one is
    /// skipped with its reason in `summary.json`, and one that would certainly
    /// be larger is not even re-run to record it.
    pub incident_bytes_max: u64,
}

/// The rows already written by an interrupted run of the same sweep.
pub struct Done {
    /// The file's bytes, header included, copied unchanged.
    pub bytes: Vec<u8>,
    /// The first seed without rows.
    pub next_seed: u64,
    /// The first failing seeds of each failure mode (first trial), in seed order.
    pub failing: Vec<KeptRun>,
}

/// A failing run kept for an incident: which, and what its row records of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptRun {
    /// Its outcome, seed and trial.
    pub kept: Kept,
    /// The digest its row records: the re-run that records its incident must
    /// reproduce it, or the incident would hold another run.
    pub digest: agentsim_engine::Digest,
    /// The events it recorded, or (for a row read back by `--resume`, which
    /// does not say) a count it certainly reached: two a tool call and one a
    /// turn. What the re-run that records it would keep in memory.
    pub events: u64,
    /// The tail of its external agent's stderr, when it failed and the run
    /// was this process's (a row read back does not keep it).
    pub stderr: Option<String>,
}

impl KeptRun {
    /// The kept run of `record`, which recorded `events` events when known.
    pub fn of(kept: Kept, record: &Record, events: Option<u64>) -> KeptRun {
        let events_min = record.tool_calls.saturating_mul(2).saturating_add(record.turns);
        KeptRun { kept, digest: record.digest, events: events.unwrap_or(events_min), stderr: None }
    }
}

/// What became of the failing runs kept for incidents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failures {
    /// The incidents written, relative to the output directory.
    pub written: Vec<String>,
    /// The ones not written, and why.
    pub skipped: Vec<SkippedFailure>,
}

impl Done {
    /// Nothing done yet: the seeds start at `seed`.
    pub fn none(seed: u64) -> Self {
        Self { bytes: Vec::new(), next_seed: seed, failing: Vec::new() }
    }
}

/// One sweep at one fault scale, as [`Sweep::one`] ran it.
pub struct Ran {
    /// Its summary, marked partial when interrupted.
    pub summary: Summary,
    /// Trajectories run by this call (not those a resume read back).
    pub trajectories: u64,
    /// Virtual time simulated by this call, in ms.
    pub virtual_ms: u64,
}

impl Sweep<'_> {
    /// The manifest of this sweep at `fault_scale`, shard `shard` of `shards`.
    pub fn manifest(&self, fault_scale: f64, shard: u32, shards: u32) -> ShardManifest {
        ShardManifest {
            format: SHARD_FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            scenario: self.prepared.scenario.name.clone(),
            scenario_key: hex(self.prepared.key()),
            agent: self.agent.to_string(),
            stack_key: hex(agentsim_engine::rng::key_of(self.stack)),
            seed_start: self.seeds.start,
            seed_end: self.seeds.end,
            shard,
            shards,
            trials: self.trials,
            fault_scale,
            swarm: self.swarm,
            failures: self.failures,
            importance: self.importance,
            importance_plan: self.plan(fault_scale),
        }
    }

    /// How this sweep draws its faults at `fault_scale`: the plan it was given,
    /// or every rule at `importance` times its probability; `None` when plain.
    pub fn plan(&self, fault_scale: f64) -> Option<agentsim_stats::tilts::Plan> {
        let catalog = &self.prepared.catalog;
        self.importance_plan
            .cloned()
            .or_else(|| self.importance.map(|s| agentsim_stats::tilts::Plan::of_scale(catalog, fault_scale, s)))
    }

    /// Refuses to resume `out` unless its run had these arguments.
    pub fn check_manifest(&self, out: &Path, manifest: &ShardManifest) -> Result<(), Error> {
        check_manifest(out, manifest)
    }

    /// Reads back the rows an interrupted run wrote into `out`, adding them to
    /// `builder`; they must be whole seeds from `seeds.start` on, in order.
    pub fn read_done(&self, out: &Path, seeds: &Range<u64>, builder: &mut SummaryBuilder) -> Result<Done, Error> {
        read_done(out, seeds, self.trials, self.failures, builder)
    }

    /// One sweep at one fault scale into `out`, continuing the rows already there
    /// when `resume`; returns its summary, marked partial when interrupted.
    pub fn one(
        &self,
        seeds: Range<u64>,
        fault_scale: f64,
        out: &Path,
        manifest: &ShardManifest,
        resume: bool,
        progress: &mut (dyn Progress + Send),
    ) -> Result<Ran, Error> {
        std::fs::create_dir_all(out).map_err(|e| io_failure(out, &e))?;
        let plan = self.checked_plan(fault_scale)?;
        let mut builder = SummaryBuilder::with_trials(self.trials).with_importance_plan(plan);
        let done = if resume {
            self.check_manifest(out, manifest)?;
            self.read_done(out, &seeds, &mut builder)?
        } else {
            Done::none(seeds.start)
        };
        let agents_started = agentsim_agents::external::starts().0;
        let first_seed = done.next_seed;
        progress.start((seeds.end - first_seed).saturating_mul(u64::from(self.trials)));
        let mut rows = Rows::create(out, &csv_header_of(self.columns(), self.trials)?, done, builder, self.failures)?;
        let done_until = self.run_rows(first_seed..seeds.end, fault_scale, &mut rows, progress)?;
        progress.finish();
        let external = matches!(self.stack.planner, agentsim_agents::PlannerSpec::External(_));
        if let (true, (now, Some(reason))) = (external, agentsim_agents::external::starts())
            && now == agents_started
            && done_until > first_seed
        {
            // Nothing is written: the temporary file is removed with `rows`.
            return Err(Error::run(format!("--agent {}: no agent could be started: {reason}", self.agent)));
        }
        let virtual_ms = rows.virtual_ms_ran;
        let partial = (done_until < seeds.end).then_some(Partial { done_until_seed: done_until });
        // An interrupted external agent cannot be re-run for its recording (new
        // agents are refused from the signal on); `--resume` writes them all.
        // Nor can a run drawn with a tilt per rule (a tilts file): incidents
        // replay at one scale.
        let record_failures = (partial.is_none() || !external) && self.importance_plan.is_none();
        // Incidents are recorded at the scale the sweep drew at, so that they replay.
        let drawn_scale = self.importance.map_or(fault_scale, |s| crate::runner::tilted_scale(fault_scale, s));
        let (prepared, stack) = (self.prepared, self.stack);
        let recording = Recording { agent: self.agent, swarm: self.swarm, fault_scale: drawn_scale };
        let bytes_max = self.incident_bytes_max;
        let summary = rows.finish(out, manifest, self.agent, seeds, fault_scale, partial, |failures| {
            if record_failures {
                write_failures(prepared, stack, &recording, out, failures, bytes_max)
            } else {
                Ok(Failures::default())
            }
        })?;
        let ran = (done_until - first_seed).saturating_mul(u64::from(self.trials));
        Ok(Ran { summary, trajectories: ran, virtual_ms })
    }

    /// How this sweep draws its faults at `fault_scale`, refused when the
    /// estimate it gives would be biased (a swarm, a tilt that makes a fault
    /// certain).
    fn checked_plan(&self, fault_scale: f64) -> Result<Option<agentsim_stats::tilts::Plan>, Error> {
        let plan = self.plan(fault_scale);
        if plan.is_some() && self.swarm {
            return Err(Error::argument(
                "--importance with --swarm: swarm draws are not weighted, so the estimate would be biased",
            ));
        }
        if let Some(importance) = self.importance {
            agentsim_stats::importance::check_support(&self.prepared.catalog, fault_scale, importance)
                .map_err(|e| Error::argument(e.message))?;
        }
        if let Some(plan) = self.importance_plan {
            plan.check_support().map_err(|m| Error::argument(format!("--importance: {m}")))?;
        }
        Ok(plan)
    }

    /// The optional columns of this sweep's rows.
    fn columns(&self) -> Columns {
        Columns {
            swarm: self.swarm,
            importance: self.importance.is_some() || self.importance_plan.is_some(),
            ..Columns::of(self.prepared)
        }
    }

    /// Runs the seeds `seeds` at `fault_scale` into `rows`, in seed order, until
    /// they end or the stop flag is set; returns the first seed not run.
    fn run_rows(
        &self,
        seeds: Range<u64>,
        fault_scale: f64,
        rows: &mut Rows,
        progress: &mut (dyn Progress + Send),
    ) -> Result<u64, Error> {
        let (prepared, stack, trials) = (self.prepared, self.stack, self.trials);
        // An external agent's stderr of a failing run is kept with its row
        // (the re-run that records it may not fail the same way).
        let external = matches!(stack.planner, agentsim_agents::PlannerSpec::External(_));
        let runner = Runner::new(prepared, stack, false, fault_scale)
            .with_diagnostics(external)
            .with_swarm(self.swarm)
            .with_importance(self.importance)
            .with_tilts(self.importance_plan.map(|p| p.probabilities(&prepared.catalog, fault_scale)));
        let importance = self.columns().importance;
        // Each row is rendered on the thread that ran it; only the counting and
        // the writing below run in seed order.
        let swept = |trial: u32, t: Trajectory| -> Result<Swept, Error> {
            let mut row = Row::of(&t);
            row.swarm = runner.swarm_values(t.seed);
            row.task = prepared.task_of(t.seed);
            row.log_weight = importance.then(|| t.log_weight.to_string());
            Swept::of_row(&t, row, trial, trials)
        };
        let mut sink = |swept: Result<Swept, Error>| {
            progress.advance(1);
            rows.add(&swept?).map(|_| ())
        };
        // A persistent agent serves many episodes per process; one that does not
        // greet runs a process per trajectory (nothing was handed on then). A
        // run of many sessions runs a process per session.
        if let agentsim_agents::PlannerSpec::External(config) = &stack.planner
            && prepared.scenario.sessions.runs_alone()
            && !prepared.scenario.sessions.explores_interleavings()
        {
            let run = crate::persistent::Persistent {
                prepared,
                config,
                layers: &stack.layers,
                sim: agentsim_engine::SimConfig {
                    keep_diagnostics: true,
                    ..prepared.scenario.sim_config(false, fault_scale)
                },
                swarm: self.swarm,
                processes: rayon::current_num_threads(),
            };
            let persistent =
                crate::persistent::sweep_mapped_until(&run, seeds.clone(), trials, self.stop, swept, &mut sink)?;
            if let Some(done_until) = persistent {
                return Ok(done_until);
            }
        }
        let (runner, chunk_seeds, stop) = (&runner, self.chunk_seeds, self.stop);
        let run = move || runner.sweep_mapped_until(seeds, trials, chunk_seeds, stop, swept, sink);
        crate::ordered::in_flight(self.in_flight, run).map_err(Error::run)?
    }
}

/// Refuses to resume `out` unless its run had the arguments of `manifest`.
pub fn check_manifest(out: &Path, manifest: &ShardManifest) -> Result<(), Error> {
    let path = out.join(RUN_MANIFEST);
    if !path.is_file() {
        return Err(Error::argument(format!(
            "--resume {}: no {RUN_MANIFEST} there, so no sweep to resume (start one with --out)",
            out.display()
        )));
    }
    let text = read_text(&path.to_string_lossy(), "run manifest")?;
    let theirs: ShardManifest = serde_json::from_str(&text).map_err(|e| {
        Error::content(format!("{}:{}:{}: {e}", path.display(), e.line(), e.column())).at(
            path.display().to_string(),
            e.line(),
            e.column(),
        )
    })?;
    let mismatch = manifest.mismatch(&theirs).or_else(|| {
        (manifest.shard != theirs.shard).then(|| ("shard", manifest.shard.to_string(), theirs.shard.to_string()))
    });
    if let Some((field, ours, theirs)) = mismatch {
        return Err(Error::mismatch(format!(
            "--resume {}: that sweep had other arguments: field `{field}` is {theirs} in {} and {ours} here",
            out.display(),
            path.display()
        )));
    }
    Ok(())
}

/// Reads back the rows an interrupted run wrote into `out`, adding them to
/// `builder`; they must be whole seeds from `seeds.start` on, in order, with
/// `trials` rows each. The first `failures` failing seeds of each mode are kept.
pub fn read_done(
    out: &Path,
    seeds: &Range<u64>,
    trials: u32,
    failures: usize,
    builder: &mut SummaryBuilder,
) -> Result<Done, Error> {
    let path = out.join("trajectories.csv");
    if !path.exists() {
        return Ok(Done::none(seeds.start));
    }
    let text = read_bounded(&path.to_string_lossy(), "trajectories", None)?;
    let mut order = SeedOrder::new(seeds.clone(), trials, false);
    let mut failing = FirstFailures::new(failures, Vec::new());
    let mut runs = Vec::new();
    read_rows(&text, &path.display().to_string(), Some(&mut order), false, |row| -> Result<(), Error> {
        if failing.note(row.trial, row.record.outcome, row.record.seed) {
            let kept = *failing.kept.last().expect("a run just kept");
            runs.push(KeptRun::of(kept, &row.record, None));
        }
        builder.add_record(&row.record);
        Ok(())
    })?;
    Ok(Done { bytes: text.into_bytes(), next_seed: order.next_seed(), failing: runs })
}

/// One trajectory reduced, on the thread that ran it, to what the sweep's
/// ordered part needs.
pub struct Swept {
    /// The attempt at its seed (0 without trials).
    pub trial: u32,
    /// What the summary counts.
    pub record: Record,
    /// Its line of `trajectories.csv`, newline included.
    pub line: Vec<u8>,
    /// The events it recorded (what recording it again would keep).
    pub events: u64,
    /// The tail of its external agent's stderr, when the agent failed (see
    /// [`KeptRun::stderr`]).
    pub stderr: Option<String>,
}

impl Swept {
    /// Reduces `t`, the `trial`-th of `trials` attempts at its seed, with its
    /// swarm draw and task when the sweep has those columns.
    pub fn of(
        t: &Trajectory,
        trial: u32,
        trials: u32,
        swarm: Option<String>,
        task: Option<String>,
    ) -> Result<Swept, Error> {
        let mut row = Row::of(t);
        row.swarm = swarm;
        row.task = task;
        Swept::of_row(t, row, trial, trials)
    }

    /// Reduces `t` with its row already filled in.
    pub fn of_row(t: &Trajectory, row: Row, trial: u32, trials: u32) -> Result<Swept, Error> {
        let mut record = Record::of(t);
        record.task.clone_from(&row.task);
        let events = u64::from(t.metrics.events);
        let line = csv_line(&row, (trials > 1).then_some(trial))?;
        Ok(Swept { trial, record, line, events, stderr: stderr_of(t) })
    }
}

/// The ordered part of a sweep: rows written to `trajectories.csv` in seed
/// order (under a temporary name until [`Rows::finish`]), counted into the
/// summary, and the first failing seeds of each mode noted.
pub struct Rows {
    csv_path: PathBuf,
    csv_file: AtomicFile,
    builder: SummaryBuilder,
    /// The first failing seeds of each failure mode (first trial), in seed order.
    failing: FirstFailures,
    /// What the rows of `failing` record, in the same order.
    failing_runs: Vec<KeptRun>,
    /// Virtual time of the rows added (not of those a resume read back).
    pub virtual_ms_ran: u64,
}

impl Rows {
    /// Starts `out/trajectories.csv` with the rows already `done` (a resume), or
    /// with `header` when there are none; `builder` has counted the rows done.
    pub fn create(
        out: &Path,
        header: &[u8],
        done: Done,
        builder: SummaryBuilder,
        failures_max: usize,
    ) -> Result<Rows, Error> {
        let csv_path = out.join("trajectories.csv");
        let mut csv_file = AtomicFile::create(&csv_path)?;
        let file = csv_file.writer();
        file.write_all(&done.bytes).map_err(|e| io_failure(&csv_path, &e))?;
        if done.bytes.is_empty() {
            // Written first, so that a sweep interrupted before its first row
            // still leaves a CSV with its header.
            file.write_all(header).map_err(|e| io_failure(&csv_path, &e))?;
        }
        let failing = FirstFailures::new(failures_max, done.failing.iter().map(|r| r.kept).collect());
        Ok(Rows { csv_path, csv_file, builder, failing, failing_runs: done.failing, virtual_ms_ran: 0 })
    }

    /// Adds the next row in (seed, trial) order; true when its seed is one of
    /// the failing seeds kept as an incident.
    pub fn add(&mut self, swept: &Swept) -> Result<bool, Error> {
        let Swept { trial, record, line, events, stderr } = swept;
        self.builder.add_record(record);
        self.virtual_ms_ran = self.virtual_ms_ran.saturating_add(record.virtual_ms);
        let kept = self.failing.note(*trial, record.outcome, record.seed);
        if kept {
            let run = *self.failing.kept.last().expect("a run just kept");
            let run = KeptRun { stderr: stderr.clone(), ..KeptRun::of(run, record, Some(*events)) };
            self.failing_runs.push(run);
        }
        self.csv_file.writer().write_all(line).map_err(|e| io_failure(&self.csv_path, &e))?;
        Ok(kept)
    }

    /// Ends the sweep: the summary (`partial` when interrupted), the incidents of
    /// the failing seeds written by `failures` (their paths relative to `out`),
    /// then the rows, `run.json` and `summary.json` renamed into place, in that
    /// order.
    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        mut self,
        out: &Path,
        manifest: &ShardManifest,
        agent: &str,
        seeds: Range<u64>,
        fault_scale: f64,
        partial: Option<Partial>,
        failures: impl FnOnce(&[KeptRun]) -> Result<Failures, Error>,
    ) -> Result<Summary, Error> {
        self.csv_file.writer().flush().map_err(|e| io_failure(&self.csv_path, &e))?;
        let mut summary = self.builder.finish(&manifest.scenario, agent, seeds, fault_scale);
        summary.partial = partial;
        let Failures { written, skipped } = failures(&self.failing_runs)?;
        summary.failures = written;
        summary.failures_skipped = skipped;
        // The manifest follows the rows it describes (a sweep killed outright leaves
        // the previous rows with their own manifest, never new arguments over old
        // rows), and the summary is renamed into place last.
        self.csv_file.commit()?;
        let manifest_json = serde_json::to_string_pretty(manifest).expect("a manifest is plain data") + "\n";
        write_atomic(&out.join(RUN_MANIFEST), manifest_json.as_bytes())?;
        write_summary(out, &summary)?;
        Ok(summary)
    }

    /// Ends rows that are not a sweep's (`agentsim summarize`'s recorded
    /// sessions): the rows, then `summary.json`; no manifest, as there is
    /// nothing to resume.
    pub fn finish_recorded(
        mut self,
        out: &Path,
        scenario: &str,
        agent: &str,
        seeds: Range<u64>,
        fault_scale: f64,
    ) -> Result<Summary, Error> {
        self.csv_file.writer().flush().map_err(|e| io_failure(&self.csv_path, &e))?;
        let summary = self.builder.finish(scenario, agent, seeds, fault_scale);
        self.csv_file.commit()?;
        write_summary(out, &summary)?;
        Ok(summary)
    }
}

/// Writes `out/summary.json`, whole or not at all: the one writer of the file.
pub fn write_summary(out: &Path, summary: &Summary) -> Result<(), Error> {
    let json = serde_json::to_string_pretty(summary).expect("a summary is plain data") + "\n";
    write_atomic(&out.join("summary.json"), json.as_bytes())
}

/// How a sweep's failing runs are recorded: the label, swarm and scale they ran with.
pub struct Recording<'a> {
    /// The agent as the user named it.
    pub agent: &'a str,
    /// Swarm mode.
    pub swarm: bool,
    /// The fault scale the runs drew at.
    pub fault_scale: f64,
}

/// Re-runs each failing run with recording on and writes it as an incident
/// under `out/failures/`. An incident is skipped, with its reason, when it would
/// certainly be larger than `bytes_max` (then it is not re-run: recording holds
/// every event in memory), when the re-run is not the run its row records (an
/// agent that does not answer the same twice: the incident would hold another
/// run), or when it is larger than `bytes_max` once recorded. Every other one is
/// written; the rows and the summary are written whatever becomes of these.
pub fn write_failures(
    prepared: &Prepared,
    stack: &StackSpec,
    recording: &Recording<'_>,
    out: &Path,
    failing: &[KeptRun],
    bytes_max: u64,
) -> Result<Failures, Error> {
    let mut failures = Failures::default();
    if failing.is_empty() {
        return Ok(failures);
    }
    let Recording { agent, swarm, fault_scale } = *recording;
    let recorder = Runner::new(prepared, stack, true, fault_scale).with_swarm(swarm);
    let scenario_bytes = crate::incident::scenario_bytes(&prepared.scenario);
    for run in failing {
        let (kept, file) = (run.kept, run.kept.incident_name());
        let which = crate::incident::seed_and_trial(kept.seed, kept.trial);
        let bytes_min = crate::incident::bytes_min(scenario_bytes, run.events);
        if bytes_min > bytes_max {
            let reason = format!(
                "the incident of {which} would be at least {bytes_min} bytes ({} events), more than the {} an \
                 incident may have: not re-run to record it (recording keeps every event in memory), not written",
                run.events,
                crate::incident::bytes_shown(bytes_max)
            );
            failures.skipped.push(SkippedFailure { file, reason });
            continue;
        }
        let t = recorder.run_trial(kept.seed, kept.trial);
        if t.outcome != kept.outcome || t.digest != run.digest {
            let mut reason = format!(
                "the re-run of {which} to record it ended {} (digest {}), not {} (digest {}) as its row records: \
                 the agent did not decide the same twice (a transient failure?), so the incident would hold another \
                 run: not written",
                t.outcome, t.digest, kept.outcome, run.digest
            );
            // What is left of the failing run: its agent's stderr, beside.
            if let Some(stderr) = &run.stderr {
                let beside = format!("{}.stderr.txt", file.trim_end_matches(".ron"));
                let dir = out.join("failures");
                std::fs::create_dir_all(&dir).map_err(|e| io_failure(&dir, &e))?;
                write_atomic(&out.join(&beside), stderr.as_bytes())?;
                reason.push_str(&format!("; its agent's stderr is in {beside}"));
            }
            failures.skipped.push(SkippedFailure { file, reason });
            continue;
        }
        let mut incident = Incident::record(prepared, None, kept.seed, fault_scale, agent, stack, &t);
        incident.swarm = swarm;
        drop(t);
        // Written one at a time: one recorded run in memory at once.
        let one = write_incidents_within(out, [(kept, incident)], bytes_max)?;
        failures.written.extend(one.written);
        failures.skipped.extend(one.skipped);
    }
    Ok(failures)
}

/// The tail of an external agent's stderr a failing run kept (its last
/// `("external", "stderr")` diagnostic), if any.
fn stderr_of(t: &Trajectory) -> Option<String> {
    t.events.iter().rev().filter(|e| e.diagnostic).find_map(|e| match &e.kind {
        agentsim_engine::EventKind::Note(note) if (note.source, note.what) == ("external", "stderr") => {
            note.detail.as_str().map(str::to_string)
        }
        _ => None,
    })
}

/// Writes incidents as `out/failures/OUTCOME_seedN.ron`; one larger than
/// [`crate::incident::INCIDENT_BYTES_MAX`] (or that its reader would refuse)
/// is skipped with its reason.
pub fn write_incidents(out: &Path, incidents: impl IntoIterator<Item = (Kept, Incident)>) -> Result<Failures, Error> {
    write_incidents_within(out, incidents, crate::incident::INCIDENT_BYTES_MAX)
}

fn write_incidents_within(
    out: &Path,
    incidents: impl IntoIterator<Item = (Kept, Incident)>,
    bytes_max: u64,
) -> Result<Failures, Error> {
    let mut failures = Failures::default();
    for (kept, incident) in incidents {
        let file = kept.incident_name();
        let text = match incident.to_ron_within(bytes_max) {
            Ok(text) => text,
            Err(e) => {
                failures.skipped.push(SkippedFailure { file, reason: e.message });
                continue;
            }
        };
        let dir = out.join("failures");
        std::fs::create_dir_all(&dir).map_err(|e| io_failure(&dir, &e))?;
        write_atomic(&out.join(&file), text.as_bytes())?;
        failures.written.push(file);
    }
    Ok(failures)
}

/// Which optional columns `trajectories.csv` has.
#[derive(Clone, Copy, Debug, Default)]
pub struct Columns {
    /// `swarm`: the fault parameters a seed drew (swarm mode).
    pub swarm: bool,
    /// `task`: the task a seed ran (a world with named tasks).
    pub task: bool,
    /// `state_hash`: the world's final state (a world that declares one).
    pub state_hash: bool,
    /// `log_weight`: the trajectory's log likelihood ratio (`--importance`).
    pub importance: bool,
    /// `checks`: the world's checks (a world that reports them).
    pub checks: bool,
    /// `sessions`: a run's sessions (a scenario of many sessions).
    pub sessions: bool,
}

/// A row with every column `columns` asks for, for its header alone.
impl Columns {
    /// The columns a scenario's rows have whatever the sweep: its tasks, state
    /// hash, checks and sessions (no swarm, no importance).
    pub fn of(prepared: &Prepared) -> Columns {
        Columns {
            task: prepared.has_tasks(),
            state_hash: prepared.has_state_hash(),
            checks: prepared.has_checks(),
            sessions: !prepared.scenario.sessions.is_single(),
            ..Columns::default()
        }
    }
}

fn header_row(columns: Columns) -> Row {
    let Columns { swarm, task, state_hash, importance, checks, sessions } = columns;
    Row {
        seed: 0,
        outcome: "",
        success: 0,
        turns: 0,
        tool_calls: 0,
        failed_calls: 0,
        faults_seen: 0,
        recovered: 0,
        violations: 0,
        tokens: 0,
        cost_usd: String::new(),
        virtual_ms: 0,
        milestone: "",
        fault_kinds: String::new(),
        minefields: String::new(),
        told_accurately: None,
        rejected_calls: 0,
        decisions: String::new(),
        digest: String::new(),
        swarm: swarm.then(String::new),
        task: task.then(String::new),
        state_hash: state_hash.then(String::new),
        checks: checks.then(String::new),
        log_weight: importance.then(String::new),
        sessions: sessions.then(String::new),
    }
}

/// The header line of `trajectories.csv`: the row's fields, with `trial` after
/// `seed` when there are several trials.
pub fn csv_header(swarm: bool, task: bool, state_hash: bool, trials: u32) -> Result<Vec<u8>, Error> {
    csv_header_of(Columns { swarm, task, state_hash, importance: false, checks: false, sessions: false }, trials)
}

/// The header line of `trajectories.csv` with the optional `columns`, and `trial`
/// after `seed` when there are several trials.
pub fn csv_header_of(columns: Columns, trials: u32) -> Result<Vec<u8>, Error> {
    let encode = |e: &dyn std::fmt::Display| Error::write(format!("cannot encode a row: {e}"));
    let mut header = row_records(&header_row(columns), true)?.swap_remove(0);
    if trials > 1 {
        header.insert(1, "trial".to_string());
    }
    header.push(agentsim_stats::summary::CHECK_COLUMN.to_string());
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    w.write_record(&header).map_err(|e| encode(&e))?;
    w.into_inner().map_err(|e| encode(&e))
}

/// One row as its line of `trajectories.csv`, exactly as one writer for the
/// whole file would have written it; `trial` adds the column after `seed`, and
/// the row's checksum is the last column (see
/// [`agentsim_stats::row_line::csv_line`], which writes it by hand).
pub fn csv_line(row: &Row, trial: Option<u32>) -> Result<Vec<u8>, Error> {
    Ok(agentsim_stats::row_line::csv_line(row, trial))
}

/// The CSV records of one row as the csv writer would write them: the header
/// (when `header`) and the row.
fn row_records(row: &Row, header: bool) -> Result<Vec<Vec<String>>, Error> {
    let encode = |e: &dyn std::fmt::Display| Error::write(format!("cannot encode a row: {e}"));
    let mut w = csv::WriterBuilder::new().has_headers(header).from_writer(Vec::new());
    w.serialize(row).map_err(|e| encode(&e))?;
    let bytes = w.into_inner().map_err(|e| encode(&e))?;
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(bytes.as_slice());
    reader.records().map(|r| r.map(|r| r.iter().map(str::to_string).collect()).map_err(|e| encode(&e))).collect()
}

struct Shard {
    dir: PathBuf,
    manifest: ShardManifest,
}

fn load_shard(dir: &Path) -> Result<Shard, Error> {
    let path = dir.join("shard.json");
    let text = read_text(&path.to_string_lossy(), "shard manifest").map_err(|_| {
        Error::argument(format!("{}: not a shard directory (no shard.json; run `sweep --shard K/N`)", dir.display()))
    })?;
    let manifest: ShardManifest = serde_json::from_str(&text).map_err(|e| {
        Error::content(format!("{}:{}:{}: {e}", path.display(), e.line(), e.column())).at(
            path.display().to_string(),
            e.line(),
            e.column(),
        )
    })?;
    Ok(Shard { dir: dir.to_path_buf(), manifest })
}

/// The text of the incident `name` a shard kept for its failing row of `seed`,
/// checked as its rows are: it reads as `replay` reads it, holds that row's
/// seed, outcome and digest, and replays to them. Refused naming the file.
fn shard_incident(dir: &Path, name: &str, kept: &Kept, digest: &agentsim_engine::Digest) -> Result<String, Error> {
    let Kept { outcome, seed, trial } = *kept;
    let path = dir.join(name);
    let shown = path.display().to_string();
    if !path.exists() {
        return Err(Error::mismatch(format!(
            "{}: missing incident `{name}` (its row is a failing seed)",
            dir.display()
        )));
    }
    let text = read_bounded(&shown, "incident", Some(crate::incident::INCIDENT_BYTES_MAX))?;
    let incident = Incident::parse(&text, &shown)?;
    let row = format!(
        "the row of {} in {}",
        crate::incident::seed_and_trial(seed, trial),
        dir.join("trajectories.csv").display()
    );
    let differs = |field: &str, found: String, expected: String| {
        // The field's line in the incident (top level: four spaces in).
        let offset = text.find(&format!("\n    {field}:")).map_or(0, |at| at + 5);
        let (line, column) = crate::spec::position(&text, offset);
        Error::mismatch(format!("{shown}:{line}:{column}: field `{field}`: expected {expected} ({row}), found {found}"))
            .at(shown.clone(), line, column)
            .in_field(field)
    };
    if incident.seed != seed {
        return Err(differs("seed", incident.seed.to_string(), seed.to_string()));
    }
    if incident.trial != trial {
        return Err(differs("trial", incident.trial.to_string(), trial.to_string()));
    }
    if incident.outcome != outcome {
        return Err(differs("outcome", incident.outcome.to_string(), outcome.to_string()));
    }
    if agentsim_engine::Digest::from_hex(&incident.digest).as_ref() != Some(digest) {
        return Err(differs("digest", incident.digest.clone(), digest.to_string()));
    }
    let prepared = incident.prepared();
    let replayed = incident.replay(&prepared, None);
    if let crate::incident::Replay::Diverged { outcome, digest, .. } = incident.check(&prepared, &replayed) {
        return Err(Error::mismatch(format!(
            "{shown}: does not replay (recorded {} {}, replayed {outcome} {digest}); run `agentsim replay {shown}`",
            incident.outcome, incident.digest
        )));
    }
    Ok(text)
}

/// The entry of `failures_skipped` in the shard `dir`'s `summary.json` that
/// names `file`, if any.
fn shard_skipped(dir: &Path, file: &str) -> Result<Option<SkippedFailure>, Error> {
    let path = dir.join("summary.json");
    if !path.is_file() {
        return Ok(None);
    }
    let text = read_text(&path.to_string_lossy(), "shard summary")?;
    let summary: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::content(format!("{}:{}:{}: {e}", path.display(), e.line(), e.column())).at(
            path.display().to_string(),
            e.line(),
            e.column(),
        )
    })?;
    let entries = summary.get("failures_skipped").and_then(serde_json::Value::as_array);
    let entry = entries.into_iter().flatten().find(|e| e.get("file").and_then(|f| f.as_str()) == Some(file));
    Ok(entry.map(|e| SkippedFailure {
        file: file.to_string(),
        reason: e.get("reason").and_then(|r| r.as_str()).unwrap_or("skipped by its shard").to_string(),
    }))
}

/// The shards of `shard_dirs`, in shard order, refused unless they are the
/// shards of one sweep, each exactly once, and `out` is none of them.
fn load_shards(shard_dirs: &[PathBuf], out: &Path) -> Result<Vec<Shard>, Error> {
    if shard_dirs.is_empty() {
        return Err(Error::argument("merge: no shard directories given"));
    }
    crate::files::check_output_dir(out)?;
    // Writing over a shard would replace the rows being merged.
    if let Ok(out) = out.canonicalize() {
        for dir in shard_dirs {
            if dir.canonicalize().is_ok_and(|d| d == out) {
                return Err(Error::argument(format!(
                    "--out {}: that is one of the shards being merged; choose another directory",
                    out.display()
                )));
            }
        }
    }
    let mut shards: Vec<Shard> = shard_dirs.iter().map(|d| load_shard(d)).collect::<Result<_, _>>()?;
    shards.sort_by_key(|s| s.manifest.shard);
    let first = &shards[0].manifest;
    for s in &shards {
        if let Some((field, a, b)) = first.mismatch(&s.manifest) {
            return Err(Error::mismatch(format!(
                "{} does not belong with {}: field `{field}` is {b} there and {a} here",
                s.dir.display(),
                shards[0].dir.display()
            )));
        }
    }
    let indices: Vec<u32> = shards.iter().map(|s| s.manifest.shard).collect();
    if indices != (0..first.shards).collect::<Vec<_>>() {
        return Err(Error::mismatch(format!(
            "expected shards 0..{} exactly once each, found {indices:?}",
            first.shards
        )));
    }
    Ok(shards)
}

/// Merges the shard directories (each written by `sweep --shard K/N`, in any
/// order) into `out`: the files one run of all the seeds writes.
pub fn merge(shard_dirs: &[PathBuf], out: &Path) -> Result<Summary, Error> {
    let shards = load_shards(shard_dirs, out)?;
    let first = shards[0].manifest.clone();
    // Rows in shard order; each shard's rows must be exactly its seeds, in order.
    let mut csv_bytes: Vec<u8> = Vec::new();
    let mut header_seen: Option<String> = None;
    let mut builder = match &first.importance_plan {
        Some(plan) => SummaryBuilder::with_trials(first.trials).with_importance_plan(Some(plan.clone())),
        None => SummaryBuilder::with_trials(first.trials).with_importance(first.importance),
    };
    // The failing seeds whose incidents are copied, and (shard, the row's
    // digest) of each.
    let mut failing = FirstFailures::new(first.failures, Vec::new());
    let mut kept_from: Vec<(PathBuf, agentsim_engine::Digest)> = Vec::new();
    // A sweep with a tilt per rule writes no incidents (see `Sweep::one`).
    let per_rule = first.importance_plan.as_ref().is_some_and(|p| p.method != agentsim_stats::tilts::Method::Scale);
    let seeds = first.seed_start..first.seed_end;
    for s in &shards {
        let path = s.dir.join("trajectories.csv");
        let text = read_bounded(&path.to_string_lossy(), "trajectories", None)?;
        let header = header_line(&text);
        match &header_seen {
            _ if header.is_empty() => return Err(Error::content(format!("{}: empty", path.display()))),
            None => {
                csv_bytes.extend_from_slice(header.as_bytes());
                header_seen = Some(header.to_string());
            }
            Some(h) if h == header => {}
            Some(_) => {
                return Err(Error::mismatch(format!("{}: its columns differ from the other shards'", path.display())));
            }
        }
        let mut order = SeedOrder::new(shard_seeds(&seeds, s.manifest.shard, s.manifest.shards), first.trials, true);
        read_rows(&text, &path.display().to_string(), Some(&mut order), true, |row| -> Result<(), Error> {
            if !per_rule && failing.note(row.trial, row.record.outcome, row.record.seed) {
                kept_from.push((s.dir.clone(), row.record.digest));
            }
            builder.add_record(&row.record);
            csv_bytes.extend_from_slice(row.text.as_bytes());
            Ok(())
        })?;
    }
    let mut summary = builder.finish(&first.scenario, &first.agent, seeds, first.fault_scale);
    // Every incident checked before anything is written: a refused one leaves no output.
    let mut incidents: Vec<(String, String)> = Vec::new();
    for (kept, (dir, digest)) in failing.kept.iter().zip(&kept_from) {
        let name = kept.incident_name();
        // A shard that skipped an incident (too large, or a re-run that was
        // another run) said so in its summary: the skip carries over.
        if !dir.join(&name).exists()
            && let Some(skipped) = shard_skipped(dir, &name)?
        {
            summary.failures_skipped.push(skipped);
            continue;
        }
        incidents.push((name.clone(), shard_incident(dir, &name, kept, digest)?));
    }
    let _lock = lock_dir(out, true)?;
    for (name, text) in &incidents {
        write_atomic(&out.join(name), text.as_bytes())?;
        summary.failures.push(name.clone());
    }
    write_atomic(&out.join("trajectories.csv"), &csv_bytes)?;
    write_summary(out, &summary)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds_file(name: &str) -> String {
        format!("{}/../seeds/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// A sweep of `stack` over `seeds` into `out`, keeping one incident a mode,
    /// each at most `incident_bytes_max`.
    fn sweep(
        prepared: &Prepared,
        stack: &StackSpec,
        seeds: Range<u64>,
        out: &Path,
        incident_bytes_max: u64,
    ) -> Summary {
        let stop = AtomicBool::new(false);
        let sweep = Sweep {
            prepared,
            stack,
            agent: "test",
            seeds: seeds.clone(),
            trials: 1,
            failures: 1,
            swarm: false,
            importance: None,
            importance_plan: None,
            chunk_seeds: 1,
            in_flight: None,
            stop: &stop,
            incident_bytes_max,
        };
        let manifest = sweep.manifest(1.0, 0, 1);
        sweep.one(seeds, 1.0, out, &manifest, false, &mut ()).expect("the sweep writes its files").summary
    }

    /// Issue 46, item 3: an incident too large to write used to fail the whole
    /// sweep (no rows, no summary). Now the rows and the summary are written and
    /// the incident is listed as skipped: one that would certainly be too large
    /// is not even re-run to record it, one found too large once recorded is
    /// not written.
    #[test]
    fn an_incident_too_large_leaves_the_rows_and_the_summary() {
        let prepared = crate::load::scenario(&seeds_file("support_desk_race.ron")).unwrap();
        let stack = agentsim_agents::preset("oracle").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let whole = sweep(&prepared, &stack, 0..2, &dir.path().join("whole"), crate::incident::INCIDENT_BYTES_MAX);
        assert!(!whole.failures.is_empty() && whole.failures_skipped.is_empty(), "{:?}", whole.failures_skipped);
        let written = std::fs::metadata(dir.path().join("whole").join(&whole.failures[0])).unwrap().len();
        let scenario_bytes = crate::incident::scenario_bytes(&prepared.scenario);

        // Just too small: recorded, then found too large.
        let out = dir.path().join("recorded");
        let summary = sweep(&prepared, &stack, 0..2, &out, written - 1);
        assert!(summary.failures.is_empty(), "{:?}", summary.failures);
        assert_eq!(summary.failures_skipped.len(), whole.failures.len());
        assert!(summary.failures_skipped[0].reason.contains("more than the"), "{:?}", summary.failures_skipped);
        assert_eq!(summary.digest, whole.digest);
        let json = std::fs::read_to_string(out.join("summary.json")).unwrap();
        assert!(json.contains("\"failures_skipped\"") && json.contains(&whole.failures[0]), "{json}");
        assert_eq!(
            std::fs::read(out.join("trajectories.csv")).unwrap(),
            std::fs::read(dir.path().join("whole").join("trajectories.csv")).unwrap()
        );
        assert!(!out.join("failures").exists());
        // The same bytes on 1 and 4 threads.
        let json_of = |threads: usize| {
            let out = dir.path().join(format!("threads{threads}"));
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| sweep(&prepared, &stack, 0..4, &out, written - 1));
            std::fs::read(out.join("summary.json")).unwrap()
        };
        assert_eq!(json_of(1), json_of(4));

        // Far too small: not re-run.
        let out = dir.path().join("estimated");
        let summary = sweep(&prepared, &stack, 0..2, &out, scenario_bytes + 100);
        assert!(summary.failures.is_empty());
        assert!(summary.failures_skipped[0].reason.contains("not re-run"), "{:?}", summary.failures_skipped);
        assert!(out.join("trajectories.csv").is_file() && out.join("summary.json").is_file());

        // A sweep with nothing skipped writes no `failures_skipped`: the bytes
        // it always wrote.
        let json = std::fs::read_to_string(dir.path().join("whole").join("summary.json")).unwrap();
        assert!(!json.contains("failures_skipped"), "{json}");
    }

    /// The estimate that decides not to re-run is a true lower bound: every
    /// shipped many-session scenario's incident is at least that large.
    #[test]
    fn the_size_estimate_of_an_incident_is_below_its_size() {
        for name in ["support_desk.ron", "support_desk_race.ron", "flight_booking_load.ron", "weather_dining_load.ron"]
        {
            let prepared = crate::load::scenario(&seeds_file(name)).unwrap();
            let stack = agentsim_agents::preset("resilient").unwrap();
            let t = Runner::new(&prepared, &stack, true, 1.0).run(0);
            let incident = Incident::record(&prepared, None, 0, 1.0, "resilient", &stack, &t);
            let bytes = incident.to_ron().len() as u64;
            let scenario_bytes = crate::incident::scenario_bytes(&prepared.scenario);
            let events = u64::from(t.metrics.events);
            let estimate = crate::incident::bytes_min(scenario_bytes, events);
            assert!(estimate <= bytes, "{name}: estimated {estimate}, is {bytes} ({events} events)");
            eprintln!("{name}: {} bytes an event", (bytes - scenario_bytes) / events.max(1));
        }
    }

    /// Issue 46, item 13: an agent that fails and not on the re-run (a
    /// transient failure; the first process it fails on is a shared one, so its
    /// episode runs again alone and fails there too) had its incident hold the re-run, another run. Now
    /// the re-run's outcome and digest are compared with the row's: a mismatch
    /// is not written, and is listed with why.
    #[test]
    fn an_incident_whose_rerun_is_another_run_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let counter = dir.path().join("runs");
        let script = dir.path().join("transient.py");
        std::fs::write(
            &script,
            "import json, os, sys\n\
             path = sys.argv[1]\n\
             runs = len(open(path).read()) if os.path.exists(path) else 0\n\
             open(path, 'a').write('x')\n\
             sys.stdin.readline()\n\
             if runs < 2:\n    sys.stderr.write('transient: the first run fell over\\n')\n    sys.exit(3)\n\
             print(json.dumps({'protocol': 'agentsim/1', 'action': 'finish', 'outcome': 'done'}), flush=True)\n",
        )
        .unwrap();
        let command = format!("python3 {} {}", script.display(), counter.display());
        let config = agentsim_agents::external::ExternalConfig::new(&command);
        let stack = StackSpec { planner: agentsim_agents::PlannerSpec::External(config), layers: Vec::new() };
        let prepared = crate::load::scenario("support_desk").unwrap();
        let out = dir.path().join("out");
        let summary = sweep(&prepared, &stack, 0..1, &out, crate::incident::INCIDENT_BYTES_MAX);
        assert_eq!(summary.outcomes.iter().find(|(o, _)| o == "agent_error").map(|(_, n)| *n), Some(1));
        assert!(summary.failures.is_empty(), "{:?}", summary.failures);
        let skipped = &summary.failures_skipped;
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].file, "failures/agent_error_seed0.ron");
        assert!(skipped[0].reason.contains("not agent_error"), "{skipped:?}");
        assert!(!out.join("failures/agent_error_seed0.ron").exists());
        // The failing run's stderr is kept beside, and the reason says where.
        let stderr = std::fs::read_to_string(out.join("failures/agent_error_seed0.stderr.txt")).unwrap();
        assert!(stderr.contains("transient: the first run fell over"), "{stderr}");
        assert!(skipped[0].reason.contains("agent_error_seed0.stderr.txt"), "{skipped:?}");
    }
}
