//! Persistent external agents (`agentsim::persistent`, `docs/protocol.md`): one
//! process serves many episodes; the sweep's files are the same as with a
//! process per trajectory, for any number of threads and episodes in flight,
//! also when the agent crashes mid-episode, answers one episode wrongly or not
//! at all.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use agentsim::persistent::{Persistent, sweep_mapped_until};
use agentsim_agents::ExternalConfig;
use agentsim_engine::{Digest, Outcome};

use crate::common::{agentsim, default_scenario, text};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Sweeps `agent` over `seeds` into `dir/out` with `threads` threads and
/// `in_flight` episodes per process; returns trajectories.csv and summary.json
/// without its `agent` line (the command differs between agents).
fn sweep(dir: &Path, agent: &str, seeds: &str, threads: &str, in_flight: &str, extra: &[&str]) -> (String, String) {
    let out = format!("out-{threads}-{in_flight}-{}", agent.replace(['/', ' ', '.'], "_"));
    let command = format!("cmd:python3 {ROOT}/{agent}");
    let mut args = vec!["sweep", "--agent", &command, "--seeds", seeds, "--out", &out, "-j", threads, "--quiet"];
    args.extend_from_slice(extra);
    let output = agentsim(dir, &args, &[("PERSISTENT_IN_FLIGHT", in_flight)]);
    assert!(output.status.success(), "{}", text(&output));
    let csv = std::fs::read_to_string(dir.join(&out).join("trajectories.csv")).unwrap();
    let summary = std::fs::read_to_string(dir.join(&out).join("summary.json")).unwrap();
    let summary = summary.lines().filter(|l| !l.contains("\"agent\"")).collect::<Vec<_>>().join("\n");
    (csv, summary)
}

/// Runs `agent` over `seeds` in the library with `processes` processes and
/// `in_flight` episodes per process: (outcome, end reason, digest, the `what` of
/// its external failure notes) per seed.
fn run(agent: &str, seeds: std::ops::Range<u64>, processes: usize, in_flight: &str, turn_limit_ms: u64) -> Vec<Ended> {
    let prepared = default_scenario();
    let mut config = ExternalConfig::new(&format!("python3 {ROOT}/{agent} {in_flight}"));
    config.turn_limit_ms = turn_limit_ms;
    let run = Persistent {
        prepared: &prepared,
        config: &config,
        layers: &[],
        sim: prepared.scenario.sim_config(false, 1.0),
        swarm: false,
        processes,
    };
    let stop = AtomicBool::new(false);
    let mut ended = Vec::new();
    let done = sweep_mapped_until(
        &run,
        seeds.clone(),
        1,
        &stop,
        |_, t| {
            let failures = t.decisions.iter().filter(|(s, w, _)| *s == "external" && w.starts_with("error"));
            let failures = failures.map(|(_, what, _)| *what).collect();
            (t.outcome, t.end_reason, t.digest, failures)
        },
        |e| {
            ended.push(e);
            Ok::<(), ()>(())
        },
    );
    assert_eq!(done, Ok(Some(seeds.end)), "the agent greets and every seed runs");
    ended
}

type Ended = (Outcome, String, Digest, Vec<&'static str>);

#[test]
fn a_persistent_agent_sweeps_as_a_process_per_seed_does_on_any_threads() {
    let dir = tempfile::tempdir().unwrap();
    let per_seed = sweep(dir.path(), "examples/agents/support_desk_agent.py", "0..6", "2", "1", &[]);
    let persistent = sweep(dir.path(), "examples/agents/persistent_agent.py", "0..6", "2", "1", &[]);
    assert_eq!(persistent, per_seed, "the same policy, persistent or not");
    let one = sweep(dir.path(), "examples/agents/persistent_agent.py", "0..60", "1", "1", &[]);
    let three = sweep(dir.path(), "examples/agents/persistent_agent.py", "0..60", "3", "1", &[]);
    assert_eq!(one, three, "1 and 3 threads (processes)");
    assert!(one.0.lines().filter(|l| l.contains(",success,")).count() >= 50, "{}", one.0);
}

#[test]
fn a_crash_mid_episode_ends_only_its_episode_whatever_ran_beside_it() {
    let agent = "tests/external_agents/persistent_misbehaves.py crash";
    let runs: Vec<_> = [(1, "1"), (1, "6"), (3, "4")]
        .into_iter()
        .map(|(processes, in_flight)| run(agent, 0..15, processes, in_flight, 20_000))
        .collect();
    assert_eq!(runs[0], runs[1], "1 or 6 episodes in flight");
    assert_eq!(runs[0], runs[2], "1 or 3 processes");
    let healthy = run("tests/external_agents/persistent_misbehaves.py well", 0..15, 2, "4", 20_000);
    let (crashed, fine): (Vec<_>, Vec<_>) =
        runs[0].iter().zip(&healthy).partition(|((outcome, _, _, _), _)| *outcome == Outcome::AgentError);
    assert!(!crashed.is_empty() && fine.len() >= 5, "some episodes crash, most do not: {:?}", runs[0]);
    for ((_, reason, _, failures), _) in &crashed {
        assert!(reason.contains("closed its stdin or stdout"), "{reason}");
        assert_eq!(failures, &["error.closed"], "{reason}");
    }
    // The others ran as if nothing had happened beside them.
    for (mine, theirs) in fine {
        assert_eq!(mine, theirs);
    }
    // And the whole sweep writes the same files on 1 and 3 threads.
    let dir = tempfile::tempdir().unwrap();
    let one = sweep(dir.path(), agent, "0..10", "1", "3", &["--failures", "0"]);
    let three = sweep(dir.path(), agent, "0..10", "3", "3", &["--failures", "0"]);
    assert_eq!(one, three);
}

#[test]
fn a_bad_missing_garbled_or_oversized_answer_ends_only_that_episode() {
    for (mode, reason, kind, turn_limit_ms) in [
        ("bad_action", "answer to observation 2: field `tool`: unknown tool `no_such_tool`", "invalid_action", 20_000),
        ("silent", "no answer within 1500 ms (wall clock)", "timeout", 1_500),
        // Lines no episode can be told from fail the process: its episodes run
        // again alone, and only the guilty ones end, with the reason.
        ("garbage", "not JSON", "not_json", 20_000),
        ("oversized", "a line longer than 1048576 bytes", "line_too_long", 20_000),
    ] {
        let agent = format!("tests/external_agents/persistent_misbehaves.py {mode}");
        let ended = run(&agent, 0..12, 2, "4", turn_limit_ms);
        let failed: Vec<_> = ended.iter().filter(|(o, _, _, _)| *o == Outcome::AgentError).collect();
        assert!(!failed.is_empty() && failed.len() < ended.len(), "{mode}: {ended:?}");
        for (_, why, _, failures) in failed {
            assert!(why.contains(reason), "{mode}: {why}");
            assert_eq!(failures, &[format!("error.{kind}")], "{mode}: {why}");
        }
    }
}

/// The rows of a trajectories.csv after its header.
fn rows(csv: &str) -> Vec<&str> {
    csv.lines().skip(1).collect()
}

#[test]
fn a_hung_process_is_killed_and_its_episodes_run_again_alone_whatever_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let limit = ["--turn-limit-ms", "1000", "--failures", "0"];
    // Hangs on every episode: each ends as agent_error after one turn limit, on
    // 1 thread as on 2.
    let always = "tests/external_agents/persistent_hangs.py";
    let one = sweep(dir.path(), always, "0..8", "1", "4", &limit);
    assert_eq!(one, sweep(dir.path(), always, "0..8", "2", "4", &limit), "1 and 2 threads");
    for row in rows(&one.0) {
        assert!(row.contains(",agent_error,") && row.contains(",external.error.timeout=1,"), "{row}");
    }
    // Hangs (the whole process: no episode on it is answered again) on some
    // episodes: those end as agent_error, every other one as if it had run
    // alone, however many threads and whatever shared its process.
    let sometimes = "tests/external_agents/persistent_misbehaves.py hang";
    let one = sweep(dir.path(), sometimes, "0..16", "1", "4", &limit);
    assert_eq!(one, sweep(dir.path(), sometimes, "0..16", "2", "4", &limit), "1 and 2 threads");
    assert_eq!(one, sweep(dir.path(), sometimes, "0..16", "2", "1", &limit), "4 or 1 episodes in flight");
    let well = sweep(dir.path(), "tests/external_agents/persistent_misbehaves.py well", "0..16", "1", "4", &limit);
    let (hung, fine): (Vec<_>, Vec<_>) =
        rows(&one.0).into_iter().zip(rows(&well.0)).partition(|(row, _)| row.contains(",agent_error,"));
    assert!(!hung.is_empty() && fine.len() >= 8, "some episodes hang, most do not: {}", one.0);
    for (row, _) in hung {
        assert!(row.contains(",external.") && row.contains("error.timeout=1,"), "{row}");
    }
    for (mine, alone) in fine {
        assert_eq!(mine, alone);
    }
}

#[test]
fn run_serves_a_persistent_agent_one_episode() {
    let dir = tempfile::tempdir().unwrap();
    let mut digests = Vec::new();
    for agent in ["persistent_agent.py", "support_desk_agent.py"] {
        let command = format!("cmd:python3 {ROOT}/examples/agents/{agent}");
        let output = agentsim(dir.path(), &["run", "--agent", &command, "--seed", "1"], &[]);
        assert!(output.status.success(), "{}", text(&output));
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(stdout.contains("outcome: success"), "{stdout}");
        digests.push(stdout.lines().find(|l| l.starts_with("digest")).map(str::to_string));
    }
    assert_eq!(digests[0], digests[1]);
}

#[test]
fn an_interrupted_persistent_sweep_stops_soon_and_keeps_whole_seeds() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let agent = format!("cmd:python3 {ROOT}/examples/agents/persistent_agent.py");
    let sweep_args = |seeds: &str, out: &str| -> Vec<String> {
        ["sweep", "--quiet", "--agent", &agent, "--seeds", seeds, "--out", out, "--trials", "2"]
            .map(str::to_string)
            .to_vec()
    };
    let child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .current_dir(dir.path())
        .args(sweep_args("0..100000", "part"))
        .env("RAYON_NUM_THREADS", "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = crate::common::interrupt_after_rows(child, &dir.path().join("part/trajectories.csv"), 20);
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("part/summary.json")).unwrap()).unwrap();
    let done_until = summary["partial"]["done_until_seed"].as_u64().expect("summary.json is marked partial");
    assert!((5..100_000).contains(&done_until), "kept the seeds finished: {done_until}");
    let csv = std::fs::read_to_string(dir.path().join("part/trajectories.csv")).unwrap();
    assert_eq!(csv.lines().count() as u64, 1 + 2 * done_until, "whole seeds, both trials");
    assert!(!csv.contains("agent_error"), "no run the signal broke is kept: {csv}");
    // What was kept is what an uninterrupted sweep of those seeds writes.
    let seeds = format!("0..{done_until}");
    let full = sweep_args(&seeds, "full");
    let full: Vec<&str> = full.iter().map(String::as_str).collect();
    let output = agentsim(dir.path(), &full, &[("RAYON_NUM_THREADS", "1")]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(csv, std::fs::read_to_string(dir.path().join("full/trajectories.csv")).unwrap());
}

#[test]
fn a_bad_hello_or_an_answer_naming_no_episode_is_its_own_kind() {
    let agent = "tests/external_agents/persistent_protocol_errors.py no_episode";
    let ended = run(agent, 0..3, 2, "", 20_000);
    for (outcome, why, _, failures) in &ended {
        assert_eq!(*outcome, Outcome::AgentError, "{why}");
        assert!(why.contains("an answer without `episode`"), "{why}");
        assert_eq!(failures, &["error.bad_episode"], "{why}");
    }
    // A malformed hello is refused by a process per trajectory too.
    let prepared = default_scenario();
    let command = format!("python3 {ROOT}/tests/external_agents/persistent_protocol_errors.py bad_hello");
    let stack = agentsim_agents::StackSpec {
        planner: agentsim_agents::PlannerSpec::External(ExternalConfig::new(&command)),
        layers: vec![],
    };
    let t = agentsim::Runner::new(&prepared, &stack, false, 1.0).run(0);
    assert!(t.end_reason.contains("episodes_in_flight"), "{}", t.end_reason);
    assert!(t.decisions.iter().any(|(s, w, _)| *s == "external" && *w == "error.bad_hello"), "{:?}", t.decisions);
}

#[test]
fn a_persistent_agent_that_talks_in_words_sweeps_as_a_process_per_seed_does_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let per_seed = sweep(dir.path(), "examples/agents/text_agent.py", "0..12", "2", "1", &[]);
    let one = sweep(dir.path(), "tests/external_agents/persistent_text_agent.py", "0..12", "1", "4", &[]);
    let four = sweep(dir.path(), "tests/external_agents/persistent_text_agent.py", "0..12", "4", "4", &[]);
    assert_eq!(one, per_seed, "the same words, persistent or not");
    assert_eq!(one, four, "1 and 4 threads (processes), the digests included");
    assert!(one.0.lines().filter(|l| l.contains(",success,")).count() >= 9, "{}", one.0);
}
