//! Analytic validation: scenarios whose success probability has a closed form.
//! The simulator's estimate (with its 99% Wilson interval) must contain the
//! truth, and a plausible wrong formula must fall outside; the Wilson 95%
//! interval must cover the true rate in about 95% of repeated sweeps.
//!
//! The world is one tool, `ping`, and the task is to get one call served. The
//! planner calls it once per attempt; the engine's fault schedule decides.

use agentsim::ordered::for_each_ordered;
use agentsim::rate::{Rate, Z_99};
use agentsim_agents::layers::{Retry, RetryConfig};
use agentsim_engine::{
    Action, Agent, AgentCx, Catalog, Fault, FaultRule, Finish, Input, Latency, Message, ModelConfig, Outcome,
    Probability, Schedule, SimConfig, StreamSource, TimeMs, ToolCall, ToolConfig, ToolDef, ToolError, ToolKind,
    ToolSpec, Value, ValueKind, Verdict, World, WorldCx,
};

/// Served once: the task is done. The judge looks only at the world.
struct PingWorld {
    served: bool,
}

impl World for PingWorld {
    type Event = ();

    fn start(&mut self, cx: &mut WorldCx<'_, ()>) {
        cx.tell_agent(0, Message { text: "ping the service".into(), content: Value::Null });
    }

    fn on_event(&mut self, _: (), _: &mut WorldCx<'_, ()>) {}

    fn handle(&mut self, _: &ToolCall, _: TimeMs, _: &mut WorldCx<'_, ()>) -> Result<Value, ToolError> {
        self.served = true;
        Ok(Value::map([("ok", Value::Bool(true))]))
    }

    fn hear(&mut self, _: &str, _: &mut WorldCx<'_, ()>) {}

    fn judge(&self) -> Verdict {
        Verdict {
            success: self.served,
            escalated: false,
            milestone: if self.served { "served" } else { "started" },
            detail: String::new(),
            told_accurately: None,
            uncertain: None,
        }
    }
}

/// Calls `ping`; after a failure waits `backoff_ms` and tries again, up to
/// `retries` times, then gives up. One model turn, on the user's message.
struct Pinger {
    retries: u32,
    backoff_ms: TimeMs,
    failures: u32,
}

impl Agent for Pinger {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let ping = ToolCall::new(cx.catalog.id("ping").expect("ping exists"), Value::map::<&str>([]));
        match input {
            Input::User(_) => {
                cx.begin_turn();
                Action::Call(ping)
            }
            Input::Tool(result) if result.reply.is_ok() => Action::Finish(Finish::Done),
            Input::Tool(_) | Input::Blocked { .. } => {
                self.failures += 1;
                if self.failures > self.retries {
                    Action::Finish(Finish::GaveUp { reason: "out of retries".into() })
                } else {
                    Action::Sleep { until_ms: cx.now_ms + self.backoff_ms }
                }
            }
            Input::Wake => Action::Call(ping),
        }
    }
}

fn catalog(fault: Fault, when: Schedule, probability: f64) -> Catalog {
    Catalog::new(vec![ToolSpec {
        def: ToolDef::new("ping", ToolKind::Read, "answers").field("ok", ValueKind::Bool),
        config: ToolConfig {
            latency: Latency::Fixed { ms: 0 },
            faults: vec![FaultRule { fault, when, probability: Probability::try_from(probability).unwrap() }],
            ..ToolConfig::default()
        },
    }])
}

fn config(think: Latency) -> SimConfig {
    SimConfig { model: ModelConfig { think, ..ModelConfig::default() }, ..SimConfig::default() }
}

/// Successes over `seeds` of a scenario keyed by `key`.
fn successes(
    key: [u8; 32],
    seeds: std::ops::Range<u64>,
    catalog: &Catalog,
    config: &SimConfig,
    agent: impl Fn(&StreamSource) -> Box<dyn Agent> + Sync,
) -> u64 {
    let mut count = 0;
    for_each_ordered(
        seeds,
        |seed| {
            let streams = StreamSource::new(key, seed);
            let mut agent = agent(&streams);
            agentsim_engine::sim::run(PingWorld { served: false }, &mut *agent, catalog, &streams, config).outcome
        },
        |outcome| {
            count += u64::from(outcome == Outcome::Success);
            Ok::<(), ()>(())
        },
    )
    .unwrap();
    count
}

fn error_503() -> Fault {
    Fault::Error { status: 503, retry_after_ms: None }
}

#[test]
fn independent_failures_with_r_retries_succeed_with_probability_1_minus_p_to_the_r_plus_1() {
    let (p, retries) = (0.4, 2u32);
    let truth = 1.0 - p * p * p; // 1 - p^(r+1) = 0.936
    let catalog = catalog(error_503(), Schedule::Always, p);
    let config = config(Latency::Fixed { ms: 500 });
    let n = 20_000;
    let hits =
        successes([11; 32], 0..n, &catalog, &config, |_| Box::new(Pinger { retries, backoff_ms: 1_000, failures: 0 }));
    let estimate = Rate::wilson_z(hits, n, Z_99);
    assert!(estimate.contains(truth), "truth {truth} outside the 99% interval {estimate:?}");
    // The test can fail: forgetting the first attempt (1 - p^r) is far outside.
    assert!(!estimate.contains(1.0 - p * p), "{estimate:?}");
}

#[test]
fn the_retry_layer_meets_the_same_closed_form() {
    // The planner tries once; the stack's retry layer makes the other attempts.
    let (p, attempts) = (0.5, 3u32);
    let truth = 1.0 - p * p * p;
    let catalog = catalog(error_503(), Schedule::Always, p);
    let config = config(Latency::Fixed { ms: 500 });
    let n = 20_000;
    let retry = RetryConfig { attempts_max: attempts, ..RetryConfig::default() };
    let hits = successes([12; 32], 0..n, &catalog, &config, |streams| {
        let planner: Box<dyn Agent> = Box::new(Pinger { retries: 0, backoff_ms: 0, failures: 0 });
        Box::new(Retry::new(planner, retry.clone(), streams.agent_stream("stack.retry")))
    });
    let estimate = Rate::wilson_z(hits, n, Z_99);
    assert!(estimate.contains(truth), "truth {truth} outside the 99% interval {estimate:?}");
    assert!(!estimate.contains(1.0 - p * p), "{estimate:?}");
}

#[test]
fn a_burst_window_against_a_fixed_backoff_succeeds_as_the_geometry_says() {
    // Every call fails during [0, 8 s). The first call leaves at a think time
    // uniform on the integers 0..=10,000 ms; the agent retries 3 times, 1 s apart,
    // with instant replies. It succeeds iff its last attempt, at U + 3 s, is at
    // or after 8 s: P(U >= 5,000) = 5,001 / 10,001.
    let (window_ms, backoff_ms, retries, think_max_ms) = (8_000u64, 1_000u64, 3u32, 10_000u64);
    let truth = (think_max_ms - (window_ms - u64::from(retries) * backoff_ms) + 1) as f64 / (think_max_ms + 1) as f64;
    let catalog = catalog(error_503(), Schedule::Window { from_ms: 0, to_ms: window_ms }, 1.0);
    let config = config(Latency::Uniform { min_ms: 0, max_ms: think_max_ms });
    let n = 20_000;
    let hits = successes([13; 32], 0..n, &catalog, &config, |_| Box::new(Pinger { retries, backoff_ms, failures: 0 }));
    let estimate = Rate::wilson_z(hits, n, Z_99);
    assert!(estimate.contains(truth), "truth {truth} outside the 99% interval {estimate:?}");
    // One retry fewer would need U >= 6,000: about 0.4, far outside.
    assert!(!estimate.contains(0.4), "{estimate:?}");
}

/// The exact coverage of the Wilson 95% interval for `n` trials at rate `p`: the
/// binomial probability of the counts whose interval contains `p`.
fn exact_wilson_coverage(n: u64, p: f64) -> f64 {
    let ln_choose = |k: u64| -> f64 { (0..k).map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln()).sum() };
    (0..=n)
        .filter(|&k| Rate::wilson(k, n).contains(p))
        .map(|k| (ln_choose(k) + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp())
        .sum()
}

#[test]
fn wilson_95_covers_the_true_rate_in_about_95_percent_of_repeated_sweeps() {
    // 500 independent sweeps (different scenario keys) of 200 seeds each, with a
    // true success rate of 1 - 0.5^2 = 0.75.
    let truth = 0.75;
    let catalog = catalog(error_503(), Schedule::Always, 0.5);
    let config = config(Latency::Fixed { ms: 0 });
    let (sweeps, seeds) = (500u32, 200u64);
    let mut covered = 0;
    for sweep in 0..sweeps {
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(&sweep.to_le_bytes());
        key[4] = 0xC0;
        let hits = successes(key, 0..seeds, &catalog, &config, |_| {
            Box::new(Pinger { retries: 1, backoff_ms: 10, failures: 0 })
        });
        covered += u32::from(Rate::wilson(hits, seeds).contains(truth));
    }
    let coverage = f64::from(covered) / f64::from(sweeps);
    // Wilson's exact coverage at this n and p is 95.9%; the sweeps must agree with it
    // within three standard errors (about 2.7 points over 500 sweeps), and so lie
    // near the nominal 95%.
    let exact = exact_wilson_coverage(seeds, truth);
    let se = (exact * (1.0 - exact) / f64::from(sweeps)).sqrt();
    assert!((exact - 0.959).abs() < 0.001, "exact coverage {exact}");
    assert!((coverage - exact).abs() <= 3.0 * se, "coverage {coverage} ({covered} of {sweeps}), exact {exact}");
    assert!((0.92..=0.98).contains(&coverage), "coverage {coverage}");
}

/// Draws `n` pairs (baseline, candidate) with the given cell probabilities
/// (both succeed, only the baseline, only the candidate; the rest neither).
fn draw_pairs(stream: &mut agentsim_engine::Stream, n: u64, cells: [f64; 3]) -> agentsim::paired::PairCounts {
    let mut counts = agentsim::paired::PairCounts::default();
    for _ in 0..n {
        let u = stream.unit();
        let (b, c) = if u < cells[0] {
            (true, true)
        } else if u < cells[0] + cells[1] {
            (true, false)
        } else if u < cells[0] + cells[1] + cells[2] {
            (false, true)
        } else {
            (false, false)
        };
        counts.add(b, c);
    }
    counts
}

#[test]
fn the_paired_interval_covers_the_true_difference_in_about_95_percent_of_comparisons() {
    // Correlated stacks: both succeed 80%, only the baseline 3%, only the
    // candidate 7%, neither 10%; the true difference is +4 points.
    let cells = [0.80, 0.03, 0.07];
    let truth = cells[2] - cells[1];
    let reps = 1_000u64;
    let mut stream = StreamSource::new([21; 32], 0).stream("pairs");
    let (mut covered, mut narrower) = (0u64, 0u64);
    for _ in 0..reps {
        let counts = draw_pairs(&mut stream, 300, cells);
        let paired = agentsim::paired::newcombe_paired(&counts);
        let unpaired = agentsim::paired::newcombe_unpaired(
            &Rate::wilson(counts.candidate_successes(), counts.n()),
            &Rate::wilson(counts.baseline_successes(), counts.n()),
        );
        covered += u64::from(paired.contains(truth));
        narrower += u64::from(paired.width() < unpaired.width());
    }
    let coverage = covered as f64 / reps as f64;
    assert!((0.93..=0.975).contains(&coverage), "paired coverage {coverage}");
    // With positively correlated outcomes, pairing narrows the interval nearly always.
    assert!(narrower as f64 / reps as f64 > 0.95, "narrower in only {narrower} of {reps}");
}

#[test]
fn mcnemar_exact_rejects_a_true_null_at_most_about_5_percent_of_the_time() {
    // The stacks differ on 10% of seeds, each direction equally likely.
    let cells = [0.7, 0.05, 0.05];
    let reps = 2_000u64;
    let mut stream = StreamSource::new([22; 32], 0).stream("pairs");
    let rejected = (0..reps)
        .filter(|_| {
            let counts = draw_pairs(&mut stream, 300, cells);
            agentsim::paired::mcnemar_exact(counts.baseline_only, counts.candidate_only) < 0.05
        })
        .count();
    let size = rejected as f64 / reps as f64;
    // The exact test is conservative: its size is at most the nominal 5% (plus noise).
    assert!((0.01..=0.06).contains(&size), "type I error {size}");
}
