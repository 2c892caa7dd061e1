//! The flight_booking section of a scenario: travellers, flights, the fare walk,
//! personas and tools.

use serde::{Deserialize, Serialize};

use agentsim_engine::{Latency, TimeMs};

use crate::kit::checks::{ConfigError, ConfigErrorKind, not_empty, positive_interval, unique_ids};
use crate::kit::persona::personas;
use crate::kit::tool_configs::tool_configs;

/// A traveller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traveller {
    /// Traveller id, like `"T01"`.
    pub id: String,
    /// Display name.
    pub name: String,
}

/// A flight and its fare at time 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "FlightUnchecked")]
pub struct Flight {
    /// Flight id, like `"BA117"`; unique.
    pub id: String,
    /// Origin airport, like `"LHR"`.
    pub origin: String,
    /// Destination airport.
    pub destination: String,
    /// Day of the flight, like `"2026-12-01"`.
    pub date: String,
    /// Fare at time 0, in cents; positive.
    pub fare_cents: i64,
    /// Seats for sale, when the scenario counts them: reads then show
    /// `seats_left` and a booking beyond them is judged (`overbooked`, and
    /// between sessions `seat_sold_twice` and `fare_honoured_after_sold_out`;
    /// see `world::seats`). `None` (the default): seats are not counted,
    /// not shown and not judged, as before seats existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seats: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlightUnchecked {
    id: String,
    origin: String,
    destination: String,
    date: String,
    fare_cents: i64,
    #[serde(default)]
    seats: Option<u32>,
}

impl TryFrom<FlightUnchecked> for Flight {
    type Error = ConfigError;
    fn try_from(f: FlightUnchecked) -> Result<Self, Self::Error> {
        if f.fare_cents <= 0 || f.fare_cents > FARE_CENTS_MAX {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "fare_cents",
                format!("expected a positive fare in cents up to {FARE_CENTS_MAX}, found {}", f.fare_cents),
            ));
        }
        if f.seats.is_some_and(|s| s > SEATS_MAX) {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "seats",
                format!("expected at most {SEATS_MAX} seats, found {}", f.seats.unwrap_or_default()),
            ));
        }
        Ok(Flight {
            id: f.id,
            origin: f.origin,
            destination: f.destination,
            date: f.date,
            fare_cents: f.fare_cents,
            seats: f.seats,
        })
    }
}

/// The most seats a flight may have for sale (more than any aircraft).
pub const SEATS_MAX: u32 = 10_000;

/// The largest fare or fare step a scenario may give, in cents ($10 million): far
/// beyond any ticket, and far from overflowing a fare walk.
pub const FARE_CENTS_MAX: i64 = 1_000_000_000;

personas! {
    /// How often each persona is drawn (relative weights, not all zero).
    pub struct Personas {
        #[doc = "Names route, date and budget."]
        clear: Clear = 0.4,
        #[doc = "Names the route and budget but no date; the agent must ask."]
        vague: Vague = 0.2,
        #[doc = "Switches to another date of the same route when a fare is quoted."]
        changes_mind: ChangesMind = 0.2,
        #[doc = "Clear, but leaves after `patience_ms` without a booking."]
        impatient: Impatient = 0.2,
    }
}

tool_configs! {
    /// The tools of flight_booking and their behaviour.
    pub struct Tools {
        /// `search_flights(origin, destination, date)`.
        search_flights,
        /// `get_fare(flight_id)`.
        get_fare,
        /// `book(traveller_id, flight_id, fare_cents)`.
        book,
        /// `cancel(booking_id)`.
        cancel,
        /// `get_bookings(traveller_id)`.
        get_bookings,
        /// `send_message(traveller_id, kind, ...)`.
        send_message,
        /// `escalate(traveller_id, reason)`.
        escalate,
        /// `authenticate()`, the engine's session renewal.
        authenticate,
    }
}

/// The flight_booking world's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlightBookingConfig {
    /// Travellers.
    pub travellers: Vec<Traveller>,
    /// Flights.
    pub flights: Vec<Flight>,
    /// Time between two fare ticks; at each tick every fare takes one step.
    pub fare_tick_ms: Latency,
    /// Largest step of a fare at one tick, up or down, in cents.
    pub fare_step_cents_max: i64,
    /// Fares never walk below this, in cents.
    pub fare_cents_min: i64,
    /// The traveller's budget: the cheapest fare of the trip at time 0 plus this
    /// percentage.
    pub budget_margin_percent: u32,
    /// A fare told to the traveller must have been the flight's fare at some time in
    /// the last `quote_grace_ms` (the time it takes to read a fare and pass it on);
    /// otherwise it is stale.
    #[serde(deserialize_with = "agentsim_engine::time::bounded_ms")]
    pub quote_grace_ms: TimeMs,
    /// How long an impatient traveller waits for a booking before leaving.
    #[serde(deserialize_with = "agentsim_engine::time::bounded_ms")]
    pub patience_ms: TimeMs,
    /// Persona weights.
    pub personas: Personas,
    /// How long the traveller takes to answer.
    pub reply_ms: Latency,
    /// The tools.
    pub tools: Tools,
}

impl Default for FlightBookingConfig {
    fn default() -> Self {
        let flight = |id: &str, origin: &str, destination: &str, date: &str, fare_cents| Flight {
            id: id.into(),
            origin: origin.into(),
            destination: destination.into(),
            date: date.into(),
            fare_cents,
            seats: None,
        };
        Self {
            travellers: vec![
                Traveller { id: "T01".into(), name: "Ada".into() },
                Traveller { id: "T02".into(), name: "Grace".into() },
            ],
            flights: vec![
                flight("BA117", "LHR", "JFK", "2026-12-01", 45_000),
                flight("VS003", "LHR", "JFK", "2026-12-01", 47_500),
                flight("BA115", "LHR", "JFK", "2026-12-02", 41_000),
                flight("AF1680", "CDG", "LIS", "2026-12-01", 12_900),
                flight("TP433", "CDG", "LIS", "2026-12-03", 11_500),
            ],
            fare_tick_ms: Latency::Uniform { min_ms: 60_000, max_ms: 180_000 },
            fare_step_cents_max: 2_500,
            fare_cents_min: 5_000,
            budget_margin_percent: 20,
            quote_grace_ms: 15_000,
            patience_ms: 150_000,
            personas: Personas::default(),
            reply_ms: Latency::Uniform { min_ms: 10_000, max_ms: 90_000 },
            tools: Tools::default(),
        }
    }
}

impl FlightBookingConfig {
    /// Cross-checks that serde cannot express. Returns the first problem.
    pub fn check(&self) -> Result<(), ConfigError> {
        unique_ids(self.travellers.iter().map(|t| t.id.as_str()), "travellers", "traveller")?;
        not_empty(self.travellers.is_empty(), "travellers", "traveller")?;
        unique_ids(self.flights.iter().map(|f| f.id.as_str()), "flights", "flight")?;
        not_empty(self.flights.is_empty(), "flights", "flight")?;
        if !(0..=FARE_CENTS_MAX).contains(&self.fare_step_cents_max) {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "fare_step_cents_max",
                format!("expected a step in 0..={FARE_CENTS_MAX}, found {}", self.fare_step_cents_max),
            ));
        }
        if self.fare_cents_min <= 0 || self.fare_cents_min > FARE_CENTS_MAX {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "fare_cents_min",
                format!("expected a positive fare in cents up to {FARE_CENTS_MAX}, found {}", self.fare_cents_min),
            ));
        }
        positive_interval(&self.fare_tick_ms, "fare_tick_ms", "fare ticks")?;
        self.personas.check()
    }
}
