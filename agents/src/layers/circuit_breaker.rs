//! Stops calling a tool that keeps failing, and tries it again later.
//!
//! In resilience4j's and Polly's vocabulary: each tool has a circuit that is
//! **closed** (calls pass; their outcomes fill a sliding window of the last
//! `window` calls), **open** (calls are refused at once, without reaching the
//! tool, for `break_ms`) or **half-open** (after the break, `half_open_probes`
//! trial calls pass; if they all succeed the circuit closes, a failure opens it
//! again). A closed circuit opens when the window holds at least
//! `minimum_throughput` calls and at least `failure_rate_pct` percent of them
//! failed. A failure is a transient reply (408, 429, 5xx, timeout); a 4xx means
//! the service is up and counts as a success.
//!
//! A refused call is answered with `Input::Blocked` (layer `circuit_breaker`) and
//! the planner decides again, at most [`REFUSALS_MAX`] times in a row in one step
//! before the layer halts the run. Transitions are noted as `("circuit_breaker",
//! "opened" | "half_open" | "closed" | "rejected", {tool, ...})`.
//!
//! Place it tool-side of a retry layer (listed after it) to count every attempt
//! and cut retries short while the circuit is open.

use agentsim_engine::{Action, Agent, AgentCx, Finish, Input, TimeMs, ToolCall, ToolId, Value};
use serde::{Deserialize, Serialize};

use crate::outcomes::Outcomes;
use crate::{catalog, notes};

/// Why the breaker refused a call: the circuit of its tool is open or
/// half-open with its trial calls out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The circuit is open.
    Open {
        /// The tool.
        tool: String,
        /// When the break ends (virtual time, ms).
        until_ms: TimeMs,
    },
    /// The circuit is half-open and its trial calls are out.
    HalfOpen {
        /// The tool.
        tool: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Open { tool, until_ms } => {
                write!(f, "{tool}: circuit open until {until_ms} ms (too many recent failures)")
            }
            Refusal::HalfOpen { tool } => write!(f, "{tool}: circuit half-open, waiting for its trial call"),
        }
    }
}

/// Refused calls in a row within one step before the breaker halts the run.
pub const REFUSALS_MAX: u32 = 8;

/// When a [`CircuitBreaker`] opens and how long it stays open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerConfig {
    /// Percent of failed calls in the window at which the circuit opens (default 50).
    pub failure_rate_pct: u32,
    /// Calls in the sliding window (default 10).
    pub window: u32,
    /// Calls the window must hold before the rate is judged (default 5).
    pub minimum_throughput: u32,
    /// How long an open circuit refuses calls (default 30 s).
    pub break_ms: TimeMs,
    /// Trial calls let through when half-open (default 1).
    pub half_open_probes: u32,
    /// Tools with a circuit, by name (default empty: every tool).
    pub tools: Vec<String>,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failure_rate_pct: 50,
            window: 10,
            minimum_throughput: 5,
            break_ms: 30_000,
            half_open_probes: 1,
            tools: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Closed,
    Open { until_ms: TimeMs },
    HalfOpen { sent: u32, succeeded: u32 },
}

#[derive(Clone, Debug)]
struct Circuit {
    state: State,
    /// Outcomes of the latest calls while closed (bits for a window of up
    /// to 64 calls: no allocation).
    window: Outcomes,
}

impl Circuit {
    /// A closed circuit with an empty window of `window` calls.
    fn new(window: u32) -> Self {
        Circuit { state: State::Closed, window: Outcomes::new(window) }
    }
}

/// A stack layer with one circuit per tool.
pub struct CircuitBreaker {
    inner: Box<dyn Agent>,
    config: BreakerConfig,
    /// The circuit of the first tool called, inline (most stacks call one
    /// tool or a few: a circuit then costs no allocation).
    first: Option<(ToolId, Circuit)>,
    /// One circuit per other tool called, in order of first call: a catalog
    /// has a few tools, so a scan beats a tree (nothing iterates them).
    circuits: Vec<(ToolId, Circuit)>,
}

impl CircuitBreaker {
    /// Wraps `inner`. The breaker draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: BreakerConfig) -> Self {
        Self { inner, config, first: None, circuits: Vec::new() }
    }

    /// Whether `tool` has a circuit: every tool when the list is empty (the
    /// common case, tested inline).
    #[inline]
    fn guarded(&self, tool: ToolId, cx: &AgentCx<'_>) -> bool {
        self.config.tools.is_empty() || self.config.tools.contains(&catalog::name(cx.catalog, tool))
    }

    /// The tool's name, for a note (written only when a circuit changes).
    fn name(tool: ToolId, cx: &AgentCx<'_>) -> Value {
        Value::str(catalog::name(cx.catalog, tool))
    }

    #[inline]
    fn circuit(&mut self, tool: ToolId) -> &mut Circuit {
        match self.first.as_ref().map(|(first, _)| *first) {
            None => &mut self.first.insert((tool, Circuit::new(self.config.window))).1,
            Some(first) if first == tool => &mut self.first.as_mut().expect("the first circuit is there").1,
            Some(_) => self.other_circuit(tool),
        }
    }

    /// The circuit of `tool`, which is not the first tool called.
    fn other_circuit(&mut self, tool: ToolId) -> &mut Circuit {
        let index = match self.circuits.iter().position(|(t, _)| *t == tool) {
            Some(index) => index,
            None => {
                self.circuits.push((tool, Circuit::new(self.config.window)));
                self.circuits.len() - 1
            }
        };
        &mut self.circuits[index].1
    }

    /// Records the outcome of a call that came back.
    fn record(&mut self, tool: ToolId, failed: bool, cx: &mut AgentCx<'_>) {
        // Copied out, so the circuit can be borrowed from `self` (the tool list
        // is not needed here, and cloning it was an allocation per answer).
        let BreakerConfig { window, minimum_throughput, failure_rate_pct, break_ms, half_open_probes, .. } =
            self.config;
        let now_ms = cx.now_ms;
        let circuit = self.circuit(tool);
        match circuit.state {
            State::Closed => {
                circuit.window.push(failed, window);
                let calls = circuit.window.calls();
                let failures = circuit.window.failures();
                if calls >= u64::from(minimum_throughput.max(1))
                    && failures * 100 >= u64::from(failure_rate_pct) * calls
                {
                    circuit.state = State::Open { until_ms: now_ms.saturating_add(break_ms) };
                    circuit.window.clear();
                    cx.note(
                        "circuit_breaker",
                        "opened",
                        Value::map([
                            ("tool", Self::name(tool, cx)),
                            ("failures", notes::int(failures)),
                            ("calls", notes::int(calls)),
                            ("until_ms", notes::int(now_ms.saturating_add(break_ms))),
                        ]),
                    );
                }
            }
            State::HalfOpen { sent, succeeded } => {
                if failed {
                    circuit.state = State::Open { until_ms: now_ms.saturating_add(break_ms) };
                    cx.note(
                        "circuit_breaker",
                        "opened",
                        Value::map([("tool", Self::name(tool, cx)), ("probe", Value::Bool(true))]),
                    );
                } else if succeeded + 1 >= half_open_probes.max(1) {
                    circuit.state = State::Closed;
                    cx.note("circuit_breaker", "closed", Value::map([("tool", Self::name(tool, cx))]));
                } else {
                    circuit.state = State::HalfOpen { sent, succeeded: succeeded + 1 };
                }
            }
            // A late answer to a call sent before the circuit opened.
            State::Open { .. } => {}
        }
    }

    /// Whether `call` may go out now; updates the circuit (open → half-open, probes).
    fn admit(&mut self, call: &ToolCall, cx: &mut AgentCx<'_>) -> Result<(), Refusal> {
        if !self.guarded(call.tool, cx) {
            return Ok(());
        }
        let probes = self.config.half_open_probes.max(1);
        let now_ms = cx.now_ms;
        let circuit = self.circuit(call.tool);
        if let State::Open { until_ms } = circuit.state {
            if now_ms < until_ms {
                return Err(Refusal::Open { tool: catalog::name(cx.catalog, call.tool), until_ms });
            }
            circuit.state = State::HalfOpen { sent: 0, succeeded: 0 };
            cx.note("circuit_breaker", "half_open", Value::map([("tool", Self::name(call.tool, cx))]));
        }
        if let State::HalfOpen { sent, succeeded } = circuit.state {
            if sent >= probes {
                return Err(Refusal::HalfOpen { tool: catalog::name(cx.catalog, call.tool) });
            }
            circuit.state = State::HalfOpen { sent: sent + 1, succeeded };
        }
        Ok(())
    }
}

impl Agent for CircuitBreaker {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        if let Input::Tool(result) = &input
            && self.guarded(result.call.tool, cx)
        {
            self.record(result.call.tool, result.reply.is_transient(), cx);
        }
        let mut action = self.inner.step(input, cx);
        for _ in 0..REFUSALS_MAX {
            let Action::Call(call) = &action else { return action };
            let Err(refusal) = self.admit(call, cx) else { return action };
            let reason = refusal.to_string();
            let tool = catalog::name(cx.catalog, call.tool);
            cx.note("circuit_breaker", "rejected", Value::map([("tool", Value::str(tool))]));
            let blocked = Input::Blocked { call: call.clone(), layer: "circuit_breaker", reason };
            action = self.inner.step(blocked, cx);
        }
        match &action {
            Action::Call(call) if self.admit(call, cx).is_err() => Action::Finish(Finish::Halted {
                layer: "circuit_breaker",
                reason: format!("{REFUSALS_MAX} calls refused by open circuits in a row"),
            }),
            _ => action,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, error, lookup, ok, order_body, step};

    fn breaker(config: BreakerConfig) -> (CircuitBreaker, testkit::Seen, ToolCall) {
        let call = lookup("o-1");
        let (inner, seen) = Script::always(Action::Call(call.clone()));
        (CircuitBreaker::new(inner, config), seen, call)
    }

    fn whats(s: &testkit::Stepped) -> Vec<&'static str> {
        s.notes.iter().map(|n| n.what).collect()
    }

    #[test]
    fn opens_after_the_failure_rate_then_half_opens_after_the_break() {
        let catalog = testkit::catalog();
        let config = BreakerConfig { window: 4, minimum_throughput: 4, break_ms: 10_000, ..BreakerConfig::default() };
        let (mut layer, seen, call) = breaker(config);
        step(&mut layer, &catalog, 0, testkit::user("hi"));
        // Three failures: below the minimum throughput, still closed.
        for t in 1..=3 {
            assert_eq!(step(&mut layer, &catalog, t, error(&call, 503, None)).action, Action::Call(call.clone()));
        }
        // The fourth fills the window at 100% failures: open. The planner's next
        // call is refused before it reaches the tool.
        let s = step(&mut layer, &catalog, 4, error(&call, 503, None));
        assert_eq!(whats(&s)[..2], ["opened", "rejected"]);
        assert!(matches!(s.action, Action::Finish(Finish::Halted { layer: "circuit_breaker", .. })));
        assert!(testkit::seen(&seen).iter().any(|i| matches!(i, Input::Blocked { layer: "circuit_breaker", .. })));
        // Still open at 10,003 ms; half-open at 10,004 ms: one probe passes.
        let s = step(&mut layer, &catalog, 10_003, testkit::user("again"));
        assert!(matches!(s.action, Action::Finish(_)));
        let s = step(&mut layer, &catalog, 10_004, testkit::user("again"));
        assert_eq!(s.action, Action::Call(call.clone()));
        assert_eq!(whats(&s), ["half_open"]);
        // The probe succeeds: closed.
        let s = step(&mut layer, &catalog, 10_100, ok(&call, order_body("o-1", 5)));
        assert_eq!(whats(&s), ["closed"]);
        assert_eq!(s.action, Action::Call(call.clone()));
    }

    #[test]
    fn a_failed_probe_opens_again_and_client_errors_are_not_failures() {
        let catalog = testkit::catalog();
        let config = BreakerConfig {
            failure_rate_pct: 100,
            window: 2,
            minimum_throughput: 2,
            break_ms: 100,
            ..BreakerConfig::default()
        };
        let (mut layer, _, call) = breaker(config);
        for t in 0..10 {
            let s = step(&mut layer, &catalog, t, error(&call, 404, None));
            assert!(s.notes.is_empty(), "a 404 is the service working");
        }
        step(&mut layer, &catalog, 10, error(&call, 500, None));
        let s = step(&mut layer, &catalog, 11, error(&call, 500, None));
        assert_eq!(whats(&s)[0], "opened");
        let s = step(&mut layer, &catalog, 111, testkit::user("x"));
        assert_eq!(whats(&s), ["half_open"]);
        let s = step(&mut layer, &catalog, 112, error(&call, 503, None));
        assert_eq!(whats(&s)[0], "opened");
    }

    #[test]
    fn unguarded_tools_pass() {
        let catalog = testkit::catalog();
        let config = BreakerConfig {
            window: 1,
            minimum_throughput: 1,
            tools: vec!["refund_order".into()],
            ..BreakerConfig::default()
        };
        let (mut layer, _, call) = breaker(config);
        for t in 0..5 {
            assert_eq!(step(&mut layer, &catalog, t, error(&call, 503, None)).action, Action::Call(call.clone()));
        }
    }
}
