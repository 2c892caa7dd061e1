//! Loading scenarios and agent specs from files or built-ins.

use std::path::Path;

use agentsim::spec::{AgentSource, parse_stack};
use agentsim_agents::StackSpec;
use agentsim_worlds::{Prepared, Scenario};

use super::Failure;

/// Reads a text file, naming it (as `what`) in the error.
pub fn text(path: &str, what: &str) -> Result<String, Failure> {
    read_text(path, what)
}

/// Reads a text file, naming it in the error.
pub fn read_text(path: &str, what: &str) -> Result<String, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::input(format!("cannot read {what} `{path}`: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.as_bytes()[..offset]).into_owned();
        let line = text.matches('\n').count() + 1;
        let column = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Failure::input(format!("{path}:{line}:{column}: {what} is not valid UTF-8"))
    })
}

/// The scenario named by `spec`: an existing file, else a built-in name.
pub fn scenario(spec: &str) -> Result<Prepared, Failure> {
    let (text, origin) = if Path::new(spec).is_file() {
        (read_text(spec, "scenario")?, spec.to_string())
    } else if let Some(text) = agentsim::builtin::scenario(spec) {
        (text.to_string(), format!("built-in {spec}"))
    } else {
        let names: Vec<&str> = agentsim::builtin::SCENARIOS.iter().map(|(n, _)| *n).collect();
        return Err(Failure::input(format!(
            "scenario `{spec}` is neither a file nor a built-in scenario (built-ins: {})",
            names.join(", ")
        )));
    };
    let scenario = Scenario::parse(&text, &origin).map_err(|e| Failure::input(e.to_string()))?;
    Ok(Prepared::new(scenario))
}

/// The external agents' wall-clock limit per answer when no `--turn-limit-ms` applies.
pub const TURN_LIMIT_MS_DEFAULT: u64 = 10_000;

/// The stack named by `--agent`, checked against the scenario's tools.
/// `turn_limit_ms` is the wall-clock limit per answer of an external agent, and
/// `layers` a stack file whose layers wrap it.
pub fn agent(spec: &str, prepared: &Prepared, turn_limit_ms: u64, layers: Option<&str>) -> Result<StackSpec, Failure> {
    let mut stack = stack(spec)?;
    match (&mut stack.planner, layers) {
        (agentsim_agents::PlannerSpec::External(config), layers) => {
            config.turn_limit_ms = turn_limit_ms;
            if let Some(path) = layers {
                let text = read_text(path, "stack file")?;
                stack.layers = parse_stack(&text, path).map_err(|e| Failure::input(e.to_string()))?.layers;
            }
        }
        (_, Some(_)) => {
            return Err(Failure::input(
                "--layers: only for external agents (--agent cmd:COMMAND); put the layers in the stack file",
            ));
        }
        (_, None) => {}
    }
    let spec = layers.unwrap_or(spec);
    if let Some(tool) = stack.unknown_tools(&prepared.catalog).first() {
        return Err(Failure::input(format!(
            "{spec}: field `forbidden_tools`: unknown tool `{tool}` (the scenario's tools: {})",
            prepared.catalog.specs().iter().map(|s| s.def.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(stack)
}

fn stack(spec: &str) -> Result<StackSpec, Failure> {
    match AgentSource::classify(spec) {
        AgentSource::Preset(name) => agentsim_agents::preset(&name).ok_or_else(|| {
            let names: Vec<&str> = agentsim_agents::PRESETS.iter().map(|(n, _)| *n).collect();
            Failure::input(format!(
                "--agent: unknown preset `{name}` (presets: {}; or a stack file ending in .ron, or cmd:COMMAND)",
                names.join(", ")
            ))
        }),
        AgentSource::File(path) => {
            let text = read_text(&path, "stack file")?;
            parse_stack(&text, &path).map_err(|e| Failure::input(e.to_string()))
        }
        AgentSource::Command(command) if command.trim().is_empty() => {
            Err(Failure::input("--agent cmd:COMMAND: the command is empty"))
        }
        AgentSource::Command(command) => Ok(StackSpec {
            planner: agentsim_agents::PlannerSpec::External(agentsim_agents::ExternalConfig::new(&command)),
            layers: Vec::new(),
        }),
    }
}

/// Refuses `--swarm` for a scenario without a `swarm` section: nothing would vary.
pub fn check_swarm(setup: &super::Setup, prepared: &Prepared) -> Result<(), Failure> {
    if setup.swarm && prepared.scenario.swarm.is_empty() {
        return Err(Failure::input(format!(
            "--swarm: scenario `{}` has no `swarm` section, so nothing would vary (see seeds/README.md)",
            setup.scenario
        )));
    }
    Ok(())
}
