//! The library world, built with the public API, sweeps with the presets
//! deterministically, in memory and into a folder alike.

// The example is one file, a binary: its world is read from there.
#[allow(dead_code)]
#[path = "../src/main.rs"]
mod example;

use agentsim::prelude::*;

fn completion(agent: &str, seeds: std::ops::Range<u64>) -> (u64, Vec<String>) {
    let world = example::library().expect("the library builds");
    let swept = sweep(&world).agent(agent).seeds(seeds).run().expect("the sweep runs");
    (swept.summary.completion.count, swept.rows.into_iter().map(|r| r.digest).collect())
}

#[test]
fn one_seed_runs_and_the_oracle_completes_a_sweep() {
    let world = example::library().unwrap();
    let stack = preset("oracle").unwrap();
    let t = Runner::new(world.prepared(), &stack, true, 0.0).run(7);
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
fn the_folder_holds_the_sweep_run_in_memory() {
    let world = example::library().unwrap();
    let dir = std::env::temp_dir().join(format!("agentsim-library-{}", std::process::id()));
    let written = sweep(&world).agent("naive").seeds(0..200).write_to(&dir).unwrap();
    let in_memory = sweep(&world).agent("naive").seeds(0..200).run().unwrap();
    assert_eq!(written.digest, in_memory.summary.digest);
    let csv = std::fs::read_to_string(dir.join("trajectories.csv")).unwrap();
    assert_eq!(csv.lines().count(), 201, "a header and a row per seed");
    assert!(dir.join("summary.json").is_file() && dir.join("run.json").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The numbers the README shows for this example are this code's.
#[test]
fn the_readme_shows_what_the_example_prints() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let world = example::library().unwrap();
    for agent in ["oracle", "naive", "resilient"] {
        let line = example::line(agent, &sweep(&world).agent(agent).seeds(0..1000).run().unwrap().summary);
        assert!(readme.contains(&format!("\n{line}\n")), "README.md does not show: {line}");
    }
}

#[test]
fn a_file_naming_an_outside_world_is_refused() {
    let err = agentsim_worlds::Scenario::parse(r#"Scenario(name: "x", world: Named("library"))"#, "x.ron").unwrap_err();
    assert!(err.to_string().contains("runs through Prepared::from_model"), "{err}");
}
