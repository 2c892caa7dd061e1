//! `agentsim sweep`: many seeds in parallel, results in seed order.

use std::ops::Range;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use agentsim::incident::Incident;
use agentsim::summary::{Summary, usd};
use agentsim::{Row, Runner, SummaryBuilder};
use agentsim_agents::StackSpec;
use agentsim_engine::Outcome;
use agentsim_engine::stats::Rate;
use agentsim_worlds::Prepared;

use super::output::{AtomicFile, io_failure, write_atomic};
use super::{Failure, Setup, load};

/// Runs the sweep, writes `trajectories.csv` and `summary.json`, prints the table.
pub fn sweep(setup: &Setup, seeds: Range<u64>, out: &Path, failures_per_mode: usize) -> Result<ExitCode, Failure> {
    let prepared = load::scenario(&setup.scenario)?;
    let stack = load::agent(&setup.agent, &prepared, setup.turn_limit_ms, setup.layers.as_deref())?;
    std::fs::create_dir_all(out).map_err(|e| io_failure(out, &e))?;
    load::check_swarm(setup, &prepared)?;
    let runner = Runner::new(&prepared, &stack, false, setup.fault_scale).with_swarm(setup.swarm);

    let started = Instant::now();
    let csv_path = out.join("trajectories.csv");
    let mut csv_file = AtomicFile::create(&csv_path)?;
    let mut builder = SummaryBuilder::new();
    // The first failing seeds of each failure mode, in seed order.
    let mut failing: Vec<(Outcome, u64)> = Vec::new();
    {
        let mut csv = csv::Writer::from_writer(csv_file.writer());
        runner.sweep(seeds.clone(), |t| {
            builder.add(&t);
            if t.outcome != Outcome::Success
                && failing.iter().filter(|(o, _)| *o == t.outcome).count() < failures_per_mode
            {
                failing.push((t.outcome, t.seed));
            }
            let mut row = Row::of(&t);
            row.swarm = runner.swarm_values(t.seed);
            csv.serialize(row).map_err(|e| Failure::input(format!("cannot write `{}`: {e}", csv_path.display())))
        })?;
        csv.flush().map_err(|e| io_failure(&csv_path, &e))?;
    }
    let mut summary = builder.finish(&prepared.scenario.name, &setup.agent, seeds.clone(), setup.fault_scale);
    summary.failures = write_failures(&prepared, &stack, setup, out, &failing)?;
    let json = serde_json::to_string_pretty(&summary).expect("a summary is plain data") + "\n";
    // The summary is renamed into place last: its presence marks a complete sweep.
    csv_file.commit()?;
    write_atomic(&out.join("summary.json"), json.as_bytes())?;
    let elapsed = started.elapsed();

    print_table(&summary);
    println!("wrote {}/trajectories.csv and {}/summary.json", out.display(), out.display());
    if !summary.failures.is_empty() {
        println!(
            "wrote {} failing trajectories as incidents under {}/failures/ (replay: agentsim replay {}/{})",
            summary.failures.len(),
            out.display(),
            out.display(),
            summary.failures[0]
        );
    }
    eprintln!(
        "{} trajectories in {:.2} s ({:.0} per second)",
        summary.trajectories,
        elapsed.as_secs_f64(),
        summary.trajectories as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}

/// Re-runs each failing seed with recording on and writes it as an incident under
/// `out/failures/`; returns the paths relative to `out`.
fn write_failures(
    prepared: &Prepared,
    stack: &StackSpec,
    setup: &Setup,
    out: &Path,
    failing: &[(Outcome, u64)],
) -> Result<Vec<String>, Failure> {
    if failing.is_empty() {
        return Ok(Vec::new());
    }
    let dir = out.join("failures");
    std::fs::create_dir_all(&dir).map_err(|e| io_failure(&dir, &e))?;
    let recorder = Runner::new(prepared, stack, true, setup.fault_scale).with_swarm(setup.swarm);
    let mut written = Vec::new();
    for (outcome, seed) in failing {
        let t = recorder.run(*seed);
        let mut incident = Incident::record(prepared, None, *seed, setup.fault_scale, &setup.agent, stack, &t);
        incident.swarm = setup.swarm;
        let name = format!("failures/{outcome}_seed{seed}.ron");
        write_atomic(&out.join(&name), incident.to_ron().as_bytes())?;
        written.push(name);
    }
    Ok(written)
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
    for (name, rate) in [("completion", &s.completion), ("recovery", &s.recovery), ("violations", &s.violation)] {
        let (value, interval) = pct(rate);
        table.add_row(vec![name.to_string(), value, interval]);
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
