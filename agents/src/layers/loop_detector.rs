//! Detects a planner stuck in a loop and breaks it.
//!
//! An agent in a loop burns turns, tokens and tool calls for ever: the same call
//! failing again and again, the same lookup returning the same answer, or two calls
//! taking turns (call A, get a result, call B, get an error, call A again...). This
//! layer watches the planner's calls and their final results (it sits planner-side
//! of any retry layer, so retries are not counted) and, when a pattern repeats often
//! enough, withholds the result and tells the planner it is looping
//! (`Input::Blocked`), which is what a model needs to try something else. If the
//! planner loops again, it stops the run (`Finish::Halted`) rather than let it burn
//! the budget.
//!
//! A run of failures that were all transient (429, 5xx, timeouts: an outage the
//! planner may be rightly waiting out) is still blocked, but does not count
//! toward the halt: otherwise an agent that met one outage would be stopped at
//! its first real loop, with no warning left.
//!
//! The history is kept as counters over the last two entries, so it is bounded
//! whatever the thresholds are.

use std::borrow::Cow;

use agentsim_engine::{Action, Agent, AgentCx, Args, Finish, Input, Reply, ToolId, ToolResult, Value};
use serde::{Deserialize, Serialize};

use crate::print::Print;
use crate::{catalog, notes};

/// When the [`LoopDetector`] steps in. A threshold of 0 disables its trigger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopConfig {
    /// The same request with the same result this many times in a row (default 4).
    pub same_call_same_result: u32,
    /// The same request failing this many times in a row, whatever the errors
    /// (default 3).
    pub same_call_failing: u32,
    /// Two (request, result) pairs alternating for this many cycles (default 6).
    pub alternating_cycles: u32,
    /// Halt the run at this trigger; earlier triggers only block (default 2; 0 never
    /// halts).
    pub halt_after: u32,
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self { same_call_same_result: 4, same_call_failing: 3, alternating_cycles: 6, halt_after: 2 }
    }
}

/// One planner call and the class of its final result, as fingerprints: the
/// detector only ever asks whether two entries are the same, so it keeps neither
/// a copy of the call nor a rendering of the result.
#[derive(Clone, Debug)]
struct Entry {
    /// The request's tool and arguments, shared with the call (the
    /// idempotency key is transport, not content, as in
    /// `ToolCall::same_request`). Compared as values, which is what comparing
    /// their fingerprints did, without the walk that makes a fingerprint
    /// (arguments shared by two calls compare by address).
    tool: ToolId,
    args: Args,
    /// The reply's status.
    status: u16,
    /// Fingerprint of what came back besides the status: the body, the error
    /// message or the garbled text. (Not of `Reply` itself: a 429's `Retry-After`
    /// changes with time, and a loop on a rate limit is still a loop.)
    body: u64,
    /// Not a well-formed success.
    failed: bool,
    /// A failure worth waiting out (`Reply::is_transient`).
    transient: bool,
    /// The result in a few words, for the reason the planner is told (so it can
    /// still tell a 401 from a 503 after the result itself was withheld).
    /// Borrowed when fixed, so a success costs no allocation.
    summary: Cow<'static, str>,
}

impl Entry {
    fn new(result: &ToolResult, cx: &AgentCx<'_>) -> Self {
        let body = match &result.reply {
            // The engine's `fingerprint` of `(0u8, body)`, `(1u8, message)`, `2u8`
            // and `(3u8, text)`, computed with the writes inlined.
            Reply::Ok(body) => Print::tagged(0, body),
            Reply::Error { message, .. } => Print::tagged_str(1, message),
            Reply::Timeout => Print::tag(2),
            Reply::Garbled(text) => Print::tagged_str(3, text),
        };
        let failed = !catalog::well_formed(cx.catalog, result.call.tool, cx.now_ms, &result.reply);
        let summary = match &result.reply {
            Reply::Ok(_) if failed => Cow::Borrowed("a malformed response"),
            Reply::Ok(_) => Cow::Borrowed("200"),
            Reply::Error { status, message, .. } => Cow::Owned(format!("{status} {message}")),
            Reply::Timeout => Cow::Borrowed("a timeout"),
            Reply::Garbled(_) => Cow::Borrowed("an unparseable response"),
        };
        let (tool, args) = (result.call.tool, result.call.args.clone());
        Self {
            tool,
            args,
            status: result.reply.status(),
            body,
            failed,
            transient: result.reply.is_transient(),
            summary,
        }
    }

    fn same_request(&self, other: &Entry) -> bool {
        self.tool == other.tool && self.args == other.args
    }

    fn same(&self, other: &Entry) -> bool {
        self.same_request(other)
            && self.status == other.status
            && self.body == other.body
            && self.failed == other.failed
    }
}

/// Run lengths of the three patterns, ending at the newest entry.
#[derive(Clone, Debug, Default)]
struct History {
    /// The newest entry and the one before it.
    last: Option<Entry>,
    before_last: Option<Entry>,
    /// Entries in a row equal to the newest.
    same_run: u32,
    /// Failures in a row of the newest entry's request (0 if it succeeded).
    failing_run: u32,
    /// Whether every failure of that run was transient.
    failing_all_transient: bool,
    /// Length of the newest stretch of the form A, B, A, B, ... with A ≠ B.
    alternating_run: u32,
}

impl History {
    fn push(&mut self, entry: Entry) {
        let (same_run, failing_run, alternating_run) = match &self.last {
            None => (1, u32::from(entry.failed), 1),
            Some(last) => {
                let same_run = if entry.same(last) { self.same_run.saturating_add(1) } else { 1 };
                let failing_run = match (entry.failed, last.failed && entry.same_request(last)) {
                    (false, _) => 0,
                    (true, true) => self.failing_run.saturating_add(1),
                    (true, false) => 1,
                };
                let alternating_run = if entry.same(last) {
                    1
                } else if self.alternating_run >= 2 && self.before_last.as_ref().is_some_and(|b| entry.same(b)) {
                    self.alternating_run.saturating_add(1)
                } else {
                    2
                };
                (same_run, failing_run, alternating_run)
            }
        };
        self.failing_all_transient = match failing_run {
            0 => false,
            1 => entry.transient,
            _ => self.failing_all_transient && entry.transient,
        };
        self.same_run = same_run;
        self.failing_run = failing_run;
        self.alternating_run = alternating_run;
        self.before_last = self.last.take();
        self.last = Some(entry);
    }

    /// The first pattern that reached its threshold.
    fn trigger(&self, config: &LoopConfig) -> Option<Trigger> {
        let reached = |run: u32, threshold: u32| threshold > 0 && run >= threshold;
        if reached(self.failing_run, config.same_call_failing) {
            let last = self.last.as_ref().map_or("", |e| e.summary.as_ref());
            let reason = format!("the same call failed {} times in a row (last: {last})", self.failing_run);
            // An outage waited out is blocked like any loop but is no strike.
            let strike = !self.failing_all_transient;
            Some(Trigger { kind: "same_call_failing", count: self.failing_run, reason, strike })
        } else if reached(self.same_run, config.same_call_same_result) {
            let reason = format!("the same call returned the same result {} times in a row", self.same_run);
            Some(Trigger { kind: "same_call_same_result", count: self.same_run, reason, strike: true })
        } else if reached(self.alternating_run / 2, config.alternating_cycles) {
            let cycles = self.alternating_run / 2;
            let reason = format!("two calls alternated with the same results for {cycles} cycles");
            Some(Trigger { kind: "alternating", count: cycles, reason, strike: true })
        } else {
            None
        }
    }
}

/// A pattern that reached its threshold.
struct Trigger {
    kind: &'static str,
    /// The run's length (cycles for `alternating`).
    count: u32,
    /// What the planner is told.
    reason: String,
    /// Whether it counts toward `halt_after`.
    strike: bool,
}

/// A stack layer that blocks, then halts, a planner repeating itself.
pub struct LoopDetector {
    inner: Box<dyn Agent>,
    config: LoopConfig,
    history: History,
    triggers: u32,
}

impl LoopDetector {
    /// Wraps `inner`. The detector draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: LoopConfig) -> Self {
        Self { inner, config, history: History::default(), triggers: 0 }
    }
}

impl Agent for LoopDetector {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let mut input = input;
        if let Input::Tool(result) = &input {
            self.history.push(Entry::new(result, cx));
            if let Some(Trigger { kind, count, reason, strike }) = self.history.trigger(&self.config) {
                self.history = History::default();
                if strike {
                    self.triggers = self.triggers.saturating_add(1);
                }
                let detail = Value::map([("kind", Value::str(kind)), ("count", notes::int(u64::from(count)))]);
                cx.note("loop_detector", "loop_detected", detail);
                if self.config.halt_after > 0 && self.triggers >= self.config.halt_after {
                    return Action::Finish(Finish::Halted { layer: "loop_detector", reason });
                }
                input = Input::Blocked { call: result.call.clone(), layer: "loop_detector", reason };
            }
        }
        self.inner.step(input, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, error, lookup, news, ok, order_body, step};

    fn detector(config: LoopConfig) -> (LoopDetector, testkit::Seen) {
        let (inner, seen) = Script::always(testkit::idle());
        (LoopDetector::new(inner, config), seen)
    }

    /// Feeds `inputs` and returns the index of the first one that triggered.
    fn first_trigger(layer: &mut LoopDetector, inputs: &[Input]) -> Option<usize> {
        let catalog = testkit::catalog();
        inputs.iter().position(|input| !step(layer, &catalog, 0, input.clone()).notes.is_empty())
    }

    #[test]
    fn same_call_failing() {
        let (mut layer, seen) = detector(LoopConfig::default());
        let call = lookup("o-1");
        let inputs = [error(&call, 503, None), error(&call, 500, None), error(&call, 503, None)];
        assert_eq!(first_trigger(&mut layer, &inputs), Some(2));
        let seen = testkit::seen(&seen);
        assert!(matches!(&seen[2], Input::Blocked { layer: "loop_detector", call: c, .. } if c.same_request(&call)));
    }

    #[test]
    fn failures_of_different_calls_do_not_count_together() {
        let (mut layer, _) = detector(LoopConfig::default());
        let inputs: Vec<Input> = (0..10).map(|i| error(&lookup(&format!("o-{i}")), 503, None)).collect();
        assert_eq!(first_trigger(&mut layer, &inputs), None);
    }

    #[test]
    fn same_call_same_result() {
        let (mut layer, _) = detector(LoopConfig::default());
        let call = lookup("o-1");
        let inputs = vec![ok(&call, order_body("o-1", 10)); 6];
        assert_eq!(first_trigger(&mut layer, &inputs), Some(3));
    }

    #[test]
    fn alternating_pairs() {
        let (mut layer, _) = detector(LoopConfig::default());
        let (a, b) = (lookup("o-1"), news());
        let pair = [ok(&a, order_body("o-1", 10)), error(&b, 404, None)];
        let inputs: Vec<Input> = pair.iter().cycle().take(20).cloned().collect();
        // Six cycles are twelve results.
        assert_eq!(first_trigger(&mut layer, &inputs), Some(11));
    }

    #[test]
    fn changing_results_are_not_a_loop() {
        let (mut layer, _) = detector(LoopConfig::default());
        let call = lookup("o-1");
        let inputs: Vec<Input> = (0..20).map(|i| ok(&call, order_body("o-1", i))).collect();
        assert_eq!(first_trigger(&mut layer, &inputs), None);
    }

    #[test]
    fn halts_at_the_configured_trigger() {
        let catalog = testkit::catalog();
        let (mut layer, _) = detector(LoopConfig::default());
        let call = lookup("o-1");
        let mut actions = Vec::new();
        for _ in 0..6 {
            actions.push(step(&mut layer, &catalog, 0, error(&call, 401, None)).action);
        }
        // History resets at the first trigger, so the second comes three failures later.
        assert_eq!(actions[2], testkit::idle());
        assert!(matches!(&actions[5], Action::Finish(Finish::Halted { layer: "loop_detector", .. })));

        let (mut never, _) = detector(LoopConfig { halt_after: 0, ..LoopConfig::default() });
        for _ in 0..30 {
            assert_eq!(step(&mut never, &catalog, 0, error(&call, 401, None)).action, testkit::idle());
        }
    }

    #[test]
    fn an_outage_waited_out_is_blocked_but_is_no_strike() {
        let catalog = testkit::catalog();
        let (mut layer, seen) = detector(LoopConfig::default());
        let call = lookup("o-1");
        // Thirty 503s: blocked every third, never halted.
        for i in 0..30 {
            let stepped = step(&mut layer, &catalog, 0, error(&call, 503, None));
            assert_eq!(stepped.action, testkit::idle(), "503 number {i}");
            assert_eq!(!stepped.notes.is_empty(), i % 3 == 2, "503 number {i}");
        }
        assert!(matches!(testkit::seen(&seen)[2], Input::Blocked { layer: "loop_detector", .. }));
        // A run mixing a transient failure with a real one counts, and so does a
        // real loop after the outage: the first is blocked, the second halts.
        let mixed = [error(&call, 503, None), error(&call, 401, None), error(&call, 401, None)];
        assert_eq!(step(&mut layer, &catalog, 0, mixed[0].clone()).action, testkit::idle());
        assert_eq!(step(&mut layer, &catalog, 0, mixed[1].clone()).action, testkit::idle());
        assert_eq!(step(&mut layer, &catalog, 0, mixed[2].clone()).action, testkit::idle());
        let mut last = testkit::idle();
        for _ in 0..3 {
            last = step(&mut layer, &catalog, 0, error(&call, 401, None)).action;
        }
        assert!(matches!(last, Action::Finish(Finish::Halted { layer: "loop_detector", .. })), "{last:?}");
    }

    #[test]
    fn zero_thresholds_disable() {
        let config =
            LoopConfig { same_call_same_result: 0, same_call_failing: 0, alternating_cycles: 0, halt_after: 1 };
        let (mut layer, _) = detector(config);
        let call = lookup("o-1");
        assert_eq!(first_trigger(&mut layer, &vec![error(&call, 503, None); 50]), None);
    }
}
