//! Properties of the built-in presets over generated fault schedules.

use std::path::PathBuf;

use agentsim_engine::Fault;
use agentsim_property::{Case, builtin, case, case_with, run_case};
use agentsim_worlds::Prepared;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};

/// Saves a failing case as an incident and says how to replay it.
fn kept(prepared: &Prepared, agent: &str, c: &Case, name: &str) -> String {
    let stack = agentsim_agents::preset(agent).expect("preset");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("property-failures");
    std::fs::create_dir_all(&dir).expect("target dir is writable");
    let path = dir.join(format!("{name}.ron"));
    std::fs::write(&path, c.incident(prepared, &stack, agent).to_ron()).expect("target dir is writable");
    format!("minimal case:\n{}\nreplay it with: agentsim replay {}", c.describe(), path.display())
}

proptest! {
    // A fixed seed: the cases, and so the test, are the same on every run.
    #![proptest_config(Config { cases: 200, failure_persistence: None, rng_seed: RngSeed::Fixed(2026), ..Config::default() })]

    #[test]
    fn resilient_never_refunds_outside_zero_to_the_order_total(c in case(&builtin("support_desk"), 0..200, 6, 6)) {
        let prepared = builtin("support_desk");
        let t = run_case(&prepared, &agentsim_agents::preset("resilient").unwrap(), &c);
        prop_assert!(
            !t.minefields.iter().any(|m| *m == "refund_not_positive" || *m == "refund_over_total"),
            "{:?}\n{}", t.minefields, kept(&prepared, "resilient", &c, "refund_range")
        );
    }

    #[test]
    fn with_idempotency_keys_no_commit_then_timeout_schedule_pays_twice(
        c in case_with(&builtin("support_desk"), 0..200, 4, 4, || Just(Fault::CommitThenTimeout))
    ) {
        let prepared = builtin("support_desk");
        let t = run_case(&prepared, &agentsim_agents::preset("resilient").unwrap(), &c);
        prop_assert!(
            !t.minefields.contains(&"duplicate_refund"),
            "{}", kept(&prepared, "resilient", &c, "duplicate_refund")
        );
    }
}

/// The other side: without keys the same property fails, and proptest shrinks the
/// schedule to the one fault that matters.
#[test]
fn naive_pays_twice_and_the_counterexample_shrinks_to_one_lost_answer() {
    let prepared = builtin("support_desk");
    let naive = agentsim_agents::preset("naive").unwrap();
    let config = Config { cases: 500, failure_persistence: None, rng_seed: RngSeed::Fixed(2026), ..Config::default() };
    let mut runner = TestRunner::new(config);
    let strategy = case_with(&prepared, 0..200, 4, 4, || Just(Fault::CommitThenTimeout));
    let result = runner.run(&strategy, |c| {
        let t = run_case(&prepared, &naive, &c);
        prop_assert!(!t.minefields.contains(&"duplicate_refund"));
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, minimal)) => {
            let t = run_case(&prepared, &naive, &minimal);
            assert!(t.minefields.contains(&"duplicate_refund"));
            // The lost answer on the refund is in it, and nothing that is not needed:
            // without any one of its faults the double refund goes away.
            assert!(minimal.faults.iter().any(|f| f.tool == "issue_refund"), "{}", minimal.describe());
            assert!(minimal.faults.len() <= 2, "{}", minimal.describe());
            for i in 0..minimal.faults.len() {
                let mut fewer = minimal.clone();
                fewer.faults.remove(i);
                let t = run_case(&prepared, &naive, &fewer);
                assert!(!t.minefields.contains(&"duplicate_refund"), "fault {i} not needed: {}", minimal.describe());
            }
        }
        other => panic!("naive should pay twice under some lost answer: {other:?}"),
    }
}

// ---- The quiet faults (Corrupt, Inject, PartialCommit, DuplicateEffect) in generated schedules ----

fn stack_file(name: &str) -> agentsim_agents::StackSpec {
    let path = format!("{}/seeds/stacks/{name}", env!("CARGO_MANIFEST_DIR"));
    agentsim::spec::parse_stack(&std::fs::read_to_string(&path).unwrap(), &path).unwrap_or_else(|e| panic!("{e}"))
}

/// The stacks a generated case runs with: presets and the stack files whose
/// layers answer the quiet faults.
fn stacks() -> Vec<(String, agentsim_agents::StackSpec)> {
    let mut stacks: Vec<(String, agentsim_agents::StackSpec)> =
        ["naive", "resilient"].iter().map(|p| (p.to_string(), agentsim_agents::preset(p).unwrap())).collect();
    for file in ["cross_check.ron", "provenance.ron", "verify_write.ron"] {
        stacks.push((format!("seeds/stacks/{file}"), stack_file(file)));
    }
    stacks
}

/// The quiet kinds in a case, to know the strategy reaches them.
fn quiet_kinds(c: &Case) -> [bool; 4] {
    let has = |f: fn(&Fault) -> bool| c.faults.iter().any(|t| f(&t.fault.fault));
    [
        has(|f| matches!(f, Fault::Corrupt { .. })),
        has(|f| matches!(f, Fault::Inject { .. })),
        has(|f| matches!(f, Fault::PartialCommit { .. })),
        has(|f| matches!(f, Fault::DuplicateEffect)),
    ]
}

#[test]
fn generated_schedules_with_every_fault_kind_are_valid_bounded_and_replay_bit_for_bit() {
    let seen: [std::sync::atomic::AtomicUsize; 4] = Default::default();
    for world in ["support_desk", "flight_booking", "newsroom", "weather_dining"] {
        let prepared = builtin(world);
        let config = Config { cases: 24, failure_persistence: None, rng_seed: RngSeed::Fixed(17), ..Config::default() };
        let mut runner = TestRunner::new(config);
        let stacks = stacks();
        let result = runner.run(&case(&prepared, 0..100, 6, 3), |c| {
            for (i, kind) in quiet_kinds(&c).iter().enumerate() {
                seen[i].fetch_add(usize::from(*kind), std::sync::atomic::Ordering::Relaxed);
            }
            for (name, stack) in &stacks {
                // The schedule is one a scenario file may hold: the incident parses,
                // which checks every fault against its tool.
                let incident = c.incident(&prepared, stack, name);
                let parsed = agentsim::incident::Incident::parse(&incident.to_ron(), "generated")
                    .map_err(|e| TestCaseError::fail(format!("{e}\n{}", c.describe())))?;
                let replayed = parsed.replay(&parsed.prepared(), None);
                prop_assert!(
                    matches!(parsed.check(&parsed.prepared(), &replayed), agentsim::incident::Replay::Match),
                    "{world} {name}: the replay diverged\n{}",
                    c.describe()
                );
                let t = run_case(&prepared, stack, &c);
                prop_assert_eq!(t.digest, replayed.digest, "recording changes nothing");
                let b = &prepared.scenario.budgets;
                prop_assert!(t.metrics.tool_calls <= b.tool_calls_max, "{world} {name}: tool calls bounded");
                prop_assert!(t.metrics.virtual_ms <= prepared.scenario.horizon_ms, "{world} {name}: horizon bounded");
                prop_assert!(t.metrics.events <= b.events_max + 64, "{world} {name}: events bounded");
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{world}: {e}");
        }
    }
    let seen = seen.map(|n| n.into_inner());
    assert!(
        seen.iter().all(|n| *n > 0),
        "every quiet kind was generated (Corrupt, Inject, Partial, Duplicate): {seen:?}"
    );
}

/// Refund faults only: the writes that half-happen, happen twice or lose their answer.
fn refund_case() -> impl Strategy<Value = Case> {
    let faults = prop_oneof![
        (1u8..=99).prop_map(|percent| Fault::PartialCommit { arg: "amount_cents".into(), percent }),
        Just(Fault::DuplicateEffect),
        Just(Fault::CommitThenTimeout),
    ];
    (0u64..200, agentsim_property::schedule(faults, 4, 4)).prop_map(|(seed, calls)| Case {
        seed,
        faults: calls
            .into_iter()
            .map(|fault| agentsim::shrink::ToolFault { tool: "issue_refund".into(), fault })
            .collect(),
    })
}

/// The oracle with keys and retries, with or without the read-back.
fn keyed_oracle(verify: bool) -> agentsim_agents::StackSpec {
    let mut stack = stack_file("verify_write.ron");
    stack.planner = agentsim_agents::PlannerSpec::Oracle;
    stack.layers.retain(|l| verify || !matches!(l, agentsim_agents::LayerSpec::VerifyWrite(_)));
    stack
}

/// Whatever the refund API does, the verified stack either meets the request and
/// tells the customer the truth, or hands the case to a human: never a silent
/// wrong result, never a refund paid twice by the agent.
fn refund_ends_safely(t: &agentsim_engine::Trajectory) -> Result<(), TestCaseError> {
    use agentsim_engine::Outcome;
    prop_assert!(matches!(t.outcome, Outcome::Success | Outcome::Escalated), "{}: {}", t.outcome, t.verdict.detail);
    prop_assert!(!t.minefields.contains(&"duplicate_refund"));
    if t.outcome == Outcome::Success {
        prop_assert_eq!(t.verdict.told_accurately, Some(true));
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 200, failure_persistence: None, rng_seed: RngSeed::Fixed(2026), ..Config::default() })]

    #[test]
    fn with_read_back_no_refund_schedule_ends_in_a_silent_wrong_result(c in refund_case()) {
        let prepared = builtin("support_desk");
        let t = run_case(&prepared, &keyed_oracle(true), &c);
        refund_ends_safely(&t).map_err(|e| TestCaseError::fail(format!("{e}\n{}", c.describe())))?;
    }
}

/// The other side: without the read-back the same property fails.
#[test]
fn without_read_back_some_refund_schedule_ends_in_a_silent_wrong_result() {
    let prepared = builtin("support_desk");
    let config = Config { cases: 200, failure_persistence: None, rng_seed: RngSeed::Fixed(2026), ..Config::default() };
    let result = TestRunner::new(config)
        .run(&refund_case(), |c| refund_ends_safely(&run_case(&prepared, &keyed_oracle(false), &c)));
    assert!(matches!(result, Err(TestError::Fail(..))), "keys and retries alone should not be enough: {result:?}");
}
