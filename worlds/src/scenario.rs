//! The scenario format: a RON file naming a world with its data, tools, faults and
//! drift, plus the horizon, budgets and model. Bad input is reported with the file,
//! line, column and field.

use std::fmt;

use serde::{Deserialize, Serialize};

use agentsim_engine::{Agent, Budgets, Catalog, ModelConfig, SimConfig, StreamSource, TimeMs, Trajectory};

use crate::support_desk::{self, SupportDeskConfig};

/// A scenario as written in a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, shown in reports.
    pub name: String,
    /// What the scenario is about.
    #[serde(default)]
    pub description: String,
    /// Virtual time limit of each trajectory (default 30 minutes).
    #[serde(default = "default_horizon_ms")]
    pub horizon_ms: TimeMs,
    /// Per-trajectory limits.
    #[serde(default)]
    pub budgets: Budgets,
    /// The model behind the planner: think time, tokens, prices.
    #[serde(default)]
    pub model: ModelConfig,
    /// The world, its data and its tools.
    pub world: WorldConfig,
}

fn default_horizon_ms() -> TimeMs {
    30 * 60 * 1_000
}

/// The built-in worlds and their parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorldConfig {
    /// Customers, orders and refunds.
    SupportDesk(SupportDeskConfig),
}

/// A scenario file that could not be used: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or `built-in NAME`).
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, naming the field.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.origin, self.line, self.column, self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The RON dialect of agentsim files: `SupportDesk(customers: ...)` may be written
/// without the double parentheses of a newtype variant, and optional values without
/// `Some(..)`.
pub fn ron_options() -> ron::Options {
    ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES)
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// Turns a RON parse error in `text` into a located error that names the field.
pub fn ron_error(text: &str, origin: &str, err: &ron::error::SpannedError) -> ScenarioError {
    let (line, column) = (err.span.start.line, err.span.start.col);
    let message = err.code.to_string();
    let message = match field_before(text, line, column) {
        Some(field) if !message.contains("field") => format!("field `{field}`: {message}"),
        _ => message,
    };
    ScenarioError { origin: origin.to_string(), line, column, message }
}

/// The name of the nearest `name:` before a 1-based position: the field whose value
/// the parser was reading when it failed. Comments are not skipped; a field name is
/// what a reader looks for first, and a wrong guess only costs a hint.
fn field_before(text: &str, line: usize, column: usize) -> Option<String> {
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let in_line: usize =
        text[line_start.min(text.len())..].chars().take(column.saturating_sub(1)).map(char::len_utf8).sum();
    let before = &text[..(line_start + in_line).min(text.len())];
    let bytes = before.as_bytes();
    let mut i = bytes.len();
    while i > 0 {
        i -= 1;
        // A field separator (`:`) not part of a `::` path.
        if bytes[i] == b':' && (i + 1 >= bytes.len() || bytes[i + 1] != b':') && (i == 0 || bytes[i - 1] != b':') {
            let name_end = before[..i].trim_end().len();
            let name_start =
                before[..name_end].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
            let name = &before[name_start..name_end];
            if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
                return Some(name.to_string());
            }
        }
    }
    None
}

/// The 1-based line and column of the first occurrence of `needle` in `text`
/// (1:1 if absent), to point at a value that failed a cross-check.
fn locate(text: &str, needle: &str) -> (usize, usize) {
    let Some(offset) = text.find(needle) else { return (1, 1) };
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl Scenario {
    /// Parses and checks a scenario; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
        let located = |field: String, value: String, message: String| {
            let (line, column) = locate(text, &format!("\"{value}\""));
            ScenarioError { origin: origin.to_string(), line, column, message: format!("field `{field}`: {message}") }
        };
        match &scenario.world {
            WorldConfig::SupportDesk(desk) => {
                desk.check().map_err(|(field, value, message)| located(format!("world.{field}"), value, message))?;
            }
        }
        if scenario.horizon_ms == 0 {
            let (line, column) = locate(text, "horizon_ms");
            return Err(ScenarioError {
                origin: origin.into(),
                line,
                column,
                message: "field `horizon_ms`: expected a positive horizon, found 0".into(),
            });
        }
        Ok(scenario)
    }

    /// The tools of this scenario.
    pub fn catalog(&self) -> Catalog {
        match &self.world {
            WorldConfig::SupportDesk(desk) => Catalog::new(support_desk::tools::specs(&desk.tools)),
        }
    }

    /// The key from which every stream of this scenario derives: a digest of its
    /// canonical form, so editing any value changes every trajectory.
    pub fn key(&self) -> [u8; 32] {
        agentsim_engine::rng::key_of(self)
    }

    /// The loop configuration for this scenario.
    pub fn sim_config(&self, record: bool, fault_scale: f64) -> SimConfig {
        SimConfig {
            horizon_ms: self.horizon_ms,
            budgets: self.budgets.clone(),
            model: self.model.clone(),
            record,
            fault_scale,
        }
    }
}

/// A scenario ready to run many seeds: parsed once, with its catalog and key.
pub struct Prepared {
    /// The scenario.
    pub scenario: Scenario,
    /// Its tools.
    pub catalog: Catalog,
    key: [u8; 32],
    desk_ids: Option<support_desk::Ids>,
}

impl Prepared {
    /// Prepares a parsed scenario.
    pub fn new(scenario: Scenario) -> Prepared {
        let catalog = scenario.catalog();
        let key = scenario.key();
        let desk_ids = support_desk::Ids::find(&catalog);
        Prepared { scenario, catalog, key, desk_ids }
    }

    /// The scenario key (see [`Scenario::key`]).
    pub fn key(&self) -> [u8; 32] {
        self.key
    }

    /// The streams of one seed.
    pub fn streams(&self, seed: u64) -> StreamSource {
        StreamSource::new(self.key, seed)
    }

    /// The world's expert planner (the oracle).
    pub fn expert(&self) -> Box<dyn Agent> {
        match &self.scenario.world {
            WorldConfig::SupportDesk(_) => {
                Box::new(support_desk::Expert::new(self.desk_ids.expect("support_desk catalog has its tools")))
            }
        }
    }

    /// Runs one seed. `agent` receives the expert and the seed's streams and returns
    /// the agent to run (the expert itself, or a stack around a planner around it).
    pub fn run(
        &self,
        seed: u64,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        self.run_trial(seed, 0, config, agent)
    }

    /// Runs the `trial`-th independent attempt at one seed (for pass^k): the same
    /// world, user and tool streams as trial 0, different agent streams (see
    /// [`StreamSource::with_trial`]). Trial 0 is exactly [`Prepared::run`].
    pub fn run_trial(
        &self,
        seed: u64,
        trial: u32,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        let streams = self.streams(seed).with_trial(trial);
        let mut agent = agent(self.expert(), &streams);
        match &self.scenario.world {
            WorldConfig::SupportDesk(desk) => {
                let ids = self.desk_ids.expect("support_desk catalog has its tools");
                let world = support_desk::SupportDesk::new(desk, ids, &streams);
                agentsim_engine::sim::run(world, &mut *agent, &self.catalog, &streams, config)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_before_an_error_is_named() {
        let text = "Scenario(\n    name: \"x\",\n    horizon_ms: \"ten\",\n)";
        assert_eq!(field_before(text, 3, 17).as_deref(), Some("horizon_ms"));
        assert_eq!(field_before("abc", 1, 2), None);
    }

    #[test]
    fn locate_points_at_the_value() {
        assert_eq!(locate("a\n  b: \"X\"\n", "\"X\""), (2, 6));
        assert_eq!(locate("abc", "zzz"), (1, 1));
    }
}
