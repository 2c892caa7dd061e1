//! Faults, and the schedules that say when they apply.
//!
//! The vocabulary follows HTTP and the fault injectors people already know
//! (toxiproxy, Envoy, Chaos Mesh). Every type validates itself while it is being
//! deserialised, so a bad value in a scenario file is reported at its line and
//! column, naming the field.

use serde::{Deserialize, Serialize};

pub use crate::corrupt::{Corruption, ONE_OF_MAX};
pub use crate::field_path::FieldPath;
use crate::input_error::{InputError, InputErrorKind};
use crate::time::{TimeMs, check_ms};

/// What a call can suffer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FaultUnchecked")]
pub enum Fault {
    /// An HTTP error status (4xx or 5xx), optionally with a `Retry-After` hint.
    Error {
        /// HTTP status, 400..=599; 429, 500, 502, 503 and 504 are the usual ones.
        status: u16,
        /// The `Retry-After` hint sent with the error, in milliseconds.
        retry_after_ms: Option<TimeMs>,
    },
    /// No answer: the client gives up after the tool's `timeout_ms`.
    Timeout,
    /// Extra latency added to the call.
    Latency {
        /// Added to the drawn latency, in milliseconds.
        extra_ms: TimeMs,
    },
    /// A response that does not match the tool's schema.
    Malformed(MalformedKind),
    /// The session token expires: this and every later call get 401 until the agent
    /// calls `authenticate`.
    AuthExpired,
    /// A token bucket: `capacity` calls, one token back every `refill_ms`; an empty
    /// bucket answers 429 with `retry_after_ms` until the next token.
    RateLimit {
        /// Bucket size (burst allowance), at least 1.
        capacity: u32,
        /// Milliseconds to earn back one token, at least 1.
        refill_ms: TimeMs,
    },
    /// The answer reflects the world as it was `lag_ms` ago (a lagging replica or cache).
    Stale {
        /// How far behind the answer is, in milliseconds.
        lag_ms: TimeMs,
    },
    /// For writes: the write is applied, then the answer is lost (the caller sees a
    /// timeout). A blind retry applies it twice.
    CommitThenTimeout,
    /// A well-formed, schema-valid answer with one wrong but plausible value: the
    /// fault that does not announce itself. The world keeps the truth.
    Corrupt {
        /// Where the value is: field names from the top of the response, dot
        /// separated (`items.price_cents`); a list on the way contributes one item,
        /// chosen by the call's draw.
        path: FieldPath,
        /// How the value is wrong.
        corruption: Corruption,
    },
    /// For writes: the write applies in part (the integer argument `arg` at
    /// `percent` percent: one refund of two items becomes one item's worth), then
    /// the service answers 500. A blind retry applies the whole again on top.
    PartialCommit {
        /// The integer argument that is applied in part (a write argument of the tool).
        arg: String,
        /// How much of it is applied, 1..=99 percent (rounded toward zero).
        percent: u8,
    },
    /// For writes: the service applies the write twice without being asked (a
    /// redelivered queue message: the second time without the idempotency key);
    /// the caller sees one normal answer.
    DuplicateEffect,
    /// Prompt injection: the string at `path` of a well-formed answer carries
    /// instructions (worded by `style`) to call `tool` with `args`.
    Inject {
        /// Where the text goes (a string field; see [`Fault::Corrupt`]).
        path: FieldPath,
        /// How the instructions are worded.
        style: crate::inject::InjectionStyle,
        /// The tool the text asks for.
        tool: String,
        /// The arguments it asks for, by name.
        args: std::collections::BTreeMap<String, crate::inject::InjectedArg>,
    },
}

/// How a malformed response is broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MalformedKind {
    /// One top-level field is missing.
    MissingField,
    /// One top-level field has the wrong type (numbers arrive as formatted strings).
    WrongType,
    /// The body is cut off mid-way and does not parse.
    Truncated,
    /// The body is not the format at all.
    Garbage,
}

#[derive(Deserialize)]
enum FaultUnchecked {
    Error {
        status: u16,
        #[serde(default)]
        retry_after_ms: Option<TimeMs>,
    },
    Timeout,
    Latency {
        extra_ms: TimeMs,
    },
    Malformed(MalformedKind),
    AuthExpired,
    RateLimit {
        capacity: u32,
        refill_ms: TimeMs,
    },
    Stale {
        lag_ms: TimeMs,
    },
    CommitThenTimeout,
    Corrupt {
        path: FieldPath,
        corruption: Corruption,
    },
    PartialCommit {
        arg: String,
        percent: u8,
    },
    DuplicateEffect,
    Inject {
        path: FieldPath,
        style: crate::inject::InjectionStyle,
        tool: String,
        args: std::collections::BTreeMap<String, crate::inject::InjectedArg>,
    },
}

impl TryFrom<FaultUnchecked> for Fault {
    type Error = InputError;
    fn try_from(f: FaultUnchecked) -> Result<Self, InputError> {
        Ok(match f {
            FaultUnchecked::Error { status, retry_after_ms } => {
                if !(400..=599).contains(&status) {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "status",
                        format!("expected an HTTP error status in 400..=599, found {status}"),
                    ));
                }
                if let Some(ms) = retry_after_ms {
                    check_ms("retry_after_ms", ms)?;
                }
                Fault::Error { status, retry_after_ms }
            }
            FaultUnchecked::Timeout => Fault::Timeout,
            FaultUnchecked::Latency { extra_ms } => Fault::Latency { extra_ms: check_ms("extra_ms", extra_ms)? },
            FaultUnchecked::Malformed(kind) => Fault::Malformed(kind),
            FaultUnchecked::AuthExpired => Fault::AuthExpired,
            FaultUnchecked::RateLimit { capacity, refill_ms } => {
                if capacity == 0 {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "capacity",
                        "expected at least 1 token, found 0",
                    ));
                }
                if refill_ms == 0 {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "refill_ms",
                        "expected at least 1 ms, found 0",
                    ));
                }
                Fault::RateLimit { capacity, refill_ms: check_ms("refill_ms", refill_ms)? }
            }
            FaultUnchecked::Stale { lag_ms } => Fault::Stale { lag_ms: check_ms("lag_ms", lag_ms)? },
            FaultUnchecked::CommitThenTimeout => Fault::CommitThenTimeout,
            FaultUnchecked::Corrupt { path, corruption } => Fault::Corrupt { path, corruption },
            FaultUnchecked::PartialCommit { arg, percent } => {
                if !(1..=99).contains(&percent) {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "percent",
                        format!("expected 1..=99 (a part, neither nothing nor all), found {percent}"),
                    ));
                }
                Fault::PartialCommit { arg, percent }
            }
            FaultUnchecked::DuplicateEffect => Fault::DuplicateEffect,
            FaultUnchecked::Inject { path, style, tool, args } => checked_injection(path, style, tool, args)?,
        })
    }
}

/// An `Inject` fault whose tool and arguments are plain (not empty, short, no
/// backticks: they are quoted in the injected text) and few.
fn checked_injection(
    path: FieldPath,
    style: crate::inject::InjectionStyle,
    tool: String,
    args: std::collections::BTreeMap<String, crate::inject::InjectedArg>,
) -> Result<Fault, InputError> {
    use crate::inject::{INJECTED_ARG_BYTES_MAX, INJECTED_ARGS_MAX, InjectedArg};
    if args.len() > INJECTED_ARGS_MAX {
        return Err(InputError::at(
            InputErrorKind::TooMany,
            "args",
            format!("expected at most {INJECTED_ARGS_MAX} arguments, found {}", args.len()),
        ));
    }
    let plain = |s: &str| !s.is_empty() && s.len() <= INJECTED_ARG_BYTES_MAX && !s.contains('`');
    if !plain(&tool) {
        return Err(InputError::at(
            InputErrorKind::Malformed,
            "tool",
            format!("expected a tool name without backticks, found `{tool}`"),
        ));
    }
    for (name, value) in &args {
        let fine = plain(name)
            && matches!(value, InjectedArg::Int(_) | InjectedArg::Str(_))
            && match value {
                InjectedArg::Str(s) => plain(s),
                InjectedArg::Int(_) => true,
            };
        if !fine {
            return Err(InputError::at(
                InputErrorKind::Malformed,
                "args",
                format!(
                    "`{name}`: expected a name and a value of 1..={INJECTED_ARG_BYTES_MAX} bytes without backticks"
                ),
            )
            .in_field(format!("args.{name}")));
        }
    }
    Ok(Fault::Inject { path, style, tool, args })
}

/// The kind of fault a call actually suffered, recorded in the trajectory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FaultTag {
    /// An injected error status.
    Error(u16),
    /// An injected timeout.
    Timeout,
    /// Injected extra latency.
    Latency,
    /// A malformed response.
    Malformed(MalformedKind),
    /// The session expired (or was already expired).
    AuthExpired,
    /// Refused by the rate limiter.
    RateLimited,
    /// A stale read.
    Stale,
    /// A write applied whose answer was lost.
    CommitThenTimeout,
    /// A well-formed answer with a wrong value.
    Corrupted,
    /// A write applied in part, then a 500.
    PartialCommit,
    /// A write the service applied twice.
    DuplicateEffect,
    /// A well-formed answer carrying injected instructions.
    Injected,
}

impl FaultTag {
    /// A short stable name, used in CSV columns and timelines.
    pub fn name(&self) -> String {
        let mut name = String::with_capacity(24);
        self.push_name(&mut name);
        name
    }

    /// Appends [`FaultTag::name`] to `out`, without the formatting machinery:
    /// it is written into every row of a trajectory that met a fault.
    pub fn push_name(&self, out: &mut String) {
        let fixed = match self {
            FaultTag::Error(status) => {
                out.push_str("error_");
                out.push_str(itoa::Buffer::new().format(*status));
                return;
            }
            FaultTag::Malformed(kind) => {
                out.push_str("malformed_");
                kind.name()
            }
            FaultTag::Timeout => "timeout",
            FaultTag::Latency => "latency",
            FaultTag::AuthExpired => "auth_expired",
            FaultTag::RateLimited => "rate_limited",
            FaultTag::Stale => "stale",
            FaultTag::CommitThenTimeout => "commit_then_timeout",
            FaultTag::Corrupted => "corrupted",
            FaultTag::PartialCommit => "partial_commit",
            FaultTag::DuplicateEffect => "duplicate_effect",
            FaultTag::Injected => "injected",
        };
        out.push_str(fixed);
    }
}

impl MalformedKind {
    /// A short stable name.
    pub fn name(&self) -> &'static str {
        match self {
            MalformedKind::MissingField => "missing_field",
            MalformedKind::WrongType => "wrong_type",
            MalformedKind::Truncated => "truncated",
            MalformedKind::Garbage => "garbage",
        }
    }
}

/// When a fault rule is active, in virtual time or call count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(try_from = "ScheduleUnchecked")]
pub enum Schedule {
    /// Active for the whole trajectory.
    #[default]
    Always,
    /// Active for `from_ms <= t < to_ms`.
    Window {
        /// Start of the window (inclusive).
        from_ms: TimeMs,
        /// End of the window (exclusive); after `from_ms`.
        to_ms: TimeMs,
    },
    /// Bursts of `burst_ms` every `period_ms`, the first starting at `offset_ms`.
    Periodic {
        /// Time from one burst's start to the next.
        period_ms: TimeMs,
        /// Length of each burst, at most `period_ms`.
        burst_ms: TimeMs,
        /// Start of the first burst.
        offset_ms: TimeMs,
    },
    /// Active from the tool's `n`-th call on (counting from 1).
    AfterCalls {
        /// The first call (1-based) at which the rule is active.
        n: u64,
    },
}

#[derive(Deserialize)]
enum ScheduleUnchecked {
    Always,
    Window {
        from_ms: TimeMs,
        to_ms: TimeMs,
    },
    Periodic {
        period_ms: TimeMs,
        burst_ms: TimeMs,
        #[serde(default)]
        offset_ms: TimeMs,
    },
    AfterCalls {
        n: u64,
    },
}

impl TryFrom<ScheduleUnchecked> for Schedule {
    type Error = InputError;
    fn try_from(s: ScheduleUnchecked) -> Result<Self, InputError> {
        Ok(match s {
            ScheduleUnchecked::Always => Schedule::Always,
            ScheduleUnchecked::Window { from_ms, to_ms } => {
                if to_ms <= from_ms {
                    return Err(InputError::at(
                        InputErrorKind::Inconsistent,
                        "to_ms",
                        format!("the window must end after it starts, found from_ms: {from_ms}, to_ms: {to_ms}"),
                    ));
                }
                Schedule::Window { from_ms: check_ms("from_ms", from_ms)?, to_ms: check_ms("to_ms", to_ms)? }
            }
            ScheduleUnchecked::Periodic { period_ms, burst_ms, offset_ms } => {
                if period_ms == 0 {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "period_ms",
                        "expected a positive period, found 0",
                    ));
                }
                if burst_ms == 0 || burst_ms > period_ms {
                    return Err(InputError::at(
                        InputErrorKind::OutOfRange,
                        "burst_ms",
                        format!("expected 1..={period_ms} (at most the period), found {burst_ms}"),
                    ));
                }
                check_ms("period_ms", period_ms)?;
                Schedule::Periodic { period_ms, burst_ms, offset_ms: check_ms("offset_ms", offset_ms)? }
            }
            ScheduleUnchecked::AfterCalls { n } => {
                if n == 0 {
                    return Err(InputError::at(InputErrorKind::OutOfRange, "n", "calls are counted from 1, found 0"));
                }
                Schedule::AfterCalls { n }
            }
        })
    }
}

impl Schedule {
    /// Whether the schedule is active at `now_ms` for the tool's `call_number`-th call
    /// (1-based).
    pub fn is_active(&self, now_ms: TimeMs, call_number: u64) -> bool {
        match *self {
            Schedule::Always => true,
            Schedule::Window { from_ms, to_ms } => (from_ms..to_ms).contains(&now_ms),
            Schedule::Periodic { period_ms, burst_ms, offset_ms } => {
                now_ms >= offset_ms && (now_ms - offset_ms) % period_ms < burst_ms
            }
            Schedule::AfterCalls { n } => call_number >= n,
        }
    }
}

/// A probability in `[0, 1]`, checked when read.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Probability(f64);

impl Probability {
    /// Certainty.
    pub const ONE: Probability = Probability(1.0);
    /// Never.
    pub const ZERO: Probability = Probability(0.0);

    /// The probability as a number in `[0, 1]`.
    pub fn get(self) -> f64 {
        self.0
    }

    /// Scales the probability by `factor`, saturating at 1.
    pub fn scaled(self, factor: f64) -> Probability {
        Probability((self.0 * factor).clamp(0.0, 1.0))
    }
}

impl TryFrom<f64> for Probability {
    type Error = InputError;
    fn try_from(p: f64) -> Result<Self, InputError> {
        if (0.0..=1.0).contains(&p) {
            Ok(Probability(p))
        } else {
            Err(InputError::bare(InputErrorKind::OutOfRange, format!("expected a probability in [0, 1], found {p}")))
        }
    }
}

impl From<Probability> for f64 {
    fn from(p: Probability) -> f64 {
        p.0
    }
}

impl Default for Probability {
    fn default() -> Self {
        Probability::ONE
    }
}

/// One fault on one tool: what, when, and how likely per call while active.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "FaultRuleUnchecked")]
pub struct FaultRule {
    /// The fault.
    pub fault: Fault,
    /// When the rule is active (default: always).
    #[serde(default)]
    pub when: Schedule,
    /// The chance per call while active (default 1). Ignored by `RateLimit`, which is
    /// a state, not a draw.
    #[serde(default)]
    pub probability: Probability,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultRuleUnchecked {
    fault: Fault,
    #[serde(default)]
    when: Schedule,
    #[serde(default = "certain")]
    probability: f64,
}

fn certain() -> f64 {
    1.0
}

impl TryFrom<FaultRuleUnchecked> for FaultRule {
    type Error = InputError;
    fn try_from(r: FaultRuleUnchecked) -> Result<Self, InputError> {
        let probability = Probability::try_from(r.probability).map_err(|e| e.within("probability"))?;
        Ok(FaultRule { fault: r.fault, when: r.when, probability })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are column values of `trajectories.csv`: they never change.
    #[test]
    fn every_fault_tag_has_its_stable_name() {
        let cases = [
            (FaultTag::Error(0), "error_0"),
            (FaultTag::Error(429), "error_429"),
            (FaultTag::Error(503), "error_503"),
            (FaultTag::Error(u16::MAX), "error_65535"),
            (FaultTag::Timeout, "timeout"),
            (FaultTag::Latency, "latency"),
            (FaultTag::Malformed(MalformedKind::MissingField), "malformed_missing_field"),
            (FaultTag::Malformed(MalformedKind::WrongType), "malformed_wrong_type"),
            (FaultTag::Malformed(MalformedKind::Truncated), "malformed_truncated"),
            (FaultTag::Malformed(MalformedKind::Garbage), "malformed_garbage"),
            (FaultTag::AuthExpired, "auth_expired"),
            (FaultTag::RateLimited, "rate_limited"),
            (FaultTag::Stale, "stale"),
            (FaultTag::CommitThenTimeout, "commit_then_timeout"),
            (FaultTag::Corrupted, "corrupted"),
            (FaultTag::PartialCommit, "partial_commit"),
            (FaultTag::DuplicateEffect, "duplicate_effect"),
            (FaultTag::Injected, "injected"),
        ];
        for (tag, name) in cases {
            assert_eq!(tag.name(), name);
            let mut after = String::from("x;");
            tag.push_name(&mut after);
            assert_eq!(after, format!("x;{name}"));
        }
    }

    #[test]
    fn periodic_bursts() {
        let s = Schedule::Periodic { period_ms: 100, burst_ms: 30, offset_ms: 50 };
        assert!(!s.is_active(49, 1));
        assert!(s.is_active(50, 1));
        assert!(s.is_active(79, 1));
        assert!(!s.is_active(80, 1));
        assert!(s.is_active(150, 1));
    }

    #[test]
    fn bad_values_are_refused_with_the_field() {
        let err = ron::from_str::<Schedule>("Window(from_ms: 10, to_ms: 5)").unwrap_err();
        assert!(err.to_string().contains("to_ms"), "{err}");
        let err = ron::from_str::<FaultRule>("(fault: Timeout, probability: 1.5)").unwrap_err();
        assert!(err.to_string().contains("probability"), "{err}");
        let err = ron::from_str::<Fault>("Error(status: 200)").unwrap_err();
        assert!(err.to_string().contains("status"), "{err}");
    }
}
