//! Many sessions in one world (docs/sessions.md): determinism across threads,
//! the shape of a run's sessions, races between sessions, the shared model
//! capacity, and a run of one session being exactly the run without a
//! `sessions` section.

use agentsim::Runner;
use agentsim_engine::{Outcome, Trajectory};
use agentsim_worlds::Prepared;

use crate::common::{
    agentsim, prepare_text as prepare, preset, repo_path as seed_path, same_on_one_and_four_threads,
    sweep_and_replay_failures, sweep_on_threads, text,
};

/// The fifty-session example scenario.
const LOAD: &str = "seeds/support_desk_load.ron";

fn seed_text(name: &str) -> String {
    std::fs::read_to_string(seed_path(name)).unwrap()
}

/// Runs `seed` of `prepared` with the resilient preset at fault scale 1.
fn run(prepared: &Prepared, seed: u64) -> Trajectory {
    let stack = preset("resilient");
    Runner::new(prepared, &stack, false, 1.0).run(seed)
}

/// The total time the sessions of seeds `seeds` waited for the model's capacity.
fn queued_ms(prepared: &Prepared, seeds: std::ops::Range<u64>) -> u64 {
    seeds.map(|seed| run(prepared, seed).sessions.iter().map(|s| s.model_queue_ms).sum::<u64>()).sum()
}

#[test]
fn a_sweep_of_many_sessions_is_the_same_on_one_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let load = seed_path(LOAD).to_string_lossy().into_owned();
    let one =
        same_on_one_and_four_threads(dir.path(), &[&load, "--agent", "resilient", "--seeds", "0..12"], ("8", "3"));
    // Twelve seeds, one row each (and the header).
    assert_eq!(one.1.lines().count(), 13, "{}", one.1);
}

#[test]
fn a_run_of_the_load_scenario_holds_fifty_sessions_in_order() {
    let p = prepare(&seed_text(LOAD));
    let t = run(&p, 0);
    assert_eq!(t.sessions.len(), 50);
    assert_eq!(t.sessions[0].arrived_ms, 0, "session 0 arrives at 0");
    for (i, s) in t.sessions.iter().enumerate() {
        assert_eq!(s.session as usize, i, "sessions are numbered in order of arrival");
        assert!(s.ended_ms >= s.arrived_ms, "session {i} ends after it arrives: {s:?}");
    }
    assert!(t.sessions.windows(2).all(|w| w[0].arrived_ms <= w[1].arrived_ms), "arrivals never go back in time");
    // Poisson arrivals at 10 a minute: not all at once.
    assert!(t.sessions[49].arrived_ms > 0, "the last session arrives later than the first");
    let turns: u32 = t.sessions.iter().map(|s| s.metrics.turns).sum();
    assert_eq!(turns, t.metrics.turns, "the run's turns are its sessions' turns");
    let tool_calls: u32 = t.sessions.iter().map(|s| s.metrics.tool_calls).sum();
    assert_eq!(tool_calls, t.metrics.tool_calls, "the run's tool calls are its sessions' tool calls");
}

/// Sessions that would arrive after the horizon are in the run as
/// `not_started` (at the times drawn for them), counted apart from the
/// agents' sessions in the run's verdict, its row and the sweep's summary, on
/// one thread as on four.
#[test]
fn sessions_arriving_after_the_horizon_are_counted_as_not_started_outside_the_agents_rates() {
    let cut = seed_text(LOAD).replace("horizon_ms: 3_600_000", "horizon_ms: 60_000");
    let p = prepare(&cut);
    let t = run(&p, 0);
    assert_eq!(t.sessions.len(), 50, "every session of the scenario is in the run");
    let late: Vec<_> = t.sessions.iter().filter(|s| s.outcome == Outcome::NotStarted).collect();
    assert!(!late.is_empty() && late.len() < 50, "{} not started", late.len());
    for s in &late {
        assert!(s.arrived_ms > 60_000 && s.end_reason == "arrives after the horizon", "{s:?}");
        assert_eq!((s.metrics.turns, s.latency_ms()), (0, 0));
    }
    assert!(t.sessions.windows(2).all(|w| w[0].arrived_ms <= w[1].arrived_ms), "arrivals never go back in time");
    let started = 50 - late.len();
    let succeeded = t.sessions.iter().filter(|s| s.outcome == Outcome::Success).count();
    assert!(
        t.verdict.detail.starts_with(&format!("{succeeded} of {started} sessions succeeded"))
            && t.verdict.detail.ends_with(&format!(", {} not started", late.len())),
        "{}",
        t.verdict.detail
    );
    assert_ne!(t.outcome, Outcome::NotStarted, "the run is judged on the sessions that started");
    // The sweep: the shares are over the sessions that started.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cut.ron"), &cut).unwrap();
    let args = ["cut.ron", "--agent", "resilient", "--seeds", "0..4"];
    let (stdout, rows, summary) = same_on_one_and_four_threads(dir.path(), &args, ("2", "1"));
    assert!(rows.contains(";not_started="), "{rows}");
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let sessions = &summary["sessions"];
    let (agents, not_started) = (sessions["sessions"].as_u64().unwrap(), sessions["not_started"].as_u64().unwrap());
    assert!(not_started > 0 && agents + not_started == 4 * 50, "{sessions}");
    assert_eq!(sessions["completion"]["n"].as_u64(), Some(agents), "{sessions}");
    assert!(stdout.contains("sessions not started"), "{stdout}");
    let report = agentsim(dir.path(), &["report", "out-1", "-o", "r.html"], &[]);
    assert!(report.status.success(), "{}", text(&report));
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(html.contains(&format!("0 sessions absent (no agent came) and {not_started} not started")), "the report");
}

#[test]
fn the_same_seed_of_many_sessions_runs_the_same_twice() {
    let p = prepare(&seed_text(LOAD));
    for seed in [0, 7] {
        let (a, b) = (run(&p, seed), run(&p, seed));
        assert_eq!(a.digest, b.digest, "seed {seed}");
        assert_eq!(a.sessions.len(), b.sessions.len());
        for (x, y) in a.sessions.iter().zip(&b.sessions) {
            assert_eq!(
                (x.arrived_ms, x.ended_ms, x.outcome, x.hurt_by),
                (y.arrived_ms, y.ended_ms, y.outcome, y.hurt_by)
            );
        }
    }
    // And different seeds run differently.
    assert_ne!(run(&p, 0).digest, run(&p, 1).digest);
}

#[test]
fn sessions_race_on_one_order() {
    let p = prepare(&seed_text(LOAD));
    let (mut hurt, mut raced) = (0, 0);
    for seed in 0..20 {
        let t = run(&p, seed);
        for s in &t.sessions {
            if let Some(other) = s.hurt_by {
                hurt += 1;
                assert_ne!(other, s.session, "seed {seed}: a session is hurt by another");
                assert!((other as usize) < t.sessions.len(), "seed {seed}: hurt by a session of the run");
                assert_eq!(s.outcome.name(), "violation", "seed {seed}: a hurt session is a violation: {s:?}");
            }
        }
        if t.minefields.iter().any(|m| *m == "refund_over_total" || *m == "refunded_twice") {
            raced += 1;
            assert_eq!(t.outcome.name(), "violation", "seed {seed}: a minefield makes the run a violation");
        }
        if t.sessions.iter().any(|s| s.hurt_by.is_some()) {
            assert!(
                t.minefields.iter().any(|m| *m == "refund_over_total" || *m == "refunded_twice"),
                "seed {seed}: a session hurt by another names its race: {:?}",
                t.minefields
            );
        }
    }
    assert!(hurt > 0, "no session of seeds 0..20 was hurt by another");
    assert!(raced > 0, "no race fired in seeds 0..20");
}

#[test]
fn a_smaller_model_capacity_makes_sessions_wait_longer() {
    let text = seed_text(LOAD);
    assert!(text.contains("requests_per_minute: 120"), "the load scenario gives the model 120 requests a minute");
    let roomy = prepare(&text);
    let tight = prepare(&text.replace("requests_per_minute: 120", "requests_per_minute: 20"));
    let unlimited = prepare(&text.replace("model_capacity: (requests_per_minute: 120),", ""));
    let (roomy_ms, tight_ms) = (queued_ms(&roomy, 0..3), queued_ms(&tight, 0..3));
    assert!(tight_ms > roomy_ms, "20 requests a minute: {tight_ms} ms in line, 120: {roomy_ms} ms");
    assert!(tight_ms > 0);
    assert_eq!(queued_ms(&unlimited, 0..3), 0, "no capacity, no line");
    // Waiting in line shows in the sessions' latency too.
    let latency = |p: &Prepared| run(p, 0).sessions.iter().map(|s| s.latency_ms()).sum::<u64>();
    assert!(latency(&tight) > latency(&roomy));
}

#[test]
fn one_session_with_nothing_shared_is_the_run_without_sessions() {
    let plain = seed_text("seeds/support_desk.ron");
    let anchor = "    world: SupportDesk(";
    assert_eq!(plain.matches(anchor).count(), 1, "the scenario has one world");
    let one = plain.replacen(anchor, &format!("    sessions: (count: 1),\n{anchor}"), 1);
    assert_ne!(one, plain);
    let (plain, one) = (prepare(&plain), prepare(&one));
    for seed in 0..10 {
        let (a, b) = (run(&plain, seed), run(&one, seed));
        assert_eq!(a.digest, b.digest, "seed {seed}");
        assert!(b.sessions.is_empty(), "a run of one session records nothing about sessions");
        assert_eq!(a.outcome, b.outcome);
    }
}

#[test]
fn the_timeline_names_each_lines_session() {
    let dir = tempfile::tempdir().unwrap();
    let load = seed_path(LOAD).to_string_lossy().into_owned();
    let output = agentsim(dir.path(), &["run", &load, "--agent", "resilient", "--seed", "0"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().any(|l| l.contains(" s1 ")), "a line of session 1: {stdout}");
    assert!(stdout.lines().any(|l| l.contains("session end")), "a session's end: {stdout}");
    assert!(stdout.lines().any(|l| l.contains(" world ") && l.contains("END")), "the run's end is the world's");
}

/// The ten-session race scenario (its trials explore interleavings).
const RACE: &str = "seeds/support_desk_race.ron";

/// The stack of a file under the repository.
fn stack_file(name: &str) -> agentsim_agents::StackSpec {
    let path = seed_path(name);
    let text = std::fs::read_to_string(&path).unwrap();
    agentsim::spec::parse_stack(&text, &path.to_string_lossy()).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `trial` of `seed` of `prepared` with the stack `stack`.
fn run_trial(prepared: &Prepared, stack: &agentsim_agents::StackSpec, seed: u64, trial: u32) -> Trajectory {
    Runner::new(prepared, stack, true, 1.0).run_trial(seed, trial)
}

#[test]
fn trials_that_explore_interleavings_keep_the_agents_and_change_the_schedule() {
    let race = prepare(&seed_text(RACE));
    let plain = prepare(&seed_text(RACE).replace("        explore: Interleavings,\n", ""));
    assert!(!plain.scenario.sessions.explores_interleavings(), "the section lost its explore line");
    let stack = preset("resilient");
    let mut schedules_differ = 0;
    for seed in 0..4 {
        // Trial 0 is the seeded schedule: the plain scenario's run, byte for byte.
        let first = run_trial(&race, &stack, seed, 0);
        assert_eq!(first.digest, run_trial(&plain, &stack, seed, 0).digest, "seed {seed}: trial 0");
        let second = run_trial(&race, &stack, seed, 1);
        assert_eq!(second.digest, run_trial(&race, &stack, seed, 1).digest, "seed {seed}: a trial replays");
        schedules_differ += usize::from(second.digest != first.digest);
        // The same sessions arrive at the same times: only the schedule moved.
        let arrivals = |t: &Trajectory| t.sessions.iter().map(|s| s.arrived_ms).collect::<Vec<_>>();
        assert_eq!(arrivals(&first), arrivals(&second), "seed {seed}: arrivals");
        // Without `explore`, trial 1 varies the agents instead: another run.
        assert_ne!(run_trial(&plain, &stack, seed, 1).digest, second.digest, "seed {seed}: what trials vary");
    }
    assert!(schedules_differ >= 3, "another interleaving is another run: {schedules_differ} of 4 seeds differ");
}

#[test]
fn interleavings_are_the_same_on_one_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let race = seed_path(RACE).to_string_lossy().into_owned();
    let args = [&race[..], "--agent", "resilient", "--seeds", "0..6", "--trials", "3"];
    let runs = sweep_on_threads(dir.path(), &args, &[("1", "8"), ("4", "2")]);
    assert_eq!(runs[0], runs[1], "stdout, trajectories.csv and summary.json");
    assert!(runs[0].2.contains("\"pass_k\""), "trials of interleavings give pass^k: {}", runs[0].2);
}

#[test]
fn keys_per_agent_let_two_sessions_refund_one_order_twice_and_shared_keys_do_not() {
    let race = prepare(&seed_text(RACE));
    let per_agent = stack_file("seeds/stacks/resilient_agent_keys.ron");
    let shared = preset("resilient");
    let twice = |stack: &agentsim_agents::StackSpec| {
        (0..40).filter(|&seed| run_trial(&race, stack, seed, 0).minefields.contains(&"refunded_twice")).count()
    };
    assert!(twice(&per_agent) >= 2, "keys of each agent's own let a refund through twice");
    assert_eq!(twice(&shared), 0, "content-derived keys make the second session's refund a replay");
    // Alone, the two stacks cannot tell apart: one session never races.
    let single = prepare(&seed_text("seeds/support_desk.ron"));
    for seed in 0..20 {
        let (a, b) = (run_trial(&single, &per_agent, seed, 0), run_trial(&single, &shared, seed, 0));
        assert_eq!((a.outcome, a.minefields.clone()), (b.outcome, b.minefields.clone()), "seed {seed}");
    }
}

#[test]
fn shrink_keeps_the_fewest_sessions_that_still_fail_and_the_result_replays() {
    let race = prepare(&seed_text(RACE));
    let per_agent = stack_file("seeds/stacks/resilient_agent_keys.ron");
    let shrunk = agentsim::shrink::shrink(&race, &per_agent, 0, 1.0).expect("seed 0 fails");
    assert_eq!(shrunk.sessions_before, 10);
    assert!(shrunk.sessions_after >= 2 && shrunk.sessions_after < 10, "{} sessions", shrunk.sessions_after);
    assert_eq!(shrunk.scenario.sessions.count, shrunk.sessions_after);
    assert!(shrunk.events_after < shrunk.events_before);
    // The minimal case replays: same key, same failure, same digest.
    let again = Prepared::with_key(shrunk.scenario.clone(), shrunk.key);
    let replayed = Runner::new(&again, &per_agent, true, 1.0).run(0);
    assert_eq!((replayed.outcome, replayed.digest), (shrunk.outcome, shrunk.trajectory.digest));
    assert_eq!(replayed.sessions.len() as u32, shrunk.sessions_after);
}

/// The first message each session's user sent, by session.
fn openings(t: &Trajectory) -> Vec<(u32, agentsim_engine::Message)> {
    let mut acting = None;
    let mut firsts: Vec<(u32, agentsim_engine::Message)> = Vec::new();
    for event in &t.events {
        match &event.kind {
            agentsim_engine::EventKind::Session { session } => acting = *session,
            agentsim_engine::EventKind::User(message) => {
                let session = acting.expect("a user speaks in a session");
                if !firsts.iter().any(|(s, _)| *s == session) {
                    firsts.push((session, message.clone()));
                }
            }
            _ => {}
        }
    }
    firsts.sort_by_key(|(s, _)| *s);
    firsts
}

#[test]
fn shrink_drops_sessions_from_the_middle_and_each_kept_one_meets_its_own_user() {
    let race = prepare(&seed_text(RACE));
    let per_agent = stack_file("seeds/stacks/resilient_agent_keys.ron");
    // Seed 2's race is between sessions 4 and 5; a prefix would keep 0 to 5.
    let original = Runner::new(&race, &per_agent, true, 1.0).run(2);
    let shrunk = agentsim::shrink::shrink(&race, &per_agent, 2, 1.0).expect("seed 2 fails");
    let kept = shrunk.sessions_kept.clone();
    assert!(kept.iter().enumerate().any(|(i, &s)| s as usize != i), "a middle session is dropped: {kept:?}");
    assert_eq!(shrunk.scenario.sessions.drawn_as.as_deref(), Some(&kept[..]));
    assert_eq!(shrunk.sessions_after as usize, kept.len());
    // Every session kept arrives when it did and its user opens as it did.
    let before = openings(&original);
    let after = openings(&shrunk.trajectory);
    for (k, &s) in kept.iter().enumerate() {
        assert_eq!(shrunk.trajectory.sessions[k].arrived_ms, original.sessions[s as usize].arrived_ms, "session {s}");
        assert_eq!(after[k].1, before[s as usize].1, "session {s}'s user, kept as session {k}");
    }
    // The minimal case replays from its scenario.
    let again = Prepared::with_key(shrunk.scenario.clone(), shrunk.key);
    let replayed = Runner::new(&again, &per_agent, true, 1.0).run(2);
    assert_eq!((replayed.outcome, replayed.digest), (shrunk.outcome, shrunk.trajectory.digest));
    // As a scenario of its own, it sweeps the same on 1 and 4 threads.
    let dir = tempfile::tempdir().unwrap();
    // Written as an incident writes its scenario.
    let extensions = ron::extensions::Extensions::UNWRAP_VARIANT_NEWTYPES | ron::extensions::Extensions::IMPLICIT_SOME;
    let config = ron::ser::PrettyConfig::new().extensions(extensions);
    let text = ron::Options::default().to_string_pretty(&shrunk.scenario, config).unwrap();
    std::fs::write(dir.path().join("cut.ron"), text).unwrap();
    let stack = seed_path("seeds/stacks/resilient_agent_keys.ron").to_string_lossy().into_owned();
    let args = ["cut.ron", "--agent", &stack, "--seeds", "0..8", "--failures", "0"];
    same_on_one_and_four_threads(dir.path(), &args, ("3", "2"));
}

#[test]
fn one_session_drawn_as_another_meets_that_session_s_user_and_task() {
    let together = seed_text(RACE).replace("arrival: Poisson(per_minute: 5.0)", "arrival: Together");
    let all = prepare(&together);
    let alone = prepare(&together.replace("count: 10,", "count: 1, drawn_as: [3],"));
    assert_eq!(alone.scenario.sessions.drawn_as.as_deref(), Some(&[3][..]));
    let stack = preset("resilient");
    for seed in 0..4 {
        let full = Runner::new(&all, &stack, true, 1.0).run(seed);
        // The cut keeps the full run's streams: the same key.
        let cut = Prepared::with_key(alone.scenario.clone(), all.key());
        let one = Runner::new(&cut, &stack, true, 1.0).run(seed);
        assert_eq!(one.sessions.len(), 1, "a run of one session drawn as another reports its session");
        assert_eq!(openings(&one)[0].1, openings(&full)[3].1, "seed {seed}");
    }
}

#[test]
fn a_shrunk_incident_of_sessions_from_the_middle_replays() {
    let dir = tempfile::tempdir().unwrap();
    let race = seed_path(RACE).to_string_lossy().into_owned();
    let stack = seed_path("seeds/stacks/resilient_agent_keys.ron").to_string_lossy().into_owned();
    let out = agentsim(dir.path(), &["shrink", &race, "--agent", &stack, "--seed", "2", "--out", "s.ron"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("sessions: 10 -> "), "{}", text(&out));
    let replay = agentsim(dir.path(), &["replay", "s.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(text(&replay).contains("PASS s.ron: violation"), "{}", text(&replay));
    let incident = std::fs::read_to_string(dir.path().join("s.ron")).unwrap();
    assert!(incident.contains("drawn_as"), "the cut names the sessions it keeps");
}

#[test]
fn an_incident_of_many_sessions_replays_from_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let race = seed_path(RACE).to_string_lossy().into_owned();
    for kept in sweep_and_replay_failures(dir.path(), &race, "resilient", "0..6", &[]) {
        assert!(kept.contains("sessions:") && kept.contains(" s1 "), "the incident holds its sessions: {kept}");
    }
}

#[test]
fn an_external_agents_run_of_many_sessions_replays_each_sessions_own_decisions() {
    // The recorded decisions of every session's process are one list; each
    // session's replayed agent takes its own (marked by session), not the
    // whole list from the start.
    let dir = tempfile::tempdir().unwrap();
    let race = seed_path(RACE).to_string_lossy().into_owned();
    let agent = format!("cmd:python3 {}", seed_path("examples/agents/support_desk_agent.py").display());
    let run = agentsim(dir.path(), &["run", &race, "--agent", &agent, "--seed", "1", "--record", "e.ron"], &[]);
    assert!(run.status.success(), "{}", text(&run));
    let incident = std::fs::read_to_string(dir.path().join("e.ron")).unwrap();
    assert!(incident.contains("Session(9)"), "every session's decisions are marked");
    let replay = agentsim(dir.path(), &["replay", "e.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
    // Some of a run's sessions (as shrink writes them): each session's steps
    // are marked with the session it draws as, which its agent's streams carry.
    let some = seed_text(RACE).replace("count: 10,", "count: 2, drawn_as: [0, 4], arrival: At([0, 30_000]),");
    let some = some.replace("        arrival: Poisson(per_minute: 5.0),\n", "");
    std::fs::write(dir.path().join("some.ron"), some).unwrap();
    let run = agentsim(dir.path(), &["run", "some.ron", "--agent", &agent, "--seed", "1", "--record", "s.ron"], &[]);
    assert!(run.status.success(), "{}", text(&run));
    let incident = std::fs::read_to_string(dir.path().join("s.ron")).unwrap();
    assert!(incident.contains("Session(4)") && !incident.contains("Session(1)"), "marked as drawn");
    let replay = agentsim(dir.path(), &["replay", "s.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
}

#[test]
fn the_mcp_stdio_server_is_one_session_and_refuses_many_naming_http() {
    let dir = tempfile::tempdir().unwrap();
    let race = seed_path(RACE).to_string_lossy().into_owned();
    let out = agentsim(dir.path(), &["mcp", &race], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("runs 10 sessions in one world and stdio serves one MCP client"), "{stderr}");
    assert!(stderr.contains("with --http ADDR (e.g. --http 127.0.0.1:0)"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn agents_that_talk_in_words_are_sessions_too_and_the_same_on_one_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let race = seed_path(RACE).to_string_lossy().into_owned();
    let args = [&race[..], "--agent", "resilient_text", "--seeds", "0..4"];
    let runs = sweep_on_threads(dir.path(), &args, &[("1", "8"), ("4", "2")]);
    assert_eq!(runs[0], runs[1], "stdout, trajectories.csv and summary.json");
    let summary: serde_json::Value = serde_json::from_str(&runs[0].2).unwrap();
    let completed = summary["sessions"]["completion"]["count"].as_u64().unwrap();
    assert!(completed >= 20, "most of 40 customers spoken to in words are served: {completed}");
}
