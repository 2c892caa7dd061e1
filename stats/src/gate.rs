//! Gates: thresholds a sweep's `summary.json` must meet before a stack ships.
//!
//! A gate file is RON:
//!
//! ```ron
//! Gate(
//!     name: "release",
//!     rules: [
//!         (metric: "completion.lo", at_least: 0.95),
//!         (metric: "violation.count", exactly: 0),
//!         (metric: "turns.p95", at_most: 12),
//!         (metric: "cost_usd_per_success", at_most: 0.05),
//!     ],
//! )
//! ```
//!
//! A metric is a dotted path into `summary.json` that ends at a number (or at a
//! string holding one, like the dollar amounts). Each rule has exactly one bound.

use serde::Deserialize;
use serde_json::Value as Json;

use agentsim_worlds::ScenarioError;
use agentsim_worlds::scenario::{ron_error, ron_options};

/// The most rules in one gate.
pub const RULES_MAX: usize = 256;

/// A gate file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    /// What the gate is for, shown in the output.
    #[serde(default)]
    pub name: String,
    /// The rules, checked in order.
    pub rules: Vec<Rule>,
}

/// One threshold.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// A dotted path into summary.json, like `completion.lo` or `turns.p95`.
    pub metric: String,
    /// The measured value must be at least this.
    #[serde(default)]
    pub at_least: Option<f64>,
    /// The measured value must be at most this.
    #[serde(default)]
    pub at_most: Option<f64>,
    /// The measured value must equal this.
    #[serde(default)]
    pub exactly: Option<f64>,
}

/// A rule's bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// `>=`.
    AtLeast(f64),
    /// `<=`.
    AtMost(f64),
    /// `==`.
    Exactly(f64),
}

impl Bound {
    /// Whether `value` meets the bound.
    pub fn holds(self, value: f64) -> bool {
        match self {
            Bound::AtLeast(b) => value >= b,
            Bound::AtMost(b) => value <= b,
            Bound::Exactly(b) => value == b,
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::AtLeast(b) => write!(f, ">= {b}"),
            Bound::AtMost(b) => write!(f, "<= {b}"),
            Bound::Exactly(b) => write!(f, "== {b}"),
        }
    }
}

impl Rule {
    /// The one bound of this rule (checked by [`Gate::parse`]).
    pub fn bound(&self) -> Bound {
        match (self.at_least, self.at_most, self.exactly) {
            (Some(b), None, None) => Bound::AtLeast(b),
            (None, Some(b), None) => Bound::AtMost(b),
            (None, None, Some(b)) => Bound::Exactly(b),
            _ => unreachable!("Gate::parse checks that every rule has exactly one bound"),
        }
    }
}

/// One rule's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The metric path.
    pub metric: String,
    /// The bound.
    pub bound: Bound,
    /// The measured value; `None` when the summary holds `null` there (for
    /// example cost per success with no success), which fails the rule.
    pub measured: Option<f64>,
    /// The measured value as written in summary.json.
    pub measured_text: String,
    /// Whether the rule holds.
    pub pass: bool,
}

/// Where in a file a text first occurs (1-based line and column; 1:1 if absent).
fn locate(text: &str, needle: &str) -> (usize, usize) {
    let Some(offset) = text.find(needle) else { return (1, 1) };
    let before = &text[..offset];
    (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
}

impl Gate {
    /// Parses and checks a gate file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Gate, ScenarioError> {
        let gate: Gate = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
        let at = |needle: &str, message: String| {
            let (line, column) = locate(text, needle);
            ScenarioError { origin: origin.to_string(), line, column, message }
        };
        if gate.rules.is_empty() {
            return Err(at("rules", "field `rules`: a gate needs at least one rule".into()));
        }
        if gate.rules.len() > RULES_MAX {
            return Err(at("rules", format!("field `rules`: at most {RULES_MAX} rules, found {}", gate.rules.len())));
        }
        for rule in &gate.rules {
            let needle = format!("\"{}\"", rule.metric);
            let bounds = [rule.at_least, rule.at_most, rule.exactly];
            let given = bounds.iter().flatten().count();
            if given != 1 {
                return Err(at(
                    &needle,
                    format!(
                        "field `metric`: rule `{}` needs exactly one of at_least, at_most, exactly; found {given}",
                        rule.metric
                    ),
                ));
            }
            if let Some(b) = bounds.iter().flatten().find(|b| !b.is_finite()) {
                return Err(at(
                    &needle,
                    format!("rule `{}`: the bound must be a finite number, found {b}", rule.metric),
                ));
            }
            // A rate and its interval lie in [0, 1]: a bound outside is a percent
            // written as a number (90 for 0.9) or a typo, and would always or never hold.
            let last = rule.metric.rsplit('.').next().unwrap_or("");
            if matches!(last, "rate" | "lo" | "hi")
                && let Some((field, b)) = ["at_least", "at_most", "exactly"]
                    .into_iter()
                    .zip(bounds)
                    .find_map(|(field, b)| b.filter(|b| !(0.0..=1.0).contains(b)).map(|b| (field, b)))
            {
                return Err(at(
                    &needle,
                    format!(
                        "field `{field}`: rule `{}`: a rate is in [0, 1] (write 0.9 for 90%), found {b}",
                        rule.metric
                    ),
                ));
            }
            if rule.metric.is_empty() || rule.metric.split('.').any(str::is_empty) {
                return Err(at(
                    &needle,
                    format!("field `metric`: `{}` is not a dotted path like `completion.lo`", rule.metric),
                ));
            }
        }
        Ok(gate)
    }

    /// Checks every rule against a summary. A metric that the summary does not
    /// have, or that is neither a number nor a flag (true reads as 1, false as
    /// 0), is an error naming the rule (the gate is wrong, not the stack):
    /// `Err((index of the rule, message))`.
    pub fn check(&self, summary: &Json) -> Result<Vec<Checked>, (usize, String)> {
        self.rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let mut node = summary;
                for part in rule.metric.split('.') {
                    node = match node {
                        Json::Object(map) => map.get(part),
                        Json::Array(items) => part.parse::<usize>().ok().and_then(|k| items.get(k)),
                        _ => None,
                    }
                    .ok_or_else(|| (i, format!("summary.json has no metric `{}` (no `{part}`)", rule.metric)))?;
                }
                let measured = match node {
                    Json::Number(n) => n.as_f64(),
                    Json::String(s) => Some(
                        s.parse::<f64>()
                            .map_err(|_| (i, format!("metric `{}` is the text `{s}`, not a number", rule.metric)))?,
                    ),
                    Json::Null => None,
                    // A flag (`importance.rates.X.trusted`) reads as 1 or 0.
                    Json::Bool(flag) => Some(f64::from(u8::from(*flag))),
                    _ => return Err((i, format!("metric `{}` is not a number (it has fields inside)", rule.metric))),
                };
                let bound = rule.bound();
                let measured_text = match node {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Ok(Checked {
                    metric: rule.metric.clone(),
                    bound,
                    measured,
                    measured_text,
                    pass: measured.is_some_and(|v| bound.holds(v)),
                })
            })
            .collect()
    }

    /// The 1-based line and column of rule `index` in the gate's text.
    pub fn locate_rule(&self, text: &str, index: usize) -> (usize, usize) {
        locate(text, &format!("\"{}\"", self.rules[index].metric))
    }
}
