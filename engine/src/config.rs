//! Run limits and the model (token and cost) configuration, as scenarios state them.

use serde::{Deserialize, Serialize};

use crate::latency::Latency;
use crate::time::TimeMs;

/// The largest `turns_max` a scenario may give (100,000 model calls in one run).
pub const TURNS_MAX_MAX: u32 = 100_000;
/// The largest `tool_calls_max` a scenario may give: what one trajectory keeps per
/// call (its realised faults) is bounded by it.
pub const TOOL_CALLS_MAX_MAX: u32 = 100_000;
/// The largest `tokens_max` a scenario may give (ten billion tokens).
pub const TOKENS_MAX_MAX: u64 = 10_000_000_000;
/// The largest `events_max` a scenario may give: a recorded trajectory holds at
/// most this many events (and an incident at most this many lines of timeline).
pub const EVENTS_MAX_MAX: u32 = 1_000_000;

/// Limits on one trajectory; reaching one ends the run as `budget_exhausted`.
/// Each is bounded when read ([`TURNS_MAX_MAX`], [`TOOL_CALLS_MAX_MAX`],
/// [`TOKENS_MAX_MAX`], [`EVENTS_MAX_MAX`]), so one trajectory's memory is bounded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    /// Planner decisions (model calls).
    #[serde(deserialize_with = "turns_max")]
    pub turns_max: u32,
    /// Tool calls, retries included.
    #[serde(deserialize_with = "tool_calls_max")]
    pub tool_calls_max: u32,
    /// Prompt plus completion tokens.
    #[serde(deserialize_with = "tokens_max")]
    pub tokens_max: u64,
    /// Events in the trajectory: the hard bound that keeps every run finite.
    #[serde(deserialize_with = "events_max")]
    pub events_max: u32,
}

/// Deserialisers that refuse a number above a bound, naming the field.
macro_rules! at_most {
    ($($name:ident: $ty:ty = $max:expr;)*) => {$(
        fn $name<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<$ty, D::Error> {
            let value = <$ty as Deserialize>::deserialize(deserializer)?;
            if value > $max {
                return Err(serde::de::Error::custom(format!(
                    "field `{}`: expected at most {}, found {value}",
                    stringify!($name),
                    $max
                )));
            }
            Ok(value)
        }
    )*};
}

at_most! {
    turns_max: u32 = TURNS_MAX_MAX;
    tool_calls_max: u32 = TOOL_CALLS_MAX_MAX;
    tokens_max: u64 = TOKENS_MAX_MAX;
    events_max: u32 = EVENTS_MAX_MAX;
}

/// A price in US dollars per million tokens: finite and not negative.
fn usd_per_mtok<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let usd = f64::deserialize(deserializer)?;
    if !(usd.is_finite() && usd >= 0.0) {
        return Err(serde::de::Error::custom(format!(
            "expected a finite price in US dollars per million tokens, at least 0, found {usd}"
        )));
    }
    Ok(usd)
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
    /// US dollars per million prompt tokens (finite, at least 0).
    #[serde(deserialize_with = "usd_per_mtok")]
    pub usd_per_mtok_prompt: f64,
    /// US dollars per million completion tokens (finite, at least 0).
    #[serde(deserialize_with = "usd_per_mtok")]
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
    /// Without `record`, still keep the last few diagnostics (an external
    /// agent's stderr when it failed; outside the digest) among the events:
    /// what a sweep keeps of a failing run it does not record, since a re-run
    /// to record it may not fail the same way (see
    /// [`crate::trajectory::DIAGNOSTICS_UNRECORDED_MAX`]).
    pub keep_diagnostics: bool,
    /// How much fault injection: every drawn fault's probability is multiplied by
    /// it (saturating at 1). At 0 nothing is injected at all: no drawn fault, no rate
    /// limit, no explicit or traced fault (a session then never expires). At any
    /// positive scale the stateful and replayed faults stay as written (a rate
    /// limit is a quota, not a chance; a replay is exact). Drift is not a fault:
    /// it is the API's version, and stays at every scale.
    pub fault_scale: f64,
    /// Importance sampling: when set, the scale at which fault probabilities are
    /// nominal, while the draws use `fault_scale` (the tilted one); the
    /// trajectory's `log_weight` is then the log likelihood ratio of its fault
    /// decisions, nominal over sampled. `None`: draws are nominal, weight 1.
    pub nominal_fault_scale: Option<f64>,
    /// Importance sampling with a tilt per rule: when set (with
    /// `nominal_fault_scale`), each rule is drawn with its probability in this
    /// table instead of at `fault_scale` (which then only says whether faults
    /// are injected at all). `None`: every rule at `fault_scale`.
    pub sampled_probabilities: Option<crate::likelihood::RuleProbabilities>,
    /// Who speaks for the world's user: its rules (the default), or a voice
    /// (a model, see [`crate::voice`]).
    pub user_voice: crate::voice::VoiceSlot,
    /// Who reads what the world's rules cannot decide: nobody (the default:
    /// the reading stays `uncertain`), or a judge (a model, see
    /// [`crate::judge`]).
    pub judge: crate::judge::JudgeSlot,
    /// How many sessions share the world, when they arrive and what they share
    /// of the model (one session by default: see [`crate::sessions`]).
    pub sessions: crate::sessions::Sessions,
    /// The interleaving explored (see [`crate::sessions::Explore`]): 0 is the
    /// seeded schedule; k >= 1 breaks ties at random and redraws think times
    /// and tool latencies from the streams of interleaving k.
    pub interleaving: u32,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            horizon_ms: 30 * 60 * 1_000,
            budgets: Budgets::default(),
            model: ModelConfig::default(),
            record: false,
            keep_diagnostics: false,
            fault_scale: 1.0,
            nominal_fault_scale: None,
            sampled_probabilities: None,
            user_voice: crate::voice::VoiceSlot::default(),
            judge: crate::judge::JudgeSlot::default(),
            sessions: crate::sessions::Sessions::default(),
            interleaving: 0,
        }
    }
}
