//! Retries transient failures with backoff, jitter and a retry budget.
//!
//! Before retry `n` (1 for the first) the layer computes a ceiling from `backoff`:
//! `Constant` (`base_ms`), `Linear` (`base_ms * n`) or `Exponential`
//! (`base_ms * 2^(n-1)`), each capped at `cap_ms`. Then `jitter` turns the ceiling
//! into a wait, with the formulas of AWS's "Exponential Backoff and Jitter":
//! `None` waits the ceiling; `Full` a uniform draw from `[0, ceiling]` (the
//! default); `Equal` `ceiling/2 + uniform[0, ceiling/2]`; `Decorrelated`
//! `min(cap_ms, uniform[base_ms, previous_wait * 3])`, starting from `base_ms`
//! (it ignores `backoff`). Jitter spreads the retries of many clients apart; the
//! cap keeps one retry from waiting for ever. A server's `Retry-After` is a floor
//! on the wait: retrying earlier only earns another 429.
//!
//! The optional retry `budget` is the AWS SDK's retry quota, a token bucket: a
//! retry spends `retry_cost` tokens (`timeout_cost` after a timeout), a success
//! earns `success_refund` back, up to `capacity`. An empty bucket means no retry:
//! when a dependency is down, retries stop multiplying the load on it.
//!
//! Only transient replies (408, 429, 5xx, timeouts) are retried: a 4xx will fail the
//! same way again. Writes are retried only as `retry_writes` allows, because a write
//! whose answer was lost may already be applied; with an idempotency key the service
//! applies it once however often it arrives.
//!
//! Each backoff is noted as `("retry", "backoff", {attempt, wait_ms, status})`, where
//! `attempt` is the attempt that failed (1 for the first send, so also the number of
//! the retry about to happen) and `status` the failure's (504 for a timeout).

use agentsim_engine::{Action, Agent, AgentCx, Input, Stream, TimeMs, ToolCall, ToolResult, Value};
use serde::{Deserialize, Serialize};

use crate::{catalog, notes, reuse};

/// When a write may be retried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteRetry {
    /// Never retry a write.
    Never,
    /// Retry a write only when it carries an idempotency key (safe: applied once).
    #[default]
    OnlyWithKey,
    /// Retry every write (a lost answer may mean the write is applied twice).
    Always,
}

/// How the backoff ceiling grows with the retry number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backoff {
    /// `base_ms` before every retry.
    Constant,
    /// `base_ms * n` before retry `n`.
    Linear,
    /// `base_ms * 2^(n-1)` before retry `n` (the default).
    #[default]
    Exponential,
}

/// How the wait is drawn under the ceiling (AWS's names and formulas).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Jitter {
    /// Wait the ceiling exactly: every client retries in lockstep.
    None,
    /// Uniform in `[0, ceiling]` (the default).
    #[default]
    Full,
    /// `ceiling/2` plus uniform in `[0, ceiling/2]`.
    Equal,
    /// `min(cap_ms, uniform[base_ms, 3 * previous wait])`, the first from `base_ms`.
    Decorrelated,
}

/// A token bucket that bounds retries (the AWS SDK's retry quota).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryBudget {
    /// Tokens in a full bucket, and at the start (default 500, the SDK's).
    pub capacity: u32,
    /// Tokens a retry after an error costs (default 5).
    pub retry_cost: u32,
    /// Tokens a retry after a timeout costs (default 10).
    pub timeout_cost: u32,
    /// Tokens a well-formed success earns back (default 1).
    pub success_refund: u32,
}

impl Default for RetryBudget {
    fn default() -> Self {
        Self { capacity: 500, retry_cost: 5, timeout_cost: 10, success_refund: 1 }
    }
}

/// How the [`Retry`] layer retries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Attempts per call, counting the first (default 4; 0 behaves as 1: no retries).
    pub attempts_max: u32,
    /// Backoff ceiling of the first retry, doubled for each later one (default 200 ms).
    pub base_ms: TimeMs,
    /// Largest backoff ceiling (default 20 s).
    pub cap_ms: TimeMs,
    /// Wait at least the server's `Retry-After` when it sends one (default true).
    pub honor_retry_after: bool,
    /// Which writes may be retried (default: only those with an idempotency key).
    pub retry_writes: WriteRetry,
    /// How the ceiling grows (default `Exponential`).
    pub backoff: Backoff,
    /// How the wait is drawn under it (default `Full`).
    pub jitter: Jitter,
    /// A retry budget shared by all calls through this layer (default none:
    /// unbounded beyond `attempts_max`).
    pub budget: Option<RetryBudget>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            attempts_max: 4,
            base_ms: 200,
            cap_ms: 20_000,
            honor_retry_after: true,
            retry_writes: WriteRetry::OnlyWithKey,
            backoff: Backoff::Exponential,
            jitter: Jitter::Full,
            budget: None,
        }
    }
}

/// The largest backoff before retry `retry` (1 for the first):
/// `min(cap_ms, base_ms * 2^(retry-1))`, saturating instead of overflowing.
pub(crate) fn backoff_ceiling_ms(config: &RetryConfig, retry: u32) -> TimeMs {
    let factor = match config.backoff {
        Backoff::Constant => 1,
        Backoff::Linear => u64::from(retry.max(1)),
        Backoff::Exponential => 1u64.checked_shl(retry.saturating_sub(1)).unwrap_or(u64::MAX),
    };
    config.base_ms.saturating_mul(factor).min(config.cap_ms)
}

/// A stack layer that retries the calls it forwards when they fail transiently.
///
/// The planner never sees the failed attempts, only the final result: a success, a
/// non-transient error, or the last transient error once the attempts are spent.
pub struct Retry {
    inner: Box<dyn Agent>,
    config: RetryConfig,
    stream: Stream,
    /// The call the inner agent made that this layer sent out and awaits
    /// (kept between calls, with `forwarding` false, so that the next copy
    /// reuses its allocations).
    forwarded: Option<ToolCall>,
    /// Whether `forwarded` is out and awaited.
    forwarding: bool,
    /// How many times `forwarded` has been sent.
    attempts: u32,
    /// Whether this layer is in a backoff sleep (the next Wake is its own).
    sleeping: bool,
    /// The previous wait of this call (decorrelated jitter grows from it).
    previous_wait_ms: TimeMs,
    /// Tokens left in the retry budget, if there is one.
    budget_tokens: Option<u32>,
}

impl Retry {
    /// Wraps `inner`; backoff jitter is drawn from `stream` (the stack builder passes
    /// `"stack.retry"`).
    pub fn new(inner: Box<dyn Agent>, config: RetryConfig, stream: Stream) -> Self {
        let budget_tokens = config.budget.as_ref().map(|b| b.capacity);
        Self {
            inner,
            config,
            stream,
            forwarded: None,
            forwarding: false,
            attempts: 0,
            sleeping: false,
            previous_wait_ms: 0,
            budget_tokens,
        }
    }

    /// The wait before retry `retry` under the configured jitter.
    fn jittered_wait_ms(&mut self, retry: u32) -> TimeMs {
        let ceiling_ms = backoff_ceiling_ms(&self.config, retry);
        match self.config.jitter {
            Jitter::None => ceiling_ms,
            Jitter::Full => self.stream.between(0, ceiling_ms),
            Jitter::Equal => {
                let half_ms = ceiling_ms / 2;
                half_ms + self.stream.between(0, ceiling_ms - half_ms)
            }
            Jitter::Decorrelated => {
                let base_ms = self.config.base_ms.min(self.config.cap_ms);
                let previous_ms = if retry <= 1 { base_ms } else { self.previous_wait_ms.max(base_ms) };
                let high_ms = previous_ms.saturating_mul(3).max(base_ms);
                self.stream.between(base_ms, high_ms).min(self.config.cap_ms)
            }
        }
    }

    /// Takes the cost of a retry after `reply` from the budget; false if it is empty.
    fn spend_budget(&mut self, reply: &agentsim_engine::Reply, cx: &mut AgentCx<'_>) -> bool {
        let (Some(budget), Some(tokens)) = (&self.config.budget, self.budget_tokens) else {
            return true;
        };
        let cost = if *reply == agentsim_engine::Reply::Timeout { budget.timeout_cost } else { budget.retry_cost };
        if tokens < cost {
            cx.note(
                "retry",
                "budget_exhausted",
                Value::map([("tokens", notes::int(u64::from(tokens))), ("cost", notes::int(u64::from(cost)))]),
            );
            return false;
        }
        self.budget_tokens = Some(tokens - cost);
        true
    }

    /// A well-formed answer earns tokens back.
    fn refund_budget(&mut self, result: &ToolResult, cx: &AgentCx<'_>) {
        if let (Some(budget), Some(tokens)) = (&self.config.budget, self.budget_tokens)
            && catalog::well_formed(cx.catalog, result.call.tool, cx.now_ms, &result.reply)
        {
            self.budget_tokens = Some(tokens.saturating_add(budget.success_refund).min(budget.capacity));
        }
    }

    /// The backoff sleep for `result`, if the layer retries it.
    fn backoff(&mut self, result: &ToolResult, cx: &mut AgentCx<'_>) -> Option<Action> {
        let forwarded = self.forwarded.as_ref().filter(|_| self.forwarding)?;
        // The cheap test first: most results are not transient failures.
        if !result.reply.is_transient() || !forwarded.same_request(&result.call) {
            return None;
        }
        if self.attempts >= self.config.attempts_max.max(1) {
            return None;
        }
        if catalog::is_write(cx.catalog, forwarded.tool) {
            let allowed = match self.config.retry_writes {
                WriteRetry::Never => false,
                WriteRetry::OnlyWithKey => forwarded.idempotency_key.is_some(),
                WriteRetry::Always => true,
            };
            if !allowed {
                return None;
            }
        }
        if !self.spend_budget(&result.reply, cx) {
            return None;
        }
        let retry = self.attempts;
        let jitter_ms = self.jittered_wait_ms(retry);
        self.previous_wait_ms = jitter_ms;
        let floor_ms = match result.reply.retry_after_ms() {
            Some(retry_after_ms) if self.config.honor_retry_after => retry_after_ms,
            _ => 0,
        };
        let wait_ms = jitter_ms.max(floor_ms);
        cx.note(
            "retry",
            "backoff",
            Value::map([
                ("attempt", notes::int(u64::from(retry))),
                ("wait_ms", notes::int(wait_ms)),
                ("status", notes::int(u64::from(result.reply.status()))),
            ]),
        );
        self.sleeping = true;
        Some(Action::Sleep { until_ms: cx.now_ms.saturating_add(wait_ms) })
    }
}

impl Agent for Retry {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        match &input {
            Input::Wake if self.sleeping => {
                self.sleeping = false;
                if let Some(call) = self.forwarded.as_ref().filter(|_| self.forwarding) {
                    self.attempts = self.attempts.saturating_add(1);
                    // The same call, key included, so the service can tell it is a repeat.
                    return Action::Call(call.clone());
                }
            }
            Input::Tool(result) => {
                self.refund_budget(result, cx);
                if let Some(sleep) = self.backoff(result, cx) {
                    return sleep;
                }
            }
            Input::Wake | Input::User(_) | Input::Blocked { .. } => {}
        }
        // Anything else ends whatever this layer was doing: the inner agent decides.
        self.sleeping = false;
        let action = self.inner.step(input, cx);
        match &action {
            Action::Call(call) => {
                reuse::keep_call(&mut self.forwarded, call);
                self.forwarding = true;
                self.attempts = 1;
            }
            Action::Sleep { .. } | Action::Idle { .. } | Action::Say { .. } | Action::Finish(_) => {
                self.forwarding = false;
                self.attempts = 0;
            }
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, error, lookup, ok, order_body, refund, reply, step};
    use agentsim_engine::Reply;

    fn retry(config: RetryConfig, inner: Box<dyn Agent>, seed: u64) -> Retry {
        Retry::new(inner, config, testkit::streams(seed).stream("stack.retry"))
    }

    fn wait_of(action: &Action, now_ms: u64) -> u64 {
        match action {
            Action::Sleep { until_ms } => until_ms - now_ms,
            other => panic!("expected a sleep, got {other:?}"),
        }
    }

    #[test]
    fn ceiling_doubles_up_to_the_cap_without_overflow() {
        let config = RetryConfig::default();
        assert_eq!(backoff_ceiling_ms(&config, 1), 200);
        assert_eq!(backoff_ceiling_ms(&config, 2), 400);
        assert_eq!(backoff_ceiling_ms(&config, 7), 12_800);
        assert_eq!(backoff_ceiling_ms(&config, 8), 20_000);
        assert_eq!(backoff_ceiling_ms(&config, u32::MAX), 20_000);
        let huge = RetryConfig { base_ms: u64::MAX, cap_ms: u64::MAX, ..config };
        assert_eq!(backoff_ceiling_ms(&huge, 70), u64::MAX);
    }

    #[test]
    fn backs_off_with_full_jitter_then_resends_then_gives_the_result_inward() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, seen) = Script::new([Action::Call(call.clone())], testkit::idle());
        let mut layer = retry(RetryConfig::default(), inner, 1);
        assert_eq!(step(&mut layer, &catalog, 0, testkit::user("hi")).action, Action::Call(call.clone()));
        let mut now_ms = 100;
        for retry_number in 1..=3u64 {
            let s = step(&mut layer, &catalog, now_ms, error(&call, 503, None));
            let wait_ms = wait_of(&s.action, now_ms);
            assert!(wait_ms <= 200 << (retry_number - 1), "retry {retry_number} waited {wait_ms}");
            assert_eq!(s.notes.len(), 1);
            assert_eq!(s.notes[0].what, "backoff");
            assert_eq!(s.notes[0].detail.get("attempt"), Some(&Value::Int(retry_number as i64)));
            assert_eq!(s.turns, 0, "a layer takes no planner turns");
            now_ms += wait_ms;
            assert_eq!(step(&mut layer, &catalog, now_ms, Input::Wake).action, Action::Call(call.clone()));
            now_ms += 100;
        }
        // The fourth attempt fails too: attempts are spent, the planner hears of it.
        let s = step(&mut layer, &catalog, now_ms, error(&call, 503, None));
        assert_eq!(s.action, testkit::idle());
        assert_eq!(testkit::seen(&seen).len(), 2);
        assert!(matches!(&testkit::seen(&seen)[1], Input::Tool(r) if r.reply.status() == 503));
    }

    #[test]
    fn jitter_covers_the_range_and_stays_within_it() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let mut waits = Vec::new();
        for seed in 0..200 {
            let (inner, _) = Script::always(Action::Call(call.clone()));
            let mut layer = retry(RetryConfig::default(), inner, seed);
            step(&mut layer, &catalog, 0, testkit::user("hi"));
            waits.push(wait_of(&step(&mut layer, &catalog, 0, error(&call, 500, None)).action, 0));
        }
        assert!(waits.iter().all(|w| *w <= 200));
        assert!(waits.iter().any(|w| *w < 50) && waits.iter().any(|w| *w > 150), "{waits:?}");
    }

    #[test]
    fn honours_retry_after_as_a_floor() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, _) = Script::always(Action::Call(call.clone()));
        let mut layer = retry(RetryConfig::default(), inner, 2);
        step(&mut layer, &catalog, 0, testkit::user("hi"));
        let s = step(&mut layer, &catalog, 10, error(&call, 429, Some(5_000)));
        assert_eq!(wait_of(&s.action, 10), 5_000);

        let config = RetryConfig { honor_retry_after: false, ..RetryConfig::default() };
        let (inner, _) = Script::always(Action::Call(call.clone()));
        let mut layer = retry(config, inner, 2);
        step(&mut layer, &catalog, 0, testkit::user("hi"));
        assert!(wait_of(&step(&mut layer, &catalog, 10, error(&call, 429, Some(5_000))).action, 10) <= 200);
    }

    #[test]
    fn does_not_retry_what_cannot_succeed() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        for input in [error(&call, 404, None), error(&call, 401, None), reply(&call, Reply::Garbled("<h".into()))] {
            let (inner, seen) = Script::new([Action::Call(call.clone())], testkit::idle());
            let mut layer = retry(RetryConfig::default(), inner, 3);
            step(&mut layer, &catalog, 0, testkit::user("hi"));
            assert_eq!(step(&mut layer, &catalog, 5, input.clone()).action, testkit::idle());
            assert_eq!(testkit::seen(&seen)[1], input);
        }
    }

    #[test]
    fn retries_writes_only_as_configured() {
        let catalog = testkit::catalog();
        let bare = refund("o-1", 100);
        let keyed = ToolCall { idempotency_key: Some("idem-1".into()), ..bare.clone() };
        let cases = [
            (WriteRetry::OnlyWithKey, &bare, false),
            (WriteRetry::OnlyWithKey, &keyed, true),
            (WriteRetry::Never, &keyed, false),
            (WriteRetry::Always, &bare, true),
        ];
        for (policy, call, retried) in cases {
            let config = RetryConfig { retry_writes: policy, ..RetryConfig::default() };
            let (inner, _) = Script::new([Action::Call(call.clone())], testkit::idle());
            let mut layer = retry(config, inner, 4);
            step(&mut layer, &catalog, 0, testkit::user("hi"));
            let s = step(&mut layer, &catalog, 5, reply(call, Reply::Timeout));
            assert_eq!(matches!(s.action, Action::Sleep { .. }), retried, "{policy:?} {call:?}");
            if retried {
                assert_eq!(step(&mut layer, &catalog, 1_000, Input::Wake).action, Action::Call(call.clone()));
            }
        }
    }

    #[test]
    fn passes_success_and_foreign_wakes_inward() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, seen) =
            Script::new([Action::Call(call.clone()), Action::Idle { wake_at_ms: Some(50) }], testkit::idle());
        let mut layer = retry(RetryConfig { attempts_max: 0, ..RetryConfig::default() }, inner, 5);
        step(&mut layer, &catalog, 0, testkit::user("hi"));
        assert_eq!(
            step(&mut layer, &catalog, 5, ok(&call, order_body("o-1", 10))).action,
            Action::Idle { wake_at_ms: Some(50) }
        );
        step(&mut layer, &catalog, 50, Input::Wake);
        assert_eq!(testkit::seen(&seen).last(), Some(&Input::Wake));
    }

    #[test]
    fn same_seed_same_waits() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let run = |seed| {
            let (inner, _) = Script::always(Action::Call(call.clone()));
            let mut layer = retry(RetryConfig::default(), inner, seed);
            step(&mut layer, &catalog, 0, testkit::user("hi"));
            (0..3)
                .map(|_| {
                    let wait_ms = wait_of(&step(&mut layer, &catalog, 0, error(&call, 503, None)).action, 0);
                    step(&mut layer, &catalog, 0, Input::Wake);
                    wait_ms
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!((0..8).map(run).collect::<Vec<_>>().windows(2).filter(|w| w[0] == w[1]).count(), 7);
    }
}
