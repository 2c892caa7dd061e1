//! The out-of-tree world runs one seed and a sweep through the library, with
//! the presets, deterministically.

use agentsim::Runner;
use agentsim_engine::Outcome;

fn completion(preset: &str, seeds: std::ops::Range<u64>) -> (u64, Vec<String>) {
    let prepared = agentsim_example_world::prepared();
    let stack = agentsim_agents::preset(preset).expect("a preset");
    let runner = Runner::new(&prepared, &stack, false, 1.0);
    let mut successes = 0;
    let mut digests = Vec::new();
    runner
        .sweep(seeds, |t| {
            successes += u64::from(t.outcome == Outcome::Success);
            digests.push(t.digest.to_string());
            Ok::<(), ()>(())
        })
        .expect("the sweep runs");
    (successes, digests)
}

#[test]
fn one_seed_runs_and_the_oracle_completes_a_sweep() {
    let prepared = agentsim_example_world::prepared();
    let stack = agentsim_agents::preset("oracle").unwrap();
    let t = Runner::new(&prepared, &stack, true, 0.0).run(7);
    assert_eq!(t.outcome, Outcome::Success, "{}", t.verdict.detail);
    assert!(t.events.len() > 4);
    assert_eq!(completion("oracle", 0..300).0, 300);
}

#[test]
fn naive_suffers_the_faults_and_the_sweep_is_reproducible() {
    let (naive, digests) = completion("naive", 0..300);
    let (resilient, _) = completion("resilient", 0..300);
    assert!(naive < 290, "naive {naive}");
    assert!(resilient > naive, "resilient {resilient} vs naive {naive}");
    assert_eq!(completion("naive", 0..300).1, digests);
}

#[test]
fn a_file_naming_an_outside_world_is_refused() {
    let err = agentsim_worlds::Scenario::parse(r#"Scenario(name: "x", world: Named("library"))"#, "x.ron").unwrap_err();
    assert!(err.to_string().contains("runs through Prepared::from_model"), "{err}");
}
