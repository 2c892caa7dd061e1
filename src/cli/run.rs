//! `agentsim run`: one seed, printed as a timeline.

use std::process::ExitCode;

use std::path::Path;

use agentsim::incident::Incident;
use agentsim::timeline::printable;
use agentsim::{Runner, timeline};
use agentsim_agents::StackSpec;
use agentsim_engine::{Outcome, Trajectory};
use agentsim_worlds::Prepared;

use super::output::{check_target, errln, outln, stdout_json, stdout_text, write_atomic};

use super::{Failure, Setup, load};

/// Runs one seed and prints its timeline and outcome.
pub fn run(
    setup: &Setup,
    (seed, trial): (u64, u32),
    record: Option<&Path>,
    expect: &[(String, Outcome)],
    json: bool,
) -> Result<ExitCode, Failure> {
    if let Some(path) = record {
        check_target(path)?;
    }
    let mut prepared = load::scenario(&setup.scenario)?;
    load::select_tasks(&mut prepared, setup.tasks.as_deref())?;
    let stack = load::setup_agent(setup, &mut prepared)?;
    load::check_swarm(setup, &prepared)?;
    let fault_scale = setup.fault_scale.single("run")?;
    let runner = Runner::new(&prepared, &stack, true, fault_scale).with_swarm(setup.swarm);
    let agents_started = agentsim_agents::external::starts().0;
    let mut t = runner.run_trial(seed, trial);
    if let (true, (now, Some(reason))) =
        (matches!(stack.planner, agentsim_agents::PlannerSpec::External(_)), agentsim_agents::external::starts())
        && now == agents_started
    {
        return Err(Failure::input(format!("--agent {}: the agent could not be started: {reason}", setup.agent)));
    }
    let timeline = timeline::render(&t, &prepared.catalog);
    // The document leaves the events out (the timeline has them): turned into
    // JSON values only to be dropped, a run of 10,000 sessions' events took
    // 1.3 GB.
    let events = std::mem::take(&mut t.events);
    if json {
        let mut document = trajectory_document(&t, &prepared, &setup.agent);
        document["timeline"] = timeline.lines().collect::<Vec<_>>().into();
        stdout_json(&document)?;
    } else {
        print_text(setup, &prepared, &t, &timeline)?;
    }
    drop(timeline);
    t.events = events;
    if let Some(path) = record {
        record_incident(setup, &prepared, &stack, &t, (seed, fault_scale), expect, path)?;
    }
    // Any outcome the world judged is a result; an agent that could not be
    // driven is not, and a script must be able to tell.
    if t.outcome == Outcome::AgentError {
        errln!("agent_error: {}", t.end_reason);
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// A trajectory as one JSON object, without its events: `outcome`, `verdict`,
/// `end_reason`, `metrics`, `minefields`, `digest`... with the `scenario`,
/// `agent` and `task` it ran.
pub(super) fn trajectory_document(t: &Trajectory, prepared: &Prepared, agent: &str) -> serde_json::Value {
    let mut document = serde_json::to_value(t).expect("a trajectory is plain data");
    let fields = document.as_object_mut().expect("a trajectory is an object");
    fields.remove("events");
    fields.insert("scenario".into(), prepared.scenario.name.clone().into());
    fields.insert("agent".into(), agent.into());
    fields.insert("task".into(), prepared.task_of(t.seed).into());
    document
}

/// The timeline and the outcome, as text.
fn print_text(setup: &Setup, prepared: &Prepared, t: &Trajectory, timeline: &str) -> Result<(), Failure> {
    let task = prepared.task_of(t.seed).map(|t| format!(", task {t}")).unwrap_or_default();
    outln!(
        "agentsim run: scenario {}, agent {}, {}{task}",
        printable(&prepared.scenario.name),
        printable(&setup.agent),
        agentsim::incident::seed_and_trial(t.seed, t.trial)
    )?;
    stdout_text(timeline)?;
    let m = &t.metrics;
    outln!(
        "outcome: {}  turns {}  tool calls {} ({} failed, {} faults)  tokens {}  cost ${}  virtual time {:.1} s",
        t.outcome,
        m.turns,
        m.tool_calls,
        m.failed_calls,
        m.faults_seen,
        m.tokens(),
        agentsim::summary::usd(m.cost_micro_usd),
        m.virtual_ms as f64 / 1000.0
    )?;
    outln!("digest:  {}", t.digest)
}

/// Writes the run as an incident file at `path`.
fn record_incident(
    setup: &Setup,
    prepared: &Prepared,
    stack: &StackSpec,
    t: &Trajectory,
    (seed, fault_scale): (u64, f64),
    expect: &[(String, Outcome)],
    path: &Path,
) -> Result<(), Failure> {
    let mut incident = Incident::record(prepared, None, seed, fault_scale, &setup.agent, stack, t);
    incident.swarm = setup.swarm;
    for (agent, outcome) in expect {
        load::agent(agent, prepared, load::TURN_LIMIT_MS_DEFAULT, None)?;
        incident.expect.insert(agent.clone(), *outcome);
    }
    write_atomic(
        path,
        incident.to_ron_bounded().map_err(|e| Failure::input(format!("{}: {e}", path.display())))?.as_bytes(),
    )?;
    errln!("recorded {}; replay it with: agentsim replay {}", path.display(), path.display());
    Ok(())
}
