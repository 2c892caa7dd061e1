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

/// Every subcommand that writes a file or folder takes `-o` as well as `--out`.
#[test]
fn every_writing_subcommand_takes_dash_o() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = agentsim(dir.path(), args, &[]);
        assert!(output.status.success(), "{args:?}: {}", text(&output));
    };
    run(&["sweep", "--seeds", "0..20", "-o", "a"]);
    run(&["sweep", "--seeds", "0..20", "--shard", "0/2", "-o", "s0"]);
    run(&["sweep", "--seeds", "0..20", "--shard", "1/2", "-o", "s1"]);
    run(&["merge", "s0", "s1", "-o", "merged"]);
    run(&["compare", "--baseline", "naive", "--candidate", "resilient", "--seeds", "0..20", "-o", "c"]);
    run(&["report", "a", "-o", "r.html"]);
    run(&["shrink", "--agent", "naive", "--seed", "35", "-o", "m.ron"]);
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/traces/refund_storm.jsonl");
    run(&["import-trace", trace, "--agent", "naive", "--seed", "1", "-o", "t.ron"]);
    std::fs::create_dir(dir.path().join("sessions")).unwrap();
    std::fs::copy(dir.path().join("m.ron"), dir.path().join("sessions/m.ron")).unwrap();
    run(&["summarize", "sessions", "-o", "sum"]);
    for written in ["a/summary.json", "merged/summary.json", "c/compare.json", "r.html", "sum/summary.json"] {
        assert!(dir.path().join(written).is_file(), "{written}");
    }
}

/// One rule for every `-o`: missing folders of the path are created, for a file
/// output as for a directory output, and an error names the path given, never
/// the temporary file written beside it.
#[test]
fn every_dash_o_creates_its_missing_folders() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = agentsim(dir.path(), args, &[]);
        assert!(output.status.success(), "{args:?}: {}", text(&output));
    };
    run(&["sweep", "--seeds", "0..20", "-o", "a"]);
    run(&["sweep", "--seeds", "0..20", "--shard", "0/2", "-o", "s0"]);
    run(&["sweep", "--seeds", "0..20", "--shard", "1/2", "-o", "s1"]);
    run(&["sweep", "--seeds", "0..20", "-o", "new/sweep/out"]);
    run(&["sweep", "--seeds", "0..5", "--fault-scale", "0,1", "-o", "new/surface/out"]);
    run(&["merge", "s0", "s1", "-o", "new/merged/out"]);
    run(&["compare", "--baseline", "naive", "--candidate", "resilient", "--seeds", "0..20", "-o", "new/compare/out"]);
    run(&["report", "a", "-o", "new/report/r.html"]);
    run(&["shrink", "--agent", "naive", "--seed", "35", "-o", "new/shrink/m.ron"]);
    run(&["run", "--agent", "naive", "--seed", "35", "--record", "new/run/m.ron"]);
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/traces/refund_storm.jsonl");
    run(&["import-trace", trace, "--agent", "naive", "--seed", "1", "-o", "new/trace/t.ron"]);
    std::fs::create_dir(dir.path().join("sessions")).unwrap();
    std::fs::copy(dir.path().join("new/shrink/m.ron"), dir.path().join("sessions/m.ron")).unwrap();
    run(&["summarize", "sessions", "-o", "new/summarize/out"]);
    for written in [
        "new/sweep/out/summary.json",
        "new/surface/out/surface.json",
        "new/merged/out/summary.json",
        "new/compare/out/compare.json",
        "new/report/r.html",
        "new/shrink/m.ron",
        "new/run/m.ron",
        "new/trace/t.ron",
        "new/summarize/out/summary.json",
    ] {
        assert!(dir.path().join(written).is_file(), "{written}");
    }
    // A folder of the path that is a file: refused before the work, naming it.
    std::fs::write(dir.path().join("plain"), "").unwrap();
    let output = agentsim(dir.path(), &["report", "a", "-o", "plain/r.html"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot write `plain/r.html`: `plain` is not a directory"), "{stderr}");
    assert!(!stderr.contains(".tmp"), "{stderr}");
}

/// A surface's folders are named so that every accepted scale fits (`1e-300`
/// once made a folder name of 306 bytes, after the first sweeps had run).
#[test]
fn a_surface_of_extreme_scales_writes_every_folder() {
    let dir = tempfile::tempdir().unwrap();
    let output =
        agentsim(dir.path(), &["sweep", "--fault-scale", "0,1e-300,1e308", "--seeds", "0..3", "-o", "fs"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let surface: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("fs/surface.json")).unwrap()).unwrap();
    let dirs: Vec<&str> = surface["points"].as_array().unwrap().iter().map(|p| p["dir"].as_str().unwrap()).collect();
    assert_eq!(dirs, ["scale-0", "scale-1e-300", "scale-1e308"]);
    for d in dirs {
        assert!(dir.path().join("fs").join(d).join("summary.json").is_file(), "{d}");
    }
}

/// `import-trace` names its scenario as every command does (positional); the
/// old `--scenario` flag still works and writes the same incident.
#[test]
fn import_trace_takes_the_scenario_positionally_and_as_the_old_flag() {
    let dir = tempfile::tempdir().unwrap();
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/traces/refund_storm.jsonl");
    let positional = agentsim(dir.path(), &["import-trace", trace, "support_desk", "-o", "a.ron"], &[]);
    assert!(positional.status.success(), "{}", text(&positional));
    let flag = agentsim(dir.path(), &["import-trace", trace, "--scenario", "support_desk", "-o", "b.ron"], &[]);
    assert!(flag.status.success(), "{}", text(&flag));
    assert_eq!(std::fs::read(dir.path().join("a.ron")).unwrap(), std::fs::read(dir.path().join("b.ron")).unwrap());
    let both =
        agentsim(dir.path(), &["import-trace", trace, "support_desk", "--scenario", "newsroom", "-o", "c.ron"], &[]);
    assert_eq!(both.status.code(), Some(2), "{}", text(&both));
}

/// Parses stdout as exactly one JSON document.
fn json_stdout(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}\n{}", text(output)))
}

/// `--json` on run, replay, check, compare and list: stdout is one JSON document
/// with the documented fields; status lines stay on stderr.
#[test]
fn json_output_is_one_document_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| agentsim(dir.path(), args, &[]);
    let list = json_stdout(&run(&["list", "--json"]));
    assert!(list["scenarios"].as_array().unwrap().iter().any(|s| s["name"] == "support_desk"), "{list}");
    assert!(list["presets"].as_array().unwrap().iter().any(|s| s["name"] == "resilient"), "{list}");

    let ran = run(&["run", "--agent", "naive", "--seed", "25", "--json", "--record", "i.ron"]);
    assert!(ran.status.success(), "{}", text(&ran));
    let t = json_stdout(&ran);
    assert_eq!(t["outcome"], "violation");
    assert_eq!(t["scenario"], "support_desk");
    assert!(t["digest"].as_str().unwrap().len() == 32 && t["timeline"].as_array().unwrap().len() > 5, "{t}");
    assert!(String::from_utf8_lossy(&ran.stderr).contains("recorded i.ron"));

    let replayed = json_stdout(&run(&["replay", "i.ron", "--json"]));
    assert_eq!((replayed["passed"].as_u64(), replayed["failed"].as_u64()), (Some(1), Some(0)), "{replayed}");
    assert_eq!(replayed["results"][0]["digest"], t["digest"]);
    let with = run(&["replay", "i.ron", "--agent", "naive", "--json"]);
    assert_eq!(with.status.code(), Some(1), "naive does not succeed on its own violation");
    assert_eq!(json_stdout(&with)["results"][0]["pass"], false);

    assert!(run(&["sweep", "--seeds", "0..50", "-o", "o"]).status.success());
    let gate = concat!(env!("CARGO_MANIFEST_DIR"), "/seeds/gates/release.ron");
    let checked = run(&["check", gate, "o", "--json"]);
    let c = json_stdout(&checked);
    assert_eq!(
        c["rules"].as_array().unwrap().len() as u64,
        c["passed"].as_u64().unwrap() + c["failed"].as_u64().unwrap()
    );
    assert_eq!(checked.status.code(), Some(if c["failed"] == 0 { 0 } else { 1 }));

    let compared = json_stdout(&run(&[
        "compare",
        "--baseline",
        "naive",
        "--candidate",
        "resilient",
        "--seeds",
        "0..30",
        "--json",
    ]));
    assert_eq!(compared["baseline"]["trajectories"], 30);
    assert!(compared["comparison"].is_object(), "{compared}");
}

/// `agentsim mcp --verdict FILE|-` writes the judged session as one JSON object,
/// and `--fail-on-failure` exits 1 when it did not succeed.
#[test]
fn mcp_writes_its_verdict_as_json_and_can_fail() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_agentsim");
    let session = |args: &[&str]| {
        std::process::Command::new(bin)
            .current_dir(dir.path())
            .args(["mcp", "--seed", "1"])
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // A client that closes stdin at once did nothing: not a success.
    let quiet = session(&["--verdict", "v.json"]);
    assert!(quiet.status.success(), "{}", text(&quiet));
    let verdict: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("v.json")).unwrap()).unwrap();
    assert_ne!(verdict["outcome"], "success", "{verdict}");
    assert_eq!(verdict["seed"], 1);
    let failing = session(&["--verdict", "-", "--fail-on-failure"]);
    assert_eq!(failing.status.code(), Some(1), "{}", text(&failing));
    let stderr = String::from_utf8_lossy(&failing.stderr);
    let last: serde_json::Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
    assert_eq!(last["digest"], verdict["digest"]);
}

/// Shell completions and the manual page come from the parser's definitions.
#[test]
fn completions_and_the_manual_page_cover_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let bash = agentsim(dir.path(), &["completions", "bash"], &[]);
    assert!(bash.status.success(), "{}", text(&bash));
    let script = String::from_utf8_lossy(&bash.stdout);
    let man = agentsim(dir.path(), &["man"], &[]);
    assert!(man.status.success(), "{}", text(&man));
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH agentsim"), "{}", &page[..200.min(page.len())]);
    for sub in ["sweep", "run", "compare", "check", "import-trace", "mcp", "summarize"] {
        assert!(script.contains(sub), "bash completion lacks {sub}");
        assert!(page.contains(&format!("agentsim-{sub}")), "the manual lacks agentsim-{sub}");
    }
    let unknown = agentsim(dir.path(), &["completions", "cmd.exe"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
}
