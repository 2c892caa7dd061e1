//! Data-driven: every bad input gets exit 2 and a message naming the file, line,
//! column and field, never a panic.
//! - `tests/bad_stacks/*.ron` (run as `--agent FILE`) and `tests/bad_incidents/*.ron`
//!   (`replay FILE`) start with `// expect: LINE:COLUMN: TEXT`, like
//!   `tests/bad_scenarios/`;
//! - `tests/bad_tilts/*.ron` (`sweep seeds/rare_failure.ron --importance FILE`)
//!   likewise;
//! - `tests/bad_traces/NAME.jsonl` (`import-trace`) has its `LINE:COLUMN: TEXT` in
//!   `NAME.expect`;
//! - `tests/bad_args.txt` lists command lines and a text their stderr must hold.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{agentsim, text};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &str, extension: &str) -> Vec<PathBuf> {
    let dir = repo().join(dir);
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "the corpus is in {}", dir.display());
    cases
}

/// Exit 2, `FILE:LINE:COLUMN:` and the text in stderr, no panic.
fn assert_refused(case: &Path, output: &Output, expect: &str) {
    let (position, needle) = expect.trim().split_once(": ").expect("an expectation is `LINE:COLUMN: TEXT`");
    assert_eq!(output.status.code(), Some(2), "{}: {}", case.display(), text(output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let located = format!("{}:{position}:", case.display());
    assert!(stderr.contains(&located), "{}: expected `{located}` in {stderr}", case.display());
    assert!(stderr.contains(needle), "{}: expected `{needle}` in {stderr}", case.display());
    assert!(!stderr.contains("panicked"), "{}: {stderr}", case.display());
}

fn first_line_expectation(case: &Path) -> String {
    let source = std::fs::read_to_string(case).unwrap();
    source
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("// expect: "))
        .unwrap_or_else(|| panic!("{} starts with `// expect: LINE:COLUMN: TEXT`", case.display()))
        .to_string()
}

#[test]
fn every_bad_stack_file_is_refused_with_its_position() {
    let work = tempfile::tempdir().unwrap();
    for case in files("tests/bad_stacks", "ron") {
        let path = case.to_string_lossy().into_owned();
        let output = agentsim(work.path(), &["run", "--agent", &path], &[]);
        assert_refused(&case, &output, &first_line_expectation(&case));
    }
}

#[test]
fn every_bad_tilts_file_is_refused_with_its_position() {
    let work = tempfile::tempdir().unwrap();
    let scenario = repo().join("seeds/rare_failure.ron").to_string_lossy().into_owned();
    for case in files("tests/bad_tilts", "ron") {
        let path = case.to_string_lossy().into_owned();
        let args = ["sweep", &scenario, "--seeds", "0..1", "--importance", &path, "--out", "o"];
        let output = agentsim(work.path(), &args, &[]);
        assert_refused(&case, &output, &first_line_expectation(&case));
        assert!(!work.path().join("o/summary.json").exists(), "{}: nothing is written", case.display());
    }
}

#[test]
fn every_bad_incident_is_refused_with_its_position() {
    let work = tempfile::tempdir().unwrap();
    for case in files("tests/bad_incidents", "ron") {
        let path = case.to_string_lossy().into_owned();
        let output = agentsim(work.path(), &["replay", &path], &[]);
        assert_refused(&case, &output, &first_line_expectation(&case));
    }
}

#[test]
fn every_bad_trace_is_refused_with_its_position() {
    let work = tempfile::tempdir().unwrap();
    for case in files("tests/bad_traces", "jsonl") {
        let expect = std::fs::read_to_string(case.with_extension("expect"))
            .unwrap_or_else(|_| panic!("{} has a .expect file beside it", case.display()));
        let path = case.to_string_lossy().into_owned();
        let output = agentsim(work.path(), &["import-trace", &path, "-o", "x.ron"], &[]);
        assert_refused(&case, &output, &expect);
        assert!(!work.path().join("x.ron").exists(), "{}: nothing is written", case.display());
    }
}

#[test]
fn every_bad_command_line_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    // One line of 100 MB: refused by its size at once, never parsed.
    let mut big = vec![b'a'; 100_000_000];
    big.push(b'\n');
    std::fs::write(dir.join("big.ron"), big).unwrap();
    std::fs::write(dir.join("latin1.ron"), b"(\n    name: \"caf\xe9\",\n)\n").unwrap();
    std::fs::write(dir.join("empty.ron"), b"").unwrap();
    std::fs::create_dir(dir.join("folder.ron")).unwrap();
    std::fs::create_dir(dir.join("folder")).unwrap();
    let done = agentsim(dir, &["sweep", "--quiet", "--seeds", "0..10", "--out", "done"], &[]);
    assert!(done.status.success(), "{}", text(&done));
    let summary = std::fs::read_to_string(dir.join("done/summary.json")).unwrap();
    std::fs::create_dir(dir.join("partial")).unwrap();
    let partial = summary.replacen("{\n", "{\n  \"partial\": {\"done_until_seed\": 5},\n", 1);
    std::fs::write(dir.join("partial/summary.json"), partial).unwrap();

    let list = std::fs::read_to_string(repo().join("tests/bad_args.txt")).unwrap();
    let repo = repo().to_string_lossy().into_owned();
    let mut cases = 0;
    for line in list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (args, needle) = line.split_once(" => ").unwrap_or_else(|| panic!("`{line}` is `ARGS => TEXT`"));
        let args: Vec<String> = args.split_whitespace().map(|a| a.replace("{repo}", &repo)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = agentsim(dir, &args, &[]);
        assert_eq!(output.status.code(), Some(2), "{line}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle.trim()), "{line}: expected `{needle}` in {stderr}");
        assert!(!stderr.contains("panicked"), "{line}: {stderr}");
        cases += 1;
    }
    assert!(cases >= 40, "{cases} cases");
    for leftover in ["x.ron", "m", "other"] {
        assert!(!dir.join(leftover).exists(), "a refused command wrote {leftover}");
    }
}

/// Files are data: an incident recorded from an external agent stores its
/// decisions, and the command in its `agent` label is never run.
#[test]
fn an_incident_naming_a_command_replays_without_running_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let agent = format!("cmd:python3 {}/examples/agents/support_desk_agent.py", repo().display());
    let output = agentsim(dir, &["run", "--seed", "1", "--agent", &agent, "--record", "ext.ron"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let recorded = std::fs::read_to_string(dir.join("ext.ron")).unwrap();
    assert!(recorded.contains("Replayed("), "the decisions are stored");
    let edited = recorded.replace(&format!("agent: \"{agent}\""), "agent: \"cmd:touch PWNED\"");
    assert_ne!(edited, recorded);
    std::fs::write(dir.join("ext.ron"), edited).unwrap();
    let output = agentsim(dir, &["replay", "ext.ron"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(!dir.join("PWNED").exists(), "replaying an incident started a process");
    // A stack file cannot name one either (tests/bad_stacks/external_planner.ron,
    // command_field.ron), nor an incident's stack (tests/bad_incidents/).
}
