//! The command line as a user meets it.

use crate::common::{agentsim, text};

#[test]
fn sweep_with_no_arguments_runs_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(dir.path(), &["sweep"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let csv = std::fs::read_to_string(dir.path().join("out/trajectories.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "seed,outcome,success,turns,tool_calls,failed_calls,faults_seen,recovered,violations,tokens,cost_usd,virtual_ms,milestone,fault_kinds,minefields,told_accurately,rejected_calls,decisions,digest,check"
    );
    let seeds: Vec<u64> = lines.map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
    assert_eq!(seeds, (0..1000).collect::<Vec<_>>(), "one row per seed, in seed order");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["trajectories"], 1000);
    assert_eq!(summary["digest"].as_str().unwrap().len(), 32);
    let completion = &summary["completion"];
    assert!(completion["lo"].as_f64().unwrap() <= completion["rate"].as_f64().unwrap());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("completion") && stdout.contains("digest"), "{stdout}");
    // The speed on stderr: trajectories and simulated time per wall-clock second.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let speed = stderr.lines().find(|l| l.starts_with("1000 trajectories in ")).unwrap_or_else(|| panic!("{stderr}"));
    let virtual_rate: f64 = speed
        .split(", ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" virtual seconds per second)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no virtual seconds per second in `{speed}`"));
    assert!(virtual_rate > 0.0, "{speed}");
    // Nothing half-written is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn run_prints_a_timeline_with_outcome_and_digest() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(dir.path(), &["run", "--seed", "3", "--agent", "naive"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("call #1") && stdout.contains("lookup_order"), "{stdout}");
    assert!(stdout.contains("outcome: ") && stdout.contains("digest:"), "{stdout}");
    let again = agentsim(dir.path(), &["run", "--seed", "3", "--agent", "naive"], &[]);
    assert_eq!(output.stdout, again.stdout, "the same run prints the same timeline");
}

#[test]
fn usage_errors_exit_2_and_name_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (&["sweep", "--seeds", "10..5"][..], "--seeds"),
        (&["sweep", "--seeds", "5..5"][..], "empty"),
        (&["sweep", "--agent", "nonsense"][..], "unknown preset `nonsense`"),
        (&["run", "no_such_scenario"][..], "neither a file nor a built-in"),
        (&["sweep", "--fault-scale", "-1"][..], "--fault-scale"),
    ] {
        let output = agentsim(dir.path(), args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: expected `{needle}` in {stderr}");
    }
}

#[test]
fn threads_flag_sets_the_pool_and_never_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for threads in ["1", "3"] {
        let out = format!("out-{threads}");
        let output = agentsim(dir.path(), &["-j", threads, "sweep", "--seeds", "0..400", "--out", &out], &[]);
        assert!(output.status.success(), "{}", text(&output));
        files.push(std::fs::read(dir.path().join(&out).join("trajectories.csv")).unwrap());
    }
    assert!(files[0] == files[1], "-j 1 and -j 3 write the same rows");
}
