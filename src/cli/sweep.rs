//! `agentsim sweep`: many seeds in parallel, results in seed order.

use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use agentsim::incident::{Incident, hex};
use agentsim::shard::{SHARD_FORMAT, ShardManifest, shard_seeds};
use agentsim::summary::{Partial, Record, Summary, usd};
use agentsim::surface::{Surface, SurfacePoint, scale_dir};
use agentsim::timeline::printable;
use agentsim::{Row, Runner, SummaryBuilder};
use agentsim_agents::StackSpec;
use agentsim_engine::stats::Rate;
use agentsim_engine::{Outcome, Trajectory};
use agentsim_worlds::Prepared;

use super::interrupt::{self, EXIT_INTERRUPTED};
use super::output::{AtomicFile, errln, io_failure, lock_dir, outln, write_atomic};
use super::progress::Progress;
use super::{Failure, SweepArgs, load};

/// Runs the sweep (one per fault scale), writes `trajectories.csv` and
/// `summary.json` (and `surface.json` for several scales), prints the table. On
/// SIGINT or SIGTERM it writes the seeds done so far, marked partial, and exits
/// with [`EXIT_INTERRUPTED`]; `--resume DIR` continues such a sweep.
pub fn sweep(args: &SweepArgs) -> Result<ExitCode, Failure> {
    let setup = &args.setup;
    let mut prepared = load::scenario(&setup.scenario)?;
    load::select_tasks(&mut prepared, setup.tasks.as_deref())?;
    let stack = load::agent(&setup.agent, &prepared, setup.turn_limit_ms, setup.layers.as_deref())?;
    load::check_swarm(setup, &prepared)?;
    let external = matches!(stack.planner, agentsim_agents::PlannerSpec::External(_));
    let chunk_seeds = chunk_seeds(args.trials, external)?;
    let resume = args.resume.is_some();
    let out = args.resume.as_ref().unwrap_or(&args.out);
    if resume && !out.is_dir() {
        return Err(Failure::input(format!(
            "--resume {}: no {RUN_MANIFEST} there, so no sweep to resume (start one with --out)",
            out.display()
        )));
    }
    // Held to the end: a second sweep into the same directory is refused.
    let _lock = lock_dir(out, !resume)?;
    let stop = interrupt::install();
    let sweep = Sweep { prepared: &prepared, stack: &stack, args, chunk_seeds, stop };
    if let Some((shard, shards)) = args.shard {
        let scale = setup.fault_scale.single("sweep --shard")?;
        let seeds = shard_seeds(&args.seeds, shard, shards);
        let manifest = sweep.manifest(scale, shard, shards);
        let summary = sweep.one(seeds, scale, out, &manifest, resume)?;
        print_table(&summary)?;
        if summary.partial.is_some() {
            return interrupted(&summary, out, out);
        }
        let json = serde_json::to_string_pretty(&manifest).expect("a manifest is plain data") + "\n";
        write_atomic(&out.join("shard.json"), json.as_bytes())?;
        outln!(
            "wrote shard {shard}/{shards} (seeds {}..{}) to {}; combine the shards with: agentsim merge DIR... --out DIR",
            summary.seed_start,
            summary.seed_end,
            out.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if let [scale] = setup.fault_scale.0.as_slice() {
        let manifest = sweep.manifest(*scale, 0, 1);
        let summary = sweep.one(args.seeds.clone(), *scale, out, &manifest, resume)?;
        print_table(&summary)?;
        if summary.partial.is_some() {
            return interrupted(&summary, out, out);
        }
        outln!("wrote {}/trajectories.csv and {}/summary.json", out.display(), out.display())?;
        if let Some(first) = summary.failures.first() {
            outln!(
                "wrote {} failing trajectories as incidents under {}/failures/ (replay: agentsim replay {}/{first})",
                summary.failures.len(),
                out.display(),
                out.display(),
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    // A surface resumes scale by scale: each scale directory has its own run.json;
    // scales not started yet run from the beginning.
    let dirs: Vec<_> = setup.fault_scale.0.iter().map(|s| out.join(scale_dir(*s))).collect();
    if resume && !dirs.iter().any(|d| d.join(RUN_MANIFEST).is_file()) {
        return Err(Failure::input(format!(
            "--resume {}: no scale directory there holds a {RUN_MANIFEST} (nothing to resume)",
            out.display()
        )));
    }
    let mut points = Vec::new();
    for (scale, dir) in setup.fault_scale.0.iter().zip(&dirs) {
        let manifest = sweep.manifest(*scale, 0, 1);
        let resume_this = resume && dir.join(RUN_MANIFEST).is_file();
        let summary = sweep.one(args.seeds.clone(), *scale, dir, &manifest, resume_this)?;
        if summary.partial.is_some() {
            return interrupted(&summary, dir, out);
        }
        points.push(SurfacePoint::of(&summary));
    }
    let surface = Surface {
        scenario: prepared.scenario.name.clone(),
        agent: setup.agent.clone(),
        seed_start: args.seeds.start,
        seed_end: args.seeds.end,
        trials: args.trials,
        points,
    };
    let json = serde_json::to_string_pretty(&surface).expect("a surface is plain data") + "\n";
    write_atomic(&out.join("surface.json"), json.as_bytes())?;
    print_surface(&surface)?;
    outln!("wrote {}/surface.json and one directory per scale", out.display())?;
    Ok(ExitCode::SUCCESS)
}

/// The manifest of a sweep's arguments, written with its rows into its output
/// directory; `--resume` refuses a directory whose manifest differs from its own arguments.
const RUN_MANIFEST: &str = "run.json";

/// Overrides the seeds per chunk (the granularity of an interruption). Output does
/// not depend on it; the tests set it so that a short sweep has many chunks.
const CHUNK_SEEDS_ENV: &str = "AGENTSIM_CHUNK_SEEDS";

/// Seeds per chunk: the engine's chunk in trajectories, or the environment's. An
/// external agent's trajectory takes real time (a process per seed), so its
/// chunks hold about one trajectory per thread: an interruption then keeps all
/// but the last few seeds done, not only whole chunks of thousands.
fn chunk_seeds(trials: u32, external: bool) -> Result<u64, Failure> {
    match std::env::var(CHUNK_SEEDS_ENV) {
        Err(_) if external => Ok((rayon::current_num_threads() as u64).div_ceil(u64::from(trials)).max(1)),
        Err(_) => Ok((agentsim_engine::sweep::CHUNK_SEEDS / u64::from(trials)).max(1)),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(Failure::input(format!("{CHUNK_SEEDS_ENV}: expected a number of seeds >= 1, found `{text}`"))),
        },
    }
}

/// Reports an interrupted sweep and the command that continues it.
fn interrupted(summary: &Summary, written: &Path, out: &Path) -> Result<ExitCode, Failure> {
    let done = summary.partial.map_or(summary.seed_end, |p| p.done_until_seed);
    outln!(
        "interrupted: wrote seeds {}..{done} of {}..{} to {} (summary.json is marked partial)",
        summary.seed_start,
        summary.seed_start,
        summary.seed_end,
        written.display()
    )?;
    outln!("continue with: {}", resume_command(out))?;
    Ok(ExitCode::from(EXIT_INTERRUPTED))
}

/// This process's command line with `--out DIR` replaced by `--resume DIR`.
fn resume_command(out: &Path) -> String {
    let mut words = vec!["agentsim".to_string()];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--out" || arg == "--resume" {
            args.next();
        } else if !arg.starts_with("--out=") && !arg.starts_with("--resume=") {
            words.push(arg);
        }
    }
    words.push("--resume".to_string());
    words.push(out.display().to_string());
    let quote = |w: &String| {
        if !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,".contains(&b)) {
            w.clone()
        } else {
            format!("'{}'", w.replace('\'', r"'\''"))
        }
    };
    words.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// What every scale of one `sweep` command shares.
struct Sweep<'a> {
    prepared: &'a Prepared,
    stack: &'a StackSpec,
    args: &'a SweepArgs,
    chunk_seeds: u64,
    stop: &'a AtomicBool,
}

/// The rows already written by an interrupted run of the same sweep.
struct Done {
    /// The file's bytes, header included, copied unchanged.
    bytes: Vec<u8>,
    /// The first seed without rows.
    next_seed: u64,
    /// The first failing seeds of each failure mode (first trial), in seed order.
    failing: Vec<(Outcome, u64)>,
}

impl Sweep<'_> {
    fn manifest(&self, fault_scale: f64, shard: u32, shards: u32) -> ShardManifest {
        let setup = &self.args.setup;
        ShardManifest {
            format: SHARD_FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            scenario: self.prepared.scenario.name.clone(),
            scenario_key: hex(self.prepared.key()),
            agent: setup.agent.clone(),
            stack_key: hex(agentsim_engine::rng::key_of(self.stack)),
            seed_start: self.args.seeds.start,
            seed_end: self.args.seeds.end,
            shard,
            shards,
            trials: self.args.trials,
            fault_scale,
            swarm: setup.swarm,
            failures: self.args.failures,
        }
    }

    /// Refuses to resume `out` unless its run had these arguments.
    fn check_manifest(&self, out: &Path, manifest: &ShardManifest) -> Result<(), Failure> {
        let path = out.join(RUN_MANIFEST);
        if !path.is_file() {
            return Err(Failure::input(format!(
                "--resume {}: no {RUN_MANIFEST} there, so no sweep to resume (start one with --out)",
                out.display()
            )));
        }
        let text = load::read_text(&path.to_string_lossy(), "run manifest")?;
        let theirs: ShardManifest = serde_json::from_str(&text)
            .map_err(|e| Failure::input(format!("{}:{}:{}: {e}", path.display(), e.line(), e.column())))?;
        let mismatch = manifest.mismatch(&theirs).or_else(|| {
            (manifest.shard != theirs.shard).then(|| ("shard", manifest.shard.to_string(), theirs.shard.to_string()))
        });
        if let Some((field, ours, theirs)) = mismatch {
            return Err(Failure::input(format!(
                "--resume {}: that sweep had other arguments: field `{field}` is {theirs} in {} and {ours} here",
                out.display(),
                path.display()
            )));
        }
        Ok(())
    }

    /// Reads back the rows an interrupted run wrote into `out`, adding them to
    /// `builder`; they must be whole seeds from `seeds.start` on, in order.
    fn read_done(&self, out: &Path, seeds: &Range<u64>, builder: &mut SummaryBuilder) -> Result<Done, Failure> {
        let path = out.join("trajectories.csv");
        let mut done = Done { bytes: Vec::new(), next_seed: seeds.start, failing: Vec::new() };
        if !path.exists() {
            return Ok(done);
        }
        let shown = path.display();
        let text = load::read_bounded(&path.to_string_lossy(), "trajectories", None)?;
        if !text.is_empty() && !text.ends_with('\n') {
            return Err(Failure::input(format!("{shown}: the last row is cut off (not written by agentsim?)")));
        }
        let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(text.as_bytes());
        let mut records = reader.records();
        let Some(header) = records.next() else { return Ok(done) };
        let header = header.map_err(|e| Failure::input(format!("{shown}:1: not a CSV header: {e}")))?;
        let trials = self.args.trials;
        let mut trial_of_seed = 0u32;
        for row in records {
            let row = row.map_err(|e| Failure::input(format!("{shown}: {e}")))?;
            let line = row.position().map_or(0, csv::Position::line);
            let record = Record::from_csv(&header, &row).map_err(|e| Failure::input(format!("{shown}:{line}: {e}")))?;
            if record.seed != done.next_seed || done.next_seed >= seeds.end {
                return Err(Failure::input(format!(
                    "{shown}:{line}: expected seed {}, found {} (the rows must be the seeds {}..{} in order)",
                    done.next_seed, record.seed, seeds.start, seeds.end
                )));
            }
            if trial_of_seed == 0
                && record.outcome != Outcome::Success
                && done.failing.iter().filter(|(o, _)| *o == record.outcome).count() < self.args.failures
            {
                done.failing.push((record.outcome, record.seed));
            }
            builder.add_record(&record);
            trial_of_seed += 1;
            if trial_of_seed == trials {
                trial_of_seed = 0;
                done.next_seed += 1;
            }
        }
        if trial_of_seed != 0 {
            return Err(Failure::input(format!(
                "{shown}: seed {} has {trial_of_seed} of its {trials} trials (rows are written whole seeds at a time)",
                done.next_seed
            )));
        }
        done.bytes = text.into_bytes();
        Ok(done)
    }

    /// One sweep at one fault scale into `out`, continuing the rows already there
    /// when `resume`; returns its summary, marked partial when interrupted.
    fn one(
        &self,
        seeds: Range<u64>,
        fault_scale: f64,
        out: &Path,
        manifest: &ShardManifest,
        resume: bool,
    ) -> Result<Summary, Failure> {
        let (prepared, stack, args) = (self.prepared, self.stack, self.args);
        let trials = args.trials;
        std::fs::create_dir_all(out).map_err(|e| io_failure(out, &e))?;
        let mut builder = SummaryBuilder::with_trials(trials);
        let done = if resume {
            self.check_manifest(out, manifest)?;
            self.read_done(out, &seeds, &mut builder)?
        } else {
            Done { bytes: Vec::new(), next_seed: seeds.start, failing: Vec::new() }
        };
        let runner = Runner::new(prepared, stack, false, fault_scale).with_swarm(args.setup.swarm);

        let started = Instant::now();
        let agents_started = agentsim_agents::external::starts().0;
        let csv_path = out.join("trajectories.csv");
        let mut csv_file = AtomicFile::create(&csv_path)?;
        csv_file.writer().write_all(&done.bytes).map_err(|e| io_failure(&csv_path, &e))?;
        let header_written = !done.bytes.is_empty();
        let total = (seeds.end - done.next_seed).saturating_mul(u64::from(trials));
        let label =
            if args.setup.fault_scale.0.len() > 1 { format!("scale {fault_scale}") } else { "sweep".to_string() };
        let mut progress = Progress::new(label, total, args.quiet);
        // The first failing seeds of each failure mode (first trial), in seed order.
        let mut failing = done.failing;
        let done_until;
        // Virtual time simulated by this run (not by the rows a resume read back).
        let mut virtual_ms_ran: u64 = 0;
        {
            let file = csv_file.writer();
            if !header_written {
                // Written first, so that a sweep interrupted before its first row
                // still leaves a CSV with its header.
                file.write_all(&csv_header(
                    args.setup.swarm,
                    self.prepared.has_tasks(),
                    self.prepared.has_state_hash(),
                    trials,
                )?)
                .map_err(|e| io_failure(&csv_path, &e))?;
            }
            // Each row is rendered on the thread that ran it; only the counting and
            // the writing below run in seed order.
            let swept = |trial: u32, t: Trajectory| -> Result<Swept, Failure> {
                let mut row = Row::of(&t);
                row.swarm = runner.swarm_values(t.seed);
                row.task = self.prepared.task_of(t.seed);
                row.state_hash = t.state_hash.clone();
                Ok(Swept { trial, record: Record::of(&t), line: csv_line(&row, (trials > 1).then_some(trial))? })
            };
            done_until = runner.sweep_mapped_until(
                done.next_seed..seeds.end,
                trials,
                self.chunk_seeds,
                self.stop,
                swept,
                |swept| {
                    let Swept { trial, record, line } = swept?;
                    builder.add_record(&record);
                    virtual_ms_ran = virtual_ms_ran.saturating_add(record.virtual_ms);
                    progress.advance(1);
                    if trial == 0
                        && record.outcome != Outcome::Success
                        && failing.iter().filter(|(o, _)| *o == record.outcome).count() < args.failures
                    {
                        failing.push((record.outcome, record.seed));
                    }
                    file.write_all(&line).map_err(|e| io_failure(&csv_path, &e))
                },
            )?;
            file.flush().map_err(|e| io_failure(&csv_path, &e))?;
        }
        progress.finish();
        let external = matches!(stack.planner, agentsim_agents::PlannerSpec::External(_));
        if let (true, (now, Some(reason))) = (external, agentsim_agents::external::starts())
            && now == agents_started
            && done_until > done.next_seed
        {
            // Nothing is written: the temporary file is removed with `csv_file`.
            return Err(Failure::input(format!("--agent {}: no agent could be started: {reason}", args.setup.agent)));
        }
        let mut summary = builder.finish(&prepared.scenario.name, &args.setup.agent, seeds.clone(), fault_scale);
        if done_until < seeds.end {
            summary.partial = Some(Partial { done_until_seed: done_until });
        }
        // An interrupted external agent cannot be re-run for its recording (new
        // agents are refused from the signal on); `--resume` writes them all.
        if summary.partial.is_none() || !external {
            summary.failures = write_failures(prepared, stack, args, fault_scale, out, &failing)?;
        }
        let json = serde_json::to_string_pretty(&summary).expect("a summary is plain data") + "\n";
        // The manifest follows the rows it describes (a sweep killed outright leaves
        // the previous rows with their own manifest, never new arguments over old
        // rows), and the summary is renamed into place last.
        csv_file.commit()?;
        let manifest_json = serde_json::to_string_pretty(manifest).expect("a manifest is plain data") + "\n";
        write_atomic(&out.join(RUN_MANIFEST), manifest_json.as_bytes())?;
        write_atomic(&out.join("summary.json"), json.as_bytes())?;
        let elapsed = started.elapsed();
        let ran = (done_until - done.next_seed).saturating_mul(u64::from(trials));
        let seconds = elapsed.as_secs_f64().max(1e-9);
        errln!(
            "{ran} trajectories in {:.2} s ({:.0} per second, {:.0} virtual seconds per second)",
            elapsed.as_secs_f64(),
            ran as f64 / seconds,
            virtual_ms_ran as f64 / 1000.0 / seconds
        );
        Ok(summary)
    }
}

/// Re-runs each failing seed with recording on and writes it as an incident under
/// `out/failures/`; returns the paths relative to `out`.
fn write_failures(
    prepared: &Prepared,
    stack: &StackSpec,
    args: &SweepArgs,
    fault_scale: f64,
    out: &Path,
    failing: &[(Outcome, u64)],
) -> Result<Vec<String>, Failure> {
    if failing.is_empty() {
        return Ok(Vec::new());
    }
    let dir = out.join("failures");
    std::fs::create_dir_all(&dir).map_err(|e| io_failure(&dir, &e))?;
    let recorder = Runner::new(prepared, stack, true, fault_scale).with_swarm(args.setup.swarm);
    let mut written = Vec::new();
    for (outcome, seed) in failing {
        let t = recorder.run(*seed);
        let mut incident = Incident::record(prepared, None, *seed, fault_scale, &args.setup.agent, stack, &t);
        incident.swarm = args.setup.swarm;
        let name = format!("failures/{outcome}_seed{seed}.ron");
        write_atomic(
            &out.join(&name),
            incident
                .to_ron_bounded()
                .map_err(|e| Failure::input(format!("{}: {e}", out.join(&name).display())))?
                .as_bytes(),
        )?;
        written.push(name);
    }
    Ok(written)
}

/// A row with every column (`swarm` when `swarm`), for its header alone.
fn header_row(swarm: bool, task: bool, state_hash: bool) -> Row {
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
    }
}

/// One trajectory reduced, in parallel, to what the sweep's ordered part needs.
struct Swept {
    trial: u32,
    record: Record,
    /// Its line of `trajectories.csv`, newline included.
    line: Vec<u8>,
}

/// The header line of `trajectories.csv`: the row's fields, with `trial` after
/// `seed` when there are several trials.
pub(super) fn csv_header(swarm: bool, task: bool, state_hash: bool, trials: u32) -> Result<Vec<u8>, Failure> {
    let encode = |e: &dyn std::fmt::Display| Failure::input(format!("cannot encode a row: {e}"));
    let mut header = row_records(&header_row(swarm, task, state_hash), true)?.swap_remove(0);
    if trials > 1 {
        header.insert(1, "trial".to_string());
    }
    header.push(agentsim::summary::CHECK_COLUMN.to_string());
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    w.write_record(&header).map_err(|e| encode(&e))?;
    w.into_inner().map_err(|e| encode(&e))
}

/// One row as its line of `trajectories.csv`, exactly as one writer for the
/// whole file would have written it; `trial` adds the column after `seed`, and
/// the row's checksum is the last column.
pub(super) fn csv_line(row: &Row, trial: Option<u32>) -> Result<Vec<u8>, Failure> {
    let encode = |e: &dyn std::fmt::Display| Failure::input(format!("cannot encode a row: {e}"));
    let mut w = csv::WriterBuilder::new().has_headers(false).buffer_capacity(512).from_writer(Vec::new());
    w.serialize(row).map_err(|e| encode(&e))?;
    let mut line = w.into_inner().map_err(|e| encode(&e))?;
    // The checksum covers the row without its trial, so that trial 0 is the row
    // of the plain sweep, byte for byte, but for the `trial` column.
    agentsim::summary::append_check(&mut line);
    let Some(trial) = trial else { return Ok(line) };
    let mut record = row_records(row, false)?.swap_remove(0);
    record.insert(1, trial.to_string());
    let check = std::str::from_utf8(&line).ok().and_then(|l| l.trim_end().rsplit(',').next()).unwrap_or_default();
    record.push(check.to_string());
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    w.write_record(&record).map_err(|e| encode(&e))?;
    w.into_inner().map_err(|e| encode(&e))
}

/// The CSV records of one row as the csv writer would write them: the header
/// (when `header`) and the row.
fn row_records(row: &Row, header: bool) -> Result<Vec<Vec<String>>, Failure> {
    let encode = |e: &dyn std::fmt::Display| Failure::input(format!("cannot encode a row: {e}"));
    let mut w = csv::WriterBuilder::new().has_headers(header).from_writer(Vec::new());
    w.serialize(row).map_err(|e| encode(&e))?;
    let bytes = w.into_inner().map_err(|e| encode(&e))?;
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(bytes.as_slice());
    reader.records().map(|r| r.map(|r| r.iter().map(str::to_string).collect()).map_err(|e| encode(&e))).collect()
}

fn print_surface(s: &Surface) -> Result<(), Failure> {
    outln!(
        "reliability surface {} x {}: seeds {}..{} per scale{}",
        printable(&s.scenario),
        printable(&s.agent),
        s.seed_start,
        s.seed_end,
        if s.trials > 1 { format!(", {} trials each", s.trials) } else { String::new() }
    )?;
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED).set_header(vec![
        "fault scale",
        "completion",
        "95% interval",
        "recovery",
        "violations",
    ]);
    for p in &s.points {
        let (value, interval) = pct(&p.completion);
        table.add_row(vec![format!("{}", p.fault_scale), value, interval, pct(&p.recovery).0, pct(&p.violation).0]);
    }
    outln!("{table}")
}

fn pct(r: &Rate) -> (String, String) {
    if r.n == 0 {
        return ("n/a".into(), "(no trajectories)".into());
    }
    (format!("{:.1}%  ({}/{})", r.rate * 100.0, r.count, r.n), format!("[{:.1}%, {:.1}%]", r.lo * 100.0, r.hi * 100.0))
}

fn print_table(s: &Summary) -> Result<(), Failure> {
    outln!(
        "sweep {} x {}: seeds {}..{} ({} trajectories), fault scale {}",
        printable(&s.scenario),
        printable(&s.agent),
        s.seed_start,
        s.seed_end,
        s.trajectories,
        s.fault_scale
    )?;
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED).set_header(vec!["metric", "value", "95% interval"]);
    for (name, rate) in [
        ("completion", &s.completion),
        ("recovery", &s.recovery),
        ("violations", &s.violation),
        ("contextual accuracy", &s.contextual_accuracy),
        ("tool fidelity", &s.tool_fidelity),
    ] {
        let (value, interval) = pct(rate);
        table.add_row(vec![name.to_string(), value, interval]);
    }
    if let Some(p) = &s.pass_k {
        let values: Vec<String> = p.values.iter().map(|(k, v)| format!("k={k} {:.1}%", 100.0 * v)).collect();
        let (_, interval) = pct(&p.all_trials);
        table.add_row(vec![format!("pass^k ({} trials)", p.trials), values.join("  "), interval]);
    }
    let spread = |name: &str, p50: String, p90: String, p99: String| {
        vec![name.to_string(), format!("p50 {p50}  p90 {p90}  p99 {p99}"), String::new()]
    };
    table.add_row(spread("turns", s.turns.p50.to_string(), s.turns.p90.to_string(), s.turns.p99.to_string()));
    table.add_row(spread(
        "tool calls",
        s.tool_calls.p50.to_string(),
        s.tool_calls.p90.to_string(),
        s.tool_calls.p99.to_string(),
    ));
    table.add_row(spread("cost ($)", usd(s.cost_micro_usd.p50), usd(s.cost_micro_usd.p90), usd(s.cost_micro_usd.p99)));
    let secs = |ms: u64| format!("{:.1}s", ms as f64 / 1000.0);
    table.add_row(spread("virtual time", secs(s.virtual_ms.p50), secs(s.virtual_ms.p90), secs(s.virtual_ms.p99)));
    table.add_row(vec![
        "cost per success".to_string(),
        s.cost_usd_per_success.as_ref().map_or("n/a".to_string(), |c| format!("${c}")),
        String::new(),
    ]);
    let share = |count: u64| format!("{count}  ({:.1}%)", 100.0 * count as f64 / s.trajectories.max(1) as f64);
    for (name, count) in s.outcomes.iter().filter(|(_, c)| *c > 0) {
        table.add_row(vec![format!("outcome {name}"), share(*count), String::new()]);
    }
    for (name, count) in &s.minefields {
        table.add_row(vec![format!("minefield {name}"), share(*count), String::new()]);
    }
    for (name, count) in &s.decisions {
        table.add_row(vec![
            format!("decision {name}"),
            format!("{}, {} times", share(count.trajectories), count.times),
            String::new(),
        ]);
    }
    outln!("{table}")?;
    outln!("digest {}", s.digest)
}
