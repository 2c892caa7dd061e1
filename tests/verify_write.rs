//! The `VerifyWrite` layer on the writes that lie: a refund the service applies
//! in part is completed, one it applies twice is escalated, and the layer's
//! output is the same on any thread count.

use agentsim::Runner;
use agentsim_agents::layers::{RetryConfig, VerifyWriteConfig, WriteCheck};
use agentsim_agents::{LayerSpec, PlannerSpec, StackSpec};
use agentsim_engine::{EventKind, Outcome, Trajectory, Value};
use agentsim_worlds::{Prepared, Scenario};

use crate::common::preset;
use crate::world_kit::parse;

fn seeds_file(name: &str) -> String {
    format!("{}/seeds/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn scenario(name: &str) -> Prepared {
    let path = seeds_file(name);
    Prepared::new(Scenario::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap_or_else(|e| panic!("{e}")))
}

fn stack_file() -> StackSpec {
    let path = seeds_file("stacks/verify_write.ron");
    agentsim::spec::parse_stack(&std::fs::read_to_string(&path).unwrap(), &path).unwrap_or_else(|e| panic!("{e}"))
}

/// The oracle with idempotency keys and retries, with or without the check on
/// refunds: the stack that already does everything right but read back.
fn oracle_stack(verify: bool) -> StackSpec {
    let check = WriteCheck {
        write: "issue_refund".into(),
        amount: "amount_cents".into(),
        read: "lookup_order".into(),
        total: "refunded_cents".into(),
        cap: None,
    };
    let mut layers = vec![LayerSpec::Idempotency];
    if verify {
        layers.push(LayerSpec::VerifyWrite(VerifyWriteConfig { checks: vec![check], ..VerifyWriteConfig::default() }));
    }
    layers.push(LayerSpec::Retry(RetryConfig::default()));
    StackSpec { planner: PlannerSpec::Oracle, layers }
}

/// support_desk whose first refund call suffers `fault`, and nothing else does.
fn first_refund(fault: &str) -> Prepared {
    parse(&format!(
        r#"Scenario(
    name: "first refund faulty",
    world: SupportDesk(tools: (issue_refund: (explicit_faults: [(call: 1, fault: {fault})]))),
)"#
    ))
}

fn decided(t: &Trajectory, what: &str) -> bool {
    t.decisions.iter().any(|(source, w, _)| *source == "verify_write" && *w == what)
}

/// The refund amounts the world applied, in order.
fn refunds(t: &Trajectory) -> Vec<i64> {
    t.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::World { what: "refund_issued", detail } => detail.get("amount_cents").and_then(Value::as_int),
            _ => None,
        })
        .collect()
}

#[test]
fn a_half_applied_refund_is_completed_and_the_request_is_met() {
    let prepared = first_refund(r#"PartialCommit(arg: "amount_cents", percent: 50)"#);
    for seed in 0..20 {
        let without = Runner::new(&prepared, &oracle_stack(false), true, 1.0).run(seed);
        assert_eq!(without.outcome, Outcome::WrongResult, "seed {seed}: {}", without.verdict.detail);
        assert_eq!(refunds(&without).len(), 1, "the retry replays the half refund's key");

        let with = Runner::new(&prepared, &oracle_stack(true), true, 1.0).run(seed);
        assert_eq!(with.outcome, Outcome::Success, "seed {seed}: {}", with.verdict.detail);
        let applied = refunds(&with);
        assert_eq!(applied.len(), 2, "the half, then the rest: {applied:?}");
        assert!(applied[0] > 0 && applied[1] >= applied[0], "{applied:?}");
        assert!(!with.minefields.contains(&"duplicate_refund"), "completing is not refunding twice");
        assert!(decided(&with, "partial") && decided(&with, "completed"), "{:?}", with.decisions);
        assert_eq!(with.verdict.told_accurately, Some(true), "the customer is told the amount now refunded");
    }
}

#[test]
fn a_refund_applied_twice_is_escalated_and_the_customer_is_never_told_done() {
    let prepared = first_refund("DuplicateEffect");
    let send_message = prepared.catalog.id("send_message").unwrap();
    for seed in 0..20 {
        let without = Runner::new(&prepared, &oracle_stack(false), true, 1.0).run(seed);
        assert_eq!(without.outcome, Outcome::WrongResult, "seed {seed}: {}", without.verdict.detail);

        let with = Runner::new(&prepared, &oracle_stack(true), true, 1.0).run(seed);
        assert_eq!(with.outcome, Outcome::Escalated, "seed {seed}: {}", with.verdict.detail);
        assert!(decided(&with, "duplicated"), "{:?}", with.decisions);
        let told_done = with.events.iter().any(|e| match &e.kind {
            EventKind::Call { call, .. } => {
                call.tool == send_message && call.args.get("kind").and_then(Value::as_str) == Some("done")
            }
            _ => false,
        });
        assert!(!told_done, "seed {seed}: the planner never hears the refund went through");
        assert_eq!(refunds(&with).len(), 2, "nothing more is refunded");
    }
}

fn outcomes(prepared: &Prepared, stack: &StackSpec, seeds: std::ops::Range<u64>) -> Vec<Trajectory> {
    let runner = Runner::new(prepared, stack, false, 1.0);
    seeds.map(|s| runner.run(s)).collect()
}

fn count(ts: &[Trajectory], outcome: Outcome) -> usize {
    ts.iter().filter(|t| t.outcome == outcome).count()
}

#[test]
fn the_stack_file_fixes_partial_refunds_and_turns_duplicated_ones_from_wrong_into_escalated() {
    let partial = scenario("partial_refunds.ron");
    let (base, verified) =
        (outcomes(&partial, &preset("resilient"), 0..400), outcomes(&partial, &stack_file(), 0..400));
    assert!(
        count(&base, Outcome::WrongResult) >= 80,
        "the scenario shows the harm: {}",
        count(&base, Outcome::WrongResult)
    );
    assert!(count(&verified, Outcome::WrongResult) <= 2, "{}", count(&verified, Outcome::WrongResult));
    assert!(
        count(&verified, Outcome::Success) >= count(&base, Outcome::Success) + 80,
        "{} against {}",
        count(&verified, Outcome::Success),
        count(&base, Outcome::Success)
    );
    assert!(verified.iter().all(|t| !t.minefields.contains(&"duplicate_refund")));

    let duplicated = scenario("duplicated_refunds.ron");
    let (base, verified) =
        (outcomes(&duplicated, &preset("resilient"), 0..400), outcomes(&duplicated, &stack_file(), 0..400));
    let wrong = count(&base, Outcome::WrongResult);
    assert!(wrong >= 50, "the scenario shows the harm: {wrong}");
    assert!(count(&verified, Outcome::WrongResult) <= 2, "{}", count(&verified, Outcome::WrongResult));
    assert!(count(&verified, Outcome::Escalated) + 2 >= wrong, "every doubled refund goes to a human");
    assert_eq!(count(&verified, Outcome::Success), count(&base, Outcome::Success), "no refund is taken back");
}

#[test]
fn verify_write_sweeps_are_byte_identical_on_1_and_4_threads() {
    for name in ["partial_refunds.ron", "duplicated_refunds.ron"] {
        let stack = seeds_file("stacks/verify_write.ron");
        crate::world_kit::assert_same_bytes_on_1_and_4_threads(&seeds_file(name), &stack, "0..300");
    }
}
