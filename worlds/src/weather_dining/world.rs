//! The weather_dining world: weather that changes per city, restaurants with
//! indoor and outdoor tables, and a customer who wants a table tonight. A run
//! of many sessions shares the weather, the restaurants and the reservations;
//! each session has a diner of its own ([`Diner`]), and counted tables are
//! raced for (`tables.rs`).

use std::sync::LazyLock;

use agentsim_engine::{
    Message, MilestoneDag, SessionId, Stream, StreamSource, TimeMs, ToolCall, ToolError, Value, Verdict, WorldCx,
};

use super::config::WeatherDiningConfig;
use crate::kit::args::{int_arg, str_arg};
use crate::kit::goodbye::Goodbye;
pub use crate::kit::persona::Persona;
use crate::kit::seats::Seats;
use crate::kit::world::{Handover, KitWorld, Served, no_such_tool};

/// How the impatient user leaves.
const GOODBYE: Goodbye = Goodbye { note: "customer_left", text: "Never mind, we'll just walk in somewhere." };

#[path = "diner.rs"]
mod diner;
#[path = "hear.rs"]
mod hear;
#[path = "tables.rs"]
mod tables;

use diner::{Diner, Record};

/// A reservation this long after the customer left is a minefield (the agent had
/// time to read the goodbye).
pub const LEAVE_NOTICE_MS: TimeMs = 10_000;

/// Seating matches the weather if the weather was that way at some time in the
/// last this many ms before the reservation: the time it takes to read the
/// weather, find a table and book it.
pub const WEATHER_GRACE_MS: TimeMs = 120_000;

/// The task's milestones.
/// (Built once per process: the judge of every trajectory reads it.)
pub fn milestones() -> &'static MilestoneDag {
    static MILESTONES: LazyLock<MilestoneDag> = LazyLock::new(|| {
        MilestoneDag::chain(&["started", "weather_known", "restaurants_found", "reserved", "customer_told"])
            .expect("the weather_dining milestones form a DAG")
    });
    &MILESTONES
}

struct Reservation {
    /// The session whose agent made it.
    session: SessionId,
    /// Other sessions whose agents the service answered with it (the same
    /// idempotency key again): it is their reservation too.
    served: Vec<SessionId>,
    id: String,
    restaurant: usize,
    party_size: i64,
    outdoor: bool,
    at_ms: TimeMs,
    key: Option<String>,
}

impl Reservation {
    /// Whether `session`'s agent made it or was answered with it.
    fn serves(&self, session: SessionId) -> bool {
        self.session == session || self.served.contains(&session)
    }
}

/// The world's own events.
pub enum DiningEvent {
    /// The weather of a city may change.
    Weather {
        /// City index.
        city: usize,
    },
    /// An impatient customer's patience runs out.
    PatienceOut {
        /// Whose.
        session: SessionId,
    },
}

/// One trajectory's weather_dining: the cities' weather, the restaurants and
/// the reservations every session shares, and a diner per session.
pub struct WeatherDining<'c> {
    config: &'c WeatherDiningConfig,
    world_rng: Stream,
    /// The run's streams, for the diners of sessions that arrive later.
    streams: StreamSource,
    cities: Vec<String>,
    /// Per city: (time, raining) changes, oldest first.
    rain: Vec<Vec<(TimeMs, bool)>>,
    reservations: Vec<Reservation>,
    /// Per restaurant, per seating (`[indoor, outdoor]`): the places in
    /// `reservations` of the reservations it holds, in the order made (so
    /// by time), for the tables counted (`tables.rs`).
    seated: Vec<[Vec<u32>; 2]>,
    /// The diner of the session being handled.
    user: Box<Diner>,
    /// The other sessions' diners, and the records of those that ended.
    seats: Seats<Box<Diner>>,
}

impl<'c> WeatherDining<'c> {
    /// A fresh world for one seed: session 0's customer, city, party and
    /// persona come from its user's stream; the weather from the world's.
    pub fn new(config: &'c WeatherDiningConfig, streams: &StreamSource) -> Self {
        let mut world_rng = streams.stream("world");
        // The cities in order of first appearance (a set for the look-up: a long
        // list of restaurants stays O(n log n)).
        let mut cities: Vec<String> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for r in &config.restaurants {
            if seen.insert(r.city.as_str()) {
                cities.push(r.city.clone());
            }
        }
        let rain = cities.iter().map(|_| vec![(0, world_rng.chance(config.rain_probability.get()))]).collect();
        let user = Diner::draw(config, streams, 0, cities.len());
        Self {
            config,
            world_rng,
            streams: streams.clone(),
            cities,
            rain,
            reservations: Vec::new(),
            seated: config.restaurants.iter().map(|_| [Vec::new(), Vec::new()]).collect(),
            user: Box::new(user),
            seats: Seats::new(),
        }
    }

    /// Makes `session`'s diner the one handled (its calls, words and events).
    fn switch(&mut self, session: SessionId) {
        self.seats.switch(session, &mut self.user);
    }

    /// What the judge reads of `session`'s diner.
    fn record_of(&self, session: SessionId) -> &Record {
        self.seats.record_of(session, &self.user)
    }

    /// The persona drawn for this seed.
    pub fn persona(&self) -> Persona {
        self.user.persona
    }

    fn customer_id(&self) -> &str {
        &self.config.customers[self.user.record.customer].id
    }

    /// The reservations that serve `record`'s session, oldest first.
    fn reservations_of<'a>(&'a self, record: &'a Record) -> impl DoubleEndedIterator<Item = &'a Reservation> + 'a {
        record.reservations.iter().map(|&i| &self.reservations[i as usize])
    }

    /// The reservations that serve the session being handled (in a run of
    /// one session, every reservation).
    fn mine(&self) -> impl DoubleEndedIterator<Item = &Reservation> {
        self.reservations_of(&self.user.record)
    }

    fn raining_at(&self, city: usize, at_ms: TimeMs) -> bool {
        self.rain[city].iter().rev().find(|(t, _)| *t <= at_ms).is_some_and(|(_, r)| *r)
    }

    /// Whether the weather of `city` was `raining` at some time in `[from_ms, to_ms]`.
    fn weather_held_between(&self, city: usize, raining: bool, from_ms: TimeMs, to_ms: TimeMs) -> bool {
        self.raining_at(city, from_ms) == raining
            || self.rain[city].iter().any(|(t, r)| *t >= from_ms && *t <= to_ms && *r == raining)
    }

    fn city_index(&self, name: &str) -> Option<usize> {
        self.cities.iter().position(|c| c == name)
    }

    fn request(&self, with_party: bool) -> Value {
        self.request_of(&self.user.record, with_party)
    }

    /// The request of `record`'s diner, as its messages carry it.
    fn request_of(&self, record: &Record, with_party: bool) -> Value {
        let mut v = Value::map([
            ("customer_id", Value::str(&self.config.customers[record.customer].id)),
            ("city", Value::str(&self.cities[record.city])),
            ("seating", Value::str("outdoor if dry")),
        ]);
        if with_party {
            v.set("party_size", Value::Int(record.party_size));
        }
        v
    }

    fn weather(&mut self, args: &Value, as_of_ms: TimeMs, now_ms: TimeMs) -> Result<Value, ToolError> {
        let name = str_arg(args, "city")?;
        let city = self.city_index(name).ok_or_else(|| ToolError::not_found(format!("no city `{name}`")))?;
        assert!(as_of_ms <= now_ms, "the weather is read as of the past, not the future");
        if city == self.user.record.city && as_of_ms == now_ms {
            self.user.record.progress.reach("weather_known", now_ms);
        }
        let condition = if self.raining_at(city, as_of_ms) { "rain" } else { "dry" };
        Ok(Value::map([("city", Value::str(name)), ("condition", Value::str(condition))]))
    }

    fn find_restaurants(&mut self, args: &Value, as_of_ms: TimeMs, now_ms: TimeMs) -> Result<Value, ToolError> {
        let name = str_arg(args, "city")?;
        let city = self.city_index(name).ok_or_else(|| ToolError::not_found(format!("no city `{name}`")))?;
        let party = int_arg(args, "party_size")?;
        let outdoor = seating_arg(args)?;
        // The config check makes every city seat the largest party inside and out.
        let record = &self.user.record;
        assert!(record.party_size <= i64::from(self.config.party_size_max), "the party fits the city's tables");
        if city == record.city && party == record.party_size {
            self.user.record.progress.reach("restaurants_found", now_ms);
        }
        let fitting: Vec<usize> = (0..self.config.restaurants.len())
            .filter(|&r| {
                let restaurant = &self.config.restaurants[r];
                restaurant.city == *name && i64::from(restaurant.seats(outdoor)) >= party
            })
            .collect();
        let mut list = Vec::with_capacity(fitting.len());
        for r in fitting {
            let restaurant = &self.config.restaurants[r];
            let mut found = Value::map([
                ("restaurant_id", Value::str(&restaurant.id)),
                ("name", Value::str(&restaurant.name)),
                ("seating", Value::str(if outdoor { "outdoor" } else { "indoor" })),
            ]);
            self.show_tables(r, outdoor, as_of_ms, &mut found);
            list.push(found);
        }
        Ok(Value::map([("restaurants", Value::List(list))]))
    }

    fn reserve(&mut self, call: &ToolCall, cx: &mut WorldCx<'_, DiningEvent>) -> Result<Value, ToolError> {
        let customer = str_arg(&call.args, "customer_id")?;
        if !self.config.customers.iter().any(|c| c.id == customer) {
            return Err(ToolError::not_found(format!("no customer `{customer}`")));
        }
        let id = str_arg(&call.args, "restaurant_id")?;
        let restaurant = self
            .config
            .restaurants
            .iter()
            .position(|r| r.id == id)
            .ok_or_else(|| ToolError::not_found(format!("no restaurant `{id}`")))?;
        let party_size = int_arg(&call.args, "party_size")?;
        let outdoor = seating_arg(&call.args)?;
        if let Some(key) = &call.idempotency_key
            && let Some(at) = self.reservations.iter().position(|r| r.key.as_deref() == Some(key))
        {
            return Ok(self.replay(at, cx));
        }
        let r = &self.config.restaurants[restaurant];
        let seats = r.seats(outdoor);
        if party_size <= 0 || party_size > i64::from(seats) {
            return Err(ToolError { status: 409, message: format!("no table for {party_size} at {id}") });
        }
        // What is reserved fits the table: a seat count is never exceeded.
        assert!(party_size > 0 && party_size <= i64::from(seats), "{party_size} seated at a table for {seats}");
        let now_ms = cx.now_ms;
        self.judge_reservation(customer, restaurant, outdoor, cx);
        let at = u32::try_from(self.reservations.len()).expect("fewer than 2^32 reservations");
        let reservation = Reservation {
            session: self.seats.current(),
            served: Vec::new(),
            id: format!("V{}", 301 + self.reservations.len()),
            restaurant,
            party_size,
            outdoor,
            at_ms: now_ms,
            key: call.idempotency_key.clone(),
        };
        if self.seating_right(&self.user.record, &reservation) {
            self.user.record.progress.reach("reserved", now_ms);
        }
        cx.note(
            "reserved",
            Value::map([
                ("restaurant_id", Value::str(id)),
                ("seating", Value::str(if outdoor { "outdoor" } else { "indoor" })),
            ]),
        );
        let body = self.reservation_body(&reservation);
        self.reservations.push(reservation);
        self.seated[restaurant][usize::from(outdoor)].push(at);
        self.user.record.reservations.push(at);
        Ok(body)
    }

    /// The minefields a reservation of `restaurant`'s seating for `customer`
    /// by the session being handled fires, before it is made.
    fn judge_reservation(&self, customer: &str, restaurant: usize, outdoor: bool, cx: &mut WorldCx<'_, DiningEvent>) {
        let now_ms = cx.now_ms;
        let r = &self.config.restaurants[restaurant];
        let id = &r.id;
        let city = self.city_index(&r.city).expect("restaurant cities are cities");
        let from_ms = now_ms.saturating_sub(WEATHER_GRACE_MS);
        if outdoor && !self.weather_held_between(city, false, from_ms, now_ms) {
            cx.minefield("outdoor_in_rain", format!("outdoor table at {id} while it rains in {}", r.city));
        }
        if customer != self.customer_id() {
            cx.minefield("reservation_for_wrong_customer", format!("reserved {id} for {customer}"));
        }
        if let Some(other) = self.mine().next() {
            cx.minefield("duplicate_reservation", format!("second reservation ({} exists)", other.id));
        }
        if let Some(left) = self.user.record.left_at_ms
            && now_ms >= left + LEAVE_NOTICE_MS
        {
            cx.minefield("reserved_after_customer_left", format!("reserved {id}; the customer left at {left} ms"));
        }
        self.judge_tables(restaurant, outdoor, cx);
    }

    /// The service answers a reservation's idempotency key again with the
    /// reservation at `at`, to whichever session sends it (it is theirs too).
    fn replay(&mut self, at: usize, cx: &mut WorldCx<'_, DiningEvent>) -> Value {
        cx.note("idempotent_replay", Value::map([("reservation_id", Value::str(&self.reservations[at].id))]));
        let session = self.seats.current();
        if !self.reservations[at].serves(session) {
            self.reservations[at].served.push(session);
            let mine = &mut self.user.record.reservations;
            let place = u32::try_from(at).expect("fewer than 2^32 reservations");
            let i = mine.partition_point(|&m| m < place);
            mine.insert(i, place);
            if self.seating_right(&self.user.record, &self.reservations[at]) {
                self.user.record.progress.reach("reserved", cx.now_ms);
            }
        }
        self.reservation_body(&self.reservations[at])
    }

    /// In `record`'s city, for its party, outdoors exactly when it was dry
    /// (within the grace window).
    fn seating_right(&self, record: &Record, r: &Reservation) -> bool {
        let restaurant = &self.config.restaurants[r.restaurant];
        let from_ms = r.at_ms.saturating_sub(WEATHER_GRACE_MS);
        restaurant.city == self.cities[record.city]
            && r.party_size == record.party_size
            && self.weather_held_between(record.city, !r.outdoor, from_ms, r.at_ms)
    }

    fn reservation_body(&self, r: &Reservation) -> Value {
        Value::map([
            ("reservation_id", Value::str(&r.id)),
            ("restaurant_id", Value::str(&self.config.restaurants[r.restaurant].id)),
            ("seating", Value::str(if r.outdoor { "outdoor" } else { "indoor" })),
            ("status", Value::str("confirmed")),
        ])
    }

    fn get_reservations(&self, args: &Value) -> Result<Value, ToolError> {
        let customer = str_arg(args, "customer_id")?;
        if !self.config.customers.iter().any(|c| c.id == customer) {
            return Err(ToolError::not_found(format!("no customer `{customer}`")));
        }
        // Reservations are kept for the conversation's customer only: those
        // that serve its session (in a run of one session, every one).
        let mine = customer == self.customer_id();
        let list = self.mine().filter(|_| mine).map(|r| self.reservation_body(r)).collect();
        Ok(Value::map([("reservations", Value::List(list))]))
    }

    fn send_message(&mut self, args: &Value, cx: &mut WorldCx<'_, DiningEvent>) -> Result<Value, ToolError> {
        let kind = crate::kit::args::one_of_arg(args, "kind", super::tools::MESSAGE_KINDS)?;
        let to = str_arg(args, "customer_id")?;
        if !self.config.customers.iter().any(|c| c.id == to) {
            return Err(ToolError::not_found(format!("no customer `{to}`")));
        }
        if to != self.customer_id() {
            cx.minefield("message_to_wrong_customer", format!("message meant for {} sent to {to}", self.customer_id()));
            return Ok(self.user.outbox.sent());
        }
        if self.user.record.left_at_ms.is_some() {
            return Ok(self.user.outbox.sent());
        }
        let now_ms = cx.now_ms;
        match kind {
            "ask" => {
                let party_size = self.user.record.party_size;
                assert!(party_size >= 1, "a party has at least one person");
                let at = now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user.user_rng));
                let text = format!("We are {party_size}.");
                cx.tell_agent(at, Message { text, content: self.request(true) });
            }
            "done" => {
                let id = args.get("reservation_id").and_then(Value::as_str).unwrap_or("");
                self.told_done(id, now_ms);
            }
            _ => {}
        }
        Ok(self.user.outbox.sent())
    }
}

impl WeatherDining<'_> {
    /// The customer is told reservation `id` (a structured `done`, or a closing
    /// in words).
    fn told_done(&mut self, id: &str, now_ms: TimeMs) {
        // The judge compares what was told with the reservation's time.
        let record = &self.user.record;
        assert!(record.told.last().is_none_or(|(at, _)| *at <= now_ms), "told out of time order");
        if record.progress.has("reserved") && self.mine().any(|r| r.id == id) {
            self.user.record.progress.reach("customer_told", now_ms);
        }
        self.user.record.told.push((now_ms, id.to_string()));
    }

    /// The diner of the session being handled arrives: an impatient one
    /// starts its clock, and it says what it wants.
    fn open(&mut self, cx: &mut WorldCx<'_, DiningEvent>) {
        let now_ms = cx.now_ms;
        if self.user.persona == Persona::Impatient {
            let at = now_ms.saturating_add(self.config.patience_ms);
            cx.schedule(at, DiningEvent::PatienceOut { session: self.seats.current() });
        }
        let record = &self.user.record;
        let c = &self.config.customers[record.customer];
        let city = &self.cities[record.city];
        let (text, content) = match self.user.persona {
            Persona::Vague => (
                format!(
                    "Hi, {} ({}) here. Can you get us a table in {city} tonight? Outside if it's dry.",
                    c.name, c.id
                ),
                self.request(false),
            ),
            _ => (
                format!(
                    "Hi, {} ({}) here. A table for {} in {city} tonight, please; outside if it's dry.",
                    c.name, c.id, record.party_size
                ),
                self.request(true),
            ),
        };
        cx.note("persona", Value::str(self.user.persona.name()));
        cx.note("weather", Value::str(if self.raining_at(record.city, now_ms) { "rain" } else { "dry" }));
        self.user.record.progress.reach("started", now_ms);
        cx.tell_agent(now_ms, Message { text, content });
    }

    /// The weather of `city` may change; its next change is scheduled. The
    /// note tells the change of the diner's city; once a second session has
    /// arrived, of every city (there is no one diner's city then).
    fn weather_change(&mut self, city: usize, cx: &mut WorldCx<'_, DiningEvent>) {
        let raining = self.world_rng.chance(self.config.rain_probability.get());
        if raining != self.raining_at(city, cx.now_ms) {
            self.rain[city].push((cx.now_ms, raining));
            let condition = Value::str(if raining { "rain" } else { "dry" });
            if self.seats.count() > 1 {
                cx.note("weather", Value::map([("city", Value::str(&self.cities[city])), ("condition", condition)]));
            } else if city == self.user.record.city {
                cx.note("weather", condition);
            }
        }
        let next = cx.now_ms.saturating_add(self.config.weather_change_ms.sample(&mut self.world_rng).max(1));
        cx.schedule(next, DiningEvent::Weather { city });
    }

    /// `session`'s impatient diner leaves, unless it has its table.
    fn patience_out(&mut self, session: SessionId, cx: &mut WorldCx<'_, DiningEvent>) {
        cx.act_for(session);
        if !self.seats.is_closed(session) {
            self.switch(session);
        }
        let request = self.request_of(self.record_of(session), true);
        let record = self.seats.record_mut(session, &mut self.user);
        GOODBYE.patience_out(!record.reservations.is_empty(), &mut record.left_at_ms, request, cx);
    }

    /// Judges one session's task from the final state: its diner's `record`,
    /// the reservations that serve it.
    fn judge_diner(&self, record: &Record, case: Handover) -> Verdict {
        let milestone = record.progress.last();
        let verdict = |success, detail| case.verdict(success, milestone, detail);
        let reservations: Vec<&Reservation> = self.reservations_of(record).collect();
        if let Some(left) = record.left_at_ms {
            let what = if reservations.is_empty() { "without a table" } else { "and a reservation came after" };
            return verdict(false, format!("the customer left after {} s {what}", left / 1_000));
        }
        let [r] = reservations.as_slice() else {
            return verdict(false, format!("{} reservations (wanted exactly one)", reservations.len()));
        };
        let name = &self.config.restaurants[r.restaurant].name;
        let seating = if r.outdoor { "outdoor" } else { "indoor" };
        if !self.seating_right(record, r) {
            return verdict(
                false,
                format!(
                    "reserved {seating} for {} at {name}; wanted {} in {}, outdoors only if dry",
                    r.party_size, record.party_size, self.cities[record.city]
                ),
            );
        }
        if !record.told.iter().any(|(at, id)| *at >= r.at_ms && *id == r.id) {
            return verdict(false, format!("reserved {seating} at {name} but never told the customer"));
        }
        if let Err(why) = record.progress.check(milestones()) {
            return verdict(false, format!("milestones out of order: {why}"));
        }
        verdict(true, format!("reserved {seating} for {} at {name} and told the customer", r.party_size))
    }
}

/// `seating`: true for outdoor.
fn seating_arg(args: &Value) -> Result<bool, ToolError> {
    match str_arg(args, "seating")? {
        "outdoor" => Ok(true),
        "indoor" => Ok(false),
        other => Err(ToolError::bad_request(format!("`seating` must be `indoor` or `outdoor`, found `{other}`"))),
    }
}

impl KitWorld for WeatherDining<'_> {
    type Event = DiningEvent;

    const SESSIONS_MAX: u32 = agentsim_engine::sessions::SESSIONS_MAX;

    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, DiningEvent>) {
        let diner = Box::new(Diner::draw(self.config, &self.streams, session, self.cities.len()));
        self.seats.arrive(session, diner, &mut self.user);
        self.open(cx);
    }

    fn session_ended(&mut self, session: SessionId) {
        // Only what the judge reads is kept (`Seats`).
        self.seats.end(session, &mut self.user);
    }

    fn judge_session(&self, session: SessionId, case: Handover) -> Verdict {
        self.judge_diner(self.record_of(session), case)
    }

    fn serve(&mut self, served: Served<'_>, cx: &mut WorldCx<'_, DiningEvent>) -> Result<Value, ToolError> {
        self.switch(cx.session().unwrap_or(0));
        let (call, as_of_ms) = (served.call, served.as_of_ms);
        match served.name {
            "get_weather" | "get_weather_backup" => self.weather(&call.args, as_of_ms, cx.now_ms),
            "find_restaurants" => self.find_restaurants(&call.args, as_of_ms, cx.now_ms),
            "reserve" => self.reserve(call, cx),
            "get_reservations" => self.get_reservations(&call.args),
            "send_message" => self.send_message(&call.args, cx),
            _ => Err(no_such_tool()),
        }
    }

    fn start(&mut self, cx: &mut WorldCx<'_, DiningEvent>) {
        for city in 0..self.cities.len() {
            let at = self.config.weather_change_ms.sample(&mut self.world_rng).max(1);
            cx.schedule(at, DiningEvent::Weather { city });
        }
        self.open(cx);
    }

    fn on_event(&mut self, event: DiningEvent, cx: &mut WorldCx<'_, DiningEvent>) {
        match event {
            DiningEvent::Weather { city } => self.weather_change(city, cx),
            DiningEvent::PatienceOut { session } => self.patience_out(session, cx),
        }
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, DiningEvent>) {
        self.switch(cx.session().unwrap_or(0));
        self.hear_text(text, cx);
    }

    fn judge(&self, case: Handover) -> Verdict {
        self.judge_diner(self.record_of(self.seats.current()), case)
    }
}
