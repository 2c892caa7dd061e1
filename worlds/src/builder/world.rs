//! One trajectory of a built world: the state the author's closures read and
//! change, the services' idempotency, the escalation, and the judge.

use std::sync::Arc;

use agentsim_engine::{Message, TimeMs, ToolCall, ToolError, ToolId, Value, Verdict, World, WorldCx};

use crate::kit::args::{int_arg, str_arg};
use crate::kit::escalation::escalate;

/// What a handler is given besides the world's state: the call's arguments
/// and the means to report what happened.
pub struct Call<'a, 'c> {
    /// The call's arguments, a map.
    pub args: &'a Value,
    /// Virtual time now.
    pub now_ms: TimeMs,
    cx: &'a mut WorldCx<'c, ()>,
    milestone: &'a mut &'static str,
}

impl Call<'_, '_> {
    /// The string argument `name`, or the 400 a service answers without it.
    pub fn str(&self, name: &str) -> Result<&str, ToolError> {
        str_arg(self.args, name)
    }

    /// The integer argument `name`, or the 400 a service answers without it.
    pub fn int(&self, name: &str) -> Result<i64, ToolError> {
        int_arg(self.args, name)
    }

    /// Something that must never happen did: the trajectory is a violation.
    pub fn minefield(&mut self, name: &'static str, detail: impl Into<String>) {
        self.cx.minefield(name, detail);
    }

    /// The task got this far (reported as the trajectory's last milestone).
    pub fn milestone(&mut self, name: &'static str) {
        *self.milestone = name;
    }
}

/// What the user says: the words, and the facts they state (what a model
/// would understand from them, and what a plan's steps read).
#[derive(Clone, Debug, PartialEq)]
pub struct Says {
    text: String,
    facts: Vec<(&'static str, Value)>,
}

impl Says {
    /// The user says `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Says { text: text.into(), facts: Vec::new() }
    }

    /// The words state `name` = `value`.
    pub fn fact(mut self, name: &'static str, value: impl Into<Value>) -> Self {
        self.facts.push((name, value.into()));
        self
    }

    fn message(self) -> Message {
        Message { text: self.text, content: Value::map(self.facts) }
    }
}

/// A handler: the world's state and the call, to the answer.
pub(crate) type Handler<S> = Arc<dyn Fn(&mut S, &mut Call<'_, '_>) -> Result<Value, ToolError> + Send + Sync>;
/// The user's opening words, from the state.
pub(crate) type Opening<S> = Arc<dyn Fn(&S) -> Says + Send + Sync>;
/// The user's answer to the agent's words, if any.
pub(crate) type Hear<S> = Arc<dyn Fn(&mut S, &str) -> Option<Says> + Send + Sync>;
/// Whether the task is done, from the final state.
pub(crate) type Judge<S> = Arc<dyn Fn(&S) -> bool + Send + Sync>;

/// What every trajectory of a built world shares: the author's closures, by
/// tool id.
pub(crate) struct Rules<S> {
    /// Per tool id: its handler (`None` for `escalate` and `authenticate`).
    pub handlers: Vec<Option<Handler<S>>>,
    /// Per tool id: whether it is a write (whose idempotency keys are honoured).
    pub writes: Vec<bool>,
    pub escalate: ToolId,
    pub opening: Opening<S>,
    pub hear: Option<Hear<S>>,
    pub judge: Judge<S>,
}

/// How long the user takes to answer.
const USER_REPLY_MS: TimeMs = 2_000;

/// One trajectory.
pub(crate) struct Built<S> {
    pub state: S,
    pub rules: Arc<Rules<S>>,
    pub milestone: &'static str,
    pub escalated: bool,
    /// Idempotency keys of writes served, with the answer each got.
    pub keys: Vec<(String, Value)>,
}

impl<S> World for Built<S> {
    type Event = ();

    fn start(&mut self, cx: &mut WorldCx<'_, ()>) {
        cx.tell_agent(0, (self.rules.opening)(&self.state).message());
    }

    fn on_event(&mut self, _: (), _: &mut WorldCx<'_, ()>) {}

    fn handle(&mut self, call: &ToolCall, _as_of_ms: TimeMs, cx: &mut WorldCx<'_, ()>) -> Result<Value, ToolError> {
        if call.tool == self.rules.escalate {
            self.escalated = true;
            return Ok(escalate(call, cx));
        }
        let index = call.tool.0 as usize;
        let write = self.rules.writes.get(index).copied().unwrap_or(false);
        // A write service honours idempotency keys: a retry with the same key
        // gets the first answer back instead of a second effect.
        if write
            && let Some(key) = &call.idempotency_key
            && let Some((_, answer)) = self.keys.iter().find(|(k, _)| k == key)
        {
            return Ok(answer.clone());
        }
        let Some(Some(handler)) = self.rules.handlers.get(index) else {
            return Err(ToolError::not_found("no such tool"));
        };
        let handler = Arc::clone(handler);
        let mut served = Call { args: &call.args, now_ms: cx.now_ms, cx, milestone: &mut self.milestone };
        let answer = handler(&mut self.state, &mut served)?;
        if write && let Some(key) = &call.idempotency_key {
            self.keys.push((key.clone(), answer.clone()));
        }
        Ok(answer)
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, ()>) {
        if let Some(hear) = &self.rules.hear
            && let Some(says) = hear(&mut self.state, text)
        {
            cx.tell_agent(cx.now_ms.saturating_add(USER_REPLY_MS), says.message());
        }
    }

    fn judge(&self) -> Verdict {
        Verdict {
            success: (self.rules.judge)(&self.state),
            escalated: self.escalated,
            milestone: self.milestone,
            detail: String::new(),
            told_accurately: None,
            uncertain: None,
        }
    }
}
