//! Swarm mode: each seed draws its own fault configuration.
//!
//! A scenario's `swarm` section gives ranges for fault parameters (a rule's
//! probability, a window's start and length, a burst schedule's offset) and for
//! drift times. With swarm mode on, every seed draws one value from each range on
//! its own world-side stream (`"swarm"`) and runs against a copy of the tools with
//! those values, so one sweep covers many fault configurations instead of one (the
//! idea behind TigerBeetle's swarm testing). Without swarm mode, the scenario's
//! values run as written. The drawn values are recorded in the trajectory (a
//! `swarm` world note at t=0) and listed by [`SwarmDraw::describe`] for the CSV.

use serde::{Deserialize, Serialize};

use agentsim_engine::{Catalog, Probability, Schedule, Stream, TimeMs, Value};

/// The ranges of a scenario's swarm section (empty by default: nothing varies).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Swarm {
    /// Fault rules whose parameters vary per seed.
    pub faults: Vec<FaultRange>,
    /// Drift changes whose time varies per seed.
    pub drift: Vec<DriftRange>,
}

impl Swarm {
    /// Whether nothing varies.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty() && self.drift.is_empty()
    }
}

/// Ranges for one fault rule of one tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRange {
    /// The tool, by name.
    pub tool: String,
    /// The rule, by its 0-based position in the tool's `faults`.
    pub rule: usize,
    /// The rule's probability per call.
    #[serde(default)]
    pub probability: Option<ProbabilityRange>,
    /// For a `Window` rule: where the window starts.
    #[serde(default)]
    pub from_ms: Option<MsRange>,
    /// For a `Window` rule: how long it lasts (at least 1 ms).
    #[serde(default)]
    pub length_ms: Option<MsRange>,
    /// For a `Periodic` rule: when the first burst starts.
    #[serde(default)]
    pub offset_ms: Option<MsRange>,
}

/// A range for one drift change of one tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftRange {
    /// The tool, by name.
    pub tool: String,
    /// The change, by its 0-based position in the tool's `drift`.
    pub change: usize,
    /// When the change takes effect.
    pub at_ms: MsRange,
}

/// What is wrong with a swarm section, for a caller to match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwarmErrorKind {
    /// A bound of a range is out of its domain (a probability outside
    /// `[0, 1]`, a time beyond ten years).
    OutOfRange,
    /// A range's `max` is below its `min`.
    EmptyRange,
    /// The section names a tool the world does not have.
    UnknownTool,
    /// It names a fault rule the tool does not have.
    UnknownRule,
    /// It names a drift change the tool does not have.
    UnknownChange,
    /// It sets a field the rule's schedule does not have (`from_ms` on a
    /// rule that is not a `Window`, `offset_ms` on one not `Periodic`).
    WrongSchedule,
    /// It draws a window that could last 0 ms.
    EmptyWindow,
}

/// A problem in a scenario's `swarm` section: its kind, the field path it is
/// about, the tool to point at (when it is about one) and the message, which
/// names the field as the scenario's other errors do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwarmError {
    /// What is wrong.
    pub kind: SwarmErrorKind,
    /// The field path, like `swarm.faults[0].rule` (`max` inside a range).
    pub field: String,
    /// The tool named where the problem is, to point at in the text.
    pub tool: Option<String>,
    /// What is wrong, in words, as shown.
    pub message: String,
}

impl SwarmError {
    /// A problem with a range's bound `field` (`min` or `max`).
    fn in_range(kind: SwarmErrorKind, field: &str, message: String) -> Self {
        SwarmError { kind, field: field.to_string(), tool: None, message }
    }
}

impl std::fmt::Display for SwarmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SwarmError {}

/// A closed range of probabilities, `min <= max`, both in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "ProbabilityRangeUnchecked")]
pub struct ProbabilityRange {
    /// Smallest value.
    pub min: Probability,
    /// Largest value.
    pub max: Probability,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbabilityRangeUnchecked {
    min: f64,
    max: f64,
}

impl TryFrom<ProbabilityRangeUnchecked> for ProbabilityRange {
    type Error = SwarmError;
    fn try_from(r: ProbabilityRangeUnchecked) -> Result<Self, SwarmError> {
        let bound = |field: &str, p: f64| {
            Probability::try_from(p)
                .map_err(|e| SwarmError::in_range(SwarmErrorKind::OutOfRange, field, format!("field `{field}`: {e}")))
        };
        let (min, max) = (bound("min", r.min)?, bound("max", r.max)?);
        if r.min > r.max {
            return Err(empty_range(r.max, r.min));
        }
        Ok(ProbabilityRange { min, max })
    }
}

/// The error of a range whose `max` is below its `min`.
fn empty_range(max: impl std::fmt::Display, min: impl std::fmt::Display) -> SwarmError {
    let message = format!("field `max`: the range is empty: max {max} is below min {min}");
    SwarmError::in_range(SwarmErrorKind::EmptyRange, "max", message)
}

/// A closed range of virtual milliseconds, `min <= max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "MsRangeUnchecked")]
pub struct MsRange {
    /// Smallest value.
    pub min: TimeMs,
    /// Largest value.
    pub max: TimeMs,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MsRangeUnchecked {
    min: TimeMs,
    max: TimeMs,
}

impl TryFrom<MsRangeUnchecked> for MsRange {
    type Error = SwarmError;
    fn try_from(r: MsRangeUnchecked) -> Result<Self, SwarmError> {
        if r.min > r.max {
            return Err(empty_range(r.max, r.min));
        }
        agentsim_engine::time::check_ms("max", r.max)
            .map_err(|message| SwarmError::in_range(SwarmErrorKind::OutOfRange, "max", message.into()))?;
        Ok(MsRange { min: r.min, max: r.max })
    }
}

/// One seed's draw: the catalog to run and the values drawn.
pub struct SwarmDraw {
    /// The tools with the drawn values.
    pub catalog: Catalog,
    /// `(what, value)` pairs in the order of the swarm section, like
    /// `("lookup_order.faults[0].probability", "0.1834")`.
    pub values: Vec<(String, String)>,
}

impl SwarmDraw {
    /// The drawn values as `name=value` pairs joined by `;` (the CSV column).
    pub fn describe(&self) -> String {
        self.values.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";")
    }

    /// The drawn values as a map, for the trajectory's `swarm` note.
    pub fn note(&self) -> Value {
        Value::map(self.values.iter().map(|(k, v)| (k.clone(), Value::str(v))))
    }
}

impl Swarm {
    /// Checks the section against the scenario's tools: the first problem,
    /// with the tool to point at.
    pub fn check(&self, catalog: &Catalog) -> Result<(), SwarmError> {
        for (i, f) in self.faults.iter().enumerate() {
            let list = format!("swarm.faults[{i}]");
            let at = |kind: SwarmErrorKind, field: &str, m: String| SwarmError {
                kind,
                field: format!("{list}.{field}"),
                tool: Some(f.tool.clone()),
                message: format!("field `{list}`: {m}"),
            };
            let unknown = || at(SwarmErrorKind::UnknownTool, "tool", format!("no tool `{}` in this world", f.tool));
            let id = catalog.id(&f.tool).ok_or_else(unknown)?;
            let rules = &catalog.spec(id).config.faults;
            let rule = rules.get(f.rule).ok_or_else(|| {
                let m = format!(
                    "field `rule`: `{}` has {} fault rules, so there is no rule {}",
                    f.tool,
                    rules.len(),
                    f.rule
                );
                at(SwarmErrorKind::UnknownRule, "rule", m)
            })?;
            let window = matches!(rule.when, Schedule::Window { .. });
            if (f.from_ms.is_some() || f.length_ms.is_some()) && !window {
                let m = "fields `from_ms` and `length_ms` need a rule with a `Window` schedule";
                return Err(at(SwarmErrorKind::WrongSchedule, "from_ms", m.into()));
            }
            if f.length_ms.is_some_and(|l| l.min == 0) {
                let m = "field `length_ms`: a window lasts at least 1 ms";
                return Err(at(SwarmErrorKind::EmptyWindow, "length_ms", m.into()));
            }
            if f.offset_ms.is_some() && !matches!(rule.when, Schedule::Periodic { .. }) {
                let m = "field `offset_ms` needs a rule with a `Periodic` schedule";
                return Err(at(SwarmErrorKind::WrongSchedule, "offset_ms", m.into()));
            }
        }
        for (i, d) in self.drift.iter().enumerate() {
            let list = format!("swarm.drift[{i}]");
            let at = |kind: SwarmErrorKind, field: &str, m: String| SwarmError {
                kind,
                field: format!("{list}.{field}"),
                tool: Some(d.tool.clone()),
                message: format!("field `{list}`: {m}"),
            };
            let unknown = || at(SwarmErrorKind::UnknownTool, "tool", format!("no tool `{}` in this world", d.tool));
            let id = catalog.id(&d.tool).ok_or_else(unknown)?;
            let changes = catalog.spec(id).config.drift.len();
            if d.change >= changes {
                let m = format!(
                    "field `change`: `{}` has {changes} drift changes, so there is no change {}",
                    d.tool, d.change
                );
                return Err(at(SwarmErrorKind::UnknownChange, "change", m));
            }
        }
        Ok(())
    }

    /// Draws one seed's values from `rng` (the seed's `"swarm"` stream), in the
    /// order of the section, and applies them to a copy of `catalog`. Every range
    /// draws exactly once, so the values of one entry do not depend on another's.
    pub fn draw(&self, catalog: &Catalog, rng: &mut Stream) -> SwarmDraw {
        let mut specs = catalog.specs().to_vec();
        let mut values = Vec::new();
        for f in &self.faults {
            let id = catalog.id(&f.tool).expect("checked when parsed");
            let rule = &mut specs[id.0 as usize].config.faults[f.rule];
            let name = format!("{}.faults[{}]", f.tool, f.rule);
            if let Some(r) = f.probability {
                let (lo, hi) = (r.min.get(), r.max.get());
                let p = (lo + rng.unit() * (hi - lo)).clamp(0.0, 1.0);
                rule.probability = Probability::try_from(p).expect("clamped to [0, 1]");
                values.push((format!("{name}.probability"), format!("{p:.4}")));
            }
            if let Schedule::Window { from_ms, to_ms } = &mut rule.when {
                let from = f.from_ms.map(|r| rng.between(r.min, r.max)).unwrap_or(*from_ms);
                let length = f.length_ms.map(|r| rng.between(r.min, r.max)).unwrap_or(*to_ms - *from_ms);
                if f.from_ms.is_some() || f.length_ms.is_some() {
                    *from_ms = from;
                    *to_ms = from.saturating_add(length.max(1));
                    values.push((format!("{name}.window"), format!("{}..{}", *from_ms, *to_ms)));
                }
            }
            if let (Schedule::Periodic { offset_ms, .. }, Some(r)) = (&mut rule.when, f.offset_ms) {
                *offset_ms = rng.between(r.min, r.max);
                values.push((format!("{name}.offset_ms"), offset_ms.to_string()));
            }
        }
        for d in &self.drift {
            let id = catalog.id(&d.tool).expect("checked when parsed");
            let at_ms = rng.between(d.at_ms.min, d.at_ms.max);
            specs[id.0 as usize].config.drift[d.change].at_ms = at_ms;
            values.push((format!("{}.drift[{}].at_ms", d.tool, d.change), at_ms.to_string()));
        }
        SwarmDraw { catalog: Catalog::new(specs), values }
    }
}

#[cfg(test)]
mod tests {
    use agentsim_engine::{Fault, FaultRule, StreamSource, ToolConfig, ToolDef, ToolKind, ToolSpec};

    use super::*;

    fn catalog() -> Catalog {
        let config = ToolConfig {
            faults: vec![
                FaultRule {
                    fault: Fault::Timeout,
                    when: Schedule::Window { from_ms: 10, to_ms: 20 },
                    probability: Probability::ONE,
                },
                FaultRule {
                    fault: Fault::Error { status: 503, retry_after_ms: None },
                    when: Schedule::Periodic { period_ms: 100, burst_ms: 10, offset_ms: 0 },
                    probability: Probability::ONE,
                },
            ],
            ..ToolConfig::default()
        };
        Catalog::new(vec![ToolSpec { def: ToolDef::new("t", ToolKind::Read, "t"), config }])
    }

    fn ms(min: TimeMs, max: TimeMs) -> Option<MsRange> {
        Some(MsRange { min, max })
    }

    #[test]
    fn draws_stay_in_their_ranges_and_repeat_per_seed() {
        let swarm = Swarm {
            faults: vec![
                FaultRange {
                    tool: "t".into(),
                    rule: 0,
                    probability: Some(ProbabilityRange {
                        min: Probability::try_from(0.1).unwrap(),
                        max: Probability::try_from(0.3).unwrap(),
                    }),
                    from_ms: ms(1_000, 2_000),
                    length_ms: ms(5, 50),
                    offset_ms: None,
                },
                FaultRange {
                    tool: "t".into(),
                    rule: 1,
                    probability: None,
                    from_ms: None,
                    length_ms: None,
                    offset_ms: ms(0, 99),
                },
            ],
            drift: Vec::new(),
        };
        let catalog = catalog();
        swarm.check(&catalog).unwrap();
        let mut distinct = Vec::new();
        for seed in 0..200 {
            let draw = swarm.draw(&catalog, &mut StreamSource::new([1; 32], seed).stream("swarm"));
            let again = swarm.draw(&catalog, &mut StreamSource::new([1; 32], seed).stream("swarm"));
            assert_eq!(draw.values, again.values);
            let rules = &draw.catalog.specs()[0].config.faults;
            let p = rules[0].probability.get();
            assert!((0.1..=0.3).contains(&p), "{p}");
            let Schedule::Window { from_ms, to_ms } = rules[0].when else { panic!() };
            assert!((1_000..=2_000).contains(&from_ms) && (5..=50).contains(&(to_ms - from_ms)));
            let Schedule::Periodic { offset_ms, .. } = rules[1].when else { panic!() };
            assert!(offset_ms <= 99);
            distinct.push(draw.describe());
        }
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 190, "seeds draw different configurations");
    }

    #[test]
    fn ranges_that_do_not_fit_the_rule_are_refused() {
        let catalog = catalog();
        let bad = |f: FaultRange| Swarm { faults: vec![f], drift: Vec::new() }.check(&catalog).unwrap_err().message;
        let base = FaultRange {
            tool: "t".into(),
            rule: 0,
            probability: None,
            from_ms: None,
            length_ms: None,
            offset_ms: None,
        };
        assert!(bad(FaultRange { tool: "nope".into(), ..base.clone() }).contains("no tool `nope`"));
        assert!(bad(FaultRange { rule: 5, ..base.clone() }).contains("no rule 5"));
        assert!(bad(FaultRange { offset_ms: ms(0, 1), ..base.clone() }).contains("Periodic"));
        assert!(bad(FaultRange { rule: 1, from_ms: ms(0, 1), ..base.clone() }).contains("Window"));
        assert!(bad(FaultRange { length_ms: ms(0, 1), ..base }).contains("at least 1 ms"));
    }
}
