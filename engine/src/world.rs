//! The world interface: state, exogenous processes, users, tool semantics and the
//! judge. The engine knows no concrete world; worlds implement this trait.

use serde::Serialize;

use crate::agent::Message;
use crate::call::{ToolCall, ToolError};
use crate::judge::ReadingJudge;
use crate::sessions::SessionId;
use crate::time::TimeMs;
use crate::value::Value;

/// Things a world asks of the engine while it handles an event or a call.
pub struct WorldCx<'a, E> {
    /// Virtual time now.
    pub now_ms: TimeMs,
    /// The session whose call or words the world is handling; `None` while it
    /// starts or handles its own events.
    session: Option<SessionId>,
    scheduled: &'a mut Vec<(TimeMs, Scheduled<E>)>,
    minefields: &'a mut Vec<Minefield>,
    notes: &'a mut Vec<(&'static str, Value)>,
    /// Who reads what the world's rules cannot decide ([`WorldCx::judge`]).
    judge: Option<&'a dyn ReadingJudge>,
}

/// Something a world scheduled.
pub enum Scheduled<E> {
    /// One of the world's own events (a price tick, a status change).
    World(E),
    /// A user message delivered to the agent of a session.
    ToAgent(SessionId, Message),
}

/// An action that must never happen, and did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Minefield {
    /// Stable name, for example `"negative_refund"`.
    pub name: &'static str,
    /// What exactly happened.
    pub detail: String,
    /// The session it fired in, when the world named one
    /// ([`WorldCx::race`]); otherwise the session acting when it fired. Not
    /// encoded: a many-session run's events say which session acts.
    #[serde(skip)]
    pub session: Option<SessionId>,
    /// The other session whose earlier action made this one's a collision (a
    /// race between sessions), when the world says so ([`WorldCx::race`]).
    #[serde(skip)]
    pub against: Option<SessionId>,
}

impl<'a, E> WorldCx<'a, E> {
    /// A context; the engine makes these.
    pub fn new(
        now_ms: TimeMs,
        session: Option<SessionId>,
        scheduled: &'a mut Vec<(TimeMs, Scheduled<E>)>,
        minefields: &'a mut Vec<Minefield>,
        notes: &'a mut Vec<(&'static str, Value)>,
    ) -> Self {
        Self { now_ms, session, scheduled, minefields, notes, judge: None }
    }

    /// This context with `judge` reading what the world's rules cannot
    /// decide (the engine sets the run's [`crate::SimConfig::judge`]).
    pub fn with_judge(mut self, judge: Option<&'a dyn ReadingJudge>) -> Self {
        self.judge = judge;
        self
    }

    /// The run's judge, when it has one: a world asks it to read a message its
    /// rules leave uncertain, and notes what it read (see [`crate::judge`]).
    /// `None`: the reading stays uncertain.
    pub fn judge(&self) -> Option<&'a dyn ReadingJudge> {
        self.judge
    }

    /// The session whose call or words are being handled (`None` while the
    /// world starts or handles its own events). A world of one user can ignore
    /// it: there is only session 0.
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }

    /// Schedules a world event at `at_ms` (not before now).
    pub fn schedule(&mut self, at_ms: TimeMs, event: E) {
        self.scheduled.push((at_ms.max(self.now_ms), Scheduled::World(event)));
    }

    /// Delivers a user message at `at_ms` (not before now) to the agent of
    /// the session being handled, or of session 0 while none is.
    pub fn tell_agent(&mut self, at_ms: TimeMs, message: Message) {
        let session = self.session.unwrap_or(0);
        self.tell_session(session, at_ms, message);
    }

    /// Delivers a user message to the agent of `session` at `at_ms` (not
    /// before now).
    pub fn tell_session(&mut self, session: SessionId, at_ms: TimeMs, message: Message) {
        self.scheduled.push((at_ms.max(self.now_ms), Scheduled::ToAgent(session, message)));
    }

    /// Acts for `session` from here on while handling one of the world's own
    /// events (a user's patience running out): its messages and minefields
    /// are that session's.
    pub fn act_for(&mut self, session: SessionId) {
        self.session = Some(session);
    }

    /// Records that a minefield fired (in the session being handled).
    pub fn minefield(&mut self, name: &'static str, detail: impl Into<String>) {
        let minefield = Minefield { name, detail: detail.into(), session: self.session, against: None };
        self.minefields.push(minefield);
    }

    /// Records that a minefield fired in `session` because `against`, another
    /// session, acted on the same state first: a race between sessions (two
    /// refunds of one order, a seat sold twice). `session` counts as hurt by
    /// another.
    pub fn race(&mut self, name: &'static str, detail: impl Into<String>, session: SessionId, against: SessionId) {
        assert_ne!(session, against, "a race is between two sessions");
        let minefield = Minefield { name, detail: detail.into(), session: Some(session), against: Some(against) };
        self.minefields.push(minefield);
    }

    /// Records a world change in the trajectory.
    pub fn note(&mut self, what: &'static str, detail: Value) {
        self.notes.push((what, detail));
    }
}

/// The world's judgement of its final state. Success is decided here, from the
/// state, never from what the agent claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Whether the task's success conditions hold.
    pub success: bool,
    /// Whether the case was handed to a human.
    pub escalated: bool,
    /// The last milestone reached, for "how far did it get".
    pub milestone: &'static str,
    /// One line on why.
    pub detail: String,
    /// Contextual accuracy: whether everything the agent told the user about the
    /// outcome matched the world at the moment it was said; `None` when the agent
    /// told the user nothing checkable. Not part of the trajectory digest: it is a
    /// function of the events, which the digest already covers.
    #[serde(skip)]
    pub told_accurately: Option<bool>,
    /// Why the verdict cannot be decided from what the agent said: a message
    /// the reader could not read for certain where it decides the task (a
    /// closing it cannot place). `Some` makes the outcome `uncertain`, never
    /// `success` (`docs/conversation.md`). Absent from the digest when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncertain: Option<String>,
}

/// One part of a world's judgement, reported beside the verdict: tau2-bench's
/// reward basis (`db`, the final database; `communicate`, the strings the agent
/// had to tell the user; `nl_assertion`, natural-language assertions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The check's name.
    pub name: &'static str,
    /// `Some(passed)`, or `None` when the world cannot judge it (tau2's
    /// natural-language assertions need a judge model).
    pub passed: Option<bool>,
    /// Whether the task's success requires it (its reward basis).
    pub in_reward: bool,
}

/// A world: state, processes, users and tool semantics for one trajectory.
pub trait World {
    /// The world's own events.
    type Event;

    /// Called once at time 0: schedule processes and the opening user message.
    fn start(&mut self, cx: &mut WorldCx<'_, Self::Event>);

    /// Handles one of the world's own events.
    fn on_event(&mut self, event: Self::Event, cx: &mut WorldCx<'_, Self::Event>);

    /// Serves a tool call that got through the faults. `as_of_ms` is the time the
    /// answer's data should reflect (before now for a stale read); writes apply now.
    fn handle(
        &mut self,
        call: &ToolCall,
        as_of_ms: TimeMs,
        cx: &mut WorldCx<'_, Self::Event>,
    ) -> Result<Value, ToolError>;

    /// The user reads what the agent wrote to it in words (`Action::Say`) and
    /// answers through [`WorldCx::tell_agent`]; a world also judges what was said
    /// here (a wrong value told is a minefield). Every world has a user that
    /// reads text: the agents people ship talk to their customer in words.
    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, Self::Event>);

    /// Judges the final state.
    fn judge(&self) -> Verdict;

    /// How many sessions the world can hold at once: 1 for a world of one
    /// user. A world that holds more keeps a user (and a task) per session,
    /// shares everything else, and implements [`World::start_session`] and
    /// [`World::judge_session`].
    fn sessions_max(&self) -> u32 {
        1
    }

    /// Session `session` (1 or more; [`World::start`] opens session 0)
    /// arrives now: make its user and schedule its opening message
    /// ([`WorldCx::tell_agent`] reaches it). Called only for worlds whose
    /// [`World::sessions_max`] is above `session`.
    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, Self::Event>) {
        let _ = (session, cx);
        unreachable!("a world of one user is never asked to start another session");
    }

    /// Session `session` ended (its agent finished, or a budget of its own ran
    /// out): the world may drop what only its user's conversation needed,
    /// keeping what [`World::judge_session`] reads, so a run's memory follows
    /// the sessions in flight.
    fn session_ended(&mut self, session: SessionId) {
        let _ = session;
    }

    /// Judges the final state for one session's task (in a run of many
    /// sessions); a world of one user judges its only session with
    /// [`World::judge`].
    fn judge_session(&self, session: SessionId) -> Verdict {
        let _ = session;
        self.judge()
    }

    /// The other session whose writes a failed session's task was judged on:
    /// what a session's failure is blamed on when no race fired (another
    /// session cancelled the order this one had to change). `None` by
    /// default, and for a session that was not hurt by another.
    fn session_hurt_by(&self, session: SessionId) -> Option<SessionId> {
        let _ = session;
        None
    }

    /// What a model playing session `session`'s user is told (see
    /// [`World::user_instructions`], which session 0's is by default).
    fn session_instructions(&self, session: SessionId) -> Option<String> {
        let _ = session;
        self.user_instructions()
    }

    /// What a model playing the user is told of its task (its facts, persona
    /// and what it wants), once the world has started; `None`: the voice
    /// makes its instructions from the opening message (see
    /// [`crate::voice`]).
    fn user_instructions(&self) -> Option<String> {
        None
    }

    /// A hash of the final state, for worlds that declare one (an imported
    /// tau2-bench domain hashes its database as tau2 does); `None` otherwise.
    /// Not part of the digest: it is a function of the state the events built.
    fn state_hash(&self) -> Option<String> {
        None
    }

    /// The parts of the judgement a world reports one by one (a task with a
    /// reward basis); empty for worlds that judge one thing. Success must
    /// require every judged check that is `in_reward` ([`World::judge`] decides
    /// both). Not part of the digest, as the verdict's success is.
    fn checks(&self) -> Vec<Check> {
        Vec::new()
    }
}
