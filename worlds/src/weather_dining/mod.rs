//! weather_dining: a table for tonight, outdoors if it stays dry.
//!
//! A customer wants a table for a party in a city, outdoors if the weather is dry
//! and indoors if it rains. The weather changes on its own. `get_weather` has two
//! providers: the primary has 503 bursts of tens of seconds, the backup is slower
//! but up. The right move under a burst is to wait and retry or switch provider,
//! not to declare the task impossible. Success, judged from the final state: one
//! reservation in the city for the party, outdoors exactly when it was dry at
//! booking time, and the customer told. Minefields: outdoor seating in the rain, a
//! second reservation, a reservation after the customer left, a message to another
//! customer.
//!
//! Many sessions share the weather, the restaurants and the reservations, each
//! with a diner of its own; when the scenario counts a seating's tables, a
//! reservation past the last one is judged, between sessions as a race
//! (`tables.rs`, docs/sessions.md).

pub mod config;
pub mod expert;
pub mod tools;
pub mod world;

pub use config::WeatherDiningConfig;
pub use expert::Expert;
pub use tools::Ids;
pub use world::WeatherDining;

crate::kit::builtin_world::builtin_world!(WeatherDiningConfig, WeatherDining);
