//! Holds state-changing calls until a human approves them.
//!
//! Before a write (or a listed tool) reaches the tool, the layer asks for
//! approval and sleeps for the approval's latency (virtual time, drawn from
//! `latency`). Then the approver answers: with probability `refuse` the call is
//! refused and the planner is told (`Input::Blocked`, layer `approval`);
//! otherwise the call goes out. Approvals cost time, not tokens; refusals are
//! how a human stops a wrong refund that every other layer let through.
//!
//! Draws come from the layer's own stream (`stack.approval`): one latency draw
//! per request and one refusal draw per answer. Decisions are noted as
//! `("approval", "requested" | "approved" | "refused", {tool, ...})`.

use agentsim_engine::{Action, Agent, AgentCx, Input, Latency, Probability, Stream, ToolCall, Value};
use serde::{Deserialize, Serialize};

use crate::{catalog, notes};

/// Refused calls in a row within one step before the gate halts the run.
pub const REFUSALS_MAX: u32 = 8;

/// What the [`Approval`] gate holds, and how the approver behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalConfig {
    /// Tools that need approval, by name (default empty: every write tool).
    pub tools: Vec<String>,
    /// How long the approver takes (default uniform 20 s to 2 min).
    pub latency: Latency,
    /// Chance that the approver refuses a call (default 0.02).
    pub refuse: Probability,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            latency: Latency::Uniform { min_ms: 20_000, max_ms: 120_000 },
            refuse: Probability::try_from(0.02).unwrap_or(Probability::ZERO),
        }
    }
}

/// A stack layer that gates calls on a simulated human approver.
pub struct Approval {
    inner: Box<dyn Agent>,
    config: ApprovalConfig,
    stream: Stream,
    /// The call waiting for its approval.
    pending: Option<ToolCall>,
}

impl Approval {
    /// Wraps `inner`; latencies and refusals are drawn from `stream` (the stack
    /// builder passes `"stack.approval"`).
    pub fn new(inner: Box<dyn Agent>, config: ApprovalConfig, stream: Stream) -> Self {
        Self { inner, config, stream, pending: None }
    }

    fn needs_approval(&self, call: &ToolCall, cx: &AgentCx<'_>) -> bool {
        if self.config.tools.is_empty() {
            catalog::is_write(cx.catalog, call.tool)
        } else {
            self.config.tools.contains(&catalog::name(cx.catalog, call.tool))
        }
    }

    /// Holds `action` if it is a call that needs approval.
    fn gate(&mut self, action: Action, cx: &mut AgentCx<'_>) -> Action {
        let Action::Call(call) = action else { return action };
        if !self.needs_approval(&call, cx) {
            return Action::Call(call);
        }
        let wait_ms = self.config.latency.sample(&mut self.stream);
        cx.note(
            "approval",
            "requested",
            Value::map([("tool", Value::str(catalog::name(cx.catalog, call.tool))), ("wait_ms", notes::int(wait_ms))]),
        );
        self.pending = Some(call);
        Action::Sleep { until_ms: cx.now_ms.saturating_add(wait_ms) }
    }
}

impl Agent for Approval {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let mut input = input;
        if input == Input::Wake
            && let Some(call) = self.pending.take()
        {
            let tool = Value::str(catalog::name(cx.catalog, call.tool));
            if !self.stream.chance(self.config.refuse.get()) {
                cx.note("approval", "approved", Value::map([("tool", tool)]));
                return Action::Call(call);
            }
            cx.note("approval", "refused", Value::map([("tool", tool.clone())]));
            let reason = format!("{}: the approver refused the call", tool.as_str().unwrap_or_default());
            input = Input::Blocked { call, layer: "approval", reason };
        }
        self.pending = None;
        let action = self.inner.step(input, cx);
        self.gate(action, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup, refund, step};

    fn gate(refuse: f64, seed: u64) -> (Approval, testkit::Seen) {
        let config = ApprovalConfig {
            latency: Latency::Fixed { ms: 5_000 },
            refuse: Probability::try_from(refuse).unwrap(),
            ..ApprovalConfig::default()
        };
        let (inner, seen) = Script::always(Action::Call(refund("o-1", 100)));
        (Approval::new(inner, config, testkit::streams(seed).stream("stack.approval")), seen)
    }

    #[test]
    fn a_write_waits_for_approval_then_goes_out() {
        let catalog = testkit::catalog();
        let (mut layer, _) = gate(0.0, 1);
        let s = step(&mut layer, &catalog, 100, testkit::user("refund"));
        assert_eq!(s.action, Action::Sleep { until_ms: 5_100 });
        assert_eq!(s.notes[0].what, "requested");
        let s = step(&mut layer, &catalog, 5_100, Input::Wake);
        assert_eq!(s.action, Action::Call(refund("o-1", 100)));
        assert_eq!(s.notes[0].what, "approved");
    }

    #[test]
    fn a_refusal_is_reported_to_the_planner() {
        let catalog = testkit::catalog();
        let (mut layer, seen) = gate(1.0, 1);
        step(&mut layer, &catalog, 0, testkit::user("refund"));
        let s = step(&mut layer, &catalog, 5_000, Input::Wake);
        assert_eq!(s.notes[0].what, "refused");
        // The planner asked again: a new request.
        assert_eq!(s.notes[1].what, "requested");
        assert!(matches!(s.action, Action::Sleep { .. }));
        assert!(matches!(testkit::seen(&seen)[1], Input::Blocked { layer: "approval", .. }));
    }

    #[test]
    fn reads_pass_without_approval() {
        let catalog = testkit::catalog();
        let (inner, _) = Script::always(Action::Call(lookup("o-1")));
        let mut layer = Approval::new(inner, ApprovalConfig::default(), testkit::streams(1).stream("stack.approval"));
        assert_eq!(step(&mut layer, &catalog, 0, testkit::user("x")).action, Action::Call(lookup("o-1")));
    }
}
