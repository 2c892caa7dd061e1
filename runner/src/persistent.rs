//! Persistent external agents: one process serves many episodes, a sweep keeps
//! several episodes in flight on each of a few processes (`docs/protocol.md`).
//!
//! An agent opts in with its first line, a hello
//! (`agentsim_agents::external::protocol::parse_hello`); one that answers the
//! first observation instead is run the old way, one process per trajectory (the
//! caller falls back, see [`sweep_mapped_until`]). Each episode is a suspendable
//! episode ([`crate::episode`]) run on this thread; its observations go to the
//! agent tagged with an episode id, and the agent's answers, which may come in any
//! order, resume the episode they name. A trajectory is the same whichever process
//! ran it and whatever else was in flight: the id is left out of the decision.
//!
//! The guarantees of a process per trajectory hold (`agents/src/external/process.rs`:
//! process groups, SIGPIPE, interrupt and `kill_all`, bounded lines); an answer
//! that names its episode but is not a valid action ends that episode.
//! A process that fails as a whole (it crashes, writes a line that is not JSON or
//! names no episode it was sent, a line too long) takes its episodes in flight
//! with it; which episodes those were depends on timing, so each is run again
//! from its start, alone on a fresh process: an episode that fails alone ends as
//! `agent_error` with the reason and the process's stderr, exactly as it would
//! with a process of its own, and the others finish. A shared process on which
//! any episode waits past the per-turn wall-clock limit fails as a whole too:
//! one stuck call blocks every episode on a process that serves them in turn, so
//! which episode is to blame cannot be told, and blaming the ones that happened
//! to wait would make the outcome depend on what shared the process (and so on
//! `-j`). The process is killed (and replaced), its episodes run again alone;
//! alone, the limit ends the episode as `agent_error`. The output is the same
//! for any number of processes, threads and episodes in flight.
//!
//! What a hang costs is bounded: a shared process hangs for one turn limit, and
//! each episode in flight on it costs at most one more alone; the episodes to
//! run alone go [`solo_processes_max`] at a time, beside the shared processes.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use agentsim_agents::LayerSpec;
use agentsim_agents::external::{
    ErrorKind, ExternalConfig, ExternalError, Line, Process, Tagged, interrupted, protocol, timeout,
};
use agentsim_engine::{SimConfig, Trajectory};
use agentsim_worlds::Prepared;
use serde_json::Value as Json;

use crate::bridge::{Command, Observation};
use crate::episode::{Episode, Setup, Step};

/// How often a wait for answers looks at the interrupt flags.
const POLL_MS: u64 = 50;

/// How long a process may take to start (to write its first line, the hello),
/// at least: starting an interpreter and importing a model's client library can
/// take seconds on a loaded machine, more when many start at once, and is no
/// episode's turn.
pub const START_LIMIT_MS: u64 = 10_000;

/// How long a process may take to write its first line: [`START_LIMIT_MS`], or
/// the per-turn limit if that is longer.
pub fn start_limit_ms(turn_limit_ms: u64) -> u64 {
    turn_limit_ms.max(START_LIMIT_MS)
}

/// The most processes that each run one episode alone at a time.
pub const SOLO_PROCESSES_MAX: usize = 64;

/// How many processes may each run one episode alone at once: as many as the
/// episodes the shared processes keep in flight (`processes` times the hello's
/// `episodes_in_flight`), at most [`SOLO_PROCESSES_MAX`]. So an agent that hangs
/// on every episode sweeps N seeds in about N / that many turn limits, as fast
/// as its shared processes would have timed them out.
pub fn solo_processes_max(processes: usize, episodes_in_flight: usize) -> usize {
    processes.saturating_mul(episodes_in_flight).clamp(1, SOLO_PROCESSES_MAX)
}

/// What one sweep over a persistent agent runs with.
pub struct Persistent<'a> {
    /// The scenario.
    pub prepared: &'a Prepared,
    /// The agent's command and limits.
    pub config: &'a ExternalConfig,
    /// The stack's layers around the agent.
    pub layers: &'a [LayerSpec],
    /// Horizon, budgets, fault scale (no recording: a sweep's failures are
    /// recorded by running them again).
    pub sim: SimConfig,
    /// Swarm mode.
    pub swarm: bool,
    /// Agent processes at most (their episodes in flight are what each asks for).
    pub processes: usize,
}

/// One episode waiting for its agent's answer.
struct Flight {
    unit: u64,
    episode: Episode,
    /// The observation it waits on (the protocol's `seq`).
    seq: u64,
    deadline: Instant,
}

/// One agent process and the episodes in flight on it, by episode id.
struct Slot {
    process: Process,
    tag: u64,
    /// Its hello has come.
    greeted: bool,
    /// When its first line (its hello) must have come: [`start_limit_ms`] after
    /// it was spawned. Starting is not an episode's turn: a process is sent
    /// nothing before its hello, and an episode's first turn starts at the
    /// hello. But the probe, the first process, which may not greet at all: it
    /// is sent its first observation at once, and its episode's turn starts
    /// again at its hello. (A probe held to the turn limit made a slow start
    /// under load fall back to a process per trajectory for one run and not
    /// the next: outcomes then depended on the load.)
    hello_by: Instant,
    /// The unit a solo process runs once it has greeted.
    queued: Option<u64>,
    /// Episodes in flight at most: 1 until its hello, and for a solo process.
    capacity: usize,
    /// Runs one episode alone (one that was in flight on a process that failed).
    solo: bool,
    /// Episode ids handed out so far (ids are 1, 2, ... per process).
    ids: u64,
    flights: BTreeMap<u64, Flight>,
}

impl Slot {
    /// When this process must next have answered: its earliest episode's
    /// deadline, or until it greets, its hello's.
    fn deadline(&self) -> Option<Instant> {
        if self.greeted { self.flights.values().map(|f| f.deadline).min() } else { Some(self.hello_by) }
    }
}

/// Where the next episode can go.
enum Room {
    /// On this process.
    In(usize),
    /// Nowhere: a process could not be started, for this reason.
    StartFailed(ExternalError),
    /// Nowhere now: every process has its episodes in flight.
    Full,
}

/// Why the driver stopped early.
enum Halt {
    /// The first line was not a hello: run a process per trajectory.
    NotPersistent,
    /// Interrupted (SIGINT or SIGTERM, or the sweep's stop flag).
    Stopped,
}

/// The driver: the processes, the episodes and the finished trajectories.
struct Driver<'a> {
    run: &'a Persistent<'a>,
    prepared: Arc<Prepared>,
    /// The tool list, rendered once.
    tools: Arc<str>,
    trials: u32,
    seed_start: u64,
    units: Range<u64>,
    next_unit: u64,
    /// Units to run again alone, in the order their process failed.
    solo: VecDeque<u64>,
    slots: Vec<Slot>,
    lines: Receiver<Tagged>,
    to_lines: Sender<Tagged>,
    tags: u64,
    /// Set by the first hello.
    persistent: bool,
    /// The first hello's `episodes_in_flight` (1 before it).
    in_flight: usize,
    finished: BTreeMap<u64, Trajectory>,
}

/// Runs `trials` attempts at every seed of `seeds` with a persistent agent and
/// hands `map(trial, trajectory)` to `sink` in (seed, trial) order, stopping once
/// `stop` is set (only whole seeds are handed on). Returns the first seed not
/// handed to `sink`, or `None` when the agent did not greet (it runs one process
/// per trajectory; nothing was handed on).
pub fn sweep_mapped_until<T, E>(
    run: &Persistent<'_>,
    seeds: Range<u64>,
    trials: u32,
    stop: &AtomicBool,
    map: impl Fn(u32, Trajectory) -> T,
    mut sink: impl FnMut(T) -> Result<(), E>,
) -> Result<Option<u64>, E> {
    assert!(trials >= 1 && run.processes >= 1, "at least one trial and one process");
    let k = u64::from(trials);
    let count = (seeds.end - seeds.start).checked_mul(k).expect("seeds times trials fits in u64");
    let (to_lines, lines) = channel();
    let mut driver = Driver {
        run,
        prepared: Arc::new(run.prepared.clone()),
        tools: protocol::tool_list(&run.prepared.catalog).to_string().into(),
        trials,
        seed_start: seeds.start,
        units: 0..count,
        next_unit: 0,
        solo: VecDeque::new(),
        slots: Vec::new(),
        lines,
        to_lines,
        tags: 0,
        persistent: false,
        in_flight: 1,
        finished: BTreeMap::new(),
    };
    let mut handed = 0u64;
    let halt = loop {
        let stopped = || stop.load(Ordering::SeqCst) || interrupted();
        if stopped() {
            break Some(Halt::Stopped);
        }
        // Whole seeds, in order.
        while (0..k).all(|t| driver.finished.contains_key(&(handed + t))) && handed < count {
            if stopped() {
                break;
            }
            for t in 0..k {
                let trajectory = driver.finished.remove(&(handed + t)).expect("checked");
                sink(map(t as u32, trajectory))?;
            }
            handed += k;
        }
        if handed == count {
            break None;
        }
        if let Err(halt) = driver.fill().and_then(|()| driver.wait()) {
            break Some(halt);
        }
    };
    driver.close();
    match halt {
        Some(Halt::NotPersistent) => Ok(None),
        _ => Ok(Some(seeds.start + handed / k)),
    }
}

impl Driver<'_> {
    fn setup(&self, unit: u64) -> Setup {
        let k = u64::from(self.trials);
        Setup {
            prepared: Arc::clone(&self.prepared),
            seed: self.seed_start + unit / k,
            trial: (unit % k) as u32,
            swarm: self.run.swarm,
            config: self.run.sim.clone(),
            layers: self.run.layers.to_vec(),
            tools: Some(Arc::clone(&self.tools)),
        }
    }

    /// Starts episodes while processes have room: first the units to run alone,
    /// then the next units in order.
    fn fill(&mut self) -> Result<(), Halt> {
        while let Some(&unit) = self.solo.front() {
            let solo_max = solo_processes_max(self.run.processes, self.in_flight);
            if self.slots.iter().filter(|s| s.solo).count() >= solo_max {
                break;
            }
            self.solo.pop_front();
            match self.spawn(true) {
                Ok(slot) => self.slots[slot].queued = Some(unit),
                Err(error) => self.fail_unit(unit, &error, ""),
            }
        }
        while self.next_unit < self.units.end {
            let room = self.room()?;
            if let Room::Full = room {
                break;
            }
            let unit = self.next_unit;
            self.next_unit += 1;
            match room {
                Room::In(slot) => self.start(slot, unit),
                Room::StartFailed(error) => self.fail_unit(unit, &error, ""),
                Room::Full => unreachable!("handled above"),
            }
        }
        Ok(())
    }

    /// A shared process with room for one more episode (spawned if needed and
    /// allowed), or why none could be started, or none: all are full (or still
    /// starting).
    fn room(&mut self) -> Result<Room, Halt> {
        let shared = || self.slots.iter().enumerate().filter(|(_, s)| !s.solo);
        // Before the first hello, the probe takes its one episode at once.
        let open = |s: &Slot| (s.greeted || !self.persistent) && s.flights.len() < s.capacity;
        if let Some((i, _)) = shared().find(|(_, s)| open(s)) {
            return Ok(Room::In(i));
        }
        // Until the first hello, one process with one episode: the probe.
        let processes = if self.persistent { self.run.processes } else { 1 };
        if shared().count() >= processes {
            return Ok(Room::Full);
        }
        if interrupted() {
            return Err(Halt::Stopped);
        }
        Ok(match self.spawn(false) {
            Err(error) => Room::StartFailed(error),
            // The probe is sent its first observation at once.
            Ok(slot) if !self.persistent => Room::In(slot),
            // Filled once it greets.
            Ok(_) => Room::Full,
        })
    }

    fn spawn(&mut self, solo: bool) -> Result<usize, ExternalError> {
        self.tags += 1;
        let config = self.run.config;
        let process = Process::spawn_tagged(
            &config.command,
            config.line_bytes_max,
            config.stderr_bytes_max,
            self.tags,
            self.to_lines.clone(),
        )?;
        let start_ms = start_limit_ms(config.turn_limit_ms);
        let slot = Slot {
            process,
            tag: self.tags,
            greeted: false,
            hello_by: Instant::now() + Duration::from_millis(start_ms),
            queued: None,
            capacity: 1,
            solo,
            ids: 0,
            flights: BTreeMap::new(),
        };
        self.slots.push(slot);
        Ok(self.slots.len() - 1)
    }

    /// A unit whose process could not be started, or failed before its first
    /// observation: its episode ends at its first decision with the reason (and
    /// the process's `stderr`), as a process per trajectory's would.
    fn fail_unit(&mut self, unit: u64, error: &ExternalError, stderr: &str) {
        let (mut episode, first) = Episode::start(self.setup(unit));
        let trajectory = match first.unwrap_or_else(|e| panic!("{e}")) {
            Step::Finished(t) => *t,
            Step::Observe(_) => episode.fail(error, stderr).expect("a running episode ends when it fails"),
        };
        self.finished.insert(unit, trajectory);
    }

    fn start(&mut self, slot: usize, unit: u64) {
        let (episode, first) = Episode::start(self.setup(unit));
        match first.unwrap_or_else(|e| panic!("{e}")) {
            Step::Finished(t) => {
                self.finished.insert(unit, *t);
            }
            Step::Observe(observation) => {
                self.slots[slot].ids += 1;
                let id = self.slots[slot].ids;
                let flight = Flight { unit, episode, seq: 0, deadline: Instant::now() };
                self.send(slot, id, flight, &observation);
            }
        }
    }

    /// Sends an episode's observation to its process and puts it in flight.
    fn send(&mut self, slot: usize, id: u64, mut flight: Flight, observation: &Observation) {
        let line = observation.line.as_deref().expect("the protocol bridge renders every observation");
        let slot = &mut self.slots[slot];
        flight.seq += 1;
        flight.deadline = Instant::now() + Duration::from_millis(self.run.config.turn_limit_ms);
        // A failed write reaches the shared channel as the process's failure.
        let _ = slot.process.send(&protocol::with_episode(line, id));
        slot.flights.insert(id, flight);
    }

    /// Waits for one line (or the earliest deadline) and acts on it.
    fn wait(&mut self) -> Result<(), Halt> {
        let now = Instant::now();
        let earliest = self.slots.iter().filter_map(Slot::deadline).min();
        let Some(earliest) = earliest else {
            // Nothing in flight: everything started has finished.
            return Ok(());
        };
        let left = earliest.saturating_duration_since(now).min(Duration::from_millis(POLL_MS));
        match self.lines.recv_timeout(left) {
            Ok((tag, line)) => self.take(tag, line),
            Err(RecvTimeoutError::Timeout) => self.expire(Instant::now()),
            Err(RecvTimeoutError::Disconnected) => unreachable!("the driver holds a sender"),
        }
    }

    /// Acts on one line from the process tagged `tag`.
    fn take(&mut self, tag: u64, line: Line) -> Result<(), Halt> {
        let Some(slot) = self.slots.iter().position(|s| s.tag == tag) else {
            return Ok(()); // from a process already ended
        };
        let bytes = match line {
            Ok(bytes) => bytes,
            Err(error) => return self.fail_slot(slot, &error),
        };
        if !self.slots[slot].greeted {
            return match protocol::parse_hello(&bytes) {
                Some(Ok(hello)) => {
                    if !self.persistent {
                        self.in_flight = hello.episodes_in_flight;
                    }
                    self.persistent = true;
                    let greeted = &mut self.slots[slot];
                    greeted.greeted = true;
                    greeted.capacity = if greeted.solo { 1 } else { hello.episodes_in_flight };
                    // The probe's episode waited for the start: its turn starts now.
                    let deadline = Instant::now() + Duration::from_millis(self.run.config.turn_limit_ms);
                    greeted.flights.values_mut().for_each(|flight| flight.deadline = deadline);
                    if let Some(unit) = greeted.queued.take() {
                        self.start(slot, unit);
                    }
                    Ok(())
                }
                Some(Err(reason)) => self.fail_slot(slot, &ExternalError::new(ErrorKind::BadHello, reason)),
                None if !self.persistent => Err(Halt::NotPersistent),
                None => self.fail_slot(
                    slot,
                    &ExternalError::new(
                        ErrorKind::BadHello,
                        "expected a hello as the first line (it greeted on another process)",
                    ),
                ),
            };
        }
        let json: Json = match serde_json::from_slice(&bytes) {
            Ok(json) => json,
            Err(e) => return self.fail_slot(slot, &ExternalError::new(ErrorKind::NotJson, format!("not JSON: {e}"))),
        };
        match protocol::episode_of(&json) {
            Some(id) if self.slots[slot].flights.contains_key(&id) => {
                self.answer(slot, id, &json);
                Ok(())
            }
            // An answer to an episode that has ended (an invalid action ended it).
            Some(id) if id >= 1 && id <= self.slots[slot].ids => Ok(()),
            Some(id) => self.fail_slot(
                slot,
                &ExternalError::new(
                    ErrorKind::BadEpisode,
                    format!("an answer for episode {id}, which it was never sent"),
                ),
            ),
            None => self.fail_slot(
                slot,
                &ExternalError::new(
                    ErrorKind::BadEpisode,
                    "an answer without `episode` (a persistent agent names the episode)",
                ),
            ),
        }
    }

    /// Carries out an answer to episode `id` on `slot`.
    fn answer(&mut self, slot: usize, id: u64, json: &Json) {
        let mut flight = self.slots[slot].flights.remove(&id).expect("in flight");
        let step = match protocol::action_of(json, &self.prepared.catalog) {
            Ok((action, decision)) => flight.episode.step(Command::Act(action, decision)),
            Err(e) => {
                let reason = format!("answer to observation {}: {e}", flight.seq);
                let error = ExternalError::new(ErrorKind::InvalidAction, reason);
                let trajectory = flight.episode.fail(&error, "").expect("a running episode ends when it fails");
                Ok(Step::Finished(Box::new(trajectory)))
            }
        };
        match step.unwrap_or_else(|e| panic!("{e}")) {
            Step::Observe(observation) => self.send(slot, id, flight, &observation),
            Step::Finished(trajectory) => {
                let _ = self.slots[slot].process.send(&protocol::end_line(id));
                self.finished.insert(flight.unit, *trajectory);
                if self.slots[slot].solo {
                    // Its one episode is over.
                    self.slots.remove(slot).process.stop();
                }
            }
        }
    }

    /// Fails every process on which an episode waited past the per-turn limit,
    /// or that did not greet in time: alone, its episode ends as `agent_error`;
    /// shared, its episodes in flight run again alone (see the module's
    /// documentation for why); the probe, a process per trajectory describes.
    fn expire(&mut self, now: Instant) -> Result<(), Halt> {
        let too_late = timeout(self.run.config.turn_limit_ms);
        while let Some(late) = self.slots.iter().position(|s| s.deadline().is_some_and(|d| d <= now)) {
            self.fail_slot(late, &too_late)?;
        }
        Ok(())
    }

    /// Ends a process that failed as a whole. Alone, its episode ends as
    /// `agent_error` with `reason` and the process's stderr; shared, its episodes
    /// in flight are run again, each alone.
    fn fail_slot(&mut self, slot: usize, error: &ExternalError) -> Result<(), Halt> {
        let mut slot = self.slots.remove(slot);
        let stderr = slot.process.stop();
        if !self.persistent {
            // The probe failed before any hello: a process per trajectory says why.
            return Err(Halt::NotPersistent);
        }
        let flights = std::mem::take(&mut slot.flights);
        if let Some(unit) = slot.queued.take() {
            // A solo process that failed before its hello: its episode ends here.
            self.fail_unit(unit, error, &stderr);
        }
        if slot.solo {
            for (_, mut flight) in flights {
                let trajectory = flight.episode.fail(error, &stderr).expect("a running episode ends when it fails");
                self.finished.insert(flight.unit, trajectory);
            }
        } else {
            // Dropping an episode ends it; it starts again from scratch.
            self.solo.extend(flights.into_values().map(|flight| flight.unit));
        }
        Ok(())
    }

    /// Ends every process (their groups killed, the leaders reaped).
    fn close(&mut self) {
        for mut slot in self.slots.drain(..) {
            slot.process.stop();
        }
    }
}
