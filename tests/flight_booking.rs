//! flight_booking: the oracle succeeds without faults, every advertised fault and
//! failure mode shows up, output is the same on any thread count, and each
//! minefield fires when crossed.

use agentsim_engine::{Action, Finish, Input, Value};
use agentsim_worlds::Prepared;

use crate::world_kit::{assert_same_bytes_on_1_and_4_threads, builtin, call, ok_body, parse, run_scripted, sweep_seen};

/// Two flights on one trip, a budget equal to the cheaper fare, no faults.
fn small(persona: &str) -> Prepared {
    let personas: Vec<String> = ["clear", "vague", "changes_mind", "impatient"]
        .iter()
        .map(|p| format!("{p}: {}", u8::from(*p == persona)))
        .collect();
    let personas = personas.join(", ");
    parse(&format!(
        r#"Scenario(name: "fb-test", world: FlightBooking(
            travellers: [(id: "T01", name: "Ada"), (id: "T02", name: "Bo")],
            flights: [
                (id: "AA1", origin: "X", destination: "Y", date: "D1", fare_cents: 10_000),
                (id: "AA2", origin: "X", destination: "Y", date: "D1", fare_cents: 20_000),
            ],
            budget_margin_percent: 0,
            patience_ms: 1_000,
            personas: ({personas}),
        ))"#
    ))
}

fn traveller(input: &Input) -> String {
    match input {
        Input::User(m) => m.content.get("traveller_id").and_then(Value::as_str).unwrap_or_default().to_string(),
        _ => panic!("the traveller speaks first, got {input:?}"),
    }
}

fn other(t: &str) -> &'static str {
    if t == "T01" { "T02" } else { "T01" }
}

fn fare(input: &Input) -> i64 {
    ok_body(input).and_then(|b| b.get("fare_cents")).and_then(Value::as_int).expect("a fare")
}

fn book(p: &Prepared, t: &str, flight: &str, fare_cents: i64) -> Action {
    call(
        p,
        "book",
        Value::map([
            ("traveller_id", Value::str(t)),
            ("flight_id", Value::str(flight)),
            ("fare_cents", Value::Int(fare_cents)),
        ]),
    )
}

fn get_fare(p: &Prepared, flight: &str) -> Action {
    call(p, "get_fare", Value::map([("flight_id", Value::str(flight))]))
}

fn quote(p: &Prepared, t: &str, flight: &str, fare_cents: i64) -> Action {
    call(
        p,
        "send_message",
        Value::map([
            ("traveller_id", Value::str(t)),
            ("kind", Value::str("quote")),
            ("flight_id", Value::str(flight)),
            ("fare_cents", Value::Int(fare_cents)),
        ]),
    )
}

const DONE: Action = Action::Finish(Finish::Done);

#[test]
fn the_oracle_succeeds_on_every_fault_free_seed_but_a_few_impatient_ones() {
    let p = builtin("flight_booking");
    let stack = crate::common::preset("oracle");
    let runner = agentsim::Runner::new(&p, &stack, false, 0.0);
    let mut left = 0;
    for seed in 0..300 {
        let t = runner.run(seed);
        if t.verdict.detail.contains("the traveller left") {
            // A slow conversation (two 90 s answers around a fare change) can outlast
            // an impatient traveller's patience however well the agent plays.
            assert_eq!(t.outcome.name(), "gave_up", "seed {seed}");
            left += 1;
        } else {
            assert_eq!(t.outcome.name(), "success", "seed {seed}: {}", t.verdict.detail);
        }
        assert!(t.minefields.is_empty(), "seed {seed}: {:?}", t.minefields);
    }
    assert!(left <= 6, "{left} of 300 travellers left");
}

#[test]
fn every_advertised_fault_and_failure_mode_shows_up() {
    let p = builtin("flight_booking");
    let seen = sweep_seen(&p, "naive", 0..400, 1.0);
    for fault in ["error_503", "stale", "malformed_wrong_type", "rate_limited", "commit_then_timeout", "auth_expired"] {
        assert!(seen.faults.contains(fault), "fault {fault} never injected: {:?}", seen.faults);
    }
    assert!(seen.statuses.contains(&409), "no 409 fare changed: {:?}", seen.statuses);
    for note in
        ["fare_changed", "fares", "traveller_left", "persona:changes_mind", "persona:vague", "persona:impatient"]
    {
        assert!(seen.notes.contains(note), "never saw {note}: {:?}", seen.notes);
    }
    assert!(seen.minefields.contains("duplicate_booking"), "{:?}", seen.minefields);
    assert!(seen.outcomes.contains("looped") && seen.outcomes.contains("success"), "{:?}", seen.outcomes);
    let resilient = sweep_seen(&p, "resilient", 0..400, 1.0);
    assert!(resilient.minefields.contains("stale_fare_told"), "{:?}", resilient.minefields);
    assert!(!resilient.minefields.contains("duplicate_booking"), "idempotency keys prevent double bookings");
}

#[test]
fn sweeps_are_byte_identical_on_1_and_4_threads() {
    assert_same_bytes_on_1_and_4_threads("flight_booking", "naive", "0..300");
}

#[test]
fn a_second_active_booking_is_a_duplicate() {
    let p = small("clear");
    let mut t = String::new();
    let mut step = 0;
    let p2 = parse_again(&p);
    let traj = run_scripted(&p, 0, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                t = traveller(&input);
                get_fare(&p2, "AA1")
            }
            // The second `book` repeats the first at the fare its answer confirmed.
            2 | 3 => book(&p2, &t, "AA1", fare(&input)),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["duplicate_booking"], "{}", traj.verdict.detail);
}

/// A copy of a prepared scenario for a script to own.
fn parse_again(p: &Prepared) -> Prepared {
    Prepared::new(p.scenario.clone())
}

#[test]
fn booking_over_budget_fires() {
    let p = small("clear");
    let s = parse_again(&p);
    let mut t = String::new();
    let mut step = 0;
    let traj = run_scripted(&p, 1, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                t = traveller(&input);
                get_fare(&s, "AA2")
            }
            2 => book(&s, &t, "AA2", fare(&input)),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["booking_over_budget"]);
    assert!(!traj.verdict.success);
}

#[test]
fn booking_and_messages_for_another_traveller_fire() {
    let p = small("clear");
    let s = parse_again(&p);
    let mut t = String::new();
    let mut step = 0;
    let traj = run_scripted(&p, 2, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                t = traveller(&input);
                get_fare(&s, "AA1")
            }
            2 => book(&s, other(&t), "AA1", fare(&input)),
            3 => call(
                &s,
                "send_message",
                Value::map([("traveller_id", Value::str(other(&t))), ("kind", Value::str("info"))]),
            ),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["booking_for_wrong_traveller", "message_to_wrong_traveller"]);
}

#[test]
fn a_fare_the_flight_never_had_is_wrong_and_an_old_one_is_stale() {
    let p = small("clear");
    let s = parse_again(&p);
    let mut step = 0;
    let traj = run_scripted(&p, 3, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => quote(&s, &traveller(&input), "AA1", 1),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["wrong_fare_told"]);

    // Read a fare, wait 15 virtual minutes (several ticks), read it again, then quote
    // the first one: stale exactly when the fare moved.
    let mut moved_seeds = 0;
    for seed in 0..10 {
        let s = parse_again(&p);
        let (mut t, mut step, mut first) = (String::new(), 0, 0);
        let result = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
        let shared = result.clone();
        let traj = run_scripted(&p, seed, 0.0, move |input, now| {
            step += 1;
            match step {
                1 => {
                    t = traveller(&input);
                    get_fare(&s, "AA1")
                }
                2 => {
                    first = fare(&input);
                    Action::Idle { wake_at_ms: Some(now + 900_000) }
                }
                3 => get_fare(&s, "AA1"),
                4 => {
                    let second = fare(&input);
                    *shared.lock().unwrap() = (first, second);
                    quote(&s, &t, "AA1", first)
                }
                _ => DONE,
            }
        });
        let (first, second) = *result.lock().unwrap();
        assert!(first > 0 && second > 0, "seed {seed}: both fares read");
        if first != second {
            moved_seeds += 1;
            assert_eq!(traj.minefields, ["stale_fare_told"], "seed {seed}");
        } else {
            assert!(traj.minefields.is_empty(), "seed {seed}");
        }
    }
    assert!(moved_seeds >= 5, "fares move over 15 minutes ({moved_seeds} of 10 seeds)");
}

#[test]
fn booking_after_the_impatient_traveller_left_fires() {
    let p = small("impatient");
    let s = parse_again(&p);
    let mut t = String::new();
    let mut step = 0;
    let traj = run_scripted(&p, 4, 0.0, move |input, now| {
        step += 1;
        match step {
            1 => {
                t = traveller(&input);
                Action::Sleep { until_ms: now + 20_000 }
            }
            2 => {
                assert_eq!(input, Input::Wake);
                Action::Idle { wake_at_ms: None }
            }
            3 => {
                // The traveller's patience (1 s) ran out first, and the script reads
                // the goodbye only after it wakes, long after.
                assert!(matches!(&input, Input::User(m) if m.content.get("left") == Some(&Value::Bool(true))));
                get_fare(&s, "AA1")
            }
            4 => book(&s, &t, "AA1", fare(&input)),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["booked_after_traveller_left"]);
    assert!(!traj.verdict.success);
}

#[test]
fn a_booking_at_an_unconfirmed_fare_is_a_wrong_result() {
    let p = small("clear");
    let s = parse_again(&p);
    let (mut t, mut step) = (String::new(), 0);
    let traj = run_scripted(&p, 5, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                t = traveller(&input);
                get_fare(&s, "AA1")
            }
            2 => book(&s, &t, "AA1", fare(&input)),
            3 => {
                let booked = ok_body(&input).cloned().unwrap_or_default();
                let mut args = Value::map([("traveller_id", Value::str(&t)), ("kind", Value::str("done"))]);
                for k in ["booking_id", "flight_id", "fare_cents"] {
                    args.set(k, booked.get(k).cloned().unwrap_or_default());
                }
                call(&s, "send_message", args)
            }
            _ => DONE,
        }
    });
    assert!(traj.minefields.is_empty());
    assert_eq!(traj.outcome.name(), "wrong_result");
    assert!(traj.verdict.detail.contains("not the fare the traveller confirmed"), "{}", traj.verdict.detail);
    // Never quoted nor confirmed: the booking is not the `booked` milestone.
    assert_eq!(traj.verdict.milestone, "started");
}
