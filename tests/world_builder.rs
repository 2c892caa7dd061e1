//! The public Rust API (`agentsim::prelude`): a world built from closures
//! sweeps deterministically, its typed faults are honoured, and a mistake in
//! it is a located error, not a panic.

use agentsim::prelude::*;
use agentsim_engine::{EventKind, Reply};

/// A counter: where it started, and where it is.
struct Counter {
    start: i64,
    clicks: i64,
}

/// A counter to click once: one write, faults as given, a plan that clicks.
fn counter(faults: &[FaultSpec]) -> WorldBuilder<Counter> {
    let mut builder = WorldBuilder::new("counter", |rng| {
        let start = rng.below(5) as i64;
        Counter { start, clicks: start }
    })
    .tool(write_tool("click", "Clicks once.").field("clicks", ValueKind::Int))
    .tool(read_tool("peek", "Reads the counter.").field("clicks", ValueKind::Int))
    .handle("click", |c, call| {
        if c.clicks > c.start {
            call.minefield("clicked_twice", "a second click");
        }
        c.clicks += 1;
        call.milestone("clicked");
        Ok(Value::map([("clicks", Value::Int(c.clicks))]))
    })
    .handle("peek", |c, _| Ok(Value::map([("clicks", Value::Int(c.clicks))])))
    .opening(|c| Says::new(format!("The counter shows {}: click it once.", c.start)).fact("start", c.start))
    .judge(|c| c.clicks == c.start + 1)
    .plan(
        Plan::new()
            .call("peek", |_| Value::Map(Vec::new()))
            .call("click", |_| Value::Map(Vec::new()))
            .verify("peek", |k| k.result("peek", "clicks").as_int() > k.said("start").as_int()),
    );
    for fault in faults {
        builder = builder.fault("click", fault.clone());
    }
    builder
}

fn faulty() -> BuiltWorld {
    counter(&[FaultSpec::error(503).rate(0.3), FaultSpec::lost_answer().rate(0.2).during(0, 60_000)]).build().unwrap()
}

fn on_threads<T: Send>(threads: usize, run: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(run)
}

#[test]
fn a_built_world_sweeps_the_same_on_1_and_4_threads() {
    let world = faulty();
    let swept = |threads| on_threads(threads, || sweep(&world).agent("naive").seeds(0..400).run().unwrap());
    let (one, four) = (swept(1), swept(4));
    assert_eq!(one.summary.digest, four.summary.digest);
    let digests = |s: &SweepOutput| s.rows.iter().map(|r| r.digest.clone()).collect::<Vec<_>>();
    assert_eq!(digests(&one), digests(&four));
    assert!(one.summary.completion.count < 400, "naive meets the faults");
    // Into a folder: byte for byte the same files, and the summary run in memory.
    let dir = tempfile::tempdir().unwrap();
    let files = |threads: usize| {
        let out = dir.path().join(threads.to_string());
        let summary = on_threads(threads, || sweep(&world).agent("naive").seeds(0..400).write_to(&out).unwrap());
        assert_eq!(summary.digest, one.summary.digest);
        ["trajectories.csv", "summary.json", "run.json"].map(|f| std::fs::read(out.join(f)).unwrap())
    };
    assert_eq!(files(1), files(4));
}

#[test]
fn the_folder_is_read_by_agentsim_report() {
    let dir = tempfile::tempdir().unwrap();
    sweep(&faulty()).agent("resilient").seeds(0..100).write_to(dir.path().join("out")).unwrap();
    let output = crate::common::agentsim(dir.path(), &["report", "out", "-o", "report.html"], &[]);
    assert!(output.status.success(), "{}", crate::common::text(&output));
}

#[test]
fn an_error_rate_of_one_fails_every_call() {
    let world = counter(&[FaultSpec::error(429).rate(1.0)]).build().unwrap();
    let stack = preset("oracle").unwrap();
    for seed in 0..20 {
        let t = Runner::new(world.prepared(), &stack, true, 1.0).run(seed);
        let click = world.prepared().catalog.id("click").unwrap();
        let calls: Vec<u32> = t
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Call { id, call } if call.tool == click => Some(*id),
                _ => None,
            })
            .collect();
        assert!(!calls.is_empty(), "seed {seed}: the expert clicks");
        for e in &t.events {
            if let EventKind::Result { id, reply, .. } = &e.kind
                && calls.contains(id)
            {
                assert!(matches!(reply, Reply::Error { status: 429, .. }), "seed {seed}: {reply:?}");
            }
        }
        assert_eq!(t.outcome, Outcome::Escalated, "seed {seed}: the expert hands over after its failures");
    }
    // At fault scale 0 the same world clicks at once.
    let clean = sweep(&world).agent("oracle").seeds(0..50).fault_scale(0.0).run().unwrap();
    assert_eq!(clean.summary.completion.count, 50);
}

#[test]
fn a_typed_fault_is_the_rule_a_scenario_file_gives() {
    let spec = FaultSpec::error(503).rate(0.25).retry_after_ms(2_000).during(1_000, 9_000);
    let world = counter(&[spec]).build().unwrap();
    let catalog = &world.prepared().catalog;
    let built = &catalog.spec(catalog.id("click").unwrap()).config.faults;
    let text = "(fault: Error(status: 503, retry_after_ms: 2000), when: Window(from_ms: 1000, to_ms: 9000), probability: 0.25)";
    let parsed: agentsim_engine::FaultRule = agentsim_worlds::scenario::ron_options().from_str(text).unwrap();
    assert_eq!(built, &vec![parsed]);
}

#[test]
fn an_unknown_tool_is_a_clear_error() {
    let err = counter(&[]).handle("clack", |_, _| Ok(Value::Null)).build().err().unwrap();
    assert_eq!((err.kind, err.name.as_str()), (BuildErrorKind::UnknownTool, "clack"));
    assert!(err.to_string().contains("its tools: click, peek"), "{err}");
    let err = counter(&[]).fault("clack", FaultSpec::timeout()).build().err().unwrap();
    assert_eq!((err.kind, err.name.as_str()), (BuildErrorKind::UnknownTool, "clack"));
    let err = counter(&[]).latency("peak", fixed_ms(10)).build().err().unwrap();
    assert_eq!((err.kind, err.name.as_str()), (BuildErrorKind::UnknownTool, "peak"));
    let err = counter(&[]).plan(Plan::new().call("clack", |_| Value::Null)).build().err().unwrap();
    assert_eq!((err.kind, err.name.as_str()), (BuildErrorKind::UnknownTool, "clack"));
}

#[test]
fn every_other_mistake_is_a_clear_error() {
    let kind = |builder: WorldBuilder<Counter>| builder.build().err().map(|e| (e.kind, e.name, e.message));
    let (k, name, message) = kind(counter(&[FaultSpec::error(503).rate(1.5)])).unwrap();
    assert_eq!((k, name.as_str()), (BuildErrorKind::BadFault, "click"));
    assert!(message.contains("probability"), "{message}");
    let (k, _, message) = kind(counter(&[FaultSpec::error(200)])).unwrap();
    assert_eq!(k, BuildErrorKind::BadFault);
    assert!(message.contains("400..=599"), "{message}");
    let (k, _, _) = kind(counter(&[FaultSpec::outage(5_000, 1_000)])).unwrap();
    assert_eq!(k, BuildErrorKind::BadFault);
    let (k, _, message) = kind(counter(&[]).latency("peek", uniform_ms(9, 3))).unwrap();
    assert_eq!(k, BuildErrorKind::BadFault);
    assert!(message.contains("max_ms"), "{message}");
    let write_fault_on_a_read = counter(&[]).fault("peek", FaultSpec::duplicate_effect());
    assert_eq!(kind(write_fault_on_a_read).unwrap().0, BuildErrorKind::FaultDoesNotFit);
    let handled_twice = counter(&[]).handle("peek", |_, _| Ok(Value::Null));
    assert_eq!(kind(handled_twice).unwrap().0, BuildErrorKind::DuplicateHandler);
    let unhandled = counter(&[]).tool(read_tool("spare", "Nothing."));
    assert_eq!(kind(unhandled).unwrap().0, BuildErrorKind::MissingHandler);
    let twice = counter(&[]).tool(read_tool("peek", "Again."));
    assert_eq!(kind(twice).unwrap().0, BuildErrorKind::DuplicateTool);
    let reserved = counter(&[]).handle("escalate", |_, _| Ok(Value::Null));
    assert_eq!(kind(reserved).unwrap().0, BuildErrorKind::ReservedTool);
    let unjudged = WorldBuilder::new("w", |_| ());
    assert_eq!(unjudged.build().err().map(|e| e.kind), Some(BuildErrorKind::MissingJudge));
    // The builder's own tools take faults like any other.
    assert!(counter(&[]).fault("authenticate", FaultSpec::error(500).rate(0.1)).build().is_ok());
}

#[test]
fn a_world_without_an_expert_refuses_the_presets_that_wrap_it() {
    let world = WorldBuilder::new("bare", |_| ())
        .tool(read_tool("ping", "Answers."))
        .handle("ping", |_, _| Ok(Value::Map(Vec::new())))
        .judge(|_| false)
        .build()
        .unwrap();
    assert!(!world.has_expert());
    let err = sweep(&world).agent("naive").seeds(0..10).run().err().unwrap();
    assert_eq!(err.kind, SweepErrorKind::NoExpert);
    assert!(err.message.contains("has none"), "{err}");
    // Run directly, the expert gives up at once and says why.
    let t = Runner::new(world.prepared(), &preset("oracle").unwrap(), false, 1.0).run(0);
    assert_eq!(t.outcome, Outcome::GaveUp);
}

#[test]
fn a_sweep_with_bad_arguments_is_a_clear_error() {
    let world = faulty();
    let kind = |b: SweepBuilder<'_>| b.run().err().map(|e| e.kind);
    assert_eq!(kind(sweep(&world).agent("nimble")), Some(SweepErrorKind::UnknownAgent));
    assert_eq!(kind(sweep(&world).seeds(5..5)), Some(SweepErrorKind::BadArgument));
    assert_eq!(kind(sweep(&world).trials(0)), Some(SweepErrorKind::BadArgument));
    assert_eq!(kind(sweep(&world).fault_scale(-1.0)), Some(SweepErrorKind::BadArgument));
}

#[test]
fn two_agents_compare_as_agentsim_compare_does() {
    let prepared = crate::common::default_scenario();
    let comparison = sweep(&prepared).agent("naive").seeds(0..200).compare("resilient").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args =
        ["compare", "--baseline", "naive", "--candidate", "resilient", "--seeds", "0..200", "-o", "cmp", "--quiet"];
    let output = crate::common::agentsim(dir.path(), &args, &[]);
    assert!(output.status.success(), "{}", crate::common::text(&output));
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("cmp/compare.json")).unwrap()).unwrap();
    assert_eq!(serde_json::to_value(&comparison).unwrap(), written);
    // On a built world: the candidate's idempotency keys save it from the lost answers.
    let counter = sweep(&faulty()).agent("naive").seeds(0..300).compare("resilient").unwrap();
    assert!(counter.candidate_completion.count > counter.baseline_completion.count);
}
