//! Run limits and the model (token and cost) configuration, as scenarios state them.

use serde::{Deserialize, Serialize};

use crate::latency::Latency;
use crate::time::TimeMs;

/// Limits on one trajectory; reaching one ends the run as `budget_exhausted`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    /// Planner decisions (model calls).
    pub turns_max: u32,
    /// Tool calls, retries included.
    pub tool_calls_max: u32,
    /// Prompt plus completion tokens.
    pub tokens_max: u64,
    /// Events in the trajectory: the hard bound that keeps every run finite.
    pub events_max: u32,
}

impl Default for Budgets {
    fn default() -> Self {
        Self { turns_max: 40, tool_calls_max: 60, tokens_max: 300_000, events_max: 2_000 }
    }
}

/// The model behind the planner: how long a decision takes and what it costs.
///
/// A turn's prompt is the system prompt plus everything the planner has read so far
/// (its context grows with each observation); its completion is a fixed size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// Time one decision takes.
    pub think: Latency,
    /// Tokens of the system prompt and tool list, sent every turn.
    pub system_prompt_tokens: u32,
    /// Tokens the model writes per decision.
    pub completion_tokens: u32,
    /// US dollars per million prompt tokens.
    pub usd_per_mtok_prompt: f64,
    /// US dollars per million completion tokens.
    pub usd_per_mtok_completion: f64,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            think: Latency::Uniform { min_ms: 600, max_ms: 2_400 },
            system_prompt_tokens: 1_200,
            completion_tokens: 60,
            usd_per_mtok_prompt: 3.0,
            usd_per_mtok_completion: 15.0,
        }
    }
}

/// Everything the loop needs besides the world, the agent and the tools.
#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Virtual time limit.
    pub horizon_ms: TimeMs,
    /// Limits.
    pub budgets: Budgets,
    /// The model's cost and think time.
    pub model: ModelConfig,
    /// Keep every event (for timelines and incidents), not only the digest.
    pub record: bool,
    /// Multiplier on every fault probability.
    pub fault_scale: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            horizon_ms: 30 * 60 * 1_000,
            budgets: Budgets::default(),
            model: ModelConfig::default(),
            record: false,
            fault_scale: 1.0,
        }
    }
}
