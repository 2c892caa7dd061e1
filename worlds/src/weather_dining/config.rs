//! The weather_dining section of a scenario: customers, restaurants, the weather
//! process, personas and tools.

use serde::{Deserialize, Serialize};

use agentsim_engine::{Latency, Probability, TimeMs};

use crate::kit::checks::{ConfigError, ConfigErrorKind, not_empty, positive_interval, unique_ids};
use crate::kit::persona::personas;
use crate::kit::tool_configs::tool_configs;

/// A customer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Customer {
    /// Customer id, like `"C01"`.
    pub id: String,
    /// Display name.
    pub name: String,
}

/// A restaurant and its tables for tonight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RestaurantUnchecked")]
pub struct Restaurant {
    /// Restaurant id, like `"R01"`; unique.
    pub id: String,
    /// Display name.
    pub name: String,
    /// The city it is in.
    pub city: String,
    /// Seats indoors (the largest party it can seat inside).
    pub indoor_seats: u32,
    /// Seats outdoors.
    pub outdoor_seats: u32,
    /// Indoor tables for tonight, when the scenario counts them: reads then
    /// show `tables_left` and a reservation beyond them is judged
    /// (`overbooked`, and between sessions `table_booked_twice` and
    /// `reservation_honoured_after_full`; see `world::tables`). `None` (the
    /// default): not counted, not shown and not judged, as before tables
    /// were counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indoor_tables: Option<u32>,
    /// Outdoor tables for tonight, when counted (as `indoor_tables`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outdoor_tables: Option<u32>,
}

/// The most tables of one seating a restaurant may have for a night (more
/// than any dining room).
pub const TABLES_MAX: u32 = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RestaurantUnchecked {
    id: String,
    name: String,
    city: String,
    #[serde(default)]
    indoor_seats: u32,
    #[serde(default)]
    outdoor_seats: u32,
    #[serde(default)]
    indoor_tables: Option<u32>,
    #[serde(default)]
    outdoor_tables: Option<u32>,
}

impl TryFrom<RestaurantUnchecked> for Restaurant {
    type Error = ConfigError;
    fn try_from(r: RestaurantUnchecked) -> Result<Self, Self::Error> {
        for (field, tables) in [("indoor_tables", r.indoor_tables), ("outdoor_tables", r.outdoor_tables)] {
            if let Some(n) = tables.filter(|&n| n > TABLES_MAX) {
                return Err(ConfigError::at_field(
                    ConfigErrorKind::OutOfRange,
                    field,
                    format!("expected at most {TABLES_MAX} tables, found {n}"),
                ));
            }
        }
        Ok(Restaurant {
            id: r.id,
            name: r.name,
            city: r.city,
            indoor_seats: r.indoor_seats,
            outdoor_seats: r.outdoor_seats,
            indoor_tables: r.indoor_tables,
            outdoor_tables: r.outdoor_tables,
        })
    }
}

impl Restaurant {
    /// The tables of a seating counted for tonight (`None`: not counted).
    pub fn tables(&self, outdoor: bool) -> Option<u32> {
        if outdoor { self.outdoor_tables } else { self.indoor_tables }
    }

    /// The largest party a seating takes (0: the restaurant has none).
    pub fn seats(&self, outdoor: bool) -> u32 {
        if outdoor { self.outdoor_seats } else { self.indoor_seats }
    }
}

personas! {
    /// How often each persona is drawn (relative weights, not all zero).
    pub struct Personas {
        #[doc = "Names city and party size."]
        clear: Clear = 0.6,
        #[doc = "Names the city only; the party size when asked."]
        vague: Vague = 0.2,
        #[doc = "Clear, but leaves after `patience_ms` without a table."]
        impatient: Impatient = 0.2,
    }
}

tool_configs! {
    /// The tools of weather_dining and their behaviour.
    pub struct Tools {
        /// `get_weather(city)`, the primary provider.
        get_weather,
        /// `get_weather_backup(city)`, the second provider.
        get_weather_backup,
        /// `find_restaurants(city, party_size, seating)`.
        find_restaurants,
        /// `reserve(customer_id, restaurant_id, party_size, seating)`.
        reserve,
        /// `get_reservations(customer_id)`.
        get_reservations,
        /// `send_message(customer_id, kind, ...)`.
        send_message,
        /// `escalate(customer_id, reason)`.
        escalate,
        /// `authenticate()`, the engine's session renewal.
        authenticate,
    }
}

/// The weather_dining world's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WeatherDiningConfig {
    /// Customers.
    pub customers: Vec<Customer>,
    /// Restaurants.
    pub restaurants: Vec<Restaurant>,
    /// Chance that it rains, drawn per city at time 0 and at every weather change.
    pub rain_probability: Probability,
    /// Time between two weather changes (per city).
    pub weather_change_ms: Latency,
    /// Smallest and largest party, drawn uniformly.
    pub party_size_min: u32,
    /// Largest party.
    pub party_size_max: u32,
    /// How long an impatient customer waits for a table before leaving.
    #[serde(deserialize_with = "agentsim_engine::time::bounded_ms")]
    pub patience_ms: TimeMs,
    /// Persona weights.
    pub personas: Personas,
    /// How long the customer takes to answer.
    pub reply_ms: Latency,
    /// The tools.
    pub tools: Tools,
}

impl Default for WeatherDiningConfig {
    fn default() -> Self {
        let r = |id: &str, name: &str, city: &str, indoor_seats, outdoor_seats| Restaurant {
            id: id.into(),
            name: name.into(),
            city: city.into(),
            indoor_seats,
            outdoor_seats,
            indoor_tables: None,
            outdoor_tables: None,
        };
        Self {
            customers: vec![
                Customer { id: "C01".into(), name: "Ada".into() },
                Customer { id: "C02".into(), name: "Grace".into() },
            ],
            restaurants: vec![
                r("R01", "Terrazza", "Lisbon", 6, 8),
                r("R02", "Casa Azul", "Lisbon", 10, 0),
                r("R03", "Le Jardin", "Paris", 4, 6),
                r("R04", "Bistro Nord", "Paris", 8, 0),
            ],
            rain_probability: Probability::try_from(0.4).expect("0.4 is a probability"),
            weather_change_ms: Latency::Uniform { min_ms: 300_000, max_ms: 1_200_000 },
            party_size_min: 2,
            party_size_max: 6,
            patience_ms: 180_000,
            personas: Personas::default(),
            reply_ms: Latency::Uniform { min_ms: 4_000, max_ms: 30_000 },
            tools: Tools::default(),
        }
    }
}

impl WeatherDiningConfig {
    /// Cross-checks that serde cannot express. Returns the first problem.
    pub fn check(&self) -> Result<(), ConfigError> {
        unique_ids(self.customers.iter().map(|c| c.id.as_str()), "customers", "customer")?;
        not_empty(self.customers.is_empty(), "customers", "customer")?;
        unique_ids(self.restaurants.iter().map(|r| r.id.as_str()), "restaurants", "restaurant")?;
        if self.party_size_min == 0 || self.party_size_max < self.party_size_min {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "party_size_max",
                format!(
                    "expected 1 <= party_size_min <= party_size_max, found {}..={}",
                    self.party_size_min, self.party_size_max
                ),
            ));
        }
        // Every city must seat the largest party both inside and outside, or a seed
        // could draw a task that cannot be done whatever the weather.
        // The most seats (indoor, outdoor) of any restaurant per city: one pass, so
        // the check stays O(n log n) for a long list.
        let mut most: std::collections::BTreeMap<&str, (u32, u32)> = std::collections::BTreeMap::new();
        for r in &self.restaurants {
            let seats = most.entry(r.city.as_str()).or_default();
            *seats = (seats.0.max(r.indoor_seats), seats.1.max(r.outdoor_seats));
        }
        for r in &self.restaurants {
            let city = &r.city;
            let (indoor, outdoor) = most[city.as_str()];
            if indoor < self.party_size_max || outdoor < self.party_size_max {
                return Err(ConfigError::new(
                    ConfigErrorKind::Unsatisfiable,
                    "restaurants",
                    city,
                    format!("city `{city}` cannot seat a party of {} both indoors and outdoors", self.party_size_max),
                ));
            }
        }
        not_empty(self.restaurants.is_empty(), "restaurants", "restaurant")?;
        positive_interval(&self.weather_change_ms, "weather_change_ms", "weather changes")?;
        self.personas.check()
    }
}
