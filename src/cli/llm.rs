//! The flags of a model as the agent (`--agent llm:MODEL`, docs/llm.md).

use std::path::PathBuf;

use clap::Args;

/// Where the model is served and how its answers are recorded.
#[derive(Args, Debug, Default)]
pub struct LlmArgs {
    /// With --agent llm:MODEL: the OpenAI-compatible API's base URL, up to
    /// /chat/completions (default: $OPENAI_BASE_URL, else https://api.openai.com/v1).
    #[arg(long, value_name = "URL")]
    pub llm_base_url: Option<String>,
    /// With --agent llm:MODEL: the environment variable holding the API key
    /// (default OPENAI_API_KEY; unset: no Authorization header).
    #[arg(long, value_name = "VAR")]
    pub llm_api_key_env: Option<String>,
    /// With --agent llm:MODEL: the cassette folder, one recorded answer per
    /// request key; with a full cassette the run is offline and reproducible.
    #[arg(long, value_name = "DIR")]
    pub cassette: Option<PathBuf>,
    /// With --cassette: record (ask every request again), replay (answer only
    /// from the cassette; a missing answer is agent_error) or record-missing
    /// (the default: ask only what the cassette lacks).
    #[arg(long, value_name = "MODE")]
    pub cassette_mode: Option<String>,
}

impl LlmArgs {
    /// The library's options.
    pub fn options(&self) -> agentsim::llm::LlmOptions {
        agentsim::llm::LlmOptions {
            base_url: self.llm_base_url.clone(),
            api_key_env: self.llm_api_key_env.clone(),
            cassette: self.cassette.clone(),
            cassette_mode: self.cassette_mode.clone(),
        }
    }
}
