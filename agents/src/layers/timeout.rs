//! Gives every call a deadline in virtual time.
//!
//! A client that waits as long as the slowest answer is a client that hangs. This
//! layer limits each call it forwards to `timeout_ms`: when the tool takes longer,
//! the engine delivers `Reply::Timeout` at the deadline (`AgentCx::limit_call`).
//! The tool may still have done the work, so a write that timed out here may be
//! applied: pair it with idempotency keys before retrying writes.
//!
//! Place it closest to the tools (last in the list) so that the retry layer's
//! re-sends get the deadline too. Each call that hit this deadline is noted as
//! `("timeout", "timed_out", {tool, timeout_ms})`.

use agentsim_engine::{Action, Agent, AgentCx, Input, Reply, TimeMs, Value};
use serde::{Deserialize, Serialize};

use crate::{catalog, notes};

/// How long the [`Timeout`] layer lets a call take.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutConfig {
    /// The deadline of every call, in virtual milliseconds (default 3,000). A tool's
    /// own `timeout_ms` still applies when it is shorter.
    pub timeout_ms: TimeMs,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        Self { timeout_ms: 3_000 }
    }
}

/// A stack layer that puts a virtual-time deadline on each call.
pub struct Timeout {
    inner: Box<dyn Agent>,
    config: TimeoutConfig,
}

impl Timeout {
    /// Wraps `inner`. The layer draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: TimeoutConfig) -> Self {
        Self { inner, config }
    }
}

impl Agent for Timeout {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        if let Input::Tool(result) = &input
            && result.reply == Reply::Timeout
            && result.latency_ms == self.config.timeout_ms
        {
            let tool = catalog::name(cx.catalog, result.call.tool);
            cx.note(
                "timeout",
                "timed_out",
                Value::map([("tool", Value::str(tool)), ("timeout_ms", notes::int(self.config.timeout_ms))]),
            );
        }
        let action = self.inner.step(input, cx);
        if matches!(action, Action::Call(_)) {
            cx.limit_call(self.config.timeout_ms.max(1));
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup};

    #[test]
    fn limits_calls_and_notes_the_timeouts_it_caused() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, _) = Script::always(Action::Call(call.clone()));
        let mut layer = Timeout::new(inner, TimeoutConfig { timeout_ms: 500 });
        let mut cx = AgentCx::new(0, &catalog);
        assert_eq!(layer.step(testkit::user("hi"), &mut cx), Action::Call(call.clone()));
        assert_eq!(cx.call_timeout_ms(), Some(500));
        let timed_out = agentsim_engine::ToolResult {
            call: call.clone(),
            reply: Reply::Timeout,
            latency_ms: 500,
            cache_age_ms: None,
        };
        let mut cx = AgentCx::new(500, &catalog);
        layer.step(Input::Tool(timed_out), &mut cx);
        assert_eq!(cx.take_notes()[0].what, "timed_out");
        // An idle planner gets no deadline.
        let (inner, _) = Script::always(testkit::idle());
        let mut layer = Timeout::new(inner, TimeoutConfig::default());
        let mut cx = AgentCx::new(0, &catalog);
        layer.step(testkit::user("hi"), &mut cx);
        assert_eq!(cx.call_timeout_ms(), None);
    }
}
