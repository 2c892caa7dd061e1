//! A real model as the planner: a tool-calling agent over the OpenAI Chat
//! Completions API (`POST {base}/chat/completions`), as vLLM, llama.cpp's
//! server, Ollama and hosted providers serve it (`docs/llm.md`).
//!
//! The agent ([`LlmAgent`]) keeps the conversation as chat messages: the
//! world's policy as the system message, the user's words, its own answers and
//! the tools' results. Each step that needs a decision asks the model once
//! (one planner turn: the virtual clock advances by the scenario's think time,
//! never by the network's); a tool call becomes [`Action::Call`] through the
//! stack's layers like a preset planner's, text becomes [`Action::Say`], and the
//! `end_conversation` function ends the episode. Tokens and cost come from the
//! answer's `usage`.
//!
//! Answers are inputs, like seeds (DESIGN.md, determinism rule 7): a
//! [`cassette`] keyed by a canonical hash of each request stores them, so a
//! sweep with a full cassette runs offline and gives the same bytes on any
//! number of threads. The provider's own failures (429, 5xx, timeouts,
//! malformed answers) are retried with backoff on the wall clock by the
//! [`client`], recorded as `llm.retry` notes, and never reach the world; when
//! retries run out the episode ends as `agent_error` with the reason.
//!
//! [`Action::Call`]: agentsim_engine::Action::Call
//! [`Action::Say`]: agentsim_engine::Action::Say

mod agent;
pub mod answer;
pub mod cassette;
pub mod client;
pub mod error;
pub mod judge;
pub mod memory;
pub mod redact;
pub mod request;
pub mod user;

use serde::{Deserialize, Serialize};

pub use agent::LlmAgent;
pub use cassette::{Answers, CASSETTE_FORMAT, CASSETTE_VERSION, CassetteMode};
pub use error::{LlmError, LlmErrorKind};

/// The function the model calls to end the conversation (added to the world's
/// tools unless the world has a tool of that name).
pub const FINISH_TOOL: &str = "end_conversation";

/// What determines a model's answers: the model and its sampling parameters,
/// and the system prompt. Stack files name it as `planner: Llm(model: "...")`;
/// where the model is served (and how it is recorded) is [`Endpoint`], given on
/// the command line and never part of the stack's key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// The model name the endpoint serves (`gpt-4o-mini`, `qwen2.5:7b`).
    pub model: String,
    /// Sampling temperature (default 0: the most repeatable answers).
    #[serde(default = "default_temperature")]
    pub temperature: Option<f64>,
    /// The provider's sampling seed, where it honours one.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Most tokens per answer (`max_tokens`).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The system prompt; empty: the world's policy, filled in when the
    /// scenario is loaded.
    #[serde(default)]
    pub system: String,
    /// Where the model is served and how answers are recorded.
    #[serde(skip)]
    pub endpoint: Endpoint,
}

fn default_temperature() -> Option<f64> {
    Some(0.0)
}

impl LlmConfig {
    /// A config for `model` at temperature 0, with the default endpoint.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_string(),
            temperature: default_temperature(),
            seed: None,
            max_tokens: None,
            system: String::new(),
            endpoint: Endpoint::default(),
        }
    }
}

/// Where a model is served, and how its answers are recorded and retried:
/// nothing here changes an answer, so none of it is in a cassette key or in
/// the stack's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The API's base URL, up to `/chat/completions` (`http://127.0.0.1:8000/v1`).
    pub base_url: String,
    /// The environment variable holding the API key (the key itself is never
    /// stored); unset or empty: no `Authorization` header.
    pub api_key_env: String,
    /// The cassette folder and mode; `None`: every request asks the model.
    pub cassette: Option<(std::path::PathBuf, CassetteMode)>,
    /// Answers given with the run (an incident's), consulted first.
    pub answers: Answers,
    /// Never ask the model: a request no answer source has ends the episode
    /// as a missing answer (an incident's replay, offline).
    pub offline: bool,
    /// Attempts per request before the episode ends as `agent_error`.
    pub attempts_max: u32,
    /// Wall-clock limit of one attempt, in milliseconds.
    pub request_timeout_ms: u64,
    /// First backoff between attempts, in wall-clock milliseconds (doubling).
    pub backoff_base_ms: u64,
    /// Longest wait between attempts, Retry-After included, in milliseconds.
    pub backoff_cap_ms: u64,
}

/// The base URL when neither `--llm-base-url` nor `OPENAI_BASE_URL` names one.
pub const BASE_URL_DEFAULT: &str = "https://api.openai.com/v1";
/// The API key's environment variable when `--llm-api-key-env` names none.
pub const API_KEY_ENV_DEFAULT: &str = "OPENAI_API_KEY";

impl Default for Endpoint {
    fn default() -> Self {
        Self {
            base_url: BASE_URL_DEFAULT.to_string(),
            api_key_env: API_KEY_ENV_DEFAULT.to_string(),
            cassette: None,
            answers: Answers::default(),
            offline: false,
            attempts_max: 6,
            request_timeout_ms: 120_000,
            backoff_base_ms: 500,
            backoff_cap_ms: 60_000,
        }
    }
}
