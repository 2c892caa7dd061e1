//! flight_booking: fares that move on their own, a traveller with a budget.
//!
//! A traveller wants a flight on a route and date, within a budget. Fares walk at
//! random every few virtual minutes, so a fare read a while ago may be gone: `book`
//! answers 409 "fare changed" when the quoted fare is not the current one. Success,
//! judged from the final state: exactly one active booking, on the traveller's
//! (latest) route and date, within budget, at the fare the traveller confirmed, and
//! the traveller told it. Minefields: a stale fare told to the traveller
//! (contextual accuracy, even if the booking later succeeds), a booking over
//! budget, a second active booking, a booking after the traveller left.
//!
//! Many sessions share the flights, fares and bookings, each with a traveller
//! of its own; when the scenario counts a flight's seats, a booking past the
//! last one is judged, between sessions as a race (`seats.rs`,
//! docs/sessions.md).

pub mod config;
pub mod expert;
pub mod tools;
pub mod world;

pub use config::FlightBookingConfig;
pub use expert::Expert;
pub use tools::Ids;
pub use world::FlightBooking;

crate::kit::builtin_world::builtin_world!(FlightBookingConfig, FlightBooking);
