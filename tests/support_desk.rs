//! support_desk's milestones and its impatient customer.

use agentsim::Runner;

use crate::common::preset;
use crate::world_kit::{builtin, parse};

#[test]
fn the_oracle_reaches_the_last_milestone_in_order() {
    let p = builtin("support_desk");
    let stack = preset("oracle");
    let runner = Runner::new(&p, &stack, false, 0.0);
    for seed in 0..100 {
        let t = runner.run(seed);
        assert_eq!(t.outcome.name(), "success", "seed {seed}: {}", t.verdict.detail);
        assert_eq!(t.verdict.milestone, "customer_told", "seed {seed}");
    }
}

#[test]
fn an_impatient_customer_leaves_and_the_run_fails_as_given_up() {
    let p = parse(
        r#"Scenario(name: "impatient", world: SupportDesk(
            personas: (clear: 0, vague: 0, changes_mind: 0, impatient: 1),
            patience_ms: 1_000,
            reply_ms: Uniform(min_ms: 30_000, max_ms: 30_000),
        ))"#,
    );
    let stack = preset("oracle");
    let runner = Runner::new(&p, &stack, true, 0.0);
    for seed in 0..20 {
        let t = runner.run(seed);
        assert_eq!(t.outcome.name(), "gave_up", "seed {seed}: {}", t.verdict.detail);
        assert!(t.verdict.detail.contains("the customer left"), "{}", t.verdict.detail);
        assert!(
            t.events.iter().any(|e| matches!(e.kind, agentsim_engine::EventKind::World { what: "customer_left", .. }))
        );
    }
}
