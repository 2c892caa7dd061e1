//! The presets against each other on the default scenario.

use agentsim::{Runner, SummaryBuilder};
use agentsim_engine::Outcome;

use crate::common::{default_scenario, preset};

fn sweep(name: &str, seeds: std::ops::Range<u64>) -> agentsim::Summary {
    let prepared = default_scenario();
    let stack = preset(name);
    let mut builder = SummaryBuilder::new();
    Runner::new(&prepared, &stack, false, 1.0)
        .sweep(seeds.clone(), |t| {
            builder.add(&t);
            Ok::<(), ()>(())
        })
        .unwrap();
    builder.finish("support_desk", name, seeds, 1.0)
}

#[test]
fn naive_fails_measurably_more_often_than_resilient() {
    let naive = sweep("naive", 0..2_000);
    let resilient = sweep("resilient", 0..2_000);
    assert!(
        naive.completion.hi < resilient.completion.lo,
        "naive {:?} vs resilient {:?}",
        naive.completion,
        resilient.completion
    );
    assert!(naive.violation.rate > resilient.violation.rate, "{:?} vs {:?}", naive.violation, resilient.violation);
}

#[test]
fn the_oracle_is_the_upper_bound() {
    let oracle = sweep("oracle", 0..1_000);
    let resilient = sweep("resilient", 0..1_000);
    assert!(oracle.completion.rate >= 0.95, "{:?}", oracle.completion);
    assert!(oracle.completion.rate >= resilient.completion.rate);
}

#[test]
fn with_faults_off_every_preset_but_naive_mistakes_succeeds() {
    let prepared = default_scenario();
    let stack = preset("oracle");
    let runner = Runner::new(&prepared, &stack, false, 0.0);
    for seed in 0..300 {
        let t = runner.run(seed);
        // The rate limit is a state, not a draw: scale 0 leaves it, and the oracle
        // waits it out.
        assert_eq!(t.outcome, Outcome::Success, "seed {seed}: {}", t.verdict.detail);
    }
}

fn stack_file(name: &str) -> agentsim_agents::StackSpec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/stacks").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    agentsim::spec::parse_stack(&text, &path.to_string_lossy()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_resilient_stack_file_is_the_resilient_preset() {
    assert_eq!(stack_file("resilient.ron"), preset("resilient"));
}

#[test]
fn retrying_writes_without_idempotency_keys_pays_refunds_twice() {
    let prepared = default_scenario();
    let count_duplicates = |stack: &agentsim_agents::StackSpec| {
        let runner = Runner::new(&prepared, stack, false, 1.0);
        (0..1_000).filter(|&seed| runner.run(seed).minefields.contains(&"duplicate_refund")).count()
    };
    let without_keys = count_duplicates(&stack_file("retry_without_keys.ron"));
    let resilient = count_duplicates(&preset("resilient"));
    assert!(without_keys > 100, "{without_keys} duplicate refunds in 1000 runs");
    assert_eq!(resilient, 0, "idempotency keys make every retried refund safe");
}

#[test]
fn a_stack_file_with_an_unknown_field_is_refused_with_its_position() {
    let err = agentsim::spec::parse_stack("(\n  planner: Oracle,\n  layres: [],\n)", "bad.ron").unwrap_err();
    assert_eq!((err.line, err.column), (3, 3), "{err}");
    assert!(err.to_string().contains("layres"), "{err}");
}
