//! A scripted world compiled once per process: the script and predicates, the
//! tables, the tools' schemas, the tasks with their milestone DAGs and the
//! state their gold actions produce. Every trajectory of every thread reads it.

use std::sync::Arc;

use agentsim_engine::{
    Args, Catalog, MilestoneDag, StreamSource, ToolDef, ToolId, ToolKind, ToolSpec, Value, ValueKind,
};

use agentsim_engine::tool::FieldDef;

use super::error::{LoadError, LoadErrorKind};
use super::intern::intern;
use super::load::check_rows;
use super::placeholders::{fill_text, needed_facts};
use super::schema::Schema;
use super::script::{Failure, Program, Session, to_dynamic};
use super::state::{State, Table, Tables};
pub use super::template::Template;
use super::{
    ESCALATE, GoldAction, MESSAGE_KINDS, MinefieldFile, PersonaFile, ProcessFile, SEND_MESSAGE, ScriptedConfig, Source,
};

/// What serves a tool of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// The scripted tool with this index.
    Script(usize),
    /// The user channel.
    SendMessage,
    /// The hand-over to a human.
    Escalate,
    /// The engine's `authenticate`, or anything else.
    Other,
}

/// A scripted tool, compiled.
pub struct Tool {
    /// Its name (interned: each successful call's entry in a session's
    /// `calls` names it without a copy).
    pub name: &'static str,
    /// Read or write.
    pub kind: ToolKind,
    /// Its argument schema.
    pub schema: Schema,
    /// What serves it.
    pub body: Body,
}

/// What serves a scripted tool.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// The script function of this name.
    Script(String),
    /// The engine: one record of table `table` (its index), keyed by argument
    /// `key` ([`super::RecordBody`]).
    Record {
        /// The table's name, for the 404.
        table: String,
        /// The table's index among the world's tables.
        index: usize,
        /// The argument holding the key.
        key: String,
    },
}

/// A gold action with its tool resolved.
#[derive(Clone, Debug)]
pub struct Gold {
    /// The tool.
    pub tool: ToolId,
    /// Arguments, facts still as `"{name}"` templates.
    pub args: Template,
    /// How to check a write whose answer was lost: (tool, args, predicate).
    pub verify: Option<(ToolId, Template, usize)>,
    /// The world refuses it on the gold replay (a world with `gold_may_fail`):
    /// the expert makes the call once and goes on when it is refused.
    pub fails: bool,
}

/// A minefield: its name and, unless only scripts fire it, its predicate.
#[derive(Clone, Copy, Debug)]
pub struct Mine {
    /// The name.
    pub name: &'static str,
    /// The predicate's index.
    pub when: Option<usize>,
}

/// A plan of a task: the facts an opening leaves out, and the gold actions
/// followed then.
pub type Plan = (Vec<String>, Vec<Gold>);

/// A milestone of a task: its name and its predicate's index.
pub type Milestone = (&'static str, usize);

/// A task, compiled.
pub struct Task {
    /// Its id.
    pub id: String,
    /// What it is about (a tau2 task's own instructions for its user).
    pub description: String,
    /// The user's facts.
    pub facts: Value,
    /// The opening message template.
    pub request: String,
    /// Opening templates by persona name.
    pub openings: Vec<(String, String)>,
    /// Seeds of the rotation it takes.
    pub weight: u32,
    /// The gold actions.
    pub gold: Vec<Gold>,
    /// Gold actions for openings that leave facts out: (the facts left out,
    /// the actions).
    pub plans: Vec<Plan>,
    /// The changed request: facts that change, and its gold actions.
    pub alternative: Option<(Value, Vec<Gold>)>,
    /// Milestones: name and predicate, in declaration order.
    pub milestones: Vec<Milestone>,
    /// The milestone DAG (with `started` first).
    pub dag: MilestoneDag,
    /// This task's minefields.
    pub minefields: Vec<Mine>,
    /// The success predicate.
    pub success_when: Option<usize>,
    /// Tables compared with the gold state (`None`: all; empty: none).
    pub compared: Option<Vec<usize>>,
    /// The state the gold actions produce, when success compares with it; and
    /// that of the alternative's.
    pub gold_state: Option<(State, Option<State>)>,
    /// What the agent must tell the user, lower-cased (tau2 lower-cases the
    /// string, and removes commas only from what was said: `judge::normalised`).
    pub communicate: Vec<String>,
    /// How many natural-language assertions the task has (never judged).
    pub nl_assertions: usize,
    /// The checks success requires, as written (`None`: the default).
    pub reward_basis: Option<Vec<super::Basis>>,
}

impl Task {
    /// Whether the task declares checks of its own (a `checks` column).
    pub fn declares_checks(&self) -> bool {
        !self.communicate.is_empty() || self.nl_assertions > 0 || self.reward_basis.is_some()
    }
}

/// A scripted world ready to run: see the [module docs](super).
pub struct ScriptedModel {
    pub(crate) program: Program,
    pub(crate) tables: Tables,
    pub(crate) tools: Vec<Tool>,
    pub(crate) tasks: Vec<Task>,
    pub(crate) personas: Vec<PersonaFile>,
    pub(crate) processes: Vec<ProcessFile>,
    pub(crate) minefields: Vec<Mine>,
    pub(crate) minefield_names: Arc<[&'static str]>,
    /// The personas' weights, in order (what a user's persona is drawn with).
    pub(crate) persona_weights: Vec<f64>,
    /// Some code of the script or a predicate may read a session's `calls`
    /// ([`Program::may_read_calls`]): only then does a run keep them.
    pub(crate) keeps_calls: bool,
    pub(crate) reply_ms: agentsim_engine::Latency,
    /// The catalog ids of `send_message`, `escalate` and `authenticate`.
    pub(crate) send_message: ToolId,
    pub(crate) escalate: ToolId,
    pub(crate) authenticate: ToolId,
    /// The declared state hash, built once.
    pub(crate) state_hasher: Option<Box<dyn super::StateHasher>>,
    gold_may_fail: bool,
    /// How arguments that do not fit a tool are refused.
    pub(crate) argument_errors: std::sync::Arc<dyn super::ArgumentStyle>,
    /// Who messages are addressed to (the minefield's name interned).
    pub(crate) recipient: Option<(super::Recipient, &'static str)>,
    /// The stream of the sessions the expert's `verify` predicates run in
    /// (the same for every check: derived once, copied each time).
    pub(crate) verify_stream: agentsim_engine::Stream,
    /// Phrases naming each fact in text, beyond those its name gives.
    pub(crate) aliases: Vec<(String, Vec<String>)>,
    /// Some task declares checks (`communicate`, `nl_assertions` or a
    /// `reward_basis`): every trajectory reports its checks.
    pub(crate) declares_checks: bool,
}

/// A task's reward basis as written: at least one check, each once.
fn reward_basis(success: &super::SuccessFile, field: &str) -> Result<Option<Vec<super::Basis>>, String> {
    let Some(basis) = &success.reward_basis else { return Ok(None) };
    if basis.is_empty() {
        return Err(format!("field `{field}.success.reward_basis`: name at least one of Db, Communicate, NlAssertion"));
    }
    if let Some((i, b)) = basis.iter().enumerate().find(|(i, b)| basis[..*i].contains(b)) {
        return Err(format!("field `{field}.success.reward_basis[{i}]`: `{b:?}` is named twice"));
    }
    Ok(Some(basis.clone()))
}

fn response_fields(response: &Value, field: &str) -> Result<Vec<FieldDef>, LoadError> {
    let kind = |name: &str| match name {
        "string" => Some(ValueKind::Str),
        "integer" => Some(ValueKind::Int),
        "number" => Some(ValueKind::Float),
        "boolean" => Some(ValueKind::Bool),
        "array" => Some(ValueKind::List),
        "object" => Some(ValueKind::Map),
        "null" => Some(ValueKind::Null),
        _ => None,
    };
    match response {
        Value::Null => Ok(Vec::new()),
        Value::Map(pairs) => pairs
            .iter()
            .map(|(name, ty)| {
                let ty_name = ty.as_str().unwrap_or("");
                let kind = kind(ty_name).ok_or_else(|| {
                    LoadError::at(
                        format!("\"{name}\""),
                        format!("field `{field}.{name}`: expected a JSON type name (string, integer, number, boolean, array, object, null), found {}", ty.render()),
                    )
                })?;
                Ok(FieldDef { name: name.to_string(), kind })
            })
            .collect(),
        other => Err(LoadError::at("response", format!("field `{field}`: expected a map of field types, found {}", other.render()))),
    }
}

impl ScriptedConfig {
    /// The tools as a catalog: the scripted tools in order, then `send_message`,
    /// `escalate` and the engine's `authenticate`.
    pub fn catalog(&self) -> Catalog {
        let mut specs: Vec<ToolSpec> = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let schema = Schema::parse(&t.args.0, "args").unwrap_or_default();
                let mut def = ToolDef::new(&t.name, t.kind, &t.description);
                def.annotations = t.annotations.0.clone();
                for (name, prop) in &schema.properties {
                    def.args.push(agentsim_engine::tool::ArgDef {
                        name: name.clone(),
                        kind: prop.ty.map_or(ValueKind::Str, |ty| ty.kind()),
                        required: schema.required.contains(name),
                        is_id: t.ids.contains(name),
                        one_of: (prop.allowed.iter().flatten())
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect(),
                    });
                }
                def.response =
                    response_fields(&t.response.0, &format!("world.tools[{i}].response")).unwrap_or_default();
                def.constraints = t.constraints.iter().map(super::ConstraintFile::to_engine).collect();
                ToolSpec { def, config: t.config.clone() }
            })
            .collect();
        let mut send_message = ToolDef::new(
            SEND_MESSAGE,
            ToolKind::Write,
            "Sends the user a message: kind `confirm` (proposes what you will do, with the facts as \
                 arguments), `ask` (asks for the fact named by `fact`), `done` (tells the outcome) or `info`.",
        )
        .arg_one_of("kind", MESSAGE_KINDS)
        .arg("text", ValueKind::Str, false)
        .arg("fact", ValueKind::Str, false)
        .field("message_id", ValueKind::Str)
        .field("status", ValueKind::Str)
        .phrase("ask", "Could you tell me your {fact}?")
        .phrase("confirm", "Shall I go ahead with this: {details}?")
        .phrase("done", "Done: {details}.")
        .phrase("info", "{details}");
        if let Some(r) = &self.recipient {
            send_message = send_message.id_arg(&r.arg);
        }
        specs.push(ToolSpec { def: send_message, config: self.send_message.clone() });
        specs.push(ToolSpec {
            def: ToolDef::new(ESCALATE, ToolKind::Write, "Hands the case to a human agent.")
                .arg("reason", ValueKind::Str, false)
                .field("ticket_id", ValueKind::Str),
            config: self.escalate.clone(),
        });
        Catalog::new(specs)
    }

    /// Compiles and checks everything: the first problem, located.
    pub fn check(&self) -> Result<(), LoadError> {
        ScriptedModel::build(self).map(drop)
    }

    /// [`ScriptedConfig::check`], keeping the model compiled for
    /// [`super::model`] to take (a scenario is checked when it is loaded,
    /// then prepared: the model is compiled once for both).
    pub fn check_and_keep(&mut self) -> Result<(), LoadError> {
        let model = ScriptedModel::build(self)?;
        self.compiled = super::Compiled(Some((agentsim_engine::rng::key_of(self), Arc::new(model))));
        Ok(())
    }
}

fn tables(config: &ScriptedConfig) -> Result<Tables, LoadError> {
    let mut out: Vec<Table> = Vec::with_capacity(config.tables.len());
    for (i, t) in config.tables.iter().enumerate() {
        let field = format!("world.tables[{i}]");
        if out.iter().any(|o| o.name == t.name) {
            return Err(LoadError::at(
                format!("\"{}\"", t.name),
                format!("field `{field}.name`: table `{}` is declared twice", t.name),
            ));
        }
        check_rows(&t.rows.0, &format!("{field}.rows"), &format!("\"{}\"", t.name))?;
        let rows: Vec<(String, Value)> = match &t.rows.0 {
            Value::Null => Vec::new(),
            Value::Map(pairs) => pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            Value::List(records) => {
                let key = t.key.as_deref().ok_or_else(|| {
                    LoadError::at(
                        format!("\"{}\"", t.name),
                        format!("field `{field}.key`: a table of listed records names its key field"),
                    )
                })?;
                records
                    .iter()
                    .enumerate()
                    .map(|(r, record)| match record.get(key) {
                        Some(Value::Str(s)) => Ok((s.clone(), record.clone())),
                        Some(Value::Int(n)) => Ok((n.to_string(), record.clone())),
                        _ => Err(LoadError::at(
                            format!("\"{}\"", t.name),
                            format!(
                                "field `{field}.rows[{r}]`: record has no string or integer `{key}` (the table's key)"
                            ),
                        )),
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => unreachable!("check_rows refuses other shapes"),
        };
        let table = Table::new(&t.name, rows).map_err(|(r, key)| {
            LoadError::at(
                format!("\"{}\"", t.name),
                format!("field `{field}.rows[{r}]`: key `{key}` appears twice in table `{}`", t.name),
            )
        })?;
        out.push(table);
    }
    Ok(Arc::new(out))
}

/// Compiles the predicate at `field`; a syntax error points at its own
/// place in the scenario (two predicates often read the same).
fn predicate(program: &mut Program, text: &str, field: &str) -> Result<usize, LoadError> {
    let index = program.add_predicate(text).map_err(|(line, column, m)| {
        let mut e = LoadError::in_field(field, format!("syntax error in the predicate at {line}:{column}: {m}"))
            .with_kind(LoadErrorKind::Syntax);
        if let Some(at) = e.field.as_mut() {
            at.inside = Some((line, column));
        }
        e
    })?;
    match program.static_non_boolean(index) {
        Some(ty) => Err(not_boolean(field, ty, "")),
        None => Ok(index),
    }
}

/// A predicate that gives a `ty` (`when` says on what), not true or false:
/// it would never hold, and a run would blame the agent for it.
fn not_boolean(field: &str, ty: &str, when: &str) -> LoadError {
    LoadError::in_field(field, format!("a predicate gives true or false; this one gives a value of type `{ty}`{when}"))
}

fn mines(program: &mut Program, files: &[MinefieldFile], field: &str) -> Result<Vec<Mine>, LoadError> {
    files
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let when = match &m.when {
                Some(text) => Some(predicate(program, text, &format!("{field}[{i}].when"))?),
                None => None,
            };
            Ok(Mine { name: intern(&m.name), when })
        })
        .collect()
}

/// The world's script, compiled (it must have been read inline).
fn compile_script(config: &ScriptedConfig) -> Result<Program, LoadError> {
    let Source::Inline { origin, text } = &config.script else {
        return Err(LoadError::at(
            "script",
            "field `world.script`: the script file was not read (load the scenario from its folder)",
        ));
    };
    Program::compile(text, &config.limits).map_err(|(line, column, m)| {
        LoadError::in_file(LoadErrorKind::Syntax, origin, line, column, format!("syntax error: {m}"))
    })
}

/// Each process runs a function the script defines, `at_ms` or `every`.
fn check_processes(config: &ScriptedConfig, program: &Program) -> Result<(), LoadError> {
    for (i, p) in config.processes.iter().enumerate() {
        if !program.defines(&p.body, 0) {
            return Err(LoadError::at(
                format!("\"{}\"", p.body),
                format!("field `world.processes[{i}].body`: the script defines no function `{}()`", p.body),
            ));
        }
        if p.at_ms.is_none() == p.every.is_none() {
            return Err(LoadError::at(
                format!("\"{}\"", p.name),
                format!("field `world.processes[{i}]`: a process runs `at_ms` or `every`, exactly one"),
            ));
        }
    }
    Ok(())
}

/// Who messages are addressed to, with the minefield's name interned; its
/// table must exist.
fn recipient(config: &ScriptedConfig, tables: &Tables) -> Result<Option<(super::Recipient, &'static str)>, LoadError> {
    let Some(r) = &config.recipient else { return Ok(None) };
    if !tables.iter().any(|t| t.name == r.table) {
        return Err(LoadError::at(
            format!("\"{}\"", r.table),
            format!("field `world.recipient.table`: no table `{}`", r.table),
        ));
    }
    Ok(Some((r.clone(), intern(&r.minefield))))
}

impl ScriptedModel {
    /// Compiles `config` (whose files must have been resolved).
    pub fn build(config: &ScriptedConfig) -> Result<ScriptedModel, LoadError> {
        let mut program = compile_script(config)?;
        let tables = tables(config)?;
        let state_hasher = match &config.state_hash {
            None => None,
            Some(state_hash) => Some(super::extend::state_hasher(state_hash, &tables)?),
        };
        let argument_errors = config.argument_errors.style()?;
        let catalog = config.catalog();
        let tools = compile_tools(config, &program)?;
        check_processes(config, &program)?;
        check_personas(&config.personas)?;
        check_constraints(config)?;
        let recipient = recipient(config, &tables)?;
        let minefields = mines(&mut program, &config.minefields, "world.minefields")?;
        let mut model = ScriptedModel {
            program,
            tables,
            tools,
            tasks: Vec::new(),
            personas: config.personas.clone(),
            processes: config.processes.clone(),
            minefields,
            minefield_names: Arc::from([]),
            persona_weights: Vec::new(),
            keeps_calls: true,
            reply_ms: config.reply_ms.clone(),
            send_message: catalog.id(SEND_MESSAGE).expect("send_message is in the catalog"),
            escalate: catalog.id(ESCALATE).expect("escalate is in the catalog"),
            authenticate: catalog.id(agentsim_engine::tool::AUTHENTICATE).expect("authenticate is in the catalog"),
            state_hasher,
            gold_may_fail: config.gold_may_fail,
            argument_errors,
            recipient,
            verify_stream: StreamSource::new([0; 32], 0).stream("verify"),
            aliases: config.aliases.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            declares_checks: false,
        };
        if model.personas.is_empty() {
            model.personas.push(PersonaFile {
                name: "clear".into(),
                weight: 1.0,
                states: None,
                changes_mind: 0.0,
                patience_ms: None,
            });
        }
        model.persona_weights = model.personas.iter().map(|p| p.weight).collect();
        model.compile_tasks(config, &catalog)?;
        // Every predicate is compiled by now.
        model.keeps_calls = model.program.may_read_calls();
        Ok(model)
    }

    /// Compiles every task, gathers the minefield names scripts may fire,
    /// then replays each task's gold actions for its gold state.
    fn compile_tasks(&mut self, config: &ScriptedConfig, catalog: &Catalog) -> Result<(), LoadError> {
        if config.tasks.is_empty() {
            return Err(LoadError::at("tasks", "field `world.tasks`: a scripted world needs at least one task"));
        }
        for (i, task) in config.tasks.iter().enumerate() {
            if config.tasks[..i].iter().any(|t| t.id == task.id) {
                return Err(LoadError::at(
                    format!("\"{}\"", task.id),
                    format!("field `world.tasks[{i}].id`: task `{}` is declared twice", task.id),
                ));
            }
            let compiled = self.compile_task(config, i, catalog)?;
            self.declares_checks |= compiled.declares_checks();
            self.tasks.push(compiled);
        }
        let mut names: Vec<&'static str> = self.minefields.iter().map(|m| m.name).collect();
        names.extend(self.recipient.as_ref().map(|(_, name)| *name));
        names.extend(self.tasks.iter().flat_map(|t| t.minefields.iter().map(|m| m.name)));
        names.sort_unstable();
        names.dedup();
        self.minefield_names = names.into();
        for t in 0..self.tasks.len() {
            self.tasks[t].gold_state = self.gold_states(t, config)?;
            self.check_types_on_gold(t)?;
        }
        Ok(())
    }

    /// The hash the world declares (`state_hash`) of the state task `task`'s
    /// gold actions produce; `None` without a declared hash or a gold state.
    pub fn gold_hash(&self, task: usize) -> Option<String> {
        let hasher = self.state_hasher.as_ref()?;
        let (gold, _) = self.tasks.get(task)?.gold_state.as_ref()?;
        Some(hasher.hash(gold))
    }

    /// The declared hash of the initial tables.
    pub fn initial_hash(&self) -> Option<String> {
        self.state_hasher.as_ref().map(|h| h.base_hash().to_string())
    }

    /// The ids of the tasks, in order.
    pub fn task_ids(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| t.id.as_str()).collect()
    }

    /// What serves catalog tool `id`.
    pub fn served(&self, id: ToolId) -> Served {
        let i = id.0 as usize;
        if i < self.tools.len() {
            Served::Script(i)
        } else if id == self.send_message {
            Served::SendMessage
        } else if id == self.escalate {
            Served::Escalate
        } else {
            Served::Other
        }
    }

    /// How the world refuses arguments that do not fit a tool, and unknown tools.
    pub fn argument_errors(&self) -> &dyn super::ArgumentStyle {
        &*self.argument_errors
    }

    /// One call of scripted tool `name` on the initial tables at time 0, served
    /// as a run serves it with faults off (the arguments checked, a non-map
    /// answer wrapped as `{"result": ...}`): the answer, and the declared state
    /// hash afterwards. A name the world has no scripted tool of gets the
    /// world's unknown-tool answer (by default a 404 `no such tool`). For
    /// differential tests against the service a world ports.
    pub fn call_once(&self, name: &str, args: &Value) -> (Result<Value, agentsim_engine::ToolError>, Option<String>) {
        let args = &Args::from(args.clone());
        let mut session = self.session(StreamSource::new([0; 32], 0).stream("call_once"));
        let reply = match self.tools.iter().find(|t| t.name == name) {
            None => Err(self
                .argument_errors
                .unknown_tool(name)
                .unwrap_or_else(|| agentsim_engine::ToolError::not_found("no such tool"))),
            Some(tool) => match self.argument_errors.check(tool.name, &tool.schema, args) {
                Err(e) => Err(e),
                Ok(()) => {
                    if let Some(s) = session.as_mut() {
                        s.writable = tool.kind == ToolKind::Write;
                    }
                    match self.run_body(&mut session, tool, args) {
                        Ok(body @ Value::Map(_)) => Ok(body),
                        Ok(other) => Ok(Value::map([("result", other)])),
                        Err(Failure::Tool(e)) => Err(e),
                        Err(Failure::Script { message, .. }) => Err(agentsim_engine::ToolError {
                            status: 500,
                            message: format!("script error in `{}`: {message}", tool.name),
                        }),
                    }
                }
            },
        };
        let hash = (self.state_hasher.as_ref().zip(session.as_ref())).map(|(h, s)| h.hash(&s.state));
        (reply, hash)
    }

    /// Runs `tool`'s body on `args` in `session` (whose `writable` the caller
    /// set): its script function, or the engine's record read or write.
    pub(crate) fn run_body(
        &self,
        session: &mut Option<Box<Session>>,
        tool: &Tool,
        args: &Args,
    ) -> Result<Value, Failure> {
        let (table, index, key_arg) = match &tool.body {
            Body::Script(name) => return self.program.call(session, name, vec![to_dynamic(args)]),
            Body::Record { table, index, key } => (table, *index, key),
        };
        let key = match args.get(key_arg) {
            Some(Value::Str(s)) => s.clone(),
            Some(Value::Int(n)) => n.to_string(),
            _ => {
                let message = format!("a record key is a string or an integer: `{key_arg}`");
                return Err(Failure::Tool(agentsim_engine::ToolError::bad_request(message)));
            }
        };
        let session = session.as_mut().expect("a body runs in a session");
        if tool.kind == ToolKind::Write {
            if !session.writable {
                // What the script's `put` says where tables cannot change.
                let message = "a read tool cannot change tables (declare the tool `kind: Write`)".to_string();
                return Err(Failure::Script { message, limit: false });
            }
            // The record is the call's arguments, shared; the answer, a copy.
            session.state.put_shared(index, key, args.clone());
            return Ok(Value::clone(args));
        }
        session.state.note_read(table, &key);
        match session.state.record_at(index, &key) {
            Some(record) => Ok(record.clone()),
            None => {
                Err(Failure::Tool(agentsim_engine::ToolError::not_found(format!("no record `{key}` in `{table}`"))))
            }
        }
    }

    /// A fresh session over the initial tables.
    pub(crate) fn session(&self, rng: impl Into<super::lazy_stream::LazyStream>) -> Option<Box<Session>> {
        Some(Box::new(Session {
            state: State::new(self.tables.clone()),
            now_ms: 0,
            rng: rng.into(),
            writable: false,
            notes: Vec::new(),
            minefields: Vec::new(),
            minefield_names: Arc::clone(&self.minefield_names),
            calls: Vec::new(),
            told: Vec::new(),
            reached: Vec::new(),
        }))
    }

    fn compile_task(
        &mut self,
        config: &ScriptedConfig,
        i: usize,
        catalog: &Catalog,
    ) -> Result<super::model::Task, LoadError> {
        let file = &config.tasks[i];
        let field = format!("world.tasks[{i}]");
        let here = |m: String| LoadError::at(format!("\"{}\"", file.id), m);
        if !(1..=super::TASK_WEIGHT_MAX).contains(&file.weight) {
            return Err(here(format!(
                "field `{field}.weight`: expected a weight from 1 to {}, found {}",
                super::TASK_WEIGHT_MAX,
                file.weight
            )));
        }
        if !matches!(file.facts.0, Value::Map(_)) {
            return Err(here(format!("field `{field}.facts`: expected a map of facts")));
        }
        let gold = gold_actions(&file.gold, &file.facts.0, catalog, &mut self.program, &format!("{field}.gold"))?;
        if gold.is_empty() {
            return Err(here(format!("field `{field}.gold`: a task needs at least one gold action")));
        }
        let plans = self.compile_plans(file, catalog, &field)?;
        let alternative = self.compile_alternative(file, catalog, &field)?;
        let (milestones, dag) = self.compile_milestones(file, &field)?;
        let minefields = mines(&mut self.program, &file.minefields, &format!("{field}.minefields"))?;
        let success_when = match &file.success.when {
            Some(text) => Some(predicate(&mut self.program, text, &format!("{field}.success.when"))?),
            None => None,
        };
        let compared = self.compared_tables(file, &field)?;
        for (name, text) in &file.openings {
            if !self.personas.iter().any(|p| p.name == *name) {
                return Err(here(format!("field `{field}.openings`: no persona `{name}`")));
            }
            fill_text(text, &file.facts.0).map_err(|m| here(format!("field `{field}.openings`: {m}")))?;
        }
        fill_text(&file.request, &file.facts.0).map_err(|m| here(format!("field `{field}.request`: {m}")))?;
        Ok(Task {
            id: file.id.clone(),
            description: file.description.clone(),
            facts: file.facts.0.clone(),
            request: file.request.clone(),
            openings: file.openings.clone(),
            weight: file.weight,
            gold,
            plans,
            alternative,
            milestones,
            dag,
            minefields,
            success_when,
            compared,
            gold_state: None,
            communicate: file.success.communicate.iter().map(|c| c.to_lowercase()).collect(),
            nl_assertions: file.success.nl_assertions.len(),
            reward_basis: reward_basis(&file.success, &field).map_err(here)?,
        })
    }

    /// The plans of task `file` (at `field`), their gold actions compiled.
    fn compile_plans(
        &mut self,
        file: &super::TaskFile,
        catalog: &Catalog,
        field: &str,
    ) -> Result<Vec<Plan>, LoadError> {
        let here = |m: String| LoadError::at(format!("\"{}\"", file.id), m);
        let mut plans = Vec::with_capacity(file.plans.len());
        for (p, plan) in file.plans.iter().enumerate() {
            let at = format!("{field}.plans[{p}]");
            if let Some(missing) = plan.unstated.iter().find(|f| file.facts.0.get(f).is_none()) {
                return Err(here(format!("field `{at}.unstated`: no fact `{missing}` in the task's facts")));
            }
            let gold = gold_actions(&plan.gold, &file.facts.0, catalog, &mut self.program, &format!("{at}.gold"))?;
            if gold.is_empty() {
                return Err(here(format!("field `{at}.gold`: a plan needs at least one gold action")));
            }
            plans.push((plan.unstated.clone(), gold));
        }
        Ok(plans)
    }

    /// What task `file`'s user changes their mind to: the facts changed, and
    /// the gold actions compiled on them.
    fn compile_alternative(
        &mut self,
        file: &super::TaskFile,
        catalog: &Catalog,
        field: &str,
    ) -> Result<Option<(Value, Vec<Gold>)>, LoadError> {
        let Some(alt) = &file.alternative else { return Ok(None) };
        let mut facts = file.facts.0.clone();
        if let Value::Map(changed) = &alt.facts.0 {
            for (k, v) in changed {
                facts.set(k.clone(), v.clone());
            }
        }
        let gold = gold_actions(&alt.gold, &facts, catalog, &mut self.program, &format!("{field}.alternative.gold"))?;
        Ok(Some((facts, gold)))
    }

    /// The milestones of task `file` (at `field`), their predicates compiled,
    /// and their DAG (after `started`).
    fn compile_milestones(
        &mut self,
        file: &super::TaskFile,
        field: &str,
    ) -> Result<(Vec<Milestone>, MilestoneDag), LoadError> {
        let mut milestones = Vec::with_capacity(file.milestones.len());
        let mut edges: Vec<(&'static str, Vec<&'static str>)> = vec![("started", Vec::new())];
        for (m, ms) in file.milestones.iter().enumerate() {
            let when = predicate(&mut self.program, &ms.when, &format!("{field}.milestones[{m}].when"))?;
            let name = intern(&ms.name);
            milestones.push((name, when));
            edges.push((name, ms.after.iter().map(|a| intern(a)).collect()));
        }
        let pairs: Vec<(&'static str, &[&'static str])> = edges.iter().map(|(n, a)| (*n, a.as_slice())).collect();
        let dag = MilestoneDag::new(&pairs)
            .map_err(|e| LoadError::at(format!("\"{}\"", file.id), format!("field `{field}.milestones`: {e}")))?;
        Ok((milestones, dag))
    }

    /// The indices of the tables task `file`'s success compares (`None`: all).
    fn compared_tables(&self, file: &super::TaskFile, field: &str) -> Result<Option<Vec<usize>>, LoadError> {
        let Some(names) = &file.success.tables else { return Ok(None) };
        let position = |n: &String| {
            self.tables.iter().position(|t| t.name == *n).ok_or_else(|| {
                LoadError::at(format!("\"{n}\""), format!("field `{field}.success.tables`: no table `{n}`"))
            })
        };
        names.iter().map(position).collect::<Result<_, _>>().map(Some)
    }

    /// Runs a task's gold actions (and its alternative's) on the initial tables
    /// at time 0: the state success compares with. A gold action the world
    /// refuses is an error in the scenario.
    fn gold_states(&mut self, t: usize, config: &ScriptedConfig) -> Result<Option<(State, Option<State>)>, LoadError> {
        let task = &self.tasks[t];
        if !config.tasks[t].success.state_equals_gold {
            return Ok(None);
        }
        let (main, failed) = self.replay_gold(&task.gold, &task.facts, &format!("world.tasks[{t}].gold"), &task.id)?;
        for (p, (_, plan)) in task.plans.iter().enumerate() {
            let field = format!("world.tasks[{t}].plans[{p}].gold");
            let (state, _) = self.replay_gold(plan, &task.facts, &field, &task.id)?;
            if !state.same_records(&main, task.compared.as_deref()) {
                return Err(LoadError::at(
                    format!("\"{}\"", task.id),
                    format!("field `{field}`: the plan's tables differ from those of the task's `gold`"),
                ));
            }
        }
        let alternative = match &task.alternative {
            Some((facts, gold)) => {
                let (state, failed) =
                    self.replay_gold(gold, facts, &format!("world.tasks[{t}].alternative.gold"), &task.id)?;
                if let Some((_, gold)) = &mut self.tasks[t].alternative {
                    failed.into_iter().for_each(|g| gold[g].fails = true);
                }
                Some(state)
            }
            None => None,
        };
        failed.into_iter().for_each(|g| self.tasks[t].gold[g].fails = true);
        Ok(Some((main, alternative)))
    }

    /// The state `gold` produces, and the gold actions the world refused (only
    /// with `gold_may_fail`; otherwise a refusal is an error in the scenario).
    fn replay_gold(
        &self,
        gold: &[Gold],
        facts: &Value,
        field: &str,
        task: &str,
    ) -> Result<(State, Vec<usize>), LoadError> {
        let mut session = self.session(StreamSource::new([0; 32], 0).stream("gold"));
        let mut failed = Vec::new();
        for (g, action) in gold.iter().enumerate() {
            let Served::Script(i) = self.served(action.tool) else { continue };
            let args = action
                .args
                .fill_args(facts)
                .map_err(|m| LoadError::at(format!("\"{task}\""), format!("field `{field}[{g}]`: {m}")))?;
            let tool = &self.tools[i];
            if let Some(s) = session.as_mut() {
                s.writable = tool.kind == ToolKind::Write;
            }
            // As the world serves it: the arguments are checked first, and a
            // gold call that breaks its tool's schema gets the 400 an agent would.
            let result = match self.argument_errors.check(tool.name, &tool.schema, &args) {
                Err(e) => Err(Failure::Tool(e)),
                Ok(()) => self.run_body(&mut session, tool, &args),
            };
            if self.gold_may_fail && matches!(result, Err(Failure::Tool(_))) {
                failed.push(g);
                continue;
            }
            if let Err(f) = result {
                let why = match f {
                    Failure::Tool(e) => format!("{} {}", e.status, e.message),
                    Failure::Script { message, .. } => message,
                };
                return Err(LoadError::at(
                    format!("\"{task}\""),
                    format!(
                        "field `{field}[{g}]`: the gold call of `{}` fails on the initial tables: {why}",
                        tool.name
                    ),
                ));
            }
        }
        Ok((session.expect("the session is back after the calls").state, failed))
    }

    /// Runs task `t`'s gold actions once more and evaluates, after each call,
    /// the predicates a run evaluates then (minefields, the milestones not yet
    /// reached, the `verify` of a write), and the success predicate at the
    /// end: one whose type the text does not tell ([`predicate`] checked
    /// those) and that gives something other than true or false here is an
    /// error in the scenario. A call or predicate that fails is left to the
    /// checks that report it.
    fn check_types_on_gold(&self, t: usize) -> Result<(), LoadError> {
        let task = &self.tasks[t];
        let field = format!("world.tasks[{t}]");
        let on_gold = |g: usize| format!(" after the gold call `{field}.gold[{g}]`");
        let mut session = self.session(StreamSource::new([0; 32], 0).stream("gold"));
        for (g, action) in task.gold.iter().enumerate() {
            let Ok(args) = action.args.fill_args(&task.facts) else { continue };
            let (name, reply) = self.gold_reply(&mut session, action.tool, &args, true);
            if let Some(s) = session.as_mut() {
                s.writable = false;
                if reply.is_ok() {
                    s.calls.push((name, Value::clone(&args)));
                }
            }
            let call = Value::map([
                ("tool", Value::str(name)),
                ("args", args.into_value()),
                ("ok", Value::Bool(reply.is_ok())),
                ("status", Value::Int(reply.as_ref().map_or_else(|s| i64::from(*s), |_| 200))),
                ("result", reply.clone().unwrap_or(Value::Null)),
            ]);
            let vars = [("facts", &task.facts), ("action", &call)];
            let mines = (self.minefields.iter().enumerate().map(|(i, m)| (format!("world.minefields[{i}].when"), m)))
                .chain(task.minefields.iter().enumerate().map(|(i, m)| (format!("{field}.minefields[{i}].when"), m)));
            for (at, mine) in mines {
                let Some(when) = mine.when.filter(|&w| self.program.may_hold_for(w, name)) else { continue };
                if let Some(ty) = self.program.non_boolean(&mut session, when, &vars) {
                    return Err(not_boolean(&at, ty, &on_gold(g)));
                }
            }
            for (m, &(milestone, when)) in task.milestones.iter().enumerate() {
                let reached = session.as_ref().is_some_and(|s| s.reached.contains(&milestone));
                if reply.is_err() || reached || !self.program.may_hold_for(when, name) {
                    continue;
                }
                if let Some(ty) = self.program.non_boolean(&mut session, when, &vars) {
                    return Err(not_boolean(&format!("{field}.milestones[{m}].when"), ty, &on_gold(g)));
                }
                if self.program.predicate(&mut session, when, &vars) == Ok(true)
                    && let Some(s) = session.as_mut()
                {
                    s.reached.push(milestone);
                }
            }
            if let Some((tool, template, when)) = &action.verify
                && let Ok(args) = template.fill_args(&task.facts)
                && let (_, Ok(result)) = self.gold_reply(&mut session, *tool, &args, false)
            {
                let vars = [("facts", &task.facts), ("result", &result)];
                let mut fresh = self.session(self.verify_stream.clone());
                if let Some(ty) = self.program.non_boolean(&mut fresh, *when, &vars) {
                    return Err(not_boolean(&format!("{field}.gold[{g}].verify.applied"), ty, &on_gold(g)));
                }
            }
        }
        if let Some(when) = task.success_when
            && let Some(ty) = self.program.non_boolean(&mut session, when, &[("facts", &task.facts)])
        {
            return Err(not_boolean(&format!("{field}.success.when"), ty, " on the state the gold actions leave"));
        }
        Ok(())
    }

    /// The name of catalog tool `tool` and its answer to `args` on `session`
    /// (the status of a refusal), as a run would give it; a read when not
    /// `writable`. Only for the load-time checks: the user's tools answer as
    /// a delivered message and a handed-over case.
    fn gold_reply(
        &self,
        session: &mut Option<Box<Session>>,
        tool: ToolId,
        args: &Args,
        writable: bool,
    ) -> (&'static str, Result<Value, u16>) {
        match self.served(tool) {
            Served::Script(i) => {
                let tool = &self.tools[i];
                if let Some(s) = session.as_mut() {
                    s.writable = writable && tool.kind == ToolKind::Write;
                }
                let reply = match self.argument_errors.check(tool.name, &tool.schema, args) {
                    Err(e) => Err(e.status),
                    Ok(()) => self.run_body(session, tool, args).map_err(|f| match f {
                        Failure::Tool(e) => e.status,
                        Failure::Script { .. } => 500,
                    }),
                };
                (tool.name, reply)
            }
            Served::SendMessage => {
                (SEND_MESSAGE, Ok(Value::map([("message_id", Value::str("m1")), ("status", Value::str("sent"))])))
            }
            Served::Escalate => (ESCALATE, Ok(Value::map([("ticket_id", Value::str("T-1"))]))),
            Served::Other => (agentsim_engine::tool::AUTHENTICATE, Ok(Value::Map(Vec::new()))),
        }
    }
}

fn compile_tools(config: &ScriptedConfig, program: &Program) -> Result<Vec<Tool>, LoadError> {
    let mut tools = Vec::with_capacity(config.tools.len());
    for (i, t) in config.tools.iter().enumerate() {
        let field = format!("world.tools[{i}]");
        let here = |m: String| LoadError::at(format!("\"{}\"", t.name), m);
        if [SEND_MESSAGE, ESCALATE, agentsim_engine::tool::AUTHENTICATE].contains(&t.name.as_str())
            || config.tools[..i].iter().any(|o| o.name == t.name)
        {
            return Err(here(format!("field `{field}.name`: tool `{}` is declared twice (or is built in)", t.name)));
        }
        let args = match &t.args.0 {
            Value::Null => Value::map([("type", Value::str("object"))]),
            other => other.clone(),
        };
        let schema = Schema::parse(&args, "args").map_err(|m| here(format!("field `{field}.args`: {m}")))?;
        if schema.ty.is_some_and(|ty| ty != super::schema::Type::Object) {
            return Err(here(format!("field `{field}.args`: the arguments' schema is of type `object`")));
        }
        for id in &t.ids {
            if !schema.properties.iter().any(|(p, _)| p == id) {
                return Err(here(format!("field `{field}.ids`: `{id}` is not among the arguments' properties")));
            }
        }
        response_fields(&t.response.0, &format!("{field}.response"))?;
        if !matches!(t.annotations.0, Value::Null | Value::Map(_)) {
            return Err(here(format!("field `{field}.annotations`: expected a map (MCP's `title`, hints)")));
        }
        let body = match &t.record {
            Some(record) => record_body(config, t, record, &schema).map_err(|m| here(format!("field `{field}.{m}")))?,
            None => {
                let body = t.body.clone().unwrap_or_else(|| t.name.clone());
                if !program.defines(&body, 1) {
                    return Err(here(format!("field `{field}.body`: the script defines no function `{body}(args)`")));
                }
                Body::Script(body)
            }
        };
        tools.push(Tool { name: intern(&t.name), kind: t.kind, schema, body });
    }
    Ok(tools)
}

/// A record body names a table of the world and a required argument, and no
/// script function beside it. The error is the rest of a field message.
fn record_body(
    config: &ScriptedConfig,
    tool: &super::ToolFile,
    record: &super::RecordBody,
    schema: &Schema,
) -> Result<Body, String> {
    if tool.body.is_some() {
        return Err("record`: a tool is served by its `body` or by its `record`, not both".into());
    }
    let Some(index) = config.tables.iter().position(|t| t.name == record.table) else {
        let known: Vec<&str> = config.tables.iter().map(|t| t.name.as_str()).collect();
        return Err(format!("record.table`: no table `{}` (tables: {})", record.table, known.join(", ")));
    };
    if !schema.required.contains(&record.key) {
        return Err(format!("record.key`: `{}` is not a required argument of the tool", record.key));
    }
    Ok(Body::Record { table: record.table.clone(), index, key: record.key.clone() })
}

/// Each constraint names arguments its tool has, and a source tool that exists.
fn check_constraints(config: &ScriptedConfig) -> Result<(), LoadError> {
    for (i, t) in config.tools.iter().enumerate() {
        let has_arg = |name: &str| t.args.0.get("properties").and_then(|p| p.get(name)).is_some();
        for (c, constraint) in t.constraints.iter().enumerate() {
            let field = format!("world.tools[{i}].constraints[{c}]");
            let (args, source) = match constraint {
                super::ConstraintFile::Positive { arg } => (vec![arg], None),
                super::ConstraintFile::AtMostSeen { arg, key_arg, source_tool, .. } => {
                    (vec![arg, key_arg], Some(source_tool))
                }
            };
            if let Some(missing) = args.into_iter().find(|a| !has_arg(a)) {
                return Err(LoadError::at(
                    format!("\"{missing}\""),
                    format!("field `{field}`: `{missing}` is not among the arguments' properties of `{}`", t.name),
                ));
            }
            if let Some(source) = source.filter(|s| !config.tools.iter().any(|o| o.name == **s)) {
                return Err(LoadError::at(
                    format!("\"{source}\""),
                    format!("field `{field}.source_tool`: no tool `{source}`"),
                ));
            }
        }
    }
    Ok(())
}

fn check_personas(personas: &[PersonaFile]) -> Result<(), LoadError> {
    for (i, p) in personas.iter().enumerate() {
        let here = |m: String| LoadError::at(format!("\"{}\"", p.name), format!("field `world.personas[{i}]{m}"));
        if !(p.weight.is_finite() && p.weight >= 0.0) {
            return Err(here(format!(".weight`: expected a finite weight of at least 0, found {}", p.weight)));
        }
        if !(0.0..=1.0).contains(&p.changes_mind) {
            return Err(here(format!(".changes_mind`: expected a probability in [0, 1], found {}", p.changes_mind)));
        }
        if personas[..i].iter().any(|o| o.name == p.name) {
            return Err(here(format!(".name`: persona `{}` is declared twice", p.name)));
        }
    }
    if !personas.is_empty() && personas.iter().all(|p| p.weight == 0.0) {
        return Err(LoadError::at("personas", "field `world.personas`: the weights are all 0"));
    }
    Ok(())
}

fn gold_actions(
    gold: &[GoldAction],
    facts: &Value,
    catalog: &Catalog,
    program: &mut Program,
    field: &str,
) -> Result<Vec<Gold>, LoadError> {
    let tool = |name: &str, at: &str| {
        catalog.id(name).ok_or_else(|| {
            let names: Vec<&str> = catalog.specs().iter().map(|s| s.def.name.as_str()).collect();
            LoadError::at(
                format!("\"{name}\""),
                format!("field `{at}.tool`: unknown tool `{name}` (tools: {})", names.join(", ")),
            )
        })
    };
    gold.iter()
        .enumerate()
        .map(|(g, action)| {
            let at = format!("{field}[{g}]");
            let args = match &action.args.0 {
                Value::Null => Value::Map(Vec::new()),
                other => other.clone(),
            };
            let mut needed = Vec::new();
            needed_facts(&args, &mut needed);
            if let Some(missing) = needed.iter().find(|n| facts.get(n).is_none()) {
                return Err(LoadError::at(
                    format!("{{{missing}}}"),
                    format!("field `{at}.args`: no fact `{missing}` in the task's facts"),
                ));
            }
            let verify = match &action.verify {
                None => None,
                Some(v) => {
                    let id = tool(&v.tool, &format!("{at}.verify"))?;
                    let when = predicate(program, &v.applied, &format!("{at}.verify.applied"))?;
                    Some((id, Template::new(v.args.0.clone()), when))
                }
            };
            Ok(Gold { tool: tool(&action.tool, &at)?, args: Template::new(args), verify, fails: false })
        })
        .collect()
}
