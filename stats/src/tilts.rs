//! Per-rule tilts for importance sampling: the probability each fault rule is
//! drawn with, from `--importance SCALE` (every rule at SCALE times its
//! probability), a tilts file (`--importance FILE.ron`), or the cross-entropy
//! method (`--importance auto`, [`crate::cross_entropy`]).
//!
//! A tilts file names rules as the scenario's `swarm` section does, by tool and
//! 0-based position in the tool's `faults`:
//!
//! ```text
//! Tilts(
//!     scale: 1.0,   // optional: every rule not listed, at this many times its probability
//!     rules: [
//!         (tool: "lookup_order", rule: 0, probability: 0.3), // drawn with probability 0.3
//!         (tool: "issue_refund", rule: 1, scale: 20.0),      // or at 20 times its probability
//!     ],
//! )
//! ```
//!
//! Whatever the source, the result is a [`Plan`]: every drawn rule with its
//! nominal and sampled probability. A plan under which a value that can happen
//! nominally could never be drawn (a sampled probability of 0 or 1 where the
//! nominal one is strictly between) is refused: the runs the estimate must
//! weigh would never be sampled.

use serde::{Deserialize, Serialize};

use agentsim_engine::likelihood::RuleProbabilities;
use agentsim_engine::rng::{CHANCE_ONE, chance_threshold};
use agentsim_engine::{Catalog, Fault};
use agentsim_worlds::ScenarioError;
use agentsim_worlds::scenario::{ron_error, ron_options};

use agentsim_worlds::scenario::position_of as position;

/// The most rules a tilts file may list.
pub const TILTS_RULES_MAX: usize = 4_096;

/// How the tilts of a sweep were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// `--importance SCALE`: every rule at SCALE times its probability.
    Scale,
    /// `--importance FILE.ron`: the tilts a file gives.
    Tilts,
    /// `--importance auto`: the cross-entropy method on pilot sweeps.
    CrossEntropy,
}

impl Method {
    fn scale() -> Self {
        Method::Scale
    }
}

/// One drawn fault rule under a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleTilt {
    /// The tool.
    pub tool: String,
    /// The rule's 0-based position in the tool's `faults`.
    pub rule: usize,
    /// Its probability at the sweep's fault scale.
    pub nominal: f64,
    /// The probability it is drawn with.
    pub sampled: f64,
}

impl RuleTilt {
    /// `tool.faults[i]`, as swarm values and error messages name a rule.
    pub fn name(&self) -> String {
        format!("{}.faults[{}]", self.tool, self.rule)
    }
}

/// What the cross-entropy pilot did (see [`crate::cross_entropy`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pilot {
    /// The failure mode the tilts were chosen for (`--importance-target`).
    pub target: String,
    /// Seeds per pilot sweep.
    pub seeds_per_iteration: u64,
    /// Pilot sweeps run.
    pub iterations: u32,
    /// The first pilot seed; iteration k runs the `seeds_per_iteration` seeds
    /// after `seed_start + k * seeds_per_iteration`.
    pub seed_start: u64,
    /// Trajectories the pilot ran in all.
    pub trajectories: u64,
    /// Target events seen in the last pilot sweep.
    pub events_last: u64,
}

/// How an importance-sampling sweep draws its faults: every drawn rule of the
/// catalog (rate limits are states, not draws, and are left out), in catalog
/// order, with its nominal and sampled probability.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// How the tilts were chosen (`scale` when absent: summaries written
    /// before there was a choice).
    #[serde(default = "Method::scale")]
    pub method: Method,
    /// With `--importance SCALE`, SCALE; with a tilts file, its `scale` (for the
    /// rules it does not list); `None` (`null`) for the cross-entropy method,
    /// whose tilts differ per rule.
    pub scale: Option<f64>,
    /// The rules (absent in summaries written before they were listed).
    #[serde(default)]
    pub tilts: Vec<RuleTilt>,
    /// What the cross-entropy pilot did, for `--importance auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<Pilot>,
}

impl Plan {
    /// Every drawn rule at `importance` times its probability at `fault_scale`
    /// (saturating at 1, as the draws do).
    pub fn of_scale(catalog: &Catalog, fault_scale: f64, importance: f64) -> Self {
        let sampled_scale = tilted_scale(fault_scale, importance);
        let tilts = drawn_rules(catalog)
            .map(|(tool, rule, p)| RuleTilt {
                tool: tool.to_string(),
                rule,
                nominal: (p * fault_scale).min(1.0),
                sampled: (p * sampled_scale).min(1.0),
            })
            .collect();
        Self { method: Method::Scale, scale: Some(importance), tilts, pilot: None }
    }

    /// The table of sampled probabilities the engine draws with: every rule of
    /// the catalog, those not in the plan (rate limits) at their nominal value.
    pub fn probabilities(&self, catalog: &Catalog, fault_scale: f64) -> RuleProbabilities {
        let mut rows: Vec<Vec<f64>> = catalog
            .specs()
            .iter()
            .map(|s| s.config.faults.iter().map(|r| (r.probability.get() * fault_scale).min(1.0)).collect())
            .collect();
        for t in &self.tilts {
            let id = catalog.id(&t.tool).expect("a plan names the catalog's tools");
            rows[id.0 as usize][t.rule] = t.sampled;
        }
        RuleProbabilities::new(rows)
    }

    /// Refuses a plan under which a value that can happen nominally is never
    /// drawn (see the module's documentation). Returns the rule and the reason.
    pub fn check_support(&self) -> Result<(), SupportError> {
        for t in &self.tilts {
            let nominal = chance_threshold(t.nominal);
            let sampled = chance_threshold(t.sampled);
            let possible = |threshold: u64| (threshold > 0, threshold < CHANCE_ONE);
            let (hit_nominal, miss_nominal) = possible(nominal);
            let (hit_sampled, miss_sampled) = possible(sampled);
            if (hit_nominal && !hit_sampled) || (miss_nominal && !miss_sampled) {
                let message = format!(
                    "{}: sampled probability {} where the nominal one is {}: runs {} it, which the estimate \
                     must weigh, would never be drawn, so the estimate would be biased",
                    t.name(),
                    t.sampled,
                    t.nominal,
                    if hit_nominal && !hit_sampled { "with" } else { "without" }
                );
                return Err(SupportError {
                    kind: SupportErrorKind::LostValue { tool: t.tool.clone(), rule: t.rule },
                    message,
                });
            }
        }
        Ok(())
    }

    /// The rules whose sampled probability differs from the nominal one, as
    /// `tool.faults[i] NOMINAL -> SAMPLED`, for the terminal.
    pub fn describe(&self) -> Vec<String> {
        self.tilts
            .iter()
            .filter(|t| t.sampled != t.nominal)
            .map(|t| format!("{} {} -> {}", t.name(), short(t.nominal), short(t.sampled)))
            .collect()
    }
}

/// A probability in at most four significant digits, for the terminal.
pub fn short(p: f64) -> String {
    let text = format!("{p:.4e}");
    let parsed: f64 = text.parse().unwrap_or(p);
    format!("{parsed}")
}

/// The fault scale an importance-sampling sweep draws at: `fault_scale` tilted
/// by `importance`, computed in one place so that incidents recorded at it
/// replay the sweep's trajectories bit for bit.
pub fn tilted_scale(fault_scale: f64, importance: f64) -> f64 {
    fault_scale * importance
}

/// The drawn rules of a catalog: (tool, position, probability), in order.
pub fn drawn_rules(catalog: &Catalog) -> impl Iterator<Item = (&str, usize, f64)> {
    catalog.specs().iter().flat_map(|spec| {
        spec.config
            .faults
            .iter()
            .enumerate()
            .filter(|(_, r)| !matches!(r.fault, Fault::RateLimit { .. }))
            .map(move |(i, r)| (spec.def.name.as_str(), i, r.probability.get()))
    })
}

/// A tilts file as written.
#[derive(Debug, Deserialize)]
#[serde(rename = "Tilts", deny_unknown_fields)]
struct TiltsFile {
    #[serde(default = "one")]
    scale: f64,
    rules: Vec<TiltEntry>,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Deserialize)]
#[serde(rename = "rule", deny_unknown_fields)]
struct TiltEntry {
    tool: String,
    rule: usize,
    #[serde(default)]
    probability: Option<f64>,
    #[serde(default)]
    scale: Option<f64>,
}

/// Parses a tilts file's `text` (`origin` names it in errors) into the plan it
/// gives for `catalog` at `fault_scale`, checked (see [`Plan::check_support`]).
pub fn parse_tilts(text: &str, origin: &str, catalog: &Catalog, fault_scale: f64) -> Result<Plan, ScenarioError> {
    let file: TiltsFile = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
    let at = |needle: &str, nth: usize, message: String| {
        let offset = nth_field(text, needle, nth).unwrap_or(0);
        let (line, column) = position(text, offset);
        ScenarioError { origin: origin.to_string(), line, column, message }
    };
    if !(file.scale.is_finite() && file.scale > 0.0) {
        return Err(at("scale", 0, format!("field `scale`: expected a finite number above 0, found {}", file.scale)));
    }
    if file.rules.len() > TILTS_RULES_MAX {
        return Err(at(
            "rules",
            0,
            format!("field `rules`: at most {TILTS_RULES_MAX} rules, found {}", file.rules.len()),
        ));
    }
    let mut plan = Plan::of_scale(catalog, fault_scale, file.scale);
    plan.method = Method::Tilts;
    for (i, entry) in file.rules.iter().enumerate() {
        let here = |m: String| at("tool", i, format!("field `rules[{i}]`: {m}"));
        let id = catalog
            .id(&entry.tool)
            .ok_or_else(|| here(format!("field `tool`: no tool `{}` in this world", entry.tool)))?;
        let rules = &catalog.spec(id).config.faults;
        let rule = rules.get(entry.rule).ok_or_else(|| {
            here(format!(
                "field `rule`: `{}` has {} fault rules, so there is no rule {}",
                entry.tool,
                rules.len(),
                entry.rule
            ))
        })?;
        if matches!(rule.fault, Fault::RateLimit { .. }) {
            return Err(here(format!(
                "field `rule`: {}.faults[{}] is a rate limit, a quota rather than a draw: it has no tilt",
                entry.tool, entry.rule
            )));
        }
        let nominal = (rule.probability.get() * fault_scale).min(1.0);
        let sampled = match (entry.probability, entry.scale) {
            (Some(p), None) if (0.0..=1.0).contains(&p) => p,
            (Some(p), None) => {
                return Err(here(format!("field `probability`: expected a number in [0, 1], found {p}")));
            }
            (None, Some(s)) if s.is_finite() && s > 0.0 => (nominal * s).min(1.0),
            (None, Some(s)) => return Err(here(format!("field `scale`: expected a finite number above 0, found {s}"))),
            _ => return Err(here("give one of the fields `probability` and `scale`".to_string())),
        };
        let tilt = plan
            .tilts
            .iter_mut()
            .find(|t| t.tool == entry.tool && t.rule == entry.rule)
            .expect("every drawn rule is in the plan");
        if file.rules[..i].iter().any(|e| e.tool == entry.tool && e.rule == entry.rule) {
            return Err(here(format!("{}: listed twice", tilt.name())));
        }
        tilt.sampled = sampled;
    }
    plan.check_support().map_err(|e| {
        let m = &e.message;
        let listed = e.rule().and_then(|(tool, rule)| file.rules.iter().position(|e| e.tool == tool && e.rule == rule));
        match listed {
            Some(listed) => at("tool", listed, format!("field `rules[{listed}]`: {m}")),
            None => at("scale", 0, format!("field `scale`: {m}")),
        }
    })?;
    Ok(plan)
}

/// The byte offset of the `nth` (0-based) `NAME:` outside `//` comments.
fn nth_field(text: &str, name: &str, nth: usize) -> Option<usize> {
    let mut seen = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let code = line.split("//").next().unwrap_or("");
        let mut from = 0;
        while let Some(found) = code[from..].find(name) {
            let start = from + found;
            let before_ok = start == 0 || !code[..start].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            let after = code[start + name.len()..].trim_start();
            if before_ok && after.starts_with(':') {
                if seen == nth {
                    return Some(offset + start);
                }
                seen += 1;
            }
            from = start + name.len();
        }
        offset += line.len();
    }
    None
}

/// A tilt that would bias the estimate: what it would lose, and the text shown
/// to the user, which names the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupportError {
    /// What is wrong.
    pub kind: SupportErrorKind,
    /// The text shown to the user.
    pub message: String,
}

/// Why a tilt would bias the estimate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SupportErrorKind {
    /// The `--importance` scale is not a finite number above 0.
    Scale,
    /// A rule's sampled probability never draws a value its nominal one can.
    LostValue {
        /// The tool.
        tool: String,
        /// The index of the rule in the tool's `faults`.
        rule: usize,
    },
    /// The scale makes a fault that is uncertain nominally certain.
    CertainFault {
        /// The tool.
        tool: String,
        /// The index of the rule in the tool's `faults`.
        rule: usize,
    },
}

impl SupportError {
    /// The tool and the index of the rule at fault, when one is.
    pub fn rule(&self) -> Option<(&str, usize)> {
        match &self.kind {
            SupportErrorKind::LostValue { tool, rule } | SupportErrorKind::CertainFault { tool, rule } => {
                Some((tool, *rule))
            }
            SupportErrorKind::Scale => None,
        }
    }
}

impl std::fmt::Display for SupportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SupportError {}
