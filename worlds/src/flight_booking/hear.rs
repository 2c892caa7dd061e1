//! The traveller reads what the agent writes in words (`Action::Say`): the
//! flight_booking side of the text channel (rules in `docs/conversation.md`).
//!
//! The traveller's facts are its traveller id, its name, the trip (origin,
//! destination, date) and its budget; the world knows every airport, traveller
//! name, flight id and booking id. A question gets the facts it names; a
//! proposal ("BA117 is $450.00, shall I book it?") is checked value by value
//! (a wrong origin, destination or date is refused with the correction), then
//! answered exactly as a structured `quote` of that flight and fare (the fare's
//! contextual accuracy, `quoted`, the change of mind, over budget, `confirmed`);
//! a statement is judged: a fare told for a flight is held to the same
//! accuracy as a structured quote (`stale_fare_told`, `wrong_fare_told`), and a
//! fare, budget, date or id the world never held is `told_wrong_value`; a
//! closing that names a booking is what the traveller was told (as a
//! structured `done`: `traveller_told`, contextual accuracy).

use agentsim_engine::{Message, TimeMs, Value, WorldCx};

use super::{FlightBooking, FlightEvent};
use crate::kit::listen::{self, Listener, id_shape};
use crate::talk::scan::{self, Word, Written};
use crate::talk::voice::Voice;
use crate::talk::{self, Fact, FactValue, Intent, Lexicon, Reading, TOLD_WRONG_VALUE, money_text};

/// The facts' places in [`FlightBooking::facts`].
const TRAVELLER_ID: usize = 0;
const ORIGIN: usize = 2;
const DESTINATION: usize = 3;
const DATE: usize = 4;
const BUDGET: usize = 5;

/// Words that mark an amount as the budget rather than a fare, when written
/// among the few words before it.
const BUDGET_WORDS: &[&str] = &["budget", "most", "maximum", "max", "limit", "spend"];

/// How many words before an amount a budget word makes it the budget.
const BUDGET_WINDOW: usize = 4;

/// What a message names beyond the traveller's facts: flights, fares, bookings.
#[derive(Debug, Default)]
struct Named {
    /// Flights named by id (config indices, first mention first, no repeats).
    flights: Vec<usize>,
    /// Amounts that are not about the budget: fares, in cents.
    fares: Vec<i64>,
    /// Amounts written beside a budget word, in cents.
    budgets: Vec<i64>,
    /// Booking ids named that the world made.
    bookings: Vec<String>,
    /// Ids written in the shape of a flight, booking or traveller id that the
    /// world never held.
    unknown_ids: Vec<String>,
}

impl FlightBooking<'_> {
    /// The traveller's facts about the trip it wants now.
    fn facts(&self) -> Vec<Fact> {
        let t = &self.config.travellers[self.user.traveller];
        let date = match scan::iso_date(&self.user.trip.date) {
            Some((year, month, day)) => FactValue::Date { year, month, day },
            None => FactValue::Name(self.user.trip.date.clone()),
        };
        vec![
            Fact::new("traveller_id", FactValue::Id(t.id.clone())).alias("passenger id").alias("customer id"),
            Fact::new("name", FactValue::Name(t.name.clone())).alias("your name").alias("passenger name"),
            Fact::new("origin", FactValue::Name(self.user.trip.origin.clone()))
                .alias("flying from")
                .alias("fly from")
                .alias("leaving from")
                .alias("departing from")
                .alias("departure airport")
                .alias("where from"),
            Fact::new("destination", FactValue::Name(self.user.trip.destination.clone()))
                .alias("flying to")
                .alias("fly to")
                .alias("going to")
                .alias("arrival airport")
                .alias("where to"),
            Fact::new("date", date)
                .alias("day")
                .alias("when")
                .alias("travel date")
                .alias("departure date")
                .alias("which day"),
            Fact::new("budget_cents", FactValue::Money(self.user.budget_cents))
                .alias("budget")
                .alias("at most")
                .alias("maximum")
                .alias("spend"),
        ]
    }

    /// The names the world knows: every traveller's name, every airport.
    fn lexicon(&self) -> Lexicon {
        let mut lexicon = Lexicon::new();
        for t in &self.config.travellers {
            lexicon.add("name", &t.name);
        }
        for f in &self.config.flights {
            lexicon.add("origin", &f.origin);
            lexicon.add("destination", &f.destination);
        }
        lexicon
    }

    /// The traveller reads `text` and answers (or, for a statement, judges it).
    pub(super) fn hear_text(&mut self, text: &str, cx: &mut WorldCx<'_, FlightEvent>) {
        if self.user.left_at_ms.is_some() {
            return;
        }
        let facts = self.facts();
        let named = self.named(text);
        let world_values = !named.flights.is_empty() || !named.bookings.is_empty() || !named.unknown_ids.is_empty();
        let mut reading = talk::count::read_counting(text, &facts, &self.lexicon(), None, world_values);
        // The budget is the only amount among the facts, so the reader places
        // every amount on it; only those written beside a budget word are.
        let budgets = named.budgets.clone();
        reading.stated.retain(|s| s.fact != BUDGET);
        for cents in budgets {
            let right = cents == self.user.budget_cents;
            reading.stated.push(talk::Stated {
                fact: BUDGET,
                right,
                written: money_text(cents),
                value: Some(Written::Money(cents)),
                span: None,
            });
        }
        let now_ms = cx.now_ms;
        let at = self.reply_at(now_ms);
        // A traveller whose patience runs out before its answer would come
        // leaves instead of answering (docs/conversation.md).
        // It takes in what it was told, and answers or agrees to nothing.
        if self.user.patience_at_ms.is_some_and(|p| at >= p) && self.active().next().is_none() {
            if reading.intent == Intent::Tell {
                let _unsent = self.judge_statement(&reading, &facts, &named, cx);
            }
            return;
        }
        let reply = match reading.intent {
            Intent::Ask => self.answer_question(&reading, &facts),
            Intent::Propose => self.answer_proposal(&reading, &facts, &named, at, cx),
            Intent::Tell => self.judge_statement(&reading, &facts, &named, cx),
            Intent::SmallTalk | Intent::Unclear => listen::chat(self, reading.intent, text, cx),
        };
        cx.tell_agent(at, reply);
    }

    /// Flights, fares, budgets and ids written in `text`.
    fn named(&self, text: &str) -> Named {
        let ws = scan::words(text);
        let mut named = Named::default();
        for found in scan::values(text) {
            match found.value {
                Written::Money(cents) => {
                    if budget_before(&ws, found.span.0) {
                        named.budgets.push(cents);
                    } else {
                        named.fares.push(cents);
                    }
                }
                Written::Token(token) => self.name_id(&token, &mut named),
                Written::Date { .. } => {}
            }
        }
        named
    }

    /// Files one id-like token: a flight, a booking, or an id of their shapes
    /// (or of a traveller id's) that the world never held.
    fn name_id(&self, token: &str, named: &mut Named) {
        let id = token.trim_start_matches('#');
        if let Some(f) = self.config.flights.iter().position(|f| f.id.eq_ignore_ascii_case(id)) {
            if !named.flights.contains(&f) {
                named.flights.push(f);
            }
        } else if let Some(b) = self.bookings.iter().find(|b| b.id.eq_ignore_ascii_case(id)) {
            named.bookings.push(b.id.clone());
        } else if self.config.travellers.iter().any(|t| t.id.eq_ignore_ascii_case(id)) {
            // Another traveller's id: read by the facts (a wrong traveller id).
        } else {
            let shape = id_shape(id);
            let known_shape = shape == id_shape("B501")
                || self.config.flights.iter().any(|f| id_shape(&f.id) == shape)
                || self.config.travellers.iter().any(|t| id_shape(&t.id) == shape);
            if known_shape && shape.1 > 0 {
                named.unknown_ids.push(id.to_string());
            }
        }
    }

    fn answer_question(&mut self, reading: &Reading, facts: &[Fact]) -> Message {
        let content = Value::map([("traveller_id", Value::str(self.traveller_id()))]);
        listen::answer_question(self, reading, facts, label, content, |_, fact| fact.value.to_value())
    }

    /// A proposal: its values checked one by one, then, naming one flight and
    /// one fare, answered as the structured `quote` of them (which draws
    /// nothing more from the traveller's stream than the reply time).
    fn answer_proposal(
        &mut self,
        reading: &Reading,
        facts: &[Fact],
        named: &Named,
        at: TimeMs,
        cx: &mut WorldCx<'_, FlightEvent>,
    ) -> Message {
        let now_ms = cx.now_ms;
        let flight = match named.flights.as_slice() {
            [f] => Some(*f),
            _ => None,
        };
        let fare = match named.fares.as_slice() {
            [c] => Some(*c),
            _ => None,
        };
        if let (Some(f), Some(cents)) = (flight, fare) {
            self.check_fare_told(f, cents, now_ms, cx);
        }
        let wrong: Vec<usize> = reading.stated.iter().filter(|s| !s.right).map(|s| s.fact).collect();
        if !wrong.is_empty() {
            let mut content = self.request(true);
            content.set("confirm", Value::Bool(false));
            return Message { text: listen::refuse(self, facts, &[DESTINATION, DATE], &wrong, label), content };
        }
        let Some(f) = flight else {
            // "Shall I book it?" without a flight: the traveller restates the
            // trip instead of agreeing to something unseen.
            let text = format!("{} Which flight is it, and what is the fare?", self.request_text());
            return Message { text, content: self.request(true) };
        };
        let Some(cents) = fare else {
            let mut content = self.request(true);
            content.set("flight_id", Value::str(&self.config.flights[f].id));
            let text = format!("How much is {}?", self.config.flights[f].id);
            return Message { text, content };
        };
        let reply = self.decide_quote(f, cents, at, now_ms);
        match reply.content.get("confirm") {
            Some(Value::Bool(true)) => Message { text: self.voice().yes(), content: reply.content },
            _ if reply.content.get("over_budget").is_some() => {
                let budget = money_text(self.user.budget_cents);
                Message { text: self.voice().no(&[("budget", budget.as_str())]), content: reply.content }
            }
            _ if reply.content.get("changed_mind").is_some() => reply,
            _ => {
                let text = listen::refuse(self, facts, &[ORIGIN, DESTINATION, DATE], &[], label);
                Message { text, content: reply.content }
            }
        }
    }

    /// Judges a statement: a fare told for a flight is held to the accuracy of
    /// a structured quote; an amount, date or id the world never held is
    /// `told_wrong_value`; a closing naming a booking is what the traveller was
    /// told.
    fn judge_statement(
        &mut self,
        reading: &Reading,
        facts: &[Fact],
        named: &Named,
        cx: &mut WorldCx<'_, FlightEvent>,
    ) -> Message {
        let now_ms = cx.now_ms;
        let booking = self.booking_told(named);
        let flight = match named.flights.as_slice() {
            [f] => Some(*f),
            [] => booking.as_ref().map(|(_, f)| *f),
            _ => None,
        };
        for &cents in &named.fares {
            match flight {
                Some(f) => self.check_fare_told(f, cents, now_ms, cx),
                None if !self.fare_ever_held(cents, now_ms) => {
                    cx.minefield(TOLD_WRONG_VALUE, format!("told {} (no flight had that fare)", money_text(cents)));
                }
                None => {}
            }
        }
        for s in reading.stated.iter().filter(|s| !s.right) {
            let never_held = match s.fact {
                BUDGET | TRAVELLER_ID => true,
                DATE => !self.config.flights.iter().any(|f| f.date == s.written || written_date(&s.written, &f.date)),
                _ => false,
            };
            if never_held {
                cx.minefield(TOLD_WRONG_VALUE, format!("told {} {}", label(&facts[s.fact]), s.written));
            }
        }
        for id in &named.unknown_ids {
            cx.minefield(TOLD_WRONG_VALUE, format!("told {id} (no such flight, booking or traveller)"));
        }
        if reading.done
            && let Some((booking_id, _)) = booking
        {
            let fare = match named.fares.as_slice() {
                [c] => *c,
                _ => 0,
            };
            self.told_done(&booking_id, fare, now_ms);
        }
        listen::acknowledge(self, reading.done)
    }

    /// The booking a statement tells about: the one booking id it names, else
    /// the traveller's one active booking on the one flight it names.
    fn booking_told(&self, named: &Named) -> Option<(String, usize)> {
        let flight_of = |id: &str| self.bookings.iter().find(|b| b.id == id).map(|b| b.flight);
        match named.bookings.as_slice() {
            [id] => flight_of(id).map(|f| (id.clone(), f)),
            [] => {
                let [f] = named.flights.as_slice() else { return None };
                let on: Vec<&super::Booking> = self.active().filter(|b| b.flight == *f).collect();
                match on.as_slice() {
                    [b] => Some((b.id.clone(), b.flight)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Whether any flight had the fare `cents` at some time up to `now_ms`, or
    /// a booking was made at it.
    fn fare_ever_held(&self, cents: i64, now_ms: TimeMs) -> bool {
        (0..self.config.flights.len()).any(|f| self.fare_held_between(f, cents, 0, now_ms))
            || self.bookings.iter().any(|b| b.fare_cents == cents)
    }
}

impl Listener for FlightBooking<'_> {
    fn request_content(&self) -> Value {
        self.request(true)
    }

    /// The request in words, as the traveller restates it.
    fn request_text(&self) -> String {
        format!(
            "I'd like a flight from {} to {} on {}, at most {}.",
            self.user.trip.origin,
            self.user.trip.destination,
            self.user.trip.date,
            money_text(self.user.budget_cents)
        )
    }

    fn voice(&mut self) -> &mut Voice {
        listen::voice_of(&mut self.user.voice, self.user.persona, &self.user.user_rng)
    }
}

/// Whether a budget word stands among the few words before byte `at`.
fn budget_before(ws: &[Word], at: usize) -> bool {
    let before: Vec<&Word> = ws.iter().filter(|w| w.span.1 <= at).collect();
    before[before.len().saturating_sub(BUDGET_WINDOW)..].iter().any(|w| BUDGET_WORDS.contains(&w.text.as_str()))
}

/// Whether `written` (as the reader keeps a date: `2026-12-01`) is the ISO
/// date `iso`.
fn written_date(written: &str, iso: &str) -> bool {
    scan::values(written).first().is_some_and(|f| match f.value {
        Written::Date { year, month, day } => format!("{year:04}-{month:02}-{day:02}") == iso,
        _ => false,
    })
}

/// How the traveller names a fact.
fn label(fact: &Fact) -> String {
    match fact.name.as_str() {
        "budget_cents" => "budget".to_string(),
        "traveller_id" => "traveller id".to_string(),
        other => other.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flight_booking::FlightBookingConfig;
    use agentsim_engine::StreamSource;

    #[test]
    fn amounts_beside_a_budget_word_are_the_budget_and_others_fares() {
        let config = FlightBookingConfig::default();
        let w = FlightBooking::new(&config, &StreamSource::new([7; 32], 1));
        let named = w.named("BA117 is $450.00, within your budget of $540.00. Flight ZZ999?");
        assert_eq!(named.fares, vec![45_000]);
        assert_eq!(named.budgets, vec![54_000]);
        assert_eq!(named.flights, vec![0]);
        assert_eq!(named.unknown_ids, Vec::<String>::new(), "ZZ999 has no known shape");
        let named = w.named("Your booking B777 on BA118 is confirmed.");
        assert_eq!(named.unknown_ids, vec!["B777".to_string(), "BA118".to_string()]);
    }

    #[test]
    fn the_facts_read_the_trip_and_its_wrong_values() {
        let config = FlightBookingConfig::default();
        let w = FlightBooking::new(&config, &StreamSource::new([7; 32], 1));
        let facts = w.facts();
        let other = if w.user.trip.destination == "JFK" { "LIS" } else { "JFK" };
        let text = format!("Shall I book you from {} to {other}?", w.user.trip.origin);
        let r = talk::read(&text, &facts, &w.lexicon());
        assert_eq!(r.intent, Intent::Propose);
        assert!(r.states_right(ORIGIN), "{r:?}");
        assert!(r.states(DESTINATION) && !r.states_right(DESTINATION), "{r:?}");
        let r = talk::read("What is your budget?", &facts, &w.lexicon());
        assert_eq!((r.intent, r.asked.clone()), (Intent::Ask, vec![BUDGET]));
    }
}
