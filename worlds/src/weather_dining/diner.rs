//! One session's diner: who, what table they want, and what they were told.
//! The cities, their weather, the restaurants and the reservations are the
//! world's, shared by every session; a `Diner` is what belongs to one
//! conversation, and its [`Record`] is what the judge reads of it (all that
//! is kept once the session ended).

use agentsim_engine::{Progress, SessionId, Stream, StreamSource, TimeMs};

use super::tables::TablesRead;
use super::{Persona, WeatherDiningConfig};
use crate::kit::outbox::Outbox;
use crate::kit::persona::draw;
use crate::talk::voice::Voice;

/// What the judge reads of a session's diner, kept after the session ended.
pub(super) struct Record {
    /// Index into the scenario's customers.
    pub(super) customer: usize,
    /// Index into the world's cities.
    pub(super) city: usize,
    pub(super) party_size: i64,
    /// `done` messages: (time, reservation id).
    pub(super) told: Vec<(TimeMs, String)>,
    pub(super) left_at_ms: Option<TimeMs>,
    pub(super) progress: Progress,
    /// The reservations that serve the session (its agent's, and another's
    /// the service answered it with, by the same idempotency key): their
    /// places in the world's `reservations`, ascending.
    pub(super) reservations: Vec<u32>,
}

impl Record {
    /// A record of nothing (what the diner being handled holds once its
    /// record was kept).
    pub(super) fn empty(customer: usize) -> Self {
        Record {
            customer,
            city: 0,
            party_size: 0,
            told: Vec::new(),
            left_at_ms: None,
            progress: Progress::new(),
            reservations: Vec::new(),
        }
    }
}

/// One session's diner.
pub(super) struct Diner {
    pub(super) user_rng: Stream,
    /// What the judge reads (kept when the session ends).
    pub(super) record: Record,
    pub(super) persona: Persona,
    pub(super) outbox: Outbox,
    /// How the customer words its answers to text (made on the first one).
    pub(super) voice: Option<Voice>,
    /// What this session's agent last read of each counted seating (`tables.rs`).
    pub(super) tables_read: Vec<TablesRead>,
}

impl Diner {
    /// Session `session`'s customer, city, party and persona, drawn from its
    /// user's stream (`"user.N"`) in the order a run of one session always
    /// drew them.
    pub(super) fn draw(
        config: &WeatherDiningConfig,
        streams: &StreamSource,
        session: SessionId,
        cities: usize,
    ) -> Self {
        let mut user_rng = streams.session_stream("user", session);
        let customer = user_rng.below(config.customers.len() as u64) as usize;
        let city = user_rng.below(cities as u64) as usize;
        let party_size = user_rng.between(u64::from(config.party_size_min), u64::from(config.party_size_max)) as i64;
        let persona = draw(&config.personas.weights(), &mut user_rng).unwrap_or(Persona::Clear);
        Diner {
            user_rng,
            record: Record { city, party_size, ..Record::empty(customer) },
            persona,
            outbox: Outbox::new(),
            voice: None,
            tables_read: Vec::new(),
        }
    }
}
