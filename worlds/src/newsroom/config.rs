//! The newsroom section of a scenario: editors, the feed process, personas, tools.

use serde::{Deserialize, Serialize};

use agentsim_engine::{Latency, Probability, TimeMs};

use crate::kit::checks::{ConfigError, ConfigErrorKind, not_empty, positive_interval, unique_ids};
use crate::kit::persona::personas;
use crate::kit::tool_configs::tool_configs;

/// An editor who asks for summaries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Editor {
    /// Editor id, like `"E01"`.
    pub id: String,
    /// Display name.
    pub name: String,
}

personas! {
    /// How often each persona is drawn (relative weights, not all zero).
    pub struct Personas {
        #[doc = "Says how many stories."]
        clear: Clear = 0.6,
        #[doc = "Asks for \"the latest news\"; says how many when asked."]
        vague: Vague = 0.2,
        #[doc = "Clear, but leaves after `patience_ms` without a summary."]
        impatient: Impatient = 0.2,
    }
}

tool_configs! {
    /// The tools of newsroom and their behaviour.
    pub struct Tools {
        /// `latest_news(limit)`.
        latest_news,
        /// `get_story(story_id)`.
        get_story,
        /// `create_task(key, kind, story_id, depends_on)`.
        create_task,
        /// `list_tasks()`.
        list_tasks,
        /// `send_summary(editor_id, stories, stale)`.
        send_summary,
        /// `send_message(editor_id, kind)`.
        send_message,
        /// `escalate(editor_id, reason)`.
        escalate,
        /// `authenticate()`, the engine's session renewal.
        authenticate,
    }
}

/// The newsroom world's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NewsroomConfig {
    /// Editors.
    pub editors: Vec<Editor>,
    /// Story titles, drawn for each story (at least one).
    pub topics: Vec<String>,
    /// Stories already in the feed at time 0.
    pub initial_stories: u32,
    /// Time between two story arrivals.
    pub arrival_ms: Latency,
    /// Chance that a story (initial or new) is corrected later.
    pub correction_probability: Probability,
    /// Time from a story's arrival (or time 0) to its correction.
    pub correction_delay_ms: Latency,
    /// Smallest number of stories asked for.
    pub summary_size_min: u32,
    /// Largest number of stories asked for (at most `initial_stories`).
    pub summary_size_max: u32,
    /// How long an impatient editor waits for the summary.
    #[serde(deserialize_with = "agentsim_engine::time::bounded_ms")]
    pub patience_ms: TimeMs,
    /// Persona weights.
    pub personas: Personas,
    /// How long the editor takes to answer.
    pub reply_ms: Latency,
    /// The tools.
    pub tools: Tools,
}

impl Default for NewsroomConfig {
    fn default() -> Self {
        Self {
            editors: vec![Editor { id: "E01".into(), name: "Nellie".into() }],
            topics: ["election results", "storm warning", "market close", "transit strike", "cup final"]
                .iter()
                .map(|t| t.to_string())
                .collect(),
            initial_stories: 6,
            arrival_ms: Latency::Uniform { min_ms: 20_000, max_ms: 120_000 },
            correction_probability: Probability::try_from(0.3).expect("0.3 is a probability"),
            correction_delay_ms: Latency::Uniform { min_ms: 10_000, max_ms: 180_000 },
            summary_size_min: 2,
            summary_size_max: 4,
            patience_ms: 180_000,
            personas: Personas::default(),
            reply_ms: Latency::Uniform { min_ms: 4_000, max_ms: 30_000 },
            tools: Tools::default(),
        }
    }
}

impl NewsroomConfig {
    /// Cross-checks that serde cannot express. Returns the first problem.
    pub fn check(&self) -> Result<(), ConfigError> {
        unique_ids(self.editors.iter().map(|e| e.id.as_str()), "editors", "editor")?;
        not_empty(self.editors.is_empty(), "editors", "editor")?;
        not_empty(self.topics.is_empty(), "topics", "topic")?;
        if self.summary_size_min == 0
            || self.summary_size_max < self.summary_size_min
            || self.summary_size_max > self.initial_stories
        {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "summary_size_max",
                format!(
                    "expected 1 <= summary_size_min <= summary_size_max <= initial_stories, found {}..={} with {} stories",
                    self.summary_size_min, self.summary_size_max, self.initial_stories
                ),
            ));
        }
        if self.initial_stories > 1_000 {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "initial_stories",
                format!("expected at most 1000 stories, found {}", self.initial_stories),
            ));
        }
        positive_interval(&self.arrival_ms, "arrival_ms", "arrivals")?;
        self.personas.check()
    }
}
