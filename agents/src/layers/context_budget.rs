//! Keeps the planner's context within a token budget by evicting the oldest
//! observations.
//!
//! Every turn's prompt carries everything the planner has read so far, so a long
//! conversation costs more per turn and eventually exceeds the model's window.
//! This layer accounts the tokens the planner reads in each step. When the total
//! passes `budget_tokens`, it evicts the oldest observations until the total is at
//! most `evict_to_pct` percent of the budget, and tells the engine
//! (`AgentCx::evict`): later prompts are smaller, and the planner forgets what it
//! learnt before the eviction point. A planner that forgets must look things up
//! again, or (the noisy planner) act on what it no longer knows, so the budget
//! trades cost against tool calls and mistakes. What the planner itself wrote
//! (its completions, a running summary) is not evicted.
//!
//! Each eviction is noted as `("context", "evicted", {tokens, before_ms, kept})`.

use std::collections::VecDeque;

use agentsim_engine::{Action, Agent, AgentCx, Input, TimeMs, Value};
use serde::{Deserialize, Serialize};

use crate::notes;

/// The [`ContextBudget`] layer's limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextConfig {
    /// Tokens of observations the context may hold (default 4,000).
    pub budget_tokens: u32,
    /// After an eviction, the context holds at most this percent of the budget
    /// (default 50).
    pub evict_to_pct: u32,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self { budget_tokens: 4_000, evict_to_pct: 50 }
    }
}

/// A stack layer that evicts old observations past a token budget.
pub struct ContextBudget {
    inner: Box<dyn Agent>,
    config: ContextConfig,
    /// (virtual time, tokens read) per step, oldest first.
    reads: VecDeque<(TimeMs, u32)>,
    total_tokens: u64,
}

impl ContextBudget {
    /// Wraps `inner`. The layer draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: ContextConfig) -> Self {
        Self { inner, config, reads: VecDeque::new(), total_tokens: 0 }
    }

    /// Evicts whole steps, oldest first, down to the low-water mark.
    fn evict(&mut self, cx: &mut AgentCx<'_>) {
        if self.total_tokens <= u64::from(self.config.budget_tokens) {
            return;
        }
        let low_water = u64::from(self.config.budget_tokens) * u64::from(self.config.evict_to_pct.min(100)) / 100;
        let mut evicted: u64 = 0;
        let mut last_ms = 0;
        while let Some(&(at_ms, tokens)) = self.reads.front() {
            // Everything read at the eviction point's time goes too: forgetting is
            // by time, so nothing read then may stay.
            if self.total_tokens <= low_water && at_ms != last_ms {
                break;
            }
            self.reads.pop_front();
            self.total_tokens -= u64::from(tokens);
            evicted += u64::from(tokens);
            last_ms = at_ms;
        }
        let before_ms = last_ms.saturating_add(1);
        let tokens = u32::try_from(evicted).unwrap_or(u32::MAX);
        cx.evict(tokens, before_ms);
        cx.note(
            "context",
            "evicted",
            Value::map([
                ("tokens", notes::int(evicted)),
                ("before_ms", notes::int(before_ms)),
                ("kept", notes::int(self.total_tokens)),
            ]),
        );
    }
}

impl Agent for ContextBudget {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        self.evict(cx);
        let read_before = cx.read_tokens();
        let action = self.inner.step(input, cx);
        let read = cx.read_tokens().saturating_sub(read_before);
        if read > 0 {
            self.reads.push_back((cx.now_ms, read));
            self.total_tokens += u64::from(read);
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup, ok, order_body};

    #[test]
    fn evicts_the_oldest_past_the_budget_and_signals_forgetting() {
        let catalog = testkit::catalog();
        let (inner, _) = Script::always(testkit::idle());
        let mut layer = ContextBudget::new(inner, ContextConfig { budget_tokens: 100, evict_to_pct: 50 });
        let call = lookup("o-1");
        let mut evictions = Vec::new();
        for t in 0..20u64 {
            let mut cx = AgentCx::new(t * 1_000, &catalog);
            layer.step(ok(&call, order_body("o-1", t as i64)), &mut cx);
            if let Some(before_ms) = cx.forget_before_ms() {
                evictions.push((t, cx.evicted_tokens(), before_ms));
            }
            assert!(layer.total_tokens <= 100 + 40, "bounded: {}", layer.total_tokens);
        }
        assert!(!evictions.is_empty());
        for (t, tokens, before_ms) in evictions {
            assert!(tokens > 0);
            assert!(before_ms <= t * 1_000, "only the past is forgotten");
        }
    }

    #[test]
    fn under_budget_nothing_happens() {
        let catalog = testkit::catalog();
        let (inner, _) = Script::always(testkit::idle());
        let mut layer = ContextBudget::new(inner, ContextConfig::default());
        for t in 0..5 {
            let mut cx = AgentCx::new(t, &catalog);
            layer.step(testkit::user("hello"), &mut cx);
            assert_eq!(cx.forget_before_ms(), None);
            assert!(cx.take_notes().is_empty());
        }
    }
}
