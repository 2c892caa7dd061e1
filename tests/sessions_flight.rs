//! flight_booking holds many sessions (docs/sessions.md): determinism across
//! threads for the load scenario, the seat races between sessions, and a run
//! of one session being exactly the run without a `sessions` section.

use agentsim_worlds::Prepared;

use crate::common::{
    prepare_text as prepare, repo_path as seed_path, run_preset as run, same_on_one_and_four_threads, without_counts,
};

/// The thirty-traveller example scenario.
const LOAD: &str = "seeds/flight_booking_load.ron";

/// The minefields of a race between sessions over a flight's seats.
const RACES: [&str; 2] = ["seat_sold_twice", "fare_honoured_after_sold_out"];

fn load() -> Prepared {
    prepare(&std::fs::read_to_string(seed_path(LOAD)).unwrap())
}

#[test]
fn a_sweep_of_the_flight_load_is_the_same_on_one_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let load = seed_path(LOAD).to_string_lossy().into_owned();
    let one = same_on_one_and_four_threads(dir.path(), &[&load, "--agent", "naive", "--seeds", "0..8"], ("8", "3"));
    assert_eq!(one.1.lines().count(), 9, "eight seeds and the header: {}", one.1);
    assert!(one.1.contains("n=30;"), "thirty sessions a run: {}", one.1);
}

#[test]
fn travellers_race_for_the_last_seats() {
    let p = load();
    let mut fired = [0u32; 2];
    let mut hurt = 0;
    for seed in 0..10 {
        let t = run(&p, "naive", seed);
        assert_eq!(t.sessions.len(), 30, "seed {seed}");
        for s in t.sessions.iter().filter(|s| s.hurt_by.is_some()) {
            hurt += 1;
            let other = s.hurt_by.expect("filtered");
            assert_ne!(other, s.session, "seed {seed}: a session is hurt by another");
            assert!(other < 30, "seed {seed}: hurt by a session of the run");
            assert_eq!(s.outcome.name(), "violation", "seed {seed}: a hurt session is a violation: {s:?}");
        }
        for (i, race) in RACES.iter().enumerate() {
            if t.minefields.contains(race) {
                fired[i] += 1;
                assert_eq!(t.outcome.name(), "violation", "seed {seed}: a race makes the run a violation");
            }
        }
        if t.sessions.iter().any(|s| s.hurt_by.is_some()) {
            assert!(
                RACES.iter().any(|r| t.minefields.contains(r)),
                "seed {seed}: a session hurt by another names its race: {:?}",
                t.minefields
            );
        }
    }
    assert!(hurt > 0, "no session of seeds 0..10 was hurt by another");
    assert!(fired.iter().all(|&n| n > 0), "each race fires in some seed of 0..10: {RACES:?} {fired:?}");
}

#[test]
fn without_counted_seats_no_booking_races() {
    let text = std::fs::read_to_string(seed_path(LOAD)).unwrap();
    let uncounted = without_counts(&text, &[", seats: "]);
    assert!(!uncounted.contains("seats:"), "every flight's seats are left out");
    let p = prepare(&uncounted);
    for seed in 0..4 {
        let t = run(&p, "naive", seed);
        assert!(t.sessions.iter().all(|s| s.hurt_by.is_none()), "seed {seed}: no seats, no race over them");
        let seats = ["overbooked", RACES[0], RACES[1]];
        assert!(!seats.iter().any(|m| t.minefields.contains(m)), "seed {seed}: {:?}", t.minefields);
    }
}

#[test]
fn one_traveller_with_nothing_shared_is_the_run_without_sessions() {
    let plain = std::fs::read_to_string(seed_path("seeds/flight_booking.ron")).unwrap();
    let anchor = "    world: FlightBooking(";
    assert_eq!(plain.matches(anchor).count(), 1, "the scenario has one world");
    let one = plain.replacen(anchor, &format!("    sessions: (count: 1),\n{anchor}"), 1);
    let (plain, one) = (prepare(&plain), prepare(&one));
    for seed in 0..10 {
        let (a, b) = (run(&plain, "resilient", seed), run(&one, "resilient", seed));
        assert_eq!(a.digest, b.digest, "seed {seed}");
        assert!(b.sessions.is_empty(), "a run of one session records nothing about sessions");
    }
}
