//! Refuses calls that break a tool's documented rules before they reach the tool.
//!
//! Services often document rules they do not enforce: "the amount must be
//! positive", "a refund may not exceed the order total". A negative refund that the
//! API happily accepts charges the customer instead of refunding them. This layer
//! enforces each tool's documented [`Constraint`]s on outgoing calls:
//!
//! - `Positive { arg }`: the integer `arg` must be greater than zero.
//! - `AtMostSeen { arg, key_arg, source_tool, source_key, field }`: the record the
//!   call names must have been looked up (a well-formed result of `source_tool`
//!   passed up through this layer), and `arg` must not exceed its `field`. Requiring
//!   the lookup is what catches a misread id: the planner acts on a record it never
//!   saw.
//!
//! Declarative `rules` add the stack owner's own policy on top:
//!
//! - `ArgRange { tool, arg, min, max }`: the integer argument must lie in
//!   `[min, max]` (either bound optional); a non-integer is refused.
//! - `RequireBefore { tool, required }`: `tool` may be called only after a
//!   well-formed success of `required` passed up through this layer (a lookup
//!   before a refund, a confirmation message before a write).
//! - `FromUser { tool, arg }`: the string argument must appear in something the
//!   user said (a message that passed up through this layer). A reply addressed
//!   by id goes to the person the agent is talking to, not to an id misread from
//!   a record: the `message_to_wrong_customer` that `AtMostSeen` cannot catch,
//!   because a message reads no record.
//!
//! - `Provenance { tool, args, trusted }`: each named argument of `tool` must come
//!   from the user (a string or number in something the user said) or be a whole
//!   value of a well-formed answer of a `trusted` tool (an amount from the order
//!   lookup, an id from the customer's order list). A value that appears only
//!   inside free text (an instruction injected into a status or a description)
//!   comes from neither: the defence against prompt injection through tool
//!   output. `FromUser` is `Provenance` with no trusted tool and one argument.
//!
//! A refused call never leaves the layer: the inner agent is told why
//! (`Input::Blocked`) and decides again, at most [`REFUSALS_MAX`] times in a row
//! before the layer halts the run (a planner that keeps proposing refused calls is
//! looping).

use agentsim_engine::{
    Action, Agent, AgentCx, Catalog, Constraint, Finish, Input, Reply, TimeMs, ToolCall, ToolId, Value,
};
use serde::{Deserialize, Serialize};

use crate::catalog;

/// Refusals in a row within one step before the guardrail halts the run.
pub const REFUSALS_MAX: u32 = 8;

/// Looked-up records remembered; the oldest is forgotten first (a call about a
/// forgotten record is refused, the safe side).
pub const SEEN_MAX: usize = 64;

/// What the [`Guardrail`] enforces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardrailConfig {
    /// Enforce the constraints each tool documents (default true).
    pub enforce_tool_constraints: bool,
    /// Tools the agent may never call, by name (default none). Names the catalog
    /// does not have are ignored here; stack validation reports them.
    pub forbidden_tools: Vec<String>,
    /// The stack owner's own rules over actions (default none).
    pub rules: Vec<Rule>,
}

impl Default for GuardrailConfig {
    fn default() -> Self {
        Self { enforce_tool_constraints: true, forbidden_tools: Vec::new(), rules: Vec::new() }
    }
}

/// A declarative rule over the calls an agent makes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rule {
    /// The integer argument `arg` of `tool` must be in `[min, max]`.
    ArgRange {
        /// The tool, by name.
        tool: String,
        /// The argument.
        arg: String,
        /// Smallest allowed value (optional).
        #[serde(default)]
        min: Option<i64>,
        /// Largest allowed value (optional).
        #[serde(default)]
        max: Option<i64>,
    },
    /// `tool` may be called only after a well-formed success of `required`.
    RequireBefore {
        /// The gated tool, by name.
        tool: String,
        /// The tool that must have succeeded first.
        required: String,
    },
    /// The string argument `arg` of `tool` must appear in a message from the user.
    FromUser {
        /// The tool, by name.
        tool: String,
        /// The argument (a string: an id, a name).
        arg: String,
    },
    /// Each of `args` of `tool` must come from the user, or be a whole value of a
    /// well-formed answer of one of the `trusted` tools.
    Provenance {
        /// The tool, by name.
        tool: String,
        /// The arguments checked (strings or integers).
        args: Vec<String>,
        /// Tools whose answers' values may be used, by name (default none).
        #[serde(default)]
        trusted: Vec<String>,
    },
}

impl Rule {
    /// The tool names the rule mentions.
    pub fn tools(&self) -> Vec<&str> {
        self.tool_fields().into_iter().map(|(_, tool)| tool).collect()
    }

    /// The tool names the rule mentions, each with its field as a stack file
    /// writes it (`tool`, `required`, `trusted`).
    pub fn tool_fields(&self) -> Vec<(&'static str, &str)> {
        match self {
            Rule::ArgRange { tool, .. } | Rule::FromUser { tool, .. } => vec![("tool", tool)],
            Rule::RequireBefore { tool, required } => vec![("tool", tool), ("required", required)],
            Rule::Provenance { tool, trusted, .. } => std::iter::once(("tool", tool.as_str()))
                .chain(trusted.iter().map(|t| ("trusted", t.as_str())))
                .collect(),
        }
    }
}

/// A well-formed result of a tool that some constraint reads bounds from.
#[derive(Clone, Debug)]
struct Seen {
    tool: ToolId,
    /// When it arrived: its field names and units are those in effect then.
    at_ms: TimeMs,
    /// The fields of the body that constraints read (their names as of
    /// `at_ms`), in the body's order: `get` of any of those names answers as
    /// the whole body would, and the rest of it is never read.
    body: Value,
}

/// Why a call is refused.
struct Refusal {
    rule: &'static str,
    detail: String,
}

/// A stack layer that refuses calls breaking documented tool rules.
///
/// It remembers the well-formed results of the tools that constraints read bounds
/// from (the latest [`SEEN_MAX`] of them) as they pass up through it, and checks
/// every call the inner agent makes. A refused call is answered with
/// `Input::Blocked` to the inner agent, at most [`REFUSALS_MAX`] times in a row
/// within one step; then the run is halted.
pub struct Guardrail {
    inner: Box<dyn Agent>,
    config: GuardrailConfig,
    seen: Vec<Seen>,
    /// Tools with a well-formed success so far (for `RequireBefore`).
    succeeded: Vec<ToolId>,
    /// What the user said, the latest [`SEEN_MAX`] messages (for `FromUser`).
    heard: Vec<String>,
    /// Whole values of trusted tools' answers, the latest [`TRUSTED_VALUES_MAX`]
    /// (for `Provenance`).
    trusted_values: Vec<Value>,
}

/// Values of trusted answers remembered for `Provenance`; the oldest go first.
pub const TRUSTED_VALUES_MAX: usize = 1_024;

/// The strings and integers of `value`, at any depth.
fn leaves(value: &Value, out: &mut Vec<Value>) {
    // Walked with an explicit stack ([`Value::leaves`]): no depth overflows it.
    out.extend(value.leaves().filter(|v| matches!(v, Value::Str(_) | Value::Int(_))).cloned());
}

impl Guardrail {
    /// Wraps `inner`. The guardrail draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: GuardrailConfig) -> Self {
        Self { inner, config, seen: Vec::new(), succeeded: Vec::new(), heard: Vec::new(), trusted_values: Vec::new() }
    }

    /// Remembers what the user said (when a rule asks for it) and a well-formed
    /// success of a tool that constraints read from.
    fn observe(&mut self, input: &Input, cx: &AgentCx<'_>) {
        if let Input::User(message) = input
            && self.config.rules.iter().any(|r| matches!(r, Rule::FromUser { .. } | Rule::Provenance { .. }))
        {
            if self.heard.len() >= SEEN_MAX {
                self.heard.remove(0);
            }
            self.heard.push(message.text.clone());
        }
        let Input::Tool(result) = input else { return };
        let Reply::Ok(body) = &result.reply else {
            return;
        };
        let tool = result.call.tool;
        // Checked once for the three uses below (every result passes here).
        if !catalog::well_formed(cx.catalog, tool, cx.now_ms, &result.reply) {
            return;
        }
        let name = catalog::def(cx.catalog, tool).map(|d| d.name.as_str());
        let is_this = |t: &String| Some(t.as_str()) == name;
        let trusted = self
            .config
            .rules
            .iter()
            .any(|r| matches!(r, Rule::Provenance { trusted, .. } if trusted.iter().any(is_this)));
        if trusted {
            leaves(body, &mut self.trusted_values);
            let excess = self.trusted_values.len().saturating_sub(TRUSTED_VALUES_MAX);
            self.trusted_values.drain(..excess);
        }
        if !self.succeeded.contains(&tool) {
            self.succeeded.push(tool);
        }
        let Some(names) = source_fields(cx.catalog, tool, cx.now_ms) else {
            return;
        };
        if self.seen.len() >= SEEN_MAX {
            self.seen.remove(0);
        }
        self.seen.push(Seen { tool, at_ms: cx.now_ms, body: fields_read(body, &names) });
    }

    fn refusal(&self, call: &ToolCall, catalog: &Catalog) -> Option<Refusal> {
        let def = catalog::def(catalog, call.tool)?;
        if self.config.forbidden_tools.contains(&def.name) {
            return Some(Refusal { rule: "forbidden", detail: format!("`{}` is a forbidden tool", def.name) });
        }
        if let Some(refusal) = self.config.rules.iter().find_map(|rule| self.broken(rule, call, &def.name, catalog)) {
            return Some(refusal);
        }
        if !self.config.enforce_tool_constraints {
            return None;
        }
        def.constraints.iter().find_map(|constraint| match constraint {
            Constraint::Positive { arg } => positive(call, arg),
            Constraint::AtMostSeen { arg, key_arg, source_tool, source_key, field } => {
                self.at_most_seen(call, catalog, arg, key_arg, source_tool, source_key, field)
            }
        })
    }

    /// Whether `call` (to the tool called `name`) breaks `rule`.
    fn broken(&self, rule: &Rule, call: &ToolCall, name: &str, catalog: &Catalog) -> Option<Refusal> {
        match rule {
            Rule::ArgRange { tool, arg, min, max } if tool == name => {
                let value = call.args.get(arg)?;
                let in_range =
                    value.as_int().is_some_and(|n| min.is_none_or(|lo| n >= lo) && max.is_none_or(|hi| n <= hi));
                (!in_range).then(|| Refusal {
                    rule: "arg_range",
                    detail: format!(
                        "`{arg}` must be an integer in [{}, {}], got {}",
                        min.map_or("-inf".to_string(), |v| v.to_string()),
                        max.map_or("inf".to_string(), |v| v.to_string()),
                        value.render()
                    ),
                })
            }
            Rule::RequireBefore { tool, required } if tool == name => {
                let done = catalog.id(required).is_some_and(|id| self.succeeded.contains(&id));
                (!done).then(|| Refusal {
                    rule: "require_before",
                    detail: format!("`{required}` must succeed before `{tool}`"),
                })
            }
            Rule::FromUser { tool, arg } if tool == name => {
                // Nothing to check: a missing required argument is the service's to reject.
                let value = call.args.get(arg)?;
                let said = value.as_str().is_some_and(|s| !s.is_empty() && self.heard.iter().any(|t| t.contains(s)));
                (!said).then(|| Refusal {
                    rule: "from_user",
                    detail: format!("`{arg}` {} is not in anything the user said", value.render()),
                })
            }
            Rule::Provenance { tool, args, trusted } if tool == name => {
                let (arg, value) = args.iter().find_map(|arg| {
                    let value = call.args.get(arg)?;
                    (!self.provenant(value)).then_some((arg, value))
                })?;
                Some(Refusal {
                    rule: "provenance",
                    detail: format!(
                        "`{arg}` {} came neither from the user nor from a trusted answer ({})",
                        value.render(),
                        if trusted.is_empty() { "none trusted".to_string() } else { trusted.join(", ") }
                    ),
                })
            }
            Rule::ArgRange { .. } | Rule::RequireBefore { .. } | Rule::FromUser { .. } | Rule::Provenance { .. } => {
                None
            }
        }
    }

    /// Whether `value` came from the user (said by them) or from a trusted answer
    /// (a whole value of it).
    fn provenant(&self, value: &Value) -> bool {
        let said = match value {
            Value::Str(s) => !s.is_empty() && self.heard.iter().any(|t| t.contains(s.as_str())),
            Value::Int(n) => self.heard.iter().any(|t| t.contains(&n.to_string())),
            _ => false,
        };
        said || self.trusted_values.contains(value)
    }

    #[allow(clippy::too_many_arguments)] // the constraint's fields, spelled out
    fn at_most_seen(
        &self,
        call: &ToolCall,
        catalog: &Catalog,
        arg: &str,
        key_arg: &str,
        source_tool: &str,
        source_key: &str,
        field: &str,
    ) -> Option<Refusal> {
        // Nothing to bound: a missing required argument is the service's to reject.
        let value = call.args.get(arg)?;
        let Some(amount) = value.as_int() else {
            return Some(Refusal {
                rule: "at_most_seen",
                detail: format!("`{arg}` is not an integer: {}", value.render()),
            });
        };
        let key = call.args.get(key_arg).cloned().unwrap_or_default();
        let never_seen = || Refusal {
            rule: "at_most_seen",
            detail: format!("`{key_arg}` {} was never looked up with `{source_tool}`", key.render()),
        };
        // A source the catalog lacks can never have been looked up.
        let Some(source) = catalog.id(source_tool) else {
            return Some(never_seen());
        };
        let record = self.seen.iter().rev().filter(|s| s.tool == source).find(|s| {
            let name = catalog::field_name_at(catalog, source, source_key, s.at_ms);
            name.and_then(|n| s.body.get(n)) == Some(&key)
        });
        let Some(record) = record else {
            return Some(never_seen());
        };
        let bound = catalog::field_name_at(catalog, source, field, record.at_ms)
            .and_then(|name| record.body.get(name))
            .and_then(Value::as_int);
        let Some(bound) = bound else {
            return Some(never_seen());
        };
        // After a unit change the bound is in the new unit; compare the amount in it
        // too (rounded down), so a correct amount is never refused.
        let divisor = unit_divisor_at(catalog, source, field, record.at_ms);
        if amount / divisor > bound {
            let detail = format!("`{arg}` {amount} exceeds `{field}` {bound} of {}", key.render());
            return Some(Refusal { rule: "at_most_seen", detail });
        }
        None
    }
}

/// `Positive { arg }`: refuses a present argument that is not an integer above zero.
fn positive(call: &ToolCall, arg: &str) -> Option<Refusal> {
    let value = call.args.get(arg)?;
    match value.as_int() {
        Some(n) if n > 0 => None,
        _ => Some(Refusal {
            rule: "positive",
            detail: format!("`{arg}` must be a positive integer, got {}", value.render()),
        }),
    }
}

/// The entries of `body` named in `names`, in order: for each of `names`,
/// `get` answers as on `body` (the first entry of that name), and a copy of
/// a few fields costs less than a copy of the record.
fn fields_read(body: &Value, names: &[&str]) -> Value {
    match body {
        Value::Map(pairs) => {
            Value::Map(pairs.iter().filter(|(key, _)| names.contains(&key.as_ref())).cloned().collect())
        }
        // `get` finds nothing in a body that is not a map.
        _ => Value::Null,
    }
}

/// When some tool's constraint reads bounds from tool `id`: the names, in its
/// responses at `at_ms`, of the fields those constraints read (`source_key`
/// and `field`; a removed field has none). `None` when no constraint reads
/// from it.
fn source_fields(catalog: &Catalog, id: ToolId, at_ms: TimeMs) -> Option<Vec<&str>> {
    let def = catalog::def(catalog, id)?;
    let mut names = None;
    for constraint in catalog.specs().iter().flat_map(|s| &s.def.constraints) {
        let Constraint::AtMostSeen { source_tool, source_key, field, .. } = constraint else { continue };
        if *source_tool != def.name {
            continue;
        }
        let names = names.get_or_insert_with(Vec::new);
        for original in [source_key, field] {
            names.extend(catalog::field_name_at(catalog, id, original, at_ms));
        }
    }
    names
}

/// The factor by which the documented field `original` of tool `id` has been divided
/// by unit changes in effect at `at_ms` (1 when none), following renames.
fn unit_divisor_at(catalog: &Catalog, id: ToolId, original: &str, at_ms: TimeMs) -> i64 {
    let Some(spec) = catalog.specs().get(usize::from(id.0)) else {
        return 1;
    };
    let mut name = original;
    let mut divisor: i64 = 1;
    for drift in spec.config.drift.iter().filter(|d| d.at_ms <= at_ms) {
        match &drift.change {
            agentsim_engine::DriftChange::RenameField { from, to } if from == name => name = to,
            agentsim_engine::DriftChange::UnitChange { field, divide_by } if field == name => {
                divisor = divisor.saturating_mul((*divide_by).max(1));
            }
            _ => {}
        }
    }
    divisor
}

impl Agent for Guardrail {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        self.observe(&input, cx);
        let mut action = self.inner.step(input, cx);
        for _ in 0..REFUSALS_MAX {
            let Action::Call(call) = &action else {
                return action;
            };
            let Some(refusal) = self.refusal(call, cx.catalog) else {
                return action;
            };
            let tool = catalog::name(cx.catalog, call.tool);
            let reason = format!("{tool}: {}", refusal.detail);
            cx.note(
                "guardrail",
                "blocked",
                Value::map([
                    ("tool", Value::str(tool)),
                    ("rule", Value::str(refusal.rule)),
                    ("detail", Value::str(refusal.detail)),
                ]),
            );
            let blocked = Input::Blocked { call: call.clone(), layer: "guardrail", reason };
            action = self.inner.step(blocked, cx);
        }
        match &action {
            Action::Call(call) if self.refusal(call, cx.catalog).is_some() => Action::Finish(Finish::Halted {
                layer: "guardrail",
                reason: format!("{REFUSALS_MAX} refused calls in a row"),
            }),
            _ => action,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup, ok, order_body, refund, step};
    use agentsim_engine::{Drift, DriftChange, ToolConfig, ToolSpec};

    fn guardrail(actions: Vec<Action>) -> (Guardrail, testkit::Seen) {
        let (inner, seen) = Script::new(actions, testkit::idle());
        (Guardrail::new(inner, GuardrailConfig::default()), seen)
    }

    fn blocked_rule(s: &testkit::Stepped) -> Option<String> {
        let note = s.notes.iter().find(|n| n.source == "guardrail")?;
        note.detail.get("rule").and_then(Value::as_str).map(str::to_string)
    }

    #[test]
    fn lets_a_good_refund_through_after_the_lookup() {
        let catalog = testkit::catalog();
        let good = refund("o-1", 4_250);
        let (mut layer, _) = guardrail(vec![Action::Call(good.clone())]);
        let s = step(&mut layer, &catalog, 10, ok(&lookup("o-1"), order_body("o-1", 4_250)));
        assert_eq!(s.action, Action::Call(good));
        assert!(s.notes.is_empty());
    }

    #[test]
    fn refuses_negative_zero_and_non_integer_amounts() {
        let catalog = testkit::catalog();
        let mut bad_type = refund("o-1", 1);
        bad_type.args.set("amount_cents", Value::str("4,250"));
        for call in [refund("o-1", -4_250), refund("o-1", 0), bad_type] {
            let (mut layer, seen) = guardrail(vec![Action::Call(call.clone())]);
            let s = step(&mut layer, &catalog, 10, ok(&lookup("o-1"), order_body("o-1", 4_250)));
            assert_eq!(s.action, testkit::idle(), "{call:?}");
            assert_eq!(blocked_rule(&s).as_deref(), Some("positive"));
            assert!(
                matches!(&testkit::seen(&seen)[1], Input::Blocked { layer: "guardrail", call: c, .. } if *c == call)
            );
        }
    }

    #[test]
    fn refuses_more_than_the_order_total() {
        let catalog = testkit::catalog();
        let (mut layer, _) = guardrail(vec![Action::Call(refund("o-1", 4_251))]);
        let s = step(&mut layer, &catalog, 10, ok(&lookup("o-1"), order_body("o-1", 4_250)));
        assert_eq!(s.action, testkit::idle());
        assert_eq!(blocked_rule(&s).as_deref(), Some("at_most_seen"));
    }

    #[test]
    fn refuses_a_record_never_looked_up() {
        let catalog = testkit::catalog();
        // The planner looked up o-1 but refunds o-7 (a misread id).
        let (mut layer, _) = guardrail(vec![Action::Call(refund("o-7", 100))]);
        let s = step(&mut layer, &catalog, 10, ok(&lookup("o-1"), order_body("o-1", 4_250)));
        assert_eq!(s.action, testkit::idle());
        assert_eq!(blocked_rule(&s).as_deref(), Some("at_most_seen"));
        // A malformed lookup does not count as having seen the record.
        let (mut layer, _) = guardrail(vec![Action::Call(refund("o-1", 100))]);
        let mut malformed = order_body("o-1", 4_250);
        malformed.set("total_cents", Value::str("4,250"));
        let s = step(&mut layer, &catalog, 10, ok(&lookup("o-1"), malformed));
        assert_eq!(s.action, testkit::idle());
    }

    #[test]
    fn reads_through_renames_and_unit_changes() {
        let mut specs: Vec<ToolSpec> = testkit::catalog().specs().to_vec();
        specs[0].config = ToolConfig {
            drift: vec![
                Drift { at_ms: 5, change: DriftChange::RenameField { from: "total_cents".into(), to: "total".into() } },
                Drift { at_ms: 5, change: DriftChange::UnitChange { field: "total".into(), divide_by: 100 } },
            ],
            ..ToolConfig::default()
        };
        let catalog = Catalog::new(specs);
        let body = Value::map([("order_id", Value::str("o-1")), ("total", Value::Int(42))]);
        let (mut layer, _) = guardrail(vec![Action::Call(refund("o-1", 4_250))]);
        assert_eq!(
            step(&mut layer, &catalog, 10, ok(&lookup("o-1"), body.clone())).action,
            Action::Call(refund("o-1", 4_250))
        );
        let (mut layer, _) = guardrail(vec![Action::Call(refund("o-1", 4_300))]);
        assert_eq!(step(&mut layer, &catalog, 10, ok(&lookup("o-1"), body)).action, testkit::idle());
    }

    #[test]
    fn forbidden_tools_and_the_refusal_bound() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, seen) = Script::always(Action::Call(call.clone()));
        let config = GuardrailConfig {
            forbidden_tools: vec!["lookup_order".into(), "no_such_tool".into()],
            ..GuardrailConfig::default()
        };
        let mut layer = Guardrail::new(inner, config);
        let s = step(&mut layer, &catalog, 0, testkit::user("hi"));
        assert!(matches!(s.action, Action::Finish(Finish::Halted { layer: "guardrail", .. })));
        assert_eq!(s.notes.len(), REFUSALS_MAX as usize);
        assert_eq!(testkit::seen(&seen).len(), 1 + REFUSALS_MAX as usize);
    }

    #[test]
    fn declarative_rules() {
        let catalog = testkit::catalog();
        let config = GuardrailConfig {
            enforce_tool_constraints: false,
            forbidden_tools: vec![],
            rules: vec![
                Rule::ArgRange {
                    tool: "refund_order".into(),
                    arg: "amount_cents".into(),
                    min: Some(1),
                    max: Some(500),
                },
                Rule::RequireBefore { tool: "refund_order".into(), required: "list_news".into() },
            ],
        };
        let run = |call: ToolCall, first: Input| {
            let (inner, _) = Script::new([Action::Call(call)], testkit::idle());
            let mut layer = Guardrail::new(inner, config.clone());
            blocked_rule(&step(&mut layer, &catalog, 0, first))
        };
        let news_ok = ok(&testkit::news(), Value::map([("items", Value::List(vec![]))]));
        assert_eq!(run(refund("o-1", 501), news_ok.clone()).as_deref(), Some("arg_range"));
        assert_eq!(run(refund("o-1", 0), news_ok.clone()).as_deref(), Some("arg_range"));
        assert_eq!(run(refund("o-1", 500), news_ok).as_deref(), None);
        assert_eq!(run(refund("o-1", 100), testkit::user("hi")).as_deref(), Some("require_before"));
    }

    #[test]
    fn from_user_refuses_an_id_the_user_never_said() {
        let catalog = testkit::catalog();
        let config = GuardrailConfig {
            enforce_tool_constraints: false,
            forbidden_tools: vec![],
            rules: vec![Rule::FromUser { tool: "refund_order".into(), arg: "order_id".into() }],
        };
        // The user speaks first; then the planner calls.
        let run = |said: &str, call: ToolCall| {
            let (inner, _) = Script::new([testkit::idle(), Action::Call(call)], testkit::idle());
            let mut layer = Guardrail::new(inner, config.clone());
            step(&mut layer, &catalog, 0, testkit::user(said));
            blocked_rule(&step(&mut layer, &catalog, 1, Input::Wake))
        };
        assert_eq!(run("please refund o-17", refund("o-17", 5)).as_deref(), None);
        // One digit misread: o-11 was never said.
        assert_eq!(run("please refund o-17", refund("o-11", 5)).as_deref(), Some("from_user"));
        assert_eq!(run("please refund it", refund("", 5)).as_deref(), Some("from_user"));
        // A call without the argument is the service's to reject.
        let bare = ToolCall::new(catalog.id("refund_order").unwrap(), Value::map([("amount_cents", Value::Int(5))]));
        assert_eq!(run("hi", bare).as_deref(), None);
        // Other tools are not concerned.
        assert_eq!(run("hi", lookup("o-11")).as_deref(), None);
    }

    #[test]
    fn unknown_tool_ids_pass_untouched() {
        let catalog = testkit::catalog();
        let call = ToolCall::new(ToolId(999), Value::Null);
        let (mut layer, _) = guardrail(vec![Action::Call(call.clone())]);
        assert_eq!(step(&mut layer, &catalog, 0, ok(&call, Value::Null)).action, Action::Call(call));
    }

    proptest::proptest! {
        /// The fields kept of a body answer `get` as the body does, for every
        /// name kept (bodies with repeated keys included).
        #[test]
        fn kept_fields_read_as_the_body(
            pairs in proptest::collection::vec(("[a-d]", 0i64..5), 0..8),
            names in proptest::collection::vec("[a-e]", 0..4),
        ) {
            let body = Value::map(pairs.into_iter().map(|(k, v)| (k, Value::Int(v))));
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let kept = fields_read(&body, &names);
            for name in &names {
                proptest::prop_assert_eq!(kept.get(name), body.get(name));
            }
            proptest::prop_assert!(fields_read(&Value::Int(3), &names).is_null());
        }
    }
}
