//! The weather_dining tools as a service documents them.

use agentsim_engine::{ToolDef, ToolKind, ToolSpec, ValueKind};

use super::config::Tools;
use crate::kit::catalog::{escalate_def, specs_by_name};
use crate::kit::tool_ids::tool_ids;

/// The kinds of message `send_message` sends.
pub const MESSAGE_KINDS: &[&str] = &["ask", "done", "info"];

tool_ids! {
    /// Tool ids of weather_dining in a catalog (`get_weather` is the primary weather
    /// provider, `get_weather_backup` the second).
    pub struct Ids { get_weather, get_weather_backup, find_restaurants, reserve, get_reservations, send_message, escalate }
}

fn weather(name: &str, description: &str) -> ToolDef {
    ToolDef::new(name, ToolKind::Read, description)
        .arg("city", ValueKind::Str, true)
        .field("city", ValueKind::Str)
        .field("condition", ValueKind::Str)
}

/// The tools with their documentation and the scenario's configuration.
pub fn specs(tools: &Tools) -> Vec<ToolSpec> {
    specs_by_name(
        vec![
            get_weather(),
            get_weather_backup(),
            find_restaurants(),
            reserve(),
            get_reservations(),
            send_message(),
            escalate_def("customer_id", "Hands the conversation to a human agent."),
        ],
        &tools.configs(),
    )
}

/// `get_weather`, as the service documents it.
fn get_weather() -> ToolDef {
    weather("get_weather", "Tonight's weather in a city: condition `dry` or `rain` (primary provider).")
}

/// `get_weather_backup`, as the service documents it.
fn get_weather_backup() -> ToolDef {
    weather("get_weather_backup", "Tonight's weather in a city from a second provider; same answer shape.")
}

/// `find_restaurants`, as the service documents it.
fn find_restaurants() -> ToolDef {
    use ValueKind::{Int, List, Str};
    ToolDef::new(
        "find_restaurants",
        ToolKind::Read,
        "Restaurants in a city with a free table for the party, `seating` `indoor` or `outdoor`. \
         Outdoor seating is only for dry weather: check the weather first.",
    )
    .arg("city", Str, true)
    .arg("party_size", Int, true)
    .arg("seating", Str, true)
    .field("restaurants", List)
}

/// `reserve`, as the service documents it.
fn reserve() -> ToolDef {
    use ValueKind::{Int, Str};
    ToolDef::new("reserve", ToolKind::Write, "Reserves a table. Not idempotent unless an idempotency key is sent.")
        .id_arg("customer_id")
        .id_arg("restaurant_id")
        .arg("party_size", Int, true)
        .arg("seating", Str, true)
        .field("reservation_id", Str)
        .field("restaurant_id", Str)
        .field("seating", Str)
        .field("status", Str)
}

/// `get_reservations`, as the service documents it.
fn get_reservations() -> ToolDef {
    use ValueKind::List;
    ToolDef::new("get_reservations", ToolKind::Read, "A customer's reservations for tonight.")
        .id_arg("customer_id")
        .field("reservations", List)
}

/// `send_message`, as the service documents it.
fn send_message() -> ToolDef {
    use ValueKind::Str;
    ToolDef::new(
        "send_message",
        ToolKind::Write,
        "Sends the customer a message: kind `done` (the reservation), `ask` (asks for the party size) or `info`.",
    )
    .id_arg("customer_id")
    .arg_one_of("kind", MESSAGE_KINDS)
    .arg("reservation_id", Str, false)
    .field("message_id", Str)
    .field("status", Str)
    .phrase("ask", "How many people will be joining?")
    .phrase("done", "Your table is reserved: reservation {reservation_id}.")
    .phrase("info", "{details}")
}
