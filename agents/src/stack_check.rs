//! The checks of a stack's layers that their types cannot make: percentages,
//! sizes, times and ranges past which a layer would silently never (or always)
//! act. Stack files and incidents' stacks are checked alike; the error names
//! the layer (its kind and which one of that kind) and the field, for the
//! reader of the file to locate.

use std::fmt;

use agentsim_engine::{TIME_MS_MAX, TimeMs};

use crate::layers::Rule;
use crate::layers::cross_check::READS_MAX as CROSS_CHECK_READS_MAX;
use crate::layers::verify_write::{COMPLETIONS_MAX, READS_MAX as VERIFY_READS_MAX};
use crate::stack::{ATTEMPTS_MAX, ENTRIES_MAX, LAYERS_MAX, LayerSpec, StackSpec};

/// What kind of problem a layer's setting has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerErrorKind {
    /// More than the setting takes (layers, attempts, entries, a time past
    /// [`TIME_MS_MAX`]).
    TooMany,
    /// A number outside its range (a percent past 100, reads outside their bounds).
    OutOfRange,
    /// Two settings that disagree (a base past its cap, an empty range, a
    /// throughput the window never holds).
    Inconsistent,
    /// A layer that can never act (no threshold, nothing to check).
    Inert,
}

/// Which layer a problem is in: its kind's name as the file writes it
/// (`Retry`, or a guardrail rule's, `ArgRange`) and which one of that kind it
/// is (1-based, in file order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerAt {
    /// The name the file writes before its `(`.
    pub name: &'static str,
    /// Which of that name (1-based).
    pub nth: usize,
}

/// A stack refused by [`StackSpec::check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerError {
    /// The layer, or `None` for the stack's own `layers` field.
    pub at: Option<LayerAt>,
    /// The field at fault.
    pub field: &'static str,
    /// What kind of problem.
    pub kind: LayerErrorKind,
    /// What is wrong, without the field's name.
    pub detail: String,
}

impl fmt::Display for LayerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.detail)
    }
}

impl std::error::Error for LayerError {}

/// One layer's problem, before it knows which layer of its kind it is in.
type Problem = (LayerErrorKind, &'static str, String);

impl StackSpec {
    /// Checks what the layers' types cannot bound; the first problem, in file order.
    pub fn check(&self) -> Result<(), LayerError> {
        if self.layers.len() > LAYERS_MAX {
            return Err(LayerError {
                at: None,
                field: "layers",
                kind: LayerErrorKind::TooMany,
                detail: format!("expected at most {LAYERS_MAX} layers, found {}", self.layers.len()),
            });
        }
        // How many of each name were seen so far, in file order.
        let mut seen: Vec<(&'static str, usize)> = Vec::new();
        let mut count = |name: &'static str| {
            let nth = match seen.iter_mut().find(|(n, _)| *n == name) {
                Some((_, k)) => {
                    *k += 1;
                    *k
                }
                None => {
                    seen.push((name, 1));
                    1
                }
            };
            LayerAt { name, nth }
        };
        for layer in &self.layers {
            let problem = match layer {
                LayerSpec::Guardrail(c) => c.rules.iter().find_map(|rule| {
                    let name = match rule {
                        Rule::ArgRange { .. } => "ArgRange",
                        Rule::Provenance { .. } => "Provenance",
                        _ => return None,
                    };
                    let at = count(name);
                    rule_problem(rule).map(|p| (at, p))
                }),
                other => {
                    let Some(name) = checked_name(other) else { continue };
                    let at = count(name);
                    layer_problem(other).map(|p| (at, p))
                }
            };
            if let Some((at, (kind, field, detail))) = problem {
                return Err(LayerError { at: Some(at), field, kind, detail });
            }
        }
        Ok(())
    }
}

/// The name of a layer this module checks (guardrails are checked by rule).
fn checked_name(layer: &LayerSpec) -> Option<&'static str> {
    Some(match layer {
        LayerSpec::Retry(_) => "Retry",
        LayerSpec::LoopDetector(_) => "LoopDetector",
        LayerSpec::Timeout(_) => "Timeout",
        LayerSpec::Cache(_) => "Cache",
        LayerSpec::CircuitBreaker(_) => "CircuitBreaker",
        LayerSpec::ContextBudget(_) => "ContextBudget",
        LayerSpec::CrossCheck(_) => "CrossCheck",
        LayerSpec::VerifyWrite(_) => "VerifyWrite",
        _ => return None,
    })
}

fn too_long(field: &'static str, ms: TimeMs) -> Option<Problem> {
    (ms > TIME_MS_MAX)
        .then(|| (LayerErrorKind::TooMany, field, format!("expected at most {TIME_MS_MAX} ms (ten years), found {ms}")))
}

fn rule_problem(rule: &Rule) -> Option<Problem> {
    match rule {
        Rule::ArgRange { arg, min: Some(min), max: Some(max), .. } if min > max => Some((
            LayerErrorKind::Inconsistent,
            "max",
            format!("the range of `{arg}` is empty: max {max} is below min {min}, so every call is refused"),
        )),
        Rule::Provenance { args, .. } if args.is_empty() => {
            Some((LayerErrorKind::Inert, "args", "expected at least one argument to check, found none".into()))
        }
        _ => None,
    }
}

fn layer_problem(layer: &LayerSpec) -> Option<Problem> {
    use LayerErrorKind::{Inconsistent, Inert, OutOfRange, TooMany};
    match layer {
        LayerSpec::Retry(c) => {
            if c.attempts_max > ATTEMPTS_MAX {
                Some((
                    TooMany,
                    "attempts_max",
                    format!("expected at most {ATTEMPTS_MAX} attempts, found {}", c.attempts_max),
                ))
            } else if let Some(p) = too_long("cap_ms", c.cap_ms) {
                Some(p)
            } else if c.base_ms > c.cap_ms {
                let detail =
                    format!("expected at most cap_ms ({}), found {}: every wait would be the cap", c.cap_ms, c.base_ms);
                Some((Inconsistent, "base_ms", detail))
            } else {
                None
            }
        }
        LayerSpec::LoopDetector(c) => {
            (c.same_call_same_result == 0 && c.same_call_failing == 0 && c.alternating_cycles == 0).then(|| {
                let detail = "every threshold is 0, so the detector never triggers (leave the layer out instead)";
                (Inert, "same_call_same_result", detail.to_string())
            })
        }
        LayerSpec::Timeout(c) => too_long("timeout_ms", c.timeout_ms),
        LayerSpec::Cache(c) => {
            if c.capacity > ENTRIES_MAX {
                Some((TooMany, "capacity", format!("expected at most {ENTRIES_MAX} entries, found {}", c.capacity)))
            } else {
                too_long("ttl_ms", c.ttl_ms).or_else(|| too_long("stale_max_ms", c.stale_max_ms))
            }
        }
        LayerSpec::CircuitBreaker(c) => circuit_breaker_problem(c),
        LayerSpec::ContextBudget(c) => (c.evict_to_pct > 100)
            .then(|| (OutOfRange, "evict_to_pct", format!("expected a percent in 0..=100, found {}", c.evict_to_pct))),
        LayerSpec::CrossCheck(c) => (!(2..=CROSS_CHECK_READS_MAX).contains(&c.reads_max)).then(|| {
            let detail = format!(
                "expected 2..={CROSS_CHECK_READS_MAX} reads (one to check, one to confirm), found {}",
                c.reads_max
            );
            (OutOfRange, "reads_max", detail)
        }),
        LayerSpec::VerifyWrite(c) => {
            if !(1..=VERIFY_READS_MAX).contains(&c.reads_max) {
                let detail = format!("expected 1..={VERIFY_READS_MAX} reads per read-back, found {}", c.reads_max);
                Some((OutOfRange, "reads_max", detail))
            } else if c.completions_max > COMPLETIONS_MAX {
                let detail =
                    format!("expected at most {COMPLETIONS_MAX} completing writes, found {}", c.completions_max);
                Some((TooMany, "completions_max", detail))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn circuit_breaker_problem(c: &crate::layers::BreakerConfig) -> Option<Problem> {
    use LayerErrorKind::{Inconsistent, OutOfRange, TooMany};
    if c.window > ENTRIES_MAX {
        Some((TooMany, "window", format!("expected at most {ENTRIES_MAX} calls, found {}", c.window)))
    } else if let Some(p) = too_long("break_ms", c.break_ms) {
        Some(p)
    } else if c.failure_rate_pct > 100 {
        Some((OutOfRange, "failure_rate_pct", format!("expected a percent in 0..=100, found {}", c.failure_rate_pct)))
    } else if c.window == 0 {
        Some((OutOfRange, "window", "expected at least 1 call, found 0".to_string()))
    } else if c.minimum_throughput > c.window {
        let detail = format!(
            "expected at most window ({}), found {}: the window never holds that many calls, so the circuit never opens",
            c.window, c.minimum_throughput
        );
        Some((Inconsistent, "minimum_throughput", detail))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::RetryConfig;

    #[test]
    fn the_nth_layer_of_a_kind_and_its_field_are_named() {
        let bad = RetryConfig { attempts_max: ATTEMPTS_MAX + 1, ..RetryConfig::default() };
        let stack = StackSpec {
            planner: crate::stack::PlannerSpec::Oracle,
            layers: vec![LayerSpec::Retry(RetryConfig::default()), LayerSpec::Retry(bad)],
        };
        let err = stack.check().unwrap_err();
        assert_eq!(err.at, Some(LayerAt { name: "Retry", nth: 2 }));
        assert_eq!((err.field, err.kind), ("attempts_max", LayerErrorKind::TooMany));
        assert_eq!(
            err.to_string(),
            format!("field `attempts_max`: expected at most {ATTEMPTS_MAX} attempts, found {}", ATTEMPTS_MAX + 1)
        );
        let fine = StackSpec { layers: vec![LayerSpec::Retry(RetryConfig::default())], ..stack };
        assert_eq!(fine.check(), Ok(()));
    }
}
