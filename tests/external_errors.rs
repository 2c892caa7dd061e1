//! External failures broken down by kind: each way an agent fails is recorded as
//! the note `("external", "error.<kind>", reason)`, counted by kind in the CSV's
//! `decisions` column and `summary.json`, the same on 1 and 4 threads; recordings
//! made before kinds (`("external", "error", ...)`) still replay bit for bit.

use agentsim::Runner;
use agentsim::incident::{Incident, Replay};
use agentsim_agents::external::ErrorKind;
use agentsim_agents::external::replayed::{RecordedStep, recorded_steps};
use agentsim_agents::{ExternalConfig, PlannerSpec, StackSpec};
use agentsim_engine::{EventKind, Outcome, Trajectory};

use crate::common::{agentsim, default_scenario, text};

fn external(command: &str, turn_limit_ms: u64) -> StackSpec {
    let root = env!("CARGO_MANIFEST_DIR");
    let command = command.replace("tests/", &format!("{root}/tests/"));
    let mut config = ExternalConfig::new(&command);
    config.turn_limit_ms = turn_limit_ms;
    StackSpec { planner: PlannerSpec::External(config), layers: vec![] }
}

/// The `what` of every `external` note but decisions and stderr.
fn error_notes(t: &Trajectory) -> Vec<&'static str> {
    t.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Note(n) if n.source == "external" && !matches!(n.what, "decision" | "stderr") => Some(n.what),
            _ => None,
        })
        .collect()
}

#[test]
fn every_way_an_agent_fails_is_recorded_with_its_kind() {
    let prepared = default_scenario();
    for (command, limit_ms, kind) in [
        ("python3 tests/external_agents/crash.py", 10_000, ErrorKind::Closed),
        ("python3 tests/external_agents/no_such_file.py", 10_000, ErrorKind::Closed),
        ("false", 10_000, ErrorKind::Closed),
        ("python3 tests/external_agents/hang.py", 700, ErrorKind::Timeout),
        ("python3 tests/external_agents/garbage.py", 10_000, ErrorKind::NotJson),
        ("python3 tests/external_agents/oversized.py", 10_000, ErrorKind::LineTooLong),
        ("python3 tests/external_agents/wrong_version.py", 10_000, ErrorKind::InvalidAction),
        ("/no/such/program", 10_000, ErrorKind::Start),
    ] {
        let t = Runner::new(&prepared, &external(command, limit_ms), true, 1.0).run(0);
        assert_eq!(t.outcome, Outcome::AgentError, "{command}: {}", t.end_reason);
        assert_eq!(error_notes(&t), [kind.note_what()], "{command}: {}", t.end_reason);
        // The reason stays the note's detail and the end reason.
        let detail = t.events.iter().find_map(|e| match &e.kind {
            EventKind::Note(n) if n.what == kind.note_what() => n.detail.as_str().map(str::to_string),
            _ => None,
        });
        assert_eq!(detail.map(|d| format!("agent failed: {d}")), Some(t.end_reason.clone()), "{command}");
        // And the replay of the recording names the same kind, with the same digest.
        let replay = StackSpec { planner: PlannerSpec::Replayed(recorded_steps(&t)), layers: vec![] };
        let again = Runner::new(&prepared, &replay, true, 1.0).run(0);
        assert_eq!((error_notes(&again), again.digest), (error_notes(&t), t.digest), "{command}");
    }
}

#[test]
fn a_sweep_counts_failures_by_kind_alike_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    // `false` exits before reading: the write (EPIPE) and the read (end of file)
    // race to see it, and the kind must not depend on which wins.
    for (agent, limit_ms, counted) in [
        ("cmd:false".to_string(), "10000", "external.error.closed=1"),
        (format!("cmd:python3 {root}/tests/external_agents/hang.py"), "300", "external.error.timeout=1"),
    ] {
        let mut outputs = Vec::new();
        for threads in ["1", "4"] {
            let out = format!("out-{}-{threads}", outputs.len());
            let args = ["sweep", "--agent", &agent, "--seeds", "0..6", "--out", &out, "--turn-limit-ms", limit_ms];
            let output = agentsim(dir.path(), &args, &[("RAYON_NUM_THREADS", threads)]);
            assert!(output.status.success(), "{}", text(&output));
            let csv = std::fs::read_to_string(dir.path().join(&out).join("trajectories.csv")).unwrap();
            let summary = std::fs::read_to_string(dir.path().join(&out).join("summary.json")).unwrap();
            outputs.push((csv, summary));
        }
        let (csv, summary) = &outputs[0];
        assert_eq!(csv.lines().skip(1).filter(|l| l.contains(counted)).count(), 6, "{agent}: {csv}");
        assert!(!csv.contains("external.error="), "no kindless failure: {csv}");
        let summary: serde_json::Value = serde_json::from_str(summary).unwrap();
        let key = counted.split('=').next().unwrap();
        assert!(summary.to_string().contains(&format!("\"{key}\"")), "{agent}: {summary}");
        assert!(outputs[0] == outputs[1], "{agent}: the outputs differ between 1 and 4 threads");
    }
}

#[test]
fn a_recording_made_before_kinds_replays_bit_for_bit() {
    // Recorded by the version before failures had kinds: its stack holds a
    // `Failed` step without `kind`, its timeline the note `external error ...`.
    let path = format!("{}/tests/legacy_recordings/external_not_json.ron", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap();
    let incident = Incident::parse(&source, &path).unwrap();
    let PlannerSpec::Replayed(steps) = &incident.stack.planner else { panic!("a replayed planner") };
    assert!(matches!(steps.as_slice(), [RecordedStep::Failed { kind: None, .. }]), "{steps:?}");
    let replayed = incident.replay(&incident.prepared(), None);
    assert_eq!(incident.check(&incident.prepared(), &replayed), Replay::Match);
    assert_eq!(error_notes(&replayed), ["error"], "the kindless note, as recorded");
    // Recorded again, it is still kindless, and the incident the same bytes.
    let steps = recorded_steps(&replayed);
    assert!(matches!(steps.as_slice(), [RecordedStep::Failed { kind: None, .. }]), "{steps:?}");
    let again = Incident::record(&incident.prepared(), None, 1, 1.0, &incident.agent, &incident.stack, &replayed);
    assert_eq!(again.to_ron().trim_end(), source.trim_end());
    // The CLI replays it too.
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(dir.path(), &["replay", &path], &[]);
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
fn a_recording_with_a_kind_keeps_it_through_an_incident_file() {
    let prepared = default_scenario();
    let stack = external("python3 tests/external_agents/garbage.py", 10_000);
    let t = Runner::new(&prepared, &stack, true, 1.0).run(1);
    assert_eq!(error_notes(&t), ["error.not_json"]);
    let incident = Incident::record(&prepared, None, 1, 1.0, "cmd:x", &stack, &t);
    let parsed = Incident::parse(&incident.to_ron(), "memory").unwrap();
    let PlannerSpec::Replayed(steps) = &parsed.stack.planner else { panic!("a replayed planner") };
    assert!(matches!(steps.as_slice(), [RecordedStep::Failed { kind: Some(ErrorKind::NotJson), .. }]), "{steps:?}");
    let replayed = parsed.replay(&parsed.prepared(), None);
    assert_eq!(parsed.check(&parsed.prepared(), &replayed), Replay::Match);
    assert_eq!((error_notes(&replayed), replayed.digest), (error_notes(&t), t.digest));
}
