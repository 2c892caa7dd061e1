//! A suspendable episode: one seed run by the engine's own loop, stopped at each
//! decision of its planner and resumed with the action, on the caller's thread.
//!
//! The engine drives an agent synchronously (`Agent::step`, through the stack's
//! layers, which may ask the planner several times per engine step), so an agent
//! that lives elsewhere (a Python function, a persistent external process) needs
//! the loop stopped inside the planner's step. The loop runs on a stackful
//! coroutine (`corosensei`) whose planner is the protocol bridge
//! ([`crate::bridge::Bridge::protocol`]): its step suspends the coroutine
//! with the observation, and [`Episode::step`] resumes it with the command. No
//! thread and no channel stand between the caller and the simulation; a decision
//! costs two stack switches.
//!
//! What this relies on, checked: the loop holds nothing thread-local across a
//! suspension (the scripted world's script session lives for one script call,
//! `worlds/src/scripted/script.rs`), so episodes may interleave on one thread,
//! and a suspended episode may move to another thread (see its `Send`; the
//! tests interleave episodes of a scripted world across threads); a panic in the
//! loop (a bug) reaches the caller as [`EpisodeError::Panicked`] and ends the
//! episode (where panics unwind: the Python module; the CLI's release build
//! aborts on any panic); dropping a suspended episode resumes it with a failure until
//! it returns, so its stack is freed by normal returns (no forced unwinding,
//! which a `panic = "abort"` build could not do).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use agentsim_agents::external::{ErrorKind, ExternalError};
use agentsim_agents::{LayerSpec, PlannerSpec, StackSpec};
use agentsim_engine::{SimConfig, Trajectory};
use agentsim_worlds::Prepared;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::bridge::{Bridge, Command, Observation, Relay};

/// Stack of one episode's coroutine: what a thread gets by default, as the
/// loop had on the worker threads it ran on before.
const STACK_BYTES: usize = 2 << 20;

/// Finished episodes' stacks kept for the next ones (a fresh stack is an mmap
/// and page faults): at most this many.
const IDLE_STACKS_MAX: usize = 64;

/// Why a dropped episode ended, as its trajectory's end reason.
pub const DROPPED: &str = "the episode was abandoned before it ended";

/// What resumes the coroutine: nothing at the start, then the command.
type Resume = Option<Command>;
type Loop = Coroutine<Resume, Observation, Trajectory, DefaultStack>;

/// Everything one episode runs with.
#[derive(Clone)]
pub struct Setup {
    /// The scenario.
    pub prepared: Arc<Prepared>,
    /// The seed.
    pub seed: u64,
    /// The attempt at the seed (pass^k); 0 for one trial.
    pub trial: u32,
    /// Swarm mode (the seed draws its fault parameters).
    pub swarm: bool,
    /// Horizon, budgets, recording, fault scale.
    pub config: SimConfig,
    /// The stack's layers around the planner.
    pub layers: Vec<LayerSpec>,
    /// The tool list (JSON text, `protocol::tool_list`) for the first
    /// observation; `None` leaves it out (the caller has it already).
    pub tools: Option<Arc<str>>,
}

/// Where an episode stands after starting or a step.
#[derive(Debug)]
pub enum Step {
    /// The planner waits for a command on this observation.
    Observe(Observation),
    /// The episode has ended (boxed: a step is an observation far more often).
    Finished(Box<Trajectory>),
}

/// An episode that could not go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EpisodeError {
    /// The simulation panicked (a bug in agentsim): the message; the episode is over.
    Panicked(String),
    /// A step after the end.
    Ended,
}

impl std::fmt::Display for EpisodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Panicked(message) => write!(f, "the simulation panicked (a bug in agentsim): {message}"),
            Self::Ended => write!(f, "the episode has ended"),
        }
    }
}

impl std::error::Error for EpisodeError {}

/// One seed being run, suspended at each decision of its planner.
pub struct Episode {
    /// `None` once the loop has returned or panicked.
    coroutine: Option<Loop>,
}

// SAFETY: a coroutine may move to another thread while suspended when everything
// on its stack is `Send` (corosensei's rule). On this one: the body's captures
// ([`Setup`], `Send`, asserted below), the engine's loop over a world (the
// worlds hold no `Rc` or `RefCell`; Rhai is built with its `sync` feature), the
// agent (`Agent: Send`) and the yielder, used only from inside the coroutine on
// whichever thread resumes it. The library's one thread-local (the script
// session) is filled and emptied within one script call, which never suspends.
unsafe impl Send for Episode {}

const _: () = {
    const fn send<T: Send>() {}
    send::<Setup>();
};

/// The bridge's relay inside the coroutine: suspends it with the observation.
struct Suspend(*const Yielder<Resume, Observation>);

// SAFETY: `Agent` requires `Send`; this relay never leaves the coroutine's
// stack: it is made from the `&Yielder` the coroutine's body receives, moved
// into the agent (one per session in a run of many) that `Prepared::run_*`
// owns and drops before it returns (so the pointer never outlives the body
// that lends the yielder), and it is used only inside the coroutine (see
// `unsafe impl Send for Episode`).
unsafe impl Send for Suspend {}

impl Relay for Suspend {
    fn exchange(&mut self, observation: Observation) -> Option<Command> {
        // SAFETY: see `unsafe impl Send for Suspend`: the yielder outlives the relay.
        let yielder = unsafe { &*self.0 };
        yielder.suspend(observation)
    }
}

fn idle_stacks() -> &'static Mutex<Vec<DefaultStack>> {
    static IDLE: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());
    &IDLE
}

fn stack() -> DefaultStack {
    let reused = idle_stacks().lock().ok().and_then(|mut idle| idle.pop());
    reused.unwrap_or_else(|| DefaultStack::new(STACK_BYTES).expect("an episode's stack (mmap) could not be allocated"))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

impl Episode {
    /// Starts the episode of `setup` and runs it to its first decision (or its end).
    pub fn start(setup: Setup) -> (Self, Result<Step, EpisodeError>) {
        let coroutine = Coroutine::with_stack(stack(), move |yielder: &Yielder<Resume, Observation>, _start| {
            let Setup { prepared, seed, trial, swarm, config, layers, tools } = setup;
            let stack = StackSpec { planner: PlannerSpec::Oracle, layers };
            if !config.sessions.runs_alone() {
                // One caller serves every session's agent: each session's
                // bridge suspends this one coroutine with observations that
                // name their session. Sessions' agents are made in order of
                // arrival, so a count names them.
                let arrived = std::cell::Cell::new(0);
                let make = |_expert, streams: &_| {
                    let session = arrived.replace(arrived.get() + 1);
                    let bridge = Bridge::protocol(Box::new(Suspend(yielder)), tools.clone()).in_session(session);
                    stack.wrap(Box::new(bridge), streams)
                };
                return prepared.run_each(seed, trial, swarm, &config, &make);
            }
            let relay = Box::new(Suspend(yielder));
            let agent = move |_expert, streams: &_| stack.wrap(Box::new(Bridge::protocol(relay, tools)), streams);
            if swarm {
                prepared.run_swarm_trial(seed, trial, &config, agent)
            } else {
                prepared.run_trial(seed, trial, &config, agent)
            }
        });
        let mut episode = Self { coroutine: Some(coroutine) };
        let first = episode.resume(None);
        (episode, first)
    }

    /// Whether the episode has ended (returned, or panicked).
    pub fn ended(&self) -> bool {
        self.coroutine.is_none()
    }

    /// Carries out `command` and runs to the next decision (or the end).
    pub fn step(&mut self, command: Command) -> Result<Step, EpisodeError> {
        self.resume(Some(command))
    }

    fn resume(&mut self, input: Resume) -> Result<Step, EpisodeError> {
        let coroutine = self.coroutine.as_mut().ok_or(EpisodeError::Ended)?;
        match catch_unwind(AssertUnwindSafe(|| coroutine.resume(input))) {
            Ok(CoroutineResult::Yield(observation)) => Ok(Step::Observe(observation)),
            Ok(CoroutineResult::Return(trajectory)) => {
                let done = self.coroutine.take().expect("checked above");
                if let Ok(mut idle) = idle_stacks().lock()
                    && idle.len() < IDLE_STACKS_MAX
                {
                    idle.push(done.into_stack());
                }
                Ok(Step::Finished(Box::new(trajectory)))
            }
            Err(payload) => {
                // A panic unwinds the coroutine's stack to its base: it is done.
                let done = self.coroutine.take().expect("checked above");
                assert!(done.done(), "a coroutine that panicked has returned");
                Err(EpisodeError::Panicked(panic_message(&*payload)))
            }
        }
    }
}

impl Episode {
    /// Ends a running episode as an agent failure with `reason` (and `stderr`, its
    /// diagnostic) and returns its trajectory; `None` when it had ended already
    /// (or panicked on the way).
    pub fn fail(&mut self, error: &ExternalError, stderr: &str) -> Option<Trajectory> {
        // The bridge answers every step after a failure itself, so one resume
        // normally returns; the loop is for a stack that would ask again anyway.
        while !self.ended() {
            let fail = Command::Fail { error: error.clone(), stderr: stderr.into() };
            match self.step(fail) {
                Ok(Step::Finished(trajectory)) => return Some(*trajectory),
                Ok(Step::Observe(_)) => {}
                Err(_) => return None,
            }
        }
        None
    }
}

impl Drop for Episode {
    fn drop(&mut self) {
        // The loop returns and everything on its stack is dropped normally.
        let _ = self.fail(&ExternalError::new(ErrorKind::Abandoned, DROPPED), "");
    }
}
