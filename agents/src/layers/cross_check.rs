//! Re-reads before believing: a defence against answers that are well formed
//! and wrong (the `Corrupt` fault), which no schema check can see.
//!
//! When a read the planner asked for comes back well formed, the layer sends the
//! same read again (the key stays, the service cannot tell it from a repeat) and
//! compares the two bodies. Equal: the answer is believed and handed to the
//! planner. Different: one of them lies (or the world moved between them), so it
//! reads again, up to `reads_max` reads in all, and hands over the first body
//! that an earlier read agrees with. When no two of `reads_max` reads agree, the
//! planner receives a `502 cross-check: answers disagree` instead of data. A
//! failed confirmation read (an error, a timeout, a malformed body) goes to the
//! planner as it came: the read failed, and the planner decides what next.
//!
//! The cost is measured, not hidden: every confirmation is a real call (latency,
//! rate limits, faults of its own). Writes are never re-sent. Decisions are noted
//! as `("cross_check", "agreed" | "disagreed" | "unresolved", {tool, reads})`.

use agentsim_engine::tool::AUTHENTICATE;
use agentsim_engine::{Action, Agent, AgentCx, Input, Reply, ToolCall, ToolKind, ToolResult, Value};
use serde::{Deserialize, Serialize};

use crate::{catalog, notes};

/// The status a disagreement is reported with: the upstream's answers cannot be
/// trusted, as a proxy would report a bad upstream.
pub const DISAGREE_STATUS: u16 = 502;

/// The most reads one cross-check may make (`reads_max`).
pub const READS_MAX: u32 = 8;

/// How the [`CrossCheck`] layer checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrossCheckConfig {
    /// Reads of one request at most, the first included: 2..=8 (default 3: a
    /// disagreement is settled by a third read).
    pub reads_max: u32,
    /// Read tools to check, by name (default empty: every read tool).
    pub tools: Vec<String>,
}

impl Default for CrossCheckConfig {
    fn default() -> Self {
        Self { reads_max: 3, tools: Vec::new() }
    }
}

/// What a result of the read being checked leads to.
enum Next {
    /// Send the read again.
    ReadAgain(ToolCall),
    /// Hand this to the planner.
    Deliver(Input),
}

/// A stack layer that confirms reads by reading again.
pub struct CrossCheck {
    inner: Box<dyn Agent>,
    config: CrossCheckConfig,
    /// The read being checked and the well-formed bodies it has given so far.
    checking: Option<(ToolCall, Vec<ToolResult>)>,
}

impl CrossCheck {
    /// Wraps `inner`. The layer draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: CrossCheckConfig) -> Self {
        Self { inner, config, checking: None }
    }

    fn checked(&self, call: &ToolCall, cx: &AgentCx<'_>) -> bool {
        let Some(def) = catalog::def(cx.catalog, call.tool) else { return false };
        def.kind == ToolKind::Read
            && def.name != AUTHENTICATE
            && (self.config.tools.is_empty() || self.config.tools.contains(&def.name))
    }

    fn note(cx: &mut AgentCx<'_>, what: &'static str, call: &ToolCall, reads: usize) {
        let tool = catalog::name(cx.catalog, call.tool);
        cx.note("cross_check", what, Value::map([("tool", Value::str(tool)), ("reads", notes::int(reads as u64))]));
    }

    /// What to do with a result of the read being checked: read again, or the
    /// input the planner receives.
    fn judge(&mut self, result: ToolResult, cx: &mut AgentCx<'_>) -> Next {
        let Some((call, mut seen)) = self.checking.take() else { return Next::Deliver(Input::Tool(result)) };
        if !catalog::well_formed(cx.catalog, call.tool, cx.now_ms, &result.reply) {
            return Next::Deliver(Input::Tool(result));
        }
        if let Some(earlier) = seen.iter().position(|r| r.reply == result.reply) {
            let what = if seen.len() > 1 || earlier > 0 { "disagreed" } else { "agreed" };
            Self::note(cx, what, &call, seen.len() + 1);
            return Next::Deliver(Input::Tool(result));
        }
        seen.push(result);
        let reads_max = self.config.reads_max.clamp(2, READS_MAX) as usize;
        if seen.len() >= reads_max {
            Self::note(cx, "unresolved", &call, seen.len());
            let last = seen.pop().expect("at least two reads were kept");
            let reply = Reply::Error {
                status: DISAGREE_STATUS,
                retry_after_ms: None,
                message: format!("cross-check: answers disagree ({reads_max} reads, no two alike)"),
            };
            return Next::Deliver(Input::Tool(ToolResult { reply, ..last }));
        }
        self.checking = Some((call.clone(), seen));
        Next::ReadAgain(call)
    }
}

impl Agent for CrossCheck {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let input = match input {
            Input::Tool(result) if self.checking.as_ref().is_some_and(|(c, _)| *c == result.call) => {
                match self.judge(result, cx) {
                    Next::ReadAgain(call) => return Action::Call(call),
                    Next::Deliver(input) => input,
                }
            }
            other => {
                self.checking = None;
                other
            }
        };
        let action = self.inner.step(input, cx);
        if let Action::Call(call) = &action
            && self.checked(call, cx)
        {
            self.checking = Some((call.clone(), Vec::new()));
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup, ok, order_body, step};

    fn checked_lookup(replies: &[Input]) -> (Vec<Action>, Vec<Input>, Vec<&'static str>) {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, seen) = Script::new([Action::Call(call.clone())], testkit::idle());
        let mut layer = CrossCheck::new(inner, CrossCheckConfig::default());
        let mut actions = vec![step(&mut layer, &catalog, 0, testkit::user("refund o-1")).action];
        let mut notes = Vec::new();
        for input in replies {
            let s = step(&mut layer, &catalog, 10, input.clone());
            notes.extend(s.notes.iter().map(|n| n.what));
            actions.push(s.action);
        }
        let seen = testkit::seen(&seen).into_iter().skip(1).collect();
        (actions, seen, notes)
    }

    #[test]
    fn two_equal_reads_are_believed() {
        let call = lookup("o-1");
        let good = ok(&call, order_body("o-1", 4_250));
        let (actions, seen, notes) = checked_lookup(&[good.clone(), good.clone()]);
        assert_eq!(actions[1], Action::Call(call), "the first answer is confirmed by a second read");
        assert_eq!(seen, [good]);
        assert_eq!(notes, ["agreed"]);
    }

    #[test]
    fn a_lie_is_outvoted_by_two_reads_that_agree() {
        let call = lookup("o-1");
        let lie = ok(&call, order_body("o-1", 42_500));
        let truth = ok(&call, order_body("o-1", 4_250));
        let (actions, seen, notes) = checked_lookup(&[lie, truth.clone(), truth.clone()]);
        assert_eq!(&actions[1..3], [Action::Call(call.clone()), Action::Call(call)]);
        assert_eq!(seen, [truth], "the planner never sees the corrupted total");
        assert_eq!(notes, ["disagreed"]);
    }

    #[test]
    fn no_two_alike_is_an_error_and_a_failed_read_passes_through() {
        let call = lookup("o-1");
        let answers: Vec<Input> = [1, 2, 3].iter().map(|t| ok(&call, order_body("o-1", *t))).collect();
        let (_, seen, notes) = checked_lookup(&answers);
        let Input::Tool(r) = &seen[0] else { panic!() };
        assert_eq!(r.reply.status(), DISAGREE_STATUS);
        assert_eq!(notes, ["unresolved"]);

        let failed = testkit::error(&call, 503, None);
        let (_, seen, _) = checked_lookup(&[ok(&call, order_body("o-1", 1)), failed.clone()]);
        assert_eq!(seen, [failed]);
    }

    #[test]
    fn writes_are_never_sent_twice() {
        let catalog = testkit::catalog();
        let call = testkit::refund("o-1", 100);
        let (inner, seen) = Script::new([Action::Call(call.clone())], testkit::idle());
        let mut layer = CrossCheck::new(inner, CrossCheckConfig::default());
        step(&mut layer, &catalog, 0, testkit::user("go"));
        let answer = ok(&call, Value::map([("refund_id", Value::str("r-1"))]));
        assert_eq!(step(&mut layer, &catalog, 10, answer.clone()).action, testkit::idle());
        assert_eq!(testkit::seen(&seen)[1], answer);
    }
}
