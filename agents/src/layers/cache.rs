//! Answers repeated reads from a cache, and serves stale entries when the tool fails.
//!
//! A read tool's well-formed answer is kept for `ttl_ms`. The same request (tool
//! and arguments) within that time is answered from the cache without reaching
//! the tool: the planner receives the stored reply with
//! `ToolResult::cache_age_ms = Some(age)`, the explicit staleness flag, and no
//! latency. When the tool fails transiently (5xx, 429, timeout) and
//! `serve_stale_on_error` is on, an entry up to `stale_max_ms` old is served in
//! place of the error, flagged the same way: stale data instead of no data, and
//! the planner can tell. A successful write clears the cache when
//! `invalidate_on_write` is on, since it may have changed what the reads said (a
//! refund changes the order's refunds). The engine's `authenticate` is never
//! cached.
//!
//! Decisions are noted as `("cache", "hit" | "stale_served" | "invalidated",
//! {tool, age_ms})`.

use agentsim_engine::tool::AUTHENTICATE;
use agentsim_engine::{Action, Agent, AgentCx, Input, TimeMs, ToolCall, ToolKind, ToolResult, Value};
use serde::{Deserialize, Serialize};

use crate::{catalog, notes};

/// Cache answers given in a row within one step before the next call goes to the
/// tool anyway (a planner re-reading the same cached record is looping).
pub const HITS_IN_STEP_MAX: u32 = 8;

/// How the [`Cache`] layer caches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// How long an entry answers requests (default 60 s).
    pub ttl_ms: TimeMs,
    /// Serve an older entry, flagged stale, when the tool fails transiently
    /// (default true).
    pub serve_stale_on_error: bool,
    /// The oldest entry served on error (default 10 minutes).
    pub stale_max_ms: TimeMs,
    /// Entries kept; the oldest is dropped first (default 64).
    pub capacity: u32,
    /// Clear the cache after a successful write (default true).
    pub invalidate_on_write: bool,
    /// Read tools to cache, by name (default empty: every read tool).
    pub tools: Vec<String>,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            ttl_ms: 60_000,
            serve_stale_on_error: true,
            stale_max_ms: 600_000,
            capacity: 64,
            invalidate_on_write: true,
            tools: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    result: ToolResult,
    stored_at_ms: TimeMs,
}

/// A stack layer that caches read results.
pub struct Cache {
    inner: Box<dyn Agent>,
    config: CacheConfig,
    entries: Vec<Entry>,
}

impl Cache {
    /// Wraps `inner`. The cache draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: CacheConfig) -> Self {
        Self { inner, config, entries: Vec::new() }
    }

    fn cacheable(&self, call: &ToolCall, cx: &AgentCx<'_>) -> bool {
        let Some(def) = catalog::def(cx.catalog, call.tool) else { return false };
        def.kind == ToolKind::Read
            && def.name != AUTHENTICATE
            && (self.config.tools.is_empty() || self.config.tools.contains(&def.name))
    }

    fn entry(&self, call: &ToolCall) -> Option<&Entry> {
        self.entries.iter().find(|e| e.result.call.same_request(call))
    }

    /// The cached answer to `call`, flagged with its age, if one is at most `max_ms` old.
    fn answer(&self, call: &ToolCall, now_ms: TimeMs, max_ms: TimeMs) -> Option<ToolResult> {
        let entry = self.entry(call)?;
        let age_ms = now_ms.saturating_sub(entry.stored_at_ms);
        (age_ms <= max_ms).then(|| ToolResult {
            call: call.clone(),
            reply: entry.result.reply.clone(),
            latency_ms: 0,
            cache_age_ms: Some(age_ms),
        })
    }

    /// Learns from a result coming back from the tool; may replace a failure with
    /// a stale entry.
    fn observe(&mut self, result: ToolResult, cx: &mut AgentCx<'_>) -> ToolResult {
        let tool = result.call.tool;
        let well_formed = catalog::well_formed(cx.catalog, tool, cx.now_ms, &result.reply);
        if well_formed && catalog::is_write(cx.catalog, tool) && self.config.invalidate_on_write {
            if !self.entries.is_empty() {
                let count = notes::int(self.entries.len() as u64);
                cx.note("cache", "invalidated", Value::map([("entries", count)]));
            }
            self.entries.clear();
            return result;
        }
        if !self.cacheable(&result.call, cx) || result.cache_age_ms.is_some() {
            return result;
        }
        if well_formed {
            self.entries.retain(|e| !e.result.call.same_request(&result.call));
            if self.entries.len() >= self.config.capacity.max(1) as usize {
                self.entries.remove(0);
            }
            self.entries.push(Entry { result: result.clone(), stored_at_ms: cx.now_ms });
            return result;
        }
        if self.config.serve_stale_on_error
            && result.reply.is_transient()
            && let Some(stale) = self.answer(&result.call, cx.now_ms, self.config.stale_max_ms)
        {
            cx.note(
                "cache",
                "stale_served",
                Value::map([
                    ("tool", Value::str(catalog::name(cx.catalog, tool))),
                    ("age_ms", notes::int(stale.cache_age_ms.unwrap_or_default())),
                    ("status", notes::int(u64::from(result.reply.status()))),
                ]),
            );
            return stale;
        }
        result
    }
}

impl Agent for Cache {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let input = match input {
            Input::Tool(result) => Input::Tool(self.observe(result, cx)),
            other => other,
        };
        let mut action = self.inner.step(input, cx);
        for _ in 0..HITS_IN_STEP_MAX {
            let Action::Call(call) = &action else { return action };
            if !self.cacheable(call, cx) {
                return action;
            }
            let Some(hit) = self.answer(call, cx.now_ms, self.config.ttl_ms) else { return action };
            cx.note(
                "cache",
                "hit",
                Value::map([
                    ("tool", Value::str(catalog::name(cx.catalog, call.tool))),
                    ("age_ms", notes::int(hit.cache_age_ms.unwrap_or_default())),
                ]),
            );
            action = self.inner.step(Input::Tool(hit), cx);
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, error, lookup, ok, order_body, refund, step};

    #[test]
    fn a_fresh_entry_answers_without_the_tool_and_says_how_old_it_is() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, seen) = Script::new([Action::Call(call.clone())], testkit::idle());
        let mut layer = Cache::new(inner, CacheConfig { ttl_ms: 1_000, ..CacheConfig::default() });
        let s = step(&mut layer, &catalog, 0, ok(&call, order_body("o-1", 5)));
        // The second identical call is answered from the cache in the same step.
        assert_eq!(s.action, testkit::idle());
        assert_eq!(s.notes[0].what, "hit");
        let seen = testkit::seen(&seen);
        let Input::Tool(hit) = &seen[1] else { panic!() };
        assert_eq!(hit.cache_age_ms, Some(0));
        assert_eq!(hit.latency_ms, 0);
    }

    #[test]
    fn an_expired_entry_goes_to_the_tool_and_serves_stale_on_error() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let (inner, seen) = Script::always(Action::Call(call.clone()));
        let mut layer = Cache::new(inner, CacheConfig { ttl_ms: 1_000, ..CacheConfig::default() });
        step(&mut layer, &catalog, 0, ok(&call, order_body("o-1", 5)));
        // Within the TTL, the call is served from cache (up to the per-step bound).
        let s = step(&mut layer, &catalog, 500, testkit::user("x"));
        assert_eq!(s.notes.len(), HITS_IN_STEP_MAX as usize);
        // After the TTL the call goes out; a 503 is replaced by the stale entry.
        let s = step(&mut layer, &catalog, 5_000, testkit::user("y"));
        assert!(s.notes.is_empty());
        assert_eq!(s.action, Action::Call(call.clone()));
        let s = step(&mut layer, &catalog, 5_100, error(&call, 503, None));
        assert_eq!(s.notes[0].what, "stale_served");
        let Some(Input::Tool(stale)) = testkit::seen(&seen).last().cloned() else { panic!() };
        assert_eq!(stale.cache_age_ms, Some(5_100));
        assert!(stale.reply.is_ok());
        // A 404 is not replaced.
        step(&mut layer, &catalog, 5_200, error(&call, 404, None));
        let Some(Input::Tool(r)) = testkit::seen(&seen).last().cloned() else { panic!() };
        assert_eq!(r.reply.status(), 404);
    }

    #[test]
    fn a_write_invalidates() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let write = refund("o-1", 5);
        let (inner, _) = Script::always(Action::Call(call.clone()));
        let mut layer = Cache::new(inner, CacheConfig::default());
        step(&mut layer, &catalog, 0, ok(&call, order_body("o-1", 5)));
        let s = step(&mut layer, &catalog, 10, ok(&write, Value::map([("refund_id", Value::str("r"))])));
        assert_eq!(s.notes[0].what, "invalidated");
        assert_eq!(s.action, Action::Call(call));
        assert_eq!(s.notes.len(), 1, "no hit after the invalidation");
    }
}
