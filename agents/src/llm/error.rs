//! Why a model request failed for good (after its retries).

use std::fmt;

/// What kind of failure ended an LLM agent's episode: the note
/// `llm.error.<kind>` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmErrorKind {
    /// Replay mode, and the cassette has no answer for the request.
    MissingAnswer,
    /// The provider kept failing (429, 5xx, timeouts) until the attempts ran out.
    Provider,
    /// The provider refused the request for good (400, 401, 404): a
    /// configuration error, not retried.
    Refused,
    /// The model's answers stayed malformed (no choice, an unknown tool,
    /// arguments that are not a JSON object) until the attempts ran out.
    Malformed,
    /// The cassette could not be read or written, or holds a bad entry.
    Cassette,
    /// This build has no HTTP client (or no TLS for an `https` URL).
    Unsupported,
    /// An answer larger than one may add to the conversation
    /// ([`ANSWER_BYTES_MAX`](super::request::ANSWER_BYTES_MAX)), or a request
    /// larger than one may be ([`REQUEST_BYTES_MAX`](super::request::REQUEST_BYTES_MAX)).
    TooLarge,
}

impl LlmErrorKind {
    /// The note's `what`: `error.<kind>`.
    pub fn note_what(self) -> &'static str {
        match self {
            Self::MissingAnswer => "error.missing_answer",
            Self::Provider => "error.provider",
            Self::Refused => "error.refused",
            Self::Malformed => "error.malformed",
            Self::Cassette => "error.cassette",
            Self::Unsupported => "error.unsupported",
            Self::TooLarge => "error.too_large",
        }
    }
}

/// A request that failed for good, with the reason in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlmError {
    /// What kind of failure.
    pub kind: LlmErrorKind,
    /// In words (what the trajectory's end reason says).
    pub reason: String,
}

impl LlmError {
    /// A failure of `kind`.
    pub fn new(kind: LlmErrorKind, reason: impl Into<String>) -> Self {
        Self { kind, reason: reason.into() }
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for LlmError {}
