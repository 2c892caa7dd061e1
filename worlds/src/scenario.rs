//! The scenario format: a RON file naming a world with its data, tools, faults and
//! drift, plus the horizon, budgets and model. Bad input is reported with the file,
//! line, column and field.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use agentsim_engine::{
    Agent, Budgets, Catalog, ModelConfig, SessionId, SimConfig, StreamSource, TimeMs, Trajectory, Value,
};

use crate::flight_booking::FlightBookingConfig;
use crate::newsroom::NewsroomConfig;
use crate::scripted::{self, ScriptedConfig};
use crate::support_desk::SupportDeskConfig;
use crate::swarm::{Swarm, SwarmDraw};
use crate::user_spec::{JudgeSpec, UserSpec};
use crate::weather_dining::WeatherDiningConfig;
pub use crate::world_model::{Builtin, BuiltinWorld, NamedWorld, WorldKind, WorldModel, run_world};

/// A scenario as written in a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, shown in reports.
    pub name: String,
    /// What the scenario is about.
    #[serde(default)]
    pub description: String,
    /// Virtual time limit of each trajectory (default 30 minutes).
    #[serde(default = "default_horizon_ms")]
    pub horizon_ms: TimeMs,
    /// Per-trajectory limits.
    #[serde(default)]
    pub budgets: Budgets,
    /// The model behind the planner: think time, tokens, prices.
    #[serde(default)]
    pub model: ModelConfig,
    /// The world, its data and its tools.
    pub world: WorldConfig,
    /// Ranges that swarm mode draws fault parameters from, per seed (optional,
    /// empty). Left out of the canonical form when empty, so scenarios without it
    /// keep their keys.
    #[serde(default, skip_serializing_if = "Swarm::is_empty")]
    pub swarm: Swarm,
    /// Who speaks for the user: the world's rules (the default, left out of
    /// the canonical form), or a model (docs/llm.md). Not part of the key:
    /// a model playing the user meets the same world as the rules do.
    #[serde(default, skip_serializing_if = "UserSpec::is_rules")]
    pub user: UserSpec,
    /// Who reads what the world's rules cannot decide: nobody (the default,
    /// left out of the canonical form; the reading stays `uncertain`), or a
    /// model (docs/conversation.md). Not part of the key: a judge meets the
    /// same world as the rules do.
    #[serde(default, skip_serializing_if = "JudgeSpec::is_rules")]
    pub judge: JudgeSpec,
    /// How many sessions share one world in each run, when they arrive and
    /// what they share of the model (see `agentsim_engine::sessions`; one
    /// session by default). Left out of the canonical form when it is the
    /// default, so scenarios without it keep their keys.
    #[serde(default, skip_serializing_if = "is_one_session")]
    pub sessions: agentsim_engine::Sessions,
}

fn is_one_session(sessions: &agentsim_engine::Sessions) -> bool {
    *sessions == agentsim_engine::Sessions::default()
}

/// The longest scenario `name`, in characters.
pub const NAME_CHARS_MAX: usize = 1_000;

fn default_horizon_ms() -> TimeMs {
    30 * 60 * 1_000
}

/// The registry of world kinds: one line per kind, `Variant(Config)`, where
/// `Config` implements [`WorldKind`] (a built-in world does through
/// [`BuiltinWorld`]). The variant's name is what a scenario's `world` says.
/// A new Rust world is its folder plus one line here.
macro_rules! registry {
    ($( $(#[$doc:meta])* $variant:ident($config:ty), )*) => {
        /// The world kinds and their parameters: the registry, one variant per
        /// kind (see `registry!` in this file).
        // One value per scenario, parsed once and shared by every seed: its size
        // does not matter, and boxing variants would only make scenarios harder
        // to build in code.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub enum WorldConfig {
            $( $(#[$doc])* $variant($config), )*
        }

        impl WorldConfig {
            /// The kind's configuration, behind its trait.
            fn kind(&self) -> &dyn WorldKind {
                match self { $( WorldConfig::$variant(c) => c, )* }
            }

            /// The kind's configuration, mutable, behind its trait.
            fn kind_mut(&mut self) -> &mut dyn WorldKind {
                match self { $( WorldConfig::$variant(c) => c, )* }
            }
        }
    };
}

registry! {
    /// Customers, orders and refunds.
    SupportDesk(SupportDeskConfig),
    /// Fares on a random walk and a traveller with a budget.
    FlightBooking(FlightBookingConfig),
    /// Weather from two providers, restaurants, and a table for tonight.
    WeatherDining(WeatherDiningConfig),
    /// A news feed that moves, a summary and a task DAG.
    Newsroom(NewsroomConfig),
    /// A domain written as files: tables, tools in a script, tasks
    /// (`docs/worlds.md`).
    Scripted(ScriptedConfig),
    /// A world written in Rust outside this crate, by name: such a scenario
    /// runs only through [`Prepared::from_model`], which brings the world's
    /// catalog and model (`examples/rust_world/`). A file naming one is refused
    /// when parsed: nothing here knows how to build it.
    Named(NamedWorld),
}

impl WorldConfig {
    fn check(&self) -> Result<(), crate::world_model::ConfigError> {
        self.kind().check()
    }

    /// How many sessions one run of this world can hold (see
    /// [`WorldKind::sessions_max`]).
    pub fn sessions_max(&self) -> u32 {
        self.kind().sessions_max()
    }

    fn catalog(&self) -> Catalog {
        self.kind().catalog()
    }

    fn tool_configs_mut(&mut self) -> Vec<(String, &mut agentsim_engine::ToolConfig)> {
        self.kind_mut().tool_configs_mut()
    }

    fn model(&self, catalog: &Catalog) -> Arc<dyn WorldModel> {
        self.kind().model(catalog)
    }
}

/// A scenario file that could not be used: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or `built-in NAME`).
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, naming the field.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.origin, self.line, self.column, self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The RON dialect of agentsim files: `SupportDesk(customers: ...)` may be written
/// without the double parentheses of a newtype variant, and optional values without
/// `Some(..)`.
pub fn ron_options() -> ron::Options {
    ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES)
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// Turns a RON parse error in `text` into a located error that names the field.
pub fn ron_error(text: &str, origin: &str, err: &ron::error::SpannedError) -> ScenarioError {
    let (line, column) = (err.span.start.line, err.span.start.col);
    let message = err.code.to_string();
    let message = match field_before(text, line, column) {
        Some(field) if !message.contains("field") => format!("field `{field}`: {message}"),
        _ => message,
    };
    ScenarioError { origin: origin.to_string(), line, column, message }
}

/// The name of the nearest `name:` before a 1-based position: the field whose value
/// the parser was reading when it failed. Comments are not skipped; a field name is
/// what a reader looks for first, and a wrong guess only costs a hint.
fn field_before(text: &str, line: usize, column: usize) -> Option<String> {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let in_line: usize =
        text[line_start.min(text.len())..].chars().take(column.saturating_sub(1)).map(char::len_utf8).sum();
    let before = &text[..(line_start + in_line).min(text.len())];
    let bytes = before.as_bytes();
    let mut i = bytes.len();
    while i > 0 {
        i -= 1;
        // A field separator (`:`) not part of a `::` path.
        if bytes[i] == b':' && (i + 1 >= bytes.len() || bytes[i + 1] != b':') && (i == 0 || bytes[i - 1] != b':') {
            let name_end = before[..i].trim_end().len();
            // Past the last character that cannot be in a name (which may be several
            // bytes long: found by the fuzzer).
            let name_start = before[..name_end]
                .char_indices()
                .rev()
                .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
                .map_or(0, |(p, c)| p + c.len_utf8());
            let name = &before[name_start..name_end];
            if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
                return Some(name.to_string());
            }
        }
    }
    None
}

/// The 1-based line and column of the first occurrence of `needle` in `text`
/// (1:1 if absent), to point at a value that failed a cross-check.
fn locate(text: &str, needle: &str) -> (usize, usize) {
    let Some(offset) = text.find(needle) else { return (1, 1) };
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The 1-based line and column of byte `offset` in `text`.
pub fn position_of(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl Scenario {
    /// A scenario for a world written in Rust outside this crate
    /// ([`WorldConfig::Named`]), with the default horizon (30 minutes),
    /// budgets and model; run it with [`Prepared::from_model`].
    pub fn named(name: &str, world: &str) -> Scenario {
        Scenario {
            name: name.to_string(),
            description: String::new(),
            horizon_ms: default_horizon_ms(),
            budgets: Budgets::default(),
            model: ModelConfig::default(),
            world: WorldConfig::Named(NamedWorld(world.to_string())),
            swarm: Swarm::default(),
            user: UserSpec::Rules,
            judge: JudgeSpec::Rules,
            sessions: agentsim_engine::Sessions::default(),
        }
    }

    /// Parses and checks a scenario that must be whole (a built-in, or one
    /// embedded in an incident): a scripted world's file references are refused.
    /// `origin` names it in errors.
    #[inline]
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_in(text, origin, None)
    }

    /// Parses and checks a scenario read from a file in `dir`: a scripted
    /// world's tables and script are read from files there (relative paths
    /// that stay inside it) into the scenario.
    ///
    /// Inline, so that the scenario format's reader (serde's code for every
    /// struct of the format, generic over `ron`'s parser) is compiled in the
    /// crate that reads scenarios, where incidents compile the same reader
    /// already, and not a second time here (it was a third of this crate's
    /// build; BENCHMARKS.md, "Build profiles").
    #[inline]
    pub fn parse_in(text: &str, origin: &str, dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
        Scenario::checked(scenario, text, origin, dir)
    }

    /// Resolves and checks a scenario just read from `text` (see [`Scenario::parse_in`]).
    fn checked(
        mut scenario: Scenario,
        text: &str,
        origin: &str,
        dir: Option<&Path>,
    ) -> Result<Scenario, ScenarioError> {
        if let WorldConfig::Scripted(config) = &mut scenario.world {
            let located = |e: scripted::LoadError| match e.file {
                Some(file) => {
                    // Files are named relative to the scenario's folder.
                    let shown = dir.map_or_else(|| file.clone(), |d| d.join(&file).display().to_string());
                    ScenarioError { origin: shown, line: e.line, column: e.column, message: e.message }
                }
                None => {
                    let (line, column) = e.position_in(text);
                    ScenarioError { origin: origin.to_string(), line, column, message: e.message }
                }
            };
            scripted::resolve(config, dir).map_err(located)?;
            // The model compiled here is the one the scenario is prepared with.
            config.check_and_keep().map_err(located)?;
        }
        let located = |field: String, value: String, message: String| {
            // Point at the quoted value (an id); for a number, at its field name.
            let quoted = format!("\"{value}\"");
            let needle = if text.contains(&quoted) { quoted } else { format!("{value}:") };
            let (line, column) = locate(text, &needle);
            ScenarioError { origin: origin.to_string(), line, column, message: format!("field `{field}`: {message}") }
        };
        scenario.world.check().map_err(|e| located(format!("world.{}", e.field), e.needle, e.message))?;
        scenario.catalog().check_fault_paths().map_err(
            |agentsim_engine::tool::FaultPathError { tool, needle: path, message, .. }| {
                // Point at the path inside the tool's section.
                let start = text.find(&format!("{tool}:")).unwrap_or(0);
                let offset = text[start..].find(&format!("\"{path}\"")).map_or(start, |o| start + o);
                let (line, column) = position_of(text, offset);
                ScenarioError { origin: origin.to_string(), line, column, message: format!("tool `{tool}`: {message}") }
            },
        )?;
        scenario.swarm.check(&scenario.catalog()).map_err(|e| {
            // Point at the tool's name inside the swarm section.
            let start = text.find("swarm:").unwrap_or(0);
            let tool = e.tool.unwrap_or_default();
            let offset = text[start..].find(&format!("\"{tool}\"")).map_or(start, |o| start + o);
            let (line, column) = position_of(text, offset);
            ScenarioError { origin: origin.to_string(), line, column, message: e.message }
        })?;
        Scenario::check_bounds(&scenario, text, origin)?;
        Scenario::check_sessions(&scenario, text, origin)?;
        Ok(scenario)
    }

    /// The sessions section: its own consistency, and no more sessions than
    /// the world can hold.
    fn check_sessions(scenario: &Scenario, text: &str, origin: &str) -> Result<(), ScenarioError> {
        let at = |needle: &str, message: String| {
            // The section's own line, not a mention in a comment.
            let mut offset = 0;
            let start = text
                .lines()
                .find_map(|line| {
                    let found = line.trim_start().starts_with("sessions:").then_some(offset);
                    offset += line.len() + 1;
                    found
                })
                .unwrap_or(0);
            let offset = text[start..].find(needle).map_or(start, |o| start + o);
            let (line, column) = position_of(text, offset);
            ScenarioError { origin: origin.into(), line, column, message }
        };
        scenario.sessions.check().map_err(|e| {
            let needle = if e.to_string().contains("model_capacity") { "model_capacity:" } else { "arrival:" };
            at(needle, format!("field `sessions.{}", e.to_string().trim_start_matches("field `")))
        })?;
        let max = scenario.world.sessions_max();
        if scenario.sessions.count > max {
            let message = if max == 1 {
                "field `sessions.count`: this world holds one session (one user per run); the worlds that share their state between sessions are listed in docs/sessions.md".to_string()
            } else {
                format!(
                    "field `sessions.count`: this world holds at most {max} sessions, found {}",
                    scenario.sessions.count
                )
            };
            return Err(at("count:", message));
        }
        Ok(())
    }

    /// The scenario's own bounds: a name short enough to copy everywhere, a
    /// horizon within ten years.
    fn check_bounds(scenario: &Scenario, text: &str, origin: &str) -> Result<(), ScenarioError> {
        // The name is copied into every summary.json and run.json: bounded, so that
        // those stay far below the size they are read back with.
        if scenario.name.chars().count() > NAME_CHARS_MAX {
            let (line, column) = locate(text, "name:");
            return Err(ScenarioError {
                origin: origin.into(),
                line,
                column,
                message: format!(
                    "field `name`: expected at most {NAME_CHARS_MAX} characters, found {}",
                    scenario.name.chars().count()
                ),
            });
        }
        if !(1..=agentsim_engine::TIME_MS_MAX).contains(&scenario.horizon_ms) {
            let (line, column) = locate(text, "horizon_ms:");
            return Err(ScenarioError {
                origin: origin.into(),
                line,
                column,
                message: format!(
                    "field `horizon_ms`: expected a positive horizon of at most {} ms (ten years), found {}",
                    agentsim_engine::TIME_MS_MAX,
                    scenario.horizon_ms
                ),
            });
        }
        Ok(())
    }

    /// The tools of this scenario.
    pub fn catalog(&self) -> Catalog {
        self.world.catalog()
    }

    /// The key from which every stream of this scenario derives: a digest of its
    /// canonical form, so editing any value changes every trajectory.
    pub fn key(&self) -> [u8; 32] {
        // What the trials explore is not part of the world: trial 0 of a
        // scenario that explores interleavings is the plain scenario's run.
        let explores = self.sessions.explore != agentsim_engine::Explore::Agents;
        if self.user.is_rules() && self.judge.is_rules() && !explores {
            return agentsim_engine::rng::key_of(self);
        }
        let mut plain = Scenario { user: UserSpec::Rules, judge: JudgeSpec::Rules, ..self.clone() };
        plain.sessions.explore = agentsim_engine::Explore::Agents;
        agentsim_engine::rng::key_of(&plain)
    }

    /// Every tool's configuration, by tool name, for editing (making a realised
    /// fault schedule explicit, dropping drift while shrinking).
    pub fn tool_configs_mut(&mut self) -> Vec<(String, &mut agentsim_engine::ToolConfig)> {
        self.world.tool_configs_mut()
    }

    /// The loop configuration for this scenario.
    pub fn sim_config(&self, record: bool, fault_scale: f64) -> SimConfig {
        SimConfig {
            horizon_ms: self.horizon_ms,
            budgets: self.budgets.clone(),
            model: self.model.clone(),
            record,
            keep_diagnostics: false,
            fault_scale,
            nominal_fault_scale: None,
            sampled_probabilities: None,
            user_voice: agentsim_engine::VoiceSlot::default(),
            judge: agentsim_engine::JudgeSlot::default(),
            sessions: self.sessions.clone(),
            interleaving: 0,
        }
    }
}

/// What makes a session's agent from its expert and its streams (the expert
/// itself, or a stack around a planner around it).
pub type MakeAgent<'a> = dyn Fn(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent> + 'a;

/// A scenario ready to run many seeds: parsed once, with its catalog, key and
/// world model.
#[derive(Clone)]
pub struct Prepared {
    /// The scenario.
    pub scenario: Scenario,
    /// Its tools.
    pub catalog: Catalog,
    key: [u8; 32],
    model: Arc<dyn WorldModel>,
    /// Who speaks for the user when the scenario names a model
    /// ([`Prepared::set_user_voice`]); empty: the world's rules.
    voice: agentsim_engine::VoiceSlot,
    /// Who reads what the rules cannot decide when the scenario names a model
    /// ([`Prepared::set_judge`]); empty: nobody.
    judge: agentsim_engine::JudgeSlot,
    /// The task of each seed, in turn (seed `s` runs `tasks[s % len]`; a task
    /// of weight `w` appears `w` times in a row); empty for a world without
    /// named tasks.
    tasks: Vec<usize>,
}

/// A scenario of many sessions offered to an agent that is one session (see
/// [`Prepared::one_session`]); its message says what runs instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManySessions {
    /// The scenario's name.
    pub scenario: String,
    /// Its sessions.
    pub count: u32,
}

impl fmt::Display for ManySessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scenario `{}` runs {} sessions in one world; an agent driven one step at a time (a Python agent's `Env`) is one session: sweep it with a preset, a stack file or --agent cmd:COMMAND (a process per session), serve it to MCP clients with `agentsim mcp --http`, or set `sessions: (count: 1)`",
            self.scenario, self.count
        )
    }
}

impl std::error::Error for ManySessions {}

/// A task selection that names a task the world does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTask {
    /// The name given.
    pub name: String,
    /// The world's tasks.
    pub known: Vec<String>,
}

impl fmt::Display for UnknownTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.known.is_empty() {
            write!(f, "task `{}`: this world has no named tasks", self.name)
        } else {
            write!(f, "unknown task `{}` (tasks: {})", self.name, self.known.join(", "))
        }
    }
}

/// Task indices with each repeated as often as its weight says.
fn weighted(model: &dyn WorldModel, tasks: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let weights = model.task_weights();
    tasks.into_iter().flat_map(|t| std::iter::repeat_n(t, weights.get(t).map_or(1, |w| *w as usize))).collect()
}

impl Prepared {
    /// Prepares a parsed scenario.
    pub fn new(scenario: Scenario) -> Prepared {
        let key = scenario.key();
        Prepared::with_key(scenario, key)
    }

    /// Prepares a scenario whose streams derive from `key` rather than from its own
    /// content: an edited copy (an explicit fault schedule, a shrunk incident) that
    /// must still meet the same world, users and luck as the original.
    pub fn with_key(scenario: Scenario, key: [u8; 32]) -> Prepared {
        let catalog = scenario.catalog();
        let model = scenario.world.model(&catalog);
        Prepared::assemble(scenario, catalog, key, model)
    }

    /// Prepares a world written outside this crate: `model` runs it, `catalog`
    /// is its tools, and `scenario` (whose world is [`WorldConfig::Named`])
    /// gives the name, horizon, budgets and model costs, and the key its
    /// streams derive from. Such a world runs, sweeps and compares like any
    /// other; editing its scenario (shrinking, traces) needs it in the
    /// registry, [`WorldConfig`].
    pub fn from_model(scenario: Scenario, catalog: Catalog, model: Arc<dyn WorldModel>) -> Prepared {
        let key = scenario.key();
        Prepared::assemble(scenario, catalog, key, model)
    }

    fn assemble(scenario: Scenario, catalog: Catalog, key: [u8; 32], model: Arc<dyn WorldModel>) -> Prepared {
        let tasks = weighted(&*model, 0..model.tasks().len());
        Prepared {
            scenario,
            catalog,
            key,
            model,
            tasks,
            voice: agentsim_engine::VoiceSlot::default(),
            judge: agentsim_engine::JudgeSlot::default(),
        }
    }

    /// Runs only the named tasks (`all` or none: every task), seed `s` taking
    /// the `s % n`-th of them (a task of weight `w` counting `w` times), so a
    /// sweep of `n * k` seeds runs each `k` times (`w * k`).
    pub fn select_tasks(&mut self, names: &[&str]) -> Result<(), UnknownTask> {
        let known = self.model.tasks();
        if names.is_empty() || names == ["all"] {
            self.tasks = weighted(&*self.model, 0..known.len());
            return Ok(());
        }
        let mut tasks = Vec::with_capacity(names.len());
        for name in names {
            match known.iter().position(|k| k == name) {
                Some(i) => tasks.push(i),
                None => return Err(UnknownTask { name: name.to_string(), known }),
            }
        }
        self.tasks = weighted(&*self.model, tasks);
        Ok(())
    }

    /// The index of the task seed `seed` runs.
    fn task_index(&self, seed: u64) -> usize {
        if self.tasks.is_empty() { 0 } else { self.tasks[(seed % self.tasks.len() as u64) as usize] }
    }

    /// The id of the task seed `seed` runs; `None` for a world without named tasks.
    pub fn task_of(&self, seed: u64) -> Option<String> {
        (!self.tasks.is_empty()).then(|| self.model.tasks().swap_remove(self.task_index(seed)))
    }

    /// Whether the world has named tasks (a `task` column in `trajectories.csv`).
    pub fn has_tasks(&self) -> bool {
        !self.tasks.is_empty()
    }

    /// Whether the world hashes its final state (a `state_hash` column in
    /// `trajectories.csv`).
    pub fn has_state_hash(&self) -> bool {
        self.model.hashes_state()
    }

    /// Whether the world reports checks (a `checks` column in `trajectories.csv`).
    pub fn has_checks(&self) -> bool {
        self.model.has_checks()
    }

    /// The scenario key (see [`Scenario::key`]).
    pub fn key(&self) -> [u8; 32] {
        self.key
    }

    /// The streams of one seed.
    pub fn streams(&self, seed: u64) -> StreamSource {
        StreamSource::new(self.key, seed).drawing_as(self.scenario.sessions.drawn_as.as_deref())
    }

    /// The expert planner (the oracle) of the task seed `seed` runs.
    pub fn expert(&self, seed: u64) -> Box<dyn Agent> {
        self.model.expert(self.task_index(seed))
    }

    /// Runs one seed. `agent` receives the expert and the seed's streams and returns
    /// the agent to run (the expert itself, or a stack around a planner around it).
    pub fn run(
        &self,
        seed: u64,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        self.run_trial(seed, 0, config, agent)
    }

    /// Runs the `trial`-th independent attempt at one seed (for pass^k): the same
    /// world, user and tool streams as trial 0, different agent streams (see
    /// [`StreamSource::with_trial`]). Trial 0 is exactly [`Prepared::run`].
    pub fn run_trial(
        &self,
        seed: u64,
        trial: u32,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        self.run_with(seed, trial, config, &self.catalog, None, agent)
    }

    /// This seed's swarm draw (see [`crate::swarm`]), or `None` when the scenario
    /// has no swarm section.
    pub fn swarm_draw(&self, seed: u64) -> Option<SwarmDraw> {
        (!self.scenario.swarm.is_empty())
            .then(|| self.scenario.swarm.draw(&self.catalog, &mut self.streams(seed).stream("swarm")))
    }

    /// Runs one seed in swarm mode: with the fault parameters this seed draws from
    /// the scenario's ranges, recorded as a `swarm` note at t=0. The same as
    /// [`Prepared::run`] for a scenario without a swarm section.
    pub fn run_swarm(
        &self,
        seed: u64,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        self.run_swarm_trial(seed, 0, config, agent)
    }

    /// [`Prepared::run_swarm`] for the `trial`-th attempt (pass^k in swarm mode).
    pub fn run_swarm_trial(
        &self,
        seed: u64,
        trial: u32,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        match self.swarm_draw(seed) {
            Some(draw) => self.run_with(seed, trial, config, &draw.catalog, Some(draw.note()), agent),
            None => self.run_trial(seed, trial, config, agent),
        }
    }

    /// Runs the `trial`-th attempt at one seed with an agent per session,
    /// each made by `agent` from its session's expert and streams: a run of
    /// many sessions (`sessions` in the scenario), or of one. Swarm mode when
    /// `swarm` is set (see [`Prepared::run_swarm`]).
    pub fn run_each(
        &self,
        seed: u64,
        trial: u32,
        swarm: bool,
        config: &SimConfig,
        agent: &MakeAgent<'_>,
    ) -> Trajectory {
        let draw = if swarm { self.swarm_draw(seed) } else { None };
        let (catalog, note) = match &draw {
            Some(draw) => (&draw.catalog, Some(draw.note())),
            None => (&self.catalog, None),
        };
        // Trials explore interleavings (the agents as in trial 0), or the agents.
        let explored;
        let (config, trial) = if config.sessions.explores_interleavings() && trial > 0 {
            explored = SimConfig { interleaving: trial, ..config.clone() };
            (&explored, 0)
        } else {
            (config, trial)
        };
        if config.sessions.runs_alone() {
            return self.run_with(seed, trial, config, catalog, note, agent);
        }
        assert!(
            config.sessions.count <= self.model.sessions_max(),
            "the world holds at most {} sessions (checked when the scenario is read)",
            self.model.sessions_max()
        );
        let streams = self.streams(seed).with_trial(trial);
        let task_of = |session: SessionId| self.session_task(seed, session);
        let mut each = |session: SessionId| agent(self.model.expert(task_of(session)), &streams.with_session(session));
        let config = self.voiced(config);
        self.model.run_sessions(&task_of, catalog, &streams, &config, &mut each, note)
    }

    /// Refuses a scenario of many sessions for an agent driven one step at a
    /// time from outside (a Python agent's episodes): such an agent is one
    /// session.
    pub fn one_session(&self) -> Result<(), ManySessions> {
        match self.scenario.sessions.count {
            _ if self.scenario.sessions.runs_alone() => Ok(()),
            count => Err(ManySessions { scenario: self.scenario.name.clone(), count }),
        }
    }

    /// The task session `session` of seed `seed` runs: the task seed
    /// `seed + session` would run alone, so the sessions of one run take the
    /// tasks in turn.
    pub fn session_task(&self, seed: u64, session: SessionId) -> usize {
        let drawn_as = self.scenario.sessions.drawn_as(session);
        self.task_index(seed.wrapping_add(u64::from(drawn_as)))
    }

    fn run_with(
        &self,
        seed: u64,
        trial: u32,
        config: &SimConfig,
        catalog: &Catalog,
        swarm_note: Option<Value>,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        assert_eq!(config.sessions.count, 1, "a run of many sessions makes an agent per session (Prepared::run_each)");
        let streams = self.streams(seed).with_trial(trial);
        let task = self.task_index(seed);
        let mut agent = agent(self.model.expert(task), &streams);
        self.model.run(task, catalog, &streams, &self.voiced(config), &mut *agent, swarm_note)
    }

    /// `config` with the scenario's voice speaking for the user and its judge
    /// reading, when it names them and `config` has none of its own.
    fn voiced<'c>(&self, config: &'c SimConfig) -> std::borrow::Cow<'c, SimConfig> {
        let voice = self.voice.0.is_some() && config.user_voice.0.is_none();
        let judge = self.judge.0.is_some() && config.judge.0.is_none();
        if !(voice || judge) {
            return std::borrow::Cow::Borrowed(config);
        }
        let mut owned = config.clone();
        if voice {
            owned.user_voice = self.voice.clone();
        }
        if judge {
            owned.judge = self.judge.clone();
        }
        std::borrow::Cow::Owned(owned)
    }

    /// Sets who reads what the world's rules cannot decide in every run: a
    /// judge (a model, set up from the scenario's `judge` by the runner), or
    /// nobody (`None`).
    pub fn set_judge(&mut self, judge: Option<Arc<dyn agentsim_engine::ReadingJudge>>) {
        self.judge = agentsim_engine::JudgeSlot(judge);
    }

    /// Whether a judge reads ([`Prepared::set_judge`]).
    pub fn has_judge(&self) -> bool {
        self.judge.0.is_some()
    }

    /// Sets who speaks for the user in every run: a voice made by `factory`
    /// (a model, set up from the scenario's `user` by the runner), or the
    /// world's rules (`None`).
    pub fn set_user_voice(&mut self, factory: Option<Arc<dyn agentsim_engine::VoiceFactory>>) {
        self.voice = agentsim_engine::VoiceSlot(factory);
    }

    /// Whether a voice speaks for the user ([`Prepared::set_user_voice`]).
    pub fn has_user_voice(&self) -> bool {
        self.voice.0.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_before_an_error_is_named() {
        let text = "Scenario(\n    name: \"x\",\n    horizon_ms: \"ten\",\n)";
        assert_eq!(field_before(text, 3, 17).as_deref(), Some("horizon_ms"));
        assert_eq!(field_before("abc", 1, 2), None);
    }

    #[test]
    fn a_scripted_world_is_compiled_once_and_again_only_when_edited() {
        let text = r#"Scenario(name: "kept", world: Scripted(
            tables: [(name: "done", key: "step", rows: [])],
            script: Inline(origin: "kept.rhai", text: "fn echo(args) { args }"),
            tools: [
                (name: "call", kind: Write, record: (table: "done", key: "step"),
                 args: {"type": "object", "properties": {"step": {"type": "integer"}}, "required": ["step"]}),
                (name: "echo", kind: Read),
            ],
            tasks: [(id: "t", facts: {}, request: "Go.", gold: [(tool: "call", args: {"step": 1})])],
        ))"#;
        let scenario = Scenario::parse(text, "kept").expect("a valid scenario");
        let WorldConfig::Scripted(config) = &scenario.world else { panic!("a scripted world") };
        let kept = config.compiled.model_of(config).expect("the model compiled by the check is kept");
        // The slot is no part of the scenario: not in its key, nor in a comparison.
        let mut bare = scenario.clone();
        if let WorldConfig::Scripted(c) = &mut bare.world {
            c.compiled = crate::scripted::Compiled::default();
        }
        assert_eq!(bare.key(), scenario.key());
        assert_eq!(bare, scenario);
        assert_eq!(agentsim_engine::rng::key_of(&bare), agentsim_engine::rng::key_of(&scenario));
        // Prepared with the kept model (one more holder of it), not a new one.
        let before = Arc::strong_count(&kept);
        let prepared = Prepared::new(scenario.clone());
        assert_eq!(Arc::strong_count(&kept), before + 2, "the clone's slot and the prepared model hold it");
        drop(prepared);
        assert_eq!(Arc::strong_count(&kept), before);
        // Without a kept model, or once edited, the model is compiled anew.
        let prepared = Prepared::new(bare);
        assert_eq!(Arc::strong_count(&kept), before, "a model of its own");
        assert_eq!(prepared.task_of(0).as_deref(), Some("t"));
        let mut edited = scenario.clone();
        let WorldConfig::Scripted(c) = &mut edited.world else { panic!("a scripted world") };
        c.tasks[0].request = "Go now.".into();
        assert!(c.compiled.model_of(c).is_none(), "an edited configuration is compiled again");
        for (_, tool) in c.tool_configs_mut() {
            tool.timeout_ms = tool.timeout_ms.saturating_add(1);
        }
        c.tasks[0].request = "Go.".into();
        assert!(c.compiled.model_of(c).is_none(), "so is one whose tools' settings changed");
    }

    #[test]
    fn locate_points_at_the_value() {
        assert_eq!(locate("a\n  b: \"X\"\n", "\"X\""), (2, 6));
        assert_eq!(locate("abc", "zzz"), (1, 1));
    }
}
