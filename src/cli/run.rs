//! `agentsim run`: one seed, printed as a timeline.

use std::process::ExitCode;

use std::path::Path;

use agentsim::incident::Incident;
use agentsim::timeline::printable;
use agentsim::{Runner, timeline};
use agentsim_engine::Outcome;

use super::output::{check_target, errln, outln, stdout_text, write_atomic};

use super::{Failure, Setup, load};

/// Runs one seed and prints its timeline and outcome.
pub fn run(setup: &Setup, seed: u64, record: Option<&Path>, expect: &[(String, Outcome)]) -> Result<ExitCode, Failure> {
    if let Some(path) = record {
        check_target(path)?;
    }
    let mut prepared = load::scenario(&setup.scenario)?;
    load::select_tasks(&mut prepared, setup.tasks.as_deref())?;
    let stack = load::agent(&setup.agent, &prepared, setup.turn_limit_ms, setup.layers.as_deref())?;
    load::check_swarm(setup, &prepared)?;
    let fault_scale = setup.fault_scale.single("run")?;
    let runner = Runner::new(&prepared, &stack, true, fault_scale).with_swarm(setup.swarm);
    let agents_started = agentsim_agents::external::starts().0;
    let t = runner.run(seed);
    if let (true, (now, Some(reason))) =
        (matches!(stack.planner, agentsim_agents::PlannerSpec::External(_)), agentsim_agents::external::starts())
        && now == agents_started
    {
        return Err(Failure::input(format!("--agent {}: the agent could not be started: {reason}", setup.agent)));
    }
    let task = prepared.task_of(seed).map(|t| format!(", task {t}")).unwrap_or_default();
    outln!(
        "agentsim run: scenario {}, agent {}, seed {seed}{task}",
        printable(&prepared.scenario.name),
        printable(&setup.agent)
    )?;
    stdout_text(&timeline::render(&t, &prepared.catalog))?;
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
    outln!("digest:  {}", t.digest)?;
    if let Some(path) = record {
        let mut incident = Incident::record(&prepared, None, seed, fault_scale, &setup.agent, &stack, &t);
        incident.swarm = setup.swarm;
        for (agent, outcome) in expect {
            load::agent(agent, &prepared, load::TURN_LIMIT_MS_DEFAULT, None)?;
            incident.expect.insert(agent.clone(), *outcome);
        }
        write_atomic(
            path,
            incident.to_ron_bounded().map_err(|e| Failure::input(format!("{}: {e}", path.display())))?.as_bytes(),
        )?;
        errln!("recorded {}; replay it with: agentsim replay {}", path.display(), path.display());
    }
    Ok(ExitCode::SUCCESS)
}
