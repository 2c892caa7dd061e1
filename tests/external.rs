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
        ("tests/external_agents/crash.py", 10_000, "closed its stdin or stdout", "the agent fell over"),
        ("tests/external_agents/hang.py", 700, "no answer within 700 ms", ""),
        ("tests/external_agents/garbage.py", 10_000, "not JSON", ""),
        ("tests/external_agents/oversized.py", 10_000, "longer than", ""),
        ("tests/external_agents/wrong_version.py", 10_000, "agentsim/1", ""),
        ("tests/external_agents/no_such_file.py", 10_000, "closed its stdin or stdout", "No such file"),
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
        // Only this checkout's agents: another checkout's test suite may run the
        // same scripts at the same time (by relative path, from its own folder).
        let here = env!("CARGO_MANIFEST_DIR");
        let ours = cmdline.contains(here)
            || std::fs::read_link(path.join("cwd")).is_ok_and(|cwd| cwd == std::path::Path::new(here));
        if (ppid == me && state == "Z") || (cmdline.contains(script) && ours) {
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
        assert!(err.to_string().contains("think_ms"), "{err}");
    }
}

#[test]
fn an_agent_that_exits_at_once_ends_its_trajectory_never_the_process() {
    let dir = tempfile::tempdir().unwrap();
    // `false` and `true` exit before reading: writing the observation meets a
    // closed pipe (EPIPE), which must be agent_error, not SIGPIPE for agentsim.
    let output = agentsim(dir.path(), &["sweep", "--agent", "cmd:false", "--seeds", "0..20", "--out", "x"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let csv = std::fs::read_to_string(dir.path().join("x/trajectories.csv")).unwrap();
    assert_eq!(csv.lines().skip(1).filter(|l| l.contains(",agent_error,")).count(), 20, "{csv}");
    let names: Vec<String> = std::fs::read_dir(dir.path().join("x"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    let mut digests = Vec::new();
    for _ in 0..10 {
        let output = agentsim(dir.path(), &["run", "--agent", "cmd:true"], &[]);
        // The agent could not be driven: exit 1, the reason on stderr.
        assert_eq!(output.status.code(), Some(1), "{}", text(&output));
        assert!(String::from_utf8_lossy(&output.stderr).contains("agent_error: "), "{}", text(&output));
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(stdout.contains("outcome: agent_error"), "{stdout}");
        digests.push(stdout.lines().find(|l| l.starts_with("digest:")).unwrap().to_string());
    }
    // Whether the write or the read saw the exit first, the reason is the same.
    digests.dedup();
    assert_eq!(digests.len(), 1, "{digests:?}");
}

#[test]
fn stderr_stays_out_of_the_digest_and_on_one_timeline_line() {
    let prepared = default_scenario();
    let stack = external("python3 tests/external_agents/pid_on_stderr.py", 10_000);
    let runner = Runner::new(&prepared, &stack, true, 1.0);
    let (a, b) = (runner.run(0), runner.run(0));
    assert_eq!(a.outcome, Outcome::AgentError, "{}", a.end_reason);
    let stderr = |t: &agentsim_engine::Trajectory| {
        t.events.iter().find_map(|e| match &e.kind {
            EventKind::Note(n) if n.what == "stderr" => n.detail.as_str().map(str::to_string),
            _ => None,
        })
    };
    let (sa, sb) = (stderr(&a).unwrap(), stderr(&b).unwrap());
    assert!(sa.contains("gives up") && sa != sb, "each run prints its own pid: {sa:?} {sb:?}");
    assert_eq!(a.digest, b.digest, "stderr is kept beside the trajectory, not in its digest");
    // Unrecorded (a sweep) gives the same digest; the stderr counts as no decision.
    let quiet = Runner::new(&prepared, &stack, false, 1.0).run(0);
    assert_eq!(quiet.digest, a.digest);
    assert!(!a.decisions.iter().any(|(_, what, _)| *what == "stderr"), "{:?}", a.decisions);

    let dir = tempfile::tempdir().unwrap();
    let command = format!("cmd:python3 {}/tests/external_agents/pid_on_stderr.py", env!("CARGO_MANIFEST_DIR"));
    let output = agentsim(dir.path(), &["run", "--agent", &command], &[]);
    assert_eq!(output.status.code(), Some(1), "the agent gave up: agent_error; {}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().find(|l| l.contains(" stderr pid ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains(r"\nstarting") && line.contains(r"gives up\n\u{1b}[31mred"), "{line}");
    assert!(!stdout.contains('\u{1b}') && !stdout.lines().any(|l| l.starts_with("starting")), "{stdout}");
}

#[test]
fn the_agents_children_end_with_its_trajectory() {
    let prepared = default_scenario();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let stack = external(&format!("python3 tests/external_agents/grandchild.py {}", pid_file.display()), 1_000);
    let t = Runner::new(&prepared, &stack, false, 1.0).run(0);
    assert_eq!(t.outcome, Outcome::AgentError, "{}", t.end_reason);
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // Gone, or a zombie waiting for init: not running `sleep` any more.
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
    };
    for _ in 0..200 {
        if !running() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: ending the orphan this test made, so it does not outlive the test.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    panic!("the agent's child {pid} outlived its trajectory");
}

#[test]
fn a_command_that_cannot_start_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("not_executable"), "#!/bin/sh\n").unwrap();
    for (agent, reason) in [
        ("cmd:no-such-program-agentsim", "no executable of that name in PATH"),
        ("cmd:/no/such/program", "no such file"),
        ("cmd:./not_executable", "not an executable file"),
    ] {
        for args in [vec!["sweep", "--agent", agent, "--seeds", "0..5", "--out", "o"], vec!["run", "--agent", agent]] {
            let output = agentsim(dir.path(), &args, &[]);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains(agent) && stderr.contains(reason), "{args:?}: {stderr}");
        }
    }
    assert!(!dir.path().join("o").exists(), "nothing is written");
    // Found and executable, but its interpreter is missing: it fails to start on
    // every seed, which is found out by running it.
    let script = dir.path().join("bad_interpreter");
    std::fs::write(&script, "#!/no/such/interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for args in [
        vec!["sweep", "--agent", "cmd:./bad_interpreter", "--seeds", "0..5", "--out", "b"],
        vec!["run", "--agent", "cmd:./bad_interpreter"],
    ] {
        let output = agentsim(dir.path(), &args, &[]);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("could be started") || stderr.contains("could not be started"), "{args:?}: {stderr}");
        assert!(stderr.contains("bad_interpreter"), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("b/trajectories.csv").exists(), "nothing is written");
}

#[test]
fn ctrl_c_during_run_ends_the_agents_process_group_too() {
    let script = "tests/external_agents/sleeps_forever.py";
    // The agent processes (agentsim's own command line names the script too).
    let agents_left = || {
        let found = leftovers("sleeps_forever.py");
        found.into_iter().filter(|p| !p.contains("agentsim")).collect::<Vec<_>>()
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .args(["run", "--turn-limit-ms", "600000", "--agent"])
        .arg(format!("cmd:python3 {}/{script}", env!("CARGO_MANIFEST_DIR")))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Started: the agent's own process runs. (`agents_left` also counts any
    // zombie child of this test binary, which another test running beside
    // this one may leave for a moment: a signal sent then would reach
    // agentsim before it handles Ctrl-C.)
    while !agents_left().iter().any(|p| p.contains("sleeps_forever.py")) {
        assert!(child.try_wait().unwrap().is_none(), "agentsim ended before it was interrupted");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: a signal to a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(i32::try_from(child.id()).unwrap(), libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let mut left = agents_left();
    for _ in 0..200 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = agents_left();
    }
    assert!(left.is_empty(), "{left:?}");
}
