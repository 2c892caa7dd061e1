//! `agentsim sweep`: many seeds in parallel, results in seed order.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use agentsim::incident::{Incident, hex};
use agentsim::shard::{SHARD_FORMAT, ShardManifest, shard_seeds};
use agentsim::summary::{Summary, usd};
use agentsim::surface::{Surface, SurfacePoint, scale_dir};
use agentsim::{Row, Runner, SummaryBuilder};
use agentsim_agents::StackSpec;
use agentsim_engine::Outcome;
use agentsim_engine::stats::Rate;
use agentsim_worlds::Prepared;

use super::output::{AtomicFile, io_failure, write_atomic};
use super::progress::Progress;
use super::{Failure, SweepArgs, load};

/// Runs the sweep (one per fault scale), writes `trajectories.csv` and
/// `summary.json` (and `surface.json` for several scales), prints the table.
pub fn sweep(args: &SweepArgs) -> Result<ExitCode, Failure> {
    let setup = &args.setup;
    let prepared = load::scenario(&setup.scenario)?;
    let stack = load::agent(&setup.agent, &prepared, setup.turn_limit_ms, setup.layers.as_deref())?;
    load::check_swarm(setup, &prepared)?;
    let out = &args.out;
    if let Some((shard, shards)) = args.shard {
        let scale = setup.fault_scale.single("sweep --shard")?;
        let seeds = shard_seeds(&args.seeds, shard, shards);
        let summary = sweep_one(&prepared, &stack, args, seeds, scale, out)?;
        let manifest = ShardManifest {
            format: SHARD_FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            scenario: prepared.scenario.name.clone(),
            scenario_key: hex(prepared.key()),
            agent: setup.agent.clone(),
            stack_key: hex(agentsim_engine::rng::key_of(&stack)),
            seed_start: args.seeds.start,
            seed_end: args.seeds.end,
            shard,
            shards,
            trials: args.trials,
            fault_scale: scale,
            swarm: setup.swarm,
            failures: args.failures,
        };
        let json = serde_json::to_string_pretty(&manifest).expect("a manifest is plain data") + "\n";
        write_atomic(&out.join("shard.json"), json.as_bytes())?;
        print_table(&summary);
        println!(
            "wrote shard {shard}/{shards} (seeds {}..{}) to {}; combine the shards with: agentsim merge DIR... --out DIR",
            summary.seed_start,
            summary.seed_end,
            out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let [scale] = setup.fault_scale.0.as_slice() {
        let summary = sweep_one(&prepared, &stack, args, args.seeds.clone(), *scale, out)?;
        print_table(&summary);
        println!("wrote {}/trajectories.csv and {}/summary.json", out.display(), out.display());
        if let Some(first) = summary.failures.first() {
            println!(
                "wrote {} failing trajectories as incidents under {}/failures/ (replay: agentsim replay {}/{first})",
                summary.failures.len(),
                out.display(),
                out.display(),
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut points = Vec::new();
    for scale in &setup.fault_scale.0 {
        let summary = sweep_one(&prepared, &stack, args, args.seeds.clone(), *scale, &out.join(scale_dir(*scale)))?;
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
    print_surface(&surface);
    println!("wrote {}/surface.json and one directory per scale", out.display());
    Ok(ExitCode::SUCCESS)
}

/// One sweep at one fault scale into `out`; returns its summary.
fn sweep_one(
    prepared: &Prepared,
    stack: &StackSpec,
    args: &SweepArgs,
    seeds: std::ops::Range<u64>,
    fault_scale: f64,
    out: &Path,
) -> Result<Summary, Failure> {
    let trials = args.trials;
    std::fs::create_dir_all(out).map_err(|e| io_failure(out, &e))?;
    let runner = Runner::new(prepared, stack, false, fault_scale).with_swarm(args.setup.swarm);

    let started = Instant::now();
    let csv_path = out.join("trajectories.csv");
    let mut csv_file = AtomicFile::create(&csv_path)?;
    let mut builder = SummaryBuilder::with_trials(trials);
    let total = (seeds.end - seeds.start).saturating_mul(u64::from(trials));
    let label = if args.setup.fault_scale.0.len() > 1 { format!("scale {fault_scale}") } else { "sweep".to_string() };
    let mut progress = Progress::new(label, total, args.quiet);
    // The first failing seeds of each failure mode (first trial), in seed order.
    let mut failing: Vec<(Outcome, u64)> = Vec::new();
    {
        let csv_error = |e: csv::Error| Failure::input(format!("cannot write `{}`: {e}", csv_path.display()));
        // With trials the rows gain a `trial` column after `seed`; the rows are
        // written without the writer's own header so the column can be inserted.
        let mut csv = csv::WriterBuilder::new().has_headers(trials == 1).from_writer(csv_file.writer());
        let mut first = true;
        runner.sweep_trials(seeds.clone(), trials, |trial, t| {
            builder.add(&t);
            progress.advance(1);
            if trial == 0
                && t.outcome != Outcome::Success
                && failing.iter().filter(|(o, _)| *o == t.outcome).count() < args.failures
            {
                failing.push((t.outcome, t.seed));
            }
            let mut row = Row::of(&t);
            row.swarm = runner.swarm_values(t.seed);
            if trials == 1 {
                csv.serialize(row).map_err(csv_error)
            } else {
                for (i, mut record) in row_records(&row, first)?.into_iter().enumerate() {
                    let is_header = first && i == 0;
                    record.insert(1, if is_header { "trial".to_string() } else { trial.to_string() });
                    csv.write_record(&record).map_err(csv_error)?;
                }
                first = false;
                Ok(())
            }
        })?;
        csv.flush().map_err(|e| io_failure(&csv_path, &e))?;
    }
    progress.finish();
    let mut summary = builder.finish(&prepared.scenario.name, &args.setup.agent, seeds, fault_scale);
    summary.failures = write_failures(prepared, stack, args, fault_scale, out, &failing)?;
    let json = serde_json::to_string_pretty(&summary).expect("a summary is plain data") + "\n";
    // The summary is renamed into place last: its presence marks a complete sweep.
    csv_file.commit()?;
    write_atomic(&out.join("summary.json"), json.as_bytes())?;
    let elapsed = started.elapsed();
    eprintln!(
        "{} trajectories in {:.2} s ({:.0} per second)",
        summary.trajectories,
        elapsed.as_secs_f64(),
        summary.trajectories as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    Ok(summary)
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
        write_atomic(&out.join(&name), incident.to_ron().as_bytes())?;
        written.push(name);
    }
    Ok(written)
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

fn print_surface(s: &Surface) {
    println!(
        "reliability surface {} x {}: seeds {}..{} per scale{}",
        s.scenario,
        s.agent,
        s.seed_start,
        s.seed_end,
        if s.trials > 1 { format!(", {} trials each", s.trials) } else { String::new() }
    );
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
    println!("{table}");
}

fn pct(r: &Rate) -> (String, String) {
    if r.n == 0 {
        return ("n/a".into(), "(no trajectories)".into());
    }
    (format!("{:.1}%  ({}/{})", r.rate * 100.0, r.count, r.n), format!("[{:.1}%, {:.1}%]", r.lo * 100.0, r.hi * 100.0))
}

fn print_table(s: &Summary) {
    println!(
        "sweep {} x {}: seeds {}..{} ({} trajectories), fault scale {}",
        s.scenario, s.agent, s.seed_start, s.seed_end, s.trajectories, s.fault_scale
    );
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
    println!("{table}");
    println!("digest {}", s.digest);
}
