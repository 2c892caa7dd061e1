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
