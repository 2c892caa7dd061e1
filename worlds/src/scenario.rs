//! The scenario format: a RON file naming a world with its data, tools, faults and
//! drift, plus the horizon, budgets and model. Bad input is reported with the file,
//! line, column and field.

use std::fmt;

use serde::{Deserialize, Serialize};

use agentsim_engine::{
    Agent, Budgets, Catalog, ModelConfig, SimConfig, StreamSource, TimeMs, ToolCall, ToolError, Trajectory, Value,
    Verdict, World, WorldCx,
};

use crate::flight_booking::{self, FlightBookingConfig};
use crate::newsroom::{self, NewsroomConfig};
use crate::support_desk::{self, SupportDeskConfig};
use crate::swarm::{Swarm, SwarmDraw};
use crate::weather_dining::{self, WeatherDiningConfig};

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
    /// Ranges that swarm mode draws fault parameters from, per seed (optional,
    /// empty). Left out of the canonical form when empty, so scenarios without it
    /// keep their keys.
    #[serde(default, skip_serializing_if = "Swarm::is_empty")]
    pub swarm: Swarm,
}

/// The longest scenario `name`, in characters.
pub const NAME_CHARS_MAX: usize = 1_000;

fn default_horizon_ms() -> TimeMs {
    30 * 60 * 1_000
}

/// The built-in worlds and their parameters.
// One value per scenario, parsed once and shared by every seed: its size does not
// matter, and boxing variants would only make scenarios harder to build in code.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorldConfig {
    /// Customers, orders and refunds.
    SupportDesk(SupportDeskConfig),
    /// Fares on a random walk and a traveller with a budget.
    FlightBooking(FlightBookingConfig),
    /// Weather from two providers, restaurants, and a table for tonight.
    WeatherDining(WeatherDiningConfig),
    /// A news feed that moves, a summary and a task DAG.
    Newsroom(NewsroomConfig),
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
            // Past the last character that cannot be in a name (which may be several
            // bytes long: found by the fuzzer).
            let name_start = before[..name_end]
                .char_indices()
                .rev()
                .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
                .map_or(0, |(p, c)| p + c.len_utf8());
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

/// The 1-based line and column of byte `offset` in `text`.
fn position_of(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl Scenario {
    /// Parses and checks a scenario; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
        let located = |field: String, value: String, message: String| {
            // Point at the quoted value (an id); for a number, at its field name.
            let quoted = format!("\"{value}\"");
            let needle = if text.contains(&quoted) { quoted } else { format!("{value}:") };
            let (line, column) = locate(text, &needle);
            ScenarioError { origin: origin.to_string(), line, column, message: format!("field `{field}`: {message}") }
        };
        match &scenario.world {
            WorldConfig::SupportDesk(desk) => {
                desk.check().map_err(|(field, value, message)| located(format!("world.{field}"), value, message))?;
            }
            WorldConfig::Newsroom(news) => {
                news.check().map_err(|(field, value, message)| located(format!("world.{field}"), value, message))?;
            }
            WorldConfig::WeatherDining(dining) => {
                dining.check().map_err(|(field, value, message)| located(format!("world.{field}"), value, message))?;
            }
            WorldConfig::FlightBooking(flights) => {
                flights.check().map_err(|(field, value, message)| located(format!("world.{field}"), value, message))?;
            }
        }
        scenario.swarm.check(&scenario.catalog()).map_err(|(tool, message)| {
            // Point at the tool's name inside the swarm section.
            let start = text.find("swarm:").unwrap_or(0);
            let offset = text[start..].find(&format!("\"{tool}\"")).map_or(start, |o| start + o);
            let (line, column) = position_of(text, offset);
            ScenarioError { origin: origin.to_string(), line, column, message }
        })?;
        // The name is copied into every summary.json and run.json: bounded, so that
        // those stay far below the size they are read back with.
        if scenario.name.chars().count() > NAME_CHARS_MAX {
            let (line, column) = locate(text, "name:");
            return Err(ScenarioError {
                origin: origin.into(),
                line,
                column,
                message: format!(
                    "field `name`: expected at most {NAME_CHARS_MAX} characters, found {}",
                    scenario.name.chars().count()
                ),
            });
        }
        if !(1..=agentsim_engine::TIME_MS_MAX).contains(&scenario.horizon_ms) {
            let (line, column) = locate(text, "horizon_ms:");
            return Err(ScenarioError {
                origin: origin.into(),
                line,
                column,
                message: format!(
                    "field `horizon_ms`: expected a positive horizon of at most {} ms (ten years), found {}",
                    agentsim_engine::TIME_MS_MAX,
                    scenario.horizon_ms
                ),
            });
        }
        Ok(scenario)
    }

    /// The tools of this scenario.
    pub fn catalog(&self) -> Catalog {
        match &self.world {
            WorldConfig::SupportDesk(desk) => Catalog::new(support_desk::tools::specs(&desk.tools)),
            WorldConfig::FlightBooking(flights) => Catalog::new(flight_booking::tools::specs(&flights.tools)),
            WorldConfig::WeatherDining(dining) => Catalog::new(weather_dining::tools::specs(&dining.tools)),
            WorldConfig::Newsroom(news) => Catalog::new(newsroom::tools::specs(&news.tools)),
        }
    }

    /// The key from which every stream of this scenario derives: a digest of its
    /// canonical form, so editing any value changes every trajectory.
    pub fn key(&self) -> [u8; 32] {
        agentsim_engine::rng::key_of(self)
    }

    /// Every tool's configuration, by tool name, for editing (making a realised
    /// fault schedule explicit, dropping drift while shrinking).
    pub fn tool_configs_mut(&mut self) -> Vec<(&'static str, &mut agentsim_engine::ToolConfig)> {
        match &mut self.world {
            WorldConfig::SupportDesk(desk) => desk.tools.configs_mut(),
            WorldConfig::FlightBooking(flights) => flights.tools.configs_mut(),
            WorldConfig::WeatherDining(dining) => dining.tools.configs_mut(),
            WorldConfig::Newsroom(news) => news.tools.configs_mut(),
        }
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
    flight_ids: Option<flight_booking::Ids>,
    dining_ids: Option<weather_dining::Ids>,
    news_ids: Option<newsroom::Ids>,
}

impl Prepared {
    /// Prepares a parsed scenario.
    pub fn new(scenario: Scenario) -> Prepared {
        let key = scenario.key();
        Prepared::with_key(scenario, key)
    }

    /// Prepares a scenario whose streams derive from `key` rather than from its own
    /// content: an edited copy (an explicit fault schedule, a shrunk incident) that
    /// must still meet the same world, users and luck as the original.
    pub fn with_key(scenario: Scenario, key: [u8; 32]) -> Prepared {
        let catalog = scenario.catalog();
        let desk_ids = support_desk::Ids::find(&catalog);
        let flight_ids = flight_booking::Ids::find(&catalog);
        let dining_ids = weather_dining::Ids::find(&catalog);
        let news_ids = newsroom::Ids::find(&catalog);
        Prepared { scenario, catalog, key, desk_ids, flight_ids, dining_ids, news_ids }
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
            WorldConfig::FlightBooking(_) => {
                Box::new(flight_booking::Expert::new(self.flight_ids.expect("flight_booking catalog has its tools")))
            }
            WorldConfig::WeatherDining(_) => {
                Box::new(weather_dining::Expert::new(self.dining_ids.expect("weather_dining catalog has its tools")))
            }
            WorldConfig::Newsroom(_) => {
                Box::new(newsroom::Expert::new(self.news_ids.expect("newsroom catalog has its tools")))
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
        self.run_with(seed, trial, config, &self.catalog, None, agent)
    }

    /// This seed's swarm draw (see [`crate::swarm`]), or `None` when the scenario
    /// has no swarm section.
    pub fn swarm_draw(&self, seed: u64) -> Option<SwarmDraw> {
        (!self.scenario.swarm.is_empty())
            .then(|| self.scenario.swarm.draw(&self.catalog, &mut self.streams(seed).stream("swarm")))
    }

    /// Runs one seed in swarm mode: with the fault parameters this seed draws from
    /// the scenario's ranges, recorded as a `swarm` note at t=0. The same as
    /// [`Prepared::run`] for a scenario without a swarm section.
    pub fn run_swarm(
        &self,
        seed: u64,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        self.run_swarm_trial(seed, 0, config, agent)
    }

    /// [`Prepared::run_swarm`] for the `trial`-th attempt (pass^k in swarm mode).
    pub fn run_swarm_trial(
        &self,
        seed: u64,
        trial: u32,
        config: &SimConfig,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        match self.swarm_draw(seed) {
            Some(draw) => self.run_with(seed, trial, config, &draw.catalog, Some(draw.note()), agent),
            None => self.run_trial(seed, trial, config, agent),
        }
    }

    fn run_with(
        &self,
        seed: u64,
        trial: u32,
        config: &SimConfig,
        catalog: &Catalog,
        swarm_note: Option<Value>,
        agent: impl FnOnce(Box<dyn Agent>, &StreamSource) -> Box<dyn Agent>,
    ) -> Trajectory {
        let streams = self.streams(seed).with_trial(trial);
        let mut agent = agent(self.expert(), &streams);
        match &self.scenario.world {
            WorldConfig::SupportDesk(desk) => {
                let ids = self.desk_ids.expect("support_desk catalog has its tools");
                let world = support_desk::SupportDesk::new(desk, ids, &streams);
                agentsim_engine::sim::run(Noted::new(world, swarm_note), &mut *agent, catalog, &streams, config)
            }
            WorldConfig::FlightBooking(flights) => {
                let ids = self.flight_ids.expect("flight_booking catalog has its tools");
                let world = flight_booking::FlightBooking::new(flights, ids, &streams);
                agentsim_engine::sim::run(Noted::new(world, swarm_note), &mut *agent, catalog, &streams, config)
            }
            WorldConfig::WeatherDining(dining) => {
                let ids = self.dining_ids.expect("weather_dining catalog has its tools");
                let world = weather_dining::WeatherDining::new(dining, ids, &streams);
                agentsim_engine::sim::run(Noted::new(world, swarm_note), &mut *agent, catalog, &streams, config)
            }
            WorldConfig::Newsroom(news) => {
                let ids = self.news_ids.expect("newsroom catalog has its tools");
                let world = newsroom::Newsroom::new(news, ids, &streams);
                agentsim_engine::sim::run(Noted::new(world, swarm_note), &mut *agent, catalog, &streams, config)
            }
        }
    }
}

/// A world that first records a note at t=0 (the swarm draw), then is `W`.
struct Noted<W> {
    world: W,
    note: Option<Value>,
}

impl<W> Noted<W> {
    fn new(world: W, note: Option<Value>) -> Self {
        Noted { world, note }
    }
}

impl<W: World> World for Noted<W> {
    type Event = W::Event;

    fn start(&mut self, cx: &mut WorldCx<'_, W::Event>) {
        if let Some(note) = self.note.take() {
            cx.note("swarm", note);
        }
        self.world.start(cx);
    }

    fn on_event(&mut self, event: W::Event, cx: &mut WorldCx<'_, W::Event>) {
        self.world.on_event(event, cx);
    }

    fn handle(
        &mut self,
        call: &ToolCall,
        as_of_ms: TimeMs,
        cx: &mut WorldCx<'_, W::Event>,
    ) -> Result<Value, ToolError> {
        self.world.handle(call, as_of_ms, cx)
    }

    fn judge(&self) -> Verdict {
        self.world.judge()
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
