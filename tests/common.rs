//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use agentsim_agents::StackSpec;
use agentsim_worlds::{Prepared, Scenario};

/// The default scenario, parsed.
pub fn default_scenario() -> Prepared {
    let text = agentsim::builtin::scenario(agentsim::builtin::DEFAULT_SCENARIO).expect("default scenario is built in");
    Prepared::new(Scenario::parse(text, "built-in").expect("default scenario parses"))
}

/// A preset's stack.
pub fn preset(name: &str) -> StackSpec {
    agentsim_agents::preset(name).unwrap_or_else(|| panic!("preset {name} exists"))
}

/// Runs the agentsim binary with `args` in `dir`, with extra environment.
pub fn agentsim(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentsim"));
    command.current_dir(dir).args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("the agentsim binary runs")
}

/// Runs `agentsim sweep ARGS --out out-T` in `dir` once for each
/// `(threads, chunk_seeds)` pair (`RAYON_NUM_THREADS`, `AGENTSIM_CHUNK_SEEDS`),
/// asserting each run succeeds; gives each run's stdout, `trajectories.csv`
/// and `summary.json`, for determinism tests to compare.
pub fn sweep_on_threads(dir: &Path, args: &[&str], runs: &[(&str, &str)]) -> Vec<(String, String, String)> {
    runs.iter()
        .map(|(threads, chunk)| {
            let out = format!("out-{threads}");
            let mut all: Vec<&str> = vec!["sweep"];
            all.extend_from_slice(args);
            all.extend(["--out", &out]);
            let env = [("RAYON_NUM_THREADS", *threads), ("AGENTSIM_CHUNK_SEEDS", *chunk)];
            let output = agentsim(dir, &all, &env);
            assert!(output.status.success(), "{}", text(&output));
            let read = |file: &str| std::fs::read_to_string(dir.join(&out).join(file)).unwrap();
            (String::from_utf8_lossy(&output.stdout).into_owned(), read("trajectories.csv"), read("summary.json"))
        })
        .collect()
}

/// Sweeps `args` on 1 thread in chunks of `chunks.0` seeds and on 4 in
/// chunks of `chunks.1`: the printed digest, `trajectories.csv` and
/// `summary.json` must be the same. Returns the one-thread run's (stdout,
/// rows, summary).
pub fn same_on_one_and_four_threads(dir: &Path, args: &[&str], chunks: (&str, &str)) -> (String, String, String) {
    let mut runs = sweep_on_threads(dir, args, &[("1", chunks.0), ("4", chunks.1)]);
    let four = runs.pop().expect("two runs");
    let one = runs.pop().expect("two runs");
    let digest = |stdout: &str| stdout.lines().find(|l| l.starts_with("digest ")).map(str::to_string);
    assert!(digest(&one.0).is_some(), "a sweep prints its digest: {}", one.0);
    assert_eq!(digest(&one.0), digest(&four.0), "the sweep's digest");
    assert_eq!(one.1, four.1, "trajectories.csv");
    assert_eq!(one.2, four.2, "summary.json");
    one
}

/// `text` with every `FIELD N` of `fields` (each written `, name: `) left
/// out: a scenario's counts of a resource, say.
pub fn without_counts(text: &str, fields: &[&str]) -> String {
    let mut out = text.to_string();
    for field in fields {
        while let Some(from) = out.find(field) {
            let digits = out[from + field.len()..].find(|c: char| !c.is_ascii_digit()).expect("a count then more");
            out.replace_range(from..from + field.len() + digits, "");
        }
    }
    out
}

/// Stdout and stderr as text, for assertion messages.
pub fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Skips the rest of a test whose tool or data is missing: required under CI
/// (`CI` set, as `.ci/run` sets it), so there it fails; elsewhere it says
/// `skipped` on the terminal, past the test harness's capture (a write to the
/// stderr handle, not `eprintln!`), so a skipped test never passes silently.
pub fn skip(test: &str, why: &str) {
    assert!(std::env::var_os("CI").is_none(), "{test}: {why}; required under CI");
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

/// A summary record of `seed` with `outcome` and `log_weight` and nothing else
/// (no faults, calls or cost), for tests of the statistics over records.
pub fn bare_record(seed: u64, outcome: agentsim_engine::Outcome, log_weight: f64) -> agentsim::summary::Record {
    agentsim::summary::Record {
        seed,
        outcome,
        faults_seen: 0,
        recovered: false,
        violations: 0,
        minefields: Vec::new(),
        decisions: Vec::new(),
        turns: 0,
        tool_calls: 0,
        cost_micro_usd: 0,
        virtual_ms: 0,
        tokens: 0,
        digest: agentsim_engine::Digest::default(),
        told_accurately: None,
        rejected_calls: 0,
        fault_kinds: Vec::new(),
        log_weight,
        task: None,
        checks: Vec::new(),
        sessions: None,
    }
}

/// The temporary file an agentsim writing `target` writes now, if any: a
/// `.NAME.<16 hex digits>.tmp` beside it (`agentsim_agents::temp_file`).
pub fn temp_of(target: &Path) -> Option<std::path::PathBuf> {
    let name = target.file_name()?.to_string_lossy().into_owned();
    let (prefix, dir) = (format!(".{name}."), target.parent()?);
    std::fs::read_dir(dir).ok()?.filter_map(Result::ok).map(|e| e.path()).find(|path| {
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        file.strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// The bytes written so far to the temporary file of `target` (0 when none).
pub fn temp_len(target: &Path) -> u64 {
    temp_of(target).and_then(|temp| std::fs::metadata(temp).ok()).map_or(0, |m| m.len())
}

/// Sends SIGINT to a running sweep `child` once the temporary file of its CSV
/// `target` holds `rows` lines, and waits (at most 10 s) for it to end; its output.
pub fn interrupt_after_rows(mut child: std::process::Child, target: &Path, rows: usize) -> Output {
    while temp_of(target).and_then(|temp| std::fs::read_to_string(temp).ok()).map_or(0, |t| t.lines().count()) < rows {
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended before it was interrupted");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: sending a signal to a child process this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT) }, 0);
    let signalled = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(signalled.elapsed().as_secs() < 10, "the sweep still runs 10 s after SIGINT");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Sweeps `scenario` with `agent` over `seeds` into `dir/swept`, then replays
/// every failing trajectory it kept as an incident, each of which must pass;
/// returns the incidents' texts.
pub fn sweep_and_replay_failures(dir: &Path, scenario: &str, agent: &str, seeds: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["sweep", scenario, "--agent", agent, "--seeds", seeds, "--out", "swept"];
    args.extend_from_slice(extra);
    let out = agentsim(dir, &args, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let failures: Vec<_> = std::fs::read_dir(dir.join("swept/failures")).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(!failures.is_empty(), "{scenario}: the sweep kept a failure");
    failures
        .into_iter()
        .map(|incident| {
            let replay = agentsim(dir, &["replay", &incident.to_string_lossy()], &[]);
            assert!(replay.status.success(), "{}: {}", incident.display(), text(&replay));
            std::fs::read_to_string(&incident).unwrap()
        })
        .collect()
}

/// A file of the repository, by its path from the root.
pub fn repo_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// A scenario's text, parsed and prepared.
pub fn prepare_text(text: &str) -> Prepared {
    Prepared::new(Scenario::parse(text, "test").unwrap_or_else(|e| panic!("the scenario parses: {e}")))
}

/// Seed `seed` of `prepared` with the preset `agent`, at fault scale 1.
pub fn run_preset(prepared: &Prepared, agent: &str, seed: u64) -> agentsim_engine::Trajectory {
    agentsim::Runner::new(prepared, &preset(agent), false, 1.0).run(seed)
}
