//! Putting a model in the loop (`--agent llm:MODEL`): where it is served, its
//! cassette, and its system prompt, the world's policy (`docs/llm.md`).

use std::path::{Path, PathBuf};

use std::sync::Arc;

use agentsim_agents::llm::judge::LlmJudge;
use agentsim_agents::llm::user::LlmUserFactory;
use agentsim_agents::llm::{API_KEY_ENV_DEFAULT, BASE_URL_DEFAULT, CassetteMode, Endpoint, LlmConfig};
use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_worlds::{JudgeModel, JudgeSpec, Prepared, UserModel, UserSpec};

use crate::Error;

/// The environment variable naming the base URL when no flag does.
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";

/// The environment variable that sets the first backoff between a request's
/// attempts, in wall-clock milliseconds (default 500): tests shorten it.
pub const BACKOFF_ENV: &str = "AGENTSIM_LLM_BACKOFF_MS";

/// How the command line sets up a model (every field optional).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LlmOptions {
    /// `--llm-base-url`; else `OPENAI_BASE_URL`; else [`BASE_URL_DEFAULT`].
    pub base_url: Option<String>,
    /// `--llm-api-key-env`; else [`API_KEY_ENV_DEFAULT`].
    pub api_key_env: Option<String>,
    /// `--cassette DIR`.
    pub cassette: Option<PathBuf>,
    /// `--cassette-mode` (`record`, `replay`, `record-missing`: the default).
    pub cassette_mode: Option<String>,
}

impl LlmOptions {
    /// Whether any option is given.
    pub fn any(&self) -> bool {
        *self != Self::default()
    }
}

/// Sets up the model of `stack` (if its planner is one): its endpoint and
/// cassette from `options`, and, when its system prompt is empty, the policy
/// of the world `scenario` names (see [`system_prompt`]). Options given for
/// another planner are refused: they would do nothing.
pub fn configure(
    stack: &mut StackSpec,
    options: &LlmOptions,
    prepared: &Prepared,
    scenario: &str,
) -> Result<(), Error> {
    let PlannerSpec::Llm(config) = &mut stack.planner else {
        if options.any() && prepared.scenario.user.is_rules() && prepared.scenario.judge.is_rules() {
            return Err(Error::argument(
                "--llm-base-url, --llm-api-key-env, --cassette and --cassette-mode: only with a model as the agent, the user or the judge (--agent llm:MODEL, --user llm:MODEL, --judge llm:MODEL, or a stack file whose planner is Llm(..))",
            ));
        }
        return Ok(());
    };
    config.endpoint = endpoint(options)?;
    if config.system.is_empty() {
        config.system = system_prompt(prepared, scenario)?;
    }
    Ok(())
}

/// Where a model is served and how its answers are recorded, from `options`
/// and the environment: the agent's and the user's are made alike.
pub fn endpoint(options: &LlmOptions) -> Result<Endpoint, Error> {
    let mut endpoint = Endpoint::default();
    let from_env = std::env::var(BASE_URL_ENV).ok().filter(|u| !u.trim().is_empty());
    endpoint.base_url = options.base_url.clone().or(from_env).unwrap_or_else(|| BASE_URL_DEFAULT.to_string());
    if !(endpoint.base_url.starts_with("http://") || endpoint.base_url.starts_with("https://")) {
        return Err(Error::argument(format!(
            "--llm-base-url: `{}` is not an http:// or https:// URL",
            agentsim_agents::llm::redact::url(&endpoint.base_url)
        )));
    }
    if let Ok(text) = std::env::var(BACKOFF_ENV) {
        endpoint.backoff_base_ms = text
            .trim()
            .parse()
            .map_err(|_| Error::argument(format!("{BACKOFF_ENV}: expected milliseconds, found `{text}`")))?;
    }
    endpoint.api_key_env = options.api_key_env.clone().unwrap_or_else(|| API_KEY_ENV_DEFAULT.to_string());
    let mode = match options.cassette_mode.as_deref() {
        None => CassetteMode::default(),
        Some(text) => CassetteMode::parse(text).ok_or_else(|| {
            Error::argument(format!("--cassette-mode: expected record, replay or record-missing, found `{text}`"))
        })?,
    };
    endpoint.cassette = match (&options.cassette, &options.cassette_mode) {
        (Some(dir), _) => Some((dir.clone(), mode)),
        (None, Some(_)) => return Err(Error::argument("--cassette-mode: needs --cassette DIR")),
        (None, None) => None,
    };
    if mode == CassetteMode::Replay
        && let Some((dir, _)) = &endpoint.cassette
        && !dir.is_dir()
    {
        return Err(Error::argument(format!("--cassette {}: no such folder to replay", dir.display())));
    }
    if mode != CassetteMode::Replay
        && let Some((dir, _)) = &endpoint.cassette
    {
        check_recording_folder(dir)?;
    }
    Ok(endpoint)
}

/// Checks, before the first request, that answers can be recorded into the
/// cassette `dir`: a folder (created when missing) in which a file can be
/// created. Checked late, every answer asked would be paid for and thrown
/// away, each episode an `agent_error`.
fn check_recording_folder(dir: &Path) -> Result<(), Error> {
    let refuse =
        |why: String| Error::argument(format!("--cassette {}: {why}, so no answer could be recorded", dir.display()));
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(refuse("is not a folder (a cassette is a folder of entries)".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot be created ({e})")))?;
        }
        Err(e) => return Err(refuse(format!("cannot be read ({e})"))),
    }
    // Written the way an entry is: a new file beside where one would go.
    let (probe, path) = agentsim_agents::temp_file::create_beside(&dir.join("probe"))
        .map_err(|e| refuse(format!("cannot be written ({e})")))?;
    drop(probe);
    let _ = std::fs::remove_file(path);
    Ok(())
}

/// Episodes in flight by default when a model is asked live.
pub const IN_FLIGHT_DEFAULT: usize = 64;

/// How many episodes a sweep keeps in flight by default: [`IN_FLIGHT_DEFAULT`]
/// when a model plays the agent or the user and is asked live (its threads
/// wait on the network, not on the cores), `None` (one per core) otherwise,
/// replaying a cassette included.
pub fn in_flight_default(stack: &StackSpec, prepared: &Prepared, options: &LlmOptions) -> Option<usize> {
    let model = matches!(stack.planner, PlannerSpec::Llm(_)) || prepared.has_user_voice() || prepared.has_judge();
    let replaying = options.cassette.is_some() && options.cassette_mode.as_deref() == Some("replay");
    (model && !replaying).then_some(IN_FLIGHT_DEFAULT)
}

/// Reads `--user`: `rules` (the world's user) or `llm:MODEL`.
pub fn parse_user(spec: &str) -> Result<UserSpec, Error> {
    match spec.strip_prefix("llm:") {
        Some(model) if model.trim().is_empty() => Err(Error::argument("--user llm:MODEL: the model name is empty")),
        Some(model) => Ok(UserSpec::Llm(UserModel::new(model.trim()))),
        None if spec == "rules" => Ok(UserSpec::Rules),
        None => Err(Error::argument(format!("--user: expected `rules` or `llm:MODEL`, found `{spec}`"))),
    }
}

/// Sets up who speaks for the user of `prepared`: when its scenario names a
/// model (`user: Llm(..)`, or `--user llm:MODEL` put there), a voice over
/// `endpoint` (made by [`endpoint`], or an incident's offline one).
pub fn configure_user(prepared: &mut Prepared, endpoint: &Endpoint) {
    let UserSpec::Llm(model) = &prepared.scenario.user else {
        prepared.set_user_voice(None);
        return;
    };
    let mut config = LlmConfig::new(&model.model);
    config.temperature = model.temperature;
    config.seed = model.seed;
    config.max_tokens = model.max_tokens;
    config.system = model.instructions.clone();
    config.endpoint = endpoint.clone();
    prepared.set_user_voice(Some(Arc::new(LlmUserFactory { config })));
}

/// Reads `--judge`: `rules` (the rules reader alone) or `llm:MODEL`.
pub fn parse_judge(spec: &str) -> Result<JudgeSpec, Error> {
    match spec.strip_prefix("llm:") {
        Some(model) if model.trim().is_empty() => Err(Error::argument("--judge llm:MODEL: the model name is empty")),
        Some(model) => Ok(JudgeSpec::Llm(JudgeModel::new(model.trim()))),
        None if spec == "rules" => Ok(JudgeSpec::Rules),
        None => Err(Error::argument(format!("--judge: expected `rules` or `llm:MODEL`, found `{spec}`"))),
    }
}

/// Sets up who reads what the rules cannot decide in `prepared`: when its
/// scenario names a model (`judge: Llm(..)`, or `--judge llm:MODEL` put
/// there), a judge over `endpoint` (made by [`endpoint`], or an incident's
/// offline one).
pub fn configure_judge(prepared: &mut Prepared, endpoint: &Endpoint) {
    let JudgeSpec::Llm(model) = &prepared.scenario.judge else {
        prepared.set_judge(None);
        return;
    };
    let mut config = LlmConfig::new(&model.model);
    config.temperature = model.temperature;
    config.seed = model.seed;
    config.max_tokens = model.max_tokens;
    config.endpoint = endpoint.clone();
    prepared.set_judge(Some(Arc::new(LlmJudge { config })));
}

/// The model's system prompt for the scenario `spec` names: the `policy.md`
/// beside a scenario file (an imported tau2 domain has tau2's policy there),
/// else a short one made from the scenario's name and description and the
/// rules every world's tasks share.
pub fn system_prompt(prepared: &Prepared, spec: &str) -> Result<String, Error> {
    let beside = Path::new(spec).parent().map(|dir| dir.join("policy.md"));
    if Path::new(spec).is_file()
        && let Some(policy) = beside.filter(|p| p.is_file())
    {
        return crate::files::read_text(&policy.to_string_lossy(), "policy file");
    }
    let scenario = &prepared.scenario;
    Ok(format!(
        "You are the assistant of the `{}` service, talking with one user. {}\n\n\
         Rules:\n\
         - Find facts with the tools; never guess an id, an amount or a date.\n\
         - Ask the user, in words, for what you need and they have not said.\n\
         - Before any change (a refund, a booking, a cancellation, a reservation), say what you will do, with its values, and wait for the user's yes.\n\
         - Tools fail at times: read the error, and try again later or another way.\n\
         - Once it is done, tell the user what you did, with the values; when nothing more is needed, call `{}`.\n",
        scenario.name,
        scenario.description,
        agentsim_agents::llm::FINISH_TOOL,
    ))
}
