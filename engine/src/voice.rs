//! A user played by someone else than the world's rules: a model
//! (`--user llm:MODEL`, docs/llm.md). The world's user still reads every word
//! the agent says by its rules (so what was said is judged as before) and
//! decides when it answers; the voice decides what the answer says.
//!
//! The engine asks the voice for the words of every message the world's user
//! sends: the opening, each answer to the agent's words, and what the user
//! says by itself (a goodbye when its patience runs out). The message arrives
//! at the time the world's user chose, whatever the voice took on the wall
//! clock, so the trajectory does not depend on the network. A voice that ends
//! the conversation (tau2's `###STOP###`) is silent from then on; a voice that
//! fails for good ends the episode as `agent_error`, its reason saying it was
//! the user's model (never a fault of the world's tools).

use std::fmt;
use std::sync::Arc;

use crate::agent::{Message, Note};

/// What the voice says in place of the world's user's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Voiced {
    /// These words.
    Say(String),
    /// The user ends the conversation, with these last words (maybe empty:
    /// then nothing is delivered); it says nothing after.
    Stop(String),
    /// The voice failed for good (its provider's retries ran out, a cassette
    /// lacks the answer): the episode ends, with this reason.
    Failed(String),
}

/// What the voice records in the trajectory while it speaks.
#[derive(Debug, Default)]
pub struct VoiceCx {
    notes: Vec<Note>,
    diagnostics: Vec<Note>,
}

impl VoiceCx {
    /// Records a note in the trajectory (and its digest), counted in the
    /// `decisions` column as the agent's notes are.
    pub fn note(&mut self, source: &'static str, what: &'static str, detail: crate::value::Value) {
        self.notes.push(Note { source, what, detail });
    }

    /// Records a diagnostic: kept in a recorded trajectory, outside its digest.
    pub fn diagnose(&mut self, source: &'static str, what: &'static str, detail: crate::value::Value) {
        self.diagnostics.push(Note { source, what, detail });
    }

    pub(crate) fn take(&mut self) -> (Vec<Note>, Vec<Note>) {
        (std::mem::take(&mut self.notes), std::mem::take(&mut self.diagnostics))
    }
}

/// One episode's user voice.
pub trait UserVoice: Send {
    /// The words in place of `rules` (the message the world's user sends now),
    /// in answer to `said` (the agent's words it answers; `None` for the
    /// opening and for what the user says by itself).
    fn speak(&mut self, said: Option<&str>, rules: &Message, cx: &mut VoiceCx) -> Voiced;
}

/// Makes each episode's voice, once the world has started (it knows its task
/// and persona then).
pub trait VoiceFactory: Send + Sync {
    /// The voice of one episode; `instructions` are the world's own for its
    /// user ([`crate::World::user_instructions`]), when it has some.
    fn voice(&self, instructions: Option<String>) -> Box<dyn UserVoice>;
}

/// The voice of a [`crate::SimConfig`]: none (the world's rules speak), or a
/// factory shared by every episode.
#[derive(Clone, Default)]
pub struct VoiceSlot(pub Option<Arc<dyn VoiceFactory>>);

impl fmt::Debug for VoiceSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "VoiceSlot(a voice)" } else { "VoiceSlot(rules)" })
    }
}

impl PartialEq for VoiceSlot {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
