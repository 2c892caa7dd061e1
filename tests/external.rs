//! External agents: the Python example solves the task and replays exactly; broken
//! agents end their trajectory as agent_error with the reason, and the sweep goes on.

use agentsim::Runner;
use agentsim_agents::{ExternalConfig, PlannerSpec, StackSpec};
use agentsim_engine::{EventKind, Outcome, Value};

use crate::common::{agentsim, default_scenario, text};

const EXAMPLE: &str = "python3 examples/agents/support_desk_agent.py";

fn external(command: &str, turn_limit_ms: u64) -> StackSpec {
    let root = env!("CARGO_MANIFEST_DIR");
    // Paths in the command are made absolute so the test does not depend on the
    // working directory.
    let command: Vec<String> = command
        .split_whitespace()
        .map(|w| if w.ends_with(".py") { format!("{root}/{w}") } else { w.to_string() })
        .collect();
    let mut config = ExternalConfig::new(&command.join(" "));
    config.turn_limit_ms = turn_limit_ms;
    StackSpec { planner: PlannerSpec::External(config), layers: vec![] }
}

#[test]
fn the_python_example_solves_the_task_and_replays_exactly() {
    let prepared = default_scenario();
    let stack = external(EXAMPLE, 20_000);
    let runner = Runner::new(&prepared, &stack, true, 1.0);
    let first: Vec<_> = (0..12).map(|seed| runner.run(seed)).collect();
    let successes = first.iter().filter(|t| t.outcome == Outcome::Success).count();
    assert!(successes >= 11, "{:?}", first.iter().map(|t| (t.outcome, &t.end_reason)).collect::<Vec<_>>());
    for t in &first {
        assert_ne!(t.outcome, Outcome::AgentError, "seed {}: {}", t.seed, t.end_reason);
        // Every decision is in the trajectory: one per model turn.
        let decisions = t
            .events
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::Note(n) if n.source == "external" && n.what == "decision"))
            .count();
        assert_eq!(decisions as u32, t.metrics.turns, "seed {}", t.seed);
    }
    let again: Vec<_> = (0..12).map(|seed| runner.run(seed).digest).collect();
    assert_eq!(first.iter().map(|t| t.digest).collect::<Vec<_>>(), again);
}

#[test]
fn broken_agents_end_as_agent_error_with_the_reason() {
    let prepared = default_scenario();
    for (script, limit_ms, reason, stderr) in [
        ("tests/external_agents/crash.py", 10_000, "closed its stdout", "the agent fell over"),
        ("tests/external_agents/hang.py", 700, "no answer within 700 ms", ""),
        ("tests/external_agents/garbage.py", 10_000, "not JSON", ""),
        ("tests/external_agents/oversized.py", 10_000, "longer than", ""),
        ("tests/external_agents/wrong_version.py", 10_000, "agentsim/1", ""),
        ("tests/external_agents/no_such_file.py", 10_000, "closed its stdout", "No such file"),
        ("/no/such/program", 10_000, "cannot start", ""),
    ] {
        let stack = external(&format!("python3 {script}"), limit_ms);
        let stack = if script.starts_with('/') { external(script, limit_ms) } else { stack };
        let t = Runner::new(&prepared, &stack, true, 1.0).run(0);
        assert_eq!(t.outcome, Outcome::AgentError, "{script}: {}", t.end_reason);
        assert!(t.end_reason.contains(reason), "{script}: {}", t.end_reason);
        let kept = t.events.iter().find_map(|e| match &e.kind {
            EventKind::Note(n) if n.what == "stderr" => n.detail.as_str().map(str::to_string),
            _ => None,
        });
        assert!(kept.unwrap_or_default().contains(stderr), "{script}: stderr kept");
    }
}

#[test]
fn a_sweep_of_a_crashing_agent_goes_on_and_records_every_seed() {
    let dir = tempfile::tempdir().unwrap();
    let crash = format!("cmd:python3 {}/tests/external_agents/crash.py", env!("CARGO_MANIFEST_DIR"));
    let output = agentsim(dir.path(), &["sweep", "--agent", &crash, "--seeds", "0..4", "--out", "o"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let csv = std::fs::read_to_string(dir.path().join("o/trajectories.csv")).unwrap();
    assert_eq!(csv.lines().skip(1).filter(|l| l.contains(",agent_error,")).count(), 4, "{csv}");
}

#[test]
fn the_example_sweeps_byte_identically_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let example = format!("cmd:python3 {}/examples/agents/support_desk_agent.py", env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for threads in ["1", "4"] {
        let out = format!("out-{threads}");
        let args = ["sweep", "--agent", &example, "--seeds", "0..8", "--out", &out, "--turn-limit-ms", "20000"];
        let output = agentsim(dir.path(), &args, &[("RAYON_NUM_THREADS", threads)]);
        assert!(output.status.success(), "{}", text(&output));
        files.push(std::fs::read(dir.path().join(&out).join("trajectories.csv")).unwrap());
    }
    assert!(files[0] == files[1], "trajectories.csv differs between 1 and 4 threads");
}

#[test]
fn an_empty_command_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(dir.path(), &["run", "--agent", "cmd:  "], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

#[test]
fn decisions_are_values_a_replay_can_read() {
    let prepared = default_scenario();
    let t = Runner::new(&prepared, &external(EXAMPLE, 20_000), true, 1.0).run(1);
    let first = t.events.iter().find_map(|e| match &e.kind {
        EventKind::Note(n) if n.what == "decision" => Some(n.detail.clone()),
        _ => None,
    });
    let first = first.expect("a decision");
    assert_eq!(first.get("action"), Some(&Value::str("call")));
    assert!(first.get("tool").is_some() && first.get("protocol").is_none(), "{}", first.render());
}

#[test]
fn every_action_in_the_protocol_doc_parses() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md")).unwrap();
    let catalog = default_scenario().catalog;
    let actions: Vec<&str> = doc.lines().filter_map(|l| l.strip_prefix("< ")).collect();
    assert!(actions.len() >= 5, "the example exchange is in the doc");
    for line in actions {
        agentsim_agents::external::protocol::parse_action(line.as_bytes(), &catalog)
            .unwrap_or_else(|e| panic!("{line}: {e}"));
    }
}

#[test]
fn layers_wrap_an_external_agent_and_only_an_external_agent() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let example = format!("cmd:python3 {root}/examples/agents/support_desk_agent.py");
    let hardened = format!("{root}/seeds/stacks/hardened.ron");
    let output = agentsim(dir.path(), &["run", "--agent", &example, "--layers", &hardened, "--seed", "1"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("approval") && stdout.contains("requested"), "{stdout}");
    assert!(stdout.contains("external") && stdout.contains("outcome: success"), "{stdout}");
    let refused = agentsim(dir.path(), &["run", "--agent", "naive", "--layers", &hardened], &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
}

#[test]
fn an_external_agents_incident_replays_from_its_decisions_without_the_process() {
    let prepared = default_scenario();
    for (command, seed) in [(EXAMPLE, 4), ("python3 tests/external_agents/crash.py", 1)] {
        let stack = external(command, 20_000);
        let t = Runner::new(&prepared, &stack, true, 1.0).run(seed);
        let incident = agentsim::incident::Incident::record(&prepared, None, seed, 1.0, "cmd:x", &stack, &t);
        let text = incident.to_ron();
        assert!(!text.contains("External("), "an incident never names a command to run");
        let parsed = agentsim::incident::Incident::parse(&text, "memory").unwrap();
        assert!(matches!(parsed.stack.planner, PlannerSpec::Replayed(_)));
        let replayed = parsed.replay(&parsed.prepared(), None);
        assert_eq!(
            parsed.check(&parsed.prepared(), &replayed),
            agentsim::incident::Replay::Match,
            "{command}: outcome {} vs {}",
            replayed.outcome,
            t.outcome
        );
    }
}

/// Children of this test process that are zombies or still run `script`.
fn leftovers(script: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (state, ppid) = (fields.first().copied().unwrap_or(""), fields.get(1).copied().unwrap_or(""));
        let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if (ppid == me && state == "Z") || cmdline.contains(script) {
            found.push(format!("{} {state} ppid {ppid}: {cmdline}", path.display()));
        }
    }
    found
}

#[test]
fn an_agent_that_ignores_sigterm_ends_its_trajectory_and_leaves_no_process() {
    let prepared = default_scenario();
    let script = "tests/external_agents/ignores_sigterm.py";
    let stack = external(&format!("python3 {script}"), 700);
    let t = Runner::new(&prepared, &stack, false, 1.0).run(3);
    assert_eq!(t.outcome, Outcome::AgentError, "{}", t.end_reason);
    assert!(t.end_reason.contains("no answer within 700 ms"), "{}", t.end_reason);
    // Other tests of this binary spawn agents too, and one may be between exiting and
    // being reaped: a leftover that is really left stays, so look a few times.
    let mut left = leftovers("ignores_sigterm.py");
    for _ in 0..40 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = leftovers("ignores_sigterm.py");
    }
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_agent_reported_think_time_replaces_the_draw_and_a_bad_one_is_refused() {
    let catalog = default_scenario().catalog;
    let ok = br#"{"protocol":"agentsim/1","action":"idle","think_ms":4500}"#;
    let (_, decision) = agentsim_agents::external::protocol::parse_action(ok, &catalog).unwrap();
    assert_eq!(agentsim_agents::external::protocol::reported_think_ms(&decision), Some(4500));
    for bad in [r#""4500""#, "-1", "1.5"] {
        let line = format!(r#"{{"protocol":"agentsim/1","action":"idle","think_ms":{bad}}}"#);
        let err = agentsim_agents::external::protocol::parse_action(line.as_bytes(), &catalog).unwrap_err();
        assert!(err.contains("think_ms"), "{err}");
    }
}
