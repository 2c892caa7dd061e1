//! An expert's step, as every world's expert takes it: the input enters the
//! context, the user's words are heard (a goodbye closes the case), a result
//! is accepted or counted as a failure, a refusal of the stack is counted,
//! and the expert either pauses or derives its next action from what it
//! knows. An expert says only what it learns and what it does next
//! ([`Policy`]); [`Planner`] makes it an engine `Agent`.

use agentsim_engine::{Action, Agent, AgentCx, Input, Reply, TimeMs, ToolCall, ToolResult, Value};

use crate::kit::case::{Case, begin_step};
use crate::kit::world::ToolNames;
use crate::read::{LOOP_PAUSE_MS, accepted, backoff_ms};

/// What an expert written with the kit says itself.
pub trait Policy {
    /// Where its case stands.
    fn case(&mut self) -> &mut Case;

    /// Forgets what it read before `before_ms` (the context was evicted).
    /// Default: it keeps nothing that ages.
    fn forget(&mut self, _before_ms: TimeMs) {}

    /// Reads what the user's message carries (a goodbye is taken in already).
    fn hear(&mut self, content: &Value);

    /// Reads an accepted `body` of the tool `name` (the case has taken it
    /// in); returns how long to wait before acting again.
    fn learn(&mut self, name: &str, r: &ToolResult, body: &Value, cx: &AgentCx<'_>) -> Option<TimeMs>;

    /// Takes in that the answer to a call of the tool `name` was lost (a
    /// timeout): a write may or may not have been applied. True when the
    /// expert will check before writing again (the kit then backs off);
    /// false leaves the failure to [`Policy::learn_failure`]. Default: false.
    fn answer_lost(&mut self, _name: &str) -> bool {
        false
    }

    /// Takes in a failed call of the tool `name` (counted already); returns
    /// how long to wait.
    fn learn_failure(&mut self, name: &str, r: &ToolResult) -> Option<TimeMs>;

    /// Takes in that the stack's `layer` refused a call of the tool `name`
    /// (counted already); returns how long to pause. Default: [`pause_after`].
    fn blocked(&mut self, _name: &str, _call: &ToolCall, layer: &str) -> Option<TimeMs> {
        pause_after(layer)
    }

    /// The next action, from what it knows at `now_ms`.
    fn next(&mut self, now_ms: TimeMs) -> Action;
}

/// The pause after a refusal by `layer`: told it is looping, the expert waits
/// before trying again rather than asking at once.
pub fn pause_after(layer: &str) -> Option<TimeMs> {
    (layer == "loop_detector").then_some(LOOP_PAUSE_MS)
}

/// One step of `policy`, whose tools `names` names: its `Agent::step`.
pub fn step<P: Policy>(policy: &mut P, names: &impl ToolNames, input: Input, cx: &mut AgentCx<'_>) -> Action {
    if let Some(before_ms) = cx.forget_before_ms() {
        policy.forget(before_ms);
    }
    begin_step(&input, cx);
    let name_of = |call: &ToolCall| names.name(call.tool).unwrap_or_default();
    let wait_ms = match &input {
        Input::User(message) => {
            if !policy.case().hear(&message.content) {
                policy.hear(&message.content);
            }
            None
        }
        Input::Tool(r) => match accepted(r, cx) {
            Some(body) => {
                policy.case().accepted(r.call.tool);
                assert_eq!(policy.case().failures, 0, "an accepted result ends the run of failures");
                policy.learn(name_of(&r.call), r, body, cx)
            }
            None => {
                policy.case().failures += 1;
                let name = name_of(&r.call);
                if matches!(r.reply, Reply::Timeout) && policy.answer_lost(name) {
                    Some(backoff_ms(policy.case().failures, &r.reply))
                } else {
                    policy.learn_failure(name, r)
                }
            }
        },
        Input::Blocked { call, layer, .. } => {
            policy.case().blocks += 1;
            policy.blocked(name_of(call), call, layer)
        }
        Input::Wake => None,
    };
    match wait_ms {
        Some(ms) => Action::Idle { wake_at_ms: Some(cx.now_ms.saturating_add(ms)) },
        None => policy.next(cx.now_ms),
    }
}

/// A [`Policy`] as an engine `Agent` (the `oracle` planner), with its tools'
/// names.
pub struct Planner<P, N> {
    policy: P,
    names: N,
}

impl<P: Policy, N: ToolNames> Planner<P, N> {
    /// `policy`, whose tools `names` names.
    pub fn new(policy: P, names: N) -> Self {
        Planner { policy, names }
    }
}

impl<P: Policy + Send, N: ToolNames + Send> Agent for Planner<P, N> {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        step(&mut self.policy, &self.names, input, cx)
    }
}

/// Takes the string a user's message carries under `field` into `slot` (a
/// `String`, or an `Option<String>` then known); a message without one
/// leaves what the expert knew.
pub fn take_str<T: StrSlot>(content: &Value, field: &str, slot: &mut T) {
    if let Some(s) = content.get(field).and_then(Value::as_str) {
        slot.set_str(s);
    }
}

/// Where [`take_str`] keeps a string: set in place, so that a user who says
/// again what the expert knows (every message repeats their id) costs no
/// allocation.
pub trait StrSlot {
    /// Holds `s` from now on (the same value as `s.to_string()` would give).
    fn set_str(&mut self, s: &str);
}

impl StrSlot for String {
    fn set_str(&mut self, s: &str) {
        if self != s {
            self.clear();
            self.push_str(s);
        }
    }
}

impl StrSlot for Option<String> {
    fn set_str(&mut self, s: &str) {
        match self {
            Some(held) => held.set_str(s),
            None => *self = Some(s.to_string()),
        }
    }
}

/// [`take_str`] for an integer.
pub fn take_int<T: From<i64>>(content: &Value, field: &str, slot: &mut T) {
    if let Some(n) = content.get(field).and_then(Value::as_int) {
        *slot = T::from(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `take_str` in place gives what a fresh copy gives, whatever the slot held.
    #[test]
    fn take_str_in_place_equals_a_fresh_copy() {
        let words = ["", "c-1", "c-10", "c-1 ", "another, longer id", "é"];
        for held in words {
            for said in words {
                let content = Value::map([("id", Value::str(said))]);
                let mut string = held.to_string();
                take_str(&content, "id", &mut string);
                assert_eq!(string, said.to_string());
                for mut option in [None, Some(held.to_string())] {
                    take_str(&content, "id", &mut option);
                    assert_eq!(option, Some(said.to_string()));
                }
                // A message without the field leaves the slot as it was.
                let mut kept = Some(held.to_string());
                take_str(&Value::map([("other", Value::str(said))]), "id", &mut kept);
                assert_eq!(kept.as_deref(), Some(held));
            }
        }
    }
}
