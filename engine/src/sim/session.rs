//! One session's side of the loop: its agent and everything the loop keeps
//! about it while it runs (busy or idle, its inbox, its model's accounting,
//! what its user named, what corrupted answers showed it), and what is left
//! of it once it ended.

use std::collections::VecDeque;

use crate::agent::{Agent, Message};
use crate::call::ToolCall;
use crate::rng::Stream;
use crate::sessions::SessionId;
use crate::time::TimeMs;
use crate::trajectory::Metrics;
use crate::voice::UserVoice;

use super::End;

/// Where the loop gets each session's agent.
pub enum Agents<'a> {
    /// The one agent of a run of one session.
    One(&'a mut dyn Agent),
    /// A new agent for each session as it arrives (its own planner, stack
    /// and streams), dropped when the session ends.
    Each(&'a mut dyn FnMut(SessionId) -> Box<dyn Agent + 'a>),
}

/// A session's agent: borrowed (a run of one) or its own.
pub(super) enum AgentSlot<'a> {
    Borrowed(&'a mut dyn Agent),
    Owned(Box<dyn Agent + 'a>),
}

impl AgentSlot<'_> {
    pub(super) fn agent(&mut self) -> &mut dyn Agent {
        match self {
            AgentSlot::Borrowed(agent) => &mut **agent,
            AgentSlot::Owned(agent) => &mut **agent,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum AgentState {
    /// Waiting for input; a timer with this token may be pending.
    Idle(Option<u64>),
    /// Thinking, calling a tool or sleeping: inputs queue up.
    Busy,
    /// Sleeping until the timer with this token.
    Sleeping(u64),
}

/// A session while it runs.
pub(super) struct Live<'a> {
    pub(super) agent: AgentSlot<'a>,
    pub(super) state: AgentState,
    /// User messages that arrived while the agent was busy.
    pub(super) inbox: VecDeque<Message>,
    pub(super) model_rng: Stream,
    pub(super) metrics: Metrics,
    pub(super) cost_usd: f64,
    pub(super) context_tokens: u64,
    /// Consecutive identical failing calls (a loop, when a budget ends it).
    pub(super) repeat_run: u32,
    pub(super) last_failed: Option<ToolCall>,
    /// What the user named so far (recipients a message may go to).
    pub(super) named: crate::recipient::Named,
    /// What corrupted answers showed the agent: (tool, call number, lie).
    pub(super) lies: Vec<(crate::tool::ToolId, u64, crate::corrupt::Lie)>,
    /// What injected text asked for: (tool it came from, call number, the call).
    pub(super) injections: Vec<(crate::tool::ToolId, u64, crate::inject::Injected)>,
    /// The budget that ended the session, once one did: nothing is charged after.
    pub(super) refused_by: Option<&'static str>,
    /// The voice speaking for the session's user, when a model plays it.
    pub(super) voice: Option<Box<dyn UserVoice>>,
    /// The agent's words the user is reading now (what the voice answers).
    pub(super) answering: Option<String>,
    /// The voice ended the conversation: the user says nothing more.
    pub(super) user_stopped: bool,
    /// The voice failed for good: the session ends.
    pub(super) user_failed: Option<String>,
    /// Time the session's model requests waited for the shared capacity.
    pub(super) model_queue_ms: TimeMs,
}

impl<'a> Live<'a> {
    pub(super) fn new(agent: AgentSlot<'a>, model_rng: Stream, named: crate::recipient::Named) -> Self {
        Live {
            agent,
            state: AgentState::Idle(None),
            inbox: VecDeque::new(),
            model_rng,
            metrics: Metrics::default(),
            cost_usd: 0.0,
            context_tokens: 0,
            repeat_run: 0,
            last_failed: None,
            named,
            lies: Vec::new(),
            injections: Vec::new(),
            refused_by: None,
            voice: None,
            answering: None,
            user_stopped: false,
            user_failed: None,
            model_queue_ms: 0,
        }
    }
}

/// What is left of a session once it ended: enough to judge and report it.
pub(super) struct Ended {
    pub(super) end: End,
    pub(super) at_ms: TimeMs,
    pub(super) metrics: Metrics,
    pub(super) cost_usd: f64,
    pub(super) repeat_run: u32,
    pub(super) model_queue_ms: TimeMs,
}

/// One session of the run: live until it ends, then what is left of it.
pub(super) struct Session<'a> {
    pub(super) arrived_ms: TimeMs,
    /// Boxed: once the session ended, its slot keeps a pointer's worth of it.
    pub(super) live: Option<Box<Live<'a>>>,
    pub(super) ended: Option<Ended>,
    /// Minefields that fired in it.
    pub(super) violations: u32,
    /// The first other session whose action made a minefield of this one's.
    pub(super) hurt_by: Option<SessionId>,
    /// When its writes were applied, in time order, once each (a run of many
    /// sessions): another session's failure is blamed on it only through a
    /// write made during that session's life (see [`Session::wrote_during`]).
    pub(super) writes_ms: Vec<TimeMs>,
}

impl<'a> Session<'a> {
    pub(super) fn arrive(at_ms: TimeMs, live: Live<'a>) -> Self {
        Session {
            arrived_ms: at_ms,
            live: Some(Box::new(live)),
            ended: None,
            violations: 0,
            hurt_by: None,
            writes_ms: Vec::new(),
        }
    }

    /// Notes a write of this session's applied at `at_ms` (times never go back).
    pub(super) fn wrote(&mut self, at_ms: TimeMs) {
        debug_assert!(self.writes_ms.last().is_none_or(|&t| t <= at_ms), "writes are noted in time order");
        if self.writes_ms.last() != Some(&at_ms) {
            self.writes_ms.push(at_ms);
        }
    }

    /// Whether a write of this session was applied from `from_ms` to `to_ms`,
    /// both included: what blaming it for another session's failure needs (a
    /// write before that session arrived it could read; one after it ended
    /// cannot have changed what it did).
    pub(super) fn wrote_during(&self, from_ms: TimeMs, to_ms: TimeMs) -> bool {
        any_within(&self.writes_ms, from_ms, to_ms)
    }

    /// Ends the session at `at_ms` for `end`: its agent is dropped, its counts kept.
    pub(super) fn end(&mut self, at_ms: TimeMs, end: End) {
        let live = *self.live.take().expect("a session ends once");
        self.ended = Some(Ended {
            end,
            at_ms,
            metrics: live.metrics,
            cost_usd: live.cost_usd,
            repeat_run: live.repeat_run,
            model_queue_ms: live.model_queue_ms,
        });
    }
}

/// Whether a time of `sorted_ms` (ascending) lies from `from_ms` to `to_ms`,
/// both included.
fn any_within(sorted_ms: &[TimeMs], from_ms: TimeMs, to_ms: TimeMs) -> bool {
    let first = sorted_ms.partition_point(|&t| t < from_ms);
    sorted_ms.get(first).is_some_and(|&t| t <= to_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the loop keeps of every session of a run once it ended (the live
    /// state, boxed, is dropped with the agent): a slot of a few hundred
    /// bytes, whatever the agent held. Inline, the live state made it 4x.
    /// A session is blamed for another's failure only through a write inside
    /// the other's life, both ends included.
    #[test]
    fn a_write_counts_only_inside_the_window() {
        let writes = [100, 250, 900];
        let within = |from_ms, to_ms| any_within(&writes, from_ms, to_ms);
        assert!(!within(0, 99), "before the first write");
        assert!(within(0, 100) && within(100, 100) && within(101, 250));
        assert!(!within(251, 899), "between two writes");
        assert!(within(900, u64::MAX) && !within(901, u64::MAX));
    }

    #[test]
    fn an_ended_session_keeps_a_small_slot() {
        let slot = std::mem::size_of::<Session<'static>>();
        let live = std::mem::size_of::<Live<'static>>();
        assert!(slot <= 256, "a session's slot is {slot} bytes");
        assert!(live > slot, "the live state ({live} bytes) is what a slot no longer holds");
    }
}
