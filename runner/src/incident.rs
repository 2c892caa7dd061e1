//! Incidents: one trajectory saved so that it replays exactly, anywhere.
//!
//! An incident holds everything a replay needs by value: the scenario, the seed,
//! the stack, the fault scale, and (when the scenario was edited after the fact, as
//! a shrunk schedule is) the key its streams derive from. It states what happened,
//! the outcome and the digest, with the timeline as text, so a replay that diverges
//! can say where. `expect` states the outcome other stacks should reach on it: the
//! regression question "does the fixed stack survive this incident?".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use agentsim_agents::external::replayed::recorded_steps_of;
use agentsim_agents::llm::cassette::Entry;
use agentsim_agents::llm::{Answers, Endpoint, memory};
use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_engine::{EventKind, Outcome, Trajectory};
use agentsim_worlds::scenario::{ron_error, ron_options};
use agentsim_worlds::{Prepared, Scenario, ScenarioError};

use crate::{Runner, timeline};

/// The incident file format version this build writes. Version 2 (2026-12-03)
/// pins digests of format 2 (XXH3-128); a version 1 file, whose digest is of
/// format 1 (BLAKE3), is still read: it replays its events and outcome, and its
/// replay says that only the digest's format differs.
pub const INCIDENT_VERSION: u32 = 2;

/// The oldest incident version this build reads.
pub const INCIDENT_VERSION_MIN: u32 = 1;

/// The largest incident file written and read back: the same bound on both sides,
/// so that agentsim never writes an incident it then refuses. It holds what the
/// largest trace `import-trace` reads makes (100,000 records, about 23 MB); a
/// larger one (a scenario of many megabytes, a timeline of a million events) is
/// refused when it is written, with its size.
pub const INCIDENT_BYTES_MAX: u64 = 64 << 20;

/// Fewer bytes than one recorded event adds to an incident, on average over a
/// run: its timeline line (the time, the session and what happened, quoted and
/// indented). Used to tell, before a failing run is re-run to record it, that
/// its incident could not be written anyway (see [`bytes_min`]), so that the
/// re-run, which keeps every event in memory, is bounded to
/// [`INCIDENT_BYTES_MAX`] / 48 events (about 1.4 million). Measured: 75 to 83
/// bytes an event on the shipped many-session scenarios, 104 on the 25,000
/// sessions of issue 46 (a test keeps the bound below what is measured).
pub const EVENT_BYTES_MIN: u64 = 48;

/// The size of `scenario` as an incident holds it.
pub fn scenario_bytes(scenario: &Scenario) -> u64 {
    ron_text(scenario).len() as u64
}

/// A size the incident of a run of `events` recorded events over a scenario
/// of `scenario_bytes` certainly reaches.
pub fn bytes_min(scenario_bytes: u64, events: u64) -> u64 {
    scenario_bytes.saturating_add(events.saturating_mul(EVENT_BYTES_MIN))
}

/// A bound in bytes as a person reads it: `64 MiB`, or `1000 bytes`.
pub fn bytes_shown(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { format!("{} MiB", bytes >> 20) } else { format!("{bytes} bytes") }
}

/// The longest `agent` label an incident may have, in characters: the longest
/// argument Linux passes to a process (`--agent cmd:...`), far below the size of
/// the summaries it is copied into.
pub const AGENT_CHARS_MAX: usize = 131_072;

/// One recorded trajectory, standing alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incident {
    /// Format version ([`INCIDENT_VERSION`]).
    pub version: u32,
    /// What happened, in a line (optional).
    #[serde(default)]
    pub title: String,
    /// The scenario, by value.
    pub scenario: Scenario,
    /// Hex key the streams derive from, when it is not the scenario's own (an edited
    /// scenario that must meet the same world). Absent: the scenario's key.
    #[serde(default)]
    pub stream_key: Option<String>,
    /// The seed.
    pub seed: u64,
    /// The trial of the seed (`--trials K`: another attempt of the agents, or
    /// another schedule when the scenario explores interleavings); left out
    /// when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trial: u32,
    /// Multiplier on fault probabilities.
    #[serde(default = "one")]
    pub fault_scale: f64,
    /// Swarm mode: the seed drew its fault parameters from the scenario's ranges.
    #[serde(default)]
    pub swarm: bool,
    /// The agent spec as it was given (`naive`, `stacks/x.ron`).
    pub agent: String,
    /// The stack, by value.
    pub stack: StackSpec,
    /// The recorded outcome.
    pub outcome: Outcome,
    /// The recorded trajectory digest.
    pub digest: String,
    /// The recorded timeline, one line per event, to show where a replay diverges.
    #[serde(default)]
    pub timeline: Vec<String>,
    /// Outcomes other stacks (preset names or stack file paths) must reach when the
    /// incident is replayed with `--agent`.
    #[serde(default)]
    pub expect: BTreeMap<String, Outcome>,
    /// The model answers the episode used (its agent's and its user's, when
    /// models play them), so that it replays with no cassette and no network
    /// (docs/llm.md, "Incidents carry their answers"). Left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<CarriedAnswer>,
}

/// One model answer an incident carries: what a cassette entry holds but the
/// request (the key stands for it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CarriedAnswer {
    /// The request's cassette key (64 hex digits).
    pub key: String,
    /// The provider's response body, as JSON text.
    pub response: String,
    /// Why each failed attempt before it failed (`http 429`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<String>,
}

fn one() -> f64 {
    1.0
}

fn is_zero(trial: &u32) -> bool {
    *trial == 0
}

/// `seed N`, or `seed N, trial K` for a trial after the first.
pub fn seed_and_trial(seed: u64, trial: u32) -> String {
    match trial {
        0 => format!("seed {seed}"),
        k => format!("seed {seed}, trial {k}"),
    }
}

impl Incident {
    /// Records a trajectory (run with recording on) as an incident.
    pub fn record(
        prepared: &Prepared,
        stream_key: Option<[u8; 32]>,
        seed: u64,
        fault_scale: f64,
        agent: &str,
        stack: &StackSpec,
        trajectory: &Trajectory,
    ) -> Incident {
        Incident {
            version: INCIDENT_VERSION,
            title: format!(
                "{} on {}: {}",
                trajectory.outcome,
                seed_and_trial(seed, trajectory.trial),
                trajectory.verdict.detail
            ),
            scenario: prepared.scenario.clone(),
            stream_key: stream_key.map(hex),
            seed,
            trial: trajectory.trial,
            fault_scale,
            swarm: false,
            agent: agent.to_string(),
            stack: replayable(stack, trajectory, &prepared.scenario.sessions),
            outcome: trajectory.outcome,
            digest: trajectory.digest.to_string(),
            timeline: timeline::render_replayable(trajectory, &prepared.catalog).lines().map(str::to_string).collect(),
            expect: BTreeMap::new(),
            answers: carried(trajectory, stack),
        }
    }

    /// Parses an incident file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Incident, ScenarioError> {
        let incident: Incident = ron_options().from_str(text).map_err(|e| ron_error(text, origin, &e))?;
        // Checks past parsing point at the field's first `name:` in the text.
        let fail_at = |field: &str, message: String| {
            let (line, column) = text.find(&format!("{field}:")).map_or((1, 1), |offset| {
                let before = &text[..offset];
                (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
            });
            ScenarioError { origin: origin.to_string(), line, column, message }
        };
        let fail = |message: String| {
            let field = message.split('`').nth(1).unwrap_or("").to_string();
            fail_at(&field, message)
        };
        if !(INCIDENT_VERSION_MIN..=INCIDENT_VERSION).contains(&incident.version) {
            return Err(fail(format!(
                "field `version`: this build reads incident versions {INCIDENT_VERSION_MIN} to {INCIDENT_VERSION}, found {}",
                incident.version
            )));
        }
        if let Some(key) = &incident.stream_key
            && unhex(key).is_none()
        {
            return Err(fail(format!("field `stream_key`: expected 64 hex digits, found `{key}`")));
        }
        if !incident.fault_scale.is_finite() || incident.fault_scale < 0.0 {
            return Err(fail(format!(
                "field `fault_scale`: expected a finite number >= 0, found {}",
                incident.fault_scale
            )));
        }
        // The label is copied into the summary.json of `summarize`: bounded, so
        // that it stays far below the size summaries are read back with.
        if incident.agent.chars().count() > AGENT_CHARS_MAX {
            return Err(fail(format!(
                "field `agent`: expected at most {AGENT_CHARS_MAX} characters, found {}",
                incident.agent.chars().count()
            )));
        }
        if agentsim_engine::Digest::from_hex(&incident.digest).is_none() {
            return Err(fail(format!("field `digest`: expected 32 hex digits, found `{}`", incident.digest)));
        }
        for answer in &incident.answers {
            if answer.key.len() != 64 || !answer.key.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(fail_at(
                    "key",
                    format!("field `answers`: a key must be 64 hex digits, found `{}`", answer.key),
                ));
            }
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&answer.response) {
                return Err(fail_at(
                    "response",
                    format!("field `answers`: the response of {} is not JSON: {e}", answer.key),
                ));
            }
        }
        crate::spec::check_layers(&incident.stack, text, origin)?;
        // The embedded scenario gets the same checks as a scenario file.
        let scenario_text = ron_text(&incident.scenario);
        crate::load::install_extensions();
        Scenario::parse(&scenario_text, &format!("{origin} (field `scenario`)"))?;
        Ok(incident)
    }

    /// The incident as RON text, in the dialect the loaders read.
    pub fn to_ron(&self) -> String {
        ron_text(self)
    }

    /// The incident as RON text, refused when it is larger than
    /// [`INCIDENT_BYTES_MAX`] or when [`Incident::parse`] would refuse it: what
    /// every command that writes an incident uses.
    pub fn to_ron_bounded(&self) -> Result<String, WriteError> {
        self.to_ron_within(INCIDENT_BYTES_MAX)
    }

    /// [`Incident::to_ron_bounded`] with another bound (a sweep's
    /// `incident_bytes_max`).
    pub fn to_ron_within(&self, bytes_max: u64) -> Result<String, WriteError> {
        let refuse = |kind: WriteErrorKind, message: String| WriteError { seed: self.seed, kind, message };
        if self.agent.chars().count() > AGENT_CHARS_MAX {
            return Err(refuse(
                WriteErrorKind::AgentLabel,
                format!(
                    "the agent label of the incident of seed {} is longer than {AGENT_CHARS_MAX} characters: not written",
                    self.seed
                ),
            ));
        }
        let text = ron_text(self);
        if text.len() as u64 > bytes_max {
            return Err(refuse(
                WriteErrorKind::TooLarge { bytes: text.len() as u64, bytes_max },
                format!(
                    "the incident of seed {} would be {} bytes, more than the {} an incident may have to be read back \
                 (its scenario is {} bytes and its timeline {} lines): not written",
                    self.seed,
                    text.len(),
                    bytes_shown(bytes_max),
                    ron_text(&self.scenario).len(),
                    self.timeline.len()
                ),
            ));
        }
        // Read back as `replay` reads it: a command never reports an incident
        // written that its reader then refuses.
        Incident::parse(&text, "the incident").map_err(|e| {
            let message =
                format!("the incident of seed {} would be refused when read back ({e}): not written", self.seed);
            refuse(WriteErrorKind::RefusedOnReadBack(e), message)
        })?;
        Ok(text)
    }

    /// The scenario prepared with the incident's stream key; a model playing
    /// its user answers from the incident's answers alone (offline).
    pub fn prepared(&self) -> Prepared {
        let mut prepared = match self.stream_key.as_deref().and_then(unhex) {
            Some(key) => Prepared::with_key(self.scenario.clone(), key),
            None => Prepared::new(self.scenario.clone()),
        };
        crate::llm::configure_user(&mut prepared, &self.offline_endpoint());
        crate::llm::configure_judge(&mut prepared, &self.offline_endpoint());
        prepared
    }

    /// Where the incident's models answer from on replay: its own answers,
    /// and never the network.
    pub fn offline_endpoint(&self) -> Endpoint {
        let answers = self.answers.iter().filter_map(|a| {
            let response = serde_json::from_str(&a.response).ok()?;
            Some((a.key.clone(), Entry { response, retries: a.retries.clone() }))
        });
        Endpoint { answers: Answers(Arc::new(answers.collect())), offline: true, ..Endpoint::default() }
    }

    /// `stack` as it replays the incident: a model as its planner answers from
    /// the incident's answers alone (offline).
    pub fn offline_stack(&self, stack: &StackSpec) -> StackSpec {
        let mut stack = stack.clone();
        if let PlannerSpec::Llm(config) = &mut stack.planner {
            config.endpoint = self.offline_endpoint();
        }
        stack
    }

    /// Replays the incident with its own stack (or `stack` when given), recording.
    pub fn replay(&self, prepared: &Prepared, stack: Option<&StackSpec>) -> Trajectory {
        let stack = self.offline_stack(stack.unwrap_or(&self.stack));
        Runner::new(prepared, &stack, true, self.fault_scale).with_swarm(self.swarm).run_trial(self.seed, self.trial)
    }

    /// Compares a replay with its own stack against the record: the outcome, the
    /// digest and, when the incident holds one, the timeline text (which the
    /// digest does not cover: an edited line would otherwise mislead a reader of
    /// the file while the replay passed).
    pub fn check(&self, prepared: &Prepared, replayed: &Trajectory) -> Replay {
        let digest = replayed.digest.to_string();
        let rendered = timeline::render_replayable(replayed, &prepared.catalog);
        let same_timeline = self.timeline.is_empty() || self.timeline.iter().map(String::as_str).eq(rendered.lines());
        if replayed.outcome == self.outcome && digest == self.digest && same_timeline {
            return Replay::Match;
        }
        let lines: Vec<String> = rendered.lines().map(str::to_string).collect();
        let first_difference = (0..self.timeline.len().max(lines.len()))
            .find(|&i| self.timeline.get(i) != lines.get(i))
            .map(|i| Difference {
                index: i,
                recorded: self.timeline.get(i).cloned().unwrap_or_else(|| "(nothing: the record ends here)".into()),
                replayed: lines.get(i).cloned().unwrap_or_else(|| "(nothing: the replay ends here)".into()),
            });
        Replay::Diverged { outcome: replayed.outcome, digest, first_difference }
    }
}

/// The stack as an incident stores it: an external agent becomes its recorded
/// decisions, so the incident replays without the process (and a file never names
/// a command to run).
fn replayable(stack: &StackSpec, trajectory: &Trajectory, sessions: &agentsim_engine::Sessions) -> StackSpec {
    match &stack.planner {
        PlannerSpec::External(_) => {
            let steps = recorded_steps_of(trajectory, sessions);
            StackSpec { planner: PlannerSpec::Replayed(steps), layers: stack.layers.clone() }
        }
        _ => stack.clone(),
    }
}

/// The answers a recorded trajectory's models used (the notes `llm.answer`
/// and `llm_user.answer` and the world's `judged_reading` name their keys), in the order first used: from this
/// process's memory, else from the stack's cassette folder. An answer found
/// in neither is left out (its replay then ends naming the request).
fn carried(trajectory: &Trajectory, stack: &StackSpec) -> Vec<CarriedAnswer> {
    let cassette = match &stack.planner {
        PlannerSpec::Llm(config) => config.endpoint.cassette.as_ref().map(|(dir, _)| dir.clone()),
        _ => None,
    };
    let mut keys: Vec<&str> = Vec::new();
    for event in &trajectory.events {
        let key = match &event.kind {
            EventKind::Note(note)
                if matches!(note.source, "llm" | agentsim_agents::llm::user::NOTE_SOURCE) && note.what == "answer" =>
            {
                note.detail.as_str()
            }
            // A judge's reading names the key of the answer it read.
            EventKind::World { what: "judged_reading", detail } => detail.get("key").and_then(|k| k.as_str()),
            _ => None,
        };
        if let Some(key) = key
            && !keys.contains(&key)
        {
            keys.push(key);
        }
    }
    keys.into_iter()
        .filter_map(|key| {
            let entry = memory::recall(key).or_else(|| {
                cassette.as_deref().and_then(|dir| agentsim_agents::llm::cassette::load(dir, key).ok()?)
            })?;
            Some(CarriedAnswer {
                key: key.to_string(),
                response: agentsim_agents::llm::request::canonical(&entry.response),
                retries: entry.retries,
            })
        })
        .collect()
}

/// How a replay compares with its record.
#[derive(Clone, Debug, PartialEq)]
pub enum Replay {
    /// Same outcome, same digest.
    Match,
    /// Something differs.
    Diverged {
        /// The replayed outcome.
        outcome: Outcome,
        /// The replayed digest.
        digest: String,
        /// The first timeline line that differs (none when only the digest does).
        first_difference: Option<Difference>,
    },
}

/// The first event where a replay differs from its record.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// 0-based event index.
    pub index: usize,
    /// The recorded line (virtual time first).
    pub recorded: String,
    /// The replayed line.
    pub replayed: String,
}

fn ron_text<T: Serialize>(value: &T) -> String {
    let config = ron::ser::PrettyConfig::new()
        .extensions(ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES | ron::extensions::Extensions::IMPLICIT_SOME);
    let mut text = ron::Options::default().to_string_pretty(value, config).expect("incidents are plain data");
    text.push('\n');
    text
}

/// Lower-case hex of a key.
pub fn hex(key: [u8; 32]) -> String {
    agentsim_engine::hex::hex(&key)
}

/// A key from 64 hex digits.
pub fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// An incident that is not written: its seed, why, and the text shown to the
/// user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteError {
    /// The incident's seed.
    pub seed: u64,
    /// Why it is not written.
    pub kind: WriteErrorKind,
    /// The text shown to the user.
    pub message: String,
}

/// Why an incident is not written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteErrorKind {
    /// Its agent label is longer than its reader accepts.
    AgentLabel,
    /// Its text is larger than its reader accepts.
    TooLarge {
        /// The text's size.
        bytes: u64,
        /// The size its reader accepts.
        bytes_max: u64,
    },
    /// Its reader would refuse it, for this reason.
    RefusedOnReadBack(ScenarioError),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WriteError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incident_over_the_bound_is_refused_when_written() {
        let text = crate::builtin::scenario("support_desk").unwrap();
        let prepared = Prepared::new(Scenario::parse(text, "support_desk").unwrap());
        let stack = agentsim_agents::preset("oracle").unwrap();
        let t = Runner::new(&prepared, &stack, true, 1.0).run(0);
        let incident = Incident::record(&prepared, None, 0, 1.0, "oracle", &stack, &t);
        let size = incident.to_ron().len() as u64;
        assert_eq!(incident.to_ron_within(size).unwrap(), incident.to_ron());
        let err = incident.to_ron_within(size - 1).unwrap_err();
        assert!(matches!(err.kind, WriteErrorKind::TooLarge { .. }), "{err}");
        let err = err.to_string();
        assert!(err.contains("not written") && err.contains(&format!("{size} bytes")), "{err}");

        // The agent label: refused when written and when read.
        let mut long = incident.clone();
        long.agent = "x".repeat(AGENT_CHARS_MAX + 1);
        assert!(long.to_ron_bounded().unwrap_err().to_string().contains("agent label"));
        let err = Incident::parse(&long.to_ron(), "long.ron").unwrap_err();
        assert!(err.message.contains("field `agent`"), "{err}");
        long.agent.pop();
        assert!(Incident::parse(&long.to_ron_bounded().unwrap(), "long.ron").is_ok());
    }

    #[test]
    fn an_incident_its_reader_would_refuse_is_not_written() {
        let text = crate::builtin::scenario("support_desk").unwrap();
        let prepared = Prepared::new(Scenario::parse(text, "support_desk").unwrap());
        let stack = agentsim_agents::preset("oracle").unwrap();
        let t = Runner::new(&prepared, &stack, true, 1.0).run(0);
        let mut incident = Incident::record(&prepared, None, 0, 1.0, "oracle", &stack, &t);
        incident.digest = "not hex".into();
        let err = incident.to_ron_bounded().unwrap_err().to_string();
        assert!(err.contains("refused when read back") && err.contains("field `digest`"), "{err}");
    }
}
