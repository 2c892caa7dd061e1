//! `agentsim mcp`: serve a scenario's tools over MCP on stdio, judge the session
//! when stdin closes (or on SIGTERM or SIGINT), and optionally record it as an
//! incident. The record and the verdict file are written the moment the session
//! is judged, before anything else is answered or printed: an MCP stdio client
//! closes stdin, waits a little, then sends SIGTERM, and the first signal only
//! ends the session (a second one exits at once).

use std::path::PathBuf;
use std::process::ExitCode;

use agentsim::incident::Incident;
use agentsim::mcp::{self, Ending, Options};
use agentsim_agents::external::replayed::recorded_steps;
use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_engine::Trajectory;
use agentsim_worlds::Prepared;
use clap::Args;

use super::output::{check_target, errln, write_atomic};
use super::{Failure, load};

/// Arguments of `agentsim mcp`.
#[derive(Args, Debug)]
pub struct McpArgs {
    /// Scenario: a path to a RON file or a built-in name.
    #[arg(default_value = agentsim::builtin::DEFAULT_SCENARIO)]
    scenario: String,
    /// The seed: its latencies, faults, drift and user.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Multiply every fault probability by this factor (0 turns faults off).
    #[arg(long, default_value_t = 1.0)]
    fault_scale: f64,
    /// Virtual time to wait for the user's reply after `send_message`, in ms.
    #[arg(long, default_value_t = 60_000)]
    reply_wait_ms: u64,
    /// When stdin closes, write the session as an incident file (RON) that
    /// `agentsim replay` replays exactly, without the client.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Map the real time between answers and calls into virtual time (times
    /// SCALE) as the agent's think time, for agents that back off by sleeping.
    #[arg(long, value_name = "SCALE")]
    wall_clock: Option<f64>,
    /// Put the layers of this stack file (its planner is not used) between the
    /// client and the tools: retries, a loop detector, guardrails... The session
    /// records them, so its replay runs them too.
    #[arg(long, value_name = "FILE")]
    layers: Option<String>,
    /// Also write the verdict as one JSON object (the trajectory without its
    /// events, as `run --json` prints it) to FILE, or with `-` as the last line
    /// of stderr, for a program to read.
    #[arg(long, value_name = "FILE")]
    verdict: Option<PathBuf>,
    /// Exit 1 when the session's outcome is not success (by default any judged
    /// session exits 0: the outcome is a result, not an error).
    #[arg(long)]
    fail_on_failure: bool,
}

/// Runs the server until stdin closes; the verdict goes to stderr (stdout is the
/// protocol's).
pub fn mcp(args: &McpArgs) -> Result<ExitCode, Failure> {
    check_args(args)?;
    let prepared = load::scenario(&args.scenario)?;
    let layers = match &args.layers {
        Some(path) => load::layers(path, &prepared)?,
        None => Vec::new(),
    };
    let options = Options {
        fault_scale: args.fault_scale,
        reply_wait_ms: args.reply_wait_ms,
        wall_clock_scale: args.wall_clock,
        layers: layers.clone(),
        ..Options::new(args.seed)
    };
    prepared.one_session().map_err(|e| Failure::input(format!("agentsim mcp: {e}")))?;
    errln!(
        "agentsim mcp: scenario {}, seed {}; serving {} tools on stdio",
        agentsim::timeline::printable(&prepared.scenario.name),
        args.seed,
        prepared.catalog.specs().len()
    );
    // The first signal ends the session as a closed stdin does: judged, recorded.
    let stop = super::interrupt::install();
    let stdin = std::io::BufReader::new(std::io::stdin());
    let stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let mut written = Ok(());
    let mut judged = |t: &Trajectory| written = write_session(args, &prepared, &layers, t);
    let ending = Ending { stop, judged: &mut judged };
    let t = mcp::serve_until(&prepared, &options, stdin, stdout.lock(), &mut stderr, ending)
        .map_err(|e| Failure::input(format!("agentsim mcp: {e}")))?;
    print_verdict(&t);
    written?;
    if let Some(path) = &args.record {
        errln!("recorded {}; replay it with: agentsim replay {}", path.display(), path.display());
    }
    if let Some(path) = &args.verdict
        && path.as_os_str() == "-"
    {
        errln!("{}", verdict_line(&t, &prepared));
    }
    if args.fail_on_failure && t.outcome != agentsim_engine::Outcome::Success {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses bad numbers and unwritable targets before the session starts.
fn check_args(args: &McpArgs) -> Result<(), Failure> {
    if !args.fault_scale.is_finite() || args.fault_scale < 0.0 {
        return Err(Failure::input(format!(
            "--fault-scale: expected a finite number >= 0, found {}",
            args.fault_scale
        )));
    }
    if let Some(scale) = args.wall_clock
        && !(scale.is_finite() && scale > 0.0 && scale <= mcp::WALL_CLOCK_SCALE_MAX)
    {
        return Err(Failure::input(format!(
            "--wall-clock: expected a number > 0 and <= {:e} (virtual ms per real ms), found {scale}",
            mcp::WALL_CLOCK_SCALE_MAX
        )));
    }
    for path in [&args.record, &args.verdict].into_iter().flatten().filter(|p| p.as_os_str() != "-") {
        check_target(path)?;
    }
    Ok(())
}

/// The judged session on stderr: outcome, milestone, verdict, state hash and
/// metrics.
fn print_verdict(t: &Trajectory) {
    errln!("outcome: {}  ({})", t.outcome, t.end_reason);
    errln!("milestone: {}", t.verdict.milestone);
    errln!("verdict: {}", t.verdict.detail);
    if let Some(hash) = &t.state_hash {
        errln!("state_hash: {hash}");
    }
    let m = &t.metrics;
    errln!(
        "turns {}  tool calls {} ({} failed, {} faults)  virtual time {:.1} s  digest {}",
        m.turns,
        m.tool_calls,
        m.failed_calls,
        m.faults_seen,
        m.virtual_ms as f64 / 1000.0,
        t.digest
    );
}

/// Writes the judged session's files: `--record` (the incident) and `--verdict`
/// (unless it is `-`, printed with the rest of the verdict).
fn write_session(
    args: &McpArgs,
    prepared: &Prepared,
    layers: &[agentsim_agents::LayerSpec],
    t: &Trajectory,
) -> Result<(), Failure> {
    if let Some(path) = &args.record {
        // The client's calls are the planner: the incident replays them.
        let stack = StackSpec { planner: PlannerSpec::Replayed(recorded_steps(t)), layers: layers.to_vec() };
        let incident = Incident::record(prepared, None, args.seed, args.fault_scale, "mcp", &stack, t);
        let text = incident.to_ron_bounded().map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
        write_atomic(path, text.as_bytes())?;
    }
    if let Some(path) = &args.verdict
        && path.as_os_str() != "-"
    {
        write_atomic(path, (verdict_line(t, prepared) + "\n").as_bytes())?;
    }
    Ok(())
}

/// The verdict as one JSON line (the trajectory without its events).
fn verdict_line(t: &Trajectory, prepared: &Prepared) -> String {
    let document = super::run::trajectory_document(t, prepared, "mcp");
    serde_json::to_string(&document).expect("a verdict is plain data")
}
