//! The expert of a scripted task: it follows the task's gold actions, with the
//! facts it has heard from the user put into their arguments. It asks for a
//! fact the user did not state, waits for the answer to a proposal, switches to
//! the task's alternative when the user changes their mind, checks a write
//! whose answer was lost with the task's `verify` read, and otherwise fails as
//! every built-in expert does (back off, renew a session, pause on a loop
//! block, hand over to a human after too many failures).

use std::sync::Arc;

use agentsim_engine::{Action, Agent, AgentCx, Args, Finish, Input, Reply, TimeMs, ToolKind, ToolResult, Value};

use super::model::{Gold, ScriptedModel};
use super::script::Vars;
use crate::kit::case::{Case, begin_step, call};
use crate::read::{LOOP_PAUSE_MS, accepted, backoff_ms};

/// Keys of a user message that are about the conversation, not facts.
const NOT_FACTS: [&str; 4] = ["confirm", "changed_mind", "left", "unknown"];

/// The gold-action expert.
pub struct GoldExpert {
    model: Arc<ScriptedModel>,
    task: usize,
    case: Case,
    /// What the user has said so far.
    facts: Value,
    heard: bool,
    /// The gold actions followed now.
    plan: Plan,
    next: usize,
    /// The write at `next` timed out: check whether it was applied.
    verifying: bool,
    /// Calls that succeeded, to skip them after a change of mind.
    done: Vec<(agentsim_engine::ToolId, Value)>,
    /// Facts asked of the user (each is asked once).
    asked: Vec<String>,
    /// The arguments last filled in, for the template they came from: an
    /// action retried or a read compared with its gold action fills nothing
    /// again until the user says something new. Kept as a call's arguments:
    /// each call made of them shares them.
    filled: Option<(FilledAt, Args)>,
}

/// Which of the plan's argument templates was filled in: (plan, action,
/// whether it is the action's verify read).
type FilledAt = (Plan, usize, bool);

/// Which of the task's lists of gold actions the expert follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// The task's `gold`.
    Main,
    /// `plans[i]` (the opening left facts out).
    Other(usize),
    /// The alternative's (the user changed their mind).
    Alternative,
}

impl GoldExpert {
    /// The gold actions followed now (borrowed from the model: the plans are
    /// not copied into every trajectory's expert).
    fn gold(&self) -> &[Gold] {
        let task = &self.model.tasks[self.task];
        match self.plan {
            Plan::Main => &task.gold,
            Plan::Other(p) => &task.plans[p].1,
            Plan::Alternative => task.alternative.as_ref().map_or(&[], |(_, gold)| gold),
        }
    }

    /// An expert for task `task` of `model`.
    pub fn new(model: Arc<ScriptedModel>, task: usize) -> Self {
        let case = Case::new(model.escalate, model.authenticate);
        GoldExpert {
            model,
            task,
            case,
            facts: Value::Map(Vec::new()),
            heard: false,
            plan: Plan::Main,
            next: 0,
            verifying: false,
            done: Vec::new(),
            asked: Vec::new(),
            filled: None,
        }
    }

    /// The arguments of gold action `next` (of its verify read when
    /// `verify`) with the facts put in; `None` when it has no such template
    /// or a fact is missing.
    fn filled(&mut self, next: usize, verify: bool) -> Option<&Args> {
        let at = (self.plan, next, verify);
        if self.filled.as_ref().is_none_or(|(cached, _)| *cached != at) {
            let gold = self.gold().get(next)?;
            let template = if verify { &gold.verify.as_ref()?.1 } else { &gold.args };
            let args = template.fill_args(&self.facts).ok()?;
            self.filled = Some((at, args));
        }
        self.filled.as_ref().map(|(_, args)| args)
    }

    fn hear(&mut self, content: &Value) {
        let opening = !self.heard;
        self.heard = true;
        if self.case.hear(content) {
            return;
        }
        if let Value::Map(pairs) = content {
            for (k, v) in pairs.iter().filter(|(k, _)| !NOT_FACTS.contains(&k.as_ref())) {
                self.facts.set(k.clone(), v.clone());
                self.filled = None;
            }
        }
        if opening
            && let Some(p) = self.model.tasks[self.task]
                .plans
                .iter()
                .position(|(unstated, _)| unstated.iter().all(|f| self.facts.get(f).is_none()))
        {
            // The opening leaves facts out that this plan finds by other means.
            self.plan = Plan::Other(p);
        }
        if content.get("unknown").is_some() {
            // The user cannot give a fact the task needs: a human must take over.
            self.case.escalating = true;
        }
        if content.get("changed_mind") == Some(&Value::Bool(true)) && self.model.tasks[self.task].alternative.is_some()
        {
            self.plan = Plan::Alternative;
            // Carry on from the first action of the new plan not already done.
            let gold = self.gold();
            self.next = gold
                .iter()
                .position(|g| g.args.fill(&self.facts).map_or(true, |args| !self.done.contains(&(g.tool, args))))
                .unwrap_or(gold.len());
            self.verifying = false;
        } else if content.get("confirm") == Some(&Value::Bool(true)) && self.is_proposal(self.next) {
            self.next += 1;
        }
    }

    /// Whether gold action `i` is a proposal the user answers (`send_message`
    /// of kind `confirm`).
    fn is_proposal(&self, i: usize) -> bool {
        self.gold().get(i).is_some_and(|g| {
            g.tool == self.model.send_message && g.args.source().get("kind").and_then(Value::as_str) == Some("confirm")
        })
    }

    /// Whether `tool` is a scripted read.
    fn is_read(&self, tool: agentsim_engine::ToolId) -> bool {
        matches!(self.model.served(tool), super::model::Served::Script(i) if self.model.tools[i].kind == ToolKind::Read)
    }

    fn learn(&mut self, r: &ToolResult, cx: &AgentCx<'_>) -> Option<TimeMs> {
        let Some(body) = accepted(r, cx) else {
            return self.learn_failure(r);
        };
        self.case.accepted(r.call.tool);
        if r.call.tool == self.model.send_message && r.call.args.get("kind").and_then(Value::as_str) == Some("ask") {
            self.case.asked_user();
            if let Some(fact) = r.call.args.get("fact").and_then(Value::as_str) {
                self.asked.push(fact.to_string());
            }
            return None;
        }
        let gold = self.gold().get(self.next)?;
        let (gold_tool, verify_tool) = (gold.tool, gold.verify.as_ref().map(|(tool, _, _)| *tool));
        if self.verifying && verify_tool == Some(r.call.tool) {
            self.verifying = false;
            if self.applied(body) {
                self.remember_done(gold_tool, &r.call.args);
                self.next += 1;
            }
            return None;
        }
        if r.call.tool == gold_tool {
            let next = self.next;
            if self.is_read(r.call.tool) && self.filled(next, false).is_some_and(|args| **args != *r.call.args) {
                // A read of another record (an id copied wrong) says nothing
                // about the one the plan needs: read again.
                return None;
            }
            self.remember_done(gold_tool, &r.call.args);
            if self.is_proposal(self.next) {
                self.case.awaiting_user = true;
            } else {
                self.next += 1;
            }
        }
        None
    }

    /// Keeps a gold call that succeeded, for a change of mind to skip: only
    /// a task with an alternative reads them (`hear`).
    fn remember_done(&mut self, tool: agentsim_engine::ToolId, args: &Value) {
        if self.model.tasks[self.task].alternative.is_some() {
            self.done.push((tool, args.clone()));
        }
    }

    /// Whether the verify predicate says the write was applied.
    fn applied(&self, result: &Value) -> bool {
        let Some(&(_, _, when)) = self.gold().get(self.next).and_then(|g| g.verify.as_ref()) else { return false };
        let vars = [("facts", &self.facts), ("result", result)];
        if let Some(holds) = self.model.program.native(when, &Vars(&vars), &[]) {
            return holds;
        }
        let mut session = self.model.session(self.model.verify_stream.clone());
        self.model.program.predicate(&mut session, when, &vars).unwrap_or(false)
    }

    fn learn_failure(&mut self, r: &ToolResult) -> Option<TimeMs> {
        if let Reply::Error { status, .. } = &r.reply
            && (400..500).contains(status)
            && ![401, 403, 408, 429].contains(status)
            && self.gold().get(self.next).is_some_and(|g| g.fails && g.tool == r.call.tool)
        {
            // A gold call the world refuses (a world with `gold_may_fail`): its
            // refusal is the expected answer.
            self.next += 1;
            return None;
        }
        self.case.failures += 1;
        let write = matches!(
            self.model.served(r.call.tool),
            super::model::Served::Script(i) if self.model.tools[i].kind == ToolKind::Write
        );
        let current = self.gold().get(self.next);
        if matches!(r.reply, Reply::Timeout)
            && write
            && current.is_some_and(|g| g.tool == r.call.tool && g.verify.is_some())
        {
            // The write may have been applied before its answer was lost.
            self.verifying = true;
            return Some(backoff_ms(self.case.failures, &r.reply));
        }
        self.case.after_failure(&r.reply)
    }

    fn next_action(&mut self) -> Action {
        if let Some(last) = self.case.closed("user") {
            return last;
        }
        if !self.heard {
            return Action::Idle { wake_at_ms: None };
        }
        if self.case.must_escalate() {
            self.case.escalating = true;
            let reason = format!(
                "could not complete task `{}` ({} failures, {} refusals)",
                self.model.tasks[self.task].id, self.case.failures, self.case.blocks
            );
            return call(self.model.escalate, Value::map([("reason", Value::Str(reason))]));
        }
        if self.case.needs_auth {
            return self.case.renew_session();
        }
        if self.case.awaiting_user {
            return Action::Idle { wake_at_ms: None };
        }
        let Some(gold) = self.gold().get(self.next) else {
            return Action::Finish(Finish::Done);
        };
        let (tool, template, verify) = match (&gold.verify, self.verifying) {
            (Some((tool, args, _)), true) => (*tool, args, true),
            _ => (gold.tool, &gold.args, false),
        };
        let at = (self.plan, self.next, verify);
        if let Some((cached, args)) = &self.filled
            && *cached == at
        {
            // Filled in before and no fact has come since: nothing is missing.
            return call(tool, args.clone());
        }
        if let Some(missing) = template.missing_fact(&self.facts) {
            if self.asked.iter().any(|a| a == missing) {
                // Asked already and told nothing new: wait for the user.
                return Action::Idle { wake_at_ms: None };
            }
            let mut args = Value::map([("kind", Value::str("ask")), ("fact", Value::str(missing))]);
            if let Some((recipient, _)) = &self.model.recipient
                && let Some(to) = self.facts.get(&recipient.fact)
            {
                args.set(recipient.arg.clone(), to.clone());
            }
            return call(self.model.send_message, args);
        }
        if self.is_read(tool) {
            // A read's answer is compared with these arguments (`learn`):
            // filled once, kept for it.
            return match self.filled(self.next, verify) {
                Some(args) => call(tool, args.clone()),
                None => Action::Finish(Finish::GaveUp { reason: "a fact the task needs is missing".into() }),
            };
        }
        // A write's arguments are not read again unless it is retried: filled
        // into the call itself (the cache, a pure function of the facts, is
        // only a saving). A template without facts gives arguments made once,
        // which every call of it shares.
        match template.fill_args(&self.facts) {
            Ok(args) => call(tool, args),
            Err(_) => Action::Finish(Finish::GaveUp { reason: "a fact the task needs is missing".into() }),
        }
    }
}

impl Agent for GoldExpert {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        begin_step(&input, cx);
        let wait_ms = match &input {
            Input::User(message) => {
                self.hear(&message.content);
                None
            }
            Input::Tool(result) => self.learn(result, cx),
            Input::Blocked { call, layer, .. } => {
                self.case.blocks += 1;
                if self.gold().get(self.next).is_some_and(|g| g.tool == call.tool && g.verify.is_some()) {
                    // The stack refused the write on what we knew of its record:
                    // read it again (with the write's verify read) before retrying.
                    self.verifying = true;
                }
                (*layer == "loop_detector" || *layer == "circuit_breaker").then_some(LOOP_PAUSE_MS)
            }
            Input::Wake => None,
        };
        match wait_ms {
            Some(ms) => Action::Idle { wake_at_ms: Some(cx.now_ms.saturating_add(ms)) },
            None => self.next_action(),
        }
    }
}
