//! Scripted worlds: the helpdesk example (`examples/worlds/helpdesk/`) runs under
//! every preset, the oracle completes every task without faults, output is the
//! same on 1 and 4 threads, tasks are selected with `--tasks`, a limit hit in a
//! script is a 500 and a note, and every file in `tests/bad_worlds/` is refused
//! with its position (the first line says `// expect: [FILE:]LINE:COLUMN: TEXT`).
//! support_desk written as files (`examples/worlds/support_desk/`) completes as
//! often as the Rust world under oracle, naive and resilient (overlapping
//! Wilson 95% intervals), and is the same on 1 and 4 threads.

use std::path::{Path, PathBuf};

use agentsim_engine::{EventKind, Reply, Value};
use agentsim_worlds::{Prepared, Scenario};

use agentsim::Runner;
use agentsim::rate::Rate;

use crate::common::{agentsim, preset, text};
use crate::world_kit::{assert_same_bytes_on_1_and_4_threads, call, run_scripted, sweep_seen};

fn helpdesk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/worlds/helpdesk/helpdesk.ron")
}

pub fn helpdesk() -> Prepared {
    let path = helpdesk_path();
    let text = std::fs::read_to_string(&path).unwrap();
    Prepared::new(Scenario::parse_in(&text, "helpdesk.ron", path.parent()).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn the_oracle_completes_every_task_without_faults() {
    let seen = sweep_seen(&helpdesk(), "oracle", 0..300, 0.0);
    assert_eq!(seen.successes, 300, "{seen:?}");
    for persona in ["clear", "vague", "changes_mind"] {
        assert!(seen.notes.contains(&format!("persona:{persona}")), "{persona} never drawn: {seen:?}");
    }
}

#[test]
fn naive_does_worse_than_the_oracle_under_the_default_faults() {
    let oracle = sweep_seen(&helpdesk(), "oracle", 0..400, 1.0);
    let naive = sweep_seen(&helpdesk(), "naive", 0..400, 1.0);
    assert!(oracle.successes >= 396, "{oracle:?}");
    assert!(naive.successes + 20 < oracle.successes, "naive {} vs oracle {}", naive.successes, oracle.successes);
    assert!(naive.minefields.contains("duplicate_update"), "{naive:?}");
    assert!(oracle.faults.contains("commit_then_timeout") && oracle.faults.contains("error_503"), "{oracle:?}");
}

#[test]
fn same_bytes_on_1_and_4_threads() {
    let path = helpdesk_path();
    for agent in ["naive", "resilient"] {
        assert_same_bytes_on_1_and_4_threads(path.to_str().unwrap(), agent, "0..300");
    }
}

#[test]
fn tasks_take_turns_and_can_be_selected() {
    let dir = tempfile::tempdir().unwrap();
    let path = helpdesk_path();
    let path = path.to_str().unwrap();
    let out = agentsim(dir.path(), &["sweep", path, "--agent", "oracle", "--seeds", "0..4", "--out", "all"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let csv = std::fs::read_to_string(dir.path().join("all/trajectories.csv")).unwrap();
    let column = csv.lines().next().unwrap().split(',').position(|h| h == "task").expect("a task column");
    let tasks: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(column).unwrap()).collect();
    assert_eq!(tasks, ["close_resolved", "raise_priority", "close_resolved", "raise_priority"]);

    let args = ["sweep", path, "--agent", "oracle", "--seeds", "0..3", "--tasks", "raise_priority", "--out", "one"];
    let out = agentsim(dir.path(), &args, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let csv = std::fs::read_to_string(dir.path().join("one/trajectories.csv")).unwrap();
    assert!(csv.lines().skip(1).all(|l| l.split(',').nth(column) == Some("raise_priority")), "{csv}");

    let out = agentsim(dir.path(), &["run", path, "--tasks", "nope"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("unknown task `nope` (tasks: close_resolved, raise_priority)"), "{}", text(&out));
    let out = agentsim(dir.path(), &["run", "--tasks", "x"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("has no named tasks"), "{}", text(&out));
}

#[test]
fn a_runaway_script_is_a_500_and_a_note_never_a_hang() {
    let scenario = r#"Scenario(name: "loop", world: Scripted(
        tables: [(name: "t", key: "id", rows: [{"id": "a"}])],
        script: Inline(origin: "inline", text: "fn spin(args) { loop { } } fn deep(args) { deep(args) } fn big(args) { let s = \"x\"; loop { s += s; } } fn ok(args) { #{n: 1} }"),
        tools: [(name: "spin", kind: Read), (name: "deep", kind: Read), (name: "big", kind: Read), (name: "ok", kind: Write)],
        tasks: [(id: "t", facts: {}, request: "hi", gold: [(tool: "ok")])],
    ))"#;
    let prepared = Prepared::new(Scenario::parse(scenario, "loop").unwrap_or_else(|e| panic!("{e}")));
    let tools = ["spin", "deep", "big"];
    let mut asked = 0;
    let p = Prepared::new(Scenario::parse(scenario, "loop").unwrap());
    let t = run_scripted(&prepared, 0, 0.0, move |_, _| {
        asked += 1;
        match tools.get(asked - 1) {
            Some(tool) => call(&p, tool, Value::map::<&str>([])),
            None => agentsim_engine::Action::Finish(agentsim_engine::Finish::Done),
        }
    });
    let errors: Vec<(u16, String)> = t
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Result { reply: Reply::Error { status, message, .. }, .. } => Some((*status, message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors.iter().all(|(status, _)| *status == 500), "{errors:?}");
    assert!(errors[0].1.contains("operations"), "{errors:?}");
    assert!(errors[1].1.contains("Stack overflow") || errors[1].1.contains("stack"), "{errors:?}");
    assert!(errors[2].1.contains("too large") || errors[2].1.contains("Length of string"), "{errors:?}");
    let limits = t.events.iter().filter(|e| matches!(&e.kind, EventKind::World { what: "script_limit", .. })).count();
    assert_eq!(limits, 3, "each limit hit is a note");
}

#[test]
fn every_bad_world_is_refused_with_its_position() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_worlds");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 10, "the corpus is in {}", dir.display());
    let work = tempfile::tempdir().unwrap();
    for case in cases {
        let source = std::fs::read_to_string(&case).unwrap();
        let expect = source.lines().next().and_then(|l| l.strip_prefix("// expect: ")).unwrap();
        let (position, needle) = expect.split_once(": ").unwrap();
        let path = case.to_string_lossy().into_owned();
        let output = agentsim(work.path(), &["run", &path], &[]);
        assert_eq!(output.status.code(), Some(2), "{}: {}", case.display(), text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let located = if position.starts_with(|c: char| c.is_ascii_digit()) {
            format!("{path}:{position}:")
        } else {
            format!("{}:", dir.join(position).display())
        };
        assert!(stderr.contains(&located), "{}: expected `{located}` in {stderr}", case.display());
        assert!(stderr.contains(needle), "{}: expected `{needle}` in {stderr}", case.display());
    }
}

#[test]
fn a_table_over_the_size_bound_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_worlds/ok.rhai"), dir.path().join("ok.rhai"))
        .unwrap();
    let big = r#"[{"item_id":"x"}]"#.to_string() + " ".repeat(17 << 20).as_str();
    std::fs::write(dir.path().join("items.json"), big).unwrap();
    let scenario = r#"Scenario(name: "big", world: Scripted(
        tables: [(name: "items", key: "item_id", file: "items.json")],
        script: File("ok.rhai"),
        tools: [(name: "get_item", kind: Read)],
        tasks: [(id: "t", facts: {}, request: "hi", gold: [(tool: "get_item", args: {"item_id": "x"})])],
    ))"#;
    std::fs::write(dir.path().join("big.ron"), scenario).unwrap();
    let output = agentsim(dir.path(), &["run", "big.ron"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("big.ron:2:56: field `world.tables[0].file`"), "{}", text(&output));
    assert!(text(&output).contains("larger than 16 MiB"), "{}", text(&output));
}

#[test]
fn incidents_of_a_scripted_world_replay_without_its_files_and_shrink() {
    let dir = tempfile::tempdir().unwrap();
    let path = helpdesk_path();
    let path = path.to_str().unwrap();
    // Seed 30 under naive updates the ticket twice after a lost answer.
    let out = agentsim(dir.path(), &["run", path, "--agent", "naive", "--seed", "30", "--record", "seed30.ron"], &[]);
    assert!(text(&out).contains("outcome: violation"), "{}", text(&out));
    let out = agentsim(dir.path(), &["shrink", path, "--agent", "naive", "--seed", "30", "-o", "shrunk.ron"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    // The incidents embed the tables and the script: they replay from another folder.
    let elsewhere = tempfile::tempdir().unwrap();
    for file in ["seed30.ron", "shrunk.ron"] {
        std::fs::copy(dir.path().join(file), elsewhere.path().join(file)).unwrap();
        let out = agentsim(elsewhere.path(), &["replay", file], &[]);
        assert!(out.status.success(), "{file}: {}", text(&out));
    }
    let shrunk = std::fs::read_to_string(dir.path().join("shrunk.ron")).unwrap();
    assert!(shrunk.contains("Inline(") && !shrunk.contains("File(\""), "the script is embedded");
}

#[test]
fn the_digest_does_not_depend_on_where_the_scenario_lives() {
    let source = helpdesk_path();
    let copy = tempfile::tempdir().unwrap();
    for file in ["helpdesk.ron", "helpdesk.rhai", "users.csv", "tickets.json"] {
        std::fs::copy(source.parent().unwrap().join(file), copy.path().join(file)).unwrap();
    }
    let digest = |dir: &Path, scenario: &str| {
        let out = agentsim(dir, &["sweep", scenario, "--agent", "naive", "--seeds", "0..50", "--out", "o"], &[]);
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).lines().find(|l| l.starts_with("digest ")).unwrap().to_string()
    };
    let original = digest(copy.path(), source.to_str().unwrap());
    assert_eq!(digest(copy.path(), "helpdesk.ron"), original);
    assert_eq!(digest(copy.path(), "./helpdesk.ron"), original);
}

#[test]
fn a_tools_annotations_reach_external_and_mcp_agents() {
    let scenario = r#"Scenario(name: "a", world: Scripted(
        script: Inline(origin: "inline", text: "fn ok(args) { #{} }"),
        tools: [(name: "ok", kind: Write, annotations: {"title": "Do it", "idempotentHint": true})],
        tasks: [(id: "t", facts: {}, request: "hi", gold: [(tool: "ok")])],
    ))"#;
    let prepared = Prepared::new(Scenario::parse(scenario, "a").unwrap_or_else(|e| panic!("{e}")));
    let listed = agentsim_agents::external::protocol::tool_list(&prepared.catalog);
    assert_eq!(listed[0]["annotations"]["title"], "Do it");
    let mcp = agentsim::mcp::tools(&prepared.catalog, 0);
    assert_eq!(mcp[0]["annotations"]["title"], "Do it");
    assert_eq!(mcp[0]["annotations"]["idempotentHint"], true, "the tool's own hint wins");
    assert_eq!(mcp[0]["annotations"]["destructiveHint"], true);
    let bad = scenario.replace(r#"{"title": "Do it", "idempotentHint": true}"#, "[1]");
    assert!(Scenario::parse(&bad, "a").unwrap_err().to_string().contains("annotations`: expected a map"));
}

/// The scripted support_desk, relative to the repository's root.
const SUPPORT_DESK: &str = "examples/worlds/support_desk/support_desk.ron";

fn support_desk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(SUPPORT_DESK)
}

/// Loaded as `agentsim sweep examples/worlds/support_desk/support_desk.ron`
/// loads it (wherever it is run from: the key does not depend on the path),
/// so a failure here reproduces with that command.
fn support_desk_scripted() -> Prepared {
    let text = std::fs::read_to_string(support_desk_path()).unwrap();
    let dir = Path::new(SUPPORT_DESK).parent();
    let scenario = Scenario::parse_in(&text, SUPPORT_DESK, dir).unwrap_or_else(|e| panic!("{e}"));
    Prepared::new(scenario)
}

/// Completion of `preset_name` on `seeds`, with its Wilson 95% interval.
fn completion(prepared: &Prepared, preset_name: &str, seeds: std::ops::Range<u64>) -> Rate {
    let stack = preset(preset_name);
    let runner = Runner::new(prepared, &stack, false, 1.0);
    let (mut successes, mut n) = (0, 0);
    runner
        .sweep(seeds, |t| {
            n += 1;
            successes += u64::from(t.outcome.name() == "success");
            Ok::<(), ()>(())
        })
        .unwrap();
    Rate::wilson(successes, n)
}

/// The scripted support_desk and the Rust one agree, preset by preset: their
/// completion intervals overlap. (The streams differ, the model must not.)
fn assert_support_desk_worlds_agree(seeds: std::ops::Range<u64>) {
    let rust = crate::world_kit::builtin("support_desk");
    let scripted = support_desk_scripted();
    for agent in ["oracle", "naive", "resilient"] {
        let r = completion(&rust, agent, seeds.clone());
        let s = completion(&scripted, agent, seeds.clone());
        let show = |x: &Rate| format!("{:.1}% [{:.1}%, {:.1}%]", 100.0 * x.rate, 100.0 * x.lo, 100.0 * x.hi);
        eprintln!("{agent}: rust {}, scripted {}", show(&r), show(&s));
        assert!(
            r.lo <= s.hi && s.lo <= r.hi,
            "{agent}: rust {} vs scripted {}; reproduce with `agentsim sweep support_desk --agent {agent} --seeds {seeds:?}` \
             and `agentsim sweep {SUPPORT_DESK} --agent {agent} --seeds {seeds:?}` from the repository's root",
            show(&r),
            show(&s)
        );
    }
}

#[test]
fn support_desk_as_files_completes_as_often_as_the_rust_world() {
    assert_support_desk_worlds_agree(0..2_000);
}

#[test]
#[ignore = "10,000 seeds per preset and world, as issue 13 asks: minutes in a debug build; run with --release"]
fn support_desk_as_files_agrees_on_10_000_seeds() {
    assert_support_desk_worlds_agree(0..10_000);
}

#[test]
fn support_desk_as_files_same_bytes_on_1_and_4_threads() {
    let path = support_desk_path();
    for agent in ["naive", "resilient"] {
        assert_same_bytes_on_1_and_4_threads(path.to_str().unwrap(), agent, "0..240");
    }
}

#[test]
fn support_desk_as_files_crosses_each_minefield() {
    let prepared = support_desk_scripted();
    let naive = sweep_seen(&prepared, "naive", 0..600, 1.0);
    for mine in ["duplicate_refund", "refund_over_total", "refund_wrong_order", "message_to_wrong_customer"] {
        assert!(naive.minefields.contains(mine), "{mine} never crossed: {naive:?}");
    }
    for persona in ["clear", "vague", "changes_mind"] {
        assert!(naive.notes.contains(&format!("persona:{persona}")), "{persona} never drawn: {naive:?}");
    }
    assert!(naive.notes.contains("process"), "the orders never moved: {naive:?}");
    // A refund that is not positive only a scripted agent makes.
    let p = support_desk_scripted();
    let mut step = 0;
    let t = run_scripted(&prepared, 0, 0.0, move |_, _| {
        step += 1;
        match step {
            1 => call(
                &p,
                "issue_refund",
                Value::map([("order_id", Value::str("A1001")), ("amount_cents", Value::Int(-5))]),
            ),
            _ => agentsim_engine::Action::Finish(agentsim_engine::Finish::Done),
        }
    });
    assert_eq!(t.minefields, vec!["refund_not_positive"], "{:?}", t.outcome);
}

#[test]
fn weighted_tasks_take_as_many_turns_as_their_weight() {
    let prepared = support_desk_scripted();
    let tasks: Vec<String> = (0..48).map(|s| prepared.task_of(s).unwrap()).collect();
    // The Rust world's draw: a customer in three, one of their orders, the whole
    // order one time in four. 48 seeds in turn give each request its share.
    let count = |id: &str| tasks.iter().filter(|t| *t == id).count();
    assert_eq!(&tasks[..3], ["A1001_headphones"; 3]);
    assert_eq!(
        (count("A1001_whole"), count("A1002_keyboard"), count("A1003_whole"), count("A1003_blender")),
        (2, 6, 4, 6)
    );
    assert_eq!(prepared.task_of(48), prepared.task_of(0));
}

/// The example worlds' sweeps, pinned: the digests of 400 seeds of each under
/// oracle, naive and resilient, as the interpreter-only evaluation of every
/// predicate wrote them. Work on the scripted world's speed (predicates decided
/// in Rust, values converted without copies) must leave every byte as it was.
#[test]
fn the_example_worlds_sweeps_are_pinned() {
    let pinned = [
        ("examples/worlds/helpdesk/helpdesk.ron", "oracle", "90f6d94f14bd13daab2ecef84049c903"),
        ("examples/worlds/helpdesk/helpdesk.ron", "naive", "d84ee2a08389962c25d3435b4bb4b692"),
        ("examples/worlds/helpdesk/helpdesk.ron", "resilient", "84c2644f972a39be10098ae99e4216f7"),
        (SUPPORT_DESK, "oracle", "97a448c03f02d450b32748955cec22d8"),
        (SUPPORT_DESK, "naive", "8ee29faa784f3eea64abffc8a1846b83"),
        (SUPPORT_DESK, "resilient", "300ece9a632371c7e63549372633d9df"),
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d");
    for (scenario, agent, digest) in pinned {
        let args =
            ["sweep", scenario, "--agent", agent, "--seeds", "0..400", "--out", out.to_str().unwrap(), "--quiet"];
        let output = agentsim(root, &args, &[]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout.lines().find(|l| l.starts_with("digest "));
        assert_eq!(line, Some(format!("digest {digest}").as_str()), "{scenario} x {agent}");
    }
}

fn ledger(file: &str) -> Prepared {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/record_body").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    Prepared::new(Scenario::parse_in(&text, file, path.parent()).unwrap_or_else(|e| panic!("{e}")))
}

/// The replies a fixed list of calls gets, faults off, in order.
fn replies_to(prepared: &Prepared, calls: &[(&str, Value)]) -> Vec<Reply> {
    let mut actions: Vec<_> = calls.iter().map(|(tool, args)| call(prepared, tool, args.clone())).collect();
    actions.reverse();
    let trajectory = run_scripted(prepared, 3, 0.0, move |_, _| {
        actions.pop().unwrap_or(agentsim_engine::Action::Finish(agentsim_engine::Finish::Done))
    });
    let replies: Vec<Reply> = trajectory
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Result { reply, .. } => Some(reply.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), calls.len(), "every call answered");
    replies
}

/// A tool served by a record body (`record: (table, key)`) answers what the
/// script function that reads or writes that record answers, call by call:
/// reads, a missing record, writes over old records and new ones, integer keys.
#[test]
fn record_bodies_answer_as_the_script_does() {
    let id = |v: Value| Value::map([("id", v)]);
    let entry = |amount: i64, v: Value| Value::map([("amount", Value::Int(amount)), ("id", v)]);
    let calls = [
        ("read_entry", id(Value::str("e1"))),
        ("read_entry", id(Value::str("e9"))),
        ("write_entry", entry(7, Value::str("e2"))),
        ("read_entry", id(Value::str("e2"))),
        ("write_entry", entry(9, Value::str("e1"))),
        ("read_entry", id(Value::str("e1"))),
        ("write_entry", id(Value::Int(3))),
        ("read_entry", id(Value::str("3"))),
    ];
    let script = replies_to(&ledger("script.ron"), &calls);
    let record = replies_to(&ledger("record.ron"), &calls);
    assert_eq!(record, script);
    assert!(
        matches!(&record[1], Reply::Error { status: 404, message, .. } if message == "no record `e9` in `entries`")
    );
    assert_eq!(record[5], Reply::Ok(entry(9, Value::str("e1")).into()), "the write replaced the record");
    // An integer key reads the record its digits name. (The script cannot ask
    // this: Rhai's own `"entries".get(3)`, a string's fourth character, wins
    // over the world's `get` for an integer key.)
    let by_int = [("write_entry", id(Value::Int(3))), ("read_entry", id(Value::Int(3)))];
    assert_eq!(replies_to(&ledger("record.ron"), &by_int)[1], Reply::Ok(id(Value::Int(3)).into()));
    // A key that is neither a string nor an integer is the caller's error.
    let bad = replies_to(&ledger("record.ron"), &[("write_entry", id(Value::Bool(true)))]);
    assert!(matches!(&bad[0], Reply::Error { status: 400, message, .. } if message.contains("record key")), "{bad:?}");
}

#[test]
fn record_bodies_give_the_same_bytes_on_1_and_4_threads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/record_body/record.ron");
    for agent in ["oracle", "naive", "resilient"] {
        assert_same_bytes_on_1_and_4_threads(path.to_str().unwrap(), agent, "0..200");
    }
}
