//! Reliability statistics from the command line: pass^k trials, the reliability
//! surface, compare, check with gate files (data-driven: every file in
//! `tests/gates/` is a case) and the HTML report, including determinism on 1 and
//! 4 threads and an end-to-end render in headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{agentsim, text};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&read(path)).unwrap()
}

/// Runs agentsim and asserts it exited with `code`.
fn run_ok(dir: &Path, args: &[&str], env: &[(&str, &str)], code: i32) -> std::process::Output {
    let output = agentsim(dir, args, env);
    assert_eq!(output.status.code(), Some(code), "{args:?}: {}", text(&output));
    output
}

#[test]
fn the_default_sweep_is_unchanged_by_the_new_metrics() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(dir.path(), &["sweep", "--out", "d"], &[], 0);
    let summary = json(&dir.path().join("d/summary.json"));
    assert_eq!(summary["digest"], "87c1dac6cf951ba14e9d978d7b4efe7e");
    assert_eq!(summary["trials"], 1);
    assert!(summary.get("pass_k").is_none(), "pass_k appears only with --trials");
    for key in ["contextual_accuracy", "tool_fidelity"] {
        let rate = &summary[key];
        assert!(rate["lo"].as_f64().unwrap() <= rate["rate"].as_f64().unwrap(), "{key}: {rate}");
        assert!(rate["n"].as_u64().unwrap() > 0, "{key}: {rate}");
    }
    let by_fault = summary["recovery_by_fault"].as_object().unwrap();
    assert!(by_fault.contains_key("error_503") && by_fault.contains_key("commit_then_timeout"), "{by_fault:?}");
    assert!(summary["turns"]["p95"].as_u64().unwrap() <= summary["turns"]["p99"].as_u64().unwrap());
}

#[test]
fn the_progress_bar_shows_on_a_terminal_only_and_not_with_quiet() {
    let dir = tempfile::tempdir().unwrap();
    // Piped stderr: silent.
    let output = run_ok(dir.path(), &["sweep", "--seeds", "0..4000", "--out", "piped"], &[], 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains('\r') && !stderr.contains("ETA"), "{stderr}");
    // A terminal: `script` (util-linux) gives the command a pseudo-terminal.
    let script = Path::new("/usr/bin/script");
    if !script.is_file() {
        crate::common::skip("the progress bar's terminal half", "/usr/bin/script (util-linux) is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_agentsim");
    let on_terminal = |extra: &str| {
        let command = format!("{bin} sweep --seeds 0..16000 --out tty {extra} > /dev/null");
        let output =
            Command::new(script).current_dir(dir.path()).args(["-qec", &command, "/dev/null"]).output().unwrap();
        assert!(output.status.success(), "{}", text(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let shown = on_terminal("");
    assert!(shown.contains("ETA") && shown.contains("/s"), "no progress bar on a terminal: {shown}");
    let quiet = on_terminal("--quiet");
    assert!(!quiet.contains("ETA"), "--quiet still drew a bar: {quiet}");
}

#[test]
fn trials_add_pass_k_and_keep_trial_0_equal_to_the_plain_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for threads in ["1", "4"] {
        let out = format!("t{threads}");
        run_ok(
            dir.path(),
            &["sweep", "--agent", "naive", "--seeds", "0..300", "--trials", "3", "--out", &out],
            &[("RAYON_NUM_THREADS", threads)],
            0,
        );
        outputs.push((
            read(&dir.path().join(&out).join("trajectories.csv")),
            read(&dir.path().join(&out).join("summary.json")),
        ));
    }
    assert!(outputs[0] == outputs[1], "--trials output differs between 1 and 4 threads");
    run_ok(dir.path(), &["sweep", "--agent", "naive", "--seeds", "0..300", "--out", "plain"], &[], 0);

    let csv = String::from_utf8(outputs[0].0.clone()).unwrap();
    let plain = std::fs::read_to_string(dir.path().join("plain/trajectories.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("seed,trial,outcome,"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let order: Vec<(u64, u32)> = rows.iter().map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap())).collect();
    let expected: Vec<(u64, u32)> = (0..300).flat_map(|s| (0..3).map(move |t| (s, t))).collect();
    assert_eq!(order, expected, "one row per (seed, trial), in that order");
    // Trial 0 is the plain seed, byte for byte.
    for (row, plain_row) in rows.iter().filter(|r| r[1] == "0").zip(plain.lines().skip(1)) {
        let mut without_trial = row.clone();
        without_trial.remove(1);
        assert_eq!(without_trial.join(","), plain_row);
    }
    // Other trials of a seed meet the same world but are different runs.
    // The digest is the column before the row's checksum.
    let digests_of_seed_0: Vec<&str> = rows[..3].iter().map(|r| r[r.len() - 2]).collect();
    assert!(digests_of_seed_0[0] != digests_of_seed_0[1] && digests_of_seed_0[1] != digests_of_seed_0[2]);

    let summary: serde_json::Value = serde_json::from_slice(&outputs[0].1).unwrap();
    let pass_k = &summary["pass_k"];
    assert_eq!(pass_k["instances"], 300);
    let values: Vec<f64> = (1..=3).map(|k| pass_k["values"][k.to_string()].as_f64().unwrap()).collect();
    // pass^1 is the completion rate over all trials; pass^k never rises with k.
    assert_eq!(values[0], summary["completion"]["rate"].as_f64().unwrap());
    assert!(values[0] >= values[1] && values[1] >= values[2], "{values:?}");
    assert_eq!(values[2], pass_k["all_trials"]["rate"].as_f64().unwrap());
    // Recount pass^k from the CSV: the mean over seeds of C(c,k)/C(3,k).
    let mut by_seed = vec![0u32; 300];
    for r in &rows {
        by_seed[r[0].parse::<usize>().unwrap()] += u32::from(r[3] == "1");
    }
    let choose = |n: u32, k: u32| -> f64 { (0..k).map(|i| f64::from(n - i) / f64::from(i + 1)).product() };
    for k in 1..=3u32 {
        let expected: f64 =
            by_seed.iter().map(|&c| if c >= k { choose(c, k) / choose(3, k) } else { 0.0 }).sum::<f64>() / 300.0;
        assert!(
            (values[k as usize - 1] - expected).abs() < 1e-12,
            "pass^{k}: {} vs {expected}",
            values[k as usize - 1]
        );
    }
}

#[test]
fn a_list_of_fault_scales_writes_a_surface_that_matches_single_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let mut surfaces = Vec::new();
    for threads in ["1", "4"] {
        let out = format!("s{threads}");
        let output = run_ok(
            dir.path(),
            &["sweep", "--seeds", "0..400", "--fault-scale", "0,1,4", "--out", &out],
            &[("RAYON_NUM_THREADS", threads)],
            0,
        );
        assert!(String::from_utf8_lossy(&output.stdout).contains("reliability surface"), "{}", text(&output));
        surfaces.push(read(&dir.path().join(&out).join("surface.json")));
    }
    assert!(surfaces[0] == surfaces[1], "surface.json differs between 1 and 4 threads");
    let surface: serde_json::Value = serde_json::from_slice(&surfaces[0]).unwrap();
    let points = surface["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    // Each point is exactly the sweep at that scale, run on its own.
    run_ok(dir.path(), &["sweep", "--seeds", "0..400", "--fault-scale", "4", "--out", "alone"], &[], 0);
    let alone = json(&dir.path().join("alone/summary.json"));
    assert_eq!(points[2]["completion"], alone["completion"]);
    assert_eq!(points[2]["digest"], alone["digest"]);
    assert_eq!(read(&dir.path().join("s1/scale-4/summary.json")), read(&dir.path().join("alone/summary.json")));
    // Harsher worlds do not make the stack more reliable.
    let rates: Vec<f64> = points.iter().map(|p| p["completion"]["rate"].as_f64().unwrap()).collect();
    assert!(rates[0] >= rates[2], "{rates:?}");
}

#[test]
fn compare_pairs_the_seeds_and_is_sharper_than_independent_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let keys = repo().join("seeds/stacks/retry_without_keys.ron");
    let mut runs = Vec::new();
    for threads in ["1", "4"] {
        let out = format!("c{threads}");
        let output = run_ok(
            dir.path(),
            &[
                "compare",
                "--baseline",
                "naive",
                "--candidate",
                keys.to_str().unwrap(),
                "--seeds",
                "0..1500",
                "--out",
                &out,
            ],
            &[("RAYON_NUM_THREADS", threads)],
            0,
        );
        let stdout = String::from_utf8(output.stdout.clone()).unwrap().replace(&out, "OUT");
        runs.push((stdout, read(&dir.path().join(&out).join("compare.json"))));
    }
    assert!(runs[0] == runs[1], "compare output differs between 1 and 4 threads");
    let (stdout, bytes) = &runs[0];
    for needle in ["McNemar exact", "paired 95% interval", "unpaired 95% interval", "verdict: worse"] {
        assert!(stdout.contains(needle), "`{needle}` missing in:\n{stdout}");
    }
    let c: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    let width = |d: &serde_json::Value| d["hi"].as_f64().unwrap() - d["lo"].as_f64().unwrap();
    assert!(width(&c["paired"]) < 0.8 * width(&c["unpaired"]), "paired {} unpaired {}", c["paired"], c["unpaired"]);
    assert_eq!(c["paired"]["estimate"], c["unpaired"]["estimate"]);
    let pairs = &c["pairs"];
    let n: u64 =
        ["both", "baseline_only", "candidate_only", "neither"].iter().map(|k| pairs[k].as_u64().unwrap()).sum();
    assert_eq!(n, 1500);
    assert!(c["mcnemar_p"].as_f64().unwrap() < 1e-6);
    // Worst first: regressions (candidate failed) before improvements, by severity.
    let list = c["disagreements"].as_array().unwrap();
    assert_eq!(list.len() as u64, pairs["baseline_only"].as_u64().unwrap() + pairs["candidate_only"].as_u64().unwrap());
    let regression = |d: &serde_json::Value| d["candidate"] != "success";
    let first_improvement = list.iter().position(|d| !regression(d)).unwrap_or(list.len());
    assert!(list[first_improvement..].iter().all(|d| !regression(d)), "regressions come first");
    assert_eq!(list[0]["candidate"], "violation", "the worst regression is a minefield");
}

#[test]
fn comparing_a_stack_with_itself_finds_no_difference() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_ok(
        dir.path(),
        &["compare", "--baseline", "resilient", "--candidate", "resilient", "--seeds", "0..300"],
        &[],
        0,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("verdict: no significant difference"), "{stdout}");
    assert!(stdout.contains("the stacks agree on every seed"), "{stdout}");
}

/// The sweep every gate case is checked against.
fn resilient_sweep(dir: &Path) -> PathBuf {
    run_ok(dir, &["sweep", "--agent", "resilient", "--seeds", "0..1000", "--out", "resilient"], &[], 0);
    dir.join("resilient")
}

#[test]
fn every_gate_case_passes_fails_or_is_refused_as_its_first_line_says() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = resilient_sweep(dir.path());
    let mut cases = 0;
    let mut files: Vec<_> = std::fs::read_dir(repo().join("tests/gates")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let gate_text = std::fs::read_to_string(&file).unwrap();
        let expect = gate_text.lines().next().and_then(|l| l.strip_prefix("// expect: ")).unwrap_or_else(|| {
            panic!("{name}: the first line must be `// expect: pass`, `// expect: fail `RULE``, or `// expect: ERROR`")
        });
        let output = agentsim(&repo().join("tests/gates"), &["check", &name, sweep.to_str().unwrap()], &[]);
        let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        if expect == "pass" {
            assert_eq!(output.status.code(), Some(0), "{name}: {}", text(&output));
            assert!(!stdout.contains("FAIL"), "{name}: {stdout}");
        } else if let Some(rule) = expect.strip_prefix("fail ") {
            assert_eq!(output.status.code(), Some(1), "{name}: {}", text(&output));
            let rule = rule.trim_matches('`');
            assert!(stdout.contains(&format!("FAIL  {rule}")), "{name}: expected `FAIL  {rule}` in {stdout}");
        } else {
            assert_eq!(output.status.code(), Some(2), "{name}: {}", text(&output));
            assert!(stderr.contains(expect), "{name}: expected `{expect}` in {stderr}");
        }
        cases += 1;
    }
    assert!(cases >= 6, "only {cases} gate cases");
}

#[test]
fn the_example_gates_pass_the_stacks_they_should_and_fail_the_others() {
    let dir = tempfile::tempdir().unwrap();
    for (agent, gate, code) in [
        ("resilient", "release.ron", 0),
        ("naive", "release.ron", 1),
        ("resilient", "zero_violations.ron", 1),
        ("oracle", "zero_violations.ron", 0),
    ] {
        let out = dir.path().join(agent);
        if !out.join("summary.json").exists() {
            run_ok(dir.path(), &["sweep", "--agent", agent, "--seeds", "0..1000", "--out", agent], &[], 0);
        }
        let gate = repo().join("seeds/gates").join(gate);
        let output = agentsim(dir.path(), &["check", gate.to_str().unwrap(), agent], &[]);
        assert_eq!(output.status.code(), Some(code), "{agent} against {gate:?}: {}", text(&output));
    }
}

#[test]
fn bad_input_to_the_new_commands_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let gate = repo().join("seeds/gates/release.ron");
    let gate = gate.to_str().unwrap();
    for (args, needle) in [
        (vec!["check", gate, "empty"], "cannot read summary"),
        (vec!["check", "missing.ron", "empty"], "cannot read gate file `missing.ron`"),
        (vec!["report", "empty", "-o", "r.html"], "holds neither summary.json"),
        (vec!["run", "--fault-scale", "0,1"], "takes one scale"),
        (vec!["sweep", "--fault-scale", "1,x"], "--fault-scale"),
        (vec!["sweep", "--fault-scale", "1,1"], "listed twice"),
        (vec!["sweep", "--trials", "0"], "--trials"),
        (vec!["sweep", "--trials", "65"], "--trials"),
        (vec!["compare", "--baseline", "naive"], "--candidate"),
        (vec!["compare", "--baseline", "naive", "--candidate", "nonsense"], "unknown preset `nonsense`"),
    ] {
        let output = agentsim(dir.path(), &args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: expected `{needle}` in {stderr}");
    }
    assert!(!dir.path().join("r.html").exists(), "no report is written from bad input");
}

/// Two sweeps, a surface and pass^k, rendered; the report's path and bytes.
fn render_report(dir: &Path, threads: &str) -> (PathBuf, Vec<u8>) {
    let env = [("RAYON_NUM_THREADS", threads)];
    let sub = |name: &str| format!("{threads}/{name}");
    run_ok(dir, &["sweep", "--agent", "resilient", "--seeds", "0..500", "--out", &sub("resilient")], &env, 0);
    run_ok(dir, &["sweep", "--agent", "naive", "--seeds", "0..300", "--trials", "3", "--out", &sub("naive")], &env, 0);
    run_ok(dir, &["sweep", "--seeds", "0..300", "--fault-scale", "0,1,2,4", "--out", &sub("surface")], &env, 0);
    let race = repo().join("seeds/support_desk_race.ron");
    let race_args = [race.to_str().unwrap(), "--agent", "resilient", "--seeds", "0..12", "--out", &sub("race")];
    run_ok(dir, &[&["sweep"][..], &race_args].concat(), &env, 0);
    let compare = ["compare", "--baseline", "naive", "--candidate", "resilient", "--seeds", "0..300", "--out"];
    run_ok(dir, &[&compare[..], &[sub("compare").as_str()]].concat(), &env, 0);
    let html = sub("report.html");
    let dirs = [sub("resilient"), sub("naive"), sub("surface"), sub("race"), sub("compare")];
    let args: Vec<&str> = ["report"].into_iter().chain(dirs.iter().map(String::as_str)).chain(["-o", &html]).collect();
    run_ok(dir, &args, &env, 0);
    let path = dir.join(&html);
    let bytes = read(&path);
    (path, bytes)
}

#[test]
fn the_report_is_self_contained_deterministic_and_shows_the_summary_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let (_, one) = render_report(dir.path(), "1");
    let (_, four) = render_report(dir.path(), "4");
    // Directory names differ (1/ and 4/); everything else must be identical.
    let normalise = |b: &[u8], t: &str| String::from_utf8(b.to_vec()).unwrap().replace(&format!("{t}/"), "T/");
    assert!(normalise(&one, "1") == normalise(&four, "4"), "report.html differs between 1 and 4 threads");
    let html = String::from_utf8(one).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for forbidden in ["src=", "href=", "@import", "url(", "https:"] {
        assert!(!html.contains(forbidden), "the report must not load anything (`{forbidden}` found)");
    }
    for id in [
        "compare-0",
        "completion",
        "outcomes",
        "dimensions",
        "recovery",
        "turns-0",
        "cost-0",
        "surface",
        "pass-k",
        "sessions-latency",
        "sessions-in-flight",
        "sessions-rates",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "chart `{id}` missing");
    }
    // The sweep of many sessions: its section, with each bucket's numbers as
    // summary.json writes them.
    assert!(html.contains("<h2>Sessions under load</h2>"));
    let race = json(&dir.path().join("1/race/summary.json"));
    let buckets = race["sessions"]["over_time"]["buckets"].as_array().expect("the race sweep has a series");
    let keys = [
        "start_minute",
        "sessions",
        "succeeded",
        "success_share",
        "latency_mean_ms",
        "latency_p99_ms",
        "model_queue_mean_ms",
        "in_flight_mean",
    ];
    for bucket in buckets {
        let cells: String =
            keys.iter().map(|k| format!("<td>{}</td>", agentsim::report::table_number(&bucket[*k]))).collect();
        assert!(html.contains(&format!("{cells}</tr>")), "bucket {cells} not in the report");
    }
    let latency = html.split("id=\"sessions-latency\"").nth(1).unwrap().split("</svg>").next().unwrap();
    assert!(latency.matches("<polyline").count() >= 2, "mean and p99 lines: {latency}");
    // Every rate and spread in summary.json appears in the report's table, to
    // six significant digits (integers exactly).
    for sweep in ["resilient", "naive"] {
        let path = dir.path().join("1").join(sweep).join("summary.json");
        let file_text = String::from_utf8(read(&path)).unwrap();
        let summary = json(&path);
        for key in ["completion", "recovery", "violation", "contextual_accuracy", "tool_fidelity"] {
            for field in ["count", "n", "rate", "lo", "hi"] {
                let value = summary[key][field].to_string();
                // The value as the file writes it, not only as a parser reads it back.
                assert!(file_text.contains(&format!("\"{field}\": {value}")), "{key}.{field} {value} not in the file");
                let shown = agentsim::report::table_number(&summary[key][field]);
                assert!(shown.len() <= 9, "{key}.{field} = {value} shown as {shown}: too wide for its column");
                assert!(
                    html.contains(&format!("<td>{shown}</td>")),
                    "{sweep} {key}.{field} = {shown} not in the report"
                );
            }
        }
        for key in ["turns", "cost_micro_usd"] {
            for field in ["p50", "p90", "p95", "p99", "max", "mean"] {
                let value = agentsim::report::table_number(&summary[key][field]);
                assert!(
                    html.contains(&format!("<td>{value}</td>")),
                    "{sweep} {key}.{field} = {value} not in the report"
                );
            }
        }
        assert!(html.contains(summary["digest"].as_str().unwrap()));
    }
    let compare = json(&dir.path().join("1/compare/compare.json"));
    for key in ["both", "baseline_only", "candidate_only", "neither"] {
        let value = compare["pairs"][key].to_string();
        assert!(html.contains(&format!("<td>{value}</td>")), "pairs.{key} = {value} not in the report");
    }
    assert!(html.contains(&format!("<td>{}</td>", compare["mcnemar_p"])), "mcnemar_p not in the report");
    let naive = json(&dir.path().join("1/naive/summary.json"));
    for k in 1..=3 {
        let value = naive["pass_k"]["values"][k.to_string()].to_string();
        assert!(html.contains(&format!("<td>{value}</td>")), "pass^{k} = {value} not in the report");
    }
}

/// The Chromium binary, if installed.
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|c| c.is_file()))
            .unwrap_or(None);
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Runs headless Chromium on `page` with `mode` (`--dump-dom` or
/// `--screenshot=FILE`), killing it after a minute. Its output goes to files
/// beside the profile, not to pipes: a page's DOM larger than a pipe's buffer
/// would block Chromium until someone read it, and nobody would.
fn headless(chromium: &Path, profile: &Path, mode: &str, page: &Path, width_px: u32) -> std::process::Output {
    std::fs::create_dir_all(profile).unwrap();
    let (stdout_path, stderr_path) = (profile.join("stdout.txt"), profile.join("stderr.txt"));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--window-size={width_px},1200"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::process::Output { status, stdout: read(&stdout_path), stderr: read(&stderr_path) }
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        crate::common::skip(
            "the_report_renders_in_headless_chromium",
            "chromium is not installed (.ci/run installs it: apt-get install -y chromium)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (page, _) = render_report(dir.path(), "2");
    // A desktop and a phone: every chart laid out, nothing wider than the window.
    for width_px in [1280, 390] {
        let output =
            headless(&chromium, &dir.path().join(format!("profile-{width_px}")), "--dump-dom", &page, width_px);
        assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
        let dom = String::from_utf8_lossy(&output.stdout);
        assert!(dom.contains("data-fits=\"true\""), "{width_px} px: the page is wider than the window");
    }
    let output = headless(&chromium, &dir.path().join("profile-dom"), "--dump-dom", &page, 900);
    assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
    let dom = String::from_utf8_lossy(&output.stdout);
    // The page's own check ran after load: every chart laid out, no script error.
    assert!(dom.contains("data-status=\"ok\""), "the page did not report ok:\n{}", &dom[..dom.len().min(2000)]);
    let charts: usize = dom
        .split("data-charts=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("the page counts its charts");
    assert!(charts >= 13, "only {charts} charts rendered");
    for id in ["sessions-latency", "sessions-in-flight", "sessions-rates"] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "chart `{id}` not in the rendered page");
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("Uncaught"), "script error: {stderr}");

    let shot = dir.path().join("report.png");
    let output =
        headless(&chromium, &dir.path().join("profile-shot"), &format!("--screenshot={}", shot.display()), &page, 1280);
    assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
    let png = read(&shot);
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "screenshot of {} bytes", png.len());
}

/// Two sweeps of one agent are told apart by the shortest distinct suffix of
/// their folders, every sweep is labelled so, and a chart's fitted label keeps
/// the folder (it was cut out of `resilient (runs/x/out) · ...`).
#[test]
fn every_sweep_is_labelled_by_its_shortest_distinct_folder() {
    let dir = tempfile::tempdir().unwrap();
    for out in ["runs/x/out", "runs/y/out"] {
        run_ok(dir.path(), &["sweep", "--agent", "resilient", "--seeds", "0..40", "--out", out], &[], 0);
    }
    run_ok(dir.path(), &["sweep", "--agent", "naive", "--seeds", "0..40", "--out", "n"], &[], 0);
    run_ok(dir.path(), &["report", "runs/x/out", "runs/y/out", "n", "-o", "r.html"], &[], 0);
    let html = String::from_utf8(read(&dir.path().join("r.html"))).unwrap();
    for label in ["resilient (x/out)", "resilient (y/out)", "naive (n)"] {
        assert!(html.contains(&format!("<b>{label}</b>")), "`{label}` heads its sweep");
    }
    assert!(!html.contains("runs/"), "no longer suffix than tells the folders apart");
    // Each chart row's text, fitted or whole, names the folder.
    let rows: Vec<&str> = html
        .split("<text")
        .skip(1)
        .filter(|t| t.split("</text>").next().is_some_and(|t| t.contains("resilient")))
        .collect();
    assert!(!rows.is_empty());
    for row in rows {
        let text = row.split("</text>").next().unwrap_or(row);
        let shown = text.rsplit("</title>").next().unwrap_or(text);
        assert!(shown.contains("(x/out)") || shown.contains("(y/out)"), "a label without its folder: {row}");
    }
}

/// A sweep named twice (`out out/`) is drawn once, not as two stacks.
#[test]
fn the_same_sweep_given_twice_is_drawn_once() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(dir.path(), &["sweep", "--seeds", "0..40", "--out", "a"], &[], 0);
    let output = run_ok(dir.path(), &["report", "a", "a/", "-o", "r.html"], &[], 0);
    assert!(String::from_utf8_lossy(&output.stderr).contains("a/: given twice; drawn once"), "{output:?}");
    let html = String::from_utf8(read(&dir.path().join("r.html"))).unwrap();
    assert_eq!(html.matches("<p class=\"meta\"><b>resilient</b>").count(), 1, "one sweep, one header");
    assert!(!html.contains("resilient (a"), "no label told apart by its directory");
}
