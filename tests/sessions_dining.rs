//! weather_dining holds many sessions (docs/sessions.md): determinism across
//! threads for the load scenario, the table races between sessions, what the
//! expert's second read of the tables is worth, and a run of one session
//! being exactly the run without a `sessions` section.

use agentsim_engine::{Agent, Trajectory};
use agentsim_worlds::Prepared;
use agentsim_worlds::kit::expert::Planner;
use agentsim_worlds::weather_dining::{Expert, Ids};

use crate::common::{
    prepare_text as prepare, repo_path as seed_path, run_preset as run, same_on_one_and_four_threads, without_counts,
};

/// The thirty-diner example scenario.
const LOAD: &str = "seeds/weather_dining_load.ron";

/// The minefields of a race between sessions over a seating's tables.
const RACES: [&str; 2] = ["table_booked_twice", "reservation_honoured_after_full"];

fn load() -> Prepared {
    prepare(&std::fs::read_to_string(seed_path(LOAD)).unwrap())
}

/// Seed `seed` with the expert (no mistakes, no layers) as every session's
/// agent: the oracle, or (`trusting`) the expert that never reads the
/// tables again before reserving.
fn run_expert(prepared: &Prepared, trusting: bool, seed: u64) -> Trajectory {
    let ids = Ids::find(&prepared.catalog).expect("weather_dining's tools");
    let config = prepared.scenario.sim_config(false, 1.0);
    let make = |_oracle: Box<dyn Agent>, _streams: &_| -> Box<dyn Agent> {
        let expert = if trusting { Expert::new(ids).trusting_its_reads() } else { Expert::new(ids) };
        Box::new(Planner::new(expert, ids))
    };
    prepared.run_each(seed, 0, false, &config, &make)
}

/// Sessions hurt by another in `t`, after checking that each names a race.
fn hurt(t: &Trajectory, seed: u64) -> usize {
    let mut hurt = 0;
    for s in t.sessions.iter().filter(|s| s.hurt_by.is_some()) {
        hurt += 1;
        let other = s.hurt_by.expect("filtered");
        assert_ne!(other, s.session, "seed {seed}: a session is hurt by another");
        assert!(other < 30, "seed {seed}: hurt by a session of the run");
        assert_eq!(s.outcome.name(), "violation", "seed {seed}: a hurt session is a violation: {s:?}");
    }
    if hurt > 0 {
        assert!(
            RACES.iter().any(|r| t.minefields.contains(r)),
            "seed {seed}: a session hurt by another names its race: {:?}",
            t.minefields
        );
        assert_eq!(t.outcome.name(), "violation", "seed {seed}: a race makes the run a violation");
    }
    hurt
}

#[test]
fn a_sweep_of_the_dining_load_is_the_same_on_one_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let load = seed_path(LOAD).to_string_lossy().into_owned();
    let one = same_on_one_and_four_threads(dir.path(), &[&load, "--agent", "naive", "--seeds", "0..8"], ("8", "3"));
    assert_eq!(one.1.lines().count(), 9, "eight seeds and the header: {}", one.1);
    assert!(one.1.contains("n=30;"), "thirty sessions a run: {}", one.1);
    assert!(RACES.iter().any(|r| one.1.contains(r)), "a race in eight seeds: {}", one.1);
}

#[test]
fn diners_race_for_the_last_tables() {
    let p = load();
    let mut fired = [0u32; 2];
    let mut hurt_sessions = 0;
    for seed in 0..10 {
        let t = run(&p, "naive", seed);
        assert_eq!(t.sessions.len(), 30, "seed {seed}");
        hurt_sessions += hurt(&t, seed);
        for (i, race) in RACES.iter().enumerate() {
            fired[i] += u32::from(t.minefields.contains(race));
        }
    }
    assert!(hurt_sessions > 0, "no session of seeds 0..10 was hurt by another");
    assert!(fired.iter().all(|&n| n > 0), "each race fires in some seed of 0..10: {RACES:?} {fired:?}");
}

#[test]
fn the_oracle_races_for_tables_and_reading_them_again_lowers_it() {
    let p = load();
    let (mut oracle, mut trusting) = (0, 0);
    for seed in 0..20 {
        oracle += hurt(&run_expert(&p, false, seed), seed);
        trusting += hurt(&run_expert(&p, true, seed), seed);
    }
    // Even an agent without mistakes races: its model turn (think time and
    // the wait for the shared model quota) lies between its read and its
    // reservation, and it cannot see it from where it decides.
    assert!(oracle > 0, "the oracle was never hurt by another session in seeds 0..20");
    assert!(
        oracle < trusting,
        "reading the tables again before reserving lowers the races: oracle {oracle}, trusting its reads {trusting} sessions hurt"
    );
    // The oracle preset is this expert.
    let preset_run = run(&p, "oracle", 3);
    assert_eq!(preset_run.digest, run_expert(&p, false, 3).digest, "the oracle preset is the expert");
}

#[test]
fn without_counted_tables_no_reservation_races() {
    let text = std::fs::read_to_string(seed_path(LOAD)).unwrap();
    let uncounted = without_counts(&text, &[", indoor_tables: ", ", outdoor_tables: "]);
    assert!(!uncounted.contains("_tables:"), "every restaurant's tables are left out");
    let p = prepare(&uncounted);
    for seed in 0..4 {
        let t = run(&p, "naive", seed);
        assert!(t.sessions.iter().all(|s| s.hurt_by.is_none()), "seed {seed}: no tables, no race over them");
        let tables = ["overbooked", RACES[0], RACES[1]];
        assert!(!tables.iter().any(|m| t.minefields.contains(m)), "seed {seed}: {:?}", t.minefields);
    }
}

#[test]
fn one_diner_with_nothing_shared_is_the_run_without_sessions() {
    let plain = std::fs::read_to_string(seed_path("seeds/weather_dining.ron")).unwrap();
    let anchor = "    world: WeatherDining(";
    assert_eq!(plain.matches(anchor).count(), 1, "the scenario has one world");
    let one = plain.replacen(anchor, &format!("    sessions: (count: 1),\n{anchor}"), 1);
    let (plain, one) = (prepare(&plain), prepare(&one));
    for seed in 0..10 {
        let (a, b) = (run(&plain, "resilient", seed), run(&one, "resilient", seed));
        assert_eq!(a.digest, b.digest, "seed {seed}");
        assert!(b.sessions.is_empty(), "a run of one session records nothing about sessions");
    }
}

/// The figures of docs/sessions.md for the expert that trusts its reads
/// against the oracle (not a check: a measurement, run by hand):
/// `AGENTSIM_DINING_SEEDS=500 cargo test --release --test integration
/// sessions_dining::measure_the_second_read -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement for docs/sessions.md, run by hand"]
fn measure_the_second_read() {
    let p = load();
    let seeds: u64 = std::env::var("AGENTSIM_DINING_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    for trusting in [false, true] {
        let (mut hurt_sessions, mut runs_with, mut succeeded, mut sessions) = (0, [0; 2], 0, 0);
        for seed in 0..seeds {
            let t = run_expert(&p, trusting, seed);
            hurt_sessions += hurt(&t, seed);
            for (i, race) in RACES.iter().enumerate() {
                runs_with[i] += usize::from(t.minefields.contains(race));
            }
            succeeded += t.sessions.iter().filter(|s| s.outcome.name() == "success").count();
            sessions += t.sessions.len();
        }
        let who = if trusting { "trusting its reads" } else { "oracle" };
        eprintln!(
            "{who}: seeds 0..{seeds}: sessions hurt {hurt_sessions}/{sessions}, succeeded {succeeded}/{sessions}, runs with {RACES:?}: {runs_with:?}"
        );
    }
}
