//! Loading scenarios and agent specs from files or built-ins.

use agentsim::spec::{AgentSource, parse_stack};
use agentsim_agents::StackSpec;
use agentsim_worlds::Prepared;

use super::Failure;

pub use agentsim::files::TRACE_BYTES_MAX;

/// Reads a text file of at most `agentsim::files::INPUT_BYTES_MAX`, naming it (as `what`) in the error.
pub fn text(path: &str, what: &str) -> Result<String, Failure> {
    read_text(path, what)
}

/// Reads a text file of at most `agentsim::files::INPUT_BYTES_MAX`, naming it in the error.
pub fn read_text(path: &str, what: &str) -> Result<String, Failure> {
    Ok(agentsim::files::read_text(path, what)?)
}

/// Reads a text file of at most `bytes_max` bytes (any size with `None`), naming it
/// in the error (see `agentsim::files::read_bounded`).
pub fn read_bounded(path: &str, what: &str, bytes_max: Option<u64>) -> Result<String, Failure> {
    Ok(agentsim::files::read_bounded(path, what, bytes_max)?)
}

/// The scenario named by `spec`: an existing file, else a built-in name.
pub fn scenario(spec: &str) -> Result<Prepared, Failure> {
    Ok(agentsim::load::scenario(spec)?)
}

/// Applies `--tasks` (`all`, or ids separated by commas) to a prepared scenario.
pub fn select_tasks(prepared: &mut Prepared, tasks: Option<&str>) -> Result<(), Failure> {
    Ok(agentsim::load::select_tasks(prepared, tasks)?)
}

/// The layers of the stack file at `path` (its planner is not used), checked
/// against the scenario's tools: what `mcp --layers` puts around the client.
pub fn layers(path: &str, prepared: &Prepared) -> Result<Vec<agentsim_agents::LayerSpec>, Failure> {
    Ok(agentsim::load::layers(path, prepared)?)
}

/// The external agents' wall-clock limit per answer when no `--turn-limit-ms` applies.
pub const TURN_LIMIT_MS_DEFAULT: u64 = 10_000;

/// The stack named by `--agent`, checked against the scenario's tools.
/// `turn_limit_ms` is the wall-clock limit per answer of an external agent, and
/// `layers` a stack file whose layers wrap it.
pub fn agent(spec: &str, prepared: &Prepared, turn_limit_ms: u64, layers: Option<&str>) -> Result<StackSpec, Failure> {
    let (mut stack, mut text) = stack(spec)?;
    match (&mut stack.planner, layers) {
        (planner @ (agentsim_agents::PlannerSpec::External(_) | agentsim_agents::PlannerSpec::Llm(_)), layers) => {
            if let agentsim_agents::PlannerSpec::External(config) = planner {
                config.turn_limit_ms = turn_limit_ms;
            }
            if let Some(path) = layers {
                let layers_text = read_text(path, "stack file")?;
                stack.layers = parse_stack(&layers_text, path).map_err(|e| Failure::input(e.to_string()))?.layers;
                text = Some(layers_text);
            }
        }
        (_, Some(_)) => {
            return Err(Failure::input(
                "--layers: only for external agents and models (--agent cmd:COMMAND, llm:MODEL); put the layers in the stack file",
            ));
        }
        (_, None) => {}
    }
    check_tools(&stack, layers.unwrap_or(spec), prepared, text.as_deref())?;
    Ok(stack)
}

/// The stack `setup` names ([`agent`]), with its model (if it is one) set up
/// from the `--llm-*` and `--cassette*` flags; first, who speaks for the user
/// (`--user`, else the scenario's `user`) and who judges what the rules cannot
/// read (`--judge`, else the scenario's `judge`), set up from the same flags.
pub fn setup_agent(setup: &super::Setup, prepared: &mut Prepared) -> Result<StackSpec, Failure> {
    let options = setup.llm.options();
    if let Some(user) = &setup.user {
        prepared.scenario.user = agentsim::llm::parse_user(user)?;
    }
    if !prepared.scenario.user.is_rules() {
        agentsim::llm::configure_user(prepared, &agentsim::llm::endpoint(&options)?);
    }
    if let Some(judge) = &setup.judge {
        prepared.scenario.judge = agentsim::llm::parse_judge(judge)?;
    }
    if !prepared.scenario.judge.is_rules() {
        agentsim::llm::configure_judge(prepared, &agentsim::llm::endpoint(&options)?);
    }
    let mut stack = agent(&setup.agent, prepared, setup.turn_limit_ms, setup.layers.as_deref())?;
    agentsim::llm::configure(&mut stack, &options, prepared, &setup.scenario)?;
    Ok(stack)
}

/// Refuses a stack whose layers name a tool the scenario lacks, or a cache that
/// names a write tool (see `agentsim::load::check_tools`).
fn check_tools(stack: &StackSpec, spec: &str, prepared: &Prepared, text: Option<&str>) -> Result<(), Failure> {
    Ok(agentsim::load::check_tools(stack, spec, prepared, text)?)
}

/// The stack `spec` names, with the file's text when it is a file.
fn stack(spec: &str) -> Result<(StackSpec, Option<String>), Failure> {
    let stack = match AgentSource::classify(spec) {
        AgentSource::Preset(name) => agentsim_agents::preset(&name).ok_or_else(|| {
            let names: Vec<&str> = agentsim_agents::PRESETS.iter().map(|(n, _)| *n).collect();
            Failure::input(format!(
                "--agent: unknown preset `{name}` (presets: {}; or a stack file ending in .ron, or cmd:COMMAND)",
                names.join(", ")
            ))
        }),
        AgentSource::File(path) => {
            let text = read_text(&path, "stack file")?;
            let stack = parse_stack(&text, &path).map_err(|e| Failure::input(e.to_string()))?;
            return Ok((stack, Some(text)));
        }
        AgentSource::Llm(model) if model.trim().is_empty() => {
            Err(Failure::input("--agent llm:MODEL: the model name is empty"))
        }
        AgentSource::Llm(model) => Ok(StackSpec {
            planner: agentsim_agents::PlannerSpec::Llm(agentsim_agents::LlmConfig::new(model.trim())),
            layers: Vec::new(),
        }),
        AgentSource::Command(command) if command.trim().is_empty() => {
            Err(Failure::input("--agent cmd:COMMAND: the command is empty"))
        }
        // An agent that cannot start fails every seed alike: a configuration
        // error, named before any seed runs, not a sweep of 100% agent_error.
        AgentSource::Command(command) => agentsim_agents::external::check_command(&command)
            .map_err(|e| Failure::input(format!("--agent cmd:{command}: {e}")))
            .map(|()| {
                // Its agents are in their own process groups: a signal must end them.
                super::interrupt::install_for_agents();
                StackSpec {
                    planner: agentsim_agents::PlannerSpec::External(agentsim_agents::ExternalConfig::new(&command)),
                    layers: Vec::new(),
                }
            }),
    };
    Ok((stack?, None))
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
