//! The determinism rules: same inputs, same digest; any thread count, same bytes.

use agentsim::Runner;

use crate::common::{agentsim, default_scenario, preset, text};

#[test]
fn same_seed_gives_the_same_trajectory_recorded_or_not() {
    let prepared = default_scenario();
    for name in ["oracle", "naive", "resilient"] {
        let stack = preset(name);
        for seed in 0..50 {
            let recorded = Runner::new(&prepared, &stack, true, 1.0).run(seed);
            let again = Runner::new(&prepared, &stack, true, 1.0).run(seed);
            let digest_only = Runner::new(&prepared, &stack, false, 1.0).run(seed);
            assert_eq!(recorded, again, "{name} seed {seed}");
            assert_eq!(
                recorded.digest, digest_only.digest,
                "recording must not change the digest ({name} seed {seed})"
            );
            assert!(digest_only.events.is_empty());
            assert_eq!(recorded.events.len() as u32, recorded.metrics.events);
        }
    }
}

#[test]
fn different_seeds_give_different_trajectories() {
    let prepared = default_scenario();
    let stack = preset("resilient");
    let runner = Runner::new(&prepared, &stack, false, 1.0);
    let mut digests: Vec<String> = (0..300).map(|seed| runner.run(seed).digest.to_string()).collect();
    digests.sort();
    digests.dedup();
    assert_eq!(digests.len(), 300, "every seed has its own trajectory");
}

/// Also across chunk sizes: the sweep hands one chunk to the ordered sink while
/// the pool computes the next, so small chunks exercise that overlap many times.
#[test]
fn sweep_output_is_byte_identical_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (threads, chunk_seeds) in [("1", None), ("4", None), ("4", Some("50")), ("2", Some("7"))] {
        let out = format!("out-{threads}-{}", chunk_seeds.unwrap_or("default"));
        let mut env = vec![("RAYON_NUM_THREADS", threads)];
        env.extend(chunk_seeds.map(|n| ("AGENTSIM_CHUNK_SEEDS", n)));
        let output = agentsim(dir.path(), &["sweep", "--agent", "naive", "--seeds", "0..600", "--out", &out], &env);
        assert!(output.status.success(), "{}", text(&output));
        let csv = std::fs::read(dir.path().join(&out).join("trajectories.csv")).unwrap();
        let summary = std::fs::read(dir.path().join(&out).join("summary.json")).unwrap();
        let mut failures: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.path().join(&out).join("failures"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())
            })
            .collect();
        failures.sort();
        assert!(!failures.is_empty(), "a naive sweep of 600 seeds has failures to keep");
        files.push((csv, summary, failures));
    }
    for (i, other) in files.iter().enumerate().skip(1) {
        assert!(files[0].0 == other.0, "trajectories.csv differs between run 0 and run {i}");
        assert!(files[0].1 == other.1, "summary.json differs between run 0 and run {i}");
        assert!(files[0].2 == other.2, "failures/ differs between run 0 and run {i}");
    }
}

#[test]
fn sweep_digest_matches_the_per_seed_digests_in_order() {
    let prepared = default_scenario();
    let stack = preset("naive");
    let runner = Runner::new(&prepared, &stack, false, 1.0);
    let mut builder = agentsim::SummaryBuilder::new();
    let mut digests = Vec::new();
    runner
        .sweep(10..5_000, |t| {
            builder.add(&t);
            digests.push(t.digest);
            Ok::<(), ()>(())
        })
        .unwrap();
    let summary = builder.finish("s", "naive", 10..5_000, 1.0);
    // Same seeds one by one, on this thread, in order.
    let sequential: Vec<_> = (10..5_000).map(|seed| runner.run(seed).digest).collect();
    assert_eq!(digests, sequential);
    assert_eq!(summary.digest, agentsim_engine::Digest::combine(&sequential).to_string());
}
