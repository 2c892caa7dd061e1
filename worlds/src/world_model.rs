//! What a world is to the rest of the crate: the interfaces a world kind
//! implements ([`WorldKind`] for its configuration, [`WorldModel`] for its
//! runs, [`BuiltinWorld`] for a built-in world's three parts) and the wrapper
//! every run goes through ([`run_world`], `Noted`). Its own home, below the
//! registry in `scenario.rs` that names every world, so that a world imports
//! these without importing the registry that imports it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use agentsim_engine::{
    Agent, Catalog, SessionId, SimConfig, StreamSource, TimeMs, ToolCall, ToolError, Trajectory, Value, Verdict, World,
    WorldCx,
};

/// What makes each session's agent in a run of many sessions.
pub type SessionAgents<'a> = dyn FnMut(SessionId) -> Box<dyn Agent> + 'a;

/// What a world kind's configuration (a scenario's `world` section) provides.
pub trait WorldKind {
    /// Cross-checks serde cannot express: the first problem, located by its
    /// field path and the value to point at.
    fn check(&self) -> Result<(), ConfigError>;
    /// The tools.
    fn catalog(&self) -> Catalog;
    /// Every tool's configuration, by tool name (to make a fault schedule
    /// explicit, to apply a trace).
    fn tool_configs_mut(&mut self) -> Vec<(String, &mut agentsim_engine::ToolConfig)>;
    /// The world, ready to run, over `catalog` (built by [`WorldKind::catalog`]).
    fn model(&self, catalog: &Catalog) -> Arc<dyn WorldModel>;
    /// How many sessions one run can hold: 1 for a world of one user (see
    /// `World::sessions_max`).
    fn sessions_max(&self) -> u32 {
        1
    }
}

/// The name of a world written in Rust outside this crate
/// ([`WorldConfig::Named`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NamedWorld(pub String);

impl WorldKind for NamedWorld {
    fn check(&self) -> Result<(), ConfigError> {
        let name = &self.0;
        Err(ConfigError::new(
            ConfigErrorKind::NotBuiltIn,
            "",
            name.clone(),
            format!(
                "world `{name}` is not built in: a world written in Rust outside agentsim runs through Prepared::from_model, not from a file"
            ),
        ))
    }

    fn catalog(&self) -> Catalog {
        Catalog::new(Vec::new())
    }

    fn tool_configs_mut(&mut self) -> Vec<(String, &mut agentsim_engine::ToolConfig)> {
        Vec::new()
    }

    fn model(&self, _catalog: &Catalog) -> Arc<dyn WorldModel> {
        Arc::new(Unregistered(self.0.clone()))
    }
}

/// A world ready to run: what a world kind builds once per process from its
/// configuration and the catalog, and every trajectory of every thread reads.
/// The built-in worlds and scripted worlds implement it, and so can a world
/// written outside this crate ([`Prepared::from_model`]).
pub trait WorldModel: Send + Sync {
    /// The expert (oracle) of task `task`.
    fn expert(&self, task: usize) -> Box<dyn Agent>;

    /// Runs task `task` with `agent` on the seed of `streams`; `note`, when
    /// given, is recorded at t=0 (the swarm draw).
    fn run(
        &self,
        task: usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agent: &mut dyn Agent,
        note: Option<Value>,
    ) -> Trajectory;

    /// How many sessions one run can hold: 1 for a world of one user.
    fn sessions_max(&self) -> u32 {
        1
    }

    /// Runs a run of many sessions (the scenario's `sessions`): session `s`
    /// does task `task_of(s)` with the agent `agents(s)`; `note` as in
    /// [`WorldModel::run`]. Called only when [`WorldModel::sessions_max`]
    /// allows the sessions asked for.
    fn run_sessions(
        &self,
        task_of: &dyn Fn(SessionId) -> usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agents: &mut SessionAgents<'_>,
        note: Option<Value>,
    ) -> Trajectory {
        let _ = (task_of, catalog, streams, config, agents, note);
        unreachable!("a world of one session is never asked to run many")
    }

    /// The ids of the world's tasks, in order; empty for a world with one
    /// implicit task (the built-in worlds draw theirs per seed).
    fn tasks(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the world hashes its final state (a `state_hash` column in
    /// `trajectories.csv`).
    fn hashes_state(&self) -> bool {
        false
    }

    /// Whether the world reports its judgement's parts ([`World::checks`]: a
    /// `checks` column in `trajectories.csv`).
    ///
    /// [`World::checks`]: agentsim_engine::World::checks
    fn has_checks(&self) -> bool {
        false
    }

    /// How many turns each task takes in the seeds' rotation, in the order of
    /// [`WorldModel::tasks`] (empty: one each).
    fn task_weights(&self) -> Vec<u32> {
        Vec::new()
    }
}

/// A built-in world's model: its configuration and the tool ids it finds in
/// the catalog. `new` makes the world of one seed, `expert` its expert.
pub struct Builtin<C, I> {
    config: C,
    ids: I,
}

/// What is wrong with a world's configuration, for a caller to match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigErrorKind {
    /// An id appears twice in a list.
    DuplicateId,
    /// A list the world draws from is empty.
    Empty,
    /// An interval between the world's own events is always 0.
    ZeroInterval,
    /// A persona weight is negative or not finite, or all are zero.
    PersonaWeight,
    /// A number is outside its range (or two bounds are out of order).
    OutOfRange,
    /// A reference names something the configuration does not hold.
    UnknownReference,
    /// The values are each fine, but together a seed could draw a task that
    /// cannot be done.
    Unsatisfiable,
    /// A world named by a file is not built in (a world written in Rust
    /// outside this crate runs only from code).
    NotBuiltIn,
}

/// A problem in a world's configuration: its kind, the field path it is
/// about (inside the scenario's `world` section), the value to point at in
/// the scenario's text, and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// What is wrong.
    pub kind: ConfigErrorKind,
    /// The field path, like `customers[2].id`.
    pub field: String,
    /// The value (or field name) to point at in the text.
    pub needle: String,
    /// What is wrong, in words.
    pub message: String,
}

impl ConfigError {
    /// A problem of `kind` at `field`, pointed at by `needle`.
    pub fn new(
        kind: ConfigErrorKind,
        field: impl Into<String>,
        needle: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self { kind, field: field.into(), needle: needle.into(), message: message.into() }
    }

    /// A problem of `kind` at `field`, pointed at by the field's own name.
    pub fn at_field(kind: ConfigErrorKind, field: &str, message: impl Into<String>) -> Self {
        Self::new(kind, field, field, message)
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// What a built-in world (one folder of this crate) provides: its
/// configuration's checks and tools, and what runs it. Every `BuiltinWorld`
/// is a [`WorldKind`].
pub trait BuiltinWorld: Clone + Sized + Send + Sync + 'static {
    /// The tool ids the world and its expert use.
    type Ids: Copy + Send + Sync + 'static;
    /// Cross-checks serde cannot express: the first problem, located by its
    /// field path (see [`WorldKind::check`]).
    fn check(&self) -> Result<(), ConfigError>;
    /// The tools with their configuration.
    fn specs(&self) -> Vec<agentsim_engine::ToolSpec>;
    /// Every tool's configuration, by tool name.
    fn configs_mut(&mut self) -> Vec<(&'static str, &mut agentsim_engine::ToolConfig)>;
    /// Finds the ids in a catalog built from this configuration.
    fn ids(catalog: &Catalog) -> Option<Self::Ids>;
    /// The expert.
    fn expert(ids: Self::Ids) -> Box<dyn Agent>;
    /// Runs one seed.
    fn run(
        &self,
        ids: Self::Ids,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agent: &mut dyn Agent,
        note: Option<Value>,
    ) -> Trajectory;
    /// How many sessions one run can hold (1: one user per run).
    fn sessions_max(&self) -> u32 {
        1
    }
    /// Runs one seed of many sessions (see [`WorldModel::run_sessions`]).
    fn run_sessions(
        &self,
        ids: Self::Ids,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agents: &mut SessionAgents<'_>,
        note: Option<Value>,
    ) -> Trajectory;
}

impl<C: BuiltinWorld> WorldModel for Builtin<C, C::Ids> {
    fn expert(&self, _task: usize) -> Box<dyn Agent> {
        C::expert(self.ids)
    }

    fn run(
        &self,
        _task: usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agent: &mut dyn Agent,
        note: Option<Value>,
    ) -> Trajectory {
        self.config.run(self.ids, catalog, streams, config, agent, note)
    }

    fn sessions_max(&self) -> u32 {
        BuiltinWorld::sessions_max(&self.config)
    }

    fn run_sessions(
        &self,
        _task_of: &dyn Fn(SessionId) -> usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agents: &mut SessionAgents<'_>,
        note: Option<Value>,
    ) -> Trajectory {
        self.config.run_sessions(self.ids, catalog, streams, config, agents, note)
    }
}

impl<C: BuiltinWorld> WorldKind for C {
    fn check(&self) -> Result<(), ConfigError> {
        BuiltinWorld::check(self)
    }

    fn catalog(&self) -> Catalog {
        Catalog::new(self.specs())
    }

    fn tool_configs_mut(&mut self) -> Vec<(String, &mut agentsim_engine::ToolConfig)> {
        self.configs_mut().into_iter().map(|(n, c)| (n.to_string(), c)).collect()
    }

    fn model(&self, catalog: &Catalog) -> Arc<dyn WorldModel> {
        let ids = C::ids(catalog).expect("a built-in world's catalog has its tools");
        Arc::new(Builtin { config: self.clone(), ids })
    }

    fn sessions_max(&self) -> u32 {
        BuiltinWorld::sessions_max(self)
    }
}

/// Runs a built-in world's trajectory: the one line each world's `run` is.
pub fn run_world<W: World>(
    world: W,
    catalog: &Catalog,
    streams: &StreamSource,
    config: &SimConfig,
    agent: &mut dyn Agent,
    note: Option<Value>,
) -> Trajectory {
    agentsim_engine::sim::run(Noted::new(world, note), agent, catalog, streams, config)
}

/// Runs a built-in world's trajectory of many sessions.
pub fn run_world_sessions<W: World>(
    world: W,
    catalog: &Catalog,
    streams: &StreamSource,
    config: &SimConfig,
    agents: &mut SessionAgents<'_>,
    note: Option<Value>,
) -> Trajectory {
    let mut each = |session: SessionId| -> Box<dyn Agent + '_> { agents(session) };
    let agents = agentsim_engine::sim::Agents::Each(&mut each);
    agentsim_engine::sim::run_sessions(Noted::new(world, note), agents, catalog, streams, config)
}

/// A world that first records a note at t=0 (the swarm draw), then is `W`.
pub(crate) struct Noted<W> {
    world: W,
    note: Option<Value>,
}

impl<W> Noted<W> {
    pub(crate) fn new(world: W, note: Option<Value>) -> Self {
        Noted { world, note }
    }
}

impl<W: World> World for Noted<W> {
    type Event = W::Event;

    fn start(&mut self, cx: &mut WorldCx<'_, W::Event>) {
        if let Some(note) = self.note.take() {
            cx.note("swarm", note);
        }
        self.world.start(cx);
    }

    fn on_event(&mut self, event: W::Event, cx: &mut WorldCx<'_, W::Event>) {
        self.world.on_event(event, cx);
    }

    fn handle(
        &mut self,
        call: &ToolCall,
        as_of_ms: TimeMs,
        cx: &mut WorldCx<'_, W::Event>,
    ) -> Result<Value, ToolError> {
        self.world.handle(call, as_of_ms, cx)
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, W::Event>) {
        self.world.hear(text, cx);
    }

    fn judge(&self) -> Verdict {
        self.world.judge()
    }

    fn sessions_max(&self) -> u32 {
        self.world.sessions_max()
    }

    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, W::Event>) {
        self.world.start_session(session, cx);
    }

    fn judge_session(&self, session: SessionId) -> Verdict {
        self.world.judge_session(session)
    }

    fn session_ended(&mut self, session: SessionId) {
        self.world.session_ended(session);
    }

    fn session_instructions(&self, session: SessionId) -> Option<String> {
        self.world.session_instructions(session)
    }

    fn session_hurt_by(&self, session: SessionId) -> Option<SessionId> {
        self.world.session_hurt_by(session)
    }

    fn user_instructions(&self) -> Option<String> {
        self.world.user_instructions()
    }

    fn state_hash(&self) -> Option<String> {
        self.world.state_hash()
    }

    fn checks(&self) -> Vec<agentsim_engine::Check> {
        self.world.checks()
    }
}

/// The model of a [`WorldConfig::Named`] world prepared without its model.
/// Unreachable from files (parsing refuses such worlds); from code, it is the
/// mistake of preparing one with [`Prepared::new`] instead of
/// [`Prepared::from_model`], and says so.
struct Unregistered(String);

impl WorldModel for Unregistered {
    fn expert(&self, _task: usize) -> Box<dyn Agent> {
        panic!("world `{}` is not built in: prepare it with Prepared::from_model", self.0)
    }

    fn run(
        &self,
        _: usize,
        _: &Catalog,
        _: &StreamSource,
        _: &SimConfig,
        _: &mut dyn Agent,
        _: Option<Value>,
    ) -> Trajectory {
        panic!("world `{}` is not built in: prepare it with Prepared::from_model", self.0)
    }
}
