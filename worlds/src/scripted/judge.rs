//! The judge of a scripted world: the final state (`db`), what the agent had
//! to tell the user (`communicate`, tau2-bench's rule), and the task's reward
//! basis, which says which of them success requires.

use agentsim_engine::{Check, SessionId, Value, Verdict};

use super::ScriptedWorld;
use super::caller::{Caller, ListsRef};
use super::unmet::Unmet;
use crate::scripted::Basis;
use crate::scripted::model::Task;

/// What success requires when a task names no basis.
const DEFAULT_BASIS: [Basis; 2] = [Basis::Db, Basis::Communicate];

/// Text as tau2-bench compares it: lower-cased, commas removed (so `$8,276.23`
/// holds `8276.23`).
pub(super) fn normalised(text: &str) -> String {
    text.to_lowercase().replace(',', "")
}

/// What success requires of `task`.
fn basis(task: &Task) -> &[Basis] {
    task.reward_basis.as_deref().unwrap_or(&DEFAULT_BASIS)
}

impl Caller<'_> {
    /// The first string of `communicate` the agent never said.
    fn unsaid(&self) -> Option<&str> {
        self.task
            .communicate
            .iter()
            .find(|info| !self.said.iter().any(|m| m.contains(info.as_str())))
            .map(String::as_str)
    }
}

impl<'m> ScriptedWorld<'m> {
    /// Remembers what the agent said to the user (its words, or a structured
    /// message's text and values), as the communicate check reads it.
    pub(super) fn remember_said(&mut self, text: &str) {
        if !self.user.task.communicate.is_empty() {
            self.user.said.push(normalised(text));
        }
    }

    /// The words of a structured message: every string and number in it but
    /// its kind, in order.
    pub(super) fn remember_message(&mut self, args: &Value) {
        if self.user.task.communicate.is_empty() {
            return;
        }
        let mut words = Vec::new();
        leaves(args, &mut words);
        self.remember_said(&words.join(" "));
    }

    /// The final state for `caller`: the user stayed, the tables, the
    /// milestones and the success predicate. `Err` says why not. Judged once:
    /// the verdict and the checks both read it.
    fn judge_state<'c>(&self, caller: &'c Caller<'m>, lists: ListsRef<'_>) -> &'c Result<(), Unmet> {
        caller.state_judged.get_or_init(|| self.judge_state_now(caller, lists))
    }

    fn judge_state_now(&self, caller: &Caller<'m>, lists: ListsRef<'_>) -> Result<(), Unmet> {
        if let Some(left) = caller.left_at_ms {
            return Err(Unmet::UserLeft { after_s: left / 1_000 });
        }
        self.state_ok(caller)?;
        let task = caller.task;
        if let Err(why) = caller.progress.check(&task.dag) {
            return Err(Unmet::MilestonesOutOfOrder(why.to_string()));
        }
        if let Some(missing) = task.milestones.iter().find(|(m, _)| !caller.progress.has(m)) {
            return Err(Unmet::MilestoneMissing(missing.0.to_string()));
        }
        if let Some(when) = task.success_when {
            match self.success_holds(caller, lists, when) {
                Ok(true) => {}
                Ok(false) => return Err(Unmet::SuccessFalse(task.id.clone())),
                Err(e) => return Err(Unmet::SuccessFailed(task.id.clone(), e)),
            }
        }
        Ok(())
    }

    /// Session `session`'s verdict: success when every judged check of its
    /// task's basis passes.
    pub(super) fn verdict(&self, session: SessionId) -> Verdict {
        let (caller, lists) = self.caller_of(session);
        let task = caller.task;
        let verdict = |success: bool, detail: String| Verdict {
            success,
            escalated: caller.escalated,
            milestone: caller.progress.last(),
            detail,
            told_accurately: None,
            uncertain: None,
        };
        let state = self.judge_state(caller, lists);
        let basis = basis(task);
        if let Err(why) = state
            && basis.contains(&Basis::Db)
        {
            return verdict(false, why.to_string());
        }
        if basis.contains(&Basis::Communicate)
            && let Some(info) = caller.unsaid()
        {
            return verdict(false, format!("task `{}`: the agent never told the user `{info}`", task.id));
        }
        match state {
            Ok(()) => verdict(true, format!("task `{}` done", task.id)),
            Err(why) => verdict(true, format!("task `{}` done by its reward basis ({why}: not in it)", task.id)),
        }
    }

    /// Each check session 0's task declares, when the world declares any:
    /// `db` always, `communicate` and `nl_assertion` when the task has them
    /// or its basis names them.
    pub(super) fn checks_now(&self) -> Vec<Check> {
        if !self.model.declares_checks {
            return Vec::new();
        }
        let (caller, lists) = self.caller_of(0);
        let basis = basis(caller.task);
        let check = |b: Basis, passed: Option<bool>| Check { name: b.name(), passed, in_reward: basis.contains(&b) };
        let mut checks = vec![check(Basis::Db, Some(self.judge_state(caller, lists).is_ok()))];
        if !caller.task.communicate.is_empty() || basis.contains(&Basis::Communicate) {
            checks.push(check(Basis::Communicate, Some(caller.unsaid().is_none())));
        }
        if caller.task.nl_assertions > 0 || basis.contains(&Basis::NlAssertion) {
            checks.push(check(Basis::NlAssertion, None));
        }
        checks
    }
}

fn leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Str(s) => out.push(s.clone()),
        Value::Int(_) | Value::Float(_) => out.push(value.render()),
        Value::List(items) => items.iter().for_each(|v| leaves(v, out)),
        Value::Map(pairs) => pairs.iter().filter(|(k, _)| k != "kind").for_each(|(_, v)| leaves(v, out)),
        _ => {}
    }
}
