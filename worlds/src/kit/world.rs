//! A world written with the kit: the engine's `World` less what every
//! built-in world does the same way. The world answers its own tools by name
//! ([`KitWorld::serve`]); the kit finds the name, answers `escalate` (the same
//! in every world), refuses a tool the world does not have with the same 404
//! everywhere, and keeps whether the case went to a human for the verdict.
//! [`Kit`] turns a [`KitWorld`] into an engine `World`.

use agentsim_engine::{SessionId, TimeMs, ToolCall, ToolError, ToolId, Value, Verdict, World, WorldCx};

use crate::kit::escalation::escalate;

/// What a world written with the kit says itself; see [`World`] for when
/// each is called.
pub trait KitWorld {
    /// The world's own events.
    type Event;

    /// Called once at time 0: schedule processes and the opening user message.
    fn start(&mut self, cx: &mut WorldCx<'_, Self::Event>);

    /// Handles one of the world's own events.
    fn on_event(&mut self, event: Self::Event, cx: &mut WorldCx<'_, Self::Event>);

    /// Answers a call of one of the world's own tools (never `escalate`,
    /// which the kit answers); a name the world has no tool of is
    /// [`no_such_tool`].
    fn serve(&mut self, call: Served<'_>, cx: &mut WorldCx<'_, Self::Event>) -> Result<Value, ToolError>;

    /// The user reads what the agent wrote to it in words.
    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, Self::Event>);

    /// Judges the final state; `case` says what the kit kept of it.
    fn judge(&self, case: Handover) -> Verdict;

    /// What a model playing the user is told (see `World::user_instructions`).
    fn user_instructions(&self) -> Option<String> {
        None
    }

    /// How many sessions one run can hold (see `World::sessions_max`): a
    /// world that holds more than one implements the three methods below.
    const SESSIONS_MAX: u32 = 1;

    /// Session `session` (1 or more) arrives: see `World::start_session`.
    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, Self::Event>) {
        let _ = (session, cx);
        unreachable!("a world of one user is never asked to start another session");
    }

    /// Session `session` ended: see `World::session_ended`.
    fn session_ended(&mut self, session: SessionId) {
        let _ = session;
    }

    /// Judges one session's task: see `World::judge_session`.
    fn judge_session(&self, session: SessionId, case: Handover) -> Verdict {
        let _ = session;
        self.judge(case)
    }

    /// What a model playing session `session`'s user is told.
    fn session_instructions(&self, session: SessionId) -> Option<String> {
        let _ = session;
        self.user_instructions()
    }
}

/// The names of a world's tools by id: a world's `Ids` (see
/// [`tool_ids!`](crate::kit::tool_ids::tool_ids)).
pub trait ToolNames {
    /// The name of the tool at `tool`; `None` for a tool not of this world.
    fn name(&self, tool: ToolId) -> Option<&'static str>;
}

/// A call to serve, with its tool's name found.
#[derive(Clone, Copy, Debug)]
pub struct Served<'c> {
    /// The tool's name.
    pub name: &'static str,
    /// The call as the engine passed it.
    pub call: &'c ToolCall,
    /// The time the answer's data should reflect (before now for a stale read).
    pub as_of_ms: TimeMs,
}

impl<'c> Served<'c> {
    /// The call's arguments.
    pub fn args(&self) -> &'c Value {
        &self.call.args
    }
}

/// What the kit keeps of a trajectory for the verdict: whether the case was
/// handed to a human.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handover {
    /// Whether `escalate` went through.
    pub escalated: bool,
}

impl Handover {
    /// The verdict of a world that does not report contextual accuracy
    /// separately (what it tells its user is judged by its minefields).
    pub fn verdict(self, success: bool, milestone: &'static str, detail: String) -> Verdict {
        self.verdict_told(success, milestone, detail, None)
    }

    /// The verdict, with contextual accuracy (`None`: nothing checkable told).
    pub fn verdict_told(
        self,
        success: bool,
        milestone: &'static str,
        detail: String,
        told_accurately: Option<bool>,
    ) -> Verdict {
        Verdict { success, escalated: self.escalated, milestone, detail, told_accurately, uncertain: None }
    }
}

/// The answer to a call of a tool the world does not have.
pub fn no_such_tool() -> ToolError {
    ToolError::not_found("no such tool")
}

/// A [`KitWorld`] as an engine `World`, with its tools' names.
pub struct Kit<W, N> {
    world: W,
    names: N,
    /// Per session (session 0 first): whether its case went to a human.
    handovers: Vec<Handover>,
}

impl<W: KitWorld, N: ToolNames> Kit<W, N> {
    /// `world`, whose tools `names` names, nothing handed over yet.
    pub fn new(world: W, names: N) -> Self {
        Kit { world, names, handovers: vec![Handover::default()] }
    }
}

impl<W: KitWorld, N: ToolNames> World for Kit<W, N> {
    type Event = W::Event;

    fn start(&mut self, cx: &mut WorldCx<'_, W::Event>) {
        self.world.start(cx);
    }

    fn on_event(&mut self, event: W::Event, cx: &mut WorldCx<'_, W::Event>) {
        self.world.on_event(event, cx);
    }

    fn handle(
        &mut self,
        call: &ToolCall,
        as_of_ms: TimeMs,
        cx: &mut WorldCx<'_, W::Event>,
    ) -> Result<Value, ToolError> {
        // A stale read reads the past; nothing reads the future.
        assert!(as_of_ms <= cx.now_ms, "a call's data is as of {as_of_ms} ms, after now ({} ms)", cx.now_ms);
        match self.names.name(call.tool) {
            Some("escalate") => {
                let session = cx.session().unwrap_or(0) as usize;
                if self.handovers.len() <= session {
                    self.handovers.resize(session + 1, Handover::default());
                }
                self.handovers[session].escalated = true;
                Ok(escalate(call, cx))
            }
            Some(name) => self.world.serve(Served { name, call, as_of_ms }, cx),
            None => Err(no_such_tool()),
        }
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, W::Event>) {
        self.world.hear(text, cx);
    }

    fn judge(&self) -> Verdict {
        self.world.judge(self.handovers[0])
    }

    fn user_instructions(&self) -> Option<String> {
        self.world.user_instructions()
    }

    fn sessions_max(&self) -> u32 {
        W::SESSIONS_MAX
    }

    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, W::Event>) {
        self.world.start_session(session, cx);
    }

    fn session_ended(&mut self, session: SessionId) {
        self.world.session_ended(session);
    }

    fn judge_session(&self, session: SessionId) -> Verdict {
        let case = self.handovers.get(session as usize).copied().unwrap_or_default();
        self.world.judge_session(session, case)
    }

    fn session_instructions(&self, session: SessionId) -> Option<String> {
        self.world.session_instructions(session)
    }
}
