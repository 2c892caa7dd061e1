//! The agent interface: what an agent receives, what it can do, and the context
//! it acts in. A planner and every stack layer implement the same trait, so layers
//! wrap planners (and each other) in any order.

use serde::Serialize;

use crate::call::{ToolCall, ToolResult};
use crate::time::TimeMs;
use crate::tool::Catalog;
use crate::value::Value;

/// A message between the agent and a simulated user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    /// What a person would read.
    pub text: String,
    /// The same content, structured (what a model would understand from the text).
    pub content: Value,
}

/// What an agent is told.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Input {
    /// A user said something.
    User(Message),
    /// A tool call came back.
    Tool(ToolResult),
    /// A stack layer refused a call before it reached the tool.
    Blocked {
        /// The refused call.
        call: ToolCall,
        /// Which layer refused it.
        layer: &'static str,
        /// Why, in words.
        reason: String,
    },
    /// A timer the agent asked for has fired.
    Wake,
}

impl Input {
    /// A rough token count of the input as the model would read it.
    pub fn token_estimate(&self) -> u32 {
        match self {
            Input::User(m) => 4 + (m.text.len() / 4) as u32,
            Input::Tool(r) => 12 + r.reply.token_estimate() + r.call.args.token_estimate(),
            Input::Blocked { reason, .. } => 12 + (reason.len() / 4) as u32,
            Input::Wake => 0,
        }
    }
}

/// What an agent does next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Action {
    /// Call a tool; the agent is busy until the result arrives.
    Call(ToolCall),
    /// Sleep until `until_ms` (a backoff); other inputs wait until it wakes.
    Sleep {
        /// When to wake.
        until_ms: TimeMs,
    },
    /// Wait for the next input (a user message), or until `wake_at_ms` if given.
    Idle {
        /// Optional timer.
        wake_at_ms: Option<TimeMs>,
    },
    /// Tell the user something in words, then wait for the next input (the
    /// user's answer): the text channel every chat agent has. The world's user
    /// reads the text (`World::hear`); what it says back arrives as
    /// `Input::User`.
    Say {
        /// What the agent wrote.
        text: String,
    },
    /// Stop.
    Finish(Finish),
}

/// Why an agent stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Finish {
    /// The agent believes the task is done (the world decides whether it is).
    Done,
    /// The agent gave up.
    GaveUp {
        /// In words.
        reason: String,
    },
    /// A stack layer stopped the agent (a loop detector, say).
    Halted {
        /// The layer.
        layer: &'static str,
        /// In words.
        reason: String,
    },
    /// The agent failed (crashed, broke the protocol).
    Failed {
        /// In words.
        reason: String,
    },
    /// The agent never came: an MCP client that never initialized its
    /// session (the server's word, recorded so that the session replays; no
    /// agent protocol lets an agent say it). A session that ends so before
    /// any tool call is judged [`crate::Outcome::Absent`], outside the agent's
    /// rates; after one it is judged as [`Finish::Done`].
    Absent,
}

/// How the planner reads tool results this turn. The noisy planner changes the lens
/// to model a model's reading mistakes; the expert always reads through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lens {
    /// Check responses against the schema before using them (off: trust malformed data).
    pub validate: bool,
}

impl Default for Lens {
    fn default() -> Self {
        Self { validate: true }
    }
}

/// Something a layer or planner decided that belongs in the trajectory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Note {
    /// Who decided: `"retry"`, `"loop_detector"`, `"noisy"`, ...
    pub source: &'static str,
    /// What, as a short stable word: `"backoff"`, `"blocked"`, `"misread_id"`, ...
    pub what: &'static str,
    /// Details.
    pub detail: Value,
}

/// The context of one agent step.
pub struct AgentCx<'a> {
    /// Virtual time of the step.
    pub now_ms: TimeMs,
    /// The tools.
    pub catalog: &'a Catalog,
    /// How the planner reads results in this step.
    pub lens: Lens,
    turns: u32,
    read_tokens: u32,
    notes: Vec<Note>,
    diagnostics: Vec<Note>,
    call_timeout_ms: Option<TimeMs>,
    evicted_tokens: u32,
    forget_before_ms: Option<TimeMs>,
    think_ms: Option<TimeMs>,
    usage: Option<Usage>,
}

/// Tokens a model call really used, as its provider reported them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Tokens of the prompt (system prompt, tools and conversation).
    pub prompt_tokens: u32,
    /// Tokens the model wrote.
    pub completion_tokens: u32,
}

impl<'a> AgentCx<'a> {
    /// A context at `now_ms`.
    pub fn new(now_ms: TimeMs, catalog: &'a Catalog) -> Self {
        Self {
            now_ms,
            catalog,
            lens: Lens::default(),
            turns: 0,
            read_tokens: 0,
            notes: Vec::new(),
            diagnostics: Vec::new(),
            call_timeout_ms: None,
            evicted_tokens: 0,
            forget_before_ms: None,
            think_ms: None,
            usage: None,
        }
    }

    /// Limits the tool call this step returns to `timeout_ms` of virtual time (the
    /// timeout layer): if the tool takes longer, the caller receives `Reply::Timeout`
    /// at the deadline, although the tool may still have applied a write. The
    /// shortest limit set in a step wins.
    pub fn limit_call(&mut self, timeout_ms: TimeMs) {
        self.call_timeout_ms = Some(self.call_timeout_ms.map_or(timeout_ms, |t| t.min(timeout_ms)));
    }

    /// The per-call limit set in this step, if any.
    pub fn call_timeout_ms(&self) -> Option<TimeMs> {
        self.call_timeout_ms
    }

    /// Evicts `tokens` from the planner's context (the context-budget layer): later
    /// turns' prompts no longer include them, and everything the planner learnt
    /// before `before_ms` is forgotten. Planners that keep knowledge read
    /// [`AgentCx::forget_before_ms`] at the start of their step and drop what they
    /// learnt earlier; a planner that ignores it simply never forgets.
    pub fn evict(&mut self, tokens: u32, before_ms: TimeMs) {
        self.evicted_tokens = self.evicted_tokens.saturating_add(tokens);
        self.forget_before_ms = Some(self.forget_before_ms.map_or(before_ms, |t| t.max(before_ms)));
    }

    /// Tokens evicted in this step.
    pub fn evicted_tokens(&self) -> u32 {
        self.evicted_tokens
    }

    /// Set when the context was evicted in this step: facts learnt before this
    /// virtual time are gone from the planner's context.
    pub fn forget_before_ms(&self) -> Option<TimeMs> {
        self.forget_before_ms
    }

    /// Marks one planner decision (one model call): it costs tokens and think time.
    /// Stack layers never call this; planners call it once per decision.
    pub fn begin_turn(&mut self) {
        self.turns += 1;
    }

    /// Says how long this step's model call took, instead of the model's think-time
    /// draw: an agent whose thinking happens outside the simulation (an external
    /// process, an MCP client measured on the wall clock) reports it, and a replay
    /// reports the recorded value. The draw is still made, so streams stay aligned.
    pub fn set_think_ms(&mut self, think_ms: TimeMs) {
        self.think_ms = Some(think_ms);
    }

    /// Says how many tokens this step's model call used, instead of the
    /// scenario's estimate (`ModelConfig`'s system prompt and completion
    /// tokens): an agent over a real model reports its answer's `usage`, and
    /// the step's cost is priced from it. A replay reports the recorded usage.
    pub fn set_usage(&mut self, usage: Usage) {
        self.usage = Some(usage);
    }

    /// The usage set for this step, if any.
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// The think time set for this step, if any.
    pub fn think_ms(&self) -> Option<TimeMs> {
        self.think_ms
    }

    /// Adds what the planner read in this step to its context (prompt tokens of every
    /// later turn). Planners call this for each input they read; layers never do.
    pub fn read(&mut self, input: &Input) {
        self.read_tokens += input.token_estimate();
    }

    /// Tokens read in this step.
    pub fn read_tokens(&self) -> u32 {
        self.read_tokens
    }

    /// Records a decision in the trajectory.
    pub fn note(&mut self, source: &'static str, what: &'static str, detail: Value) {
        self.notes.push(Note { source, what, detail });
    }

    /// Planner turns taken in this step.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Takes the notes recorded in this step.
    pub fn take_notes(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.notes)
    }

    /// Records what explains a run but may differ between two runs of the same
    /// decisions (an external process's stderr: a pid, a timestamp). It is kept
    /// beside the trajectory: among its events when events are kept (timelines,
    /// incidents), but never hashed into the digest, never counted as a decision
    /// or toward `events_max`, so it changes no outcome, row or digest.
    pub fn diagnose(&mut self, source: &'static str, what: &'static str, detail: Value) {
        self.diagnostics.push(Note { source, what, detail });
    }

    /// Takes the diagnostics recorded in this step (see [`AgentCx::diagnose`]).
    pub fn take_diagnostics(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.diagnostics)
    }

    /// Whether a note or a diagnostic was recorded this step.
    pub fn has_notes(&self) -> bool {
        !self.notes.is_empty() || !self.diagnostics.is_empty()
    }
}

/// An agent: a planner, or a stack layer around an inner agent.
pub trait Agent: Send {
    /// Reacts to one input and says what to do next.
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action;
}

impl<A: Agent + ?Sized> Agent for &mut A {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        (**self).step(input, cx)
    }
}

impl<A: Agent + ?Sized> Agent for Box<A> {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        (**self).step(input, cx)
    }
}
