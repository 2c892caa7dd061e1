//! The 10-call model written directly against the engine (`agentsim::engine`):
//! a hand-written [`World`] and a hand-written [`Agent`], run one trajectory
//! at a time by [`sim::run`], with no `WorldBuilder`, no stack layers and no
//! runner or rows.
//!
//! It exists to time the engine's own cost. SimPy's model
//! (`ten_calls/ten_calls_simpy.py`) is one hand-written process that does its
//! own retries on SimPy's event loop; this is the same thing on agentsim's:
//! the agent retries by itself, so what is measured is the event loop, the
//! tool runtime (the 503 fault and the latency are the engine's, drawn from
//! its streams), the model's turns and the trajectory's digest. The builder
//! line ([`crate::built`]) adds the builder's world, the oracle planner, the
//! retry layer, the circuit breaker and the sweep's rows on top of this.
//!
//! The engine does for the model what SimPy's `timeout`s do: a model turn
//! ([`AgentCx::begin_turn`]) takes the model's think time, `Uniform(600,
//! 2400)` ms (`ModelConfig::think`), before the agent's action is carried out;
//! the tool's latency delays its result; a backoff is [`Action::Sleep`]. The
//! backoff is drawn from the agent's own stream
//! ([`StreamSource::agent_stream`]), as the retry layer draws its own.

use rayon::prelude::*;

use agentsim::engine::rng::key_of;
use agentsim::engine::{
    Action, Agent, AgentCx, Args, Budgets, Catalog, Fault, FaultRule, Finish, Input, Latency, Message, ModelConfig,
    Outcome, Probability, Schedule, SimConfig, Stream, StreamSource, TimeMs, ToolCall, ToolConfig, ToolDef, ToolError,
    ToolId, ToolKind, ToolSpec, Trajectory, Value, ValueKind, Verdict, World, WorldCx, sim,
};

use crate::Tally;
use crate::model::{ATTEMPTS_MAX, CALLS, LATENCY_MS, P_503, THINK_MS, backoff_ceiling_ms};

/// The tool's name.
const TOOL: &str = "call";

/// The virtual-time limit of `ten_calls/ten_calls.ron`; like its budgets
/// (stated in [`Scenario::new`]), it never binds: a trajectory takes about
/// 20 s, at most 11 turns and 40 calls.
const HORIZON_MS: TimeMs = 600_000;

/// The world of one trajectory: the steps done, in order. Success is judged
/// from it, never from what the agent says.
struct Job {
    done: u32,
}

impl World for Job {
    type Event = ();

    fn start(&mut self, cx: &mut WorldCx<'_, ()>) {
        let opening = Message { text: "Please run the ten steps of the job.".into(), content: Value::Null };
        cx.tell_agent(0, opening);
    }

    fn on_event(&mut self, _: (), _: &mut WorldCx<'_, ()>) {}

    /// Records step `step`; only a call that got through the engine's faults
    /// reaches here (a 503 is never applied).
    fn handle(&mut self, call: &ToolCall, _: TimeMs, _: &mut WorldCx<'_, ()>) -> Result<Value, ToolError> {
        let step = call.args.get("step").and_then(Value::as_int);
        if step != Some(i64::from(self.done) + 1) {
            return Err(ToolError::bad_request(format!("step {step:?} out of order")));
        }
        self.done += 1;
        Ok(Value::map([("step", Value::Int(i64::from(self.done)))]))
    }

    fn hear(&mut self, _: &str, _: &mut WorldCx<'_, ()>) {}

    fn judge(&self) -> Verdict {
        let success = self.done == CALLS;
        Verdict {
            success,
            escalated: false,
            milestone: if success { "all_steps_done" } else { "started" },
            detail: format!("{} of {CALLS} steps done", self.done),
            told_accurately: None,
            uncertain: None,
        }
    }
}

/// The agent of one trajectory: calls the ten steps in order, retrying a
/// failed attempt after a full-jitter backoff, up to [`ATTEMPTS_MAX`]
/// attempts. One model turn per decision: reading the opening, each step's
/// result, and the failure it gives up on.
struct TenCalls<'s> {
    tool: ToolId,
    /// The arguments of step k at index k - 1, made once per sweep.
    steps: &'s [Args],
    /// Steps done.
    done: u32,
    /// Attempts made at the current step.
    attempt: u32,
    /// The agent's own stream, for the backoffs.
    backoff: Stream,
}

impl TenCalls<'_> {
    /// The next step's call (or the current one's again, on a retry).
    fn current(&self) -> Action {
        Action::Call(ToolCall::new(self.tool, self.steps[self.done as usize].clone()))
    }

    /// After a failed attempt: wait and retry, or read the failure and stop.
    fn after_failure(&mut self, input: &Input, cx: &mut AgentCx<'_>) -> Action {
        if self.attempt < ATTEMPTS_MAX {
            let wait_ms = self.backoff.between(0, backoff_ceiling_ms(self.attempt));
            self.attempt += 1;
            return Action::Sleep { until_ms: cx.now_ms + wait_ms };
        }
        cx.read(input);
        cx.begin_turn();
        Action::Finish(Finish::GaveUp { reason: format!("step {} failed {ATTEMPTS_MAX} times", self.done + 1) })
    }
}

impl Agent for TenCalls<'_> {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        match &input {
            Input::User(_) => {
                cx.read(&input);
                cx.begin_turn();
                self.attempt = 1;
                self.current()
            }
            Input::Tool(result) if result.reply.is_ok() => {
                cx.read(&input);
                cx.begin_turn();
                self.done += 1;
                self.attempt = 1;
                if self.done == CALLS { Action::Finish(Finish::Done) } else { self.current() }
            }
            Input::Tool(_) | Input::Blocked { .. } => self.after_failure(&input, cx),
            Input::Wake => self.current(),
        }
    }
}

/// What every trajectory shares: the tools, the run's configuration, the
/// scenario's key and the ten calls' arguments.
pub struct Scenario {
    catalog: Catalog,
    config: SimConfig,
    key: [u8; 32],
    steps: Vec<Args>,
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenario {
    /// The 10-call model: one write tool `call` served by the engine's tool
    /// runtime with the 503 fault at 0.2 and `Uniform(50, 250)` ms latency;
    /// the model thinks `Uniform(600, 2400)` ms a turn.
    pub fn new() -> Self {
        let def = ToolDef::new(TOOL, ToolKind::Write, "One step of the job: records that the step was done.")
            .arg("step", ValueKind::Int, true)
            .field("step", ValueKind::Int);
        let fault_503 = FaultRule {
            fault: Fault::Error { status: 503, retry_after_ms: None },
            when: Schedule::Always,
            probability: Probability::try_from(P_503).expect("0.2 is a probability"),
        };
        let latency = Latency::Uniform { min_ms: LATENCY_MS.0, max_ms: LATENCY_MS.1 };
        let config = ToolConfig { latency, faults: vec![fault_503], ..ToolConfig::default() };
        let think = Latency::Uniform { min_ms: THINK_MS.0, max_ms: THINK_MS.1 };
        let config_sim = SimConfig {
            horizon_ms: HORIZON_MS,
            budgets: Budgets { turns_max: 40, tool_calls_max: 40, tokens_max: 300_000, events_max: 2_000 },
            model: ModelConfig { think, ..ModelConfig::default() },
            ..SimConfig::default()
        };
        Scenario {
            catalog: Catalog::new(vec![ToolSpec { def, config }]),
            config: config_sim,
            key: key_of("peer_ten_calls/engine"),
            steps: (1..=i64::from(CALLS)).map(|step| Args::from(Value::map([("step", Value::Int(step))]))).collect(),
        }
    }

    /// One trajectory of seed `seed`.
    pub fn run(&self, seed: u64) -> Trajectory {
        let streams = StreamSource::new(self.key, seed);
        let mut agent = TenCalls {
            tool: self.catalog.id(TOOL).expect("the catalog holds the tool"),
            steps: &self.steps,
            done: 0,
            attempt: 0,
            backoff: streams.agent_stream("agent.backoff"),
        };
        sim::run(Job { done: 0 }, &mut agent, &self.catalog, &streams, &self.config)
    }

    /// Runs `seeds` on rayon's pool (set `RAYON_NUM_THREADS=1` for one thread)
    /// and sums what they came to.
    pub fn sweep_seeds(&self, seeds: std::ops::Range<u64>) -> Tally {
        seeds.into_par_iter().map(|seed| tally(&self.run(seed))).reduce(Tally::default, |a, b| a + b)
    }
}

/// One trajectory's tally.
fn tally(trajectory: &Trajectory) -> Tally {
    Tally {
        successes: u64::from(trajectory.outcome == Outcome::Success),
        n: 1,
        virtual_ms: trajectory.metrics.virtual_ms,
    }
}
