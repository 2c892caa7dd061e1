//! Every release assertion holds wherever a run may end (issue 46, item 1): a
//! horizon or a budget that ends a run with a tool result or an agent's action
//! still in flight ends it cleanly, with the `horizon` or budget outcome, in
//! every built-in world, a scripted world and a run of many sessions.
//!
//! Before, a run that reached its horizon with a result in flight broke the
//! slab invariant in `engine/src/sim/finish.rs` and aborted the process (the
//! helpdesk example at `horizon_ms: 500`, `--agent oracle --seed 0`).

use agentsim_engine::{Outcome, Trajectory};
use agentsim_worlds::{Prepared, Scenario};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use crate::common::{preset, repo_path};

/// The scenarios the property runs over: every built-in world, a scripted
/// world and a run of many sessions.
fn scenarios() -> Vec<Scenario> {
    let mut all: Vec<Scenario> = ["support_desk", "flight_booking", "weather_dining", "newsroom"]
        .into_iter()
        .map(|name| agentsim_property::builtin(name).scenario)
        .collect();
    for file in ["examples/worlds/helpdesk/helpdesk.ron", "seeds/support_desk_race.ron"] {
        all.push(
            agentsim::load::scenario(&repo_path(file).to_string_lossy())
                .unwrap_or_else(|e| panic!("{file}: {e}"))
                .scenario,
        );
    }
    all
}

/// Seed `seed` of `scenario` ending at `horizon_ms` or at the budgets given.
fn run_bounded(scenario: &Scenario, agent: &str, seed: u64, horizon_ms: u64, budgets: (u32, u32, u32)) -> Trajectory {
    let mut scenario = scenario.clone();
    scenario.horizon_ms = horizon_ms;
    let (turns, calls, events) = budgets;
    scenario.budgets.turns_max = turns;
    scenario.budgets.tool_calls_max = calls;
    scenario.budgets.events_max = events;
    let prepared = Prepared::new(scenario);
    agentsim::Runner::new(&prepared, &preset(agent), false, 1.0).run(seed)
}

#[test]
fn the_helpdesk_at_a_500_ms_horizon_ends_at_the_horizon() {
    let scenario = &scenarios()[4];
    let t = run_bounded(scenario, "oracle", 0, 500, (1_000, 1_000, 100_000));
    assert_eq!((t.outcome, t.end_reason.as_str()), (Outcome::Horizon, "horizon reached"));
    for seed in 0..50 {
        let t = run_bounded(scenario, "oracle", seed, 3_000, (1_000, 1_000, 100_000));
        assert_ne!(t.outcome, Outcome::SimError, "seed {seed}: {}", t.end_reason);
    }
}

proptest! {
    #![proptest_config(Config { cases: 160, failure_persistence: None, rng_seed: RngSeed::Fixed(46), ..Config::default() })]

    #[test]
    fn no_horizon_or_budget_breaks_an_invariant(
        which in 0usize..6,
        agent in prop::sample::select(vec!["oracle", "resilient", "naive", "oracle_text", "resilient_text"]),
        seed in 0u64..1_000,
        horizon_ms in 0u64..30_000,
        turns in 1u32..40,
        calls in 1u32..40,
        events in 1u32..400,
    ) {
        let scenario = &SCENARIOS.with(|s| s[which].clone());
        let t = run_bounded(scenario, agent, seed, horizon_ms, (turns, calls, events));
        prop_assert_ne!(t.outcome, Outcome::SimError, "{}", t.end_reason);
    }
}

thread_local! {
    static SCENARIOS: Vec<Scenario> = scenarios();
}

/// A world whose tool panics on some seeds: a bug in a world (or in agentsim)
/// costs those seeds, reported as `sim_error` with what broke, and every other
/// seed is kept; the rows are the same on 1 and 4 threads.
#[test]
fn a_run_that_panics_costs_its_seed_not_the_sweep() {
    use agentsim::prelude::*;
    let world = WorldBuilder::new("brittle", |rng| rng.below(4) as i64)
        .tool(write_tool("click", "Clicks once.").field("clicks", ValueKind::Int))
        .handle("click", |start, call| {
            assert!(*start != 3, "the brittle world breaks when it starts at 3");
            call.milestone("clicked");
            Ok(Value::map([("clicks", Value::Int(*start + 1))]))
        })
        .opening(|_| Says::new("Click it once."))
        .judge(|_| true)
        .plan(Plan::new().call("click", |_| Value::Map(Vec::new())))
        .build()
        .unwrap();
    let swept = |threads| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| sweep(&world).agent("oracle").seeds(0..60).run().unwrap())
    };
    let (one, four) = (swept(1), swept(4));
    assert_eq!(one.summary.digest, four.summary.digest);
    assert_eq!(one.rows.len(), 60, "every seed has its row");
    let broken: Vec<_> = one.rows.iter().filter(|r| r.outcome == "sim_error").collect();
    assert!(!broken.is_empty() && broken.len() < 60, "{} broken", broken.len());
    assert!(one.rows.iter().all(|r| r.outcome == "sim_error" || r.outcome == "success"));
    let counted = one.summary.outcomes.iter().find(|(name, _)| name == "sim_error").map(|(_, n)| *n);
    assert_eq!(counted, Some(broken.len() as u64));
}
