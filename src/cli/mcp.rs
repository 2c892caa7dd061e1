//! `agentsim mcp`: serve a scenario's tools over MCP on stdio, judge the session
//! when stdin closes (or on SIGTERM or SIGINT), and optionally record it as an
//! incident. With `--http ADDR`, a run of many sessions is served instead, a
//! client per session over the Streamable HTTP transport, and judged (and
//! recorded) when every session has ended. The record and the verdict file are written the moment the session
//! is judged, before anything else is answered or printed: an MCP stdio client
//! closes stdin, waits a little, then sends SIGTERM, and the first signal only
//! ends the session (a second one exits at once).

use std::path::PathBuf;
use std::process::ExitCode;

use agentsim::incident::Incident;
use agentsim::mcp::{self, Ending, Options};
use agentsim_agents::external::replayed::recorded_steps_of;
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
    /// Serve over MCP's Streamable HTTP transport at ADDR (`127.0.0.1:0` picks
    /// a free port) instead of stdio: one MCP client per session of the run,
    /// the k-th to initialize being session k. The bound URL is printed on
    /// stderr (`agentsim mcp: serving N sessions at http://ADDR/mcp`).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// With --http: how long (wall clock) the run waits for a session's client
    /// to send its next call before it ends that session, as a closed stdin
    /// ends a stdio session, in ms [default: 60000]. A session no client has
    /// initialized is absent once this long passed since the last initialize.
    #[arg(long, value_name = "MS")]
    client_wait_ms: Option<u64>,
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
    if let Some(address) = &args.http {
        return serve_http(args, &prepared, &layers, &options, address);
    }
    if prepared.scenario.sessions.count > 1 {
        return Err(Failure::input(format!(
            "agentsim mcp: scenario `{}` runs {} sessions in one world and stdio serves one MCP client: \
             serve a client per session with --http ADDR (e.g. --http 127.0.0.1:0), or set `sessions: (count: 1)`",
            agentsim::timeline::printable(&prepared.scenario.name),
            prepared.scenario.sessions.count
        )));
    }
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
    Ok(finish(args, &prepared, &t))
}

/// `--http`: serves the run's sessions to a client each until every session
/// has ended, then prints each session's outcome and the run's, and writes
/// the run's files.
fn serve_http(
    args: &McpArgs,
    prepared: &Prepared,
    layers: &[agentsim_agents::LayerSpec],
    options: &Options,
    address: &str,
) -> Result<ExitCode, Failure> {
    let listener = std::net::TcpListener::bind(address)
        .map_err(|e| Failure::input(format!("--http {address}: cannot listen there ({e})")))?;
    let bound = listener.local_addr().map_err(|e| Failure::input(format!("--http {address}: {e}")))?;
    let mut http = mcp::streamable::HttpOptions::new(options.line_bytes_max);
    http.client_wait_ms = args.client_wait_ms.unwrap_or(http.client_wait_ms);
    errln!(
        "agentsim mcp: scenario {}, seed {}; {} tools",
        agentsim::timeline::printable(&prepared.scenario.name),
        args.seed,
        prepared.catalog.specs().len()
    );
    errln!("{}", mcp::streamable::serving_line(prepared.scenario.sessions.count, bound));
    // The first signal ends every session as closed stdins do: judged, recorded.
    let stop = super::interrupt::install();
    // The files are written the moment the run is judged, before the server
    // waits for any connection: a client that reads its last answer slowly, or
    // a signal, cannot lose them.
    let mut written = Ok(());
    let mut judged = |t: &Trajectory| written = write_session(args, prepared, layers, t);
    let ending = Ending { stop, judged: &mut judged };
    let t = mcp::streamable::serve_http(prepared, options, &http, listener, ending)
        .map_err(|e| Failure::input(format!("agentsim mcp: {e}")))?;
    print_sessions(&t);
    print_verdict(&t);
    written?;
    Ok(finish(args, prepared, &t))
}

/// What follows the verdict: where the record is, the verdict line, the exit code.
fn finish(args: &McpArgs, prepared: &Prepared, t: &Trajectory) -> ExitCode {
    if let Some(path) = &args.record {
        errln!("recorded {}; replay it with: agentsim replay {}", path.display(), path.display());
    }
    if let Some(path) = &args.verdict
        && path.as_os_str() == "-"
    {
        errln!("{}", verdict_line(t, prepared));
    }
    if args.fail_on_failure && t.outcome != agentsim_engine::Outcome::Success {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// Each session's outcome, in a run of many.
fn print_sessions(t: &Trajectory) {
    for s in &t.sessions {
        let hurt = s.hurt_by.map(|by| format!("  hurt by session {by}")).unwrap_or_default();
        errln!(
            "session {}: {}  ({})  arrived {:.1} s, ended {:.1} s  turns {}  tool calls {}{hurt}",
            s.session,
            s.outcome,
            s.end_reason,
            s.arrived_ms as f64 / 1000.0,
            s.ended_ms as f64 / 1000.0,
            s.metrics.turns,
            s.metrics.tool_calls,
        );
    }
}

/// Refuses bad numbers and unwritable targets before the session starts.
fn check_args(args: &McpArgs) -> Result<(), Failure> {
    if !args.fault_scale.is_finite() || args.fault_scale < 0.0 {
        return Err(Failure::input(format!(
            "--fault-scale: expected a finite number >= 0, found {}",
            args.fault_scale
        )));
    }
    if args.http.is_none() && args.client_wait_ms.is_some() {
        return Err(Failure::input("--client-wait-ms: applies to --http only (a stdio session waits for its client)"));
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
        let stack = StackSpec {
            planner: PlannerSpec::Replayed(recorded_steps_of(t, &prepared.scenario.sessions)),
            layers: layers.to_vec(),
        };
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
