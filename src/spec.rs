//! Agent specs: `--agent NAME` (a preset), `--agent FILE.ron` (a stack file), or
//! `--agent cmd:COMMAND` (an external agent).

use agentsim_agents::{LayerSpec, StackSpec};
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
    let stack: StackSpec = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
    check_layers(&stack, text, origin)?;
    Ok(stack)
}

/// Percentages and sizes the types cannot bound: a value past them would make a
/// layer silently never (or always) act. Stack files and incidents' stacks.
pub(crate) fn check_layers(stack: &StackSpec, text: &str, origin: &str) -> Result<(), ScenarioError> {
    let (mut breakers, mut budgets) = (0, 0);
    for layer in &stack.layers {
        let problem = match layer {
            LayerSpec::CircuitBreaker(c) => {
                breakers += 1;
                if c.failure_rate_pct > 100 {
                    Some((
                        "CircuitBreaker",
                        breakers,
                        "failure_rate_pct",
                        format!("expected a percent in 0..=100, found {}", c.failure_rate_pct),
                    ))
                } else if c.window == 0 {
                    Some(("CircuitBreaker", breakers, "window", "expected at least 1 call, found 0".to_string()))
                } else if c.minimum_throughput > c.window {
                    Some((
                        "CircuitBreaker",
                        breakers,
                        "minimum_throughput",
                        format!(
                            "expected at most window ({}), found {}: the window never holds that many calls, so the circuit never opens",
                            c.window, c.minimum_throughput
                        ),
                    ))
                } else {
                    None
                }
            }
            LayerSpec::ContextBudget(c) => {
                budgets += 1;
                (c.evict_to_pct > 100).then(|| {
                    (
                        "ContextBudget",
                        budgets,
                        "evict_to_pct",
                        format!("expected a percent in 0..=100, found {}", c.evict_to_pct),
                    )
                })
            }
            _ => None,
        };
        if let Some((layer, nth, field, message)) = problem {
            // The field after the nth `Layer(` in the text (1:1 if not found).
            let at = text
                .match_indices(&format!("{layer}("))
                .nth(nth - 1)
                .and_then(|(start, _)| text[start..].find(&format!("{field}:")).map(|i| start + i));
            let (line, column) = at.map_or((1, 1), |offset| {
                let before = &text[..offset];
                (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
            });
            return Err(ScenarioError {
                origin: origin.to_string(),
                line,
                column,
                message: format!("field `{field}`: {message}"),
            });
        }
    }
    Ok(())
}
