//! The weather_dining world: weather that changes per city, restaurants with
//! indoor and outdoor tables, and a customer who wants a table tonight.

use std::sync::LazyLock;

use agentsim_engine::{
    Message, MilestoneDag, Progress, Stream, StreamSource, TimeMs, ToolCall, ToolError, Value, Verdict, WorldCx,
};

use super::config::WeatherDiningConfig;
use crate::kit::args::{int_arg, str_arg};
use crate::kit::goodbye::Goodbye;
use crate::kit::outbox::Outbox;
pub use crate::kit::persona::Persona;
use crate::kit::persona::draw;
use crate::kit::world::{Handover, KitWorld, Served, no_such_tool};
use crate::talk::voice::Voice;

/// How the impatient user leaves.
const GOODBYE: Goodbye = Goodbye { note: "customer_left", text: "Never mind, we'll just walk in somewhere." };

#[path = "hear.rs"]
mod hear;

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
    id: String,
    restaurant: usize,
    party_size: i64,
    outdoor: bool,
    at_ms: TimeMs,
    key: Option<String>,
}

/// The world's own events.
pub enum DiningEvent {
    /// The weather of a city may change.
    Weather {
        /// City index.
        city: usize,
    },
    /// An impatient customer's patience runs out.
    PatienceOut,
}

/// One trajectory's weather_dining.
pub struct WeatherDining<'c> {
    config: &'c WeatherDiningConfig,
    user_rng: Stream,
    world_rng: Stream,
    cities: Vec<String>,
    /// Per city: (time, raining) changes, oldest first.
    rain: Vec<Vec<(TimeMs, bool)>>,
    customer: usize,
    persona: Persona,
    city: usize,
    party_size: i64,
    reservations: Vec<Reservation>,
    told: Vec<(TimeMs, String)>,
    left_at_ms: Option<TimeMs>,
    outbox: Outbox,
    progress: Progress,
    /// How the customer words its answers to text (made on the first one).
    voice: Option<Voice>,
}

impl<'c> WeatherDining<'c> {
    /// A fresh world for one seed: customer, city, party and persona come from the
    /// user's stream; the weather from the world's.
    pub fn new(config: &'c WeatherDiningConfig, streams: &StreamSource) -> Self {
        let mut user_rng = streams.stream("user.0");
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
        let customer = user_rng.below(config.customers.len() as u64) as usize;
        let city = user_rng.below(cities.len() as u64) as usize;
        let party_size = user_rng.between(u64::from(config.party_size_min), u64::from(config.party_size_max)) as i64;
        let persona = draw(&config.personas.weights(), &mut user_rng).unwrap_or(Persona::Clear);
        Self {
            config,
            user_rng,
            world_rng,
            cities,
            rain,
            customer,
            persona,
            city,
            party_size,
            reservations: Vec::new(),
            told: Vec::new(),
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

    fn customer_id(&self) -> &str {
        &self.config.customers[self.customer].id
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
        let mut v = Value::map([
            ("customer_id", Value::str(self.customer_id())),
            ("city", Value::str(&self.cities[self.city])),
            ("seating", Value::str("outdoor if dry")),
        ]);
        if with_party {
            v.set("party_size", Value::Int(self.party_size));
        }
        v
    }

    fn weather(&mut self, args: &Value, as_of_ms: TimeMs, now_ms: TimeMs) -> Result<Value, ToolError> {
        let name = str_arg(args, "city")?;
        let city = self.city_index(name).ok_or_else(|| ToolError::not_found(format!("no city `{name}`")))?;
        assert!(as_of_ms <= now_ms, "the weather is read as of the past, not the future");
        if city == self.city && as_of_ms == now_ms {
            self.progress.reach("weather_known", now_ms);
        }
        let condition = if self.raining_at(city, as_of_ms) { "rain" } else { "dry" };
        Ok(Value::map([("city", Value::str(name)), ("condition", Value::str(condition))]))
    }

    fn find_restaurants(&mut self, args: &Value, now_ms: TimeMs) -> Result<Value, ToolError> {
        let name = str_arg(args, "city")?;
        let city = self.city_index(name).ok_or_else(|| ToolError::not_found(format!("no city `{name}`")))?;
        let party = int_arg(args, "party_size")?;
        let outdoor = seating_arg(args)?;
        // The config check makes every city seat the largest party inside and out.
        assert!(self.party_size <= i64::from(self.config.party_size_max), "the party fits the city's tables");
        if city == self.city && party == self.party_size {
            self.progress.reach("restaurants_found", now_ms);
        }
        let list = self
            .config
            .restaurants
            .iter()
            .filter(|r| r.city == *name && i64::from(if outdoor { r.outdoor_seats } else { r.indoor_seats }) >= party)
            .map(|r| {
                Value::map([
                    ("restaurant_id", Value::str(&r.id)),
                    ("name", Value::str(&r.name)),
                    ("seating", Value::str(if outdoor { "outdoor" } else { "indoor" })),
                ])
            })
            .collect();
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
            && let Some(r) = self.reservations.iter().find(|r| r.key.as_deref() == Some(key))
        {
            cx.note("idempotent_replay", Value::map([("reservation_id", Value::str(&r.id))]));
            return Ok(self.reservation_body(r));
        }
        let r = &self.config.restaurants[restaurant];
        let seats = if outdoor { r.outdoor_seats } else { r.indoor_seats };
        if party_size <= 0 || party_size > i64::from(seats) {
            return Err(ToolError { status: 409, message: format!("no table for {party_size} at {id}") });
        }
        // What is reserved fits the table: a seat count is never exceeded.
        assert!(party_size > 0 && party_size <= i64::from(seats), "{party_size} seated at a table for {seats}");
        let now_ms = cx.now_ms;
        let city = self.city_index(&r.city).expect("restaurant cities are cities");
        let from_ms = now_ms.saturating_sub(WEATHER_GRACE_MS);
        if outdoor && !self.weather_held_between(city, false, from_ms, now_ms) {
            cx.minefield("outdoor_in_rain", format!("outdoor table at {id} while it rains in {}", r.city));
        }
        if customer != self.customer_id() {
            cx.minefield("reservation_for_wrong_customer", format!("reserved {id} for {customer}"));
        }
        if let Some(other) = self.reservations.first() {
            cx.minefield("duplicate_reservation", format!("second reservation ({} exists)", other.id));
        }
        if let Some(left) = self.left_at_ms
            && now_ms >= left + LEAVE_NOTICE_MS
        {
            cx.minefield("reserved_after_customer_left", format!("reserved {id}; the customer left at {left} ms"));
        }
        let reservation = Reservation {
            id: format!("V{}", 301 + self.reservations.len()),
            restaurant,
            party_size,
            outdoor,
            at_ms: now_ms,
            key: call.idempotency_key.clone(),
        };
        if self.seating_right(&reservation) {
            self.progress.reach("reserved", now_ms);
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
        Ok(body)
    }

    /// In the customer's city, for the party, outdoors exactly when it was dry
    /// (within the grace window).
    fn seating_right(&self, r: &Reservation) -> bool {
        let restaurant = &self.config.restaurants[r.restaurant];
        let from_ms = r.at_ms.saturating_sub(WEATHER_GRACE_MS);
        restaurant.city == self.cities[self.city]
            && r.party_size == self.party_size
            && self.weather_held_between(self.city, !r.outdoor, from_ms, r.at_ms)
    }

    fn reservation_body(&self, r: &Reservation) -> Value {
        Value::map([
            ("reservation_id", Value::str(&r.id)),
            ("restaurant_id", Value::str(&self.config.restaurants[r.restaurant].id)),
            ("seating", Value::str(if r.outdoor { "outdoor" } else { "indoor" })),
            ("status", Value::str("confirmed")),
        ])
    }

    fn send_message(&mut self, args: &Value, cx: &mut WorldCx<'_, DiningEvent>) -> Result<Value, ToolError> {
        let kind = crate::kit::args::one_of_arg(args, "kind", super::tools::MESSAGE_KINDS)?;
        let to = str_arg(args, "customer_id")?;
        if !self.config.customers.iter().any(|c| c.id == to) {
            return Err(ToolError::not_found(format!("no customer `{to}`")));
        }
        if to != self.customer_id() {
            cx.minefield("message_to_wrong_customer", format!("message meant for {} sent to {to}", self.customer_id()));
            return Ok(self.outbox.sent());
        }
        if self.left_at_ms.is_some() {
            return Ok(self.outbox.sent());
        }
        let now_ms = cx.now_ms;
        match kind {
            "ask" => {
                assert!(self.party_size >= 1, "a party has at least one person");
                let at = now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user_rng));
                let text = format!("We are {}.", self.party_size);
                cx.tell_agent(at, Message { text, content: self.request(true) });
            }
            "done" => {
                let id = args.get("reservation_id").and_then(Value::as_str).unwrap_or("");
                self.told_done(id, now_ms);
            }
            _ => {}
        }
        Ok(self.outbox.sent())
    }
}

impl WeatherDining<'_> {
    /// The customer is told reservation `id` (a structured `done`, or a closing
    /// in words).
    fn told_done(&mut self, id: &str, now_ms: TimeMs) {
        // The judge compares what was told with the reservation's time.
        assert!(self.told.last().is_none_or(|(at, _)| *at <= now_ms), "told out of time order");
        if self.progress.has("reserved") && self.reservations.iter().any(|r| r.id == id) {
            self.progress.reach("customer_told", now_ms);
        }
        self.told.push((now_ms, id.to_string()));
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

    fn serve(&mut self, served: Served<'_>, cx: &mut WorldCx<'_, DiningEvent>) -> Result<Value, ToolError> {
        let (call, as_of_ms) = (served.call, served.as_of_ms);
        match served.name {
            "get_weather" | "get_weather_backup" => self.weather(&call.args, as_of_ms, cx.now_ms),
            "find_restaurants" => self.find_restaurants(&call.args, cx.now_ms),
            "reserve" => self.reserve(call, cx),
            "get_reservations" => {
                let customer = str_arg(&call.args, "customer_id")?;
                if !self.config.customers.iter().any(|c| c.id == customer) {
                    return Err(ToolError::not_found(format!("no customer `{customer}`")));
                }
                let mine = customer == self.customer_id();
                let list = self.reservations.iter().filter(|_| mine).map(|r| self.reservation_body(r)).collect();
                Ok(Value::map([("reservations", Value::List(list))]))
            }
            "send_message" => self.send_message(&call.args, cx),
            _ => Err(no_such_tool()),
        }
    }

    fn start(&mut self, cx: &mut WorldCx<'_, DiningEvent>) {
        for city in 0..self.cities.len() {
            let at = self.config.weather_change_ms.sample(&mut self.world_rng).max(1);
            cx.schedule(at, DiningEvent::Weather { city });
        }
        if self.persona == Persona::Impatient {
            cx.schedule(self.config.patience_ms, DiningEvent::PatienceOut);
        }
        let c = &self.config.customers[self.customer];
        let city = &self.cities[self.city];
        let (text, content) = match self.persona {
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
                    c.name, c.id, self.party_size
                ),
                self.request(true),
            ),
        };
        cx.note("persona", Value::str(self.persona.name()));
        cx.note("weather", Value::str(if self.raining_at(self.city, 0) { "rain" } else { "dry" }));
        self.progress.reach("started", cx.now_ms);
        cx.tell_agent(0, Message { text, content });
    }

    fn on_event(&mut self, event: DiningEvent, cx: &mut WorldCx<'_, DiningEvent>) {
        match event {
            DiningEvent::Weather { city } => {
                let raining = self.world_rng.chance(self.config.rain_probability.get());
                if raining != self.raining_at(city, cx.now_ms) {
                    self.rain[city].push((cx.now_ms, raining));
                    if city == self.city {
                        cx.note("weather", Value::str(if raining { "rain" } else { "dry" }));
                    }
                }
                let next = cx.now_ms.saturating_add(self.config.weather_change_ms.sample(&mut self.world_rng).max(1));
                cx.schedule(next, DiningEvent::Weather { city });
            }
            DiningEvent::PatienceOut => {
                let request = self.request(true);
                GOODBYE.patience_out(!self.reservations.is_empty(), &mut self.left_at_ms, request, cx);
            }
        }
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, DiningEvent>) {
        self.hear_text(text, cx);
    }

    fn judge(&self, case: Handover) -> Verdict {
        let milestone = self.progress.last();
        let verdict = |success, detail| case.verdict(success, milestone, detail);
        if let Some(left) = self.left_at_ms {
            let what = if self.reservations.is_empty() { "without a table" } else { "and a reservation came after" };
            return verdict(false, format!("the customer left after {} s {what}", left / 1_000));
        }
        let [r] = self.reservations.as_slice() else {
            return verdict(false, format!("{} reservations (wanted exactly one)", self.reservations.len()));
        };
        let name = &self.config.restaurants[r.restaurant].name;
        let seating = if r.outdoor { "outdoor" } else { "indoor" };
        if !self.seating_right(r) {
            return verdict(
                false,
                format!(
                    "reserved {seating} for {} at {name}; wanted {} in {}, outdoors only if dry",
                    r.party_size, self.party_size, self.cities[self.city]
                ),
            );
        }
        if !self.told.iter().any(|(at, id)| *at >= r.at_ms && *id == r.id) {
            return verdict(false, format!("reserved {seating} at {name} but never told the customer"));
        }
        if let Err(why) = self.progress.check(milestones()) {
            return verdict(false, format!("milestones out of order: {why}"));
        }
        verdict(true, format!("reserved {seating} for {} at {name} and told the customer", r.party_size))
    }
}
