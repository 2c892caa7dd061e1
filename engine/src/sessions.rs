//! Many sessions in one world: how many users come, when, and what they share
//! besides the world (the model's capacity).
//!
//! A session is one user with one task and one agent. All sessions of a run
//! share the clock, the world's state and its tools (their rate limits,
//! outages and faults), and, when [`ModelCapacity`] is given, the model's
//! capacity: a turn that finds the capacity spent waits in line, which is
//! where latency under load comes from. Session 0 arrives at time 0 (the
//! single-session run is exactly the run of one session); the others arrive
//! as [`Arrival`] says.

use serde::{Deserialize, Serialize};

use crate::input_error::{InputError, InputErrorKind};
use crate::rng::Stream;
use crate::time::{TIME_MS_MAX, TimeMs};

/// The number of a session in its run, from 0 in order of arrival.
pub type SessionId = u32;

/// The most sessions one run may hold (a day of a busy support desk).
pub const SESSIONS_MAX: u32 = 1_000_000;

/// A scenario's `sessions` section: how many sessions one run holds and when
/// they arrive. The default is one session, the single-user run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Sessions {
    /// How many sessions (1 to [`SESSIONS_MAX`]).
    #[serde(deserialize_with = "session_count")]
    pub count: u32,
    /// When they arrive.
    pub arrival: Arrival,
    /// What the sessions' agents share of their model, if anything.
    pub model_capacity: Option<ModelCapacity>,
    /// What the trials of a seed (`--trials K`) vary.
    pub explore: Explore,
    /// The sessions of the full run these draw as: session `k` meets the
    /// user, task and luck that session `drawn_as[k]` meets in the run of
    /// every session of the same seed. `agentsim shrink` writes it when it
    /// cuts sessions from the middle; `None` (left out of the canonical form):
    /// session `k` draws as itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawn_as: Option<Vec<SessionId>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Self { count: 1, arrival: Arrival::Together, model_capacity: None, explore: Explore::Agents, drawn_as: None }
    }
}

/// What the trials of one seed vary (see [`crate::StreamSource::with_trial`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Explore {
    /// The agents: each trial draws the agents' streams anew (pass^k over
    /// attempts of the same task).
    #[default]
    Agents,
    /// The interleaving: every agent decides as in trial 0 (its planner's
    /// streams are the same), the world, users and faults are the same, and
    /// only the schedule changes: trial k >= 1 breaks ties between events at
    /// the same time in an order drawn at random, and redraws every model's
    /// think times and every tool call's latency from their distributions
    /// (the faults keep their draws). pass^k is then "fails under no
    /// interleaving", and a failure replays from its seed and trial.
    Interleavings,
    /// Interleavings searched by priority, in the manner of PCT (probabilistic
    /// concurrency testing): as [`Explore::Interleavings`], but trial k >= 1
    /// first draws a priority order over the sessions and the world's own
    /// events. A session of rank r of n draws its tool latencies and think
    /// times from the r-th of n equal bands of their distributions (rank 0,
    /// the highest, the fastest), and ties at one time go to the higher
    /// priority. One session then runs ahead of another on purpose, the
    /// schedules where a check-then-act race shows; over the trials every
    /// draw still has its distribution. There are no priority change points
    /// (PCT of depth 1).
    Priorities,
}

impl Sessions {
    /// Whether this is a single-session run with nothing shared (the run is then
    /// exactly what it was before sessions existed).
    pub fn is_single(&self) -> bool {
        self.count == 1 && self.model_capacity.is_none() && self.drawn_as.is_none()
    }

    /// Whether the run holds one session that draws as itself: the run a
    /// world of one user runs (a `model_capacity` may still queue its turns).
    pub fn runs_alone(&self) -> bool {
        self.count == 1 && self.drawn_as.is_none()
    }

    /// The session of the full run that session `session` draws as (see
    /// [`Sessions::drawn_as`]).
    pub fn drawn_as(&self, session: SessionId) -> SessionId {
        self.drawn_as.as_ref().map_or(session, |origins| origins[session as usize])
    }

    /// Whether the trials of a seed vary the interleaving, not the agents.
    pub fn explores_interleavings(&self) -> bool {
        matches!(self.explore, Explore::Interleavings | Explore::Priorities)
    }

    /// Cross-checks serde cannot express (an arrival list of the wrong length,
    /// a capacity of nothing).
    pub fn check(&self) -> Result<(), InputError> {
        if let Some(capacity) = &self.model_capacity
            && (capacity.requests_per_minute == Some(0) || capacity.tokens_per_minute == Some(0))
        {
            return Err(InputError::at(
                InputErrorKind::OutOfRange,
                "model_capacity",
                "a capacity of 0 admits nothing: give at least 1, or leave the limit out",
            ));
        }
        self.check_drawn_as()?;
        if let Arrival::At(times) = &self.arrival {
            if times.len() != self.count as usize {
                return Err(InputError::at(
                    InputErrorKind::Inconsistent,
                    "arrival",
                    format!("lists {} arrival times for {} sessions (`count`)", times.len(), self.count),
                ));
            }
            if times.first() != Some(&0) {
                return Err(InputError::at(
                    InputErrorKind::OutOfRange,
                    "arrival",
                    "the first session arrives at 0 (the run starts with it)",
                ));
            }
            if times.windows(2).any(|w| w[1] < w[0]) {
                return Err(InputError::at(InputErrorKind::Inconsistent, "arrival", "arrival times go back in time"));
            }
        }
        Ok(())
    }
}

impl Sessions {
    /// `drawn_as`: one session of the full run for each, in order of arrival.
    fn check_drawn_as(&self) -> Result<(), InputError> {
        let Some(origins) = &self.drawn_as else { return Ok(()) };
        if origins.len() != self.count as usize {
            return Err(InputError::at(
                InputErrorKind::Inconsistent,
                "drawn_as",
                format!("has {} entries for {} sessions (`count`)", origins.len(), self.count),
            ));
        }
        if origins.windows(2).any(|w| w[1] <= w[0]) {
            return Err(InputError::at(
                InputErrorKind::Inconsistent,
                "drawn_as",
                "names the sessions of the full run in their order of arrival, each once",
            ));
        }
        if let Some(&past) = origins.iter().find(|&&s| s >= SESSIONS_MAX) {
            return Err(InputError::at(
                InputErrorKind::OutOfRange,
                "drawn_as",
                format!("names session {past}; a run holds at most {SESSIONS_MAX}"),
            ));
        }
        Ok(())
    }
}

fn session_count<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let count = u32::deserialize(deserializer)?;
    if !(1..=SESSIONS_MAX).contains(&count) {
        return Err(serde::de::Error::custom(format!("expected 1 to {SESSIONS_MAX} sessions, found {count}")));
    }
    Ok(count)
}

/// When the sessions of a run arrive. Session 0 always arrives at 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Arrival {
    /// All at time 0.
    Together,
    /// A Poisson process: exponential gaps at `per_minute` sessions a minute on
    /// average, drawn from the run's `sessions` stream.
    Poisson {
        /// The mean arrival rate (finite, above 0).
        #[serde(deserialize_with = "per_minute")]
        per_minute: f64,
    },
    /// At these times, one per session, in order, the first at 0.
    At(#[serde(deserialize_with = "times_ms")] Vec<TimeMs>),
}

fn per_minute<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    let rate = f64::deserialize(deserializer)?;
    if !(rate.is_finite() && rate > 0.0 && rate <= 1e9) {
        return Err(serde::de::Error::custom(format!(
            "expected a finite arrival rate above 0 (sessions a minute, at most 1e9), found {rate}"
        )));
    }
    Ok(rate)
}

fn times_ms<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<TimeMs>, D::Error> {
    let times = Vec::<TimeMs>::deserialize(deserializer)?;
    if let Some(t) = times.iter().find(|&&t| t > TIME_MS_MAX) {
        return Err(serde::de::Error::custom(format!("expected at most {TIME_MS_MAX} ms (ten years), found {t}")));
    }
    if times.len() > SESSIONS_MAX as usize {
        return Err(serde::de::Error::custom(format!("expected at most {SESSIONS_MAX} arrival times")));
    }
    Ok(times)
}

impl Arrival {
    /// When session `next` arrives, session `next - 1` having arrived at
    /// `prev_ms`; draws from `rng` for a Poisson process.
    pub fn next_ms(&self, next: SessionId, prev_ms: TimeMs, rng: &mut Stream) -> TimeMs {
        assert!(next >= 1, "session 0 arrives at 0");
        match self {
            Arrival::Together => 0,
            Arrival::Poisson { per_minute } => {
                // Inverse transform of the exponential; `1 - unit` is in (0, 1].
                let gap_min = -(1.0 - rng.unit()).ln() / per_minute;
                let gap_ms = (gap_min * 60_000.0).round();
                assert!(gap_ms >= 0.0, "an arrival gap is never negative");
                prev_ms.saturating_add(gap_ms.min(TIME_MS_MAX as f64) as TimeMs)
            }
            Arrival::At(times) => times[next as usize],
        }
    }
}

/// The model's capacity, shared by every session's agent: a turn that would
/// exceed it waits until it would not (first come, first served).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelCapacity {
    /// Model requests that may start in any 60 s window; `None`: no limit.
    pub requests_per_minute: Option<u32>,
    /// Prompt plus completion tokens that may start in any 60 s window; `None`:
    /// no limit. A single request larger than this waits for an empty window.
    pub tokens_per_minute: Option<u64>,
}

/// The window both limits count over.
const WINDOW_MS: TimeMs = 60_000;

/// The model's capacity while a run goes: when each admitted request started.
#[derive(Debug, Default)]
pub struct CapacityLine {
    requests_per_minute: Option<u32>,
    tokens_per_minute: Option<u64>,
    /// Start times of the last `requests_per_minute` requests, oldest first.
    requests: std::collections::VecDeque<TimeMs>,
    /// (start time, tokens) of the requests in the token window, oldest first.
    tokens: std::collections::VecDeque<(TimeMs, u64)>,
    /// Tokens in `tokens`.
    tokens_in_window: u64,
    /// The latest start admitted: requests start in the order they asked.
    last_start_ms: TimeMs,
}

impl CapacityLine {
    /// A line for `capacity`.
    pub fn new(capacity: &ModelCapacity) -> Self {
        assert!(
            capacity.requests_per_minute != Some(0) && capacity.tokens_per_minute != Some(0),
            "a capacity of 0 is refused when the scenario is read"
        );
        Self {
            requests_per_minute: capacity.requests_per_minute,
            tokens_per_minute: capacity.tokens_per_minute,
            ..Self::default()
        }
    }

    /// Admits a request of `tokens` asked at `now_ms`: when it may start (at
    /// least `now_ms`; later when the capacity is spent).
    pub fn admit(&mut self, now_ms: TimeMs, tokens: u64) -> TimeMs {
        let mut start_ms = now_ms.max(self.last_start_ms);
        if let Some(limit) = self.requests_per_minute
            && self.requests.len() == limit as usize
        {
            let oldest = self.requests.pop_front().expect("a full window holds a request");
            start_ms = start_ms.max(oldest.saturating_add(WINDOW_MS));
        }
        if self.requests_per_minute.is_some() {
            self.requests.push_back(start_ms);
        }
        if let Some(limit) = self.tokens_per_minute {
            // Requests older than the window no longer count.
            while let Some(&(at_ms, n)) = self.tokens.front()
                && at_ms.saturating_add(WINDOW_MS) <= start_ms
            {
                self.tokens.pop_front();
                self.tokens_in_window -= n;
            }
            // Wait for the oldest to leave the window until this one fits.
            while self.tokens_in_window.saturating_add(tokens) > limit
                && let Some((at_ms, n)) = self.tokens.pop_front()
            {
                start_ms = start_ms.max(at_ms.saturating_add(WINDOW_MS));
                self.tokens_in_window -= n;
            }
            self.tokens.push_back((start_ms, tokens));
            self.tokens_in_window += tokens;
        }
        assert!(start_ms >= now_ms && start_ms >= self.last_start_ms, "a request starts in line, never early");
        self.last_start_ms = start_ms;
        start_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_past_the_limit_wait_for_the_window() {
        let mut line = CapacityLine::new(&ModelCapacity { requests_per_minute: Some(2), tokens_per_minute: None });
        assert_eq!(line.admit(0, 10), 0);
        assert_eq!(line.admit(1_000, 10), 1_000);
        // The third request in the same minute waits until the first leaves.
        assert_eq!(line.admit(2_000, 10), 60_000);
        // And the fourth until the second leaves, after the third.
        assert_eq!(line.admit(2_500, 10), 61_000);
        assert_eq!(line.admit(200_000, 10), 200_000);
    }

    #[test]
    fn tokens_past_the_limit_wait_for_the_window() {
        let mut line = CapacityLine::new(&ModelCapacity { requests_per_minute: None, tokens_per_minute: Some(100) });
        assert_eq!(line.admit(0, 60), 0);
        assert_eq!(line.admit(10, 30), 10);
        assert_eq!(line.admit(20, 30), 60_000);
        // A request larger than the limit waits for an empty window.
        assert_eq!(line.admit(60_001, 500), 120_000);
    }

    #[test]
    fn an_arrival_list_must_fit_its_count() {
        let sessions = Sessions { count: 3, arrival: Arrival::At(vec![0, 5]), ..Sessions::default() };
        assert!(sessions.check().unwrap_err().to_string().contains("2 arrival times for 3 sessions"));
        let late = Sessions { count: 2, arrival: Arrival::At(vec![5, 6]), ..Sessions::default() };
        assert!(late.check().is_err());
        let back = Sessions { count: 3, arrival: Arrival::At(vec![0, 6, 5]), ..Sessions::default() };
        assert!(back.check().is_err());
    }

    #[test]
    fn poisson_arrivals_have_the_asked_mean() {
        let mut rng = crate::rng::StreamSource::new([7; 32], 1).stream("sessions");
        let arrival = Arrival::Poisson { per_minute: 30.0 };
        let mut at_ms = 0;
        for next in 1..=3_000 {
            at_ms = arrival.next_ms(next, at_ms, &mut rng);
        }
        // 3,000 gaps of 2 s on average: within 5% (about 2.7 standard errors).
        let mean_ms = at_ms as f64 / 3_000.0;
        assert!((1_900.0..2_100.0).contains(&mean_ms), "mean gap {mean_ms} ms");
    }
}
