//! Why an external agent failed: a kind, typed where the failure is made, and the
//! reason in words.
//!
//! A failure is recorded as the note `("external", "error.<kind>", reason)`, so
//! the `decisions` column of `trajectories.csv` and the `decisions` map of
//! `summary.json` (which count notes by `source.what`) break failures down by
//! kind, e.g. `external.error.timeout=3`, with no other change to the summary.
//! Recordings made before kinds existed hold `("external", "error", reason)`;
//! their replay re-emits exactly that (`replayed`).

use serde::{Deserialize, Serialize};

/// What kind of failure ended an external agent's trajectory (`docs/protocol.md`,
/// "Failures"). Decided by which check failed, never by which thread saw it
/// first: every way the agent's pipes can end is [`ErrorKind::Closed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The process could not be started (no such program, an empty command, no pipes).
    Start,
    /// Its stdin or stdout closed, or reading or writing them failed: it exited or
    /// crashed. A write (`EPIPE`) and a read (end of file) race to see this first,
    /// so both are this kind.
    Closed,
    /// No answer within the per-turn wall-clock limit.
    Timeout,
    /// A line longer than the configured maximum.
    LineTooLong,
    /// An answer that is not JSON.
    NotJson,
    /// JSON that is not a valid action: not an object, a wrong `protocol`, an
    /// unknown action or tool, a bad field.
    InvalidAction,
    /// A malformed hello, or (persistent agents) a first line that is no hello
    /// from a process of an agent that greeted on another.
    BadHello,
    /// A persistent agent's answer that names no episode, or one it was never sent.
    BadEpisode,
    /// SIGINT or SIGTERM ended the wait, or came before the agent was started.
    Interrupted,
    /// An agent driven through the Python module raised, or gave something that
    /// is not an action (`Session.fail`).
    Raised,
    /// The episode was abandoned before it ended (its driver dropped it).
    Abandoned,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Start,
        ErrorKind::Closed,
        ErrorKind::Timeout,
        ErrorKind::LineTooLong,
        ErrorKind::NotJson,
        ErrorKind::InvalidAction,
        ErrorKind::BadHello,
        ErrorKind::BadEpisode,
        ErrorKind::Interrupted,
        ErrorKind::Raised,
        ErrorKind::Abandoned,
    ];

    /// The kind's name, in snake case (`line_too_long`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Start => "start",
            ErrorKind::Closed => "closed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::LineTooLong => "line_too_long",
            ErrorKind::NotJson => "not_json",
            ErrorKind::InvalidAction => "invalid_action",
            ErrorKind::BadHello => "bad_hello",
            ErrorKind::BadEpisode => "bad_episode",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::Raised => "raised",
            ErrorKind::Abandoned => "abandoned",
        }
    }

    /// The `what` of the note that records a failure of this kind (`error.timeout`).
    pub fn note_what(self) -> &'static str {
        match self {
            ErrorKind::Start => "error.start",
            ErrorKind::Closed => "error.closed",
            ErrorKind::Timeout => "error.timeout",
            ErrorKind::LineTooLong => "error.line_too_long",
            ErrorKind::NotJson => "error.not_json",
            ErrorKind::InvalidAction => "error.invalid_action",
            ErrorKind::BadHello => "error.bad_hello",
            ErrorKind::BadEpisode => "error.bad_episode",
            ErrorKind::Interrupted => "error.interrupted",
            ErrorKind::Raised => "error.raised",
            ErrorKind::Abandoned => "error.abandoned",
        }
    }

    /// The kind a note's `what` names: `Some(None)` for the kindless `error` of
    /// older recordings, `None` when it is no error note.
    pub fn of_note_what(what: &str) -> Option<Option<ErrorKind>> {
        if what == LEGACY_NOTE_WHAT {
            return Some(None);
        }
        ErrorKind::ALL.into_iter().find(|k| k.note_what() == what).map(Some)
    }
}

/// The `what` of a failure note recorded before failures had kinds.
pub const LEGACY_NOTE_WHAT: &str = "error";

/// An external agent's failure: its kind and the reason, in words (the
/// trajectory's end reason and the note's detail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// Why, in words.
    pub reason: String,
}

impl ExternalError {
    /// A failure of `kind` for `reason`.
    pub fn new(kind: ErrorKind, reason: impl Into<String>) -> Self {
        Self { kind, reason: reason.into() }
    }
}

impl std::fmt::Display for ExternalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for ExternalError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_note_whats_agree_and_read_back() {
        for kind in ErrorKind::ALL {
            assert_eq!(kind.note_what(), format!("error.{}", kind.name()));
            assert_eq!(ErrorKind::of_note_what(kind.note_what()), Some(Some(kind)));
            let json = serde_json::to_string(&kind).expect("a kind serializes");
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<ErrorKind>(&json).expect("reads back"), kind);
        }
        assert_eq!(ErrorKind::of_note_what("error"), Some(None));
        assert_eq!(ErrorKind::of_note_what("decision"), None);
        assert_eq!(ErrorKind::of_note_what("error.nope"), None);
    }
}
