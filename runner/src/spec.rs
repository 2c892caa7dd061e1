//! Agent specs: `--agent NAME` (a preset), `--agent FILE.ron` (a stack file), or
//! `--agent cmd:COMMAND` (an external agent), or `--agent llm:MODEL` (a model
//! behind an OpenAI-compatible endpoint).

use agentsim_agents::layers::Rule;
use agentsim_agents::layers::cross_check::READS_MAX as CROSS_CHECK_READS_MAX;
use agentsim_agents::layers::verify_write::{COMPLETIONS_MAX, READS_MAX as VERIFY_READS_MAX};
use agentsim_agents::stack::{ATTEMPTS_MAX, ENTRIES_MAX, LAYERS_MAX};
use agentsim_agents::{LayerSpec, StackSpec};
use agentsim_engine::{TIME_MS_MAX, TimeMs};
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

/// Percentages and sizes the types cannot bound: a value past them would make a
/// layer silently never (or always) act. Stack files and incidents' stacks.
pub(crate) fn check_layers(stack: &StackSpec, text: &str, origin: &str) -> Result<(), ScenarioError> {
    if stack.layers.len() > LAYERS_MAX {
        let (line, column) = text.find("layers").map_or((1, 1), |offset| position(text, offset));
        return Err(ScenarioError {
            origin: origin.to_string(),
            line,
            column,
            message: format!("field `layers`: expected at most {LAYERS_MAX} layers, found {}", stack.layers.len()),
        });
    }
    let (mut breakers, mut budgets, mut retries, mut ranges, mut detectors, mut timeouts, mut caches) =
        (0, 0, 0, 0, 0, 0, 0);
    let (mut cross_checks, mut provenances, mut verifiers) = (0, 0, 0);
    let too_long = |ms: TimeMs| ms > TIME_MS_MAX;
    let ms_message = |ms: TimeMs| format!("expected at most {TIME_MS_MAX} ms (ten years), found {ms}");
    for layer in &stack.layers {
        let problem = match layer {
            LayerSpec::Retry(c) => {
                retries += 1;
                if c.attempts_max > ATTEMPTS_MAX {
                    Some((
                        "Retry",
                        retries,
                        "attempts_max",
                        format!("expected at most {ATTEMPTS_MAX} attempts, found {}", c.attempts_max),
                    ))
                } else if too_long(c.cap_ms) {
                    Some(("Retry", retries, "cap_ms", ms_message(c.cap_ms)))
                } else if c.base_ms > c.cap_ms {
                    Some((
                        "Retry",
                        retries,
                        "base_ms",
                        format!(
                            "expected at most cap_ms ({}), found {}: every wait would be the cap",
                            c.cap_ms, c.base_ms
                        ),
                    ))
                } else {
                    None
                }
            }
            LayerSpec::Guardrail(c) => c.rules.iter().find_map(|rule| match rule {
                Rule::ArgRange { arg, min, max, .. } => {
                    ranges += 1;
                    match (min, max) {
                        (Some(min), Some(max)) if min > max => Some((
                            "ArgRange",
                            ranges,
                            "max",
                            format!(
                                "the range of `{arg}` is empty: max {max} is below min {min}, so every call is refused"
                            ),
                        )),
                        _ => None,
                    }
                }
                Rule::Provenance { args, .. } => {
                    provenances += 1;
                    args.is_empty().then(|| {
                        (
                            "Provenance",
                            provenances,
                            "args",
                            "expected at least one argument to check, found none".into(),
                        )
                    })
                }
                _ => None,
            }),
            LayerSpec::LoopDetector(c) => {
                detectors += 1;
                (c.same_call_same_result == 0 && c.same_call_failing == 0 && c.alternating_cycles == 0).then(|| {
                    (
                        "LoopDetector",
                        detectors,
                        "same_call_same_result",
                        "every threshold is 0, so the detector never triggers (leave the layer out instead)"
                            .to_string(),
                    )
                })
            }
            LayerSpec::Timeout(c) => {
                timeouts += 1;
                too_long(c.timeout_ms).then(|| ("Timeout", timeouts, "timeout_ms", ms_message(c.timeout_ms)))
            }
            LayerSpec::Cache(c) => {
                caches += 1;
                if c.capacity > ENTRIES_MAX {
                    Some((
                        "Cache",
                        caches,
                        "capacity",
                        format!("expected at most {ENTRIES_MAX} entries, found {}", c.capacity),
                    ))
                } else if too_long(c.ttl_ms) {
                    Some(("Cache", caches, "ttl_ms", ms_message(c.ttl_ms)))
                } else if too_long(c.stale_max_ms) {
                    Some(("Cache", caches, "stale_max_ms", ms_message(c.stale_max_ms)))
                } else {
                    None
                }
            }
            LayerSpec::CircuitBreaker(c) => {
                breakers += 1;
                if c.window > ENTRIES_MAX {
                    Some((
                        "CircuitBreaker",
                        breakers,
                        "window",
                        format!("expected at most {ENTRIES_MAX} calls, found {}", c.window),
                    ))
                } else if too_long(c.break_ms) {
                    Some(("CircuitBreaker", breakers, "break_ms", ms_message(c.break_ms)))
                } else if c.failure_rate_pct > 100 {
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
            LayerSpec::CrossCheck(c) => {
                cross_checks += 1;
                (!(2..=CROSS_CHECK_READS_MAX).contains(&c.reads_max)).then(|| {
                    (
                        "CrossCheck",
                        cross_checks,
                        "reads_max",
                        format!(
                            "expected 2..={CROSS_CHECK_READS_MAX} reads (one to check, one to confirm), found {}",
                            c.reads_max
                        ),
                    )
                })
            }
            LayerSpec::VerifyWrite(c) => {
                verifiers += 1;
                if !(1..=VERIFY_READS_MAX).contains(&c.reads_max) {
                    Some((
                        "VerifyWrite",
                        verifiers,
                        "reads_max",
                        format!("expected 1..={VERIFY_READS_MAX} reads per read-back, found {}", c.reads_max),
                    ))
                } else if c.completions_max > COMPLETIONS_MAX {
                    Some((
                        "VerifyWrite",
                        verifiers,
                        "completions_max",
                        format!("expected at most {COMPLETIONS_MAX} completing writes, found {}", c.completions_max),
                    ))
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some((layer, nth, field, message)) = problem {
            // The field after the nth `Layer(` in the text (1:1 if not found).
            let at = text
                .match_indices(&format!("{layer}("))
                .nth(nth - 1)
                .and_then(|(start, _)| text[start..].find(&format!("{field}:")).map(|i| start + i));
            let (line, column) = at.map_or((1, 1), |offset| position(text, offset));
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

/// The 1-based line and column of byte `offset` in `text`.
pub(crate) fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
}
