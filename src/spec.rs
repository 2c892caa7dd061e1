//! Agent specs: `--agent NAME` (a preset), `--agent FILE.ron` (a stack file), or
//! `--agent cmd:COMMAND` (an external agent).

use agentsim_agents::StackSpec;
use agentsim_worlds::ScenarioError;
use agentsim_worlds::scenario::{ron_error, ron_options};

/// How `--agent` was understood.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentSource {
    /// A built-in preset.
    Preset(String),
    /// A stack file at this path.
    File(String),
    /// An external process.
    Command(String),
}

impl AgentSource {
    /// Classifies a spec string: `cmd:` prefix, a path ending in `.ron`, or a preset.
    pub fn classify(spec: &str) -> AgentSource {
        if let Some(command) = spec.strip_prefix("cmd:") {
            AgentSource::Command(command.to_string())
        } else if spec.ends_with(".ron") || spec.contains('/') {
            AgentSource::File(spec.to_string())
        } else {
            AgentSource::Preset(spec.to_string())
        }
    }
}

/// Parses a stack file's text; `origin` names it in errors.
pub fn parse_stack(text: &str, origin: &str) -> Result<StackSpec, ScenarioError> {
    ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))
}
