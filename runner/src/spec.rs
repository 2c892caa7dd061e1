//! Agent specs: `--agent NAME` (a preset), `--agent FILE.ron` (a stack file), or
//! `--agent cmd:COMMAND` (an external agent), or `--agent llm:MODEL` (a model
//! behind an OpenAI-compatible endpoint).

use agentsim_agents::{LayerAt, StackSpec};
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
    /// A model, by the name its endpoint serves.
    Llm(String),
}

impl AgentSource {
    /// Classifies a spec string: `cmd:` or `llm:` prefix, a path ending in
    /// `.ron`, or a preset.
    pub fn classify(spec: &str) -> AgentSource {
        if let Some(command) = spec.strip_prefix("cmd:") {
            AgentSource::Command(command.to_string())
        } else if let Some(model) = spec.strip_prefix("llm:") {
            AgentSource::Llm(model.to_string())
        } else if spec.ends_with(".ron") || spec.contains('/') {
            AgentSource::File(spec.to_string())
        } else {
            AgentSource::Preset(spec.to_string())
        }
    }
}

/// Parses a stack file's text; `origin` names it in errors.
pub fn parse_stack(text: &str, origin: &str) -> Result<StackSpec, ScenarioError> {
    let stack: StackSpec = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
    check_layers(&stack, text, origin)?;
    Ok(stack)
}

/// Percentages and sizes the types cannot bound ([`StackSpec::check`]), located
/// in the file's text. Stack files and incidents' stacks.
pub(crate) fn check_layers(stack: &StackSpec, text: &str, origin: &str) -> Result<(), ScenarioError> {
    let Err(error) = stack.check() else { return Ok(()) };
    let at = match error.at {
        None => text.find("layers"),
        // The field after the nth `Layer(` in the text (1:1 if not found).
        Some(LayerAt { name, nth }) => text
            .match_indices(&format!("{name}("))
            .nth(nth - 1)
            .and_then(|(start, _)| text[start..].find(&format!("{}:", error.field)).map(|i| start + i)),
    };
    let (line, column) = at.map_or((1, 1), |offset| position(text, offset));
    Err(ScenarioError { origin: origin.to_string(), line, column, message: error.to_string() })
}

/// The 1-based line and column of byte `offset` in `text`.
pub(crate) fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
}
