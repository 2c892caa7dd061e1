//! A reader of the agent's words beside the world's rules: a model
//! (`--judge llm:MODEL`, docs/llm.md) asked to read what the rules reader
//! cannot decide (docs/conversation.md, "A model judge where the rules give
//! up").
//!
//! A world asks it through [`crate::WorldCx::judge`] when the rules leave a
//! message uncertain; without one (the default) the world keeps the reading
//! `uncertain`. The judge's answers are model answers, inputs like a seed
//! (DESIGN.md, rule 7): recorded in a cassette and replayed, so a run with a
//! judge replays bit for bit offline. A judge that fails, or answers what
//! cannot be read, leaves the reading uncertain: it never rounds a doubt to
//! success.

use std::fmt;
use std::sync::Arc;

/// What a judge read in one message: whether it says the task's action was
/// done, and the values it binds to it. `None` is "the message does not say"
/// (or the judge cannot tell).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JudgeAnswer {
    /// `Some(true)`: the message says it was done; `Some(false)`: it says
    /// it was not, or only proposes, promises or hedges; `None`: cannot tell.
    pub done: Option<bool>,
    /// The amount it says, in cents.
    pub amount_cents: Option<i64>,
    /// The order it names.
    pub order_id: Option<String>,
    /// The item it names.
    pub item: Option<String>,
    /// The cassette key of the request that gave this answer (for the
    /// trajectory's note, so an incident can carry the answer).
    pub key: String,
    /// Why each failed attempt of the request failed, as recorded with the
    /// answer (the same on replay): only their kinds reach the trajectory.
    pub retries: Vec<String>,
}

/// Reads a message the rules could not decide.
pub trait ReadingJudge: Send + Sync {
    /// Reads `text` (the agent's message) knowing `facts`, the user's facts as
    /// (name, value) pairs in a fixed order (`order_id`, `A1002`). An `Err` is
    /// a judge that failed (its provider's retries ran out, a cassette lacks
    /// the answer, an answer not in the shape asked), with the reason.
    fn read(&self, text: &str, facts: &[(String, String)]) -> Result<JudgeAnswer, String>;
}

/// The judge of a [`crate::SimConfig`]: none (the rules reader alone, the
/// default), or one shared by every episode.
#[derive(Clone, Default)]
pub struct JudgeSlot(pub Option<Arc<dyn ReadingJudge>>);

impl fmt::Debug for JudgeSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "JudgeSlot(a judge)" } else { "JudgeSlot(rules)" })
    }
}

impl PartialEq for JudgeSlot {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
