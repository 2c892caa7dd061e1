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
fn read_text(path: &str, what: &str) -> Result<String, Failure> {
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

/// The stack named by `--agent`, checked against the scenario's tools.
pub fn agent(spec: &str, prepared: &Prepared) -> Result<StackSpec, Failure> {
    let stack = stack(spec)?;
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
        AgentSource::Command(command) => Err(Failure::input(format!(
            "--agent cmd:{command}: external agents are not supported by this build yet; use a preset or a stack file"
        ))),
    }
}
