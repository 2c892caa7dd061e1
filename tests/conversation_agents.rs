//! Agents that talk to their user in words: the text channel end to end.

use agentsim::Runner;
use agentsim_engine::{Action, EventKind, Input, Value};

use crate::common::{agentsim, preset, sweep_on_threads, text};
use crate::world_kit::{builtin, run_scripted};

/// What the user said, in order.
fn user_texts(t: &agentsim_engine::Trajectory) -> Vec<String> {
    t.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::User(m) => Some(m.text.clone()),
            _ => None,
        })
        .collect()
}

/// Says each of `lines` in turn, one per user message, then finishes.
fn sayer(lines: &'static [&'static str]) -> impl FnMut(Input, u64) -> Action + Send + 'static {
    let mut next = 0;
    move |input, _| match input {
        Input::User(_) if next < lines.len() => {
            next += 1;
            Action::Say { text: lines[next - 1].to_string() }
        }
        _ => Action::Finish(agentsim_engine::Finish::Done),
    }
}

#[test]
fn the_customer_answers_what_it_was_asked_and_corrects_a_wrong_proposal() {
    let p = builtin("support_desk");
    // Seed 1: Ada (C001) wants the keyboard from order A1002 refunded, $89.00.
    let t = run_scripted(
        &p,
        1,
        0.0,
        sayer(&[
            "What is your favourite colour?",
            "Could you tell me your customer number?",
            "Shall I refund the headphones from order A1002, $89.00?",
            "Shall I refund the monitor from order A1002, $89.00?",
            "asdfgh",
        ]),
    );
    let said = user_texts(&t);
    assert!(said[0].contains("keyboard") && said[0].contains("A1002"), "{said:?}");
    let unsure = ["couldn't say", "not sure", "No idea", "beside the point"];
    assert!(unsure.iter().any(|u| said[1].contains(u)), "a question about nothing: {said:?}");
    assert!(said[2].contains("C001"), "the customer number asked for: {said:?}");
    assert!(said[3].starts_with("No") || said[3].contains("not"), "a wrong item is refused: {said:?}");
    assert!(said[3].contains("keyboard"), "with the correction: {said:?}");
    assert!(!said[4].starts_with("Yes"), "an item it never bought is no yes: {said:?}");
    assert!(t.events.iter().any(|e| matches!(&e.kind, EventKind::World { what: "misunderstood", .. })));
}

#[test]
fn a_right_proposal_is_a_yes_and_a_told_refund_completes_the_task() {
    let p = builtin("support_desk");
    let p2 = p.clone();
    let mut step = 0;
    let t = run_scripted(&p, 1, 0.0, move |_, _| {
        step += 1;
        match step {
            1 => crate::world_kit::call(&p2, "lookup_order", Value::map([("order_id", Value::str("A1002"))])),
            2 => Action::Say { text: "Shall I refund the keyboard from order A1002, $89.00?".into() },
            3 => crate::world_kit::call(
                &p2,
                "issue_refund",
                Value::map([
                    ("order_id", Value::str("A1002")),
                    ("amount_cents", Value::Int(8_900)),
                    ("reason", Value::str("customer request")),
                ]),
            ),
            4 => Action::Say { text: "Done: I've refunded $89.00 on order A1002.".into() },
            _ => Action::Finish(agentsim_engine::Finish::Done),
        }
    });
    assert_eq!(t.outcome.name(), "success", "{} / {:?}", t.verdict.detail, user_texts(&t));
    assert_eq!(t.verdict.milestone, "customer_told");
}

#[test]
fn a_wrong_amount_told_in_a_sentence_is_a_violation_whatever_the_calls_said() {
    let p = builtin("support_desk");
    let t = run_scripted(&p, 1, 0.0, sayer(&["Good news: I've refunded $98.00 on order A1002."]));
    assert_eq!(t.outcome.name(), "violation");
    assert!(t.minefields.contains(&"told_wrong_value"), "{:?}", t.minefields);
}

#[test]
fn the_presets_in_words_complete_as_the_structured_ones() {
    for world in ["support_desk"] {
        let p = builtin(world);
        for (structured, spoken) in [("oracle", "oracle_text"), ("resilient", "resilient_text")] {
            let (a, b) = (preset(structured), preset(spoken));
            let (ra, rb) = (Runner::new(&p, &a, false, 0.0), Runner::new(&p, &b, false, 0.0));
            let ok = |r: &Runner, n: u64| (0..n).filter(|&s| r.run(s).outcome.name() == "success").count();
            assert_eq!(ok(&ra, 200), ok(&rb, 200), "{world}: {structured} against {spoken}");
        }
    }
    let (p, stack) = (builtin("support_desk"), preset("oracle_text"));
    let runner = Runner::new(&p, &stack, true, 0.0);
    let t = runner.run(3);
    assert!(t.events.iter().any(|e| matches!(e.kind, EventKind::Said { .. })), "the oracle_text said something");
}

#[test]
fn the_text_agent_completes_every_seed_with_faults_off_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let agent = format!("cmd:python3 {}/examples/agents/text_agent.py", env!("CARGO_MANIFEST_DIR"));
    let args = ["--agent", &agent, "--seeds", "0..24", "--fault-scale", "0"];
    let runs = sweep_on_threads(dir.path(), &args, &[("1", "3"), ("4", "5")]);
    assert_eq!(runs[0].1, runs[1].1, "trajectories.csv on 1 and 4 threads");
    assert_eq!(runs[0].2, runs[1].2, "summary.json on 1 and 4 threads");
    assert!(runs[0].0.contains("100.0%  (24/24)"), "{}", runs[0].0);
}

#[test]
fn a_spoken_sweep_is_the_same_on_one_and_four_threads_and_its_incidents_replay() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--agent", "naive_text", "--seeds", "0..300"];
    let runs = sweep_on_threads(dir.path(), &args, &[("1", "7"), ("4", "64")]);
    assert_eq!(runs[0].1, runs[1].1);
    assert_eq!(runs[0].2, runs[1].2);
    let failures = dir.path().join("out-1/failures");
    let incident = std::fs::read_dir(&failures).unwrap().flatten().next().expect("naive_text fails somewhere").path();
    let output = agentsim(dir.path(), &["replay", incident.to_str().unwrap()], &[]);
    assert!(output.status.success(), "{}", text(&output));
}

/// The reply to the first call `args` makes to `send_message`, after the
/// opening, with faults off.
fn send_message_reply(p: &agentsim_worlds::Prepared, args: Value) -> agentsim_engine::Reply {
    let p2 = p.clone();
    let mut sent = false;
    let t = run_scripted(p, 0, 0.0, move |input, _| match input {
        Input::User(_) if !sent => {
            sent = true;
            crate::world_kit::call(&p2, "send_message", args.clone())
        }
        _ => Action::Finish(agentsim_engine::Finish::Done),
    });
    t.events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Result { reply, .. } => Some(reply.clone()),
            _ => None,
        })
        .expect("the call came back")
}

#[test]
fn a_message_kind_is_required_and_one_the_tool_declares() {
    let status = |reply: &agentsim_engine::Reply| match reply {
        agentsim_engine::Reply::Error { status, message, .. } => (*status, message.clone()),
        other => (200, format!("{other:?}")),
    };
    for world in ["support_desk", "flight_booking", "newsroom", "weather_dining"] {
        let p = builtin(world);
        let recipient = match world {
            "flight_booking" => "traveller_id",
            "newsroom" => "editor_id",
            _ => "customer_id",
        };
        let who = |kind: Option<&str>| {
            let mut args = Value::map([(recipient, Value::str("X"))]);
            if let Some(k) = kind {
                args.set("kind", Value::str(k));
            }
            args
        };
        let (code, message) = status(&send_message_reply(&p, who(None)));
        assert_eq!(code, 400, "{world}: no kind: {message}");
        assert!(message.contains("`kind` is required") && message.contains("`ask`"), "{world}: {message}");
        let (code, message) = status(&send_message_reply(&p, who(Some("gossip"))));
        assert_eq!(code, 400, "{world}: unknown kind: {message}");
        assert!(message.contains("not `gossip`"), "{world}: {message}");
        // The schema agents read says so.
        let send = p.catalog.id("send_message").unwrap();
        let kind = p.catalog.spec(send).def.args.iter().find(|a| a.name == "kind").unwrap();
        assert!(kind.required && kind.one_of.contains(&"ask".to_string()), "{world}: {kind:?}");
        let tools = agentsim_agents::external::protocol::tool_list(&p.catalog).to_string();
        assert!(tools.contains(r#""enum":["#), "{world}: {tools}");
    }
    let helpdesk = crate::scripted::helpdesk();
    let (code, message) = status(&send_message_reply(&helpdesk, Value::map::<&str>([])));
    assert_eq!(code, 400, "send_message({{}}) on the helpdesk: {message}");
    let ask = Value::map([("kind", Value::str("ask")), ("user_id", Value::str("U1"))]);
    let (code, message) = status(&send_message_reply(&helpdesk, ask));
    assert_eq!(code, 400, "an ask without its fact: {message}");
    assert!(message.contains("`fact`"), "{message}");
}
