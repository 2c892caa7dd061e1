//! One session's traveller: who, what trip and budget, and what they were
//! told. The flights, fares, seats and bookings are the world's, shared by
//! every session; a `Passenger` is what belongs to one conversation.

use agentsim_engine::{Progress, SessionId, Stream, StreamSource, TimeMs};

use super::{FlightBookingConfig, Persona, Trip};
use crate::kit::outbox::Outbox;
use crate::kit::persona::draw;
use crate::talk::voice::Voice;

/// One session's traveller.
pub(super) struct Passenger {
    pub(super) user_rng: Stream,
    /// Index into the scenario's travellers.
    pub(super) traveller: usize,
    pub(super) persona: Persona,
    pub(super) trip: Trip,
    pub(super) alternative: Option<Trip>,
    pub(super) mind_changed: bool,
    pub(super) budget_cents: i64,
    /// The last quote the traveller confirmed: (flight, fare, time).
    pub(super) confirmed: Option<(usize, i64, TimeMs)>,
    /// `done` messages: (time, booking id, fare).
    pub(super) told: Vec<(TimeMs, String, i64)>,
    /// Fares told to the traveller (quotes and confirmations), and how many of
    /// them the flight did not have at that moment (contextual accuracy).
    pub(super) fares_told: u32,
    pub(super) fares_told_wrong: u32,
    pub(super) left_at_ms: Option<TimeMs>,
    /// When an impatient traveller's patience runs out (set when it arrives).
    pub(super) patience_at_ms: Option<TimeMs>,
    pub(super) outbox: Outbox,
    pub(super) progress: Progress,
    /// How the traveller words its answers to text (made on the first one).
    pub(super) voice: Option<Voice>,
    /// What this session's agent last read of each flight whose seats are
    /// counted: (flight, the time the read's data was as of, seats left
    /// then). The races between sessions are judged against it (`seats.rs`).
    pub(super) seats_read: Vec<(usize, TimeMs, i64)>,
}

impl Passenger {
    /// Session `session`'s traveller, trip and persona, drawn from its user's
    /// stream (`"user.N"`); `fare_now` is each flight's fare as the session
    /// arrives (at time 0, the scenario's fares).
    pub(super) fn draw(
        config: &FlightBookingConfig,
        streams: &StreamSource,
        session: SessionId,
        fare_now: impl Fn(usize) -> i64,
    ) -> Self {
        let mut user_rng = streams.session_stream("user", session);
        let traveller = user_rng.below(config.travellers.len() as u64) as usize;
        let flight = user_rng.below(config.flights.len() as u64) as usize;
        let f = &config.flights[flight];
        let trip = Trip { origin: f.origin.clone(), destination: f.destination.clone(), date: f.date.clone() };
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
        // The budget covers the cheapest fare, as the traveller arrives, of
        // every day it will ask for, with the configured margin.
        let cheapest_on = |date: &str| {
            (0..config.flights.len())
                .filter(|&g| {
                    let o = &config.flights[g];
                    o.origin == trip.origin && o.destination == trip.destination && o.date == date
                })
                .map(&fare_now)
                .min()
                .unwrap_or_else(|| fare_now(flight))
        };
        let mut cheapest = cheapest_on(&trip.date);
        if persona == Persona::ChangesMind
            && let Some(alt) = &alternative
        {
            cheapest = cheapest.max(cheapest_on(&alt.date));
        }
        let budget_cents =
            cheapest.saturating_add(cheapest.saturating_mul(i64::from(config.budget_margin_percent)) / 100);
        Passenger {
            user_rng,
            traveller,
            persona,
            trip,
            alternative,
            mind_changed: false,
            budget_cents,
            confirmed: None,
            told: Vec::new(),
            fares_told: 0,
            fares_told_wrong: 0,
            left_at_ms: None,
            patience_at_ms: None,
            outbox: Outbox::new(),
            progress: Progress::new(),
            voice: None,
            seats_read: Vec::new(),
        }
    }

    /// What a model playing this traveller is told: its persona, its trip and
    /// budget, and every fact it holds.
    pub(super) fn instructions(&self, config: &FlightBookingConfig) -> String {
        let t = &config.travellers[self.traveller];
        let trip = &self.trip;
        format!(
            "Persona:\n\t{}\nInstructions:\n\tReason for call:\n\t\tYou want a flight from {} to {} on {}, at most {} cents.\n\tKnown info:\n\t\ttraveller_id: {}\n\t\tname: {}\n\t\tbudget_cents: {}\n",
            self.persona.name(),
            trip.origin,
            trip.destination,
            trip.date,
            self.budget_cents,
            t.id,
            t.name,
            self.budget_cents,
        )
    }
}
