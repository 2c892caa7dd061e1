//! Who speaks for a scenario's user: the world's own rules (the default), or
//! a model (`user: Llm(model: "...")` in a scenario, `--user llm:MODEL` on the
//! command line; docs/llm.md). Where the model is served is never part of a
//! scenario: it comes from the command line or the environment, as the
//! agent's does.

use serde::{Deserialize, Serialize};

/// Who speaks for the user.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum UserSpec {
    /// The world's user, by its documented rules (docs/conversation.md).
    #[default]
    Rules,
    /// A model behind an OpenAI-compatible endpoint, told the task as
    /// instructions; the world's user still reads and judges what the agent
    /// says, and decides when it answers.
    Llm(UserModel),
}

impl UserSpec {
    /// Whether the world's rules speak (what a scenario leaves unwritten).
    pub fn is_rules(&self) -> bool {
        matches!(self, UserSpec::Rules)
    }
}

/// The model that plays the user and its sampling parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserModel {
    /// The model name the endpoint serves.
    pub model: String,
    /// Sampling temperature (default 0).
    #[serde(default = "zero")]
    pub temperature: Option<f64>,
    /// The provider's sampling seed, where it honours one.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Most tokens per answer.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The scenario's instructions for the user, replacing the world's own
    /// (its task's facts and persona); empty: the world's.
    #[serde(default)]
    pub instructions: String,
}

fn zero() -> Option<f64> {
    Some(0.0)
}

impl UserModel {
    /// `model` at temperature 0, with the world's instructions.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_string(),
            temperature: zero(),
            seed: None,
            max_tokens: None,
            instructions: String::new(),
        }
    }
}

/// Who reads what the world's rules cannot decide: nobody (the default: the
/// reading stays `uncertain`), or a model (`judge: Llm(model: "...")` in a
/// scenario, `--judge llm:MODEL` on the command line; docs/conversation.md,
/// "A model judge where the rules give up"). Where it is served comes from the
/// command line or the environment, as for the agent's and the user's models.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum JudgeSpec {
    /// The rules reader alone.
    #[default]
    Rules,
    /// A model behind an OpenAI-compatible endpoint.
    Llm(JudgeModel),
}

impl JudgeSpec {
    /// Whether the rules alone read (what a scenario leaves unwritten).
    pub fn is_rules(&self) -> bool {
        matches!(self, JudgeSpec::Rules)
    }
}

/// The model that judges and its sampling parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeModel {
    /// The model name the endpoint serves.
    pub model: String,
    /// Sampling temperature (default 0).
    #[serde(default = "zero")]
    pub temperature: Option<f64>,
    /// The provider's sampling seed, where it honours one.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Most tokens per answer.
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

impl JudgeModel {
    /// `model` at temperature 0.
    pub fn new(model: &str) -> Self {
        Self { model: model.to_string(), temperature: zero(), seed: None, max_tokens: None }
    }
}
