//! Sweeps split over shards: four shard processes merged give exactly the bytes of
//! one run, and shards that do not belong together are refused.

use std::process::{Command, Stdio};

use crate::common::{agentsim, sweep_on_threads, text};

fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for name in ["trajectories.csv", "summary.json"] {
        out.push((name.to_string(), std::fs::read(dir.join(name)).unwrap()));
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("failures")) {
        let mut failures: Vec<_> = entries
            .map(|e| e.unwrap())
            .map(|e| (format!("failures/{}", e.file_name().to_string_lossy()), std::fs::read(e.path()).unwrap()))
            .collect();
        failures.sort();
        out.extend(failures);
    }
    out
}

#[test]
fn four_shard_processes_merge_into_the_bytes_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--trials", "2"][..]] {
        let mut single_args = vec!["sweep", "--agent", "naive", "--seeds", "0..1200", "--out", "single", "--quiet"];
        single_args.extend_from_slice(extra);
        let output = agentsim(dir.path(), &single_args, &[]);
        assert!(output.status.success(), "{}", text(&output));
        // The shards run as separate processes at the same time, as on a cluster.
        let children: Vec<_> = (0..4)
            .map(|k| {
                let mut command = Command::new(env!("CARGO_BIN_EXE_agentsim"));
                command.current_dir(dir.path()).stdout(Stdio::null()).stderr(Stdio::null());
                command.args(["sweep", "--agent", "naive", "--seeds", "0..1200", "--quiet"]);
                command.args(["--shard", &format!("{k}/4"), "--out", &format!("shard-{k}")]).args(extra);
                command.spawn().unwrap()
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let output =
            agentsim(dir.path(), &["merge", "shard-3", "shard-1", "shard-0", "shard-2", "--out", "merged"], &[]);
        assert!(output.status.success(), "{}", text(&output));
        let (single, merged) = (files(&dir.path().join("single")), files(&dir.path().join("merged")));
        assert_eq!(single.len(), merged.len(), "{extra:?}");
        for ((name, a), (other, b)) in single.iter().zip(&merged) {
            assert_eq!(name, other);
            assert!(a == b, "{name} differs between one run and the merged shards ({extra:?})");
        }
        for d in ["single", "merged", "shard-0", "shard-1", "shard-2", "shard-3"] {
            std::fs::remove_dir_all(dir.path().join(d)).unwrap();
        }
    }
}

/// A sweep of many sessions carries each run's sessions over virtual time in
/// its rows (the `t=` of the `sessions` column), so that two shards merged
/// give the summary of one run byte for byte, `sessions.over_time` included;
/// and one run is the same on 1 and 4 threads.
#[test]
fn shards_of_a_sweep_of_many_sessions_merge_into_the_bytes_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let race = format!("{}/seeds/support_desk_race.ron", env!("CARGO_MANIFEST_DIR"));
    let args = [race.as_str(), "--agent", "resilient", "--seeds", "0..16", "--quiet"];
    let runs = sweep_on_threads(dir.path(), &args, &[("1", "16"), ("4", "3")]);
    assert_eq!(runs[0].1, runs[1].1, "trajectories.csv on 1 and 4 threads");
    assert_eq!(runs[0].2, runs[1].2, "summary.json on 1 and 4 threads");
    for k in 0..2 {
        let (shard, out) = (format!("{k}/2"), format!("shard-{k}"));
        let shard_args: Vec<&str> =
            ["sweep"].into_iter().chain(args).chain(["--shard", &shard, "--out", &out]).collect();
        let output = agentsim(dir.path(), &shard_args, &[]);
        assert!(output.status.success(), "{}", text(&output));
    }
    let output = agentsim(dir.path(), &["merge", "shard-1", "shard-0", "--out", "merged"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let (single, merged) = (files(&dir.path().join("out-1")), files(&dir.path().join("merged")));
    assert_eq!(single.len(), merged.len());
    for ((name, a), (other, b)) in single.iter().zip(&merged) {
        assert_eq!(name, other);
        assert!(a == b, "{name} differs between one run and the merged shards");
    }
    // The buckets are in the rows, and the summary's series is over every run.
    let csv = String::from_utf8(single[0].1.clone()).unwrap();
    assert_eq!(csv.lines().skip(1).filter(|row| row.contains(";t=1:")).count(), 16, "{csv}");
    let summary: serde_json::Value = serde_json::from_slice(&single[1].1).unwrap();
    let over_time = &summary["sessions"]["over_time"];
    assert_eq!(over_time["runs"], 16);
    assert_eq!(over_time["bucket_minutes"], 1);
    let buckets = over_time["buckets"].as_array().expect("a series of buckets");
    assert!(buckets.len() >= 2 && buckets.len() <= 120, "{} buckets", buckets.len());
    let sessions: u64 = buckets.iter().map(|b| b["sessions"].as_u64().unwrap()).sum();
    assert_eq!(sessions, summary["sessions"]["sessions"].as_u64().unwrap(), "every session in one bucket");
    assert_eq!(buckets[0]["in_flight_mean"], 1.0, "session 0 of each run is in flight at 0");
}

#[test]
fn shards_that_do_not_belong_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |agent: &str, seeds: &str, shard: &str, out: &str| {
        let output = agentsim(
            dir.path(),
            &["sweep", "--agent", agent, "--seeds", seeds, "--shard", shard, "--out", out, "--quiet"],
            &[],
        );
        assert!(output.status.success(), "{}", text(&output));
    };
    sweep("naive", "0..100", "0/2", "a0");
    sweep("naive", "0..100", "1/2", "a1");
    sweep("resilient", "0..100", "1/2", "b1");
    sweep("naive", "0..200", "1/2", "c1");
    for (shards, needle) in [
        (&["a0", "b1"][..], "field `agent`"),
        (&["a0", "c1"][..], "field `seeds`"),
        (&["a0"][..], "exactly once"),
        (&["a0", "a0"][..], "exactly once"),
    ] {
        let mut args = vec!["merge"];
        args.extend_from_slice(shards);
        args.extend_from_slice(&["--out", "m"]);
        let output = agentsim(dir.path(), &args, &[]);
        assert_eq!(output.status.code(), Some(2), "{shards:?}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{shards:?}: expected `{needle}` in {stderr}");
    }
    let output = agentsim(dir.path(), &["sweep", "--shard", "4/4"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

/// Merge checks each incident it copies from a shard's `failures/` as it checks
/// rows: one edited (its seed, its digest) or one that does not replay is
/// refused naming the file, and nothing is written.
#[test]
fn merge_refuses_an_edited_incident_of_a_shard() {
    let dir = tempfile::tempdir().unwrap();
    for k in 0..2 {
        let shard = format!("{k}/2");
        let out = format!("sh{k}");
        let args = ["sweep", "--agent", "naive", "--seeds", "0..100", "--shard", &shard, "--out", &out, "--quiet"];
        let output = agentsim(dir.path(), &args, &[]);
        assert!(output.status.success(), "{}", text(&output));
    }
    let merged = agentsim(dir.path(), &["merge", "sh0", "sh1", "--out", "good"], &[]);
    assert!(merged.status.success(), "{}", text(&merged));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("good/summary.json")).unwrap()).unwrap();
    // An incident merge copies from the second shard.
    let name = summary["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .find(|f| dir.path().join("sh1").join(f).exists())
        .expect("the second shard has an incident merge copies");
    let path = dir.path().join("sh1").join(&name);
    let original = std::fs::read_to_string(&path).unwrap();
    let line_of = |field: &str| original.lines().position(|l| l.starts_with(&format!("    {field}:"))).unwrap() + 1;
    let digest_line = original.lines().find(|l| l.starts_with("    digest:")).unwrap();
    let title_line = original.lines().find(|l| l.starts_with("    title:")).unwrap();
    for (edited, needle) in [
        (
            original.replacen("\n    seed: ", "\n    seed: 3", 1),
            format!("{name}:{}:5: field `seed`: expected", line_of("seed")),
        ),
        (
            original.replace(digest_line, "    digest: \"00000000000000000000000000000000\","),
            format!("{name}:{}:5: field `digest`: expected", line_of("digest")),
        ),
        (original.replace("    seed: ", "    sed: "), format!("{name}:{}:", line_of("seed"))),
        // The rows' values, but a timeline that is not the replay's.
        (
            original.replacen("\n    timeline: [\n        \"", "\n    timeline: [\n        \"edited ", 1),
            format!("{name}: does not replay"),
        ),
    ] {
        assert_ne!(edited, original, "{needle}");
        std::fs::write(&path, &edited).unwrap();
        let output = agentsim(dir.path(), &["merge", "sh0", "sh1", "--out", "bad"], &[]);
        assert_eq!(output.status.code(), Some(2), "{needle}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&needle), "expected `{needle}` in {stderr}");
        assert!(!dir.path().join("bad").exists(), "{needle}: nothing is written");
    }
    // The title is free text: an edit there still merges.
    std::fs::write(&path, original.replace(title_line, "    title: \"edited\",")).unwrap();
    let output = agentsim(dir.path(), &["merge", "sh0", "sh1", "--out", "titled"], &[]);
    assert!(output.status.success(), "{}", text(&output));
}
