//! Faults and latencies as Rust values: readable constructors over the
//! engine's own types (`Fault`, `Schedule`, `Latency`), checked when the world
//! is built by the same code that checks a scenario file, so a value refused
//! in a file is refused here, in the same words.

use agentsim_engine::{Fault, FaultRule, Latency, MalformedKind, Probability, Schedule, TimeMs, ToolConfig};

use super::error::{BuildError, BuildErrorKind};

/// One fault rule of a tool: what happens, how often, and when.
///
/// ```
/// use agentsim_worlds::builder::FaultSpec;
/// // A fifth of calls answer 503; every call fails in the first minute.
/// let flaky = FaultSpec::error(503).rate(0.2);
/// let outage = FaultSpec::outage(0, 60_000);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FaultSpec {
    fault: Fault,
    when: Schedule,
    /// Checked when the world is built (a chain of methods cannot fail).
    rate: f64,
}

impl FaultSpec {
    /// A rule for any of the engine's faults, on every call, always.
    pub fn of(fault: Fault) -> Self {
        FaultSpec { fault, when: Schedule::Always, rate: 1.0 }
    }

    /// An HTTP error status (400..=599) on every call; `rate` makes it rarer.
    pub fn error(status: u16) -> Self {
        FaultSpec::of(Fault::Error { status, retry_after_ms: None })
    }

    /// The service is down (503 on every call) from `from_ms` to `to_ms`.
    pub fn outage(from_ms: TimeMs, to_ms: TimeMs) -> Self {
        FaultSpec::error(503).during(from_ms, to_ms)
    }

    /// No answer: the call times out after the tool's timeout.
    pub fn timeout() -> Self {
        FaultSpec::of(Fault::Timeout)
    }

    /// For a write: applied, then the answer is lost (the caller sees a
    /// timeout); a blind retry applies it twice.
    pub fn lost_answer() -> Self {
        FaultSpec::of(Fault::CommitThenTimeout)
    }

    /// For a write: applied twice without being asked (a redelivered message).
    pub fn duplicate_effect() -> Self {
        FaultSpec::of(Fault::DuplicateEffect)
    }

    /// `extra_ms` more latency.
    pub fn slow(extra_ms: TimeMs) -> Self {
        FaultSpec::of(Fault::Latency { extra_ms })
    }

    /// An answer that does not match the tool's schema.
    pub fn malformed(kind: MalformedKind) -> Self {
        FaultSpec::of(Fault::Malformed(kind))
    }

    /// The session expires: 401 until the agent calls `authenticate`.
    pub fn session_expiry() -> Self {
        FaultSpec::of(Fault::AuthExpired)
    }

    /// An answer from `lag_ms` ago (a lagging replica).
    pub fn stale(lag_ms: TimeMs) -> Self {
        FaultSpec::of(Fault::Stale { lag_ms })
    }

    /// A token bucket of `capacity` calls, one back every `refill_ms`; 429 when
    /// empty. A state, not a draw: [`FaultSpec::rate`] does not apply.
    pub fn rate_limit(capacity: u32, refill_ms: TimeMs) -> Self {
        FaultSpec::of(Fault::RateLimit { capacity, refill_ms })
    }

    /// The chance per call while the rule is active, in [0, 1] (default 1).
    pub fn rate(mut self, probability: f64) -> Self {
        self.rate = probability;
        self
    }

    /// Active only from `from_ms` (inclusive) to `to_ms` (exclusive).
    pub fn during(mut self, from_ms: TimeMs, to_ms: TimeMs) -> Self {
        self.when = Schedule::Window { from_ms, to_ms };
        self
    }

    /// Active from the tool's `n`-th call on (counting from 1).
    pub fn after_calls(mut self, n: u64) -> Self {
        self.when = Schedule::AfterCalls { n };
        self
    }

    /// Active in bursts of `burst_ms` every `period_ms`, the first at 0.
    pub fn bursts(mut self, period_ms: TimeMs, burst_ms: TimeMs) -> Self {
        self.when = Schedule::Periodic { period_ms, burst_ms, offset_ms: 0 };
        self
    }

    /// For an error: the `Retry-After` hint sent with it. No effect on other
    /// faults.
    pub fn retry_after_ms(mut self, ms: TimeMs) -> Self {
        if let Fault::Error { retry_after_ms, .. } = &mut self.fault {
            *retry_after_ms = Some(ms);
        }
        self
    }

    /// The engine's rule, its probability checked (the rest is checked with
    /// the tool's whole configuration, [`checked`]).
    pub(crate) fn rule(&self, tool: &str) -> Result<FaultRule, BuildError> {
        let probability = Probability::try_from(self.rate)
            .map_err(|e| BuildError::new(BuildErrorKind::BadFault, tool, format!("field `probability`: {e}")))?;
        Ok(FaultRule { fault: self.fault.clone(), when: self.when.clone(), probability })
    }
}

/// Latency fixed at `ms`.
pub fn fixed_ms(ms: TimeMs) -> Latency {
    Latency::Fixed { ms }
}

/// Latency uniform in `[min_ms, max_ms]`.
pub fn uniform_ms(min_ms: TimeMs, max_ms: TimeMs) -> Latency {
    Latency::Uniform { min_ms, max_ms }
}

/// Log-normal latency with this median and 99th percentile (a network
/// service's long tail).
pub fn log_normal_ms(median_ms: TimeMs, p99_ms: TimeMs) -> Latency {
    Latency::LogNormal { median_ms, p99_ms }
}

/// `config` as a scenario file would give it: written in the scenario
/// format and read back, so that every range the file format checks (an HTTP
/// status, a window, a latency's bounds, ten years at most) is checked here
/// by the same code, with its message.
pub(crate) fn checked(tool: &str, config: ToolConfig) -> Result<ToolConfig, BuildError> {
    let bad = |message: String| BuildError::new(BuildErrorKind::BadFault, tool, message);
    let text = ron::to_string(&config).map_err(|e| bad(e.to_string()))?;
    crate::scenario::ron_options().from_str::<ToolConfig>(&text).map_err(|e| bad(e.code.to_string()))
}
