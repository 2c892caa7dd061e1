//! `agentsim import-tau2`: a tau2-bench domain folder (`db.json`, `tasks.json`,
//! `policy.md`) as a scripted agentsim world. One importer for every tau2
//! domain: a domain ([`Domain`]) is its tools script and a small
//! description (its tables as pydantic dumps them, its tools' shapes, the
//! read that verifies each write, the facts its users state); the
//! conversion of tasks, the scenario, tau2's state hash (`state_hash: Tau2`)
//! and Python's error model (`argument_errors: Python`) are shared. Retail
//! (`retail.rhai`, 16 tools) and airline (`airline.rhai`, 14 tools) are
//! ported; the domain is told by `db.json`'s tables.
//!
//! This is library code over texts: the CLI reads the files and writes the
//! folder ([`ImportedWorld::files`]) atomically.

mod airline;
mod retail;
mod scenario;
mod tasks;

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, Visitor};

use agentsim_engine::{Float, Key, Value};

pub use airline::AIRLINE_SCRIPT;
pub use retail::{RETAIL_SCRIPT, retail_script};

use scenario::{FaultProfile, ToolShape};
use tasks::{Action, Task};

/// The scenario file's name in the folder written for a retail domain
/// (`ImportedWorld::scenario_file` names it for any domain).
pub const SCENARIO_FILE: &str = "retail.ron";

/// Why a domain folder could not be imported: the file, a 1-based position
/// (1:1 when the problem is not at one place) and what is wrong, naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// `db.json`, `tasks.json` or `policy.md`.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
    }
}

impl std::error::Error for ImportError {}

/// What an import produces: the files of the world's folder, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedWorld {
    /// (file name, contents), the scenario first.
    pub files: Vec<(String, String)>,
    /// Tasks imported.
    pub tasks: usize,
    /// The domain imported (`retail`, `airline`).
    pub domain: &'static str,
    /// The scenario's file name in the folder (`retail.ron`, `airline.ron`).
    pub scenario_file: String,
}

/// How the import reads tau2 where its code and its intent part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Retail's `modify_pending_order_items` gives each modified item its own
    /// new variant's price and options (`import-tau2 --corrected`). By
    /// default the import does what tau2's code does, and tau2's evaluator
    /// computes its gold databases with: every item modified in one call gets
    /// the price and options of the call's last new variant. Retail only.
    pub corrected: bool,
}

/// Records of one table, by key, in the database's order.
type Records = Vec<(String, Value)>;

/// How a write's effect is checked after its answer was lost: the read, its
/// arguments (RON) and the predicate over its `result`.
type Verify = Option<(&'static str, String, String)>;

/// A tau2 domain as the importer knows it: everything that differs between
/// domains. The rest (tasks, scenario, hash, errors) is shared.
pub(crate) struct Domain {
    /// tau2's name of the domain (`retail`): the scenario is `tau2-NAME`,
    /// its files `NAME.ron` and `NAME.rhai`.
    name: &'static str,
    /// The class tau2's tools are methods of (named in Python's errors).
    class: &'static str,
    /// The comment lines that open the scenario.
    header: &'static str,
    /// The scenario's description.
    description: &'static str,
    /// The database's tables, in tau2's order.
    tables: &'static [&'static str],
    /// The tools, in tau2's order.
    tools: &'static [ToolShape],
    /// Where the default fault profile puts its special faults.
    faults: FaultProfile,
    /// The script's limits, when the defaults are too tight (RON).
    limits: Option<&'static str>,
    /// The tables' records from `db.json`, as tau2's pydantic models dump them.
    records: fn(&str) -> Result<Vec<Records>, ImportError>,
    /// The tools script.
    script: fn(Options) -> String,
    /// The read that verifies a write of a gold action (given the task's gold
    /// actions before it).
    verify: fn(&str, &serde_json::Map<String, serde_json::Value>, &[Action]) -> Verify,
    /// The facts the user of a task states, from its instructions and gold.
    facts: fn(&Task, &[Action]) -> Facts,
}

/// A task's facts: (name, value), in the order they are found.
type Facts = Vec<(String, String)>;

/// The domains the importer knows.
const DOMAINS: [&Domain; 2] = [&retail::RETAIL, &airline::AIRLINE];

/// The top-level fields of `db.json`, read to tell its domain.
#[derive(Deserialize)]
struct DbTables {
    #[serde(flatten)]
    tables: std::collections::BTreeMap<String, IgnoredAny>,
}

/// The domain whose tables `db.json` holds: the first whose table (other than
/// `users`, which both have) it names; retail when it names none, so its
/// errors name retail's missing fields as they always did.
fn domain_of(db_json: &str) -> Result<&'static Domain, ImportError> {
    let db: DbTables = parse(db_json, DB)?;
    Ok(DOMAINS
        .into_iter()
        .find(|d| d.tables.iter().any(|t| *t != "users" && db.tables.contains_key(*t)))
        .unwrap_or(&retail::RETAIL))
}

/// Imports a tau2-bench domain from the texts of its files, as tau2's code
/// behaves (its quirks included).
pub fn import(db_json: &str, tasks_json: &str, policy_md: &str) -> Result<ImportedWorld, ImportError> {
    import_with(db_json, tasks_json, policy_md, Options::default())
}

/// [`import`] with the readings `options` chooses.
pub fn import_with(
    db_json: &str,
    tasks_json: &str,
    policy_md: &str,
    options: Options,
) -> Result<ImportedWorld, ImportError> {
    let domain = domain_of(db_json)?;
    if options.corrected && domain.name != "retail" {
        return Err(ImportError {
            file: DB.into(),
            line: 1,
            column: 1,
            message: format!(
                "`--corrected` reads retail's `modify_pending_order_items`; this is tau2's {} domain",
                domain.name
            ),
        });
    }
    let records = (domain.records)(db_json)?;
    let tasks: Vec<Task> = parse(tasks_json, "tasks.json")?;
    if tasks.is_empty() {
        return Err(ImportError { file: "tasks.json".into(), line: 1, column: 1, message: "no tasks".into() });
    }
    tasks::check_unique_ids(&tasks, tasks_json)?;
    let mut ron = scenario::scenario_head(domain);
    ron.push_str("        tasks: [\n");
    for (n, task) in tasks.iter().enumerate() {
        let actions = tasks::assistant_actions(domain, task, n, tasks_json)?;
        tasks::push_task(domain, &mut ron, task, n, &actions, tasks_json)?;
    }
    ron.push_str("        ],\n    ),\n)\n");
    let scenario_file = format!("{}.ron", domain.name);
    let mut files = vec![(scenario_file.clone(), ron), (format!("{}.rhai", domain.name), (domain.script)(options))];
    assert_eq!(records.len(), domain.tables.len(), "a record list per table");
    for (table, records) in domain.tables.iter().zip(records) {
        files.push((format!("{table}.json"), table_json(records)));
    }
    files.push(("policy.md".to_string(), policy_md.to_string()));
    Ok(ImportedWorld { files, tasks: tasks.len(), domain: domain.name, scenario_file })
}

// ----- reading db.json -----

/// A JSON object read in its written order (tau2's dicts keep insertion
/// order, and lookups such as `find_user_id_by_email` return the first match).
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered<T>, A::Error> {
                let mut out: Vec<(String, T)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value()?;
                    // Python keeps the last value of a repeated key, in the
                    // first one's place.
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = value,
                        None => out.push((key, value)),
                    }
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

fn parse<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, ImportError> {
    serde_json::from_str(text).map_err(|e| ImportError {
        file: file.into(),
        line: e.line().max(1),
        column: e.column().max(1),
        message: e.to_string().split(" at line ").next().unwrap_or_default().to_string(),
    })
}

// ----- conversion to values, as pydantic's model_dump writes them -----

const DB: &str = "db.json";

fn s(text: &str) -> Value {
    Value::Str(text.to_string())
}

fn f(x: f64, file: &str, what: &str) -> Result<Value, ImportError> {
    Float::new(x).map(Value::Float).ok_or_else(|| ImportError {
        file: file.into(),
        line: 1,
        column: 1,
        message: format!("field `{what}`: {x} is not a finite number"),
    })
}

fn map(pairs: Vec<(&'static str, Value)>) -> Value {
    Value::Map(pairs.into_iter().map(|(k, v)| (Key::Borrowed(k), v)).collect())
}

fn strings(list: &[String]) -> Value {
    Value::List(list.iter().map(|x| s(x)).collect())
}

fn opt<T>(v: &Option<T>, g: impl FnOnce(&T) -> Result<Value, ImportError>) -> Result<Value, ImportError> {
    v.as_ref().map_or(Ok(Value::Null), g)
}

/// A table as a JSON object of records by key, in the database's order.
fn table_json(records: Records) -> String {
    let mut out = String::from("{\n");
    for (i, (key, record)) in records.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&serde_json::to_string(key).expect("a string serialises"));
        out.push_str(": ");
        record.render_into(&mut out);
    }
    out.push_str("\n}\n");
    out
}
