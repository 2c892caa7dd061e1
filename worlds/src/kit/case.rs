//! Where an expert's case stands, as far as every world's expert keeps it the
//! same way: the conversation with the user (awaited, asked, gone) and the
//! failure policy of `read.rs` applied (failures and refusals counted, a session
//! to renew, the hand-over to a human). What each expert learns about its own
//! task stays in the expert.

use agentsim_engine::{Action, AgentCx, Finish, Input, Reply, TimeMs, ToolCall, ToolId, Value};

use crate::read::{ESCALATE_AFTER_BLOCKS, ESCALATE_AFTER_FAILURES, backoff_ms};

/// The state every expert keeps besides what it knows of its task.
#[derive(Clone, Debug)]
pub struct Case {
    /// The world's `escalate` tool.
    escalate: ToolId,
    /// The catalog's `authenticate` tool.
    authenticate: ToolId,
    /// Failed calls in a row (reset by any accepted result).
    pub failures: u32,
    /// Calls the stack refused.
    pub blocks: u32,
    /// A 401 came back: the session must be renewed before anything else.
    pub needs_auth: bool,
    /// The escalation went through: the case is a human's now.
    pub escalated: bool,
    /// The expert decided to hand over and keeps trying to until it has.
    pub escalating: bool,
    /// The user said goodbye.
    pub left: bool,
    /// The expert has asked the user what it is missing (it asks once).
    pub asked: bool,
    /// A question or proposal is out and the user has not answered yet.
    pub awaiting_user: bool,
}

impl Case {
    /// A fresh case (nothing asked, nothing failed) in a catalog whose
    /// `escalate` and `authenticate` tools have these ids.
    pub fn new(escalate: ToolId, authenticate: ToolId) -> Self {
        Self {
            escalate,
            authenticate,
            failures: 0,
            blocks: 0,
            needs_auth: false,
            escalated: false,
            escalating: false,
            left: false,
            asked: false,
            awaiting_user: false,
        }
    }

    /// Takes in a result of `tool` the expert accepted: the run of failures is
    /// over, an escalation went through, a renewal renewed the session. Every
    /// expert does this before reading what the result says about its task.
    pub fn accepted(&mut self, tool: ToolId) {
        self.failures = 0;
        if tool == self.escalate {
            self.escalated = true;
        } else if tool == self.authenticate {
            self.needs_auth = false;
        }
    }

    /// Takes in that the user spoke: nothing is awaited any more. Returns true
    /// when the message was a goodbye (`left: true`); the expert then reads no
    /// further, since nothing the user says can be acted on.
    #[inline]
    pub fn hear(&mut self, content: &Value) -> bool {
        self.awaiting_user = false;
        if content.get("left") == Some(&Value::Bool(true)) {
            self.left = true;
            return true;
        }
        false
    }

    /// Records a question sent to the user: wait for the answer, and do not ask
    /// again.
    pub fn asked_user(&mut self) {
        self.awaiting_user = true;
        self.asked = true;
    }

    /// How a failure that no rule of the expert's own covers is handled: a 401
    /// renews the session at once (waiting would not help), anything else backs
    /// off. Call after counting the failure.
    pub fn after_failure(&mut self, reply: &Reply) -> Option<TimeMs> {
        match reply {
            Reply::Error { status: 401, .. } => {
                self.needs_auth = true;
                None
            }
            reply => Some(backoff_ms(self.failures, reply)),
        }
    }

    /// The expert's last action when the case is closed: done once a human has
    /// it, given up once the user (called `who`) has left. `None` while it is
    /// open.
    #[inline]
    pub fn closed(&self, who: &str) -> Option<Action> {
        if self.escalated {
            return Some(Action::Finish(Finish::Done));
        }
        if self.left {
            return Some(Action::Finish(Finish::GaveUp { reason: format!("the {who} left") }));
        }
        None
    }

    /// Whether the shared failure policy says to hand over now: already
    /// handing over, or too many failures or refusals in a row.
    pub fn must_escalate(&self) -> bool {
        self.escalating || self.failures >= ESCALATE_AFTER_FAILURES || self.blocks >= ESCALATE_AFTER_BLOCKS
    }

    /// The call that hands the case to a human: the user's id under `user_arg`
    /// (each world names its user), and why, for the human who takes over.
    pub fn escalation(&self, user_arg: &'static str, user: String, reason: String) -> Action {
        call(self.escalate, Value::map([(user_arg, Value::Str(user)), ("reason", Value::Str(reason))]))
    }

    /// The call that renews the session after a 401.
    pub fn renew_session(&self) -> Action {
        call(self.authenticate, Value::map::<&str>([]))
    }
}

/// Who an expert serves and what it is after, as its opening moves and its
/// hand-over name them.
#[derive(Clone, Copy, Debug)]
pub struct Opening {
    /// What the expert calls its user (`customer`): "the customer left".
    pub who: &'static str,
    /// The argument naming the user in the world's tools (`customer_id`).
    pub user_arg: &'static str,
    /// What it could not do if it hands over (`reserve`): "could not reserve".
    pub goal: &'static str,
}

impl Case {
    /// The moves every expert considers first, in this order: its last
    /// action once the case is closed; waiting while it does not know its
    /// user (`user`); the hand-over when the failure policy says so or the
    /// expert gives up (`give_up`; the reason counts failures and refusals,
    /// then `more` of the expert's own);
    /// renewing the session after a 401. `Ok` with the user's id when none
    /// applies, `Err` with the action to take otherwise.
    pub fn opening(
        &mut self,
        about: &Opening,
        user: Option<&String>,
        give_up: bool,
        more: impl FnOnce() -> String,
    ) -> Result<String, Action> {
        self.open(about, user, give_up, more)?;
        Ok(user.cloned().expect("an open case knows its user"))
    }

    /// [`Case::opening`] without the copy of the user's id: `Ok` when none of
    /// the opening moves applies (then `user` is `Some`), for an expert that
    /// reads its user's id where it keeps it and copies it only into a call.
    pub fn open(
        &mut self,
        about: &Opening,
        user: Option<&String>,
        give_up: bool,
        more: impl FnOnce() -> String,
    ) -> Result<(), Action> {
        if let Some(last) = self.closed(about.who) {
            return Err(last);
        }
        let Some(user) = user else {
            return Err(Action::Idle { wake_at_ms: None });
        };
        if self.must_escalate() || give_up {
            self.escalating = true;
            let reason =
                format!("could not {} ({} failures, {} refusals{})", about.goal, self.failures, self.blocks, more());
            return Err(self.escalation(about.user_arg, user.clone(), reason));
        }
        if self.needs_auth {
            return Err(self.renew_session());
        }
        Ok(())
    }
}

/// The action that calls `tool` with `args` (a value, or arguments shared).
#[inline]
pub fn call(tool: ToolId, args: impl Into<agentsim_engine::Args>) -> Action {
    Action::Call(ToolCall::new(tool, args))
}

/// Starts an expert's step: the input enters the context, and a new model turn
/// begins unless the input is the expert's own wake-up, which carries out the
/// decision taken when it chose to wait ("wait, then retry") without a new
/// model call.
#[inline]
pub fn begin_step(input: &Input, cx: &mut AgentCx<'_>) {
    cx.read(input);
    if *input != Input::Wake {
        cx.begin_turn();
    }
}
