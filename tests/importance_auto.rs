//! Importance sampling with a tilt per fault rule: the draws and hits the engine
//! records for the cross-entropy method, tilts files, and `--importance auto`
//! checked against the closed form of `seeds/rare_failure.ron` (p^3 = 1e-6).

use agentsim::Runner;
use agentsim::cross_entropy::{Target, choose};
use agentsim::tilts::{Method, Plan, parse_tilts};
use agentsim_engine::rng::{CHANCE_ONE, chance_threshold};
use agentsim_engine::runtime::ToolRuntime;
use agentsim_engine::{
    Catalog, Fault, FaultRule, Outcome, Probability, Schedule, StreamSource, ToolCall, ToolConfig, ToolDef, ToolKind,
    ToolSpec, Value, ValueKind,
};

use crate::common::{agentsim, text};

const P_FAIL: f64 = 0.01;

/// The nominal failure rate of rare_failure with three attempts, as the draws
/// realise it: `(floor(p 2^53) / 2^53)^3`.
fn truth() -> f64 {
    (chance_threshold(P_FAIL) as f64 / CHANCE_ONE as f64).powi(3)
}

fn rare_failure() -> (agentsim_worlds::Prepared, agentsim_agents::StackSpec) {
    let root = env!("CARGO_MANIFEST_DIR");
    let prepared = agentsim::load::scenario(&format!("{root}/seeds/rare_failure.ron")).unwrap();
    let text = std::fs::read_to_string(format!("{root}/seeds/stacks/three_attempts.ron")).unwrap();
    let stack = agentsim::spec::parse_stack(&text, "three_attempts.ron").unwrap();
    (prepared, stack)
}

/// The summary of `runner` over `seeds`, weighed as `plan` says.
fn summarise(runner: &Runner, seeds: std::ops::Range<u64>, plan: Plan) -> agentsim::Summary {
    let mut builder = agentsim::SummaryBuilder::new().with_importance_plan(Some(plan));
    runner
        .sweep(seeds.clone(), |t| {
            builder.add(&t);
            Ok::<(), ()>(())
        })
        .unwrap();
    builder.finish("rare_failure", "three_attempts", seeds, 1.0)
}

fn flaky_tool() -> Catalog {
    let rule = FaultRule {
        fault: Fault::Error { status: 503, retry_after_ms: None },
        when: Schedule::Always,
        probability: Probability::try_from(P_FAIL).unwrap(),
    };
    let latency = FaultRule {
        fault: Fault::Latency { extra_ms: 5 },
        when: Schedule::Always,
        probability: Probability::try_from(0.5).unwrap(),
    };
    Catalog::new(vec![ToolSpec {
        def: ToolDef::new("ping", ToolKind::Read, "answers").field("ok", ValueKind::Bool),
        config: ToolConfig { faults: vec![rule, latency], ..ToolConfig::default() },
    }])
}

/// The engine counts each rule's decisive draws and hits, only in an
/// importance run; and a table of sampled probabilities gives exact weights.
#[test]
fn rule_draws_count_the_decisive_draws_and_weights_stay_exact() {
    let catalog = flaky_tool();
    let call = ToolCall::new(catalog.id("ping").unwrap(), Value::map::<&str>([]));
    let serve = &mut |_: &ToolCall, _: u64| Ok(Value::map([("ok", Value::Bool(true))]));
    let table = agentsim_engine::likelihood::RuleProbabilities::new(vec![vec![0.4, 0.5], vec![]]);
    for seed in 0..200 {
        let streams = StreamSource::new([3; 32], seed);
        let mut runtime = ToolRuntime::new(&catalog, &streams)
            .with_nominal_fault_scale(Some(1.0))
            .with_sampled_probabilities(Some(table.clone()));
        let replies: Vec<_> = (0..5u64).map(|i| runtime.call(i * 1_000, &call, serve)).collect();
        let failed = replies.iter().filter(|s| !s.reply.is_ok()).count() as u32;
        let slow = replies.iter().filter(|s| s.realised.contains(&Fault::Latency { extra_ms: 5 })).count() as u32;
        let draws = runtime.rule_draws();
        assert_eq!((draws[0].draws, draws[0].hits), (5, failed), "seed {seed}");
        assert_eq!((draws[1].draws, draws[1].hits), (5, slow), "seed {seed}");
        // The latency rule is drawn at its nominal 0.5: it weighs nothing.
        let expected = f64::from(failed) * (P_FAIL / 0.4).ln() + f64::from(5 - failed) * (0.99f64 / 0.6).ln();
        assert!((runtime.log_weight().ln() - expected).abs() < 1e-12, "seed {seed}");
        let plain = ToolRuntime::new(&catalog, &streams);
        assert!(plain.rule_draws().is_empty(), "a plain run records nothing");
    }
}

/// A plan of one scale draws exactly as `--importance SCALE` does: the same
/// runs, weights and summary; a plain run carries no draws.
#[test]
fn a_plan_of_one_scale_is_the_scale() {
    let (prepared, stack) = rare_failure();
    let plan = Plan::of_scale(&prepared.catalog, 1.0, 30.0);
    let by_table =
        Runner::new(&prepared, &stack, false, 1.0).with_tilts(Some(plan.probabilities(&prepared.catalog, 1.0)));
    let by_scale = Runner::new(&prepared, &stack, false, 1.0).with_importance(Some(30.0));
    for seed in 0..100 {
        let (a, b) = (by_table.run(seed), by_scale.run(seed));
        assert_eq!((a.digest, a.log_weight), (b.digest, b.log_weight), "seed {seed}");
        assert_eq!(a.rule_draws, b.rule_draws);
        assert!(a.rule_draws[0].draws >= 1);
        assert!(Runner::new(&prepared, &stack, false, 1.0).run(seed).rule_draws.is_empty());
    }
}

#[test]
fn a_tilts_file_sets_each_rule() {
    let (prepared, _) = rare_failure();
    let text = "Tilts(rules: [(tool: \"lookup_order\", rule: 0, probability: 0.25)])";
    let plan = parse_tilts(text, "t.ron", &prepared.catalog, 1.0).unwrap();
    assert_eq!(plan.method, Method::Tilts);
    assert_eq!(plan.scale, Some(1.0));
    assert_eq!((plan.tilts[0].nominal, plan.tilts[0].sampled), (0.01, 0.25));
    let text = "Tilts(scale: 2.0, rules: [(tool: \"lookup_order\", rule: 0, scale: 40.0)])";
    let plan = parse_tilts(text, "t.ron", &prepared.catalog, 0.5).unwrap();
    assert_eq!((plan.tilts[0].nominal, plan.tilts[0].sampled), (0.005, 0.2));
}

/// The cross-entropy method on the closed form: it finds that failing every
/// attempt is what matters, and its sweep estimates p^3 within 10% with an
/// interval that covers it, from two thousand runs, with a larger effective
/// sample size for the failure than the hand-picked `--importance 30`.
#[test]
fn auto_finds_the_tilt_for_one_in_a_million() {
    let (prepared, stack) = rare_failure();
    let target = Target::parse("gave_up").unwrap();
    let plan = choose(&prepared, &stack, 1.0, &target, 400).unwrap();
    assert_eq!(plan.method, Method::CrossEntropy);
    assert_eq!(plan.scale, None);
    let pilot = plan.pilot.clone().unwrap();
    assert!(pilot.iterations >= 2 && pilot.iterations <= 8, "{pilot:?}");
    assert_eq!(pilot.trajectories, u64::from(pilot.iterations) * 400);
    // Given the failure, every lookup failed: the fit is the upper edge.
    assert!(plan.tilts[0].sampled >= 0.9, "{:?}", plan.tilts);

    let seeds = 0..2_000;
    let table = plan.probabilities(&prepared.catalog, 1.0);
    let runner = Runner::new(&prepared, &stack, false, 1.0).with_tilts(Some(table));
    let auto = summarise(&runner, seeds.clone(), plan.clone());
    let auto = auto.importance.unwrap();
    let gave_up = auto.rates["gave_up"];
    assert!((gave_up.estimate / truth() - 1.0).abs() < 0.10, "{gave_up:?} vs {}", truth());
    assert!(gave_up.contains(truth()), "{gave_up:?} does not cover {}", truth());

    let scaled_plan = Plan::of_scale(&prepared.catalog, 1.0, 30.0);
    let scaled = summarise(&Runner::new(&prepared, &stack, false, 1.0).with_importance(Some(30.0)), seeds, scaled_plan);
    let scaled = scaled.importance.unwrap();
    assert!(
        gave_up.ess > 10.0 * scaled.rates["gave_up"].ess,
        "the failure's own ess: auto {} vs scale 30 {}",
        gave_up.ess,
        scaled.rates["gave_up"].ess
    );
    // The price: the runs that did not fail weigh a lot, and the summary says so.
    assert!(auto.ess < scaled.ess);
    assert!(auto.warnings.iter().any(|w| w.contains("chosen for `gave_up`")), "{:?}", auto.warnings);

    // One interval can miss (one sweep in twenty): over 40 independent sweeps
    // of 200 seeds the intervals cover the truth about 95% of the time (more
    // than 6 misses has probability 1.1% for a true 95% interval).
    let covered = (0..40u64)
        .filter(|k| {
            let seeds = 100_000 + k * 200..100_000 + (k + 1) * 200;
            summarise(&runner, seeds, plan.clone()).importance.unwrap().rates["gave_up"].contains(truth())
        })
        .count();
    println!("auto: {gave_up:?}; the interval covers 1e-6 in {covered} of 40 sweeps");
    assert!(covered >= 34, "the interval covers 1e-6 in {covered} of 40 sweeps");
}

/// The binary: `--importance auto` says what it chose, writes it to
/// summary.json, and is deterministic on 1 and 4 threads.
#[test]
fn auto_is_deterministic_and_says_what_it_chose() {
    let root = env!("CARGO_MANIFEST_DIR");
    let scenario = format!("{root}/seeds/rare_failure.ron");
    let agent = format!("{root}/seeds/stacks/three_attempts.ron");
    let dir = tempfile::tempdir().unwrap();
    let args = [
        scenario.as_str(),
        "--agent",
        &agent,
        "--seeds",
        "0..400",
        "--importance",
        "auto",
        "--importance-target",
        "gave_up",
        "--importance-pilot",
        "300",
    ];
    let outputs = crate::common::sweep_on_threads(dir.path(), &args, &[("1", "5000"), ("4", "37")]);
    for (stdout, _, _) in &outputs {
        assert!(stdout.contains("cross-entropy: tilts for `gave_up` from "), "{stdout}");
        assert!(stdout.contains("lookup_order.faults[0] 0.01 -> 0.99"), "{stdout}");
    }
    assert_eq!(outputs[0], outputs[1], "1 and 4 threads");
    let summary: serde_json::Value = serde_json::from_str(&outputs[0].2).unwrap();
    let importance = &summary["importance"];
    assert_eq!(importance["method"], "cross-entropy");
    assert_eq!(importance["scale"], serde_json::Value::Null);
    assert_eq!(importance["pilot"]["target"], "gave_up");
    assert_eq!(importance["pilot"]["seeds_per_iteration"], 300);
    assert_eq!(importance["tilts"][0]["tool"], "lookup_order");
    assert_eq!(importance["tilts"][0]["sampled"], 0.99);
    // A run drawn with a tilt per rule has no single scale an incident could
    // replay at: none is written.
    assert!(summary["failures"].as_array().unwrap().is_empty());
    assert!(!dir.path().join("out-1/failures").exists());
}

/// A tilts file through the binary: its tilts in summary.json and run.json,
/// and a resume of the same sweep reads them back alike.
#[test]
fn a_tilts_file_sweep_lists_its_tilts() {
    let root = env!("CARGO_MANIFEST_DIR");
    let scenario = format!("{root}/seeds/rare_failure.ron");
    let agent = format!("{root}/seeds/stacks/three_attempts.ron");
    let dir = tempfile::tempdir().unwrap();
    let tilts = "Tilts(rules: [(tool: \"lookup_order\", rule: 0, probability: 0.3)])";
    std::fs::write(dir.path().join("t.ron"), tilts).unwrap();
    let args = ["sweep", &scenario, "--agent", &agent, "--seeds", "0..300", "--importance", "t.ron", "--out", "o"];
    let output = agentsim(dir.path(), &args, &[]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("a fault rule drawn with its own tilt (lookup_order.faults[0] at 0.3)"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["importance"]["method"], "tilts");
    assert_eq!(summary["importance"]["tilts"][0]["sampled"], 0.3);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o/run.json")).unwrap()).unwrap();
    assert_eq!(run["importance_plan"]["tilts"][0]["sampled"], 0.3);
    // The same draws as --importance 30 (0.01 x 30): the same digest.
    let args = ["sweep", &scenario, "--agent", &agent, "--seeds", "0..300", "--importance", "30", "--out", "s"];
    let output = agentsim(dir.path(), &args, &[]);
    assert!(output.status.success(), "{}", text(&output));
    let scaled: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["digest"], scaled["digest"]);
    assert_eq!(summary["importance"]["rates"], scaled["importance"]["rates"]);
}

#[test]
fn auto_refuses_a_target_no_pilot_reaches() {
    let (prepared, stack) = rare_failure();
    let target = Target::parse("no_such_minefield").unwrap();
    let err = choose(&prepared, &stack, 1.0, &target, 20).unwrap_err();
    assert!(err.message.contains("never happened") && err.message.contains("no_such_minefield"), "{}", err.message);
    assert!(Target::parse("success").is_err());
    assert_eq!(Target::parse("violation").unwrap(), Target::Outcome(Outcome::Violation));
}

/// The README's double refund, by its closed form: the refund's answer is lost
/// with probability p = 1e-5, the retry without a key applies it again, and
/// every run issues one refund, so the nominal rate of `duplicate_refund` is p.
/// `--importance auto` finds it from a thousand runs.
#[test]
fn the_double_refund_example_is_estimated_at_its_closed_form() {
    let root = env!("CARGO_MANIFEST_DIR");
    let prepared = agentsim::load::scenario(&format!("{root}/seeds/rare_double_refund.ron")).unwrap();
    let text = std::fs::read_to_string(format!("{root}/seeds/stacks/oracle_retry_without_keys.ron")).unwrap();
    let stack = agentsim::spec::parse_stack(&text, "oracle_retry_without_keys.ron").unwrap();
    let p = chance_threshold(1e-5) as f64 / CHANCE_ONE as f64;

    // Nominally, every run refunds once and succeeds.
    let plain = Runner::new(&prepared, &stack, false, 1.0);
    for seed in 0..50 {
        let t = plain.run(seed);
        assert_eq!(t.outcome, Outcome::Success, "seed {seed}: {}", t.end_reason);
    }

    let target = Target::parse("duplicate_refund").unwrap();
    let plan = choose(&prepared, &stack, 1.0, &target, 300).unwrap();
    let runner =
        Runner::new(&prepared, &stack, false, 1.0).with_tilts(Some(plan.probabilities(&prepared.catalog, 1.0)));
    let mut builder = agentsim::SummaryBuilder::new().with_importance_plan(Some(plan.clone()));
    runner
        .sweep(0..1_000, |t| {
            builder.add(&t);
            Ok::<(), ()>(())
        })
        .unwrap();
    let importance =
        builder.finish("rare_double_refund", "oracle_retry_without_keys", 0..1_000, 1.0).importance.unwrap();
    let double = importance.minefields["duplicate_refund"];
    println!("{:?}: {double:?}", plan.tilts);
    assert!((double.estimate / p - 1.0).abs() < 0.10, "{double:?} vs {p}");
    assert!(double.contains(p), "{double:?} does not cover {p}");
}

/// The README's double-refund block is not run by the transcript test (107,000
/// runs take about a minute in a debug build): this runs it, and every line it
/// shows must be printed, in order.
#[test]
#[ignore = "107,000 runs: seconds in release (cargo test --release -- --ignored readme_double_refund)"]
fn readme_double_refund_block_is_what_the_sweep_prints() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let block = readme.split("```console\n$ agentsim sweep seeds/rare_double_refund.ron").nth(1).unwrap();
    let block = block.split("\n```").next().unwrap();
    let mut lines = block.lines();
    let command = lines.next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("seeds"), dir.path().join("seeds")).unwrap();
    let args: Vec<&str> =
        ["sweep", "seeds/rare_double_refund.ron"].into_iter().chain(command.split_whitespace()).collect();
    let output = agentsim(dir.path(), &args, &[]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut printed = stdout.lines();
    for shown in lines.filter(|l| *l != "...") {
        assert!(printed.any(|p| p == shown), "README shows `{shown}`, the sweep printed:\n{stdout}");
    }
}

/// `--importance auto` over two shards, merged, gives the bytes of one run (each
/// shard runs the same pilot: its seeds do not depend on the shard's); and a
/// merge refuses shards drawn under other tilts.
#[test]
fn auto_shards_merge_into_the_bytes_of_one_run() {
    let root = env!("CARGO_MANIFEST_DIR");
    let scenario = format!("{root}/seeds/rare_failure.ron");
    let agent = format!("{root}/seeds/stacks/three_attempts.ron");
    let dir = tempfile::tempdir().unwrap();
    let sweep = |extra: &[&str], out: &str| {
        let mut args = vec!["sweep", &scenario, "--agent", &agent, "--seeds", "0..300", "--quiet", "--out", out];
        args.extend_from_slice(&["--importance", "auto", "--importance-pilot", "200"]);
        args.extend_from_slice(extra);
        let output = agentsim(dir.path(), &args, &[]);
        assert!(output.status.success(), "{}", text(&output));
    };
    sweep(&[], "single");
    sweep(&["--shard", "0/2"], "shard-0");
    sweep(&["--shard", "1/2"], "shard-1");
    let output = agentsim(dir.path(), &["merge", "shard-1", "shard-0", "--out", "merged"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    for name in ["trajectories.csv", "summary.json"] {
        let single = std::fs::read(dir.path().join("single").join(name)).unwrap();
        let merged = std::fs::read(dir.path().join("merged").join(name)).unwrap();
        assert!(single == merged, "{name} differs between one run and the merged shards");
    }
    // The gate check rebuilds the summary, tilts included, from the rows.
    std::fs::write(
        dir.path().join("gate.ron"),
        "Gate(rules: [(metric: \"importance.rates.gave_up.ess\", at_least: 100)])",
    )
    .unwrap();
    let output = agentsim(dir.path(), &["check", "gate.ron", "merged"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));

    // A shard drawn under another pilot does not belong.
    sweep(&["--shard", "1/2", "--importance-target", "gave_up"], "other-1");
    let output = agentsim(dir.path(), &["merge", "shard-0", "other-1", "--out", "bad"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("importance_plan"), "{}", text(&output));
}

/// The hardening issue's two tilts of the support desk's `issue_refund.faults[1]`
/// (nominal 0.35). At 0.999999 the runs without the fault, most of the nominal
/// probability, are never drawn: before, completion came out at 0.286 [0.266,
/// 0.306] with no warning (the truth is near 0.994). At 0.99 a few of them carry
/// the weight: before, completion came out at 1.05, outside its own interval
/// [0.781, 1.0]. Now neither is trusted and both say why, on the terminal and in
/// summary.json; every estimate is in [0, 1] and inside its interval, the
/// outcomes' rates sum to 1, and the output is the same on 1 and 4 threads.
#[test]
fn extreme_tilts_of_one_rule_are_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    for (probability, why) in [("0.999999", "the weights average"), ("0.99", "effective sample size")] {
        let tilts = format!("Tilts(rules: [(tool: \"issue_refund\", rule: 1, probability: {probability})])");
        std::fs::write(dir.path().join("t.ron"), tilts).unwrap();
        let args = ["--importance", "t.ron", "--seeds", "0..2000"];
        let runs = crate::common::sweep_on_threads(dir.path(), &args, &[("1", "7"), ("4", "64")]);
        assert_eq!(runs[0], runs[1], "{probability}: 1 and 4 threads differ");
        let (stdout, _, summary) = &runs[0];
        let summary: serde_json::Value = serde_json::from_str(summary).unwrap();
        let importance = &summary["importance"];
        let completion = &importance["rates"]["completion"];
        assert_eq!(completion["trusted"], false, "{probability}: {completion}");
        let estimates = stdout.split("nominal rates by importance sampling").nth(1).expect("the estimates' table");
        let row = estimates.lines().find(|l| l.starts_with("│ completion")).expect("a completion row");
        assert!(row.contains("NO, see warnings"), "{probability}: {row}");
        let warnings: Vec<&str> =
            importance["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
        assert!(warnings.iter().any(|w| w.contains(why)), "{probability}: {warnings:?}");
        let mut total = 0.0;
        for (name, e) in
            importance["rates"].as_object().unwrap().iter().chain(importance["minefields"].as_object().unwrap())
        {
            let (estimate, lo) = (e["estimate"].as_f64().unwrap(), e["lo"].as_f64().unwrap());
            let hi = e["hi"].as_f64().unwrap_or(1.0);
            assert!(0.0 <= lo && lo <= estimate && estimate <= hi && hi <= 1.0, "{probability}: {name} {e}");
            if importance["rates"].get(name).is_some() {
                total += estimate;
            }
        }
        assert!((total - 1.0).abs() < 1e-9, "{probability}: the outcomes sum to {total}");
        assert!(["complement", "self-normalised"].contains(&importance["estimator"].as_str().unwrap()));
        // A gate that asks for trust fails.
        let gate = "Gate(rules: [(metric: \"importance.rates.completion.trusted\", exactly: 1)])";
        std::fs::write(dir.path().join("gate.ron"), gate).unwrap();
        let output = agentsim(dir.path(), &["check", "gate.ron", "out-1"], &[]);
        assert_eq!(output.status.code(), Some(1), "{probability}: {}", text(&output));
    }
}
