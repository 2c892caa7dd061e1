//! Every stack file in `seeds/stacks/` loads, matches its preset where it has one,
//! runs deterministically, and each layer moves the failure mode it targets.

use std::path::Path;

use agentsim::{Runner, SummaryBuilder};
use agentsim_agents::StackSpec;

use crate::common::{agentsim, default_scenario, preset, text};

fn stack_file(name: &str) -> StackSpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/stacks").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    agentsim::spec::parse_stack(&text, &path.to_string_lossy()).unwrap_or_else(|e| panic!("{e}"))
}

fn summary(stack: &StackSpec, seeds: std::ops::Range<u64>, fault_scale: f64) -> agentsim::Summary {
    let prepared = default_scenario();
    let mut builder = SummaryBuilder::new();
    Runner::new(&prepared, stack, false, fault_scale)
        .sweep(seeds.clone(), |t| {
            builder.add(&t);
            Ok::<(), ()>(())
        })
        .unwrap();
    builder.finish("support_desk", "test", seeds, fault_scale)
}

#[test]
fn every_stack_file_loads_and_names_only_known_tools() {
    let prepared = default_scenario();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/stacks");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    for name in names {
        let stack = stack_file(&name);
        assert!(stack.unknown_tools(&prepared.catalog).is_empty(), "{name}");
    }
}

#[test]
fn preset_files_are_the_presets() {
    for name in ["naive", "retry", "backoff", "resilient"] {
        assert_eq!(stack_file(&format!("{name}.ron")), preset(name), "{name}");
    }
}

#[test]
fn a_stack_file_cannot_start_a_process() {
    let err = agentsim::spec::parse_stack("(planner: External(command: \"rm -rf /\"))", "evil.ron").unwrap_err();
    assert!(err.to_string().contains("External"), "{err}");
}

#[test]
fn every_layer_sweeps_byte_identically_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let stacks = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/stacks");
    for name in ["hardened.ron", "context_budget.ron", "backoff.ron", "resilient_from_user.ron"] {
        let stack = stacks.join(name).to_string_lossy().into_owned();
        let mut files = Vec::new();
        for threads in ["1", "4"] {
            let out = format!("{name}-{threads}");
            let args = ["sweep", "--agent", &stack, "--seeds", "0..400", "--out", &out, "--fault-scale", "2"];
            let output = agentsim(dir.path(), &args, &[("RAYON_NUM_THREADS", threads)]);
            assert!(output.status.success(), "{}", text(&output));
            files.push(std::fs::read(dir.path().join(&out).join("trajectories.csv")).unwrap());
        }
        assert!(files[0] == files[1], "{name}: trajectories.csv differs between 1 and 4 threads");
    }
}

#[test]
fn retries_absorb_transient_errors_the_planner_would_otherwise_spend_turns_on() {
    // At three times the default fault rates, the planner without retries spends
    // its turns on 503s; with retries it sees far fewer of them.
    let naive = summary(&preset("naive"), 0..1_500, 3.0);
    let retry = summary(&preset("retry"), 0..1_500, 3.0);
    assert!(retry.turns.p50 < naive.turns.p50, "{:?} vs {:?}", retry.turns, naive.turns);
    assert!(retry.completion.rate > naive.completion.rate, "{:?} vs {:?}", retry.completion, naive.completion);
}

#[test]
fn a_tight_context_budget_makes_the_planner_look_things_up_again() {
    let resilient = summary(&preset("resilient"), 0..1_000, 1.0);
    let tight = summary(&stack_file("context_budget.ron"), 0..1_000, 1.0);
    assert!(tight.tool_calls.p50 > resilient.tool_calls.p50, "{:?} vs {:?}", tight.tool_calls, resilient.tool_calls);
    assert!(tight.turns.p99 > resilient.turns.p99);
}

#[test]
fn the_hardened_stack_never_pays_twice_and_approvals_take_time() {
    let hardened = summary(&stack_file("hardened.ron"), 0..1_000, 1.0);
    let resilient = summary(&preset("resilient"), 0..1_000, 1.0);
    assert!(!hardened.minefields.contains_key("duplicate_refund"), "{:?}", hardened.minefields);
    assert!(hardened.completion.rate >= 0.97, "{:?}", hardened.completion);
    // A human approving each refund costs virtual time.
    assert!(hardened.virtual_ms.p50 > resilient.virtual_ms.p50 + 30_000);
}

#[test]
fn messages_only_to_a_customer_the_user_named() {
    let resilient = summary(&preset("resilient"), 0..2_000, 1.0);
    let from_user = summary(&stack_file("resilient_from_user.ron"), 0..2_000, 1.0);
    // resilient's one remaining violation in support_desk: a final message to a
    // misread customer id. The `FromUser` rule refuses it, and the planner tries again.
    assert!(
        resilient.minefields.get("message_to_wrong_customer").is_some_and(|n| *n > 0),
        "{:?}",
        resilient.minefields
    );
    assert!(!from_user.minefields.contains_key("message_to_wrong_customer"), "{:?}", from_user.minefields);
    assert!(
        from_user.completion.rate > resilient.completion.rate,
        "{:?} vs {:?}",
        from_user.completion,
        resilient.completion
    );
}

#[test]
fn the_summary_counts_each_layers_decisions() {
    let hardened = summary(&stack_file("hardened.ron"), 0..300, 1.0);
    let naive = summary(&preset("naive"), 0..300, 1.0);
    for decision in ["retry.backoff", "approval.requested", "contract.violation", "idempotency.key"] {
        let count = hardened.decisions.get(decision).unwrap_or_else(|| panic!("{decision}: {:?}", hardened.decisions));
        assert!(count.trajectories > 0 && count.times >= count.trajectories, "{decision}: {count:?}");
    }
    assert!(naive.decisions.keys().all(|k| k.starts_with("noisy.")), "{:?}", naive.decisions);
}
