//! `agentsim summarize`: a folder of recorded sessions (incidents, from `run
//! --record` or `mcp --record`) as the `trajectories.csv` and `summary.json` a
//! sweep writes, so many seeds of a real agent are evaluated like a sweep.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use agentsim::incident::{Incident, Replay};
use agentsim::{Row, SummaryBuilder};

use super::Failure;
use super::incident::load_incident;
use super::output::{AtomicFile, io_failure, lock_dir, outln, write_atomic};

/// Arguments of `agentsim summarize`.
#[derive(clap::Args, Debug)]
pub struct SummarizeArgs {
    /// A directory of incident files (`*.ron`), one recorded session each.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Where to write trajectories.csv and summary.json.
    #[arg(long)]
    out: PathBuf,
}

/// Replays every session (each must reproduce its record exactly) and writes the
/// sweep files, rows in seed order.
pub fn summarize(args: &SummarizeArgs) -> Result<ExitCode, Failure> {
    let entries = std::fs::read_dir(&args.dir)
        .map_err(|e| Failure::input(format!("cannot read directory `{}`: {e}", args.dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron") && p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Failure::input(format!("{}: no recorded sessions (*.ron) to summarize", args.dir.display())));
    }
    let mut sessions: Vec<(String, Incident)> = Vec::new();
    for file in &files {
        let name = file.to_string_lossy().into_owned();
        sessions.push((name.clone(), load_incident(&name)?));
    }
    let (first_name, first) = sessions[0].clone();
    for (name, s) in &sessions {
        if s.scenario.name != first.scenario.name || s.agent != first.agent {
            return Err(Failure::input(format!(
                "{name}: scenario `{}` with agent `{}` does not go with {first_name} (scenario `{}`, agent `{}`)",
                s.scenario.name, s.agent, first.scenario.name, first.agent
            )));
        }
    }
    // Seed order, as a sweep writes; sessions of the same seed keep file order.
    sessions.sort_by_key(|(_, s)| s.seed);
    let _lock = lock_dir(&args.out, true)?;
    let csv_path = args.out.join("trajectories.csv");
    let mut csv_file = AtomicFile::create(&csv_path)?;
    let mut builder = SummaryBuilder::new();
    {
        let csv = csv_file.writer();
        csv.write_all(&agentsim::sweep::csv_header(false, false, false, 1)?).map_err(|e| io_failure(&csv_path, &e))?;
        for (name, session) in &sessions {
            let prepared = session.prepared();
            let t = session.replay(&prepared, None);
            if let Replay::Diverged { outcome, digest, .. } = session.check(&prepared, &t) {
                return Err(Failure::input(format!(
                    "{name}: does not replay (recorded {} {}, replayed {outcome} {digest}); run `agentsim replay {name}`",
                    session.outcome, session.digest
                )));
            }
            builder.add(&t);
            // The header has no optional column: a session's state hash stays in
            // its incident.
            let mut row = Row::of(&t);
            row.state_hash = None;
            csv.write_all(&agentsim::sweep::csv_line(&row, None)?).map_err(|e| io_failure(&csv_path, &e))?;
        }
        csv.flush().map_err(|e| io_failure(&csv_path, &e))?;
    }
    let seeds = sessions[0].1.seed..sessions[sessions.len() - 1].1.seed + 1;
    let summary = builder.finish(&first.scenario.name, &first.agent, seeds, first.fault_scale);
    csv_file.commit()?;
    let json = serde_json::to_string_pretty(&summary).expect("a summary is plain data") + "\n";
    write_atomic(&args.out.join("summary.json"), json.as_bytes())?;
    outln!(
        "summarized {} sessions of {} with {}: completion {:.1}% [{:.1}%, {:.1}%], digest {}",
        summary.trajectories,
        summary.scenario,
        summary.agent,
        summary.completion.rate * 100.0,
        summary.completion.lo * 100.0,
        summary.completion.hi * 100.0,
        summary.digest
    )?;
    outln!("wrote {}/trajectories.csv and {}/summary.json", args.out.display(), args.out.display())?;
    Ok(ExitCode::SUCCESS)
}
