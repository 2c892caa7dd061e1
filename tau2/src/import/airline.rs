//! tau2's airline domain: its database as pydantic dumps it (flights, users,
//! reservations; each reservation gains `"status": null`), its 14 tools
//! (`airline.rhai`), the read that verifies each write, and the facts its
//! users state (their user id and the reservation ids they know).

use serde::Deserialize;

use agentsim_engine::{Key, Value};

use super::scenario::{Arg, FaultProfile, ToolShape};
use super::tasks::{Action, Task, ron_string};
use super::{DB, Domain, ImportError, Options, Ordered, Records, f, map, opt, parse, s, strings};

/// The port of tau2's airline tools, written beside the scenario: its head,
/// the Python helpers every domain shares, and the tools.
pub const AIRLINE_SCRIPT: &str = concat!(
    include_str!("../airline_head.rhai"),
    include_str!("../python.rhai"),
    include_str!("../airline_tools.rhai")
);

/// tau2's airline domain.
pub(crate) const AIRLINE: Domain = Domain {
    name: "airline",
    class: "AirlineTools",
    header: "// tau2-bench's airline domain, imported by `agentsim import-tau2`: the tables\n// are its database, airline.rhai its 14 tools, and each task one of its tasks\n// with its gold actions. `state_hash: Tau2` hashes the final database as\n// tau2 does (the `state_hash` column of trajectories.csv). The agent's\n// rules are in policy.md beside this file.\n",
    description: "tau2-bench airline: a customer asks to book, change or cancel flight reservations, their passengers, cabin or baggage, or for compensation.",
    tables: &["flights", "users", "reservations"],
    tools: TOOLS,
    faults: FaultProfile {
        stale_read: "get_reservation_details",
        rate_limited: "search_direct_flight",
        drift: ("get_user_details", "payment_methods", "payment_options"),
    },
    // A search reads the 300 flights at once (their 9,000 dates count
    // towards the script's sizes), and a one-stop search scans them again
    // per first leg.
    limits: Some(
        "(operations_max: 5_000_000, string_bytes_max: 4_000_000, array_len_max: 100_000, map_len_max: 200_000)",
    ),
    records,
    script: airline_script,
    verify,
    facts,
};

/// The port of the tools (airline has no reading to choose).
fn airline_script(_options: Options) -> String {
    AIRLINE_SCRIPT.to_string()
}

// ----- tau2's airline data model, as db.json holds it -----

#[derive(Deserialize)]
struct Db {
    flights: Ordered<Flight>,
    users: Ordered<User>,
    reservations: Ordered<Reservation>,
}

#[derive(Deserialize)]
struct Flight {
    flight_number: String,
    origin: String,
    destination: String,
    scheduled_departure_time_est: String,
    scheduled_arrival_time_est: String,
    dates: Ordered<FlightDate>,
}

/// A flight on one date, by its status (tau2's `FlightDateStatus` union).
#[derive(Deserialize)]
#[serde(tag = "status")]
enum FlightDate {
    #[serde(rename = "available")]
    Available { available_seats: Ordered<i64>, prices: Ordered<i64> },
    #[serde(rename = "landed")]
    Landed { actual_departure_time_est: String, actual_arrival_time_est: String },
    #[serde(rename = "cancelled")]
    Cancelled {},
    #[serde(rename = "delayed")]
    Delayed { estimated_departure_time_est: String, estimated_arrival_time_est: String },
    #[serde(rename = "flying")]
    Flying { actual_departure_time_est: String, estimated_arrival_time_est: String },
    #[serde(rename = "on time")]
    OnTime { estimated_departure_time_est: String, estimated_arrival_time_est: String },
}

#[derive(Deserialize)]
struct Name {
    first_name: String,
    last_name: String,
}

#[derive(Deserialize)]
struct Address {
    address1: String,
    #[serde(default)]
    address2: Option<String>,
    city: String,
    country: String,
    state: String,
    zip: String,
}

#[derive(Deserialize)]
#[serde(tag = "source")]
enum PaymentMethod {
    #[serde(rename = "credit_card")]
    CreditCard { id: String, brand: String, last_four: String },
    #[serde(rename = "gift_card")]
    GiftCard { id: String, amount: f64 },
    #[serde(rename = "certificate")]
    Certificate { id: String, amount: f64 },
}

#[derive(Deserialize)]
struct Passenger {
    first_name: String,
    last_name: String,
    dob: String,
}

#[derive(Deserialize)]
enum Membership {
    #[serde(rename = "gold")]
    Gold,
    #[serde(rename = "silver")]
    Silver,
    #[serde(rename = "regular")]
    Regular,
}

#[derive(Deserialize)]
struct User {
    user_id: String,
    name: Name,
    address: Address,
    email: String,
    dob: String,
    payment_methods: Ordered<PaymentMethod>,
    saved_passengers: Vec<Passenger>,
    membership: Membership,
    reservations: Vec<String>,
}

#[derive(Deserialize)]
struct ReservationFlight {
    flight_number: String,
    origin: String,
    destination: String,
    date: String,
    price: i64,
}

#[derive(Deserialize)]
struct Payment {
    payment_id: String,
    amount: i64,
}

#[derive(Deserialize)]
enum FlightType {
    #[serde(rename = "round_trip")]
    RoundTrip,
    #[serde(rename = "one_way")]
    OneWay,
}

#[derive(Deserialize)]
enum Cabin {
    #[serde(rename = "business")]
    Business,
    #[serde(rename = "economy")]
    Economy,
    #[serde(rename = "basic_economy")]
    BasicEconomy,
}

impl Cabin {
    fn name(&self) -> &'static str {
        match self {
            Cabin::Business => "business",
            Cabin::Economy => "economy",
            Cabin::BasicEconomy => "basic_economy",
        }
    }
}

#[derive(Deserialize)]
enum Insurance {
    #[serde(rename = "yes")]
    Yes,
    #[serde(rename = "no")]
    No,
}

#[derive(Deserialize)]
enum ReservationStatus {
    #[serde(rename = "cancelled")]
    Cancelled,
}

#[derive(Deserialize)]
struct Reservation {
    reservation_id: String,
    user_id: String,
    origin: String,
    destination: String,
    flight_type: FlightType,
    cabin: Cabin,
    flights: Vec<ReservationFlight>,
    passengers: Vec<Passenger>,
    payment_history: Vec<Payment>,
    created_at: String,
    total_baggages: i64,
    nonfree_baggages: i64,
    insurance: Insurance,
    #[serde(default)]
    status: Option<ReservationStatus>,
}

// ----- conversion to values, as pydantic's model_dump writes them -----

const CABINS: [&str; 3] = ["business", "economy", "basic_economy"];

/// A `dict[CabinClass, int]`: its keys must be cabins.
fn by_cabin(o: &Ordered<i64>, what: &str) -> Result<Value, ImportError> {
    let mut pairs = Vec::with_capacity(o.0.len());
    for (cabin, n) in &o.0 {
        if !CABINS.contains(&cabin.as_str()) {
            return Err(ImportError {
                file: DB.into(),
                line: 1,
                column: 1,
                message: format!("field `{what}`: `{cabin}` is not a cabin ({})", CABINS.join(", ")),
            });
        }
        pairs.push((Key::Owned(cabin.clone()), Value::Int(*n)));
    }
    Ok(Value::Map(pairs))
}

fn flight(x: &Flight) -> Result<Value, ImportError> {
    let mut dates = Vec::with_capacity(x.dates.0.len());
    for (date, d) in &x.dates.0 {
        let at = |field: &str| format!("flights.{}.dates.{date}.{field}", x.flight_number);
        let value = match d {
            FlightDate::Available { available_seats, prices } => map(vec![
                ("status", s("available")),
                ("available_seats", by_cabin(available_seats, &at("available_seats"))?),
                ("prices", by_cabin(prices, &at("prices"))?),
            ]),
            FlightDate::Landed { actual_departure_time_est, actual_arrival_time_est } => map(vec![
                ("status", s("landed")),
                ("actual_departure_time_est", s(actual_departure_time_est)),
                ("actual_arrival_time_est", s(actual_arrival_time_est)),
            ]),
            FlightDate::Cancelled {} => map(vec![("status", s("cancelled"))]),
            FlightDate::Delayed { estimated_departure_time_est, estimated_arrival_time_est } => map(vec![
                ("status", s("delayed")),
                ("estimated_departure_time_est", s(estimated_departure_time_est)),
                ("estimated_arrival_time_est", s(estimated_arrival_time_est)),
            ]),
            FlightDate::Flying { actual_departure_time_est, estimated_arrival_time_est } => map(vec![
                ("status", s("flying")),
                ("actual_departure_time_est", s(actual_departure_time_est)),
                ("estimated_arrival_time_est", s(estimated_arrival_time_est)),
            ]),
            FlightDate::OnTime { estimated_departure_time_est, estimated_arrival_time_est } => map(vec![
                ("status", s("on time")),
                ("estimated_departure_time_est", s(estimated_departure_time_est)),
                ("estimated_arrival_time_est", s(estimated_arrival_time_est)),
            ]),
        };
        dates.push((Key::Owned(date.clone()), value));
    }
    Ok(map(vec![
        ("flight_number", s(&x.flight_number)),
        ("origin", s(&x.origin)),
        ("destination", s(&x.destination)),
        ("scheduled_departure_time_est", s(&x.scheduled_departure_time_est)),
        ("scheduled_arrival_time_est", s(&x.scheduled_arrival_time_est)),
        ("dates", Value::Map(dates)),
    ]))
}

fn passenger(p: &Passenger) -> Value {
    map(vec![("first_name", s(&p.first_name)), ("last_name", s(&p.last_name)), ("dob", s(&p.dob))])
}

fn user(u: &User) -> Result<Value, ImportError> {
    let mut methods = Vec::with_capacity(u.payment_methods.0.len());
    for (key, m) in &u.payment_methods.0 {
        let at = format!("users.{}.payment_methods.{key}.amount", u.user_id);
        let value = match m {
            PaymentMethod::CreditCard { id, brand, last_four } => {
                map(vec![("source", s("credit_card")), ("id", s(id)), ("brand", s(brand)), ("last_four", s(last_four))])
            }
            PaymentMethod::GiftCard { id, amount } => {
                map(vec![("source", s("gift_card")), ("id", s(id)), ("amount", f(*amount, DB, &at)?)])
            }
            PaymentMethod::Certificate { id, amount } => {
                map(vec![("source", s("certificate")), ("id", s(id)), ("amount", f(*amount, DB, &at)?)])
            }
        };
        methods.push((Key::Owned(key.clone()), value));
    }
    let a = &u.address;
    Ok(map(vec![
        ("user_id", s(&u.user_id)),
        ("name", map(vec![("first_name", s(&u.name.first_name)), ("last_name", s(&u.name.last_name))])),
        (
            "address",
            map(vec![
                ("address1", s(&a.address1)),
                ("address2", opt(&a.address2, |x| Ok(s(x)))?),
                ("city", s(&a.city)),
                ("country", s(&a.country)),
                ("state", s(&a.state)),
                ("zip", s(&a.zip)),
            ]),
        ),
        ("email", s(&u.email)),
        ("dob", s(&u.dob)),
        ("payment_methods", Value::Map(methods)),
        ("saved_passengers", Value::List(u.saved_passengers.iter().map(passenger).collect())),
        (
            "membership",
            s(match u.membership {
                Membership::Gold => "gold",
                Membership::Silver => "silver",
                Membership::Regular => "regular",
            }),
        ),
        ("reservations", strings(&u.reservations)),
    ]))
}

fn reservation(r: &Reservation) -> Value {
    let flights = r
        .flights
        .iter()
        .map(|x| {
            map(vec![
                ("flight_number", s(&x.flight_number)),
                ("origin", s(&x.origin)),
                ("destination", s(&x.destination)),
                ("date", s(&x.date)),
                ("price", Value::Int(x.price)),
            ])
        })
        .collect();
    let payments = (r.payment_history.iter())
        .map(|p| map(vec![("payment_id", s(&p.payment_id)), ("amount", Value::Int(p.amount))]))
        .collect();
    map(vec![
        ("reservation_id", s(&r.reservation_id)),
        ("user_id", s(&r.user_id)),
        ("origin", s(&r.origin)),
        ("destination", s(&r.destination)),
        (
            "flight_type",
            s(match r.flight_type {
                FlightType::RoundTrip => "round_trip",
                FlightType::OneWay => "one_way",
            }),
        ),
        ("cabin", s(r.cabin.name())),
        ("flights", Value::List(flights)),
        ("passengers", Value::List(r.passengers.iter().map(passenger).collect())),
        ("payment_history", Value::List(payments)),
        ("created_at", s(&r.created_at)),
        ("total_baggages", Value::Int(r.total_baggages)),
        ("nonfree_baggages", Value::Int(r.nonfree_baggages)),
        (
            "insurance",
            s(match r.insurance {
                Insurance::Yes => "yes",
                Insurance::No => "no",
            }),
        ),
        ("status", r.status.as_ref().map_or(Value::Null, |ReservationStatus::Cancelled| s("cancelled"))),
    ])
}

/// The database's three tables as tau2's pydantic models dump them.
fn records(db_json: &str) -> Result<Vec<Records>, ImportError> {
    let db: Db = parse(db_json, DB)?;
    let mut flights = Vec::with_capacity(db.flights.0.len());
    for (k, x) in &db.flights.0 {
        flights.push((k.clone(), flight(x)?));
    }
    let mut users = Vec::with_capacity(db.users.0.len());
    for (k, u) in &db.users.0 {
        users.push((k.clone(), user(u)?));
    }
    let reservations = db.reservations.0.iter().map(|(k, r)| (k.clone(), reservation(r))).collect();
    Ok(vec![flights, users, reservations])
}

// ----- the tools -----

const CABIN: Arg = Arg::OneOf(&CABINS);
const FLIGHTS: Arg = Arg::Objects(&[("flight_number", Arg::Str), ("date", Arg::Str)]);
const PASSENGERS: Arg = Arg::Objects(&[("first_name", Arg::Str), ("last_name", Arg::Str), ("dob", Arg::Str)]);
const PAYMENTS: Arg = Arg::Objects(&[("payment_id", Arg::Str), ("amount", Arg::Int)]);

const RESERVATION_FIELDS: &[(&str, &str)] = &[
    ("reservation_id", "string"),
    ("user_id", "string"),
    ("origin", "string"),
    ("destination", "string"),
    ("flight_type", "string"),
    ("cabin", "string"),
    ("flights", "array"),
    ("passengers", "array"),
    ("payment_history", "array"),
    ("created_at", "string"),
    ("total_baggages", "integer"),
    ("nonfree_baggages", "integer"),
    ("insurance", "string"),
];

const USER_FIELDS: &[(&str, &str)] = &[
    ("user_id", "string"),
    ("name", "object"),
    ("address", "object"),
    ("email", "string"),
    ("dob", "string"),
    ("payment_methods", "object"),
    ("saved_passengers", "array"),
    ("membership", "string"),
    ("reservations", "array"),
];

const TEXT: &[(&str, &str)] = &[("result", "string")];
const LIST: &[(&str, &str)] = &[("result", "array")];
const SEARCH: &[(&str, Arg)] = &[("origin", Arg::Str), ("destination", Arg::Str), ("date", Arg::Str)];

/// tau2's 14 airline tools, in its order.
const TOOLS: &[ToolShape] = &[
    ToolShape {
        name: "book_reservation",
        write: true,
        description: "Books a reservation: the flights (number and date), passengers, cabin, baggage and insurance, paid with the user's payment methods (the amounts must add up to the price). Needs the user's explicit confirmation first. Returns the reservation.",
        args: &[
            ("user_id", Arg::Str),
            ("origin", Arg::Str),
            ("destination", Arg::Str),
            ("flight_type", Arg::OneOf(&["round_trip", "one_way"])),
            ("cabin", CABIN),
            ("flights", FLIGHTS),
            ("passengers", PASSENGERS),
            ("payment_methods", PAYMENTS),
            ("total_baggages", Arg::Int),
            ("nonfree_baggages", Arg::Int),
            ("insurance", Arg::OneOf(&["yes", "no"])),
        ],
        ids: &["user_id"],
        response: RESERVATION_FIELDS,
    },
    ToolShape {
        name: "calculate",
        write: false,
        description: "Calculates a mathematical expression of numbers, + - * /, parentheses and spaces; the result is rounded to 2 decimals.",
        args: &[("expression", Arg::Str)],
        ids: &[],
        response: TEXT,
    },
    ToolShape {
        name: "cancel_reservation",
        write: true,
        description: "Cancels a whole reservation, refunding every payment. Needs the user's explicit confirmation first. Returns the reservation.",
        args: &[("reservation_id", Arg::Str)],
        ids: &["reservation_id"],
        response: RESERVATION_FIELDS,
    },
    ToolShape {
        name: "get_reservation_details",
        write: false,
        description: "A reservation's details (an id such as '8JX2WO').",
        args: &[("reservation_id", Arg::Str)],
        ids: &["reservation_id"],
        response: RESERVATION_FIELDS,
    },
    ToolShape {
        name: "get_user_details",
        write: false,
        description: "A user's details: name, address, email, date of birth, payment methods, saved passengers, membership and reservation ids.",
        args: &[("user_id", Arg::Str)],
        ids: &["user_id"],
        response: USER_FIELDS,
    },
    ToolShape {
        name: "list_all_airports",
        write: false,
        description: "Every airport: its IATA code and city.",
        args: &[],
        ids: &[],
        response: LIST,
    },
    ToolShape {
        name: "search_direct_flight",
        write: false,
        description: "The direct flights between two airports (IATA codes) on a date (YYYY-MM-DD) with seats and prices by cabin.",
        args: SEARCH,
        ids: &[],
        response: LIST,
    },
    ToolShape {
        name: "search_onestop_flight",
        write: false,
        description: "The pairs of flights with one stop between two airports (IATA codes) leaving on a date (YYYY-MM-DD).",
        args: SEARCH,
        ids: &[],
        response: LIST,
    },
    ToolShape {
        name: "send_certificate",
        write: true,
        description: "Sends a certificate of an amount to a user (compensation, only as the policy allows).",
        args: &[("user_id", Arg::Str), ("amount", Arg::Int)],
        ids: &["user_id"],
        response: TEXT,
    },
    ToolShape {
        name: "transfer_to_human_agents",
        write: false,
        description: "Transfers the user to a human agent with a summary of the issue: only when the user asks for one, or the policy and tools cannot solve the issue.",
        args: &[("summary", Arg::Str)],
        ids: &[],
        response: TEXT,
    },
    ToolShape {
        name: "update_reservation_baggages",
        write: true,
        description: "Changes a reservation's baggage (total and non-free bags), paying for new non-free bags with a payment method of the user. Needs the user's explicit confirmation first. Returns the reservation.",
        args: &[
            ("reservation_id", Arg::Str),
            ("total_baggages", Arg::Int),
            ("nonfree_baggages", Arg::Int),
            ("payment_id", Arg::Str),
        ],
        ids: &["reservation_id", "payment_id"],
        response: RESERVATION_FIELDS,
    },
    ToolShape {
        name: "update_reservation_flights",
        write: true,
        description: "Changes a reservation's cabin and flights (all of the new itinerary, changed or not), paying or refunding the difference. Needs the user's explicit confirmation first. Returns the reservation.",
        args: &[("reservation_id", Arg::Str), ("cabin", CABIN), ("flights", FLIGHTS), ("payment_id", Arg::Str)],
        ids: &["reservation_id", "payment_id"],
        response: RESERVATION_FIELDS,
    },
    ToolShape {
        name: "update_reservation_passengers",
        write: true,
        description: "Changes the passengers of a reservation (as many as before). Needs the user's explicit confirmation first. Returns the reservation.",
        args: &[("reservation_id", Arg::Str), ("passengers", PASSENGERS)],
        ids: &["reservation_id"],
        response: RESERVATION_FIELDS,
    },
    ToolShape {
        name: "get_flight_status",
        write: false,
        description: "The status of a flight on a date.",
        args: &[("flight_number", Arg::Str), ("date", Arg::Str)],
        ids: &["flight_number"],
        response: TEXT,
    },
];

/// The read that tells whether a write timed out was applied, and its
/// predicate over the read's `result`. New reservations and certificates
/// take tau2's fixed ids in turn (`HATHAT`, `HATHAU`, ...), so the id a
/// booking gets is known from the bookings before it.
fn verify(tool: &str, args: &serde_json::Map<String, serde_json::Value>, before: &[Action]) -> super::Verify {
    let text = |name: &str| args.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let quoted = |text: &str| ron_string(text);
    let reservation = || format!("{{\"reservation_id\": {}}}", quoted(&text("reservation_id")));
    let user = || format!("{{\"user_id\": {}}}", quoted(&text("user_id")));
    let earlier = |name: &str| before.iter().filter(|a| a.name == name).count();
    let list = |name: &str| args.get(name).and_then(|v| v.as_array()).cloned().unwrap_or_default();
    // Each listed object's fields, compared in the read's list.
    let same_list = |name: &str, fields: &[&str]| {
        let items = list(name);
        let mut terms = vec![format!("result.{name}.len() == {}", items.len())];
        for (i, item) in items.iter().enumerate() {
            for field in fields {
                let value = item.get(*field).and_then(|v| v.as_str()).unwrap_or_default();
                terms.push(format!("result.{name}[{i}].{field} == {}", quoted(value)));
            }
        }
        terms.join(" && ")
    };
    let int = |name: &str| args.get(name).and_then(|v| v.as_i64()).unwrap_or_default();
    Some(match tool {
        "book_reservation" => {
            let id = ["HATHAT", "HATHAU", "HATHAV"].get(earlier("book_reservation")).copied().unwrap_or("HATHAV");
            ("get_user_details", user(), format!("result.reservations.contains(\"{id}\")"))
        }
        "cancel_reservation" => ("get_reservation_details", reservation(), r#"result.status == "cancelled""#.into()),
        "update_reservation_baggages" => (
            "get_reservation_details",
            reservation(),
            format!(
                "result.total_baggages == {} && result.nonfree_baggages == {}",
                int("total_baggages"),
                int("nonfree_baggages")
            ),
        ),
        "update_reservation_flights" => (
            "get_reservation_details",
            reservation(),
            format!(
                "result.cabin == {} && {}",
                quoted(&text("cabin")),
                same_list("flights", &["flight_number", "date"])
            ),
        ),
        "update_reservation_passengers" => {
            ("get_reservation_details", reservation(), same_list("passengers", &["first_name", "last_name", "dob"]))
        }
        "send_certificate" => {
            let n = 3_221_322 + earlier("send_certificate").min(2);
            (
                "get_user_details",
                user(),
                format!("(result.payment_methods ?? result.payment_options).contains(\"certificate_{n}\")"),
            )
        }
        _ => return None,
    })
}

/// The facts a user states: the user id and the reservation ids that the
/// gold actions use and the user's instructions mention.
fn facts(task: &Task, actions: &[Action]) -> Vec<(String, String)> {
    let i = &task.user_scenario.instructions;
    let text = format!("{} {} {}", i.known_info.as_deref().unwrap_or(""), i.reason_for_call, i.task_instructions);
    let mut facts: Vec<(String, String)> = Vec::new();
    let mut reservations = 0;
    for a in actions {
        for field in ["user_id", "reservation_id"] {
            let Some(value) = a.arguments.get(field).and_then(|v| v.as_str()) else { continue };
            if value.is_empty() || facts.iter().any(|(_, v)| v == value) || !text.contains(value) {
                continue;
            }
            let name = if field == "user_id" {
                if facts.iter().any(|(n, _)| n == "user_id") {
                    continue;
                }
                field.to_string()
            } else {
                reservations += 1;
                if reservations == 1 { field.to_string() } else { format!("{field}_{reservations}") }
            };
            facts.push((name, value.to_string()));
        }
    }
    facts
}
