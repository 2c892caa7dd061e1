//! One session's user of a scripted world: its task, persona, facts and
//! conversation, and what the judge reads of it. A run of one session has one
//! caller; a run of many keeps the others parked while one is handled
//! (`ScriptedWorld::switch`), and shares the tables, processes and
//! idempotency keys between them (`docs/sessions.md`).

use std::collections::BTreeMap;

use agentsim_engine::{Progress, SessionId, Stream, StreamSource, TimeMs, Value};

use super::ScriptedWorld;
use super::unmet::Unmet;
use crate::kit::outbox::Outbox;
use crate::scripted::model::{ScriptedModel, Task};
use crate::talk::voice::Voice;

/// One session's user.
pub(super) struct Caller<'m> {
    /// Its session.
    pub(super) id: SessionId,
    pub(super) task: &'m Task,
    pub(super) user_rng: Stream,
    pub(super) persona: usize,
    /// The facts the user holds now (changed by a change of mind).
    pub(super) facts: Value,
    /// The user switched to the task's alternative.
    pub(super) changed_mind: bool,
    pub(super) outbox: Outbox,
    pub(super) progress: Progress,
    pub(super) escalated: bool,
    pub(super) left_at_ms: Option<TimeMs>,
    /// How the user words its answers to text (made on the first one).
    pub(super) voice: Option<Voice>,
    /// What the agent said to the user, as the communicate check compares it
    /// (kept only when the task has strings to communicate).
    pub(super) said: Vec<String>,
    /// The judgement of the final state, made once when the trajectory ends
    /// (`judge` and `checks` both read it).
    pub(super) state_judged: std::cell::OnceCell<Result<(), Unmet>>,
    /// The script's lists of this session (`calls`, `told`, `reached`), kept
    /// here while another session's are in the script's home.
    pub(super) lists: Lists,
    /// The records this session's calls wrote, by (table index, key), each
    /// with the record as the session found it before its first write of it
    /// (`None`: there was none): judged with those its task's gold actions
    /// write (a run of many sessions).
    pub(super) wrote: BTreeMap<(usize, String), Option<Value>>,
}

/// What scripts read of one session's conversation.
#[derive(Default)]
pub(super) struct Lists {
    /// Calls that reached the world and succeeded: (tool, arguments).
    pub(super) calls: Vec<(&'static str, Value)>,
    /// What the agent told the user.
    pub(super) told: Vec<Value>,
    /// Milestones reached so far.
    pub(super) reached: Vec<&'static str>,
}

impl<'m> Caller<'m> {
    /// Session `session`'s user on task `task`: the persona drawn from the
    /// user's stream (`user.0` for the first, as a run of one draws it).
    pub(super) fn new(model: &'m ScriptedModel, task: usize, streams: &StreamSource, session: SessionId) -> Self {
        let mut user_rng = streams.session_stream("user", session);
        let persona = user_rng.weighted(&model.persona_weights).unwrap_or(0);
        let task = &model.tasks[task];
        Caller {
            id: session,
            task,
            user_rng,
            persona,
            facts: task.facts.clone(),
            changed_mind: false,
            outbox: Outbox::new(),
            progress: Progress::new(),
            escalated: false,
            left_at_ms: None,
            voice: None,
            said: Vec::new(),
            state_judged: std::cell::OnceCell::new(),
            lists: Lists::default(),
            wrote: BTreeMap::new(),
        }
    }
}

/// Where a session's user is while another is handled.
pub(super) enum Seat<'m> {
    /// Handled now: it is `ScriptedWorld::user`.
    Here,
    /// Its session is open (or ended: the judge reads it) and another is
    /// handled.
    Parked(Box<Caller<'m>>),
}

impl<'m> ScriptedWorld<'m> {
    /// Makes `session`'s user the one handled: its calls, words and events,
    /// and its lists in the script's home.
    pub(super) fn switch(&mut self, session: SessionId) {
        if session == self.current {
            return;
        }
        let Seat::Parked(incoming) = std::mem::replace(&mut self.parked[session as usize], Seat::Here) else {
            panic!("session {session} is parked while another is handled");
        };
        let mut outgoing = std::mem::replace(&mut self.user, *incoming);
        let home = self.session.as_mut().expect("the session is home between script calls");
        std::mem::swap(&mut home.calls, &mut outgoing.lists.calls);
        std::mem::swap(&mut home.told, &mut outgoing.lists.told);
        std::mem::swap(&mut home.reached, &mut outgoing.lists.reached);
        std::mem::swap(&mut home.calls, &mut self.user.lists.calls);
        std::mem::swap(&mut home.told, &mut self.user.lists.told);
        std::mem::swap(&mut home.reached, &mut self.user.lists.reached);
        self.parked[self.current as usize] = Seat::Parked(Box::new(outgoing));
        self.current = session;
    }

    /// Session `session`'s user and its lists, wherever they are.
    pub(super) fn caller_of(&self, session: SessionId) -> (&Caller<'m>, ListsRef<'_>) {
        if session == self.current {
            let home = self.session.as_ref().expect("the session is home");
            (&self.user, ListsRef { calls: &home.calls, told: &home.told, reached: &home.reached })
        } else {
            match &self.parked[session as usize] {
                Seat::Parked(caller) => (caller, caller.lists.borrowed()),
                Seat::Here => unreachable!("only the current session's user is here"),
            }
        }
    }
}

/// A session's lists, borrowed from the script's home or from its parked user.
#[derive(Clone, Copy)]
pub(super) struct ListsRef<'a> {
    pub(super) calls: &'a [(&'static str, Value)],
    pub(super) told: &'a [Value],
    pub(super) reached: &'a [&'static str],
}

impl Lists {
    fn borrowed(&self) -> ListsRef<'_> {
        ListsRef { calls: &self.calls, told: &self.told, reached: &self.reached }
    }
}
