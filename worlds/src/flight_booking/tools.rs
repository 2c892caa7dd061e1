//! The flight_booking tools as a service documents them.

use agentsim_engine::{Constraint, ToolDef, ToolKind, ToolSpec, ValueKind};

use super::config::Tools;
use crate::kit::catalog::{escalate_def, specs_by_name};
use crate::kit::tool_ids::tool_ids;

/// The kinds of message `send_message` sends.
pub const MESSAGE_KINDS: &[&str] = &["ask", "done", "info", "quote"];

tool_ids! {
    /// Tool ids of flight_booking in a catalog.
    pub struct Ids { search_flights, get_fare, book, cancel, get_bookings, send_message, escalate }
}

/// The tools with their documentation and the scenario's configuration.
pub fn specs(tools: &Tools) -> Vec<ToolSpec> {
    specs_by_name(
        vec![
            search_flights(),
            get_fare(),
            book(),
            cancel(),
            get_bookings(),
            send_message(),
            escalate_def("traveller_id", "Hands the conversation to a human agent."),
        ],
        &tools.configs(),
    )
}

/// `search_flights`, as the service documents it.
fn search_flights() -> ToolDef {
    use ValueKind::{List, Str};
    ToolDef::new(
        "search_flights",
        ToolKind::Read,
        "Flights on a route and day with their current fares (served from a replica that can lag).",
    )
    .arg("origin", Str, true)
    .arg("destination", Str, true)
    .arg("date", Str, true)
    .field("flights", List)
}

/// `get_fare`, as the service documents it.
fn get_fare() -> ToolDef {
    use ValueKind::{Int, Str};
    ToolDef::new("get_fare", ToolKind::Read, "The current fare of one flight.")
        .id_arg("flight_id")
        .field("flight_id", Str)
        .field("date", Str)
        .field("fare_cents", Int)
}

/// `book`, as the service documents it.
fn book() -> ToolDef {
    use ValueKind::{Int, Str};
    ToolDef::new(
        "book",
        ToolKind::Write,
        "Books a flight at the quoted fare. Answers 409 \"fare changed\" when `fare_cents` is not the \
         current fare. Not idempotent unless an idempotency key is sent.",
    )
    .id_arg("traveller_id")
    .id_arg("flight_id")
    .arg("fare_cents", Int, true)
    .field("booking_id", Str)
    .field("flight_id", Str)
    .field("fare_cents", Int)
    .field("status", Str)
    .constraint(Constraint::Positive { arg: "fare_cents".into() })
}

/// `cancel`, as the service documents it.
fn cancel() -> ToolDef {
    use ValueKind::Str;
    ToolDef::new("cancel", ToolKind::Write, "Cancels a booking.")
        .id_arg("booking_id")
        .field("booking_id", Str)
        .field("status", Str)
}

/// `get_bookings`, as the service documents it.
fn get_bookings() -> ToolDef {
    use ValueKind::List;
    ToolDef::new("get_bookings", ToolKind::Read, "A traveller's bookings, active and cancelled.")
        .id_arg("traveller_id")
        .field("bookings", List)
}

/// `send_message`, as the service documents it.
fn send_message() -> ToolDef {
    use ValueKind::{Int, Str};
    ToolDef::new(
        "send_message",
        ToolKind::Write,
        "Sends the traveller a message: kind `quote` (a flight and its fare, asking to confirm), \
         `done` (the booking and its fare), `ask` (asks for the date) or `info`.",
    )
    .id_arg("traveller_id")
    .arg_one_of("kind", MESSAGE_KINDS)
    .arg("flight_id", Str, false)
    .arg("fare_cents", Int, false)
    .arg("booking_id", Str, false)
    .field("message_id", Str)
    .field("status", Str)
    .phrase("quote", "The fare of {flight_id} is {fare_cents}. Shall I book it?")
    .phrase("ask", "Which date would you like to fly?")
    .phrase("done", "Your flight {flight_id} is booked: booking {booking_id} at {fare_cents}.")
    .phrase("info", "{details}")
}
