//! `agentsim summarize`: a folder of recorded sessions (incidents, from `run
//! --record` or `mcp --record`) as the `trajectories.csv` and `summary.json` a
//! sweep writes, so many seeds of a real agent are evaluated like a sweep.

use agentsim::text::percent;
use std::path::PathBuf;
use std::process::ExitCode;

use agentsim::incident::{Incident, Replay};
use agentsim::sweep::{Done, Rows, Swept};
use agentsim::{Row, SummaryBuilder};

use super::Failure;
use super::incident::load_incident;
use super::output::{check_output_dir, errln, lock_dir, outln};

/// Arguments of `agentsim summarize`.
#[derive(clap::Args, Debug)]
pub struct SummarizeArgs {
    /// A directory of incident files (`*.ron`), one recorded session each.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Where to write trajectories.csv and summary.json.
    #[arg(short = 'o', long, value_name = "DIR")]
    out: PathBuf,
}

/// Replays every session (each must reproduce its record exactly) and writes the
/// sweep files, rows in seed order.
pub fn summarize(args: &SummarizeArgs) -> Result<ExitCode, Failure> {
    check_output_dir(&args.out)?;
    let sessions = load_sessions(&args.dir)?;
    let first = &sessions[0].1;
    let trials = trials_per_seed(&sessions)?;
    let _lock = lock_dir(&args.out, true)?;
    let header = agentsim::sweep::csv_header(false, false, false, trials)?;
    let seeds = sessions[0].1.seed..sessions[sessions.len() - 1].1.seed + 1;
    let builder = SummaryBuilder::with_trials(trials);
    // No incidents: the sessions are the recordings.
    let mut rows = Rows::create(&args.out, &header, Done::none(seeds.start), builder, 0)?;
    for (index, (name, session)) in sessions.iter().enumerate() {
        let prepared = session.prepared();
        let t = session.replay(&prepared, None);
        if let Replay::Diverged { outcome, digest, .. } = session.check(&prepared, &t) {
            return Err(Failure::input(format!(
                "{name}: does not replay (recorded {} {}, replayed {outcome} {digest}); run `agentsim replay {name}`",
                session.outcome, session.digest
            )));
        }
        // The header has no optional column: a session's state hash and
        // checks stay in its incident (and the summary counts what the rows
        // hold).
        let mut row = Row::of(&t);
        row.state_hash = None;
        row.checks = None;
        let mut swept = Swept::of_row(&t, row, index as u32 % trials, trials)?;
        swept.record.checks.clear();
        rows.add(&swept)?;
    }
    let summary = rows.finish_recorded(&args.out, &first.scenario.name, &first.agent, seeds, first.fault_scale)?;
    if trials > 1 {
        outln!(
            "{} recorded sessions of {} seeds, {trials} of each seed: counted as {trials} trials per seed \
             (pass^k in summary.json)",
            sessions.len(),
            sessions.len() / trials as usize
        )?;
    }
    outln!(
        "summarized {} sessions of {} with {}: completion {} [{}, {}], digest {}",
        summary.trajectories,
        summary.scenario,
        summary.agent,
        percent(summary.completion.rate),
        percent(summary.completion.lo),
        percent(summary.completion.hi),
        summary.digest
    )?;
    errln!("wrote {}/trajectories.csv and {}/summary.json", args.out.display(), args.out.display());
    Ok(ExitCode::SUCCESS)
}

/// The sessions of `dir` (every `*.ron`), all of one scenario and one agent, in
/// seed order. Read with the rules of a scenario's files: each a regular file
/// inside `dir` (a symbolic link out of it is refused unread), and none counted
/// twice (a copy, or a link to another file of the folder, is refused).
fn load_sessions(dir: &std::path::Path) -> Result<Vec<(String, Incident)>, Failure> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Failure::input(format!("cannot read directory `{}`: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Failure::input(format!("{}: no recorded sessions (*.ron) to summarize", dir.display())));
    }
    let mut sessions: Vec<(String, Incident)> = Vec::new();
    let mut real_paths: Vec<PathBuf> = Vec::new();
    for file in &files {
        let name = file.to_string_lossy().into_owned();
        let real = agentsim::files::resolve_inside(dir, file)?;
        if let Some(at) = real_paths.iter().position(|r| *r == real) {
            return Err(Failure::input(format!(
                "{name}: it is {} (a link to it), so the session would count twice; remove the link",
                sessions[at].0
            )));
        }
        let session = load_incident(&name)?;
        if let Some((other, _)) =
            sessions.iter().find(|(_, s)| s.seed == session.seed && s.digest == session.digest && *s == session)
        {
            return Err(Failure::input(format!(
                "{name}: the same recorded session as {other} (seed {}, digest {}, every field alike): a copy would \
                 count one session twice; remove one",
                session.seed, session.digest
            )));
        }
        real_paths.push(real);
        sessions.push((name, session));
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
    Ok(sessions)
}

/// How many sessions each seed has: the same number for every seed (more than
/// one are counted as trials, pass^k), else the summary would weigh some seeds
/// more than others without a word, and the folder is refused. `sessions` are
/// in seed order.
fn trials_per_seed(sessions: &[(String, Incident)]) -> Result<u32, Failure> {
    let mut groups: Vec<(u64, Vec<&str>)> = Vec::new();
    for (name, session) in sessions {
        match groups.last_mut() {
            Some((seed, names)) if *seed == session.seed => names.push(name),
            _ => groups.push((session.seed, vec![name.as_str()])),
        }
    }
    let (first_seed, first) = &groups[0];
    if let Some((seed, names)) = groups.iter().find(|(_, names)| names.len() != first.len()) {
        let (more_seed, more, fewer_seed, fewer) =
            if names.len() > first.len() { (seed, names, first_seed, first) } else { (first_seed, first, seed, names) };
        return Err(Failure::input(format!(
            "seed {more_seed} has {} recorded sessions ({}) but seed {fewer_seed} has {} ({}): sessions of one seed \
             count as trials only when every seed has as many; remove the duplicates or record the missing trials",
            more.len(),
            more.join(", "),
            fewer.len(),
            fewer.join(", ")
        )));
    }
    u32::try_from(first.len())
        .map_err(|_| Failure::input(format!("seed {first_seed}: more than {} recorded sessions", u32::MAX)))
}
