//! Swarm mode: each seed draws its own fault parameters, records them in the
//! trajectory and the CSV, and stays deterministic on any thread count.

use agentsim::Runner;
use agentsim_engine::EventKind;

use crate::common::{agentsim, preset, text};
use crate::world_kit::builtin;

#[test]
fn each_seed_records_its_draw_at_time_zero_and_the_draws_differ() {
    let p = builtin("flight_booking");
    let stack = preset("resilient");
    let runner = Runner::new(&p, &stack, true, 1.0).with_swarm(true);
    let mut draws = Vec::new();
    for seed in 0..50 {
        let t = runner.run(seed);
        let first = t.events.iter().find(|e| matches!(e.kind, EventKind::World { .. })).expect("a world note");
        let EventKind::World { what, detail } = &first.kind else { unreachable!() };
        assert_eq!((*what, first.at_ms), ("swarm", 0), "seed {seed}");
        let described = runner.swarm_values(seed).expect("swarm mode is on");
        assert!(described.contains("book.faults[1].window="), "{described}");
        assert!(detail.get("get_fare.drift[0].at_ms").and_then(|v| v.as_str()).is_some());
        // The same seed draws the same configuration; recording changes nothing.
        assert_eq!(Runner::new(&p, &stack, false, 1.0).with_swarm(true).run(seed).digest, t.digest);
        draws.push(described);
    }
    draws.sort();
    draws.dedup();
    assert_eq!(draws.len(), 50, "every seed draws its own faults");
    // Off, the scenario runs as written and nothing is drawn.
    let off = Runner::new(&p, &stack, true, 1.0);
    assert_eq!(off.swarm_values(0), None);
    assert!(!off.run(0).events.iter().any(|e| matches!(e.kind, EventKind::World { what: "swarm", .. })));
}

#[test]
fn swarm_sweeps_have_a_swarm_column_and_the_same_bytes_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for threads in ["1", "4"] {
        let out = format!("out-{threads}");
        let args = ["sweep", "newsroom", "--swarm", "--agent", "naive", "--seeds", "0..300", "--out", &out];
        let output = agentsim(dir.path(), &args, &[("RAYON_NUM_THREADS", threads)]);
        assert!(output.status.success(), "{}", text(&output));
        let csv = std::fs::read_to_string(dir.path().join(&out).join("trajectories.csv")).unwrap();
        let summary = std::fs::read(dir.path().join(&out).join("summary.json")).unwrap();
        files.push((csv, summary));
    }
    assert!(files[0] == files[1], "swarm output differs between 1 and 4 threads");
    let header = files[0].0.lines().next().unwrap();
    assert!(header.ends_with(",digest,swarm,check"), "{header}");
    let row = files[0].0.lines().nth(1).unwrap();
    assert!(row.contains("latest_news.faults[0].offset_ms="), "{row}");

    let output = agentsim(dir.path(), &["sweep", "newsroom", "--seeds", "0..5", "--out", "plain"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let csv = std::fs::read_to_string(dir.path().join("plain/trajectories.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",digest,check"), "no swarm column without --swarm");
}

#[test]
fn swarm_mode_needs_a_swarm_section() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(dir.path(), &["run", "support_desk", "--swarm"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("has no `swarm` section"), "{}", text(&output));
}
