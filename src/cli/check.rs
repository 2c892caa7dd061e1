//! `agentsim check GATE.ron DIR`: a sweep against a gate, for CI.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use agentsim::gate::Gate;

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
    let results = gate.check(&summary).map_err(|(index, message)| {
        let (line, column) = gate.locate_rule(&text, index);
        Failure::input(format!("{gate_path}:{line}:{column}: field `metric`: {message}"))
    })?;
    let title =
        if gate.name.is_empty() { String::new() } else { format!(" ({})", agentsim::timeline::printable(&gate.name)) };
    println!("gate {gate_path}{title} on {}", summary_path.display());
    let width = results.iter().map(|r| r.metric.len() + r.bound.to_string().len() + 1).max().unwrap_or(0);
    for r in &results {
        let rule = format!("{} {}", r.metric, r.bound);
        let measured = if r.measured.is_some() { r.measured_text.clone() } else { "none (null)".to_string() };
        let rule = agentsim::timeline::printable(&rule);
        println!("{}  {rule:<width$}  measured {measured}", if r.pass { "pass" } else { "FAIL" });
    }
    let failed = results.iter().filter(|r| !r.pass).count();
    if failed == 0 {
        println!("all {} rules pass", results.len());
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{failed} of {} rules failed", results.len());
        Ok(ExitCode::from(EXIT_CHECK_FAILED))
    }
}
