//! Checks against numbers known in advance: configured rates, token buckets,
//! and common random numbers across stacks.

use agentsim::Runner;
use agentsim::rate::Rate;
use agentsim_engine::runtime::ToolRuntime;
use agentsim_engine::{
    Catalog, EventKind, Fault, FaultRule, FaultTag, Probability, Schedule, StreamSource, ToolCall, ToolConfig, ToolDef,
    ToolKind, ToolSpec, Value, ValueKind,
};

use crate::common::{default_scenario, preset};

fn one_tool(faults: Vec<FaultRule>) -> Catalog {
    Catalog::new(vec![ToolSpec {
        def: ToolDef::new("ping", ToolKind::Read, "answers").field("ok", ValueKind::Bool),
        config: ToolConfig { faults, ..ToolConfig::default() },
    }])
}

fn rule(fault: Fault, when: Schedule, p: f64) -> FaultRule {
    FaultRule { fault, when, probability: Probability::try_from(p).unwrap() }
}

fn serve(_: &ToolCall, _: u64) -> Result<Value, agentsim_engine::ToolError> {
    Ok(Value::map([("ok", Value::Bool(true))]))
}

#[test]
fn realised_503_rate_lies_in_the_wilson_interval_of_the_configured_rate() {
    let catalog = one_tool(vec![rule(Fault::Error { status: 503, retry_after_ms: None }, Schedule::Always, 0.2)]);
    let call = ToolCall::new(catalog.id("ping").unwrap(), Value::map::<&str>([]));
    let mut runtime = ToolRuntime::new(&catalog, &StreamSource::new([3; 32], 11));
    let n = 10_000u64;
    let errors =
        (0..n).filter(|i| runtime.call(i * 1_000, &call, &mut serve).fault == Some(FaultTag::Error(503))).count();
    let rate = Rate::wilson(errors as u64, n);
    assert!(rate.contains(0.2), "realised {errors}/{n}: {rate:?}");
}

#[test]
fn windowed_fault_fires_only_inside_its_window() {
    let catalog = one_tool(vec![rule(Fault::Timeout, Schedule::Window { from_ms: 10_000, to_ms: 20_000 }, 1.0)]);
    let call = ToolCall::new(catalog.id("ping").unwrap(), Value::map::<&str>([]));
    let mut runtime = ToolRuntime::new(&catalog, &StreamSource::new([3; 32], 1));
    for t in (0..30_000).step_by(500) {
        let timed_out = runtime.call(t, &call, &mut serve).fault == Some(FaultTag::Timeout);
        assert_eq!(timed_out, (10_000..20_000).contains(&t), "at {t} ms");
    }
}

#[test]
fn token_bucket_admits_capacity_plus_refills() {
    // Capacity 2, one token back every 15 s; a call every second for 60 s:
    // 2 at once, then one per 15 s (at 15, 30, 45 s) = 5 admitted in [0, 60).
    let catalog = one_tool(vec![rule(Fault::RateLimit { capacity: 2, refill_ms: 15_000 }, Schedule::Always, 1.0)]);
    let call = ToolCall::new(catalog.id("ping").unwrap(), Value::map::<&str>([]));
    let mut runtime = ToolRuntime::new(&catalog, &StreamSource::new([3; 32], 1));
    let mut admitted = 0;
    for t in (0..60_000).step_by(1_000) {
        let served = runtime.call(t, &call, &mut serve);
        if served.reply.is_ok() {
            admitted += 1;
        } else {
            assert_eq!(served.reply.status(), 429);
            let wait = served.reply.retry_after_ms().expect("429 carries retry_after");
            assert!(wait > 0 && wait <= 15_000, "retry_after {wait}");
        }
    }
    assert_eq!(admitted, 5);
}

/// Per call of `tool`: (call number, fault, latency) from a recorded trajectory.
fn calls_of(t: &agentsim_engine::Trajectory, tool: agentsim_engine::ToolId) -> Vec<(Option<FaultTag>, u64)> {
    let mut ids = Vec::new();
    let mut out = Vec::new();
    for e in &t.events {
        match &e.kind {
            EventKind::Call { id, call } if call.tool == tool => ids.push(*id),
            EventKind::Result { id, fault, latency_ms, .. } if ids.contains(id) => out.push((*fault, *latency_ms)),
            _ => {}
        }
    }
    out
}

#[test]
fn two_presets_on_the_same_seed_meet_the_same_faults_on_shared_tools() {
    let prepared = default_scenario();
    let lookup = prepared.catalog.id("lookup_order").unwrap();
    let (naive, resilient) = (preset("naive"), preset("resilient"));
    let mut compared = 0;
    for seed in 0..200 {
        let a = calls_of(&Runner::new(&prepared, &naive, true, 1.0).run(seed), lookup);
        let b = calls_of(&Runner::new(&prepared, &resilient, true, 1.0).run(seed), lookup);
        for (k, (x, y)) in a.iter().zip(&b).enumerate() {
            // A session expired by another tool masks the draw; everything else is the
            // call's own luck and must match.
            if x.0 == Some(FaultTag::AuthExpired) || y.0 == Some(FaultTag::AuthExpired) {
                continue;
            }
            assert_eq!(x, y, "seed {seed}, call {} of lookup_order", k + 1);
            compared += 1;
        }
    }
    assert!(compared > 300, "only {compared} calls compared");
}

#[test]
fn an_explored_interleaving_redraws_latencies_and_keeps_the_faults() {
    let catalog = one_tool(vec![rule(Fault::Error { status: 503, retry_after_ms: None }, Schedule::Always, 0.3)]);
    let call = ToolCall::new(catalog.id("ping").unwrap(), Value::map::<&str>([]));
    let streams = StreamSource::new([3; 32], 5);
    let run = |k: u32| {
        let mut runtime = ToolRuntime::new(&catalog, &streams).with_interleaving(k);
        (0..200u64)
            .map(|i| runtime.call(i * 10_000, &call, &mut serve))
            .map(|s| (s.fault, s.latency_ms))
            .collect::<Vec<_>>()
    };
    let (seeded, again, explored) = (run(0), run(0), run(1));
    assert_eq!(seeded, again, "the seed's schedule replays");
    let faults = |calls: &[(Option<FaultTag>, u64)]| calls.iter().map(|c| c.0).collect::<Vec<_>>();
    assert_eq!(faults(&seeded), faults(&explored), "the same calls fail");
    assert!(seeded.iter().any(|c| c.0.is_some()), "some calls fail");
    let moved = seeded.iter().zip(&explored).filter(|(a, b)| a.1 != b.1).count();
    assert!(moved > 150, "latencies are drawn anew: {moved} of 200 moved");
    let mean = |calls: &[(Option<FaultTag>, u64)]| calls.iter().map(|c| c.1 as f64).sum::<f64>() / 200.0;
    let (a, b) = (mean(&seeded), mean(&explored));
    assert!((a - b).abs() < 0.3 * a.max(b), "from the same distribution: means {a} and {b}");
}
