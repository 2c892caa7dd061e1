//! The users of flight_booking, newsroom and weather_dining read text
//! (`Action::Say`): a question gets the fact it names, a wrong proposal is
//! refused with the correction and a right one is a yes, a whole task can be
//! done in words, a value told that the world never held is
//! `told_wrong_value` (and its incident replays bit for bit), and a sweep of a
//! text agent has the same digest on 1 and 4 threads.

use agentsim::Runner;
use agentsim::incident::{Incident, Replay};
use agentsim_agents::external::replayed::RecordedStep;
use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_engine::{Action, Digest, EventKind, Finish, Input, Message, Trajectory, Value};
use agentsim_worlds::Prepared;

use crate::world_kit::{call, ok_body, parse, run_scripted};

const DONE: Action = Action::Finish(Finish::Done);

fn say(text: impl Into<String>) -> Action {
    Action::Say { text: text.into() }
}

fn user(input: &Input) -> &Message {
    match input {
        Input::User(m) => m,
        other => panic!("expected the user's message, got {other:?}"),
    }
}

fn str_of<'a>(m: &'a Message, key: &str) -> &'a str {
    m.content.get(key).and_then(Value::as_str).unwrap_or_else(|| panic!("no `{key}` in {:?}", m.content))
}

fn int_of(m: &Message, key: &str) -> i64 {
    m.content.get(key).and_then(Value::as_int).unwrap_or_else(|| panic!("no `{key}` in {:?}", m.content))
}

/// What the user said back, in order (text and content).
fn replies(t: &Trajectory) -> Vec<Message> {
    t.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::User(message) => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// A stack that plays back `texts` as `say` decisions, then finishes: a text
/// agent whose every step is recorded, so its incidents replay.
fn saying(texts: &[&str]) -> StackSpec {
    let mut steps: Vec<RecordedStep> = texts
        .iter()
        .map(|t| RecordedStep::Decision(Value::map([("action", Value::str("say")), ("text", Value::str(*t))])))
        .collect();
    steps.push(RecordedStep::Decision(Value::map([("action", Value::str("finish")), ("outcome", Value::str("done"))])));
    StackSpec { planner: PlannerSpec::Replayed(steps), layers: Vec::new() }
}

/// Runs `stack` on `seed`, records the incident, replays it (in the library
/// and with `agentsim replay`) and asserts both match bit for bit.
fn assert_replays(prepared: &Prepared, stack: &StackSpec, seed: u64) -> Trajectory {
    let t = Runner::new(prepared, stack, true, 0.0).run(seed);
    let incident = Incident::record(prepared, None, seed, 0.0, "text", stack, &t);
    let again = incident.replay(&incident.prepared(), None);
    assert_eq!(incident.check(&incident.prepared(), &again), Replay::Match);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("i.ron"), incident.to_ron()).unwrap();
    let output = crate::common::agentsim(dir.path(), &["replay", "i.ron"], &[]);
    assert!(output.status.success(), "{}", crate::common::text(&output));
    t
}

/// The digest of a sweep of `stack` over `seeds` on a pool of `threads`.
fn sweep_digest(prepared: &Prepared, stack: &StackSpec, seeds: std::ops::Range<u64>, threads: usize) -> Digest {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let runner = Runner::new(prepared, stack, false, 1.0);
        let mut digests = Vec::new();
        runner
            .sweep_trials(seeds, 1, |_, t| {
                digests.push(t.digest);
                Ok::<(), ()>(())
            })
            .unwrap();
        Digest::combine(&digests)
    })
}

fn assert_same_digest_on_1_and_4_threads(prepared: &Prepared, texts: &[&str]) {
    let stack = saying(texts);
    let one = sweep_digest(prepared, &stack, 0..40, 1);
    let four = sweep_digest(prepared, &stack, 0..40, 4);
    assert_eq!(one, four);
}

// ---- flight_booking ---------------------------------------------------------

/// One traveller, one flight on each of two routes, fares that hold still (or
/// move every second with `tick_ms` 1000).
fn flights(tick_ms: u64) -> Prepared {
    parse(&format!(
        r#"Scenario(name: "fb-text", world: FlightBooking(
            travellers: [(id: "T01", name: "Ada"), (id: "T02", name: "Bo")],
            flights: [
                (id: "AA1", origin: "LHR", destination: "JFK", date: "2026-12-01", fare_cents: 10_000),
                (id: "ZZ9", origin: "CDG", destination: "LIS", date: "2026-12-03", fare_cents: 5_000),
            ],
            fare_tick_ms: Fixed(ms: {tick_ms}),
            budget_margin_percent: 20,
            personas: (clear: 1, vague: 0, changes_mind: 0, impatient: 0),
        ))"#
    ))
}

#[test]
fn the_traveller_answers_questions_checks_proposals_and_is_told_in_words() {
    let p = flights(100_000_000);
    let s = Prepared::new(p.scenario.clone());
    let mut step = 0;
    let (mut mine, mut other, mut fare) = (String::new(), String::new(), 0);
    let mut trip: Vec<String> = Vec::new();
    let t = run_scripted(&p, 4, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                let m = user(&input);
                trip = ["origin", "destination", "date"].iter().map(|k| str_of(m, k).to_string()).collect();
                let on_aa1 = trip[0] == "LHR";
                (mine, other) = if on_aa1 { ("AA1".into(), "ZZ9".into()) } else { ("ZZ9".into(), "AA1".into()) };
                fare = if on_aa1 { 10_000 } else { 5_000 };
                say("What is your budget, and when do you want to fly?")
            }
            2 => {
                // A fare the other flight has: only the route and the day are wrong.
                let (o, d, date, price) = if other == "AA1" {
                    ("LHR", "JFK", "2026-12-01", "$100.00")
                } else {
                    ("CDG", "LIS", "2026-12-03", "$50.00")
                };
                say(format!("Flight {other} from {o} to {d} on {date} is {price}. Shall I book it?"))
            }
            3 => {
                let keys = ["origin", "destination", "date"];
                call(&s, "search_flights", Value::map(keys.iter().zip(&trip).map(|(k, v)| (*k, Value::str(v)))))
            }
            4 => say(format!("The fare of {mine} is ${}.00. Shall I book it?", fare / 100)),
            5 => call(
                &s,
                "book",
                Value::map([
                    ("traveller_id", Value::str("T01")),
                    ("flight_id", Value::str(&mine)),
                    ("fare_cents", Value::Int(fare)),
                ]),
            ),
            6 => {
                let booking = ok_body(&input).and_then(|b| b.get("booking_id")).and_then(Value::as_str).unwrap();
                say(format!("Done: {mine} is booked, booking {booking}, at ${}.00.", fare / 100))
            }
            _ => DONE,
        }
    });
    let r = replies(&t);
    // The question: budget and date, as the structured answers carry them.
    assert!(r[1].content.get("budget_cents").and_then(Value::as_int).is_some(), "{:?}", r[1]);
    assert!(r[1].content.get("date").and_then(Value::as_str).is_some_and(|d| d.starts_with("2026-12-0")));
    assert!(r[1].text.contains("budget is $"), "{}", r[1].text);
    // The wrong flight: refused with the right destination and date.
    assert_eq!(r[2].content.get("confirm"), Some(&Value::Bool(false)), "{:?}", r[2]);
    assert!(r[2].text.contains(str_of(&r[0], "destination")), "{}", r[2].text);
    // The right one: a yes, as a structured quote's.
    assert_eq!(r[3].content.get("confirm"), Some(&Value::Bool(true)), "{:?}", r[3]);
    assert!(t.verdict.success, "{}", t.verdict.detail);
    assert_eq!(t.verdict.milestone, "traveller_told");
    assert!(t.minefields.is_empty(), "{:?}", t.minefields);
}

#[test]
fn a_stale_fare_told_in_words_is_stale_as_in_a_structured_quote() {
    let p = flights(1_000);
    let mut step = 0;
    let mut told = "";
    let t = run_scripted(&p, 5, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                told = if str_of(user(&input), "origin") == "LHR" { "AA1 is $100.00" } else { "ZZ9 is $50.00" };
                // The fare of time 0, told five virtual minutes (300 fare steps) later.
                Action::Sleep { until_ms: 300_000 }
            }
            2 => say(format!("The fare of {told}.")),
            _ => DONE,
        }
    });
    assert!(t.minefields.contains(&"stale_fare_told"), "{:?}: {}", t.minefields, t.verdict.detail);
    assert_eq!(t.verdict.told_accurately, Some(false));
}

#[test]
fn a_wrong_value_told_to_the_traveller_fires_and_replays() {
    let p = flights(100_000_000);
    let t = assert_replays(&p, &saying(&["Your booking B999 is confirmed at $123.45."]), 2);
    assert!(t.minefields.contains(&"told_wrong_value"), "{:?}", t.minefields);
    assert_eq!(replies(&t).len(), 2, "the traveller answered the statement");
}

#[test]
fn a_flight_booking_text_sweep_is_the_same_on_1_and_4_threads() {
    let p = crate::world_kit::builtin("flight_booking");
    assert_same_digest_on_1_and_4_threads(
        &p,
        &["What is your budget?", "BA117 from LHR to JFK is $450.00. Shall I book it?", "Your booking B501 is booked."],
    );
}

// ---- weather_dining ---------------------------------------------------------

fn dining() -> Prepared {
    parse(
        r#"Scenario(name: "wd-text", world: WeatherDining(
            customers: [(id: "C01", name: "Ada")],
            restaurants: [
                (id: "R01", name: "Terrazza", city: "Lisbon", indoor_seats: 20, outdoor_seats: 20),
                (id: "R02", name: "Le Jardin", city: "Paris", indoor_seats: 20, outdoor_seats: 20),
            ],
            personas: (clear: 1, vague: 0, impatient: 0),
        ))"#,
    )
}

#[test]
fn the_diner_answers_checks_proposals_and_is_told_in_words() {
    let p = dining();
    let s = Prepared::new(p.scenario.clone());
    let mut step = 0;
    let (mut city, mut party, mut restaurant, mut dry) = (String::new(), 0, "", false);
    let t = run_scripted(&p, 6, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                let m = user(&input);
                city = str_of(m, "city").to_string();
                party = int_of(m, "party_size");
                restaurant = if city == "Lisbon" { "R01" } else { "R02" };
                say("How many people will be joining you?")
            }
            2 => {
                let elsewhere = if city == "Lisbon" { "Le Jardin in Paris" } else { "Terrazza in Lisbon" };
                say(format!("Shall I book a table for {} at {elsewhere} tonight?", party + 1))
            }
            3 => {
                let name = if city == "Lisbon" { "Terrazza" } else { "Le Jardin" };
                say(format!("Shall I book a table for {party} at {name} in {city} tonight?"))
            }
            4 => call(&s, "get_weather", Value::map([("city", Value::str(&city))])),
            5 => {
                dry = ok_body(&input).and_then(|b| b.get("condition")).and_then(Value::as_str) == Some("dry");
                call(
                    &s,
                    "find_restaurants",
                    Value::map([
                        ("city", Value::str(&city)),
                        ("party_size", Value::Int(party)),
                        ("seating", Value::str(if dry { "outdoor" } else { "indoor" })),
                    ]),
                )
            }
            6 => call(
                &s,
                "reserve",
                Value::map([
                    ("customer_id", Value::str("C01")),
                    ("restaurant_id", Value::str(restaurant)),
                    ("party_size", Value::Int(party)),
                    ("seating", Value::str(if dry { "outdoor" } else { "indoor" })),
                ]),
            ),
            7 => {
                let id = ok_body(&input).and_then(|b| b.get("reservation_id")).and_then(Value::as_str).unwrap();
                say(format!("Your table is reserved: reservation {id} for {party} people."))
            }
            _ => DONE,
        }
    });
    let r = replies(&t);
    assert_eq!(r[1].content.get("party_size"), r[0].content.get("party_size"), "{:?}", r[1]);
    assert_eq!(r[2].content.get("confirm"), Some(&Value::Bool(false)), "{:?}", r[2]);
    assert!(r[2].text.contains(str_of(&r[0], "city")), "{}", r[2].text);
    assert_eq!(r[3].content.get("confirm"), Some(&Value::Bool(true)), "{:?}", r[3]);
    assert!(t.verdict.success, "{}", t.verdict.detail);
    assert_eq!(t.verdict.milestone, "customer_told");
    assert!(t.minefields.is_empty(), "{:?}", t.minefields);
}

#[test]
fn a_wrong_value_told_to_the_diner_fires_and_replays() {
    let t = assert_replays(&dining(), &saying(&["Your reservation V999 is confirmed."]), 1);
    assert_eq!(t.minefields, ["told_wrong_value"]);
}

#[test]
fn a_weather_dining_text_sweep_is_the_same_on_1_and_4_threads() {
    let p = crate::world_kit::builtin("weather_dining");
    assert_same_digest_on_1_and_4_threads(
        &p,
        &["How many people?", "Shall I book a table for 4 at Terrazza in Lisbon tonight?", "Reservation V301 is done."],
    );
}

// ---- newsroom ---------------------------------------------------------------

fn newsroom() -> Prepared {
    parse(
        r#"Scenario(name: "nr-text", world: Newsroom(
            personas: (clear: 1, vague: 0, impatient: 0),
        ))"#,
    )
}

#[test]
fn the_editor_answers_checks_proposals_and_reads_a_summary_in_words() {
    let p = newsroom();
    let s = Prepared::new(p.scenario.clone());
    let mut step = 0;
    let mut wanted = 0;
    let t = run_scripted(&p, 7, 0.0, move |input, _| {
        step += 1;
        match step {
            1 => {
                wanted = int_of(user(&input), "count");
                say("How many stories do you want in the summary?")
            }
            2 => say(format!("Shall I summarise the latest {} stories?", wanted + 1)),
            3 => say(format!("Shall I summarise the latest {wanted} stories?")),
            4 => call(&s, "latest_news", Value::map([("limit", Value::Int(wanted))])),
            5 => {
                let stories = ok_body(&input).and_then(|b| b.get("stories")).unwrap().as_list().to_vec();
                let listed: Vec<String> = stories
                    .iter()
                    .map(|st| {
                        let id = st.get("story_id").and_then(Value::as_str).unwrap();
                        let v = st.get("version").and_then(Value::as_int).unwrap();
                        format!("{id} (v{v})")
                    })
                    .collect();
                say(format!("Here is the summary of the latest {wanted} stories: {}.", listed.join(", ")))
            }
            _ => DONE,
        }
    });
    let r = replies(&t);
    assert_eq!(r[1].content.get("count"), r[0].content.get("count"), "{:?}", r[1]);
    assert_eq!(r[2].content.get("confirm"), Some(&Value::Bool(false)), "{:?}", r[2]);
    assert!(r[2].text.contains(&int_of(&r[0], "count").to_string()), "{}", r[2].text);
    assert_eq!(r[3].content.get("confirm"), Some(&Value::Bool(true)), "{:?}", r[3]);
    let summary = t.events.iter().find_map(|e| match &e.kind {
        EventKind::World { what: "summary", detail } => Some(detail.clone()),
        _ => None,
    });
    let summary = summary.expect("the summary in words was kept as a summary");
    assert_eq!(summary.get("current"), Some(&Value::Bool(true)), "{summary:?}");
    assert!(t.minefields.is_empty(), "{:?}", t.minefields);
    // No tasks were created: the summary alone is not the task.
    assert!(!t.verdict.success);
}

#[test]
fn a_wrong_value_told_to_the_editor_fires_and_replays() {
    let t = assert_replays(&newsroom(), &saying(&["Story S999 and task K777 are being checked."]), 3);
    assert_eq!(t.minefields, ["told_wrong_value"]);
}

#[test]
fn a_newsroom_text_sweep_is_the_same_on_1_and_4_threads() {
    let p = crate::world_kit::builtin("newsroom");
    assert_same_digest_on_1_and_4_threads(
        &p,
        &["How many stories?", "Shall I summarise the latest 3 stories?", "Here is the latest: S101 v1, S102 v2."],
    );
}

// ---- a structured planner in words ------------------------------------------

/// Per seed of `seeds` of built-in `world` without faults: whether `preset`
/// succeeded, and how many messages and calls it made (a call, or a message
/// said in words).
fn plays(world: &str, preset: &str, seeds: std::ops::Range<u64>) -> Vec<(bool, usize)> {
    let p = crate::world_kit::builtin(world);
    let stack = crate::common::preset(preset);
    let runner = Runner::new(&p, &stack, true, 0.0);
    seeds
        .map(|s| {
            let t = runner.run(s);
            let acts = t.events.iter().filter(|e| matches!(e.kind, EventKind::Call { .. } | EventKind::Said { .. }));
            (t.outcome.name() == "success", acts.count())
        })
        .collect()
}

#[test]
fn the_oracle_in_words_plays_as_the_oracle_on_every_world() {
    // The Speak layer says each `send_message` by its phrasing; the user reads
    // the words, and the expert goes on from the content of the answers: the
    // same successes, and each message said once (a planner that never took a
    // said message as sent would say its closing again and again).
    // (Saying takes the planner a turn more than calling, so a few
    // conversations meet the world a few seconds later: a fare may have moved.)
    for world in ["support_desk", "flight_booking", "newsroom", "weather_dining"] {
        let (text, structured) = (plays(world, "oracle_text", 0..40), plays(world, "oracle", 0..40));
        let successes = |p: &[(bool, usize)]| p.iter().filter(|(s, _)| *s).count();
        let acts = |p: &[(bool, usize)]| p.iter().map(|(_, a)| a).sum::<usize>();
        assert_eq!(successes(&text), successes(&structured), "{world}");
        assert!(
            acts(&text) * 10 <= acts(&structured) * 11,
            "{world}: {} acts in words, {}",
            acts(&text),
            acts(&structured)
        );
    }
}
