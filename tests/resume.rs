//! Interrupted sweeps: a real SIGINT or SIGTERM to a running sweep process leaves
//! whole files marked partial, and `sweep --resume` ends with exactly the bytes of
//! one uninterrupted run (on another number of threads).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{agentsim, text};

/// Every file a sweep wrote under `dir`, by relative path, sorted.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Starts `sweep ARGS --out part` with small chunks, sends `signal` once rows are
/// being written, checks the partial files, resumes on 4 threads and compares with
/// an uninterrupted run on 1 thread.
fn interrupt_then_resume(args: &[&str], signal: libc::c_int, chunk_seeds: u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut full_args = vec!["sweep", "--quiet", "--out", "full"];
    full_args.extend_from_slice(args);
    let output = agentsim(dir.path(), &full_args, &[("RAYON_NUM_THREADS", "1")]);
    assert!(output.status.success(), "{}", text(&output));

    let mut child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .current_dir(dir.path())
        .args(["sweep", "--quiet", "--out", "part"])
        .args(args)
        .env("AGENTSIM_CHUNK_SEEDS", chunk_seeds.to_string())
        .env("RAYON_NUM_THREADS", "4")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (by polling, with no time limit on the sweep) until rows reach the
    // temporary file: the sweep is then under way and far from its end.
    let csvs = [dir.path().join("part/trajectories.csv"), dir.path().join("part/scale-0/trajectories.csv")];
    while csvs.iter().all(|csv| crate::common::temp_len(csv) == 0) {
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended before it was interrupted");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: sending a signal to a child process this test started and has not reaped.
    let sent = unsafe { libc::kill(i32::try_from(child.id()).unwrap(), signal) };
    assert_eq!(sent, 0, "the signal was sent");
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("continue with: agentsim sweep") && stdout.ends_with("--resume part\n"), "{stdout}");

    // The partial files are whole and agree with each other; with several scales,
    // those of the scale that was running.
    let part = dir.path().join("part");
    let partial: Vec<String> = files(&part)
        .into_iter()
        .filter(|(name, bytes)| {
            name.ends_with("summary.json") && String::from_utf8_lossy(bytes).contains("\"partial\"")
        })
        .map(|(name, _)| name.trim_end_matches("summary.json").to_string())
        .collect();
    assert_eq!(partial.len(), 1, "one partial summary: {partial:?}");
    let (part, full_dir) = (part.join(&partial[0]), dir.path().join("full").join(&partial[0]));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(part.join("summary.json")).unwrap()).unwrap();
    let done_until = summary["partial"]["done_until_seed"].as_u64().expect("summary.json is marked partial");
    let (seed_start, seed_end) = (summary["seed_start"].as_u64().unwrap(), summary["seed_end"].as_u64().unwrap());
    assert!(seed_start < done_until && done_until < seed_end, "{seed_start}..{done_until}..{seed_end}");
    assert_eq!((done_until - seed_start) % chunk_seeds, 0, "a sweep stops between chunks");
    let trials = summary["trials"].as_u64().unwrap();
    assert_eq!(summary["trajectories"].as_u64().unwrap(), (done_until - seed_start) * trials);
    let csv = std::fs::read_to_string(part.join("trajectories.csv")).unwrap();
    let seeds: Vec<u64> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
    let expected: Vec<u64> = (seed_start..done_until).flat_map(|s| std::iter::repeat_n(s, trials as usize)).collect();
    assert_eq!(seeds, expected, "whole seeds, in seed order");
    let full_csv = std::fs::read_to_string(full_dir.join("trajectories.csv")).unwrap();
    assert!(full_csv.starts_with(&csv), "the rows done are the uninterrupted run's first rows");
    for failure in summary["failures"].as_array().unwrap() {
        assert!(part.join(failure.as_str().unwrap()).is_file(), "{failure}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&part)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // `check` refuses a partial summary; `report` labels it.
    if partial[0].is_empty() {
        let gate = format!("{}/seeds/gates/release.ron", env!("CARGO_MANIFEST_DIR"));
        let output = agentsim(dir.path(), &["check", &gate, "part"], &[]);
        assert_eq!(output.status.code(), Some(2), "{}", text(&output));
        let output = agentsim(dir.path(), &["report", "part", "-o", "partial.html"], &[]);
        assert!(output.status.success(), "{}", text(&output));
        let html = std::fs::read_to_string(dir.path().join("partial.html")).unwrap();
        assert!(html.contains(&format!("(partial: seeds {seed_start}..{done_until})")), "the report says so");
    }

    let mut resume_args = vec!["sweep", "--quiet", "--resume", "part"];
    resume_args.extend_from_slice(args);
    let output = agentsim(dir.path(), &resume_args, &[("RAYON_NUM_THREADS", "4")]);
    assert!(output.status.success(), "{}", text(&output));
    let (full, resumed) = (files(&dir.path().join("full")), files(&dir.path().join("part")));
    assert_eq!(
        full.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        resumed.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "{args:?}"
    );
    for ((name, a), (_, b)) in full.iter().zip(&resumed) {
        assert!(a == b, "{name} differs between one run and the resumed run ({args:?})");
    }
}

#[test]
fn sigint_then_resume_gives_the_bytes_of_one_run() {
    interrupt_then_resume(&["--agent", "naive", "--seeds", "0..4000"], libc::SIGINT, 64);
}

#[test]
fn sigterm_to_a_shard_with_trials_then_resume_gives_the_bytes_of_one_run() {
    let args = ["--agent", "naive", "--seeds", "0..4000", "--trials", "2", "--shard", "1/2", "--failures", "2"];
    interrupt_then_resume(&args, libc::SIGTERM, 32);
}

/// The rows of a sweep of many sessions carry their buckets over virtual time:
/// the resumed summary's `sessions.over_time` is the uninterrupted run's.
#[test]
fn sigint_to_a_sweep_of_many_sessions_then_resume_gives_the_bytes_of_one_run() {
    let race = format!("{}/seeds/support_desk_race.ron", env!("CARGO_MANIFEST_DIR"));
    interrupt_then_resume(&[&race, "--agent", "resilient", "--seeds", "0..160"], libc::SIGINT, 4);
}

#[test]
fn sigint_to_a_surface_then_resume_gives_the_bytes_of_one_run() {
    interrupt_then_resume(&["--agent", "naive", "--seeds", "0..1500", "--fault-scale", "0,1"], libc::SIGINT, 32);
}

#[test]
fn resume_refuses_other_arguments_and_missing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(dir.path(), &["sweep", "--quiet", "--agent", "naive", "--seeds", "0..50", "--out", "a"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    for (args, needle) in [
        (
            &["--agent", "naive", "--seeds", "0..60", "--resume", "a"][..],
            "field `seeds` is 0..50 in a/run.json and 0..60 here",
        ),
        (&["--agent", "resilient", "--seeds", "0..50", "--resume", "a"][..], "field `agent`"),
        (&["--agent", "naive", "--seeds", "0..50", "--trials", "2", "--resume", "a"][..], "field `trials`"),
        (&["--agent", "naive", "--seeds", "0..50", "--fault-scale", "2", "--resume", "a"][..], "field `fault_scale`"),
        (&["--agent", "naive", "--seeds", "0..50", "--shard", "0/2", "--resume", "a"][..], "field `shards`"),
        (&["--agent", "naive", "--seeds", "0..50", "--resume", "empty"][..], "no run.json there"),
        (&["--agent", "naive", "--seeds", "0..50", "--resume", "a", "--out", "b"][..], "--out"),
    ] {
        let mut full = vec!["sweep", "--quiet"];
        full.extend_from_slice(args);
        let output = agentsim(dir.path(), &full, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: expected `{needle}` in {stderr}");
    }
    // Resuming a complete sweep runs nothing and rewrites the same bytes.
    let before = files(&dir.path().join("a"));
    let output =
        agentsim(dir.path(), &["sweep", "--quiet", "--agent", "naive", "--seeds", "0..50", "--resume", "a"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(before == files(&dir.path().join("a")));
}

/// SIGKILL gives no chance to write anything: the directory keeps the previous
/// run's files, and their manifest, so `--resume` with the new arguments is
/// refused instead of mixing new rows with old ones.
#[test]
fn a_sweep_killed_outright_leaves_the_previous_run_whole() {
    let dir = tempfile::tempdir().unwrap();
    let output =
        agentsim(dir.path(), &["sweep", "--quiet", "--agent", "oracle", "--seeds", "0..200", "--out", "d"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let before = files(&dir.path().join("d"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .current_dir(dir.path())
        .args(["sweep", "--quiet", "--agent", "naive", "--seeds", "0..4000", "--out", "d"])
        .env("AGENTSIM_CHUNK_SEEDS", "64")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while crate::common::temp_len(&dir.path().join("d/trajectories.csv")) == 0 {
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended before it was killed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let after: Vec<_> = files(&dir.path().join("d")).into_iter().filter(|(n, _)| !n.ends_with(".tmp")).collect();
    assert!(before == after, "the previous run's files are untouched");
    let output =
        agentsim(dir.path(), &["sweep", "--quiet", "--agent", "naive", "--seeds", "0..4000", "--resume", "d"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("field `agent` is oracle in d/run.json"));
}

/// The library side: a flag set while a chunk is handed on stops the sweep at the
/// end of that chunk, and what was handed on is every seed before it, in order.
#[test]
fn sweep_trials_until_stops_between_whole_chunks() {
    let prepared = crate::common::default_scenario();
    let stack = crate::common::preset("naive");
    let runner = agentsim::Runner::new(&prepared, &stack, false, 1.0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut seen = Vec::new();
    let until = runner
        .sweep_trials_until(10..200, 2, 16, &stop, |trial, t| {
            seen.push((t.seed, trial));
            if t.seed == 30 {
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(until, 42, "the chunk 26..42 holding seed 30 is finished, no other starts");
    let expected: Vec<(u64, u32)> = (10..42).flat_map(|s| [(s, 0), (s, 1)]).collect();
    assert_eq!(seen, expected);
    stop.store(false, std::sync::atomic::Ordering::SeqCst);
    let all = runner.sweep_trials_until(10..200, 1, 1000, &stop, |_, _| Ok::<(), ()>(())).unwrap();
    assert_eq!(all, 200, "without a signal the sweep is complete");
}

/// Interrupted before its first chunk is done: a CSV of the header alone, a
/// summary of nothing done, and a resume that runs everything.
#[test]
fn an_interruption_before_the_first_row_leaves_a_header_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--agent", "naive", "--seeds", "0..3000", "--trials", "2"];
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .current_dir(dir.path())
        .args(["sweep", "--quiet", "--out", "part"])
        .args(args)
        .env("AGENTSIM_CHUNK_SEEDS", "3000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The temporary file is created after the handler is installed and before the
    // one chunk starts.
    while crate::common::temp_of(&dir.path().join("part/trajectories.csv")).is_none() {
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended before it was interrupted");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // SAFETY: sending a signal to a child process this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let csv = std::fs::read_to_string(dir.path().join("part/trajectories.csv")).unwrap();
    assert!(csv.starts_with("seed,trial,outcome,") && csv.lines().count() == 1, "{csv}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("part/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["partial"]["done_until_seed"], 0);
    assert_eq!(summary["trajectories"], 0);

    let mut resume = vec!["sweep", "--quiet", "--resume", "part"];
    resume.extend_from_slice(&args);
    let output = agentsim(dir.path(), &resume, &[]);
    assert!(output.status.success(), "{}", text(&output));
    let mut full = vec!["sweep", "--quiet", "--out", "full"];
    full.extend_from_slice(&args);
    let output = agentsim(dir.path(), &full, &[("RAYON_NUM_THREADS", "1")]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(files(&dir.path().join("full")) == files(&dir.path().join("part")));
}

/// Ctrl-C during a sweep of an external agent: it stops within seconds (the
/// agents' waits end, no new agent starts), keeps the seeds finished before the
/// signal, and those rows are an uninterrupted run's.
#[test]
fn an_interrupted_sweep_of_an_external_agent_stops_soon_and_keeps_what_finished() {
    let dir = tempfile::tempdir().unwrap();
    let agent = format!("cmd:python3 {}/examples/agents/support_desk_agent.py", env!("CARGO_MANIFEST_DIR"));
    let child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .current_dir(dir.path())
        .args(["sweep", "--quiet", "--agent", &agent, "--seeds", "0..1000", "--out", "part"])
        .args(["--turn-limit-ms", "60000"])
        .env("RAYON_NUM_THREADS", "2")
        .env_remove("AGENTSIM_CHUNK_SEEDS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = crate::common::interrupt_after_rows(child, &dir.path().join("part/trajectories.csv"), 3);
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("part/summary.json")).unwrap()).unwrap();
    let done_until = summary["partial"]["done_until_seed"].as_u64().expect("summary.json is marked partial");
    assert!((2..1000).contains(&done_until), "kept the seeds finished: {done_until}");
    let csv = std::fs::read_to_string(dir.path().join("part/trajectories.csv")).unwrap();
    assert!(!csv.contains("interrupted"), "no run the signal broke is kept: {csv}");
    let seeds = format!("0..{done_until}");
    let full_args =
        ["sweep", "--quiet", "--agent", &agent, "--seeds", &seeds, "--out", "full", "--turn-limit-ms", "60000"];
    let output = agentsim(dir.path(), &full_args, &[("RAYON_NUM_THREADS", "1")]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(csv, std::fs::read_to_string(dir.path().join("full/trajectories.csv")).unwrap());
}
