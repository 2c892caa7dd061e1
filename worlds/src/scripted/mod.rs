//! Scripted worlds: a domain written as files instead of Rust.
//!
//! A scripted world is data (named tables of records, inline or in JSON and CSV
//! files beside the scenario), tools whose bodies are functions of a sandboxed
//! Rhai script, processes that run script functions on the virtual clock,
//! personas written as data, and tasks: the user's facts, the gold actions
//! that solve the task, success and milestone predicates, and minefields. The
//! expert follows the gold actions, so the noisy planner, every preset and
//! every stack work on it unchanged. `docs/worlds.md` is the user's guide.
//!
//! The scenario's canonical form (its key, what incidents embed) holds every
//! table and the script inline: files are read once, when the scenario is
//! loaded from its folder, and an incident replays without them.

mod data;
mod dynamic;
mod error;
mod expert;
mod extend;
mod intern;
mod lazy_stream;
mod load;
mod locate;
mod model;
mod native;
mod placeholders;
mod rebase;
mod schema;
mod script;
mod setting;
mod shared;
mod state;
mod template;
mod world;

use serde::{Deserialize, Serialize};

use agentsim_engine::{Latency, TimeMs, ToolConfig, ToolKind};

pub use data::Data;
pub use dynamic::{ValueError, to_dynamic, to_value};
pub use error::{FieldAt, LoadError, LoadErrorKind};
pub use extend::{
    ArgumentStyle, ArgumentStyleKind, Extension, SettingError, StateHashKind, StateHasher, install, installed,
};
pub use intern::intern;
pub use load::resolve;
pub use model::ScriptedModel;
pub use placeholders::MissingFact;
/// The script engine extensions register their functions in.
pub use rhai;
pub use schema::{ArgumentError, ArgumentErrorKind, Schema, SchemaError, SchemaErrorKind};
pub use setting::{ArgumentErrors, Setting, StateHash};
pub use state::{NoTable, State, Table, Tables};

/// Where text comes from: a file beside the scenario, or inline (what a loaded
/// scenario holds, and what incidents embed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Source {
    /// A path relative to the scenario's folder.
    File(String),
    /// The text itself, with the name of the file it came from (for errors).
    Inline {
        /// The file it was read from, or a name for it.
        origin: String,
        /// The text.
        text: String,
    },
}

/// A table of records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    /// The table's name, as scripts name it.
    pub name: String,
    /// The field of each record that identifies it (unique in the table). When
    /// the records come as a JSON object, its keys are the keys instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A JSON (a list of records, or an object of records by key) or CSV file
    /// beside the scenario; read at load into `rows`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The records, written inline (`[{"id": "A1", ...}, ...]`), or an object
    /// of records by key.
    #[serde(default)]
    pub rows: Data,
}

/// A tool body the engine runs itself: one record of `table`, keyed by the
/// argument `key` (a string, or an integer read as its decimal digits, as the
/// script's `get` and `put` take keys).
///
/// - A `Read` tool answers the record, or 404 `no record `KEY` in `TABLE``:
///   what `fn t(args) { let r = get(TABLE, args.KEY); if r == () { error(404,
///   ...) } else { r } }` does.
/// - A `Write` tool writes its arguments as the record and answers them: what
///   `fn t(args) { put(TABLE, args.KEY, args); args }` does.
///
/// One difference: a script's maps are ordered by key, while a record body
/// keeps the order of the table's record and of the arguments as sent. Where
/// that order is the keys' order (or a map has one key) the tables, answers and
/// trajectories are the script's, byte for byte; the interpreter does not run,
/// so the body costs a look-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordBody {
    /// The table.
    pub table: String,
    /// The argument that holds the record's key (a required argument).
    pub key: String,
}

/// A tool of a scripted world.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFile {
    /// The name agents call it by.
    pub name: String,
    /// What it does, for the tool list.
    #[serde(default)]
    pub description: String,
    /// `Read` (safe to retry) or `Write` (changes tables).
    pub kind: ToolKind,
    /// The arguments as a JSON Schema object (a subset: see
    /// [`schema`](self::schema)); checked before the body runs.
    #[serde(default)]
    pub args: Data,
    /// Arguments that are identifiers (the noisy planner can misread them).
    #[serde(default)]
    pub ids: Vec<String>,
    /// Top-level response fields and their JSON types (`{"order_id": "string"}`):
    /// what a validating planner checks, what malformed-data faults break and
    /// what drift renames.
    #[serde(default)]
    pub response: Data,
    /// Free annotations, passed to agents with the tool (MCP's `annotations`).
    #[serde(default)]
    pub annotations: Data,
    /// The script function that serves it (default: the tool's name). It takes
    /// one parameter, the arguments, and returns a value or `error(status, message)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Instead of a script function: the tool reads (a `Read` tool) or writes
    /// (a `Write` tool) one record of a table, by the key an argument holds, and
    /// the engine serves it without the script (see [`RecordBody`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordBody>,
    /// Latency, timeout, faults, drift: as for every tool.
    #[serde(default)]
    pub config: ToolConfig,
    /// Rules on the arguments the service documents but does not enforce
    /// (what the guardrail layer checks): `Positive(arg: ...)`,
    /// `AtMostSeen(arg: ..., key_arg: ..., source_tool: ..., source_key: ..., field: ...)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<ConstraintFile>,
}

/// A documented rule on a tool's arguments, as the engine's
/// [`Constraint`](agentsim_engine::Constraint) (checked against the tools when
/// the scenario loads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum ConstraintFile {
    /// The integer argument `arg` must be above zero.
    Positive {
        /// The argument.
        arg: String,
    },
    /// The integer argument `arg` must not exceed the integer `field` of the
    /// latest well-formed result of `source_tool` whose `source_key` equals this
    /// call's `key_arg`, and that record must have been looked up.
    AtMostSeen {
        /// The bounded argument.
        arg: String,
        /// This call's argument naming the record.
        key_arg: String,
        /// The read tool whose results give the bound.
        source_tool: String,
        /// The field of its result holding the record's key.
        source_key: String,
        /// The field holding the bound.
        field: String,
    },
}

impl ConstraintFile {
    /// The engine's constraint.
    pub fn to_engine(&self) -> agentsim_engine::Constraint {
        use agentsim_engine::Constraint;
        match self.clone() {
            ConstraintFile::Positive { arg } => Constraint::Positive { arg },
            ConstraintFile::AtMostSeen { arg, key_arg, source_tool, source_key, field } => {
                Constraint::AtMostSeen { arg, key_arg, source_tool, source_key, field }
            }
        }
    }
}

/// Who `send_message` is addressed to, when messages carry the user's id (as
/// support_desk's do): the argument is an identifier (a noisy planner can
/// misread it), an id not in `table` is a 404, and another user's id fires
/// `minefield` and is not delivered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipient {
    /// The argument of `send_message` naming the user (required).
    pub arg: String,
    /// The task's fact holding the user's own id.
    pub fact: String,
    /// The table of users.
    pub table: String,
    /// The minefield a message to another user fires.
    pub minefield: String,
}

/// A world event on the virtual clock that runs a script function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessFile {
    /// Its name (in the `process` note each run leaves).
    pub name: String,
    /// The script function to run (no parameters; it may change tables and draw
    /// `random()`).
    pub body: String,
    /// Runs once at this time.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "agentsim_engine::time::bounded_ms_opt"
    )]
    pub at_ms: Option<TimeMs>,
    /// Runs again and again, this long apart (drawn from the world's stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<Latency>,
}

/// How a simulated user talks: written as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaFile {
    /// Its name (in the `persona` note).
    pub name: String,
    /// How often it is drawn (relative).
    #[serde(default = "one")]
    pub weight: f64,
    /// The facts its opening message states (the agent must ask for the rest);
    /// all of them when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<String>>,
    /// The chance it changes its mind when asked to confirm (to the task's
    /// `alternative`, once).
    #[serde(default)]
    pub changes_mind: f64,
    /// How long it waits for the task to be done before it leaves.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "agentsim_engine::time::bounded_ms_opt"
    )]
    pub patience_ms: Option<TimeMs>,
}

fn one() -> f64 {
    1.0
}

fn one_u32() -> u32 {
    1
}

fn is_one(w: &u32) -> bool {
    *w == 1
}

/// The largest weight of a task.
pub const TASK_WEIGHT_MAX: u32 = 1_000;

/// One tool call of a task's gold solution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldAction {
    /// The tool.
    pub tool: String,
    /// Its arguments; a string `"{fact}"` is the task's fact of that name
    /// (asked of the user when the opening did not state it).
    #[serde(default)]
    pub args: Data,
    /// For a write whose answer may be lost (a timeout): the read that tells
    /// whether it was applied, and the predicate over its `result` that says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Verify>,
}

/// How the expert finds out whether a write that timed out was applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verify {
    /// The read tool.
    pub tool: String,
    /// Its arguments (facts as in gold actions).
    #[serde(default)]
    pub args: Data,
    /// A predicate over `result` (the read's answer) and `facts`.
    pub applied: String,
}

/// A milestone of a task: a predicate over the state and the calls so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MilestoneFile {
    /// Its name.
    pub name: String,
    /// Milestones that must come first (a DAG).
    #[serde(default)]
    pub after: Vec<String>,
    /// Reached the first time this predicate holds after a call.
    pub when: String,
}

/// An action that must never happen: a predicate over the call just made
/// (`call`) and the state after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinefieldFile {
    /// Its name (in `trajectories.csv` and the summary).
    pub name: String,
    /// Fires on each call after which this holds; absent for a minefield only a
    /// script fires (`minefield(name, detail)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// What a task's success means.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuccessFile {
    /// The final tables must equal those the gold actions produce (default true).
    #[serde(default = "yes")]
    pub state_equals_gold: bool,
    /// The tables compared (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<Vec<String>>,
    /// A predicate over the final state that must hold too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Strings the agent must tell the user (tau2-bench's `communicate_info`):
    /// each, lower-cased, must be in something the agent said to the user,
    /// lower-cased with its commas removed (tau2's rule, quirks included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub communicate: Vec<String>,
    /// Assertions in words about the conversation (tau2-bench's
    /// `nl_assertions`): reported as the check `nl_assertion`, never judged
    /// (they need a judge model).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nl_assertions: Vec<String>,
    /// The checks success requires (tau2-bench's `reward_basis`); default
    /// `[Db, Communicate]`. Every check a task declares is reported in the
    /// `checks` column, in the basis or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_basis: Option<Vec<Basis>>,
}

/// A part of a task's judgement (tau2-bench's reward basis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Basis {
    /// The final state: the gold state's tables, the `when` predicate, the
    /// milestones, the user still there.
    Db,
    /// Everything in `communicate` was said.
    Communicate,
    /// The `nl_assertions` (never judged: a task whose basis names it
    /// succeeds on its judged checks, and the column says `unjudged`).
    NlAssertion,
}

impl Basis {
    /// The check's name in the `checks` column.
    pub fn name(self) -> &'static str {
        match self {
            Basis::Db => "db",
            Basis::Communicate => "communicate",
            Basis::NlAssertion => "nl_assertion",
        }
    }
}

fn yes() -> bool {
    true
}

impl Default for SuccessFile {
    fn default() -> Self {
        SuccessFile {
            state_equals_gold: true,
            tables: None,
            when: None,
            communicate: Vec::new(),
            nl_assertions: Vec::new(),
            reward_basis: None,
        }
    }
}

/// What the user changes their mind to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlternativeFile {
    /// Facts that change.
    pub facts: Data,
    /// The gold actions of the changed request.
    pub gold: Vec<GoldAction>,
}

/// Gold actions for an opening that leaves facts out: the expert follows them
/// instead of asking the user for those facts (as a human agent finds an order
/// from the customer's account rather than asking for its number).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    /// The facts the opening does not state (all of them) for this plan to apply.
    pub unstated: Vec<String>,
    /// The tool calls that solve the task then; they must produce the same
    /// tables as the task's `gold`.
    pub gold: Vec<GoldAction>,
}

/// A task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// Its id (`sweep --tasks ID,ID`, the `task` column).
    pub id: String,
    /// What it is about.
    #[serde(default)]
    pub description: String,
    /// What the user knows: a map of facts.
    pub facts: Data,
    /// The user's opening message; `{fact}` is replaced by the fact's value.
    pub request: String,
    /// Opening messages by persona name, for personas that state fewer facts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub openings: Vec<(String, String)>,
    /// The tool calls that solve it, in order.
    pub gold: Vec<GoldAction>,
    /// Other gold actions for openings that leave facts out (the first plan
    /// that applies is followed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<PlanFile>,
    /// How many seeds of the rotation the task takes (default 1, at most
    /// [`TASK_WEIGHT_MAX`]): seed `s` runs the `s mod W`-th of the tasks, each
    /// repeated as often as its weight, `W` the sum of the weights.
    #[serde(default = "one_u32", skip_serializing_if = "is_one")]
    pub weight: u32,
    /// What a persona that changes its mind asks for instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative: Option<AlternativeFile>,
    /// What success means.
    #[serde(default)]
    pub success: SuccessFile,
    /// Milestones (a DAG of predicates).
    #[serde(default)]
    pub milestones: Vec<MilestoneFile>,
    /// Minefields of this task only.
    #[serde(default)]
    pub minefields: Vec<MinefieldFile>,
}

/// Limits on what one script call may do; a limit hit is a 500 and a note.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Operations per call (default 100,000).
    pub operations_max: u64,
    /// Nested function calls (default 32).
    pub call_depth_max: usize,
    /// Nesting of expressions (default 64).
    pub expr_depth_max: usize,
    /// Bytes of one string (default 65,536).
    pub string_bytes_max: usize,
    /// Items of one array (default 10,000).
    pub array_len_max: usize,
    /// Entries of one map (default 10,000).
    pub map_len_max: usize,
    /// Variables in scope (default 1,000).
    pub variables_max: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            operations_max: 100_000,
            call_depth_max: 32,
            expr_depth_max: 64,
            string_bytes_max: 65_536,
            array_len_max: 10_000,
            map_len_max: 10_000,
            variables_max: 1_000,
        }
    }
}

/// The scripted world's section of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedConfig {
    /// The tables.
    #[serde(default)]
    pub tables: Vec<TableConfig>,
    /// The script holding tool bodies and processes.
    pub script: Source,
    /// The tools.
    pub tools: Vec<ToolFile>,
    /// World events on the virtual clock.
    #[serde(default)]
    pub processes: Vec<ProcessFile>,
    /// How users talk (default: one persona that states every fact).
    #[serde(default)]
    pub personas: Vec<PersonaFile>,
    /// How long the user takes to answer (default uniform 4 to 30 s).
    #[serde(default = "default_reply_ms")]
    pub reply_ms: Latency,
    /// The tasks.
    pub tasks: Vec<TaskFile>,
    /// Minefields of every task.
    #[serde(default)]
    pub minefields: Vec<MinefieldFile>,
    /// Limits of every script call.
    #[serde(default)]
    pub limits: Limits,
    /// The user channel's tool, `send_message`: latency and faults.
    #[serde(default)]
    pub send_message: ToolConfig,
    /// The hand-over tool, `escalate`: latency and faults.
    #[serde(default)]
    pub escalate: ToolConfig,
    /// How the final state is hashed (a `state_hash` column in
    /// `trajectories.csv`): a hash an installed extension provides, by name
    /// (`NAME(field: value, ...)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_hash: Option<StateHash>,
    /// Gold actions may fail (tau2-bench's do: a lookup of a wrong name, an
    /// exchange the policy refuses): a gold call the world refuses on the gold
    /// replay is kept as one that fails, and the expert makes it and goes on,
    /// instead of the scenario being refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gold_may_fail: bool,
    /// How a call whose arguments do not fit its tool is refused (default
    /// `Schema`), or a style an installed extension provides, by name
    /// (`NAME(field: value, ...)`), which may also answer an unknown tool as a
    /// tool result.
    #[serde(default, skip_serializing_if = "ArgumentErrors::is_schema")]
    pub argument_errors: ArgumentErrors,
    /// Who messages are addressed to, when `send_message` names the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<Recipient>,
    /// More phrases that name a fact in what the agent writes, per fact name
    /// (`{"order_id": ["order reference"]}`), beside those its name gives
    /// (`docs/conversation.md`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub aliases: std::collections::BTreeMap<String, Vec<String>>,
    /// The model compiled when the scenario was checked
    /// ([`ScriptedConfig::check_and_keep`]): not part of the format (never
    /// written or read, equal in every comparison), taken by [`model`] while
    /// the configuration is still the one it was compiled from.
    #[serde(skip)]
    pub(crate) compiled: Compiled,
}

/// A model compiled from a configuration, with the digest of that
/// configuration ([`agentsim_engine::rng::key_of`]): a tau2 import's model
/// costs as much to compile as a thousand of its trajectories, and loading a
/// scenario checks it (compiling it) before it is prepared (compiling it
/// again). The digest makes the kept model safe whatever is edited between
/// the two: a configuration that changed compiles anew.
#[derive(Clone, Default)]
pub(crate) struct Compiled(Option<([u8; 32], std::sync::Arc<ScriptedModel>)>);

impl Compiled {
    /// The model kept, when `config` is what it was compiled from.
    pub(crate) fn model_of(&self, config: &ScriptedConfig) -> Option<std::sync::Arc<ScriptedModel>> {
        let (digest, model) = self.0.as_ref()?;
        (*digest == agentsim_engine::rng::key_of(config)).then(|| std::sync::Arc::clone(model))
    }
}

/// Derived from the rest of the configuration: no part of what it is.
impl PartialEq for Compiled {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Compiled(kept)" } else { "Compiled(none)" })
    }
}

fn default_reply_ms() -> Latency {
    Latency::Uniform { min_ms: 4_000, max_ms: 30_000 }
}

/// The name of the tool a scripted world's agent talks to its user with.
pub const SEND_MESSAGE: &str = "send_message";
/// The kinds of message `send_message` sends.
pub const MESSAGE_KINDS: &[&str] = &["ask", "confirm", "done", "info"];
/// The name of the tool that hands the case to a human.
pub const ESCALATE: &str = "escalate";

impl ScriptedConfig {
    /// Every tool's configuration, by tool name (the built-in tools last).
    pub fn tool_configs_mut(&mut self) -> Vec<(String, &mut ToolConfig)> {
        let mut configs: Vec<(String, &mut ToolConfig)> =
            self.tools.iter_mut().map(|t| (t.name.clone(), &mut t.config)).collect();
        configs.push((SEND_MESSAGE.to_string(), &mut self.send_message));
        configs.push((ESCALATE.to_string(), &mut self.escalate));
        configs
    }
}

/// The world model of a scripted world (compiled; the scenario was checked
/// when it was parsed).
/// The model compiled when it was checked is taken when the configuration
/// has not changed since.
pub fn model(config: &ScriptedConfig) -> std::sync::Arc<dyn crate::world_model::WorldModel> {
    let model = config.compiled.model_of(config).unwrap_or_else(|| {
        let model =
            ScriptedModel::build(config).unwrap_or_else(|e| panic!("a parsed scenario compiles: {}", e.message));
        std::sync::Arc::new(model)
    });
    std::sync::Arc::new(shared::Shared(model))
}

impl crate::world_model::WorldKind for ScriptedConfig {
    /// A scripted world checks itself while it is loaded
    /// ([`crate::Scenario::parse_in`]), where its errors can name the files
    /// beside the scenario; nothing is left to check here.
    fn check(&self) -> Result<(), crate::world_model::ConfigError> {
        Ok(())
    }

    fn catalog(&self) -> agentsim_engine::Catalog {
        ScriptedConfig::catalog(self)
    }

    fn tool_configs_mut(&mut self) -> Vec<(String, &mut ToolConfig)> {
        ScriptedConfig::tool_configs_mut(self)
    }

    fn model(&self, _catalog: &agentsim_engine::Catalog) -> std::sync::Arc<dyn crate::world_model::WorldModel> {
        model(self)
    }

    /// Every session has its user and task; the tables, processes and
    /// idempotency keys are shared (`docs/sessions.md`).
    fn sessions_max(&self) -> u32 {
        agentsim_engine::sessions::SESSIONS_MAX
    }
}
