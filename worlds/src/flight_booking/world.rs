//! The flight_booking world: fares on a random walk, bookings, and a traveller who
//! wants a flight within a budget.

use std::sync::LazyLock;

use agentsim_engine::{
    Message, MilestoneDag, Progress, Stream, StreamSource, TimeMs, ToolCall, ToolError, Value, Verdict, WorldCx,
};

use super::config::FlightBookingConfig;
use crate::kit::args::{int_arg, str_arg};
use crate::kit::goodbye::Goodbye;
use crate::kit::outbox::Outbox;
pub use crate::kit::persona::Persona;
use crate::kit::persona::draw;
use crate::kit::world::{Handover, KitWorld, Served, no_such_tool};
use crate::talk::voice::Voice;

/// How the impatient user leaves.
const GOODBYE: Goodbye =
    Goodbye { note: "traveller_left", text: "This is taking too long. Forget it, I'll book myself." };

#[path = "hear.rs"]
mod hear;

/// A booking this long after the traveller left is a minefield: the agent had
/// time to read the goodbye. One sent before that crossed the goodbye in flight; it
/// still fails the task, but it is not a careless act.
pub const LEAVE_NOTICE_MS: TimeMs = 10_000;

/// The task's milestones: search, quote a fare, get it confirmed, book, tell.
/// (Built once per process: the judge of every trajectory reads it.)
pub fn milestones() -> &'static MilestoneDag {
    static MILESTONES: LazyLock<MilestoneDag> = LazyLock::new(|| {
        MilestoneDag::chain(&["started", "searched", "quoted", "confirmed", "booked", "traveller_told"])
            .expect("the flight_booking milestones form a DAG")
    });
    &MILESTONES
}

/// A route on a day.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Trip {
    origin: String,
    destination: String,
    date: String,
}

struct Booking {
    id: String,
    flight: usize,
    fare_cents: i64,
    at_ms: TimeMs,
    cancelled_at_ms: Option<TimeMs>,
    key: Option<String>,
}

/// The world's own events.
pub enum FlightEvent {
    /// Every fare takes one step of its random walk.
    FareTick,
    /// An impatient traveller's patience runs out.
    PatienceOut,
}

/// One trajectory's flight_booking.
pub struct FlightBooking<'c> {
    config: &'c FlightBookingConfig,
    user_rng: Stream,
    world_rng: Stream,
    traveller: usize,
    persona: Persona,
    trip: Trip,
    alternative: Option<Trip>,
    mind_changed: bool,
    budget_cents: i64,
    /// Per flight: (time, fare) changes, oldest first.
    fares: Vec<Vec<(TimeMs, i64)>>,
    bookings: Vec<Booking>,
    /// The last quote the traveller confirmed: (flight, fare, time).
    confirmed: Option<(usize, i64, TimeMs)>,
    /// `done` messages: (time, booking id, fare).
    told: Vec<(TimeMs, String, i64)>,
    /// Fares told to the traveller (quotes and confirmations), and how many of them
    /// the flight did not have at that moment (contextual accuracy).
    fares_told: u32,
    fares_told_wrong: u32,
    left_at_ms: Option<TimeMs>,
    outbox: Outbox,
    progress: Progress,
    /// How the traveller words its answers to text (made on the first one).
    voice: Option<Voice>,
}

impl<'c> FlightBooking<'c> {
    /// A fresh world for one seed: traveller, trip and persona come from the user's
    /// stream, the fare walk from the world's.
    pub fn new(config: &'c FlightBookingConfig, streams: &StreamSource) -> Self {
        let mut user_rng = streams.stream("user.0");
        let world_rng = streams.stream("world");
        let traveller = user_rng.below(config.travellers.len() as u64) as usize;
        let flight = &config.flights[user_rng.below(config.flights.len() as u64) as usize];
        let trip =
            Trip { origin: flight.origin.clone(), destination: flight.destination.clone(), date: flight.date.clone() };
        // Another day of the same route, for a traveller who changes their mind.
        let mut other_dates: Vec<&str> = config
            .flights
            .iter()
            .filter(|f| f.origin == trip.origin && f.destination == trip.destination && f.date != trip.date)
            .map(|f| f.date.as_str())
            .collect();
        other_dates.sort_unstable();
        other_dates.dedup();
        let alternative_draw = user_rng.next_u64();
        let alternative = (!other_dates.is_empty()).then(|| Trip {
            date: other_dates[(alternative_draw % other_dates.len() as u64) as usize].to_string(),
            ..trip.clone()
        });
        // A change of mind needs another day to change to.
        let persona = match draw(&config.personas.weights(), &mut user_rng) {
            Some(Persona::ChangesMind) if alternative.is_none() => Persona::Clear,
            drawn => drawn.unwrap_or(Persona::Clear),
        };
        // The budget covers the cheapest fare at time 0 of every day the traveller
        // will ask for, with the configured margin.
        let cheapest_on = |date: &str| {
            config
                .flights
                .iter()
                .filter(|f| f.origin == trip.origin && f.destination == trip.destination && f.date == date)
                .map(|f| f.fare_cents)
                .min()
                .unwrap_or(flight.fare_cents)
        };
        let mut cheapest = cheapest_on(&trip.date);
        if persona == Persona::ChangesMind
            && let Some(alt) = &alternative
        {
            cheapest = cheapest.max(cheapest_on(&alt.date));
        }
        let budget_cents =
            cheapest.saturating_add(cheapest.saturating_mul(i64::from(config.budget_margin_percent)) / 100);
        Self {
            config,
            user_rng,
            world_rng,
            traveller,
            persona,
            trip,
            alternative,
            mind_changed: false,
            budget_cents,
            fares: config.flights.iter().map(|f| vec![(0, f.fare_cents)]).collect(),
            bookings: Vec::new(),
            confirmed: None,
            told: Vec::new(),
            fares_told: 0,
            fares_told_wrong: 0,
            left_at_ms: None,
            outbox: Outbox::new(),
            progress: Progress::new(),
            voice: None,
        }
    }

    /// The persona drawn for this seed.
    pub fn persona(&self) -> Persona {
        self.persona
    }

    /// The traveller's budget in cents.
    pub fn budget_cents(&self) -> i64 {
        self.budget_cents
    }

    fn traveller_id(&self) -> &str {
        &self.config.travellers[self.traveller].id
    }

    fn fare_at(&self, flight: usize, at_ms: TimeMs) -> i64 {
        let fare_cents = self.fares[flight]
            .iter()
            .rev()
            .find(|(t, _)| *t <= at_ms)
            .map_or(self.config.flights[flight].fare_cents, |(_, f)| *f);
        // Fares start positive and walk no lower than `fare_cents_min` (> 0).
        assert!(fare_cents > 0, "flight {} has a fare of {fare_cents} cents", self.config.flights[flight].id);
        fare_cents
    }

    /// Whether `fare_cents` was the flight's fare at some time in `[from_ms, to_ms]`.
    fn fare_held_between(&self, flight: usize, fare_cents: i64, from_ms: TimeMs, to_ms: TimeMs) -> bool {
        self.fare_at(flight, from_ms) == fare_cents
            || self.fares[flight].iter().any(|(t, f)| *t >= from_ms && *t <= to_ms && *f == fare_cents)
    }

    fn flight_index(&self, id: &str) -> Option<usize> {
        self.config.flights.iter().position(|f| f.id == id)
    }

    fn on_trip(&self, flight: usize) -> bool {
        let f = &self.config.flights[flight];
        f.origin == self.trip.origin && f.destination == self.trip.destination && f.date == self.trip.date
    }

    fn active(&self) -> impl Iterator<Item = &Booking> {
        self.bookings.iter().filter(|b| b.cancelled_at_ms.is_none())
    }

    fn reply_at(&mut self, now_ms: TimeMs) -> TimeMs {
        now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user_rng))
    }

    fn request(&self, with_date: bool) -> Value {
        let mut v = Value::map([
            ("traveller_id", Value::str(self.traveller_id())),
            ("origin", Value::str(&self.trip.origin)),
            ("destination", Value::str(&self.trip.destination)),
            ("budget_cents", Value::Int(self.budget_cents)),
        ]);
        if with_date {
            v.set("date", Value::str(&self.trip.date));
        }
        v
    }

    fn search_flights(&mut self, args: &Value, as_of_ms: TimeMs, now_ms: TimeMs) -> Result<Value, ToolError> {
        let (origin, destination, date) =
            (str_arg(args, "origin")?, str_arg(args, "destination")?, str_arg(args, "date")?);
        let found: Vec<usize> = (0..self.config.flights.len())
            .filter(|&i| {
                let f = &self.config.flights[i];
                f.origin == origin && f.destination == destination && f.date == date
            })
            .collect();
        assert!(as_of_ms <= now_ms, "a search reads the past, not the future");
        if found.iter().any(|&i| self.on_trip(i)) {
            self.progress.reach("searched", now_ms);
        }
        let flights = found
            .iter()
            .map(|&i| {
                let f = &self.config.flights[i];
                Value::map([
                    ("flight_id", Value::str(&f.id)),
                    ("date", Value::str(&f.date)),
                    ("fare_cents", Value::Int(self.fare_at(i, as_of_ms))),
                ])
            })
            .collect();
        Ok(Value::map([("flights", Value::List(flights))]))
    }

    fn get_fare(&self, args: &Value, as_of_ms: TimeMs) -> Result<Value, ToolError> {
        let id = str_arg(args, "flight_id")?;
        let i = self.flight_index(id).ok_or_else(|| ToolError::not_found(format!("no flight `{id}`")))?;
        assert_eq!(self.fares.len(), self.config.flights.len(), "every flight has its fare history");
        Ok(Value::map([
            ("flight_id", Value::str(id)),
            ("date", Value::str(&self.config.flights[i].date)),
            ("fare_cents", Value::Int(self.fare_at(i, as_of_ms))),
        ]))
    }

    fn book(&mut self, call: &ToolCall, cx: &mut WorldCx<'_, FlightEvent>) -> Result<Value, ToolError> {
        let traveller = str_arg(&call.args, "traveller_id")?;
        if !self.config.travellers.iter().any(|t| t.id == traveller) {
            return Err(ToolError::not_found(format!("no traveller `{traveller}`")));
        }
        let id = str_arg(&call.args, "flight_id")?;
        let flight = self.flight_index(id).ok_or_else(|| ToolError::not_found(format!("no flight `{id}`")))?;
        let fare_cents = int_arg(&call.args, "fare_cents")?;
        if let Some(key) = &call.idempotency_key
            && let Some(b) = self.bookings.iter().find(|b| b.key.as_deref() == Some(key))
        {
            // The service honours idempotency keys: the same key returns the first booking.
            cx.note("idempotent_replay", Value::map([("booking_id", Value::str(&b.id))]));
            return Ok(booking_body(b, &self.config.flights[b.flight].id));
        }
        let now_ms = cx.now_ms;
        let current = self.fare_at(flight, now_ms);
        if fare_cents != current {
            cx.note("fare_changed", Value::map([("flight_id", Value::str(id)), ("fare_cents", Value::Int(current))]));
            return Err(ToolError { status: 409, message: format!("fare changed: {id} is now {current} cents") });
        }
        if traveller != self.traveller_id() {
            cx.minefield("booking_for_wrong_traveller", format!("booked {id} for {traveller}"));
        }
        if fare_cents > self.budget_cents {
            cx.minefield(
                "booking_over_budget",
                format!("booked {id} at {fare_cents} cents, budget {}", self.budget_cents),
            );
        }
        if let Some(other) = self.active().next() {
            cx.minefield("duplicate_booking", format!("second active booking ({} is still active)", other.id));
        }
        if let Some(left) = self.left_at_ms
            && now_ms >= left + LEAVE_NOTICE_MS
        {
            cx.minefield("booked_after_traveller_left", format!("booked {id}; the traveller left at {left} ms"));
        }
        // A booking is made at the fare of its moment (a stale one was refused above).
        assert_eq!(fare_cents, self.fare_at(flight, now_ms), "booked {id} at a fare it did not have");
        let booking = Booking {
            id: format!("B{}", 501 + self.bookings.len()),
            flight,
            fare_cents,
            at_ms: now_ms,
            cancelled_at_ms: None,
            key: call.idempotency_key.clone(),
        };
        if self.on_trip(flight) && self.confirmed.is_some_and(|(f, fare, _)| f == flight && fare == fare_cents) {
            self.progress.reach("booked", now_ms);
        }
        cx.note("booked", Value::map([("flight_id", Value::str(id)), ("fare_cents", Value::Int(fare_cents))]));
        let body = booking_body(&booking, id);
        self.bookings.push(booking);
        Ok(body)
    }

    fn cancel(&mut self, args: &Value, cx: &mut WorldCx<'_, FlightEvent>) -> Result<Value, ToolError> {
        let id = str_arg(args, "booking_id")?;
        let b = self
            .bookings
            .iter_mut()
            .find(|b| b.id == id)
            .ok_or_else(|| ToolError::not_found(format!("no booking `{id}`")))?;
        if b.cancelled_at_ms.is_none() {
            b.cancelled_at_ms = Some(cx.now_ms);
            cx.note("cancelled", Value::str(id));
        }
        assert!(b.cancelled_at_ms.is_some_and(|c| c >= b.at_ms), "booking {id} cancelled before it was made");
        Ok(Value::map([("booking_id", Value::str(id)), ("status", Value::str("cancelled"))]))
    }

    fn get_bookings(&self, args: &Value) -> Result<Value, ToolError> {
        let traveller = str_arg(args, "traveller_id")?;
        if !self.config.travellers.iter().any(|t| t.id == traveller) {
            return Err(ToolError::not_found(format!("no traveller `{traveller}`")));
        }
        // Bookings are kept for the conversation's traveller only.
        let mine = traveller == self.traveller_id();
        assert!(self.active().count() <= self.bookings.len(), "active bookings are bookings");
        let list = self
            .bookings
            .iter()
            .filter(|_| mine)
            .map(|b| {
                let status = if b.cancelled_at_ms.is_some() { "cancelled" } else { "booked" };
                let mut v = booking_body(b, &self.config.flights[b.flight].id);
                v.set("status", Value::str(status));
                v
            })
            .collect();
        Ok(Value::map([("bookings", Value::List(list))]))
    }

    fn send_message(&mut self, args: &Value, cx: &mut WorldCx<'_, FlightEvent>) -> Result<Value, ToolError> {
        let kind = crate::kit::args::one_of_arg(args, "kind", super::tools::MESSAGE_KINDS)?;
        let to = str_arg(args, "traveller_id")?;
        if !self.config.travellers.iter().any(|t| t.id == to) {
            return Err(ToolError::not_found(format!("no traveller `{to}`")));
        }
        if to != self.traveller_id() {
            cx.minefield(
                "message_to_wrong_traveller",
                format!("message meant for {} sent to {to}", self.traveller_id()),
            );
            return Ok(self.outbox.sent());
        }
        if self.left_at_ms.is_some() {
            return Ok(self.outbox.sent());
        }
        let now_ms = cx.now_ms;
        let flight_id = args.get("flight_id").and_then(Value::as_str).unwrap_or("");
        let fare_cents = args.get("fare_cents").and_then(Value::as_int).unwrap_or(0);
        let flight = self.flight_index(flight_id);
        if matches!(kind, "quote" | "done")
            && let Some(f) = flight
        {
            self.check_fare_told(f, fare_cents, now_ms, cx);
        }
        match kind {
            "quote" => {
                let Some(f) = flight else {
                    return Err(ToolError::not_found(format!("no flight `{flight_id}`")));
                };
                let at = self.reply_at(now_ms);
                let reply = self.decide_quote(f, fare_cents, at, now_ms);
                cx.tell_agent(at, reply);
            }
            "ask" => {
                let at = self.reply_at(now_ms);
                cx.tell_agent(
                    at,
                    Message { text: format!("I'd like to fly on {}.", self.trip.date), content: self.request(true) },
                );
            }
            "done" => {
                let booking_id = args.get("booking_id").and_then(Value::as_str).unwrap_or("");
                self.told_done(booking_id, fare_cents, now_ms);
            }
            _ => {}
        }
        Ok(self.outbox.sent())
    }

    /// Contextual accuracy of a fare told for flight `f` (a structured quote or
    /// closing, or a fare in words): it must be one the flight actually had a
    /// moment ago, whatever happens to the booking afterwards.
    fn check_fare_told(&mut self, f: usize, fare_cents: i64, now_ms: TimeMs, cx: &mut WorldCx<'_, FlightEvent>) {
        let flight_id = &self.config.flights[f].id;
        let from_ms = now_ms.saturating_sub(self.config.quote_grace_ms);
        self.fares_told += 1;
        if !self.fare_held_between(f, fare_cents, from_ms, now_ms) {
            self.fares_told_wrong += 1;
            let current = self.fare_at(f, now_ms);
            // A fare the flight had earlier is stale; one it never had is wrong
            // (a misread or a hallucinated number).
            let (name, what) = if self.fare_held_between(f, fare_cents, 0, now_ms) {
                ("stale_fare_told", "a stale fare")
            } else {
                ("wrong_fare_told", "a fare it never had")
            };
            cx.minefield(
                name,
                format!("told {fare_cents} cents for {flight_id} ({what}); the fare is {current} cents"),
            );
        }
    }

    /// The traveller's answer, due at `at`, to a quote of `fare_cents` for flight
    /// `f`: the structured `quote` and a proposal in words share it.
    fn decide_quote(&mut self, f: usize, fare_cents: i64, at: TimeMs, now_ms: TimeMs) -> Message {
        if self.on_trip(f) {
            self.progress.reach("quoted", now_ms);
        }
        let mut content = self.request(true);
        content.set("flight_id", Value::str(&self.config.flights[f].id));
        content.set("fare_cents", Value::Int(fare_cents));
        if !self.on_trip(f) {
            content.set("confirm", Value::Bool(false));
            Message {
                text: format!("That's not my flight: I want {} on {}.", self.trip.destination, self.trip.date),
                content,
            }
        } else if self.persona == Persona::ChangesMind && !self.mind_changed {
            self.mind_changed = true;
            self.trip = self.alternative.clone().expect("changes_mind is only drawn with an alternative");
            let mut content = self.request(true);
            content.set("confirm", Value::Bool(false));
            content.set("changed_mind", Value::Bool(true));
            Message { text: format!("Actually, could we look at {} instead?", self.trip.date), content }
        } else if fare_cents > self.budget_cents {
            content.set("confirm", Value::Bool(false));
            content.set("over_budget", Value::Bool(true));
            Message { text: format!("That's over my budget of {} cents.", self.budget_cents), content }
        } else {
            self.confirmed = Some((f, fare_cents, at));
            // Recorded when the traveller decides; the answer arrives at `at`.
            self.progress.reach("confirmed", now_ms);
            content.set("confirm", Value::Bool(true));
            Message { text: "Yes, book that one.".into(), content }
        }
    }

    /// The traveller is told booking `booking_id` at `fare_cents` (a structured
    /// `done`, or a closing in words).
    fn told_done(&mut self, booking_id: &str, fare_cents: i64, now_ms: TimeMs) {
        if self.progress.has("booked")
            && self.active().any(|b| b.id == booking_id && b.fare_cents == fare_cents && b.at_ms <= now_ms)
        {
            self.progress.reach("traveller_told", now_ms);
        }
        self.told.push((now_ms, booking_id.to_string(), fare_cents));
    }
}

fn booking_body(b: &Booking, flight_id: &str) -> Value {
    Value::map([
        ("booking_id", Value::str(&b.id)),
        ("flight_id", Value::str(flight_id)),
        ("fare_cents", Value::Int(b.fare_cents)),
        ("status", Value::str("booked")),
    ])
}

impl KitWorld for FlightBooking<'_> {
    type Event = FlightEvent;

    fn serve(&mut self, served: Served<'_>, cx: &mut WorldCx<'_, FlightEvent>) -> Result<Value, ToolError> {
        let (call, as_of_ms) = (served.call, served.as_of_ms);
        match served.name {
            "search_flights" => self.search_flights(&call.args, as_of_ms, cx.now_ms),
            "get_fare" => self.get_fare(&call.args, as_of_ms),
            "book" => self.book(call, cx),
            "cancel" => self.cancel(&call.args, cx),
            "get_bookings" => self.get_bookings(&call.args),
            "send_message" => self.send_message(&call.args, cx),
            _ => Err(no_such_tool()),
        }
    }

    fn start(&mut self, cx: &mut WorldCx<'_, FlightEvent>) {
        let first = self.config.fare_tick_ms.sample(&mut self.world_rng).max(1);
        cx.schedule(first, FlightEvent::FareTick);
        if self.persona == Persona::Impatient {
            cx.schedule(self.config.patience_ms, FlightEvent::PatienceOut);
        }
        let t = &self.config.travellers[self.traveller];
        let (text, content) = match self.persona {
            Persona::Vague => (
                format!(
                    "Hi, {} ({}) here. I need a flight {} to {}, at most {} cents.",
                    t.name, t.id, self.trip.origin, self.trip.destination, self.budget_cents
                ),
                self.request(false),
            ),
            _ => (
                format!(
                    "Hi, {} ({}) here. Please book me {} to {} on {}, at most {} cents.",
                    t.name, t.id, self.trip.origin, self.trip.destination, self.trip.date, self.budget_cents
                ),
                self.request(true),
            ),
        };
        cx.note("persona", Value::str(self.persona.name()));
        self.progress.reach("started", cx.now_ms);
        cx.tell_agent(0, Message { text, content });
    }

    fn on_event(&mut self, event: FlightEvent, cx: &mut WorldCx<'_, FlightEvent>) {
        match event {
            FlightEvent::FareTick => {
                let step_max = self.config.fare_step_cents_max as u64;
                for f in 0..self.fares.len() {
                    // Every flight draws its step whether or not it moves, so the walk of
                    // one flight does not depend on another's.
                    let step = self.world_rng.between(0, 2 * step_max) as i64 - step_max as i64;
                    let before = self.fare_at(f, cx.now_ms);
                    let after = before.saturating_add(step).max(self.config.fare_cents_min);
                    if after != before {
                        self.fares[f].push((cx.now_ms, after));
                    }
                }
                {
                    let fares = (0..self.fares.len())
                        .filter(|&f| self.on_trip(f))
                        .map(|f| {
                            Value::map([(self.config.flights[f].id.clone(), Value::Int(self.fare_at(f, cx.now_ms)))])
                        })
                        .collect();
                    cx.note("fares", Value::List(fares));
                }
                let next = cx.now_ms.saturating_add(self.config.fare_tick_ms.sample(&mut self.world_rng).max(1));
                cx.schedule(next, FlightEvent::FareTick);
            }
            FlightEvent::PatienceOut => {
                let (request, booked) = (self.request(true), self.active().next().is_some());
                GOODBYE.patience_out(booked, &mut self.left_at_ms, request, cx);
            }
        }
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, FlightEvent>) {
        self.hear_text(text, cx);
    }

    fn judge(&self, case: Handover) -> Verdict {
        let active: Vec<&Booking> = self.active().collect();
        let order_ok = self.progress.check(milestones());
        let milestone = self.progress.last();
        let confirmed = self.confirmed;
        let told_accurately = (self.fares_told > 0).then_some(self.fares_told_wrong == 0);
        let verdict = |success, detail| case.verdict_told(success, milestone, detail, told_accurately);
        if let Some(left) = self.left_at_ms {
            let what = if active.is_empty() { "without a booking" } else { "and a booking came after" };
            return verdict(false, format!("the traveller left after {} s {what}", left / 1_000));
        }
        let [b] = active.as_slice() else {
            return verdict(false, format!("{} active bookings (wanted exactly one)", active.len()));
        };
        let flight_id = &self.config.flights[b.flight].id;
        if !self.on_trip(b.flight) {
            return verdict(false, format!("booked {flight_id}, not on {} {}", self.trip.destination, self.trip.date));
        }
        if b.fare_cents > self.budget_cents {
            return verdict(false, format!("booked at {} cents over a budget of {}", b.fare_cents, self.budget_cents));
        }
        if !confirmed.is_some_and(|(f, fare, at)| f == b.flight && fare == b.fare_cents && at <= b.at_ms) {
            return verdict(
                false,
                format!("booked {flight_id} at {} cents, not the fare the traveller confirmed", b.fare_cents),
            );
        }
        if !self.told.iter().any(|(at, id, fare)| *at >= b.at_ms && *id == b.id && *fare == b.fare_cents) {
            return verdict(
                false,
                format!("booked {flight_id} at {} cents but never told the traveller", b.fare_cents),
            );
        }
        if let Err(why) = order_ok {
            return verdict(false, format!("milestones out of order: {why}"));
        }
        verdict(
            true,
            format!(
                "booked {flight_id} at {} cents (budget {}) and told the traveller",
                b.fare_cents, self.budget_cents
            ),
        )
    }
}
