//! weather_dining: the oracle succeeds without faults and rides out the 503
//! bursts, every advertised fault shows up, output is the same on any thread
//! count, and each minefield fires when crossed.

use agentsim_engine::{Action, EventKind, Finish, Input, Value};
use agentsim_worlds::Prepared;

use crate::world_kit::{assert_same_bytes_on_1_and_4_threads, builtin, call, ok_body, parse, run_scripted, sweep_seen};

/// One city, one restaurant with tables inside and out, no faults.
fn small(rain_probability: f64, persona: &str) -> Prepared {
    let personas: Vec<String> =
        ["clear", "vague", "impatient"].iter().map(|p| format!("{p}: {}", u8::from(*p == persona))).collect();
    parse(&format!(
        r#"Scenario(name: "wd-test", world: WeatherDining(
            customers: [(id: "C01", name: "Ada"), (id: "C02", name: "Bo")],
            restaurants: [(id: "R1", name: "Terrazza", city: "Lisbon", indoor_seats: 6, outdoor_seats: 6)],
            rain_probability: {rain_probability},
            party_size_min: 2,
            party_size_max: 2,
            patience_ms: 1_000,
            personas: ({}),
        ))"#,
        personas.join(", ")
    ))
}

fn customer(input: &Input) -> String {
    match input {
        Input::User(m) => m.content.get("customer_id").and_then(Value::as_str).unwrap_or_default().to_string(),
        _ => panic!("the customer speaks first, got {input:?}"),
    }
}

fn other(c: &str) -> &'static str {
    if c == "C01" { "C02" } else { "C01" }
}

fn reserve(p: &Prepared, c: &str, seating: &str) -> Action {
    call(
        p,
        "reserve",
        Value::map([
            ("customer_id", Value::str(c)),
            ("restaurant_id", Value::str("R1")),
            ("party_size", Value::Int(2)),
            ("seating", Value::str(seating)),
        ]),
    )
}

const DONE: Action = Action::Finish(Finish::Done);

#[test]
fn the_oracle_succeeds_on_every_fault_free_seed() {
    let seen = sweep_seen(&builtin("weather_dining"), "oracle", 0..300, 0.0);
    assert_eq!(seen.successes, 300, "{seen:?}");
}

#[test]
fn the_oracle_rides_out_the_bursts_by_switching_provider() {
    let p = builtin("weather_dining");
    let stack = crate::common::preset("oracle");
    let runner = agentsim::Runner::new(&p, &stack, true, 1.0);
    let backup = p.catalog.id("get_weather_backup").unwrap();
    let (mut successes, mut switched) = (0, 0);
    for seed in 0..200 {
        let t = runner.run(seed);
        successes += u32::from(t.outcome.name() == "success");
        switched +=
            u32::from(t.events.iter().any(|e| matches!(&e.kind, EventKind::Call { call, .. } if call.tool == backup)));
    }
    // The primary's first burst covers the start of every run.
    assert!(switched >= 150, "{switched} of 200 runs used the backup provider");
    assert!(successes >= 196, "{successes} of 200");
}

#[test]
fn every_advertised_fault_and_failure_mode_shows_up() {
    let p = builtin("weather_dining");
    let seen = sweep_seen(&p, "naive", 0..400, 1.0);
    for fault in ["error_503", "error_500", "malformed_missing_field", "commit_then_timeout", "auth_expired"] {
        assert!(seen.faults.contains(fault), "fault {fault} never injected: {:?}", seen.faults);
    }
    for note in ["weather", "reserved", "persona:vague", "persona:impatient", "persona:clear"] {
        assert!(seen.notes.contains(note), "never saw {note}: {:?}", seen.notes);
    }
    assert!(seen.minefields.contains("duplicate_reservation"), "{:?}", seen.minefields);
    assert!(seen.outcomes.contains("looped"), "stuck on the burst: {:?}", seen.outcomes);
}

#[test]
fn sweeps_are_byte_identical_on_1_and_4_threads() {
    assert_same_bytes_on_1_and_4_threads("weather_dining", "naive", "0..300");
}

#[test]
fn outdoor_seating_in_the_rain_fires_and_indoor_when_dry_is_wrong() {
    let wet = small(1.0, "clear");
    let s = Prepared::new(wet.scenario.clone());
    let mut step = 0;
    let traj = run_scripted(&wet, 0, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => reserve(&s, &customer(&input), "outdoor"),
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["outdoor_in_rain"]);

    let dry = small(0.0, "clear");
    let s = Prepared::new(dry.scenario.clone());
    let (mut step, mut c) = (0, String::new());
    let traj = run_scripted(&dry, 0, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                c = customer(&input);
                reserve(&s, &c, "indoor")
            }
            2 => {
                let id = ok_body(&input).and_then(|b| b.get("reservation_id")).cloned().unwrap_or_default();
                call(
                    &s,
                    "send_message",
                    Value::map([("customer_id", Value::str(&c)), ("kind", Value::str("done")), ("reservation_id", id)]),
                )
            }
            _ => DONE,
        }
    });
    assert!(traj.minefields.is_empty());
    assert_eq!(traj.outcome.name(), "wrong_result", "{}", traj.verdict.detail);
}

#[test]
fn a_second_reservation_and_one_for_another_customer_fire() {
    let p = small(0.0, "clear");
    let s = Prepared::new(p.scenario.clone());
    let (mut step, mut c) = (0, String::new());
    let traj = run_scripted(&p, 1, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                c = customer(&input);
                reserve(&s, &c, "outdoor")
            }
            2 => reserve(&s, &c, "outdoor"),
            3 => reserve(&s, other(&c), "indoor"),
            4 => call(
                &s,
                "send_message",
                Value::map([("customer_id", Value::str(other(&c))), ("kind", Value::str("info"))]),
            ),
            _ => DONE,
        }
    });
    // Each minefield counts once per trajectory (the third reservation is both a
    // duplicate and for another customer).
    assert_eq!(
        traj.minefields,
        ["duplicate_reservation", "reservation_for_wrong_customer", "message_to_wrong_customer"]
    );
}

#[test]
fn reserving_after_the_impatient_customer_left_fires() {
    let p = small(0.0, "impatient");
    let s = Prepared::new(p.scenario.clone());
    let (mut step, mut c) = (0, String::new());
    let traj = run_scripted(&p, 2, 0.0, move |input, now| {
        step += 1;
        match step {
            1 => {
                c = customer(&input);
                Action::Sleep { until_ms: now + 20_000 }
            }
            2 => Action::Idle { wake_at_ms: None },
            3 => {
                assert!(matches!(&input, Input::User(m) if m.content.get("left") == Some(&Value::Bool(true))));
                reserve(&s, &c, "outdoor")
            }
            _ => DONE,
        }
    });
    assert_eq!(traj.minefields, ["reserved_after_customer_left"]);
    assert!(traj.verdict.detail.contains("the customer left"), "{}", traj.verdict.detail);
}
