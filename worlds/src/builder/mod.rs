//! A world built from closures: tools named as strings, typed faults,
//! handlers keyed by tool name over the world's state, the user's opening
//! words, a judge, and an expert (a plan the default expert follows, one of
//! the author's own, or none). The builder adds the `escalate` tool (every
//! world's hand-over to a human, `kit::escalation`) and `authenticate` (the
//! engine's session renewal), and every write service it builds honours
//! idempotency keys.
//!
//! ```
//! use agentsim_engine::{ToolDef, ToolKind, Value, ValueKind};
//! use agentsim_worlds::builder::{FaultSpec, Plan, Says, WorldBuilder};
//!
//! #[derive(Default)]
//! struct Counter { clicks: i64 }
//!
//! let world = WorldBuilder::new("counter", |_rng| Counter::default())
//!     .tool(ToolDef::new("click", ToolKind::Write, "Clicks once.").field("clicks", ValueKind::Int))
//!     .fault("click", FaultSpec::error(503).rate(0.1))
//!     .handle("click", |c, _call| {
//!         c.clicks += 1;
//!         Ok(Value::map([("clicks", Value::Int(c.clicks))]))
//!     })
//!     .opening(|_| Says::new("Click it once, please."))
//!     .judge(|c| c.clicks == 1)
//!     .plan(Plan::new().call("click", |_| Value::Map(Vec::new())))
//!     .build()
//!     .unwrap();
//! assert!(world.has_expert());
//! ```
//!
//! Without [`WorldBuilder::plan`] or [`WorldBuilder::expert`] the world has
//! no expert: the planners that wrap it (every preset) give up at once with
//! [`NO_EXPERT`] as their reason, and an agent of one's own (an external
//! process, a model, a Python agent) runs as in any world.

mod error;
mod faults;
mod model;
mod plan;
mod world;

use std::sync::Arc;

use agentsim_engine::{
    Agent, Catalog, Latency, Stream, TimeMs, ToolConfig, ToolDef, ToolError, ToolKind, Value, ValueKind,
};

pub use error::{BuildError, BuildErrorKind};
pub use faults::{FaultSpec, fixed_ms, log_normal_ms, uniform_ms};
pub use plan::{Known, NO_EXPERT, Plan};
pub use world::{Call, Says};

use crate::kit::catalog::specs_with_authenticate;
use crate::{Prepared, Scenario};
use model::{Expert, Init, MakeExpert, Model};
use world::{Handler, Hear, Judge, Opening, Rules};

/// The tool every built world adds for handing the case to a human.
pub const ESCALATE: &str = "escalate";

/// A world under construction; [`WorldBuilder::build`] checks it whole.
pub struct WorldBuilder<S> {
    name: String,
    description: String,
    horizon_ms: Option<TimeMs>,
    init: Init<S>,
    tools: Vec<ToolDef>,
    /// Per tool name, in the order given: what changes its configuration.
    configs: Vec<(String, Setting)>,
    handlers: Vec<(String, Handler<S>)>,
    opening: Option<Opening<S>>,
    hear: Option<Hear<S>>,
    judge: Option<Judge<S>>,
    expert: Choice,
}

/// One change to a tool's configuration.
enum Setting {
    Fault(FaultSpec),
    Latency(Latency),
    TimeoutMs(TimeMs),
}

/// The expert asked for.
enum Choice {
    Plan(Plan),
    Own(MakeExpert),
    None,
}

impl<S: 'static> WorldBuilder<S> {
    /// A world called `name` whose state, for each seed, `init` makes from
    /// the world's own random stream (draw the user's wish there).
    pub fn new(name: &str, init: impl Fn(&mut Stream) -> S + Send + Sync + 'static) -> Self {
        WorldBuilder {
            name: name.to_string(),
            description: String::new(),
            horizon_ms: None,
            init: Arc::new(init),
            tools: Vec::new(),
            configs: Vec::new(),
            handlers: Vec::new(),
            opening: None,
            hear: None,
            judge: None,
            expert: Choice::None,
        }
    }

    /// What the world is about (shown in reports).
    pub fn description(mut self, text: &str) -> Self {
        self.description = text.to_string();
        self
    }

    /// The virtual time limit of each trajectory (default 30 minutes).
    pub fn horizon_ms(mut self, ms: TimeMs) -> Self {
        self.horizon_ms = Some(ms);
        self
    }

    /// A tool the agent may call (its name, arguments and answer's fields:
    /// the engine's [`ToolDef`], or [`read_tool`] and [`write_tool`]).
    pub fn tool(mut self, def: ToolDef) -> Self {
        self.tools.push(def);
        self
    }

    /// What the tool `tool` does: `handler` reads and changes the state and
    /// answers (an error is the service's answer, a 404 or a 409).
    pub fn handle(
        mut self,
        tool: &str,
        handler: impl Fn(&mut S, &mut Call<'_, '_>) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.push((tool.to_string(), Arc::new(handler)));
        self
    }

    /// A fault rule on `tool` (rules apply in the order given; the first that
    /// fires decides).
    pub fn fault(mut self, tool: &str, fault: FaultSpec) -> Self {
        self.configs.push((tool.to_string(), Setting::Fault(fault)));
        self
    }

    /// The latency of `tool`'s successful calls (default uniform 50..=250 ms).
    pub fn latency(mut self, tool: &str, latency: Latency) -> Self {
        self.configs.push((tool.to_string(), Setting::Latency(latency)));
        self
    }

    /// How long the client waits for `tool` before it gives up (default 10 s).
    pub fn timeout_ms(mut self, tool: &str, ms: TimeMs) -> Self {
        self.configs.push((tool.to_string(), Setting::TimeoutMs(ms)));
        self
    }

    /// What the user says first, from the seed's state. Without it the user
    /// opens with the world's description (or `Hello.` when it has none).
    pub fn opening(mut self, says: impl Fn(&S) -> Says + Send + Sync + 'static) -> Self {
        self.opening = Some(Arc::new(says));
        self
    }

    /// How the user answers the agent's words (`None`: no answer). Without
    /// it the user does not answer words.
    pub fn hear(mut self, hear: impl Fn(&mut S, &str) -> Option<Says> + Send + Sync + 'static) -> Self {
        self.hear = Some(Arc::new(hear));
        self
    }

    /// Whether the task is done, judged from the final state (a minefield
    /// makes the trajectory a violation whatever this says).
    pub fn judge(mut self, success: impl Fn(&S) -> bool + Send + Sync + 'static) -> Self {
        self.judge = Some(Arc::new(success));
        self
    }

    /// The default expert, following `plan`.
    pub fn plan(mut self, plan: Plan) -> Self {
        self.expert = Choice::Plan(plan);
        self
    }

    /// An expert of the author's own, made over the world's catalog.
    pub fn expert(mut self, make: impl Fn(&Catalog) -> Box<dyn Agent> + Send + Sync + 'static) -> Self {
        self.expert = Choice::Own(Arc::new(make));
        self
    }

    /// Checks the world whole and makes it ready to run.
    pub fn build(self) -> Result<BuiltWorld, BuildError> {
        let scenario = self.scenario()?;
        let catalog = self.catalog()?;
        let handlers = self.handlers_by_id(&catalog)?;
        let judge = self.judge.ok_or_else(|| {
            BuildError::new(BuildErrorKind::MissingJudge, &self.name, "the world has no judge (`judge`)")
        })?;
        let id = |name: &str| catalog.id(name).expect("the builder added this tool");
        let (escalate, authenticate) = (id(ESCALATE), id(agentsim_engine::tool::AUTHENTICATE));
        let expert = match self.expert {
            Choice::Plan(plan) => Expert::Plan(Arc::new(plan.resolve(&catalog)?)),
            Choice::Own(make) => Expert::Own(make),
            Choice::None => Expert::None,
        };
        let has_expert = !matches!(expert, Expert::None);
        let writes = catalog.specs().iter().map(|s| s.def.kind == ToolKind::Write).collect();
        let opening = self.opening.unwrap_or_else(|| {
            let text = if self.description.is_empty() { "Hello.".to_string() } else { self.description.clone() };
            Arc::new(move |_: &S| Says::new(text.clone()))
        });
        let rules = Arc::new(Rules { handlers, writes, escalate, opening, hear: self.hear, judge });
        let model = Model { init: self.init, rules, expert, catalog: catalog.clone(), authenticate };
        Ok(BuiltWorld { prepared: Prepared::from_model(scenario, catalog, Arc::new(model)), has_expert })
    }

    fn scenario(&self) -> Result<Scenario, BuildError> {
        let bad = |message: String| BuildError::new(BuildErrorKind::BadScenario, &self.name, message);
        let chars = self.name.chars().count();
        if !(1..=crate::scenario::NAME_CHARS_MAX).contains(&chars) {
            return Err(bad(format!(
                "a world's name has 1..={} characters, found {chars}",
                crate::scenario::NAME_CHARS_MAX
            )));
        }
        let mut scenario = Scenario::named(&self.name, &self.name);
        scenario.description.clone_from(&self.description);
        if let Some(ms) = self.horizon_ms {
            if !(1..=agentsim_engine::TIME_MS_MAX).contains(&ms) {
                return Err(bad(format!(
                    "the horizon is 1..={} ms (ten years), found {ms}",
                    agentsim_engine::TIME_MS_MAX
                )));
            }
            scenario.horizon_ms = ms;
        }
        Ok(scenario)
    }

    /// The declared tools, then `escalate` and `authenticate`, each with its
    /// settings applied and checked.
    fn catalog(&self) -> Result<Catalog, BuildError> {
        let mut defs = self.tools.clone();
        for (i, def) in defs.iter().enumerate() {
            if is_added(&def.name) {
                return Err(BuildError::new(
                    BuildErrorKind::ReservedTool,
                    &def.name,
                    "the builder adds this tool itself: it is not declared",
                ));
            }
            if defs[..i].iter().any(|d| d.name == def.name) {
                return Err(BuildError::new(BuildErrorKind::DuplicateTool, &def.name, "two tools have this name"));
            }
        }
        if defs.len() + 2 >= usize::from(u16::MAX) {
            let message = format!("a world has fewer than {} tools, found {}", u16::MAX - 2, defs.len());
            return Err(BuildError::new(BuildErrorKind::BadScenario, &self.name, message));
        }
        defs.push(escalate_def());
        let mut configs: Vec<ToolConfig> = vec![ToolConfig::default(); defs.len() + 1];
        let authenticate = agentsim_engine::tool::AUTHENTICATE;
        for (tool, setting) in &self.configs {
            let index = match defs.iter().position(|d| d.name == *tool) {
                Some(i) => i,
                None if tool == authenticate => defs.len(),
                None => return Err(unknown(tool, "a fault, latency or timeout names", &defs)),
            };
            let config = &mut configs[index];
            match setting {
                Setting::Fault(fault) => config.faults.push(fault.rule(tool)?),
                Setting::Latency(latency) => config.latency = latency.clone(),
                Setting::TimeoutMs(ms) => config.timeout_ms = *ms,
            }
        }
        let names = defs.iter().map(|d| d.name.as_str()).chain([authenticate]);
        let configs = names.zip(configs).map(|(name, c)| faults::checked(name, c)).collect::<Result<Vec<_>, _>>()?;
        let (authenticate_config, tool_configs) = configs.split_last().expect("escalate and authenticate at least");
        let catalog = Catalog::new(specs_with_authenticate(defs.into_iter().zip(tool_configs), authenticate_config));
        catalog
            .check_fault_paths()
            .map_err(|e| BuildError::new(BuildErrorKind::FaultDoesNotFit, &e.tool, e.message))?;
        Ok(catalog)
    }

    /// The handlers in tool-id order; every declared tool has exactly one.
    fn handlers_by_id(&self, catalog: &Catalog) -> Result<Vec<Option<Handler<S>>>, BuildError> {
        let mut by_id: Vec<Option<Handler<S>>> = vec![None; catalog.specs().len()];
        for (tool, handler) in &self.handlers {
            if is_added(tool) {
                return Err(BuildError::new(
                    BuildErrorKind::ReservedTool,
                    tool,
                    "the builder serves this tool itself: it takes no handler",
                ));
            }
            let Some(id) = catalog.id(tool) else {
                return Err(unknown(tool, "a handler is given for", &self.tools));
            };
            let slot = &mut by_id[id.0 as usize];
            if slot.is_some() {
                return Err(BuildError::new(BuildErrorKind::DuplicateHandler, tool, "the tool has two handlers"));
            }
            *slot = Some(Arc::clone(handler));
        }
        if let Some(def) =
            self.tools.iter().find(|d| catalog.id(&d.name).is_some_and(|id| by_id[id.0 as usize].is_none()))
        {
            return Err(BuildError::new(
                BuildErrorKind::MissingHandler,
                &def.name,
                "the tool has no handler (`handle`)",
            ));
        }
        Ok(by_id)
    }
}

/// Whether the builder adds the tool `name` itself.
fn is_added(name: &str) -> bool {
    name == ESCALATE || name == agentsim_engine::tool::AUTHENTICATE
}

/// The error for a name that is no tool of `defs`, listing the tools.
fn unknown(tool: &str, what: &str, defs: &[ToolDef]) -> BuildError {
    let known: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    BuildError::new(
        BuildErrorKind::UnknownTool,
        tool,
        format!("{what} a tool the world does not declare (its tools: {})", known.join(", ")),
    )
}

/// The `escalate` tool of a built world: an optional reason, a ticket back.
fn escalate_def() -> ToolDef {
    ToolDef::new(ESCALATE, ToolKind::Write, "Hands the case to a human.")
        .arg("reason", ValueKind::Str, false)
        .field("ticket_id", ValueKind::Str)
}

/// A read tool: it changes nothing, so it is safe to retry.
pub fn read_tool(name: &str, description: &str) -> ToolDef {
    ToolDef::new(name, ToolKind::Read, description)
}

/// A write tool: it changes the world; a blind retry may apply it twice.
pub fn write_tool(name: &str, description: &str) -> ToolDef {
    ToolDef::new(name, ToolKind::Write, description)
}

/// A world ready to run: sweep it (`agentsim::prelude::sweep`), or run seeds
/// through its [`Prepared`].
#[derive(Clone)]
pub struct BuiltWorld {
    prepared: Prepared,
    has_expert: bool,
}

impl BuiltWorld {
    /// The world as every runner takes it.
    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    /// Whether the world has an expert (a plan or the author's own).
    pub fn has_expert(&self) -> bool {
        self.has_expert
    }
}

impl From<BuiltWorld> for Prepared {
    fn from(world: BuiltWorld) -> Prepared {
        world.prepared
    }
}
