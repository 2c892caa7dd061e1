//! Named stacks, selectable with `--agent NAME`.

use crate::layers::{Backoff, GuardrailConfig, Jitter, LoopConfig, RetryBudget, RetryConfig};
use crate::noisy::NoisyConfig;
use crate::stack::{LayerSpec, PlannerSpec, StackSpec};

/// The presets: (name, one-line description), in the order they are listed.
pub const PRESETS: &[(&str, &str)] = &[
    ("oracle", "the world's expert with no mistakes and no layers: the upper bound"),
    ("naive", "a noisy planner (default mistake rates) calling tools directly, no layers"),
    ("retry", "naive plus immediate retries of failed reads (no backoff, Retry-After ignored)"),
    ("backoff", "naive plus retries with exponential backoff, full jitter, Retry-After and a retry budget"),
    ("resilient", "a noisy planner behind guardrail, loop detector, idempotency keys and retry with backoff"),
    ("oracle_text", "oracle, talking to the user in words (the Speak layer) instead of structured messages"),
    ("naive_text", "naive, talking to the user in words"),
    ("resilient_text", "resilient, talking to the user in words"),
];

/// The stack called `name`, or `None` if there is no such preset.
pub fn preset(name: &str) -> Option<StackSpec> {
    let (planner, layers) = match name {
        "oracle" => (PlannerSpec::Oracle, Vec::new()),
        "naive" => (PlannerSpec::Noisy(NoisyConfig::default()), Vec::new()),
        // What a first retry loop looks like: try again at once, a few times.
        "retry" => (
            PlannerSpec::Noisy(NoisyConfig::default()),
            vec![LayerSpec::Retry(RetryConfig {
                backoff: Backoff::Constant,
                base_ms: 0,
                jitter: Jitter::None,
                honor_retry_after: false,
                ..RetryConfig::default()
            })],
        ),
        // The same retries, spaced out and bounded.
        "backoff" => (
            PlannerSpec::Noisy(NoisyConfig::default()),
            vec![LayerSpec::Retry(RetryConfig { budget: Some(RetryBudget::default()), ..RetryConfig::default() })],
        ),
        // From the planner outward: the guardrail first, so a bad action reaches
        // nothing; the loop detector inside the retry layer, so it counts planner
        // decisions, not retry attempts; idempotency inside retry, so a retried
        // write reuses its key.
        "resilient" => (
            PlannerSpec::Noisy(NoisyConfig::default()),
            vec![
                LayerSpec::Guardrail(GuardrailConfig::default()),
                LayerSpec::LoopDetector(LoopConfig::default()),
                LayerSpec::Idempotency,
                LayerSpec::Retry(RetryConfig::default()),
            ],
        ),
        _ => {
            // The free-text form of a preset: the same stack, its messages said
            // in words by the outermost layer.
            let base = name.strip_suffix("_text").filter(|b| ["oracle", "naive", "resilient"].contains(b))?;
            let mut spec = preset(base)?;
            spec.layers.push(LayerSpec::Speak);
            return Some(spec);
        }
    };
    Some(StackSpec { planner, layers })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_preset_exists_and_nothing_else() {
        for (name, description) in PRESETS {
            assert!(preset(name).is_some(), "{name}");
            assert!(!description.is_empty());
        }
        assert_eq!(preset("no such stack"), None);
        assert_eq!(preset("oracle").map(|s| s.planner), Some(PlannerSpec::Oracle));
    }

    #[test]
    fn resilient_orders_its_layers_from_the_planner_outward() {
        let spec = preset("resilient").expect("preset");
        let names: Vec<&str> = spec.layers.iter().map(LayerSpec::name).collect();
        assert_eq!(names, ["guardrail", "loop_detector", "idempotency", "retry"]);
    }
}
