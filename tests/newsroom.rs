//! newsroom: the oracle succeeds without faults, every advertised fault shows up,
//! output is the same on any thread count, and each minefield fires when crossed.

use agentsim::Runner;
use agentsim_engine::{Action, Finish, Input, Value};
use agentsim_worlds::Prepared;

use crate::common::preset;
use crate::world_kit::{assert_same_bytes_on_1_and_4_threads, builtin, call, parse, run_scripted, sweep_seen};

/// Three stories, each corrected at 1 s; the editor wants the latest two.
fn small(persona: &str) -> Prepared {
    let personas: Vec<String> =
        ["clear", "vague", "impatient"].iter().map(|p| format!("{p}: {}", u8::from(*p == persona))).collect();
    parse(&format!(
        r#"Scenario(name: "nr-test", world: Newsroom(
            editors: [(id: "E01", name: "Nellie"), (id: "E02", name: "Hunter")],
            topics: ["storm warning"],
            initial_stories: 3,
            arrival_ms: Fixed(ms: 10_000_000),
            correction_probability: 1.0,
            correction_delay_ms: Fixed(ms: 1_000),
            summary_size_min: 2,
            summary_size_max: 2,
            patience_ms: 1_000,
            personas: ({}),
        ))"#,
        personas.join(", ")
    ))
}

fn editor(input: &Input) -> String {
    match input {
        Input::User(m) => m.content.get("editor_id").and_then(Value::as_str).unwrap_or_default().to_string(),
        _ => panic!("the editor speaks first, got {input:?}"),
    }
}

fn task(p: &Prepared, key: &str, kind: &str, story: Option<&str>, deps: &[&str]) -> Action {
    let mut args = Value::map([("key", Value::str(key)), ("kind", Value::str(kind))]);
    if let Some(s) = story {
        args.set("story_id", Value::str(s));
    }
    args.set("depends_on", Value::List(deps.iter().map(|d| Value::str(*d)).collect()));
    call(p, "create_task", args)
}

/// The summary of the two newest stories (S103, S102) at `version`.
fn summary(p: &Prepared, e: &str, version: i64, stale: bool) -> Action {
    let stories = ["S103", "S102"]
        .iter()
        .map(|id| Value::map([("story_id", Value::str(*id)), ("version", Value::Int(version))]))
        .collect();
    call(
        p,
        "send_summary",
        Value::map([("editor_id", Value::str(e)), ("stories", Value::List(stories)), ("stale", Value::Bool(stale))]),
    )
}

/// The full plan for S103 and S102, in a topological order.
fn plan(p: &Prepared, step: usize) -> Option<Action> {
    Some(match step {
        0 => task(p, "check:S103", "check", Some("S103"), &[]),
        1 => task(p, "summarise:S103", "summarise", Some("S103"), &["check:S103"]),
        2 => task(p, "check:S102", "check", Some("S102"), &[]),
        3 => task(p, "summarise:S102", "summarise", Some("S102"), &["check:S102"]),
        4 => task(p, "publish", "publish", None, &["summarise:S103", "summarise:S102"]),
        _ => return None,
    })
}

const DONE: Action = Action::Finish(Finish::Done);

#[test]
fn the_oracle_succeeds_on_every_fault_free_seed() {
    let seen = sweep_seen(&builtin("newsroom"), "oracle", 0..300, 0.0);
    assert_eq!(seen.successes, 300, "{seen:?}");
}

#[test]
fn every_advertised_fault_and_failure_mode_shows_up() {
    let p = builtin("newsroom");
    let seen = sweep_seen(&p, "naive", 0..400, 1.0);
    for fault in ["error_503", "error_500", "stale", "malformed_wrong_type", "commit_then_timeout", "auth_expired"] {
        assert!(seen.faults.contains(fault), "fault {fault} never injected: {:?}", seen.faults);
    }
    for note in ["story", "correction", "task_created", "summary", "editor_left", "persona:vague", "persona:impatient"]
    {
        assert!(seen.notes.contains(note), "never saw {note}: {:?}", seen.notes);
    }
    assert!(seen.minefields.contains("duplicate_task"), "{:?}", seen.minefields);
    assert!(seen.minefields.contains("unflagged_stale_summary"), "{:?}", seen.minefields);
    assert!(seen.outcomes.contains("looped"), "stuck on the outage: {:?}", seen.outcomes);
}

/// `latest_news` has 30-second outages. The resilient stack's loop detector
/// blocks a planner that keeps failing through one, but an outage waited out is
/// no strike: before that rule it halted one run in five at the next real loop.
#[test]
fn resilient_waits_out_the_outages_instead_of_being_halted() {
    let p = builtin("newsroom");
    let stack = preset("resilient");
    let runner = Runner::new(&p, &stack, false, 1.0);
    let (mut looped, mut successes, mut blocked_outages) = (0u32, 0u32, 0u32);
    runner
        .sweep(0..400, |t| {
            looped += u32::from(t.outcome.name() == "looped");
            successes += u32::from(t.outcome.name() == "success");
            blocked_outages +=
                u32::from(t.decisions.iter().any(|(s, w, _)| *s == "loop_detector" && *w == "loop_detected"));
            Ok::<(), ()>(())
        })
        .unwrap();
    assert!(blocked_outages > 100, "the outages still meet the loop detector: {blocked_outages} of 400");
    assert!(looped <= 8, "{looped} of 400 halted as looped");
    assert!(successes >= 340, "{successes} of 400 succeeded");
}

#[test]
fn sweeps_are_byte_identical_on_1_and_4_threads() {
    assert_same_bytes_on_1_and_4_threads("newsroom", "naive", "0..300");
    // The loop detector's strikes (an outage waited out is none) on many threads.
    assert_same_bytes_on_1_and_4_threads("newsroom", "resilient", "0..300");
}

#[test]
fn a_valid_plan_and_a_current_summary_succeed() {
    let p = small("clear");
    let s = Prepared::new(p.scenario.clone());
    let (mut step, mut e) = (0, String::new());
    let traj = run_scripted(&p, 0, 0.0, move |input, now| {
        step += 1;
        if step == 1 {
            e = editor(&input);
            return Action::Sleep { until_ms: now + 5_000 };
        }
        if step == 2 {
            // Read the feed at its current state (the milestones need it).
            return call(&s, "latest_news", Value::map([("limit", Value::Int(2))]));
        }
        plan(&s, step - 3).unwrap_or_else(|| if step == 8 { summary(&s, &e, 2, false) } else { DONE })
    });
    assert!(traj.minefields.is_empty(), "{:?}", traj.minefields);
    assert_eq!(traj.outcome.name(), "success", "{}", traj.verdict.detail);
    assert_eq!(traj.verdict.milestone, "summary_sent");
}

#[test]
fn an_old_summary_is_a_minefield_unless_flagged() {
    for flagged in [false, true] {
        let p = small("clear");
        let s = Prepared::new(p.scenario.clone());
        let (mut step, mut e) = (0, String::new());
        let traj = run_scripted(&p, 1, 0.0, move |input, now| {
            step += 1;
            if step == 1 {
                e = editor(&input);
                return Action::Sleep { until_ms: now + 30_000 };
            }
            // Version 1 was corrected at 1 s, long before the grace window.
            plan(&s, step - 2).unwrap_or_else(|| if step == 7 { summary(&s, &e, 1, flagged) } else { DONE })
        });
        if flagged {
            assert!(traj.minefields.is_empty(), "{:?}", traj.minefields);
            assert_eq!(traj.outcome.name(), "wrong_result");
            assert!(traj.verdict.detail.contains("flagged"), "{}", traj.verdict.detail);
        } else {
            assert_eq!(traj.minefields, ["unflagged_stale_summary"]);
        }
    }
}

#[test]
fn tasks_out_of_order_twice_or_in_a_cycle_are_caught() {
    let p = small("clear");
    let s = Prepared::new(p.scenario.clone());
    let mut step = 0;
    let traj = run_scripted(&p, 2, 0.0, move |_, _| {
        step += 1;
        match step {
            1 => task(&s, "a", "check", Some("S103"), &["b"]),
            2 => task(&s, "b", "summarise", Some("S103"), &["a"]),
            3 => task(&s, "b", "summarise", Some("S103"), &[]),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["task_before_dependency", "duplicate_task"]);
}

#[test]
fn summaries_to_another_editor_and_after_the_editor_left_fire() {
    let p = small("impatient");
    let s = Prepared::new(p.scenario.clone());
    let (mut step, mut e) = (0, String::new());
    let traj = run_scripted(&p, 3, 0.0, move |input, now| {
        step += 1;
        match step {
            1 => {
                e = editor(&input);
                Action::Sleep { until_ms: now + 20_000 }
            }
            2 => Action::Idle { wake_at_ms: None },
            3 => {
                assert!(matches!(&input, Input::User(m) if m.content.get("left") == Some(&Value::Bool(true))));
                summary(&s, if e == "E01" { "E02" } else { "E01" }, 2, false)
            }
            4 => summary(&s, &e, 2, false),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["message_to_wrong_editor", "work_after_editor_left"]);
    assert!(traj.verdict.detail.contains("the editor left"), "{}", traj.verdict.detail);
}
