//! Suspendable episodes (`agentsim::episode`): the engine's loop stopped at each
//! decision and resumed with the action on the caller's thread. An episode's
//! decisions replay to the same digest; episodes interleave and move between
//! threads without changing; a panic, a failure and a drop end one cleanly.

use std::sync::Arc;

use agentsim::Runner;
use agentsim::bridge::Command;
use agentsim::episode::{DROPPED, Episode, EpisodeError, Setup, Step};
use agentsim_agents::external::replayed::recorded_steps;
use agentsim_agents::external::{ErrorKind, ExternalError, protocol};
use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_engine::{Action, Outcome, ToolCall, ToolId, Trajectory, Value};
use agentsim_worlds::{Prepared, Scenario};
use serde_json::{Value as Json, json};

use crate::common::{default_scenario, preset};

fn setup(prepared: &Arc<Prepared>, seed: u64, layers: &StackSpec) -> Setup {
    Setup {
        prepared: Arc::clone(prepared),
        seed,
        trial: 0,
        swarm: false,
        config: prepared.scenario.sim_config(true, 1.0),
        layers: layers.layers.clone(),
        tools: None,
    }
}

/// A small policy over observation lines: look the order up (twice on a
/// failure), then finish; in a world without `lookup_order`, call each tool
/// once with the user's structured message as arguments (the tools' scripts
/// run between suspensions), then finish.
fn policy(line: &str, prepared: &Prepared) -> Command {
    let observation: Json = serde_json::from_str(line).expect("an observation is JSON");
    let event = &observation["event"];
    let seq = observation["seq"].as_u64().expect("a seq");
    let specs = prepared.catalog.specs();
    let action = match event["kind"].as_str() {
        _ if prepared.catalog.id("lookup_order").is_none() && (seq as usize) <= specs.len() => {
            let args = if event["content"].is_object() { event["content"].clone() } else { json!({}) };
            json!({"action": "call", "tool": specs[seq as usize - 1].def.name, "args": args})
        }
        Some("user_message") if event["content"]["order_id"].is_string() => json!({
            "action": "call", "tool": "lookup_order", "args": {"order_id": event["content"]["order_id"]},
        }),
        Some("tool_result") if event["ok"] == false && observation["seq"].as_u64() < Some(4) => {
            json!({"action": "call", "tool": event["call"]["tool"], "args": event["call"]["args"]})
        }
        _ => json!({"action": "finish", "outcome": "done", "thought": "enough"}),
    };
    let mut action = action;
    action["protocol"] = Json::String(protocol::PROTOCOL.into());
    let (action, decision) =
        protocol::parse_action(action.to_string().as_bytes(), &prepared.catalog).expect("the policy's actions parse");
    Command::Act(action, decision)
}

/// Runs one episode to its end with [`policy`].
fn drive(mut episode: Episode, first: Result<Step, EpisodeError>, prepared: &Prepared) -> Trajectory {
    let mut step = first.expect("no panic");
    loop {
        match step {
            Step::Observe(observation) => {
                let line = observation.line.expect("the protocol bridge renders every observation");
                step = episode.step(policy(&line, prepared)).expect("no panic");
            }
            Step::Finished(trajectory) => return *trajectory,
        }
    }
}

#[test]
fn an_episodes_decisions_replay_to_the_same_digest() {
    let prepared = Arc::new(default_scenario());
    for stack in [StackSpec { planner: PlannerSpec::Oracle, layers: vec![] }, preset("resilient")] {
        let mut turns = 0;
        for seed in 0..20 {
            let (episode, first) = Episode::start(setup(&prepared, seed, &stack));
            let t = drive(episode, first, &prepared);
            turns += t.metrics.turns;
            let replay = StackSpec { planner: PlannerSpec::Replayed(recorded_steps(&t)), layers: stack.layers.clone() };
            let again = Runner::new(&prepared, &replay, true, 1.0).run(seed);
            assert_eq!(again.digest, t.digest, "seed {seed}: {} / {}", t.end_reason, again.end_reason);
        }
        assert!(turns >= 30, "the policy decided {turns} times over 20 seeds");
    }
}

fn helpdesk() -> Prepared {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/worlds/helpdesk/helpdesk.ron");
    let text = std::fs::read_to_string(&path).unwrap();
    Prepared::new(Scenario::parse_in(&text, "helpdesk.ron", path.parent()).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn interleaved_episodes_and_episodes_moved_between_threads_do_not_change() {
    // The built-in world, and a scripted one: its script session is a
    // thread-local filled for one script call, never held across a suspension.
    interleaved_and_moved(Arc::new(default_scenario()));
    interleaved_and_moved(Arc::new(helpdesk()));
}

fn interleaved_and_moved(prepared: Arc<Prepared>) {
    let stack = preset("resilient");
    let alone: Vec<_> = (0..8)
        .map(|seed| {
            let (episode, first) = Episode::start(setup(&prepared, seed, &stack));
            drive(episode, first, &prepared)
        })
        .collect();
    let calls: u32 = alone.iter().map(|t| t.metrics.tool_calls).sum();
    assert!(calls >= 8, "{}: the episodes call tools ({calls} calls)", prepared.scenario.name);
    let alone: Vec<_> = alone.into_iter().map(|t| t.digest).collect();
    // All eight started, then stepped round-robin, each step on another thread.
    let mut running: Vec<_> = (0..8)
        .map(|seed| {
            let (episode, first) = Episode::start(setup(&prepared, seed, &stack));
            (seed, episode, Some(first.expect("no panic")))
        })
        .collect();
    let mut digests = vec![None; 8];
    while digests.iter().any(Option::is_none) {
        for (seed, episode, step) in &mut running {
            let Some(Step::Observe(observation)) = step.take() else { continue };
            let command = policy(&observation.line.expect("rendered"), &prepared);
            let next = std::thread::scope(|s| s.spawn(|| episode.step(command)).join().expect("no panic"));
            match next.expect("no panic") {
                Step::Finished(t) => digests[*seed as usize] = Some(t.digest),
                observe => *step = Some(observe),
            }
        }
    }
    assert_eq!(digests.into_iter().map(Option::unwrap).collect::<Vec<_>>(), alone);
}

#[test]
fn a_failed_or_dropped_episode_ends_as_agent_error_and_a_panic_is_reported() {
    let prepared = Arc::new(default_scenario());
    let stack = preset("resilient");
    let (mut episode, first) = Episode::start(setup(&prepared, 3, &stack));
    assert!(matches!(first, Ok(Step::Observe(_))));
    let t = episode
        .fail(&ExternalError::new(ErrorKind::Closed, "the agent process crashed"), "a traceback")
        .expect("it was running");
    assert_eq!((t.outcome, t.end_reason.as_str()), (Outcome::AgentError, "agent failed: the agent process crashed"));
    assert!(episode.ended());
    assert_eq!(episode.step(Command::Finish).unwrap_err(), EpisodeError::Ended);
    assert!(episode.fail(&ExternalError::new(ErrorKind::Closed, "again"), "").is_none());

    // Many episodes dropped while suspended: each ends (its stack is unwound by
    // returning), and their stacks serve the next ones.
    for seed in 0..300 {
        let (episode, first) = Episode::start(setup(&prepared, seed, &stack));
        assert!(matches!(first, Ok(Step::Observe(_))));
        drop(episode);
    }
    assert!(DROPPED.contains("abandoned"));

    // An action the engine cannot carry out (a tool id no catalog has; the
    // protocol never makes one) panics inside the loop: the episode ends as
    // `sim_error` with the message (a broken invariant costs its run, never
    // the caller), and the next one runs.
    let (mut episode, _) = Episode::start(setup(&prepared, 4, &stack));
    let bogus = Action::Call(ToolCall { tool: ToolId(999), args: Value::Map(vec![]).into(), idempotency_key: None });
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = episode.step(Command::Act(bogus, Value::Null));
    std::panic::set_hook(hook);
    match &result {
        Ok(Step::Finished(t)) => {
            assert_eq!(t.outcome, Outcome::SimError);
            assert!(t.end_reason.contains("index out of bounds"), "{}", t.end_reason);
        }
        other => panic!("expected a sim_error trajectory, got {other:?}"),
    }
    assert!(episode.ended());
    drop(episode);
    let (episode, first) = Episode::start(setup(&prepared, 4, &stack));
    assert!(drive(episode, first, &prepared).metrics.turns >= 1);
}
