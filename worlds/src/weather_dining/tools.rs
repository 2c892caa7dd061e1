//! The weather_dining tools as a service documents them.

use agentsim_engine::{ToolDef, ToolId, ToolKind, ToolSpec, ValueKind};

use super::config::Tools;
use crate::kit::catalog::{escalate_def, specs_with_authenticate};

/// Tool ids of weather_dining in a catalog.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    /// `get_weather` (primary provider)
    pub get_weather: ToolId,
    /// `get_weather_backup` (second provider)
    pub get_weather_backup: ToolId,
    /// `find_restaurants`
    pub find_restaurants: ToolId,
    /// `reserve`
    pub reserve: ToolId,
    /// `get_reservations`
    pub get_reservations: ToolId,
    /// `send_message`
    pub send_message: ToolId,
    /// `escalate`
    pub escalate: ToolId,
    /// `authenticate`
    pub authenticate: ToolId,
}

impl Ids {
    /// Finds the tools in `catalog`; `None` if one is missing.
    pub fn find(catalog: &agentsim_engine::Catalog) -> Option<Ids> {
        Some(Ids {
            get_weather: catalog.id("get_weather")?,
            get_weather_backup: catalog.id("get_weather_backup")?,
            find_restaurants: catalog.id("find_restaurants")?,
            reserve: catalog.id("reserve")?,
            get_reservations: catalog.id("get_reservations")?,
            send_message: catalog.id("send_message")?,
            escalate: catalog.id("escalate")?,
            authenticate: catalog.id(agentsim_engine::tool::AUTHENTICATE)?,
        })
    }
}

fn weather(name: &str, description: &str) -> ToolDef {
    ToolDef::new(name, ToolKind::Read, description)
        .arg("city", ValueKind::Str, true)
        .field("city", ValueKind::Str)
        .field("condition", ValueKind::Str)
}

/// The tools with their documentation and the scenario's configuration.
pub fn specs(tools: &Tools) -> Vec<ToolSpec> {
    use ValueKind::{Int, List, Str};
    let defs = [
        (
            weather("get_weather", "Tonight's weather in a city: condition `dry` or `rain` (primary provider)."),
            &tools.get_weather,
        ),
        (
            weather("get_weather_backup", "Tonight's weather in a city from a second provider; same answer shape."),
            &tools.get_weather_backup,
        ),
        (
            ToolDef::new(
                "find_restaurants",
                ToolKind::Read,
                "Restaurants in a city with a free table for the party, `seating` `indoor` or `outdoor`. \
                 Outdoor seating is only for dry weather: check the weather first.",
            )
            .arg("city", Str, true)
            .arg("party_size", Int, true)
            .arg("seating", Str, true)
            .field("restaurants", List),
            &tools.find_restaurants,
        ),
        (
            ToolDef::new(
                "reserve",
                ToolKind::Write,
                "Reserves a table. Not idempotent unless an idempotency key is sent.",
            )
            .id_arg("customer_id")
            .id_arg("restaurant_id")
            .arg("party_size", Int, true)
            .arg("seating", Str, true)
            .field("reservation_id", Str)
            .field("restaurant_id", Str)
            .field("seating", Str)
            .field("status", Str),
            &tools.reserve,
        ),
        (
            ToolDef::new("get_reservations", ToolKind::Read, "A customer's reservations for tonight.")
                .id_arg("customer_id")
                .field("reservations", List),
            &tools.get_reservations,
        ),
        (
            ToolDef::new(
                "send_message",
                ToolKind::Write,
                "Sends the customer a message: kind `done` (the reservation), `ask` (asks for the party size) or `info`.",
            )
            .id_arg("customer_id")
            .arg("kind", Str, true)
            .arg("reservation_id", Str, false)
            .field("message_id", Str)
            .field("status", Str),
            &tools.send_message,
        ),
        (escalate_def("customer_id", "Hands the conversation to a human agent."), &tools.escalate),
    ];
    specs_with_authenticate(defs, &tools.authenticate)
}
