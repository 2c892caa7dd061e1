//! Tool definitions (from a world), their configuration (from a scenario), drift,
//! and the catalog an agent sees.

use serde::{Deserialize, Serialize};

use crate::fault::FaultRule;
use crate::latency::Latency;
use crate::time::TimeMs;
use crate::value::{Key, Value, ValueKind};

/// The first way a response body misses its schema.
enum Problem<'s> {
    NotAnObject,
    Missing(&'s str),
    WrongKind(&'s str, ValueKind, ValueKind),
}

/// Index of a tool in its [`Catalog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ToolId(pub u16);

/// Whether a tool changes the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolKind {
    /// Reads only; safe to retry.
    Read,
    /// Changes the world; a retry may apply it twice unless an idempotency key is sent.
    Write,
}

/// One argument of a tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArgDef {
    /// Argument name.
    pub name: String,
    /// Expected kind.
    pub kind: ValueKind,
    /// Whether the call fails without it.
    pub required: bool,
    /// Whether this is an identifier (the noisy planner can misread these).
    pub is_id: bool,
    /// The values a string argument may take (empty: any), shown to agents as
    /// the schema's `enum`; the world refuses any other with a 400 naming them.
    pub one_of: Vec<String>,
}

/// One top-level field of a tool's response.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldDef {
    /// Field name.
    pub name: String,
    /// Expected kind.
    pub kind: ValueKind,
}

/// What a world says a tool is: name, meaning, arguments and response schema.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDef {
    /// Tool name, as agents call it.
    pub name: String,
    /// One line for the tool list.
    pub description: String,
    /// Read or write.
    pub kind: ToolKind,
    /// Arguments.
    pub args: Vec<ArgDef>,
    /// Response fields (top level) as documented before any drift.
    pub response: Vec<FieldDef>,
    /// Documented rules on arguments that the service itself does not enforce (the
    /// guardrail layer can).
    pub constraints: Vec<Constraint>,
    /// Free annotations shown to agents with the tool (a scripted world's
    /// `annotations`; MCP merges them into its tool annotations). Null for none.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub annotations: Value,
    /// The argument that addresses a message's recipient, for a tool that sends
    /// one: a delivered message to someone the user never named is a minefield
    /// (`crate::recipient`). The world's knowledge, not shown to agents.
    #[serde(skip)]
    pub recipient_arg: Option<String>,
    /// How a message sent through this tool reads in words, per value of its
    /// `kind` argument (`""` for a tool without one): a template whose `{arg}`
    /// places take the call's arguments (`{amount_cents}` as `$89.00`) and whose
    /// `{details}` lists every other argument. The `Speak` layer says a
    /// planner's structured message this way instead of calling the tool. The
    /// world's knowledge, not shown to agents.
    #[serde(skip)]
    pub phrasing: Vec<(String, String)>,
}

/// A documented rule on a tool's arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Constraint {
    /// The integer argument `arg` must be greater than zero.
    Positive {
        /// The argument.
        arg: String,
    },
    /// The integer argument `arg` must not exceed the integer field `field` of the
    /// latest well-formed result of `source_tool` whose field `source_key` equals this
    /// call's argument `key_arg`; and such a result must have been seen (the
    /// referenced record was looked up).
    AtMostSeen {
        /// The bounded argument (for example `amount_cents`).
        arg: String,
        /// This call's argument naming the record (for example `order_id`).
        key_arg: String,
        /// The tool whose results give the bound (for example `lookup_order`).
        source_tool: String,
        /// The field of that result holding the record's key (for example `order_id`).
        source_key: String,
        /// The field holding the bound (for example `total_cents`).
        field: String,
    },
}

impl ToolDef {
    /// A definition with no arguments or fields yet.
    pub fn new(name: &str, kind: ToolKind, description: &str) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            kind,
            args: Vec::new(),
            response: Vec::new(),
            constraints: Vec::new(),
            annotations: Value::Null,
            recipient_arg: None,
            phrasing: Vec::new(),
        }
    }

    /// Names the argument that addresses the message this tool sends.
    pub fn recipient_arg(mut self, name: &str) -> Self {
        self.recipient_arg = Some(name.into());
        self
    }

    /// Says how a message of `kind` sent through this tool reads in words (see
    /// [`ToolDef::phrasing`]).
    pub fn phrase(mut self, kind: &str, template: &str) -> Self {
        self.phrasing.push((kind.into(), template.into()));
        self
    }

    /// The template of a message of `kind`, if the tool says one.
    pub fn phrasing_of(&self, kind: &str) -> Option<&str> {
        self.phrasing.iter().find(|(k, _)| k == kind).map(|(_, t)| t.as_str())
    }

    /// Adds a required string argument that takes one of `values`.
    pub fn arg_one_of(mut self, name: &str, values: &[&str]) -> Self {
        let one_of = values.iter().map(|v| v.to_string()).collect();
        self.args.push(ArgDef { name: name.into(), kind: ValueKind::Str, required: true, is_id: false, one_of });
        self
    }

    /// Adds an argument.
    pub fn arg(mut self, name: &str, kind: ValueKind, required: bool) -> Self {
        self.args.push(ArgDef { name: name.into(), kind, required, is_id: false, one_of: Vec::new() });
        self
    }

    /// Adds a required identifier argument.
    pub fn id_arg(mut self, name: &str) -> Self {
        self.args.push(ArgDef {
            name: name.into(),
            kind: ValueKind::Str,
            required: true,
            is_id: true,
            one_of: Vec::new(),
        });
        self
    }

    /// Adds a documented argument rule.
    pub fn constraint(mut self, constraint: Constraint) -> Self {
        self.constraints.push(constraint);
        self
    }

    /// Adds a response field.
    pub fn field(mut self, name: &str, kind: ValueKind) -> Self {
        self.response.push(FieldDef { name: name.into(), kind });
        self
    }
}

/// How a scenario configures one tool: latency, client timeout, faults and drift.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// Service latency of a successful call (default: uniform 50..=250 ms).
    #[serde(default = "default_latency")]
    pub latency: Latency,
    /// How long the client waits before it gives up on a call (default 10 s).
    #[serde(default = "default_timeout_ms", deserialize_with = "crate::time::bounded_ms")]
    pub timeout_ms: TimeMs,
    /// Fault rules, checked in order; the first that fires decides the fault
    /// (rate limits and extra latency combine with it).
    #[serde(default)]
    pub faults: Vec<FaultRule>,
    /// Changes to the response format at given virtual times.
    #[serde(default)]
    pub drift: Vec<Drift>,
    /// An explicit schedule: when set, `faults` no longer decide anything and exactly
    /// these calls suffer exactly these faults (several entries for one call combine
    /// like rules: extra latency adds up, the first other fault decides). Shrunk
    /// incidents and property tests use it; so can a hand-written scenario.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "explicit_faults")]
    pub explicit_faults: Option<Vec<CallFault>>,
    /// Calls recorded in production (`agentsim import-trace`): the n-th call of the
    /// tool takes the n-th entry's latency and suffers its fault (and any
    /// `explicit_faults` entry for it); calls past the end of the trace fall back to
    /// `faults`, unless `explicit_faults` is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TracedCall>,
}

/// One call as a production trace recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracedCall {
    /// How long the call took (None: drawn from `latency` as usual).
    #[serde(default, deserialize_with = "crate::time::bounded_ms_opt")]
    pub latency_ms: Option<TimeMs>,
    /// What the call suffered (None: it succeeded).
    #[serde(default)]
    pub fault: Option<crate::fault::Fault>,
}

/// A fault on one numbered call of a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallFault {
    /// The tool's call number, from 1.
    #[serde(deserialize_with = "call_number")]
    pub call: u64,
    /// What that call suffers.
    pub fault: crate::fault::Fault,
}

/// A call number: calls are counted from 1.
fn call_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let call = u64::deserialize(deserializer)?;
    if call == 0 {
        return Err(serde::de::Error::custom("field `call`: calls are counted from 1, found 0"));
    }
    Ok(call)
}

/// An explicit schedule in which no entry is repeated and no call has two faults
/// that decide it (after the first, another would never apply). Extra latency
/// adds up and a rate limit is a state, so those may share a call with another.
fn explicit_faults<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<CallFault>>, D::Error> {
    use crate::fault::Fault;
    let entries = Option::<Vec<CallFault>>::deserialize(deserializer)?;
    if let Some(entries) = &entries {
        let mut deciding = std::collections::BTreeSet::new();
        for (i, entry) in entries.iter().enumerate() {
            let decides = !matches!(entry.fault, Fault::Latency { .. } | Fault::RateLimit { .. });
            if decides && !deciding.insert(entry.call) {
                return Err(serde::de::Error::custom(format!(
                    "field `explicit_faults`: entry {i} gives call {} a second fault ({:?}); only the first would apply",
                    entry.call, entry.fault
                )));
            }
        }
    }
    Ok(entries)
}

fn default_latency() -> Latency {
    Latency::Uniform { min_ms: 50, max_ms: 250 }
}
fn default_timeout_ms() -> TimeMs {
    10_000
}

impl Default for ToolConfig {
    fn default() -> Self {
        Self {
            latency: default_latency(),
            timeout_ms: default_timeout_ms(),
            faults: Vec::new(),
            drift: Vec::new(),
            explicit_faults: None,
            trace: Vec::new(),
        }
    }
}

/// A change to a tool's responses from a virtual time on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drift {
    /// When the change takes effect.
    #[serde(deserialize_with = "crate::time::bounded_ms")]
    pub at_ms: TimeMs,
    /// What changes.
    pub change: DriftChange,
}

/// The kinds of drift.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DriftChange {
    /// A field is renamed (at any depth of the response).
    RenameField {
        /// Old name.
        from: String,
        /// New name.
        to: String,
    },
    /// A field disappears (at any depth).
    RemoveField {
        /// The field.
        field: String,
    },
    /// An integer field changes unit: values are divided by `divide_by` (for example
    /// cents become whole currency units with 100).
    UnitChange {
        /// The field.
        field: String,
        /// The divisor, at least 1.
        #[serde(deserialize_with = "divisor")]
        divide_by: i64,
    },
}

impl DriftChange {
    /// Applies the change to a response body, recursively.
    pub fn apply(&self, value: &mut Value) {
        match value {
            Value::Map(pairs) => {
                match self {
                    DriftChange::RenameField { from, to } => {
                        for (k, _) in pairs.iter_mut() {
                            if k == from {
                                *k = Key::Owned(to.clone());
                            }
                        }
                    }
                    DriftChange::RemoveField { field } => pairs.retain(|(k, _)| k != field),
                    DriftChange::UnitChange { field, divide_by } => {
                        for (k, v) in pairs.iter_mut() {
                            if k == field
                                && let Value::Int(n) = v
                            {
                                *n /= (*divide_by).max(1);
                            }
                        }
                    }
                }
                for (_, v) in pairs.iter_mut() {
                    self.apply(v);
                }
            }
            Value::List(items) => items.iter_mut().for_each(|v| self.apply(v)),
            _ => {}
        }
    }
}

/// A unit change's divisor: at least 1 (dividing by 0 or a negative makes no unit).
fn divisor<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let divide_by = i64::deserialize(deserializer)?;
    if divide_by < 1 {
        return Err(serde::de::Error::custom(format!(
            "field `divide_by`: expected a divisor of at least 1, found {divide_by}"
        )));
    }
    Ok(divide_by)
}

/// A tool as the simulation runs it: its definition plus its configuration.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    /// What the tool is.
    pub def: ToolDef,
    /// How it behaves.
    pub config: ToolConfig,
}

/// The name of the engine-provided tool that renews an expired session.
pub const AUTHENTICATE: &str = "authenticate";

/// The tools of a scenario, shared read-only by every trajectory.
#[derive(Clone, Debug)]
pub struct Catalog {
    specs: Vec<ToolSpec>,
    /// By tool: whether its answers' field names never drift and are distinct,
    /// so that a field found at its documented position is the one
    /// [`Value::get`] would find (see [`Catalog::conforms`]).
    fixed_schema: Vec<bool>,
    /// Unique to this catalog and its clones (which hold the same tools: a
    /// catalog never changes once made): the key under which a reply's body
    /// keeps what a check against it found (`call::Body`).
    id: u64,
}

/// The id of the next catalog made.
static NEXT_CATALOG_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Catalog {
    /// A catalog of the given tools plus the engine's `authenticate` tool (which
    /// renews a session expired by an `AuthExpired` fault), unless already present.
    pub fn new(mut specs: Vec<ToolSpec>) -> Self {
        if !specs.iter().any(|s| s.def.name == AUTHENTICATE) {
            specs.push(ToolSpec {
                def: ToolDef::new(AUTHENTICATE, ToolKind::Read, "Renews the session token after a 401.")
                    .field("token", ValueKind::Str),
                config: ToolConfig { latency: Latency::Uniform { min_ms: 80, max_ms: 200 }, ..ToolConfig::default() },
            });
        }
        assert!(specs.len() < u16::MAX as usize, "too many tools");
        let fixed_schema = specs
            .iter()
            .map(|spec| {
                let fields = &spec.def.response;
                spec.config.drift.is_empty()
                    && fields.iter().enumerate().all(|(i, f)| fields[..i].iter().all(|g| g.name != f.name))
            })
            .collect();
        // Only the id's uniqueness matters, never its value: nothing
        // reaches an output from it.
        let id = NEXT_CATALOG_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self { specs, fixed_schema, id }
    }

    /// The id of the tool called `name`.
    pub fn id(&self, name: &str) -> Option<ToolId> {
        self.specs.iter().position(|s| s.def.name == name).map(|i| ToolId(i as u16))
    }

    /// The tool with this id. Panics on an id from another catalog.
    pub fn spec(&self, id: ToolId) -> &ToolSpec {
        &self.specs[id.0 as usize]
    }

    /// The tool's name.
    pub fn name(&self, id: ToolId) -> &str {
        &self.spec(id).def.name
    }

    /// All tools, in id order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The name under which the documented field `original` appears in responses at
    /// `at_ms` (following renames), or `None` once it has been removed.
    ///
    /// Borrowed, not owned: every response check and every field a planner reads
    /// asks this, and an owned name was an allocation per read.
    pub fn field_name_at<'s>(&'s self, id: ToolId, original: &'s str, at_ms: TimeMs) -> Option<&'s str> {
        let mut name = original;
        for drift in self.spec(id).config.drift.iter().filter(|d| d.at_ms <= at_ms) {
            match &drift.change {
                DriftChange::RenameField { from, to } if from == name => name = to,
                DriftChange::RemoveField { field } if field == name => return None,
                _ => {}
            }
        }
        Some(name)
    }

    /// Checks every fault that names a field of a tool's answer (a `Corrupt`
    /// rule, explicit entry or traced call) against the tool's documented schema:
    /// the path starts at a documented field, a one-field path's corruption fits
    /// the field's kind, and an old value is asked of a read. Returns the first
    /// problem, with the tool and the text to point at, for the scenario to locate.
    pub fn check_fault_paths(&self) -> Result<(), FaultPathError> {
        use crate::fault::Fault;
        for spec in &self.specs {
            let config = &spec.config;
            let faults = config
                .faults
                .iter()
                .map(|r| &r.fault)
                .chain(config.explicit_faults.iter().flatten().map(|e| &e.fault))
                .chain(config.trace.iter().filter_map(|t| t.fault.as_ref()));
            for fault in faults {
                if let Fault::PartialCommit { arg, .. } = fault {
                    self.check_partial_commit(spec, arg)?;
                }
                if matches!(fault, Fault::DuplicateEffect | Fault::PartialCommit { .. })
                    && spec.def.kind != ToolKind::Write
                {
                    return Err(FaultPathError {
                        tool: spec.def.name.clone(),
                        needle: spec.def.name.clone(),
                        kind: FaultPathErrorKind::NeedsWrite,
                        message: format!("field `fault`: {fault:?} needs a write, and `{}` is a read", spec.def.name),
                    });
                }
                match fault {
                    Fault::Inject { path, tool, args, .. } => self.check_injection(spec, path, tool, args)?,
                    Fault::Corrupt { path, corruption } => check_corruption(spec, path, corruption)?,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// An injection goes into a documented field (a string, for a one-field path)
    /// and asks for a tool of this catalog with arguments it takes.
    fn check_injection(
        &self,
        spec: &ToolSpec,
        path: &crate::fault::FieldPath,
        tool: &str,
        args: &std::collections::BTreeMap<String, crate::inject::InjectedArg>,
    ) -> Result<(), FaultPathError> {
        let problem = |kind, needle: &str, message: String| {
            Err(FaultPathError { tool: spec.def.name.clone(), needle: needle.to_string(), kind, message })
        };
        match spec.def.response.iter().find(|f| f.name == path.top()) {
            None => {
                return problem(
                    FaultPathErrorKind::UnknownField,
                    path.as_str(),
                    format!("field `path`: `{}` answers no field `{}`", spec.def.name, path.top()),
                );
            }
            Some(f) if path.segments().count() == 1 && f.kind != ValueKind::Str => {
                return problem(
                    FaultPathErrorKind::WrongKind,
                    path.as_str(),
                    format!(
                        "field `path`: text goes into a string, and `{}` of `{}` is {:?}",
                        f.name, spec.def.name, f.kind
                    ),
                );
            }
            Some(_) => {}
        }
        let Some(target) = self.specs.iter().find(|s| s.def.name == tool) else {
            return problem(
                FaultPathErrorKind::UnknownTool,
                tool,
                format!("field `tool`: no tool `{tool}` to ask for"),
            );
        };
        if let Some(name) = args.keys().find(|name| !target.def.args.iter().any(|a| a.name == **name)) {
            return problem(
                FaultPathErrorKind::UnknownArgument,
                name,
                format!("field `args`: `{tool}` takes no argument `{name}`"),
            );
        }
        Ok(())
    }

    /// A partial commit's `arg` is an integer argument of the tool.
    fn check_partial_commit(&self, spec: &ToolSpec, arg: &str) -> Result<(), FaultPathError> {
        match spec.def.args.iter().find(|a| a.name == arg) {
            Some(a) if a.kind == ValueKind::Int => Ok(()),
            found => {
                let ints: Vec<&str> =
                    spec.def.args.iter().filter(|a| a.kind == ValueKind::Int).map(|a| a.name.as_str()).collect();
                let what = if found.is_some() { "is not an integer argument" } else { "is no argument" };
                Err(FaultPathError {
                    tool: spec.def.name.clone(),
                    needle: arg.to_string(),
                    kind: if found.is_some() {
                        FaultPathErrorKind::WrongKind
                    } else {
                        FaultPathErrorKind::UnknownArgument
                    },
                    message: format!(
                        "field `arg`: `{arg}` {what} of `{}` (its integer arguments: {})",
                        spec.def.name,
                        if ints.is_empty() { "none".to_string() } else { ints.join(", ") }
                    ),
                })
            }
        }
    }

    /// Whether any call may be served from the past: a tool with a `Stale` fault
    /// (a rule, an explicit entry or a traced call). A world that keeps earlier
    /// states only to serve stale reads need not keep them otherwise.
    pub fn may_serve_stale(&self) -> bool {
        let stale = |f: &crate::fault::Fault| matches!(f, crate::fault::Fault::Stale { .. });
        self.specs.iter().any(|spec| {
            let config = &spec.config;
            config.faults.iter().any(|rule| stale(&rule.fault))
                || config.explicit_faults.iter().flatten().any(|entry| stale(&entry.fault))
                || config.trace.iter().any(|call| call.fault.as_ref().is_some_and(stale))
        })
    }

    /// Checks a response body against the tool's documented schema as of `at_ms`
    /// (drift included). Returns the first problem found.
    pub fn check_response(&self, id: ToolId, at_ms: TimeMs, body: &Value) -> Result<(), ResponseError> {
        match self.first_problem(id, at_ms, body) {
            None => Ok(()),
            Some(Problem::NotAnObject) => Err(ResponseError::NotAnObject),
            Some(Problem::Missing(name)) => Err(ResponseError::Missing { field: name.to_string() }),
            Some(Problem::WrongKind(name, expected, found)) => {
                Err(ResponseError::WrongKind { field: name.to_string(), expected, found })
            }
        }
    }

    /// Whether a response body matches the tool's schema as of `at_ms`: what
    /// [`Catalog::check_response`] accepts, without building the message (every
    /// layer asks this of every result).
    pub fn conforms(&self, id: ToolId, at_ms: TimeMs, body: &Value) -> bool {
        self.first_problem(id, at_ms, body).is_none()
    }

    /// How many of the tool's drift changes have happened by `at_ms`: two
    /// times with the same count see the same schema (no change lies between
    /// them), so a check's answer holds across them.
    pub(crate) fn schema_span(&self, id: ToolId, at_ms: TimeMs) -> u32 {
        let drift = &self.spec(id).config.drift;
        drift.iter().filter(|d| d.at_ms <= at_ms).count() as u32
    }

    /// This catalog's unique id (see the field `id`).
    pub(crate) fn unique_id(&self) -> u64 {
        self.id
    }

    fn first_problem<'s>(&'s self, id: ToolId, at_ms: TimeMs, body: &Value) -> Option<Problem<'s>> {
        let Value::Map(pairs) = body else { return Some(Problem::NotAnObject) };
        let fixed = self.fixed_schema[usize::from(id.0)];
        // Worlds answer in the documented order, so each field is looked for at
        // its own position first. While every earlier field was found at its
        // own, no earlier pair holds this field's name (the names are
        // distinct), so the pair there is the one `Value::get` finds.
        let mut aligned = fixed;
        for (i, field) in self.spec(id).def.response.iter().enumerate() {
            let name = if fixed {
                field.name.as_str()
            } else {
                let Some(name) = self.field_name_at(id, &field.name, at_ms) else { continue };
                name
            };
            let found = match pairs.get(i) {
                Some((key, value)) if aligned && key == name => Some(value),
                _ => {
                    aligned = false;
                    body.get(name)
                }
            };
            match found {
                None => return Some(Problem::Missing(name)),
                Some(v) if v.kind() != field.kind => return Some(Problem::WrongKind(name, field.kind, v.kind())),
                Some(_) => {}
            }
        }
        None
    }
}

/// A `Corrupt` rule's path starts at a documented field of the tool's answer,
/// and its corruption fits that field (for a one-field path) and the tool.
fn check_corruption(
    spec: &ToolSpec,
    path: &crate::fault::FieldPath,
    corruption: &crate::fault::Corruption,
) -> Result<(), FaultPathError> {
    use crate::fault::Corruption;
    let problem = |kind, message: String| {
        Err(FaultPathError { tool: spec.def.name.clone(), needle: path.as_str().to_string(), kind, message })
    };
    let Some(field) = spec.def.response.iter().find(|f| f.name == path.top()) else {
        let known: Vec<&str> = spec.def.response.iter().map(|f| f.name.as_str()).collect();
        return problem(
            FaultPathErrorKind::UnknownField,
            format!(
                "field `path`: `{}` answers no field `{}` (its fields: {})",
                spec.def.name,
                path.top(),
                known.join(", ")
            ),
        );
    };
    if matches!(corruption, Corruption::Old { .. }) && spec.def.kind == ToolKind::Write {
        return problem(
            FaultPathErrorKind::NeedsRead,
            format!(
                "field `corruption`: `Old` needs a read, and `{}` is a write (its answer has no past)",
                spec.def.name
            ),
        );
    }
    let expected = match corruption {
        Corruption::OneOf(_) => Some(ValueKind::Str),
        Corruption::Offset(_) => Some(ValueKind::Int),
        Corruption::DropItem => Some(ValueKind::List),
        Corruption::Factor(_) | Corruption::Old { .. } => None,
    };
    let one_field = path.segments().count() == 1;
    if let Some(kind) = expected
        && one_field
        && field.kind != kind
    {
        return problem(
            FaultPathErrorKind::WrongKind,
            format!(
                "field `corruption`: {corruption:?} needs a field of kind {kind:?}, and `{}` of `{}` is {:?}",
                field.name, spec.def.name, field.kind
            ),
        );
    }
    if matches!(corruption, Corruption::Factor(_))
        && one_field
        && !matches!(field.kind, ValueKind::Int | ValueKind::Float)
    {
        return problem(
            FaultPathErrorKind::WrongKind,
            format!(
                "field `corruption`: Factor needs a number, and `{}` of `{}` is {:?}",
                field.name, spec.def.name, field.kind
            ),
        );
    }
    Ok(())
}

/// What kind of problem a fault that names part of a tool's answer or arguments has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultPathErrorKind {
    /// A fault that only a write can suffer, on a read.
    NeedsWrite,
    /// A fault that only a read can suffer (`Old`), on a write.
    NeedsRead,
    /// A path whose first field the tool does not answer.
    UnknownField,
    /// A field or argument of another kind than the fault needs.
    WrongKind,
    /// An injection that asks for a tool the catalog does not have.
    UnknownTool,
    /// An argument the tool does not take.
    UnknownArgument,
}

/// A fault that names a field or argument its tool does not have (or not of
/// the kind it needs): [`Catalog::check_fault_paths`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultPathError {
    /// The tool whose fault is at fault.
    pub tool: String,
    /// The text to point at in the tool's section (the path, argument or tool named).
    pub needle: String,
    /// What kind of problem.
    pub kind: FaultPathErrorKind,
    /// The message users see.
    pub message: String,
}

impl std::fmt::Display for FaultPathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FaultPathError {}

/// Why a response body does not match its tool's documented schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResponseError {
    /// The body is not an object.
    NotAnObject,
    /// A documented field is missing.
    Missing {
        /// The field, as named at the time of the call (drift included).
        field: String,
    },
    /// A documented field has another kind.
    WrongKind {
        /// The field, as named at the time of the call.
        field: String,
        /// The documented kind.
        expected: ValueKind,
        /// The kind found.
        found: ValueKind,
    },
}

impl std::fmt::Display for ResponseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseError::NotAnObject => f.write_str("response is not an object"),
            ResponseError::Missing { field } => write!(f, "missing field `{field}`"),
            ResponseError::WrongKind { field, expected, found } => {
                write!(f, "field `{field}`: expected {expected:?}, found {found:?}")
            }
        }
    }
}

impl std::error::Error for ResponseError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check as written before fields were looked for at their position:
    /// every field by `Value::get`.
    fn first_problem_by_name(catalog: &Catalog, id: ToolId, at_ms: TimeMs, body: &Value) -> Option<String> {
        if !matches!(body, Value::Map(_)) {
            return Some("not an object".into());
        }
        for field in &catalog.spec(id).def.response {
            let Some(name) = catalog.field_name_at(id, &field.name, at_ms) else { continue };
            match body.get(name) {
                None => return Some(format!("missing {name}")),
                Some(v) if v.kind() != field.kind => return Some(format!("{name}: {:?}", v.kind())),
                Some(_) => {}
            }
        }
        None
    }

    fn problem(catalog: &Catalog, id: ToolId, at_ms: TimeMs, body: &Value) -> Option<String> {
        match catalog.first_problem(id, at_ms, body)? {
            Problem::NotAnObject => Some("not an object".into()),
            Problem::Missing(name) => Some(format!("missing {name}")),
            Problem::WrongKind(name, _, found) => Some(format!("{name}: {found:?}")),
        }
    }

    #[test]
    fn fields_found_at_their_position_are_those_found_by_name() {
        let tool = |name: &str, drift: Vec<Drift>| ToolSpec {
            def: ToolDef::new(name, ToolKind::Read, "")
                .field("id", ValueKind::Str)
                .field("total", ValueKind::Int)
                .field("items", ValueKind::List),
            config: ToolConfig { drift, ..ToolConfig::default() },
        };
        let twice = ToolSpec {
            def: ToolDef::new("twice", ToolKind::Read, "").field("a", ValueKind::Int).field("a", ValueKind::Str),
            config: ToolConfig::default(),
        };
        let renamed =
            vec![Drift { at_ms: 10, change: DriftChange::RenameField { from: "id".into(), to: "total".into() } }];
        let catalog = Catalog::new(vec![tool("plain", Vec::new()), tool("drifting", renamed), twice]);
        let (s, i, l) = (Value::str("x"), Value::Int(1), Value::List(Vec::new()));
        let bodies = [
            Value::Null,
            Value::map([("id", s.clone()), ("total", i.clone()), ("items", l.clone())]),
            Value::map([("total", i.clone()), ("id", s.clone()), ("items", l.clone())]),
            Value::map([("id", s.clone()), ("id", i.clone()), ("total", i.clone()), ("items", l.clone())]),
            Value::map([("id", i.clone()), ("total", i.clone()), ("id", s.clone()), ("items", l.clone())]),
            Value::map([("id", s.clone()), ("items", l.clone())]),
            Value::map([("id", s.clone()), ("total", s.clone()), ("items", l.clone())]),
            Value::map([("a", i.clone()), ("a", s.clone())]),
            Value::map([("a", s.clone()), ("a", i.clone())]),
            Value::map([("total", s.clone()), ("total", i.clone()), ("items", l.clone())]),
        ];
        for id in 0..3 {
            for at_ms in [0, 10] {
                for body in &bodies {
                    let id = ToolId(id);
                    assert_eq!(problem(&catalog, id, at_ms, body), first_problem_by_name(&catalog, id, at_ms, body));
                }
            }
        }
        assert_eq!(catalog.fixed_schema, [true, false, false, true]);
    }
}
