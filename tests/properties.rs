//! Properties of the built-in presets over generated fault schedules.

use std::path::PathBuf;

use agentsim::property::{Case, builtin, case, case_with, run_case};
use agentsim_engine::Fault;
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
