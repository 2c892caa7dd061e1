//! The 10-call model as Rust code against agentsim's public API: a world made
//! with `WorldBuilder` (one write tool that records its step, a plan of ten
//! calls for the default expert), and the stack of
//! `benches/peer/ten_calls/stack.ron` built in code: the same agent as the
//! scripted world's, so that the two differ only in how the world is written.

use agentsim::agents::{Backoff, BreakerConfig, Jitter, LayerSpec, PlannerSpec, RetryConfig, WriteRetry};
use agentsim::prelude::*;

use crate::Tally;
use crate::model::{ATTEMPTS_MAX, BACKOFF_BASE_MS, BACKOFF_CAP_MS, CALLS, LATENCY_MS, P_503, THINK_MS};

/// The tool's name.
const TOOL: &str = "call";

/// A trajectory's state: how many steps were done, in order.
struct Job {
    done: u32,
}

/// The world. The builder's model thinks `Uniform(600, 2400)` ms a turn, which
/// is the model's think time (the scenario file states it).
pub fn world() -> BuiltWorld {
    assert_eq!(THINK_MS, (600, 2_400), "the builder's default think time is the model's");
    let mut plan = Plan::new();
    for step in 1..=i64::from(CALLS) {
        plan = plan.call(TOOL, move |_| Value::map([("step", Value::Int(step))]));
    }
    WorldBuilder::new("peer_ten_calls", |_rng| Job { done: 0 })
        .description("Ten calls in sequence, 20% 503s, up to 3 retries with full-jitter backoff.")
        .horizon_ms(600_000)
        .tool(
            write_tool(TOOL, "One step of the job: records that the step was done.")
                .arg("step", ValueKind::Int, true)
                .field("step", ValueKind::Int),
        )
        .fault(TOOL, FaultSpec::error(503).rate(P_503))
        .latency(TOOL, uniform_ms(LATENCY_MS.0, LATENCY_MS.1))
        .handle(TOOL, |job, call| {
            let step = call.int("step")?;
            if step != i64::from(job.done) + 1 {
                return Err(ToolError::bad_request(format!("step {step} out of order")));
            }
            job.done += 1;
            Ok(Value::map([("step", Value::Int(step))]))
        })
        .opening(|_| Says::new("Please run the ten steps of the job."))
        .judge(|job| job.done == CALLS)
        .plan(plan)
        .build()
        .expect("the 10-call world is well formed")
}

/// The stack of `ten_calls/stack.ron`, from the planner outward: the oracle
/// (the world's plan), a circuit breaker that opens for good at the first
/// call the retry layer gives up on (so that call fails the trajectory), and
/// the retry layer.
pub fn stack() -> StackSpec {
    let breaker = BreakerConfig {
        failure_rate_pct: 100,
        window: 1,
        minimum_throughput: 1,
        break_ms: 3_600_000,
        half_open_probes: 1,
        tools: Vec::new(),
    };
    let retry = RetryConfig {
        attempts_max: ATTEMPTS_MAX,
        base_ms: BACKOFF_BASE_MS,
        cap_ms: BACKOFF_CAP_MS,
        backoff: Backoff::Exponential,
        jitter: Jitter::Full,
        honor_retry_after: true,
        retry_writes: WriteRetry::Always,
        budget: None,
    };
    StackSpec {
        planner: PlannerSpec::Oracle,
        layers: vec![LayerSpec::CircuitBreaker(breaker), LayerSpec::Retry(retry)],
    }
}

/// Sweeps `seeds` in memory with the sweep builder (on rayon's pool: set
/// `RAYON_NUM_THREADS=1` for one thread).
pub fn sweep_seeds(world: &BuiltWorld, seeds: std::ops::Range<u64>) -> Tally {
    let out = sweep(world).stack("ten_calls", stack()).seeds(seeds).failures(0).run().expect("the sweep runs");
    crate::scripted::tally(&out)
}
