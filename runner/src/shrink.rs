//! Shrinking a failing trajectory to the smallest fault schedule that still fails
//! the same way.
//!
//! A run of many sessions first loses sessions: the shortest prefix, in order
//! of arrival, that still fails the same way (found by doubling then bisecting
//! the count), then every session of it the failure does not need (ddmin, as
//! for faults). Each session kept keeps its user, task, arrival time and luck:
//! the streams stay keyed by the original scenario, and a session kept from the
//! middle draws as the session it was (`Sessions::drawn_as`). Its faults are
//! then shrunk as below.
//!
//! The run's realised faults become an explicit schedule (`explicit_faults` on each
//! tool), with the streams still keyed by the original scenario so that the world,
//! the user and every draw stay the same. Then faults are removed by delta debugging
//! (Zeller's ddmin: drop halves, then quarters, ... while the failure persists), and
//! drift events one at a time. Every step is a deterministic run, so the result is
//! the same on every machine.

use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_engine::{Arrival, CallFault, Drift, EventKind, Message, Outcome, Reply, SessionId, TimeMs, Trajectory};
use agentsim_worlds::{Prepared, Scenario};

use crate::Runner;

/// The most runs one shrink may take: a bound, so it always ends.
pub const RUNS_MAX: u32 = 4_000;

/// One fault of the schedule, with its tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolFault {
    /// Tool name.
    pub tool: String,
    /// The numbered call and its fault.
    pub fault: CallFault,
}

/// A shrunk failure.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The scenario with the minimal explicit schedule and the drift that matters.
    pub scenario: Scenario,
    /// The streams' key: the original scenario's.
    pub key: [u8; 32],
    /// The trajectory of the minimal case (recorded).
    pub trajectory: Trajectory,
    /// The failure mode kept throughout.
    pub outcome: Outcome,
    /// Faults realised by the original run.
    pub faults_before: usize,
    /// Faults in the minimal schedule.
    pub faults_after: usize,
    /// Drift entries before and after.
    pub drift_before: usize,
    /// Drift entries kept.
    pub drift_after: usize,
    /// Sessions of the original run (1 for a run of one).
    pub sessions_before: u32,
    /// Sessions of the minimal case.
    pub sessions_after: u32,
    /// The sessions of the original run the minimal case keeps, in order
    /// (each draws as it did there: `Sessions::drawn_as`).
    pub sessions_kept: Vec<SessionId>,
    /// Events of the original trajectory.
    pub events_before: u32,
    /// Events of the minimal one.
    pub events_after: u32,
    /// Runs spent.
    pub runs: u32,
    /// Cuts that failed the same way but were refused as not faithful: the
    /// agent's decisions were replayed (an external agent's incident) and a
    /// session kept would have read other tool results or user messages than
    /// the recording's, which its recorded decisions cannot react to.
    pub unfaithful: u32,
}

/// What one session's agent read, in order: its user's messages and the
/// replies of its tool calls. A run whose decisions are replayed is what was
/// recorded only as long as every session reads what it read then.
#[derive(Clone, Debug, PartialEq)]
enum Read {
    User(Message),
    Reply(Reply),
}

/// What each session of `t` read, by session (a run of one: session 0).
fn reads_of(t: &Trajectory) -> Vec<Vec<Read>> {
    let mut reads: Vec<Vec<Read>> = Vec::new();
    for event in t.events.iter().filter(|e| !e.diagnostic) {
        let read = match &event.kind {
            EventKind::User(message) => Read::User(message.clone()),
            EventKind::Result { reply, .. } => Read::Reply(reply.clone()),
            _ => continue,
        };
        let session = event.session.unwrap_or(0) as usize;
        if reads.len() <= session {
            reads.resize_with(session + 1, Vec::new);
        }
        reads[session].push(read);
    }
    reads
}

/// Whether every session of `cut` read what session `was(k)` of the
/// recording read (`recorded`, by [`reads_of`]).
fn reads_as_recorded(recorded: &[Vec<Read>], cut: &Trajectory, was: impl Fn(usize) -> usize) -> bool {
    let none: Vec<Read> = Vec::new();
    reads_of(cut).iter().enumerate().all(|(k, reads)| {
        let then = recorded.get(was(k)).unwrap_or(&none);
        reads.len() == then.len() && reads.iter().zip(then).all(|(a, b)| same_read(a, b))
    })
}

/// Whether two reads are the same to an agent. A fault's refusal (a 429 or a
/// 5xx) counts by its status and `Retry-After`: its wording is the schedule's
/// (a rate limit made explicit by shrink says `too many requests` where the
/// bucket said `rate limit exceeded`); every other read counts whole.
fn same_read(a: &Read, b: &Read) -> bool {
    match (a, b) {
        (
            Read::Reply(Reply::Error { status: s, retry_after_ms: r, .. }),
            Read::Reply(Reply::Error { status: t, retry_after_ms: q, .. }),
        ) if *s == 429 || *s >= 500 => s == t && r == q,
        _ => a == b,
    }
}

/// Why a seed could not be shrunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShrinkError {
    /// The run succeeded: there is no failure to keep.
    NotAFailure,
    /// The explicit schedule did not reproduce the failure (a bug: report it).
    NotReproduced(Outcome),
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::NotAFailure => f.write_str("the trajectory succeeds: there is no failure to shrink"),
            ShrinkError::NotReproduced(o) => {
                write!(f, "the explicit schedule did not reproduce the failure (got {o}); please report this")
            }
        }
    }
}

/// The realised faults of a trajectory, with tool names.
pub fn realised(prepared: &Prepared, t: &Trajectory) -> Vec<ToolFault> {
    t.realised_faults
        .iter()
        .map(|r| ToolFault {
            tool: prepared.catalog.name(r.tool).to_string(),
            fault: CallFault { call: r.call, fault: r.fault.clone() },
        })
        .collect()
}

/// `scenario` with exactly `faults` as every tool's explicit schedule and only the
/// drift entries `keep_drift[tool][i]` says to keep.
pub fn with_schedule(scenario: &Scenario, faults: &[ToolFault], keep_drift: &[(String, Vec<bool>)]) -> Scenario {
    let mut edited = scenario.clone();
    for (name, config) in edited.tool_configs_mut() {
        config.explicit_faults =
            Some(faults.iter().filter(|f| f.tool == name).map(|f| f.fault.clone()).collect::<Vec<_>>());
        // A traced call keeps its recorded latency; its fault is in the schedule now.
        for call in &mut config.trace {
            call.fault = None;
        }
        if let Some((_, keep)) = keep_drift.iter().find(|(tool, _)| *tool == name) {
            let drift: Vec<Drift> =
                config.drift.iter().zip(keep).filter(|(_, k)| **k).map(|(d, _)| d.clone()).collect();
            config.drift = drift;
        }
    }
    edited
}

/// Which drift entries of each tool are kept, by tool name.
type KeptDrift = Vec<(String, Vec<bool>)>;

/// Shrinks seed `seed` of `prepared` run with `stack`.
pub fn shrink(prepared: &Prepared, stack: &StackSpec, seed: u64, fault_scale: f64) -> Result<Shrunk, ShrinkError> {
    shrink_trial(prepared, stack, (seed, 0), fault_scale)
}

/// Shrinks trial `trial` of seed `seed` (`--trials`: another attempt of the
/// agents, or another schedule when the scenario explores interleavings):
/// every run of the search is that trial.
pub fn shrink_trial(
    prepared: &Prepared,
    stack: &StackSpec,
    (seed, trial): (u64, u32),
    fault_scale: f64,
) -> Result<Shrunk, ShrinkError> {
    let original = Runner::new(prepared, stack, true, fault_scale).run_trial(seed, trial);
    if original.outcome == Outcome::Success {
        return Err(ShrinkError::NotAFailure);
    }
    let sessions_before = prepared.scenario.sessions.count;
    let arrivals_ms = original.sessions.iter().map(|s| s.arrived_ms).collect();
    // Recorded decisions cannot react to a world that changed: a cut is kept
    // only if it replays what the recording read.
    let replayed = matches!(stack.planner, PlannerSpec::Replayed(_));
    let recorded = replayed.then(|| reads_of(&original));
    let fewer = FewerSessions {
        prepared,
        stack,
        seed,
        trial,
        fault_scale,
        target: original.outcome,
        arrivals_ms,
        recorded: recorded.as_deref(),
        unfaithful: std::cell::Cell::new(0),
    };
    let (reduced, sessions_runs) = fewer.find();
    let (prepared, first) = match &reduced {
        Some((fewer, t)) => (fewer, t),
        None => (prepared, &original),
    };
    let sessions_after = prepared.scenario.sessions.count;
    let sessions_kept = (0..sessions_after).map(|s| prepared.scenario.sessions.drawn_as(s)).collect();
    // A reduced scenario keeps the original's key (`Prepared::with_key`).
    let mut trial = Trial {
        prepared,
        stack,
        seed,
        trial,
        fault_scale,
        key: prepared.key(),
        target: original.outcome,
        runs: sessions_runs,
        recorded: replayed.then(|| reads_of(first)),
        unfaithful: fewer.unfaithful.get(),
    };
    let faults = realised(prepared, first);
    let keep_drift = all_drift(prepared);
    let drift_before: usize = keep_drift.iter().map(|(_, k)| k.len()).sum();
    let Some(mut best) = trial.fails(&faults, &keep_drift) else {
        return Err(ShrinkError::NotReproduced(trial.unrecorded(&faults, &keep_drift)));
    };
    let faults_before = realised(prepared, &original).len().max(faults.len());
    let faults = trial.ddmin_faults(faults, &keep_drift, &mut best);
    let keep_drift = trial.drop_drift(&faults, keep_drift, &mut best);
    let drift_after: usize = keep_drift.iter().map(|(_, k)| k.iter().filter(|x| **x).count()).sum();
    Ok(Shrunk {
        scenario: with_schedule(&prepared.scenario, &faults, &keep_drift),
        key: trial.key,
        outcome: trial.target,
        faults_before,
        faults_after: faults.len(),
        drift_before,
        drift_after,
        sessions_before,
        sessions_after,
        sessions_kept,
        events_before: original.metrics.events,
        events_after: best.metrics.events,
        trajectory: best,
        runs: trial.runs,
        unfaithful: trial.unfaithful,
    })
}

/// The search for the fewest sessions of a failing run that still fail the
/// same way.
struct FewerSessions<'a> {
    prepared: &'a Prepared,
    stack: &'a StackSpec,
    seed: u64,
    trial: u32,
    fault_scale: f64,
    target: Outcome,
    /// When each session of the original run arrived.
    arrivals_ms: Vec<TimeMs>,
    /// What each session of the original run read, when its decisions are
    /// replayed (see [`reads_as_recorded`]).
    recorded: Option<&'a [Vec<Read>]>,
    /// Cuts refused as not faithful.
    unfaithful: std::cell::Cell<u32>,
}

impl FewerSessions<'_> {
    /// The scenario cut to the fewest sessions that still fail (and the
    /// recorded run of it), `None` when all are needed or the run holds one;
    /// with the runs spent. First the shortest failing prefix, by doubling
    /// then bisecting the count (cheap, and exact when failing is monotone
    /// in the count); then ddmin drops sessions from the middle of it.
    fn find(&self) -> (Option<(Prepared, Trajectory)>, u32) {
        let all = self.prepared.scenario.sessions.count;
        let runs = std::cell::Cell::new(0u32);
        let mut found: Option<(Vec<SessionId>, Prepared, Trajectory)> = None;
        let mut fails = |kept: &[SessionId]| -> Option<bool> {
            if runs.get() >= RUNS_MAX {
                return None;
            }
            // A run starts with a session at time 0 (the world opens it as it
            // starts): a cut that loses every such session is no run.
            if kept.first().is_none_or(|&first| self.arrivals_ms[first as usize] != 0) {
                return Some(false);
            }
            runs.set(runs.get() + 1);
            let prepared = self.with_kept(kept);
            let t = Runner::new(&prepared, self.stack, true, self.fault_scale).run_trial(self.seed, self.trial);
            let mut failed = t.outcome == self.target;
            if failed
                && let Some(recorded) = self.recorded
                && !reads_as_recorded(recorded, &t, |k| kept[k] as usize)
            {
                self.unfaithful.set(self.unfaithful.get() + 1);
                failed = false;
            }
            if failed {
                found = Some((kept.to_vec(), prepared, t));
            }
            Some(failed)
        };
        let prefix = |count: u32| (0..count).collect::<Vec<SessionId>>();
        let mut passes = 0u32;
        let mut failing = all;
        let mut count = 1u32;
        while count < all {
            match fails(&prefix(count)) {
                Some(true) => {
                    failing = count;
                    break;
                }
                Some(false) => passes = count,
                None => break,
            }
            count = count.saturating_mul(2);
        }
        while failing - passes > 1 {
            let mid = passes + (failing - passes) / 2;
            match fails(&prefix(mid)) {
                Some(true) => failing = mid,
                Some(false) => passes = mid,
                None => break,
            }
        }
        if failing > 1 {
            ddmin(prefix(failing), &mut fails);
        }
        (found.map(|(_, prepared, t)| (prepared, t)), runs.get())
    }

    /// The scenario with only the sessions `kept` (numbers of the original
    /// run, in order), its streams keyed as the original's: every session
    /// kept meets the same user and luck, and arrives when it did. A prefix
    /// keeps the original's arrival; any other cut lists the arrival times
    /// and the sessions drawn as (`drawn_as`).
    fn with_kept(&self, kept: &[SessionId]) -> Prepared {
        let original = &self.prepared.scenario.sessions;
        let mut scenario = self.prepared.scenario.clone();
        let sessions = &mut scenario.sessions;
        sessions.count = u32::try_from(kept.len()).expect("sessions are counted in u32");
        let is_prefix = kept.iter().enumerate().all(|(i, &s)| s as usize == i);
        if is_prefix {
            if let Arrival::At(times) = &mut sessions.arrival {
                times.truncate(kept.len());
            }
            if let Some(drawn_as) = &mut sessions.drawn_as {
                drawn_as.truncate(kept.len());
            }
        } else {
            sessions.arrival = Arrival::At(kept.iter().map(|&s| self.arrivals_ms[s as usize]).collect());
            sessions.drawn_as = Some(kept.iter().map(|&s| original.drawn_as(s)).collect());
        }
        assert!(scenario.sessions.check().is_ok(), "a cut of a valid run is a valid run");
        Prepared::with_key(scenario, self.prepared.key())
    }
}

/// Zeller's ddmin over `items`: try removing each of n chunks; on a failure
/// kept, keep the smaller list and coarsen, otherwise refine until chunks
/// are single items. `fails` says whether a candidate still fails, or
/// `None` when no run is left (the search then stops where it is).
fn ddmin<T: Clone>(mut items: Vec<T>, fails: &mut dyn FnMut(&[T]) -> Option<bool>) -> Vec<T> {
    let mut chunks = 2usize;
    while !items.is_empty() {
        let size = items.len().div_ceil(chunks);
        let mut reduced = false;
        for start in (0..items.len()).step_by(size) {
            let candidate: Vec<T> =
                items[..start].iter().chain(items[(start + size).min(items.len())..].iter()).cloned().collect();
            match fails(&candidate) {
                Some(true) => {
                    items = candidate;
                    chunks = (chunks - 1).max(2);
                    reduced = true;
                    break;
                }
                Some(false) => {}
                None => return items,
            }
        }
        if !reduced {
            if size == 1 {
                break;
            }
            chunks = (chunks * 2).min(items.len());
        }
    }
    items
}

/// Every drift entry of every tool, all kept.
fn all_drift(prepared: &Prepared) -> KeptDrift {
    prepared
        .scenario
        .clone()
        .tool_configs_mut()
        .into_iter()
        .map(|(name, config)| (name, vec![true; config.drift.len()]))
        .collect()
}

/// The runs of one shrink: the seed replayed under smaller schedules, each
/// checked for the failure kept throughout, and counted.
struct Trial<'a> {
    prepared: &'a Prepared,
    stack: &'a StackSpec,
    seed: u64,
    /// The trial of the seed every run is.
    trial: u32,
    fault_scale: f64,
    /// The streams' key: the original scenario's.
    key: [u8; 32],
    /// The original run's failure mode.
    target: Outcome,
    /// Runs so far.
    runs: u32,
    /// What each session of the run being shrunk read, when its decisions
    /// are replayed: a schedule that changes it is refused.
    recorded: Option<Vec<Vec<Read>>>,
    /// Cuts refused as not faithful (sessions and faults).
    unfaithful: u32,
}

impl Trial<'_> {
    /// The (recorded) trajectory of the seed under `faults` and the drift kept,
    /// if it fails the same way.
    fn fails(&mut self, faults: &[ToolFault], keep_drift: &[(String, Vec<bool>)]) -> Option<Trajectory> {
        self.runs += 1;
        let scenario = with_schedule(&self.prepared.scenario, faults, keep_drift);
        let candidate = Prepared::with_key(scenario, self.key);
        let t = Runner::new(&candidate, self.stack, true, self.fault_scale).run_trial(self.seed, self.trial);
        if t.outcome != self.target {
            return None;
        }
        if let Some(recorded) = &self.recorded
            && !reads_as_recorded(recorded, &t, |k| k)
        {
            self.unfaithful += 1;
            return None;
        }
        Some(t)
    }

    /// The outcome of an unrecorded run under `faults`: what the schedule gives
    /// when it does not reproduce the failure.
    fn unrecorded(&self, faults: &[ToolFault], keep_drift: &[(String, Vec<bool>)]) -> Outcome {
        let scenario = with_schedule(&self.prepared.scenario, faults, keep_drift);
        let candidate = Prepared::with_key(scenario, self.key);
        Runner::new(&candidate, self.stack, false, self.fault_scale).run_trial(self.seed, self.trial).outcome
    }

    /// ddmin over the faults (see [`ddmin`]), within [`RUNS_MAX`] runs.
    /// `best` becomes the trajectory of the smallest schedule that failed.
    fn ddmin_faults(
        &mut self,
        faults: Vec<ToolFault>,
        keep_drift: &[(String, Vec<bool>)],
        best: &mut Trajectory,
    ) -> Vec<ToolFault> {
        ddmin(faults, &mut |candidate: &[ToolFault]| {
            if self.runs >= RUNS_MAX {
                return None;
            }
            let failed = self.fails(candidate, keep_drift);
            let kept = failed.is_some();
            if let Some(t) = failed {
                *best = t;
            }
            Some(kept)
        })
    }

    /// Drops, one at a time, each drift entry the failure does not need.
    fn drop_drift(&mut self, faults: &[ToolFault], mut keep_drift: KeptDrift, best: &mut Trajectory) -> KeptDrift {
        for tool in 0..keep_drift.len() {
            for i in 0..keep_drift[tool].1.len() {
                let mut candidate = keep_drift.clone();
                candidate[tool].1[i] = false;
                if let Some(t) = self.fails(faults, &candidate) {
                    keep_drift = candidate;
                    *best = t;
                }
            }
        }
        keep_drift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46, item 12: shrinking an external agent's incident dropped the
    /// session that raced and kept one whose replayed write no longer fit the
    /// world it met. Every cut of a replayed run must read what the recording
    /// read; checked here against the recording directly, session by session.
    #[test]
    fn a_shrunk_replayed_run_reads_what_its_recording_read() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let prepared = crate::load::scenario(&format!("{root}/seeds/support_desk_race.ron")).unwrap();
        let command = format!("python3 {root}/examples/agents/support_desk_agent.py");
        let config = agentsim_agents::external::ExternalConfig::new(&command);
        let live = StackSpec { planner: PlannerSpec::External(config), layers: Vec::new() };
        let (mut checked, mut refused) = (0, 0);
        for seed in 0..6 {
            let t = Runner::new(&prepared, &live, true, 1.0).run(seed);
            if t.outcome != Outcome::Violation {
                continue;
            }
            let steps = agentsim_agents::external::replayed::recorded_steps_of(&t, &prepared.scenario.sessions);
            let replayed = StackSpec { planner: PlannerSpec::Replayed(steps), layers: Vec::new() };
            let shrunk = shrink(&prepared, &replayed, seed, 1.0).expect("a violation shrinks");
            let recorded = reads_of(&t);
            let cut = reads_of(&shrunk.trajectory);
            for (k, reads) in cut.iter().enumerate() {
                let was = shrunk.sessions_kept.get(k).map_or(k, |&s| s as usize);
                let same = reads.len() == recorded[was].len()
                    && reads.iter().zip(&recorded[was]).all(|(a, b)| same_read(a, b));
                assert!(same, "seed {seed}: kept session {k} (session {was}) read other results");
            }
            checked += 1;
            refused += shrunk.unfaithful;
        }
        assert!(checked >= 2, "{checked} violations shrunk");
        eprintln!("{checked} shrunk, {refused} cuts refused as not faithful");
    }
}
