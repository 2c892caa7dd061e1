//! Replaying an external agent from its recorded decisions, without the process.
//!
//! An external agent's every answer is recorded in its trajectory as an
//! `("external", "decision", ...)` note, and a failure as an
//! `("external", "error.<kind>")` note (`("external", "error")` in recordings made
//! before failures had kinds: replayed as recorded) and an `("external", "stderr")`
//! diagnostic. [`ReplayedAgent`] gives the same answers in
//! the same order, reading and taking turns exactly as the live agent did, so the
//! replayed trajectory (digest included) is the recorded one. It diverges only if
//! the world does: then the decisions run out or stop fitting, and the run ends as
//! `agent_error` saying so.

use serde::{Deserialize, Serialize};

use agentsim_engine::{Action, Agent, AgentCx, EventKind, Finish, Input, Sessions, Trajectory, Value};

use super::error::{ErrorKind, LEGACY_NOTE_WHAT};
use super::{protocol, record_failure};

/// One recorded step of an external agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RecordedStep {
    /// An answer, as the trajectory recorded it.
    Decision(Value),
    /// The agent failed here.
    Failed {
        /// Why.
        reason: String,
        /// The end of its stderr.
        stderr: String,
        /// Its kind, as its note named it; `None` for a note without one (a
        /// recording made before kinds), which is replayed as `error` again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<ErrorKind>,
    },
    /// In a run of many sessions: the steps that follow are this session's
    /// agent's (until the next marker). A run of one session has none.
    Session(u32),
}

impl RecordedStep {
    /// The failure note's `what`, exactly as it was recorded.
    fn failure_what(kind: Option<ErrorKind>) -> &'static str {
        kind.map_or(LEGACY_NOTE_WHAT, ErrorKind::note_what)
    }
}

/// The recorded steps of an external agent in a recorded trajectory of a run
/// whose sessions draw as themselves, in order (see [`recorded_steps_of`]).
pub fn recorded_steps(t: &Trajectory) -> Vec<RecordedStep> {
    recorded_steps_of(t, &Sessions::default())
}

/// The recorded steps of an external agent in a recorded trajectory of a run
/// of `sessions`, in order. In a run of many sessions each session's steps
/// follow a [`RecordedStep::Session`] marker naming the session it draws as
/// (`Sessions::drawn_as`: the number its agent's streams carry), so that every
/// session's agent replays its own ([`session_steps`]), in the run and in a
/// run of some of its sessions.
pub fn recorded_steps_of(t: &Trajectory, sessions: &Sessions) -> Vec<RecordedStep> {
    let mut steps = Vec::new();
    let mut pending_error: Option<(String, Option<ErrorKind>)> = None;
    let mut marked = None;
    for event in &t.events {
        let EventKind::Note(note) = &event.kind else { continue };
        if note.source != "external" {
            continue;
        }
        if event.session.is_some() && event.session != marked {
            if let Some((reason, kind)) = pending_error.take() {
                steps.push(RecordedStep::Failed { reason, stderr: String::new(), kind });
            }
            marked = event.session;
            steps.extend(marked.map(|session| RecordedStep::Session(sessions.drawn_as(session))));
        }
        let text = || note.detail.as_str().unwrap_or_default().to_string();
        match (note.what, ErrorKind::of_note_what(note.what)) {
            ("decision", _) => steps.push(RecordedStep::Decision(note.detail.clone())),
            (_, Some(kind)) => pending_error = Some((text(), kind)),
            ("stderr", _) => {
                let (reason, kind) = pending_error.take().unwrap_or_default();
                steps.push(RecordedStep::Failed { reason, stderr: text(), kind });
            }
            _ => {}
        }
    }
    if let Some((reason, kind)) = pending_error {
        steps.push(RecordedStep::Failed { reason, stderr: String::new(), kind });
    }
    steps
}

/// The steps of session `session`'s agent: those after its markers, or all of
/// them when there are no markers (a run of one session).
pub fn session_steps(steps: &[RecordedStep], session: u32) -> Vec<RecordedStep> {
    if !steps.iter().any(|s| matches!(s, RecordedStep::Session(_))) {
        return steps.to_vec();
    }
    let mut current = None;
    let mut own = Vec::new();
    for step in steps {
        match step {
            RecordedStep::Session(s) => current = Some(*s),
            step if current == Some(session) => own.push(step.clone()),
            _ => {}
        }
    }
    own
}

/// An external agent played back from its recorded steps.
pub struct ReplayedAgent {
    steps: Vec<RecordedStep>,
    next: usize,
}

impl ReplayedAgent {
    /// Plays back `steps` in order.
    pub fn new(steps: Vec<RecordedStep>) -> Self {
        Self { steps, next: 0 }
    }
}

impl Agent for ReplayedAgent {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        // The live agent read every observation and took a turn for each answer.
        cx.read(&input);
        cx.begin_turn();
        let Some(step) = self.steps.get(self.next).cloned() else {
            return Action::Finish(Finish::Failed {
                reason: format!("replay diverged: the recording has only {} decisions", self.steps.len()),
            });
        };
        self.next += 1;
        match step {
            RecordedStep::Decision(decision) => {
                let mut json = protocol::to_json(&decision);
                if let serde_json::Value::Object(map) = &mut json {
                    map.insert("protocol".into(), serde_json::Value::String(protocol::PROTOCOL.into()));
                }
                let line = json.to_string();
                match protocol::parse_recorded_action(line.as_bytes(), cx.catalog) {
                    Ok((action, decision)) => {
                        if let Some(think_ms) = protocol::reported_think_ms(&decision) {
                            cx.set_think_ms(think_ms);
                        }
                        cx.note("external", "decision", decision);
                        action
                    }
                    Err(e) => Action::Finish(Finish::Failed {
                        reason: format!("replay diverged: recorded decision {} does not parse: {e}", self.next),
                    }),
                }
            }
            RecordedStep::Failed { reason, stderr, kind } => {
                record_failure(cx, RecordedStep::failure_what(kind), reason, stderr)
            }
            // `session_steps` keeps markers out of an agent's steps.
            RecordedStep::Session(_) => Action::Finish(Finish::Failed {
                reason: format!("replay diverged: recorded step {} is a session marker", self.next),
            }),
        }
    }
}
