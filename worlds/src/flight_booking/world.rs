//! The flight_booking world: fares on a random walk, bookings, and a traveller who
//! wants a flight within a budget. A run of many sessions shares the flights,
//! fares, seats and bookings; each session has a traveller of its own
//! ([`Passenger`]), and the seats are raced for (`seats.rs`).

use std::sync::LazyLock;

use agentsim_engine::{
    Message, MilestoneDag, SessionId, Stream, StreamSource, TimeMs, ToolCall, ToolError, Value, Verdict, WorldCx,
};

use super::config::FlightBookingConfig;
use crate::kit::args::{int_arg, str_arg};
use crate::kit::goodbye::Goodbye;
pub use crate::kit::persona::Persona;
use crate::kit::world::{Handover, KitWorld, Served, no_such_tool};

/// How the impatient user leaves.
const GOODBYE: Goodbye =
    Goodbye { note: "traveller_left", text: "This is taking too long. Forget it, I'll book myself." };

#[path = "hear.rs"]
mod hear;
#[path = "passenger.rs"]
mod passenger;
#[path = "seats.rs"]
mod seats;

use passenger::Passenger;

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
    /// The session whose agent made it.
    session: SessionId,
    /// Other sessions whose agents the service answered with it (the same
    /// idempotency key again): it is their booking too.
    served: Vec<SessionId>,
    id: String,
    flight: usize,
    fare_cents: i64,
    at_ms: TimeMs,
    cancelled_at_ms: Option<TimeMs>,
    key: Option<String>,
}

impl Trip {
    /// Whether `flight` flies this trip.
    fn has(&self, flight: &super::config::Flight) -> bool {
        flight.origin == self.origin && flight.destination == self.destination && flight.date == self.date
    }
}

/// The world's own events.
pub enum FlightEvent {
    /// Every fare takes one step of its random walk.
    FareTick,
    /// An impatient traveller's patience runs out.
    PatienceOut {
        /// Whose.
        session: SessionId,
    },
}

/// One trajectory's flight_booking: the flights, fares and bookings every
/// session shares, and a traveller per session.
pub struct FlightBooking<'c> {
    config: &'c FlightBookingConfig,
    world_rng: Stream,
    /// The run's streams, for the travellers of sessions that arrive later.
    streams: StreamSource,
    /// Per flight: (time, fare) changes, oldest first.
    fares: Vec<Vec<(TimeMs, i64)>>,
    bookings: Vec<Booking>,
    /// The traveller of the session being handled.
    user: Passenger,
    /// The session `user` belongs to.
    current: SessionId,
    /// The other sessions' travellers, by session (`None` at `current`).
    parked: Vec<Option<Passenger>>,
}

impl Booking {
    /// Whether `session`'s agent made it or was answered with it.
    fn serves(&self, session: SessionId) -> bool {
        self.session == session || self.served.contains(&session)
    }
}

impl<'c> FlightBooking<'c> {
    /// A fresh world for one seed: session 0's traveller, trip and persona
    /// come from its user's stream, the fare walk from the world's.
    pub fn new(config: &'c FlightBookingConfig, streams: &StreamSource) -> Self {
        let user = Passenger::draw(config, streams, 0, |f| config.flights[f].fare_cents);
        Self {
            config,
            world_rng: streams.stream("world"),
            streams: streams.clone(),
            fares: config.flights.iter().map(|f| vec![(0, f.fare_cents)]).collect(),
            bookings: Vec::new(),
            user,
            current: 0,
            parked: vec![None],
        }
    }

    /// Makes `session`'s traveller the one handled (its calls, words and events).
    fn switch(&mut self, session: SessionId) {
        if session == self.current {
            return;
        }
        let incoming = self.parked[session as usize].take().expect("a session's traveller waits while another acts");
        let outgoing = std::mem::replace(&mut self.user, incoming);
        self.parked[self.current as usize] = Some(outgoing);
        self.current = session;
    }

    /// The traveller of `session`.
    fn passenger_of(&self, session: SessionId) -> &Passenger {
        if session == self.current {
            &self.user
        } else {
            self.parked[session as usize].as_ref().expect("every session that arrived has a traveller")
        }
    }

    /// The persona drawn for this seed.
    pub fn persona(&self) -> Persona {
        self.user.persona
    }

    /// The traveller's budget in cents.
    pub fn budget_cents(&self) -> i64 {
        self.user.budget_cents
    }

    fn traveller_id(&self) -> &str {
        &self.config.travellers[self.user.traveller].id
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
        self.user.trip.has(&self.config.flights[flight])
    }

    /// The active bookings of the session being handled (in a run of one
    /// session, every active booking).
    fn active(&self) -> impl Iterator<Item = &Booking> {
        self.active_of(self.current)
    }

    /// The active bookings of `session`.
    fn active_of(&self, session: SessionId) -> impl Iterator<Item = &Booking> {
        self.bookings.iter().filter(move |b| b.cancelled_at_ms.is_none() && b.serves(session))
    }

    fn reply_at(&mut self, now_ms: TimeMs) -> TimeMs {
        now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user.user_rng))
    }

    fn request(&self, with_date: bool) -> Value {
        let mut v = Value::map([
            ("traveller_id", Value::str(self.traveller_id())),
            ("origin", Value::str(&self.user.trip.origin)),
            ("destination", Value::str(&self.user.trip.destination)),
            ("budget_cents", Value::Int(self.user.budget_cents)),
        ]);
        if with_date {
            v.set("date", Value::str(&self.user.trip.date));
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
            self.user.progress.reach("searched", now_ms);
        }
        let mut flights = Vec::with_capacity(found.len());
        for &i in &found {
            let f = &self.config.flights[i];
            let mut flight = Value::map([
                ("flight_id", Value::str(&f.id)),
                ("date", Value::str(&f.date)),
                ("fare_cents", Value::Int(self.fare_at(i, as_of_ms))),
            ]);
            self.show_seats(i, as_of_ms, &mut flight);
            flights.push(flight);
        }
        Ok(Value::map([("flights", Value::List(flights))]))
    }

    fn get_fare(&mut self, args: &Value, as_of_ms: TimeMs) -> Result<Value, ToolError> {
        let id = str_arg(args, "flight_id")?;
        let i = self.flight_index(id).ok_or_else(|| ToolError::not_found(format!("no flight `{id}`")))?;
        assert_eq!(self.fares.len(), self.config.flights.len(), "every flight has its fare history");
        let mut body = Value::map([
            ("flight_id", Value::str(id)),
            ("date", Value::str(&self.config.flights[i].date)),
            ("fare_cents", Value::Int(self.fare_at(i, as_of_ms))),
        ]);
        self.show_seats(i, as_of_ms, &mut body);
        Ok(body)
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
            && let Some(b) = self.bookings.iter_mut().find(|b| b.key.as_deref() == Some(key))
        {
            // The service honours idempotency keys: the same key returns the
            // first booking, to whichever session sends it (it is theirs too).
            cx.note("idempotent_replay", Value::map([("booking_id", Value::str(&b.id))]));
            let session = self.current;
            let newly_served = !b.serves(session);
            if newly_served {
                b.served.push(session);
            }
            let (flight, fare_cents) = (b.flight, b.fare_cents);
            if newly_served
                && self.on_trip(flight)
                && self.user.confirmed.is_some_and(|(f, fare, _)| f == flight && fare == fare_cents)
            {
                self.user.progress.reach("booked", cx.now_ms);
            }
            let b = self.bookings.iter().find(|b| b.key.as_deref() == Some(key)).expect("found above");
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
        if fare_cents > self.user.budget_cents {
            cx.minefield(
                "booking_over_budget",
                format!("booked {id} at {fare_cents} cents, budget {}", self.user.budget_cents),
            );
        }
        if let Some(other) = self.active().next() {
            cx.minefield("duplicate_booking", format!("second active booking ({} is still active)", other.id));
        }
        if let Some(left) = self.user.left_at_ms
            && now_ms >= left + LEAVE_NOTICE_MS
        {
            cx.minefield("booked_after_traveller_left", format!("booked {id}; the traveller left at {left} ms"));
        }
        // A booking is made at the fare of its moment (a stale one was refused above).
        assert_eq!(fare_cents, self.fare_at(flight, now_ms), "booked {id} at a fare it did not have");
        self.judge_seats(flight, cx);
        let booking = Booking {
            session: self.current,
            served: Vec::new(),
            id: format!("B{}", 501 + self.bookings.len()),
            flight,
            fare_cents,
            at_ms: now_ms,
            cancelled_at_ms: None,
            key: call.idempotency_key.clone(),
        };
        if self.on_trip(flight) && self.user.confirmed.is_some_and(|(f, fare, _)| f == flight && fare == fare_cents) {
            self.user.progress.reach("booked", now_ms);
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
        // Bookings are kept for the conversation's traveller only: those its
        // agent made (in a run of one session, every booking).
        let mine = traveller == self.traveller_id();
        let session = self.current;
        assert!(self.active().count() <= self.bookings.len(), "active bookings are bookings");
        let list = self
            .bookings
            .iter()
            .filter(|b| mine && b.serves(session))
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
            return Ok(self.user.outbox.sent());
        }
        if self.user.left_at_ms.is_some() {
            return Ok(self.user.outbox.sent());
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
                    Message {
                        text: format!("I'd like to fly on {}.", self.user.trip.date),
                        content: self.request(true),
                    },
                );
            }
            "done" => {
                let booking_id = args.get("booking_id").and_then(Value::as_str).unwrap_or("");
                self.told_done(booking_id, fare_cents, now_ms);
            }
            _ => {}
        }
        Ok(self.user.outbox.sent())
    }

    /// Contextual accuracy of a fare told for flight `f` (a structured quote or
    /// closing, or a fare in words): it must be one the flight actually had a
    /// moment ago, whatever happens to the booking afterwards.
    fn check_fare_told(&mut self, f: usize, fare_cents: i64, now_ms: TimeMs, cx: &mut WorldCx<'_, FlightEvent>) {
        let flight_id = &self.config.flights[f].id;
        let from_ms = now_ms.saturating_sub(self.config.quote_grace_ms);
        self.user.fares_told += 1;
        if !self.fare_held_between(f, fare_cents, from_ms, now_ms) {
            self.user.fares_told_wrong += 1;
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
            self.user.progress.reach("quoted", now_ms);
        }
        let mut content = self.request(true);
        content.set("flight_id", Value::str(&self.config.flights[f].id));
        content.set("fare_cents", Value::Int(fare_cents));
        if !self.on_trip(f) {
            content.set("confirm", Value::Bool(false));
            Message {
                text: format!(
                    "That's not my flight: I want {} on {}.",
                    self.user.trip.destination, self.user.trip.date
                ),
                content,
            }
        } else if self.user.persona == Persona::ChangesMind && !self.user.mind_changed {
            self.user.mind_changed = true;
            self.user.trip = self.user.alternative.clone().expect("changes_mind is only drawn with an alternative");
            let mut content = self.request(true);
            content.set("confirm", Value::Bool(false));
            content.set("changed_mind", Value::Bool(true));
            Message { text: format!("Actually, could we look at {} instead?", self.user.trip.date), content }
        } else if fare_cents > self.user.budget_cents {
            content.set("confirm", Value::Bool(false));
            content.set("over_budget", Value::Bool(true));
            Message { text: format!("That's over my budget of {} cents.", self.user.budget_cents), content }
        } else {
            self.user.confirmed = Some((f, fare_cents, at));
            // Recorded when the traveller decides; the answer arrives at `at`.
            self.user.progress.reach("confirmed", now_ms);
            content.set("confirm", Value::Bool(true));
            Message { text: "Yes, book that one.".into(), content }
        }
    }

    /// The traveller is told booking `booking_id` at `fare_cents` (a structured
    /// `done`, or a closing in words).
    fn told_done(&mut self, booking_id: &str, fare_cents: i64, now_ms: TimeMs) {
        if self.user.progress.has("booked")
            && self.active().any(|b| b.id == booking_id && b.fare_cents == fare_cents && b.at_ms <= now_ms)
        {
            self.user.progress.reach("traveller_told", now_ms);
        }
        self.user.told.push((now_ms, booking_id.to_string(), fare_cents));
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

    /// The traveller's persona, trip and budget, and every fact it holds.
    fn user_instructions(&self) -> Option<String> {
        Some(self.user.instructions(self.config))
    }

    const SESSIONS_MAX: u32 = agentsim_engine::sessions::SESSIONS_MAX;

    fn session_instructions(&self, session: SessionId) -> Option<String> {
        Some(self.passenger_of(session).instructions(self.config))
    }

    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, FlightEvent>) {
        assert_eq!(session as usize, self.parked.len(), "sessions arrive in order");
        let now_ms = cx.now_ms;
        let passenger = Passenger::draw(self.config, &self.streams, session, |f| self.fare_at(f, now_ms));
        self.parked.push(Some(passenger));
        self.switch(session);
        self.open(cx);
    }

    fn session_ended(&mut self, session: SessionId) {
        // What only the conversation needed goes; the judge reads the rest.
        let user = if session == self.current {
            &mut self.user
        } else {
            self.parked[session as usize].as_mut().expect("an ended session's traveller is kept")
        };
        user.voice = None;
        user.seats_read = Vec::new();
    }

    fn judge_session(&self, session: SessionId, case: Handover) -> Verdict {
        self.judge_passenger(self.passenger_of(session), session, case)
    }

    fn serve(&mut self, served: Served<'_>, cx: &mut WorldCx<'_, FlightEvent>) -> Result<Value, ToolError> {
        self.switch(cx.session().unwrap_or(0));
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
        self.open(cx);
    }

    fn on_event(&mut self, event: FlightEvent, cx: &mut WorldCx<'_, FlightEvent>) {
        match event {
            FlightEvent::FareTick => self.fare_tick(cx),
            FlightEvent::PatienceOut { session } => {
                self.switch(session);
                cx.act_for(session);
                let (request, booked) = (self.request(true), self.active().next().is_some());
                GOODBYE.patience_out(booked, &mut self.user.left_at_ms, request, cx);
            }
        }
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, FlightEvent>) {
        self.switch(cx.session().unwrap_or(0));
        self.hear_text(text, cx);
    }

    fn judge(&self, case: Handover) -> Verdict {
        self.judge_passenger(&self.user, self.current, case)
    }
}

impl FlightBooking<'_> {
    /// The traveller of the session being handled arrives: an impatient one
    /// starts its clock, and it says what it wants.
    fn open(&mut self, cx: &mut WorldCx<'_, FlightEvent>) {
        if self.user.persona == Persona::Impatient {
            let at = cx.now_ms.saturating_add(self.config.patience_ms);
            self.user.patience_at_ms = Some(at);
            cx.schedule(at, FlightEvent::PatienceOut { session: self.current });
        }
        let t = &self.config.travellers[self.user.traveller];
        let trip = &self.user.trip;
        let budget = self.user.budget_cents;
        let (text, content) = match self.user.persona {
            Persona::Vague => (
                format!(
                    "Hi, {} ({}) here. I need a flight {} to {}, at most {budget} cents.",
                    t.name, t.id, trip.origin, trip.destination
                ),
                self.request(false),
            ),
            _ => (
                format!(
                    "Hi, {} ({}) here. Please book me {} to {} on {}, at most {budget} cents.",
                    t.name, t.id, trip.origin, trip.destination, trip.date
                ),
                self.request(true),
            ),
        };
        cx.note("persona", Value::str(self.user.persona.name()));
        self.user.progress.reach("started", cx.now_ms);
        cx.tell_agent(cx.now_ms, Message { text, content });
    }

    /// Every fare takes one step of its random walk; the next tick is
    /// scheduled. The note lists the fares of the traveller's trip; once a
    /// second session has arrived, of every flight (there is no one
    /// traveller's trip then).
    fn fare_tick(&mut self, cx: &mut WorldCx<'_, FlightEvent>) {
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
        let many = self.parked.len() > 1;
        let fares = (0..self.fares.len())
            .filter(|&f| many || self.on_trip(f))
            .map(|f| Value::map([(self.config.flights[f].id.clone(), Value::Int(self.fare_at(f, cx.now_ms)))]))
            .collect();
        cx.note("fares", Value::List(fares));
        let next = cx.now_ms.saturating_add(self.config.fare_tick_ms.sample(&mut self.world_rng).max(1));
        cx.schedule(next, FlightEvent::FareTick);
    }

    /// Judges one session's task: its traveller `user`, its bookings.
    fn judge_passenger(&self, user: &Passenger, session: SessionId, case: Handover) -> Verdict {
        let active: Vec<&Booking> = self.active_of(session).collect();
        let order_ok = user.progress.check(milestones());
        let milestone = user.progress.last();
        let confirmed = user.confirmed;
        let told_accurately = (user.fares_told > 0).then_some(user.fares_told_wrong == 0);
        let verdict = |success, detail| case.verdict_told(success, milestone, detail, told_accurately);
        if let Some(left) = user.left_at_ms {
            let what = if active.is_empty() { "without a booking" } else { "and a booking came after" };
            return verdict(false, format!("the traveller left after {} s {what}", left / 1_000));
        }
        let [b] = active.as_slice() else {
            return verdict(false, format!("{} active bookings (wanted exactly one)", active.len()));
        };
        let flight_id = &self.config.flights[b.flight].id;
        if !user.trip.has(&self.config.flights[b.flight]) {
            return verdict(false, format!("booked {flight_id}, not on {} {}", user.trip.destination, user.trip.date));
        }
        if b.fare_cents > user.budget_cents {
            return verdict(false, format!("booked at {} cents over a budget of {}", b.fare_cents, user.budget_cents));
        }
        if !confirmed.is_some_and(|(f, fare, at)| f == b.flight && fare == b.fare_cents && at <= b.at_ms) {
            return verdict(
                false,
                format!("booked {flight_id} at {} cents, not the fare the traveller confirmed", b.fare_cents),
            );
        }
        if !user.told.iter().any(|(at, id, fare)| *at >= b.at_ms && *id == b.id && *fare == b.fare_cents) {
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
                b.fare_cents, user.budget_cents
            ),
        )
    }
}
