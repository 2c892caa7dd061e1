//! The scenario's head, the same for every tau2 domain: its tables, script,
//! settings (tau2's hash, Python's argument errors), tools with their
//! argument schemas and default fault profile, persona and latencies.

use super::Domain;
use super::tasks::ron_string;

/// The type of a tool's argument, as its schema declares it and as a gold
/// action must give it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg {
    /// A string.
    Str,
    /// A list of strings.
    Strings,
    /// A whole number.
    Int,
    /// A string among these (a Python `Literal`).
    OneOf(&'static [&'static str]),
    /// A list of objects with these fields (each a string or a whole number).
    Objects(&'static [(&'static str, Arg)]),
}

impl Arg {
    /// The argument's JSON schema, as the scenario writes it.
    pub(crate) fn schema(self) -> String {
        match self {
            Arg::Str => "{\"type\": \"string\"}".into(),
            Arg::Strings => "{\"type\": \"array\", \"items\": {\"type\": \"string\"}}".into(),
            Arg::Int => "{\"type\": \"integer\"}".into(),
            Arg::OneOf(values) => format!(
                "{{\"type\": \"string\", \"enum\": [{}]}}",
                values.iter().map(|v| ron_string(v)).collect::<Vec<_>>().join(", ")
            ),
            Arg::Objects(fields) => format!(
                "{{\"type\": \"array\", \"items\": {{\"type\": \"object\", \"properties\": {{{}}}, \"required\": [{}]}}}}",
                fields.iter().map(|(n, t)| format!("\"{n}\": {}", t.schema())).collect::<Vec<_>>().join(", "),
                fields.iter().map(|(n, _)| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// Whether a gold action's `value` is of this type.
    pub(crate) fn admits(self, value: &serde_json::Value) -> bool {
        match (self, value) {
            (Arg::Str, serde_json::Value::String(_)) => true,
            (Arg::Strings, serde_json::Value::Array(items)) => items.iter().all(|i| i.is_string()),
            (Arg::Int, serde_json::Value::Number(n)) => n.is_i64(),
            (Arg::OneOf(values), serde_json::Value::String(s)) => values.contains(&s.as_str()),
            (Arg::Objects(fields), serde_json::Value::Array(items)) => items.iter().all(|item| {
                item.as_object().is_some_and(|o| fields.iter().all(|(n, t)| o.get(*n).is_some_and(|v| t.admits(v))))
            }),
            _ => false,
        }
    }

    /// The type in words, for an error.
    pub(crate) fn described(self) -> String {
        match self {
            Arg::Str => "string".into(),
            Arg::Strings => "list of strings".into(),
            Arg::Int => "whole number".into(),
            Arg::OneOf(values) => format!("string, one of {}", values.join(", ")),
            Arg::Objects(fields) => format!(
                "list of objects with {}",
                fields.iter().map(|(n, t)| format!("{n} ({})", t.described())).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// One tool of a domain as the world declares it.
pub(crate) struct ToolShape {
    pub(crate) name: &'static str,
    pub(crate) write: bool,
    pub(crate) description: &'static str,
    /// (argument, type) in tau2's order; all are required.
    pub(crate) args: &'static [(&'static str, Arg)],
    /// Arguments that are identifiers.
    pub(crate) ids: &'static [&'static str],
    /// Top-level response fields and types.
    pub(crate) response: &'static [(&'static str, &'static str)],
}

/// Where a domain's default fault profile puts its special faults.
pub(crate) struct FaultProfile {
    /// The read that may answer 2 minutes behind.
    pub(crate) stale_read: &'static str,
    /// The read behind a rate limit (3 calls, one more every 20 s).
    pub(crate) rate_limited: &'static str,
    /// The read whose response field is renamed from 10 minutes on: (tool,
    /// from, to).
    pub(crate) drift: (&'static str, &'static str, &'static str),
}

/// The default fault profile of an imported world (`--fault-scale 0` injects
/// no fault, the rate limit included; the drift stays and changes no state).
fn tool_config(t: &ToolShape, faults: &FaultProfile) -> String {
    const READ: &str = "(latency: LogNormal(median_ms: 120, p99_ms: 900), timeout_ms: 10_000, faults: [";
    const READ_FAULTS: &str = "(fault: Error(status: 503), probability: 0.1), (fault: Timeout, probability: 0.03)";
    if t.write {
        "(latency: LogNormal(median_ms: 250, p99_ms: 2_000), timeout_ms: 10_000, faults: [(fault: CommitThenTimeout, probability: 0.1), (fault: Error(status: 503), probability: 0.05)])".into()
    } else if t.name == faults.stale_read {
        format!("{READ}{READ_FAULTS}, (fault: Stale(lag_ms: 120_000), probability: 0.1)])")
    } else if t.name == faults.rate_limited {
        format!("{READ}(fault: RateLimit(capacity: 3, refill_ms: 20_000)), {READ_FAULTS}])")
    } else if t.name == faults.drift.0 {
        format!(
            "{READ}{READ_FAULTS}], drift: [(at_ms: 600_000, change: RenameField(from: \"{}\", to: \"{}\"))])",
            faults.drift.1, faults.drift.2
        )
    } else {
        format!("{READ}{READ_FAULTS}])")
    }
}

/// The scenario up to its tasks: the world's tables, script, settings, tools,
/// persona and latencies.
pub(crate) fn scenario_head(domain: &Domain) -> String {
    let mut ron = String::new();
    ron.push_str(domain.header);
    ron.push_str(&format!("Scenario(\n    name: \"tau2-{}\",\n", domain.name));
    ron.push_str(&format!("    description: {},\n", ron_string(domain.description)));
    ron.push_str("    horizon_ms: 3_600_000,\n");
    ron.push_str("    budgets: (turns_max: 120, tool_calls_max: 100, tokens_max: 2_000_000, events_max: 4_000),\n");
    ron.push_str("    world: Scripted(\n        tables: [\n");
    for table in domain.tables {
        ron.push_str(&format!("            (name: \"{table}\", file: \"{table}.json\"),\n"));
    }
    ron.push_str("        ],\n");
    ron.push_str(&format!("        script: File(\"{}.rhai\"),\n", domain.name));
    let tables: Vec<String> = domain.tables.iter().map(|t| format!("\"{t}\"")).collect();
    ron.push_str(&format!("        state_hash: Tau2(tables: [{}]),\n", tables.join(", ")));
    ron.push_str("        gold_may_fail: true,\n");
    // tau2 answers a call whose arguments do not bind, or of a tool it does
    // not have, with Python's error text, and passes values of any type on.
    ron.push_str(&format!("        argument_errors: Python(class: \"{}\"),\n", domain.class));
    if let Some(limits) = domain.limits {
        ron.push_str(&format!("        limits: {limits},\n"));
    }
    ron.push_str("        tools: [\n");
    for t in domain.tools {
        push_tool(&mut ron, t, &domain.faults);
    }
    ron.push_str("        ],\n");
    ron.push_str("        personas: [(name: \"clear\", weight: 1.0)],\n");
    ron.push_str("        reply_ms: Uniform(min_ms: 4_000, max_ms: 30_000),\n");
    ron.push_str("        send_message: (latency: Uniform(min_ms: 50, max_ms: 200)),\n");
    ron
}

fn push_tool(ron: &mut String, t: &ToolShape, faults: &FaultProfile) {
    let properties: Vec<String> = t.args.iter().map(|(name, ty)| format!("\"{name}\": {}", ty.schema())).collect();
    let required: Vec<String> = t.args.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    let ids: Vec<String> = t.ids.iter().map(|n| format!("\"{n}\"")).collect();
    let response: Vec<String> = t.response.iter().map(|(n, ty)| format!("\"{n}\": \"{ty}\"")).collect();
    ron.push_str(&format!(
        "            (\n                name: \"{}\",\n                description: {},\n                kind: {},\n                args: {{\"type\": \"object\", \"properties\": {{{}}}, \"required\": [{}]}},\n                ids: [{}],\n                response: {{{}}},\n                config: {},\n            ),\n",
        t.name,
        ron_string(t.description),
        if t.write { "Write" } else { "Read" },
        properties.join(", "),
        required.join(", "),
        ids.join(", "),
        response.join(", "),
        tool_config(t, faults),
    ));
}
