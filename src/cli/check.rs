//! `agentsim check GATE.ron DIR`: a sweep against a gate, for CI.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use agentsim::gate::Gate;

use super::output::{outln, stdout_json};
use super::{Failure, load};

/// Exit code when a rule fails.
const EXIT_CHECK_FAILED: u8 = 1;

/// Arguments of `agentsim check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The gate file (RON): thresholds on summary.json.
    gate: PathBuf,
    /// A sweep's output directory (holding summary.json), or a summary.json itself.
    dir: PathBuf,
    /// Print one JSON document instead of text: `gate`, `summary`, `rules`
    /// (each `metric`, `bound`, `measured`, `pass`), `passed`, `failed`.
    #[arg(long)]
    json: bool,
}

/// Checks every rule, prints pass or fail with the measured value; exit 1 if any fails.
pub fn check(args: &CheckArgs) -> Result<ExitCode, Failure> {
    let gate_path = args.gate.display().to_string();
    let text = load::text(&gate_path, "gate file")?;
    let gate = Gate::parse(&text, &gate_path).map_err(|e| Failure::input(e.to_string()))?;
    let summary_path = if args.dir.is_dir() { args.dir.join("summary.json") } else { args.dir.clone() };
    let summary_text = load::text(&summary_path.display().to_string(), "summary")?;
    let summary: serde_json::Value = serde_json::from_str(&summary_text).map_err(|e| {
        Failure::input(format!("{}:{}:{}: not a summary.json: {e}", summary_path.display(), e.line(), e.column()))
    })?;
    // A gate judges a whole sweep: a partial one could pass on the seeds it reached.
    if let Some(done) = summary.get("partial").and_then(|p| p.get("done_until_seed")) {
        return Err(Failure::input(format!(
            "{}: field `partial`: the sweep was interrupted (seeds done until {done}); finish it with `agentsim sweep ... --resume DIR` first",
            summary_path.display()
        )));
    }
    if args.dir.is_dir() {
        verify_against_rows(&args.dir, &summary_path, &summary_text, &summary)?;
    }
    let results = gate.check(&summary).map_err(|(index, message)| {
        let (line, column) = gate.locate_rule(&text, index);
        Failure::input(format!("{gate_path}:{line}:{column}: field `metric`: {message}"))
    })?;
    let failed = results.iter().filter(|r| !r.pass).count();
    let code = if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(EXIT_CHECK_FAILED) };
    if args.json {
        let rules: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "metric": r.metric, "bound": r.bound.to_string(), "measured": r.measured, "pass": r.pass,
                })
            })
            .collect();
        stdout_json(&serde_json::json!({
            "gate": gate_path, "name": gate.name, "summary": summary_path.display().to_string(),
            "rules": rules, "passed": results.len() - failed, "failed": failed,
        }))?;
        return Ok(code);
    }
    let title =
        if gate.name.is_empty() { String::new() } else { format!(" ({})", agentsim::timeline::printable(&gate.name)) };
    outln!("gate {gate_path}{title} on {}", summary_path.display())?;
    let width = results.iter().map(|r| r.metric.len() + r.bound.to_string().len() + 1).max().unwrap_or(0);
    for r in &results {
        let rule = format!("{} {}", r.metric, r.bound);
        let measured = if r.measured.is_some() { r.measured_text.clone() } else { "none (null)".to_string() };
        let rule = agentsim::timeline::printable(&rule);
        outln!("{}  {rule:<width$}  measured {measured}", if r.pass { "pass" } else { "FAIL" })?;
    }
    if failed == 0 {
        outln!("all {} rules pass", results.len())?;
    } else {
        outln!("{failed} of {} rules failed", results.len())?;
    }
    Ok(code)
}

/// A summary beside its rows must be what the rows give: `summary.json` is a
/// function of `trajectories.csv` (each row verified by its `check`), so an edited
/// rate, count or digest is refused instead of judged.
pub(super) fn verify_against_rows(
    dir: &Path,
    summary_path: &Path,
    text: &str,
    summary: &serde_json::Value,
) -> Result<(), Failure> {
    let csv_path = dir.join("trajectories.csv");
    if !csv_path.exists() {
        return Ok(());
    }
    let shown = csv_path.display();
    let field = |name: &str| {
        summary.get(name).ok_or_else(|| Failure::input(format!("{}: no field `{name}`", summary_path.display())))
    };
    let number = |name: &str| {
        field(name)?.as_u64().ok_or_else(|| {
            Failure::input(format!("{}: field `{name}`: expected a non-negative integer", summary_path.display()))
        })
    };
    let string = |name: &str| {
        field(name)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| Failure::input(format!("{}: field `{name}`: expected a string", summary_path.display())))
    };
    let trials = u32::try_from(number("trials")?)
        .map_err(|_| Failure::input(format!("{}: field `trials`: too large", summary_path.display())))?;
    let fault_scale = field("fault_scale")?
        .as_f64()
        .ok_or_else(|| Failure::input(format!("{}: field `fault_scale`: expected a number", summary_path.display())))?;
    let failures: Vec<String> = serde_json::from_value(field("failures")?.clone())
        .map_err(|e| Failure::input(format!("{}: field `failures`: {e}", summary_path.display())))?;
    let rows = load::read_bounded(&csv_path.to_string_lossy(), "trajectories", None)?;
    // An importance sweep's rows carry their weights; how they were drawn (the
    // method, scale, tilts and pilot) is in the summary.
    let importance = match summary.get("importance") {
        None => None,
        Some(i) => Some(
            serde_json::from_value::<agentsim::tilts::Plan>(i.clone())
                .map_err(|e| Failure::input(format!("{}: field `importance`: {e}", summary_path.display())))?,
        ),
    };
    let mut builder = agentsim::SummaryBuilder::with_trials(trials.max(1)).with_importance_plan(importance);
    agentsim::rows_file::read_rows(&rows, &shown.to_string(), None, false, |row| -> Result<(), Failure> {
        builder.add_record(&row.record);
        Ok(())
    })?;
    let seeds = number("seed_start")?..number("seed_end")?;
    let mut rebuilt = builder.finish(&string("scenario")?, &string("agent")?, seeds, fault_scale);
    rebuilt.failures = failures;
    rebuilt.partial = summary
        .get("partial")
        .and_then(|p| p.get("done_until_seed"))
        .and_then(serde_json::Value::as_u64)
        .map(|done_until_seed| agentsim::summary::Partial { done_until_seed });
    let json = serde_json::to_string_pretty(&rebuilt).expect("a summary is plain data") + "\n";
    if json != text {
        let line = json.lines().zip(text.lines()).position(|(a, b)| a != b).map_or(1, |i| i + 1);
        return Err(Failure::input(format!(
            "{}:{line}: the summary is not what the rows of {shown} give (edited after agentsim wrote it?)",
            summary_path.display()
        )));
    }
    Ok(())
}
