//! `agentsim sweep`: many seeds in parallel, results in seed order.

use agentsim::text::percent;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use agentsim::importance::{Estimator, ImportanceSummary};
use agentsim::rate::Rate;
use agentsim::shard::{ShardManifest, shard_seeds};
use agentsim::summary::{Summary, usd};
use agentsim::surface::{Surface, SurfacePoint, scale_dir, scale_label};
use agentsim::sweep::RUN_MANIFEST;
use agentsim::timeline::printable;
use agentsim_agents::StackSpec;
use agentsim_worlds::Prepared;

use super::interrupt::{self, EXIT_INTERRUPTED};
use super::output::{check_output_dir, errln, io_failure, lock_dir, outln, write_atomic};
use super::progress::Progress;
use super::{Failure, Importance, SweepArgs, load};
use agentsim::tilts::{Method, Plan};

/// Runs the sweep (one per fault scale), writes `trajectories.csv` and
/// `summary.json` (and `surface.json` for several scales), prints the table. On
/// SIGINT or SIGTERM it writes the seeds done so far, marked partial, and exits
/// with [`EXIT_INTERRUPTED`]; `--resume DIR` continues such a sweep.
pub fn sweep(args: &SweepArgs) -> Result<ExitCode, Failure> {
    let setup = &args.setup;
    let mut prepared = load::scenario(&setup.scenario)?;
    load::select_tasks(&mut prepared, setup.tasks.as_deref())?;
    let stack = load::setup_agent(setup, &mut prepared)?;
    load::check_swarm(setup, &prepared)?;
    // Before the output directory is touched: a bad tilts file leaves nothing.
    let plan = importance_plan(args, &prepared, &stack)?;
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
    let in_flight = args
        .in_flight
        .map(|n| n as usize)
        .or_else(|| agentsim::llm::in_flight_default(&stack, &prepared, &setup.llm.options()));
    let sweep = Sweep { prepared: &prepared, stack: &stack, args, chunk_seeds, in_flight, stop, plan: plan.as_ref() };
    if let Some((shard, shards)) = args.shard {
        return sweep.run_shard(shard, shards, out, resume);
    }
    if let [scale] = setup.fault_scale.0.as_slice() {
        return sweep.run_one_scale(*scale, out, resume);
    }
    sweep.run_surface(out, resume)
}

/// The tilts of `--importance FILE.ron` or `--importance auto` (the latter
/// chosen by the cross-entropy method, and said on stdout); `None` for a plain
/// sweep or `--importance SCALE`.
fn importance_plan(args: &SweepArgs, prepared: &Prepared, stack: &StackSpec) -> Result<Option<Plan>, Failure> {
    let auto = matches!(args.importance, Some(Importance::Auto));
    if !auto && (args.importance_target.is_some() || args.importance_pilot.is_some()) {
        return Err(Failure::input(
            "--importance-target and --importance-pilot go with --importance auto (the pilot that chooses the tilts)",
        ));
    }
    let source = match &args.importance {
        None | Some(Importance::Scale(_)) => return Ok(None),
        Some(source) => source,
    };
    let fault_scale = args.setup.fault_scale.single("sweep --importance with a tilt per rule")?;
    if args.setup.swarm {
        return Err(Failure::input(
            "--importance with --swarm: swarm draws are not weighted, so the estimate would be biased",
        ));
    }
    match source {
        Importance::File(path) => {
            let text = load::read_text(path, "tilts file")?;
            let plan = agentsim::tilts::parse_tilts(&text, path, &prepared.catalog, fault_scale)
                .map_err(|e| Failure::input(e.to_string()))?;
            Ok(Some(plan))
        }
        Importance::Auto => {
            let pilot_end = agentsim::cross_entropy::PILOT_SEED_START;
            if args.seeds.end > pilot_end {
                return Err(Failure::input(format!(
                    "--importance auto: the pilot runs seeds from {pilot_end} on; sweep seeds below it"
                )));
            }
            let target = args.importance_target.clone().unwrap_or(agentsim::cross_entropy::Target::Failure);
            let pilot_seeds = args.importance_pilot.unwrap_or(agentsim::cross_entropy::PILOT_SEEDS_DEFAULT);
            let plan = agentsim::cross_entropy::choose(prepared, stack, fault_scale, &target, pilot_seeds)?;
            let pilot = plan.pilot.as_ref().expect("the cross-entropy method says what its pilot did");
            outln!(
                "cross-entropy: tilts for `{}` from {} pilot sweeps of {} seeds ({} of the last showed it): {}",
                printable(&pilot.target),
                pilot.iterations,
                pilot.seeds_per_iteration,
                pilot.events_last,
                plan.describe().join(", ")
            )?;
            Ok(Some(plan))
        }
        Importance::Scale(_) => unreachable!("handled above"),
    }
}

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
        Err(_) => Ok((agentsim::ordered::CHUNK_SEEDS / u64::from(trials)).max(1)),
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
    in_flight: Option<usize>,
    stop: &'a AtomicBool,
    /// The tilts of `--importance FILE.ron|auto`.
    plan: Option<&'a Plan>,
}

/// The progress bar of one scale, drawn on stderr when it is a terminal.
struct Bar {
    label: String,
    quiet: bool,
    bar: Option<Progress>,
}

impl agentsim::sweep::Progress for Bar {
    fn start(&mut self, total: u64) {
        self.bar = Some(Progress::new(std::mem::take(&mut self.label), total, self.quiet));
    }
    fn advance(&mut self, n: u64) {
        if let Some(bar) = &mut self.bar {
            bar.advance(n);
        }
    }
    fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}

impl Sweep<'_> {
    /// The library's sweep over this command's arguments.
    fn library(&self) -> agentsim::sweep::Sweep<'_> {
        let setup = &self.args.setup;
        agentsim::sweep::Sweep {
            prepared: self.prepared,
            stack: self.stack,
            agent: &setup.agent,
            seeds: self.args.seeds.clone(),
            trials: self.args.trials,
            failures: self.args.failures,
            swarm: setup.swarm,
            importance: match self.args.importance {
                Some(Importance::Scale(scale)) => Some(scale),
                _ => None,
            },
            importance_plan: self.plan,
            chunk_seeds: self.chunk_seeds,
            in_flight: self.in_flight,
            stop: self.stop,
            incident_bytes_max: agentsim::incident::INCIDENT_BYTES_MAX,
        }
    }

    fn manifest(&self, fault_scale: f64, shard: u32, shards: u32) -> ShardManifest {
        self.library().manifest(fault_scale, shard, shards)
    }

    /// One sweep at one fault scale into `out` (`agentsim::sweep::Sweep::one`),
    /// with the progress bar and the elapsed time on stderr.
    fn one(
        &self,
        seeds: Range<u64>,
        fault_scale: f64,
        out: &Path,
        manifest: &ShardManifest,
        resume: bool,
    ) -> Result<Summary, Failure> {
        let label = if self.args.setup.fault_scale.0.len() > 1 {
            format!("scale {}", scale_label(fault_scale))
        } else {
            "sweep".to_string()
        };
        let mut bar = Bar { label, quiet: self.args.quiet, bar: None };
        let started = Instant::now();
        let ran = self.library().one(seeds, fault_scale, out, manifest, resume, &mut bar)?;
        for skipped in &ran.summary.failures_skipped {
            errln!("warning: {}: {}", out.join(&skipped.file).display(), skipped.reason);
        }
        let elapsed = started.elapsed();
        let seconds = elapsed.as_secs_f64().max(1e-9);
        errln!(
            "{} trajectories in {:.2} s ({:.0} per second, {:.0} virtual seconds per second)",
            ran.trajectories,
            elapsed.as_secs_f64(),
            ran.trajectories as f64 / seconds,
            ran.virtual_ms as f64 / 1000.0 / seconds
        );
        Ok(ran.summary)
    }
}

/// The three kinds of `sweep` command: one shard, one scale, a surface.
impl Sweep<'_> {
    /// `--shard K/N`: this shard's seeds at the one fault scale, and its
    /// `shard.json` for `agentsim merge`.
    fn run_shard(&self, shard: u32, shards: u32, out: &Path, resume: bool) -> Result<ExitCode, Failure> {
        let scale = self.args.setup.fault_scale.single("sweep --shard")?;
        let seeds = shard_seeds(&self.args.seeds, shard, shards);
        let manifest = self.manifest(scale, shard, shards);
        let summary = self.one(seeds, scale, out, &manifest, resume)?;
        print_table(&summary)?;
        if summary.partial.is_some() {
            return interrupted(&summary, out, out);
        }
        let json = serde_json::to_string_pretty(&manifest).expect("a manifest is plain data") + "\n";
        write_atomic(&out.join("shard.json"), json.as_bytes())?;
        errln!(
            "wrote shard {shard}/{shards} (seeds {}..{}) to {}; combine the shards with: agentsim merge DIR... --out DIR",
            summary.seed_start,
            summary.seed_end,
            out.display()
        );
        Ok(ExitCode::SUCCESS)
    }

    /// One fault scale: the sweep into `out`, its table and where its files
    /// (and failing trajectories) went.
    fn run_one_scale(&self, scale: f64, out: &Path, resume: bool) -> Result<ExitCode, Failure> {
        let manifest = self.manifest(scale, 0, 1);
        let summary = self.one(self.args.seeds.clone(), scale, out, &manifest, resume)?;
        print_table(&summary)?;
        if summary.partial.is_some() {
            return interrupted(&summary, out, out);
        }
        errln!("wrote {}/trajectories.csv and {}/summary.json", out.display(), out.display());
        warn_sim_errors(&summary, out);
        if let Some(first) = summary.failures.first() {
            errln!(
                "wrote {} failing trajectories as incidents under {}/failures/ (replay: agentsim replay {}/{first})",
                summary.failures.len(),
                out.display(),
                out.display(),
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    /// Several fault scales: one sweep per scale in its own directory under
    /// `out`, then `surface.json` and its table.
    fn run_surface(&self, out: &Path, resume: bool) -> Result<ExitCode, Failure> {
        let scales = &self.args.setup.fault_scale.0;
        let dirs = scale_dirs(scales, out, resume)?;
        let mut points = Vec::new();
        for (scale, dir) in scales.iter().zip(&dirs) {
            let manifest = self.manifest(*scale, 0, 1);
            let resume_this = resume && dir.join(RUN_MANIFEST).is_file();
            let summary = self.one(self.args.seeds.clone(), *scale, dir, &manifest, resume_this)?;
            if summary.partial.is_some() {
                return interrupted(&summary, dir, out);
            }
            points.push(SurfacePoint::of(&summary));
        }
        let surface = Surface {
            scenario: self.prepared.scenario.name.clone(),
            agent: self.args.setup.agent.clone(),
            seed_start: self.args.seeds.start,
            seed_end: self.args.seeds.end,
            trials: self.args.trials,
            points,
        };
        let json = serde_json::to_string_pretty(&surface).expect("a surface is plain data") + "\n";
        write_atomic(&out.join("surface.json"), json.as_bytes())?;
        print_surface(&surface)?;
        errln!("wrote {}/surface.json and one directory per scale", out.display());
        Ok(ExitCode::SUCCESS)
    }
}

/// The directory of each scale of a surface under `out`, made before the first
/// sweep runs: one that cannot be made (a path too long, a file in the way)
/// must not cost the sweeps before it. A surface resumes scale by scale: each
/// scale directory has its own run.json; scales not started yet run from the
/// beginning.
fn scale_dirs(scales: &[f64], out: &Path, resume: bool) -> Result<Vec<PathBuf>, Failure> {
    let dirs: Vec<_> = scales.iter().map(|s| out.join(scale_dir(*s))).collect();
    if resume && !dirs.iter().any(|d| d.join(RUN_MANIFEST).is_file()) {
        return Err(Failure::input(format!(
            "--resume {}: no scale directory there holds a {RUN_MANIFEST} (nothing to resume)",
            out.display()
        )));
    }
    for dir in &dirs {
        check_output_dir(dir)?;
        std::fs::create_dir_all(dir).map_err(|e| io_failure(dir, &e))?;
    }
    Ok(dirs)
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
        table.add_row(vec![scale_label(p.fault_scale), value, interval, pct(&p.recovery).0, pct(&p.violation).0]);
    }
    outln!("{table}")
}

fn pct(r: &Rate) -> (String, String) {
    if r.n == 0 {
        return ("n/a".into(), "(no trajectories)".into());
    }
    (format!("{}  ({}/{})", percent(r.rate), r.count, r.n), format!("[{}, {}]", percent(r.lo), percent(r.hi)))
}

/// The table of one sweep: its rates, spreads and counts, how trials widened
/// the intervals, the importance estimates and the digest.
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
    rate_rows(&mut table, s);
    spread_rows(&mut table, s);
    count_rows(&mut table, s);
    outln!("{table}")?;
    if let Some(design_effect) = &s.design_effect {
        let effects: Vec<String> = design_effect.iter().map(|(name, d)| format!("{name} {d:.2}")).collect();
        outln!(
            "intervals by seed: the {} trials of a seed share its world, so they count as fewer runs \
             (design effect {})",
            s.trials,
            effects.join(", ")
        )?;
    }
    if let Some(importance) = &s.importance {
        print_importance(importance)?;
    }
    outln!("digest {}", s.digest)
}

/// The rows with an interval: the four dimensions and violations, the
/// world's checks, pass^k.
fn rate_rows(table: &mut Table, s: &Summary) {
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
    for (name, check) in s.checks.iter().flat_map(|c| &c.overall) {
        let basis = if check.in_reward > 0 { ", in reward" } else { "" };
        let (value, interval) = if check.passed.n == 0 {
            (format!("not judged ({} trajectories{basis})", check.unjudged), String::new())
        } else {
            let (value, interval) = pct(&check.passed);
            (format!("{value}{basis}"), interval)
        };
        table.add_row(vec![format!("check {name}"), value, interval]);
    }
    if let Some(sessions) = &s.sessions {
        for (name, rate) in
            [("sessions completed", &sessions.completion), ("sessions hurt by another", &sessions.hurt_by_another)]
        {
            let (value, interval) = pct(rate);
            table.add_row(vec![name.to_string(), value, interval]);
        }
        // Outside the shares above (their agent never came, or they would
        // have arrived after the horizon), and counted all the same.
        for (name, count) in [("sessions absent", sessions.absent), ("sessions not started", sessions.not_started)] {
            if count > 0 {
                let value = format!("{count}  (not in the shares: {} sessions of the agents')", sessions.sessions);
                table.add_row(vec![name.to_string(), value, String::new()]);
            }
        }
    }
    if let Some(p) = &s.pass_k {
        let values: Vec<String> = p.values.iter().map(|(k, v)| format!("k={k} {}", percent(*v))).collect();
        let (_, interval) = pct(&p.all_trials);
        table.add_row(vec![format!("pass^k ({} trials)", p.trials), values.join("  "), interval]);
    }
}

/// One row of percentiles.
fn spread_row(name: &str, p50: String, p90: String, p99: String) -> Vec<String> {
    vec![name.to_string(), format!("p50 {p50}  p90 {p90}  p99 {p99}"), String::new()]
}

/// The rows of percentiles (turns, tool calls, cost, virtual time) and the
/// cost per success.
fn spread_rows(table: &mut Table, s: &Summary) {
    let spread = spread_row;
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
    if let Some(sessions) = &s.sessions {
        // Each a spread over runs of one run's figure.
        let per_run = |name: &str, spread: &agentsim::summary::Spread| {
            spread_row(name, secs(spread.p50), secs(spread.p90), secs(spread.p99))
        };
        table.add_row(per_run("task latency p50 (per run)", &sessions.latency_p50_ms));
        table.add_row(per_run("task latency p99 (per run)", &sessions.latency_p99_ms));
        // A run's figure is its sessions' waits added up, not one session's wait.
        table.add_row(per_run("model queue (run total)", &sessions.model_queue_ms));
    }
    table.add_row(vec![
        "cost per success".to_string(),
        s.cost_usd_per_success.as_ref().map_or("n/a".to_string(), |c| format!("${c}")),
        String::new(),
    ]);
}

/// The rows of counts, with their share of the trajectories: outcomes seen,
/// minefields stepped on, decisions taken.
fn count_rows(table: &mut Table, s: &Summary) {
    let share = |count: u64| format!("{count}  ({})", percent(count as f64 / s.trajectories.max(1) as f64));
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
}

/// From this estimate on, a row of the table is written as `1 - x`.
const NEAR_ONE: f64 = 0.999;

/// A rate for the table; `near_one`, as `1 - x`, so that completion's digits
/// show the failures it leaves (`1.000e0` would hide them).
fn rate_text(p: f64, near_one: bool) -> String {
    if near_one && p < 1.0 { format!("1 - {:.3e}", 1.0 - p) } else { format!("{p:.3e}") }
}

/// The line saying how the rates were estimated, and the mean weight.
fn estimator_line(i: &ImportanceSummary) -> String {
    let how = match i.estimator {
        Estimator::Complement => "failure modes unbiased, completion 1 minus their sum",
        Estimator::SelfNormalised => "every rate divided by the weights' sum",
    };
    format!(
        "estimator {} ({how}); mean weight {:.4} (standard error {:.1e}, exactly 1 in expectation)",
        serde_json::to_value(i.estimator).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
        i.weight_mean,
        i.weight_mean_se
    )
}

/// The importance-sampling estimates: each rate seen in the sweep (and
/// completion), with its interval and whether it can be trusted, then the
/// warnings saying why not.
fn print_importance(i: &ImportanceSummary) -> Result<(), Failure> {
    match (i.method, i.scale) {
        (Method::Scale, Some(scale)) => outln!(
            "nominal rates by importance sampling: faults drawn at {scale} times their probability, \
             effective sample size {:.0}",
            i.ess
        )?,
        _ => {
            let tilts: Vec<String> = i
                .tilts
                .iter()
                .filter(|t| t.sampled != t.nominal)
                .map(|t| format!("{} at {}", printable(&t.name()), agentsim::tilts::short(t.sampled)))
                .collect();
            outln!(
                "nominal rates by importance sampling: {} ({}), effective sample size {:.0}",
                if tilts.len() == 1 {
                    "a fault rule drawn with its own tilt"
                } else {
                    "fault rules drawn with their own tilts"
                },
                if tilts.is_empty() { "none tilted".to_string() } else { tilts.join(", ") },
                i.ess
            )?
        }
    }
    outln!("{}", estimator_line(i))?;
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED).set_header(vec![
        "rate",
        "estimate",
        "95% interval",
        "runs showing it",
        "its ess",
        "tail k",
        "trusted",
    ]);
    let rows = i.rates.iter().map(|(name, e)| (name.clone(), e));
    let minefields = i.minefields.iter().map(|(name, e)| (format!("minefield {name}"), e));
    for (name, e) in rows.chain(minefields).filter(|(name, e)| e.events > 0 || name == "completion") {
        let near_one = e.estimate >= NEAR_ONE;
        let hi = e.hi.map_or("?".to_string(), |hi| rate_text(hi, near_one));
        table.add_row(vec![
            name,
            rate_text(e.estimate, near_one),
            format!("[{}, {hi}]", rate_text(e.lo, near_one)),
            e.events.to_string(),
            format!("{:.0}", e.ess),
            e.pareto_k.map_or("-".to_string(), |k| format!("{k:.2}")),
            if e.trusted { "yes" } else { "NO, see warnings" }.to_string(),
        ]);
    }
    outln!("{table}")?;
    for warning in &i.warnings {
        errln!("warning: {warning}");
    }
    Ok(())
}

/// Says, loudly, when runs broke an invariant of agentsim's (`sim_error`): a
/// bug to report, not the agent's failure; the incident replays it.
fn warn_sim_errors(summary: &agentsim::Summary, out: &Path) {
    let broken = summary.outcomes.iter().find(|(name, _)| name == "sim_error").map_or(0, |(_, n)| *n);
    if broken == 0 {
        return;
    }
    let incident = summary.failures.iter().find(|f| f.starts_with("failures/sim_error_"));
    let reproduce =
        incident.map_or(String::new(), |f| format!("; reproduce one with: agentsim replay {}/{f}", out.display()));
    errln!(
        "warning: {broken} trajectories broke an invariant of agentsim's (outcome sim_error: a bug of agentsim's or of the world's, not the agent's; every other seed was kept){reproduce}"
    );
}
