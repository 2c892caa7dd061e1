//! The weather_dining expert: the policy that solves the task from observations
//! alone. It is the `oracle` planner, and the noisy planner wraps it with mistakes.
//!
//! Read the weather, find a table with the seating the weather allows, reserve,
//! tell the customer. Under a burst of 503s from the primary weather provider it
//! backs off and switches to the other provider:
//! waiting or switching always works here, declaring the task impossible never
//! does. A reservation whose answer was lost is checked with `get_reservations`
//! before anything is reserved again.
//!
//! When the scenario counts tables, it reserves at no restaurant shown full,
//! and reads the tables again (`find_restaurants`) before reserving when its
//! read is over a few seconds old (after a refusal, a rate limit, a wait for
//! the customer): another session may have taken the last table meanwhile.
//! That narrows the race between sessions (docs/sessions.md) but cannot
//! close it: `reserve` does not check the tables.

use agentsim_engine::{Action, AgentCx, Finish, Reply, TimeMs, ToolCall, ToolResult, Value};

use super::tools::Ids;
use crate::kit::case::{Case, Opening, call};
use crate::kit::expert::{Policy, take_int, take_str};
use crate::read::{LOOP_PAUSE_MS, Reader, arg_str};

/// Who the expert serves and what it is after.
const OPENING: Opening = Opening { who: "customer", user_arg: "customer_id", goal: "reserve" };

/// Failures in a row of one weather provider before trying the other. One: a
/// planner behind a retry layer only sees a failure after the retries, so the
/// provider has already failed several times.
const SWITCH_PROVIDER_AFTER: u32 = 1;
/// A weather reading older than this is read again before reserving.
const WEATHER_FRESH_MS: TimeMs = 60_000;
/// Counted tables read longer ago than this are read again before reserving.
pub const TABLES_FRESH_MS: TimeMs = 5_000;

/// Restaurants `find_restaurants` showed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Found {
    /// For outdoor seating (else indoor).
    outdoor: bool,
    /// (restaurant id, tables left when the service counts them), in the
    /// service's order.
    restaurants: Vec<(String, Option<i64>)>,
    /// When the expert read them (its own clock).
    read_at_ms: TimeMs,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ReservationState {
    None,
    /// A reserve call timed out: it may or may not have been applied.
    Uncertain,
    Reserved(String),
}

/// The expert planner for weather_dining.
pub struct Expert {
    ids: Ids,
    case: Case,
    customer_id: Option<String>,
    city: String,
    party_size: Option<i64>,
    /// (raining, read at).
    weather: Option<(bool, TimeMs)>,
    use_backup: bool,
    provider_failures: u32,
    /// Restaurants found.
    found: Option<Found>,
    /// How old counted tables may be when it reserves (`None`: it trusts
    /// any read of them; see [`Expert::trusting_its_reads`]).
    tables_fresh_ms: Option<TimeMs>,
    reservation: ReservationState,
    told: bool,
}

impl Expert {
    /// A fresh expert using the tools `ids`.
    pub fn new(ids: Ids) -> Self {
        Self {
            ids,
            case: Case::new(ids.escalate, ids.authenticate),
            customer_id: None,
            city: String::new(),
            party_size: None,
            weather: None,
            use_backup: false,
            provider_failures: 0,
            found: None,
            tables_fresh_ms: Some(TABLES_FRESH_MS),
            reservation: ReservationState::None,
            told: false,
        }
    }
}

impl Expert {
    /// The expert, but trusting any read of the tables however old: it never
    /// reads them again before reserving. What the re-read is worth under
    /// contention is this expert's races less the expert's (the tests and
    /// docs/sessions.md compare them).
    pub fn trusting_its_reads(self) -> Self {
        Self { tables_fresh_ms: None, ..self }
    }

    /// Whether counted tables in `found` are too old to reserve on.
    fn tables_stale(&self, found: &Found, now_ms: TimeMs) -> bool {
        self.tables_fresh_ms.is_some_and(|fresh_ms| now_ms.saturating_sub(found.read_at_ms) > fresh_ms)
    }
}

impl Policy for Expert {
    fn next(&mut self, now_ms: TimeMs) -> Action {
        let customer = match self.case.opening(&OPENING, self.customer_id.as_ref(), false, String::new) {
            Ok(customer) => customer,
            Err(first) => return first,
        };
        let ids = self.ids;
        match self.reservation.clone() {
            ReservationState::Reserved(id) if !self.told => {
                return call(
                    ids.send_message,
                    Value::map([
                        ("customer_id", Value::Str(customer)),
                        ("kind", Value::str("done")),
                        ("reservation_id", Value::Str(id)),
                    ]),
                );
            }
            ReservationState::Reserved(_) => return Action::Finish(Finish::Done),
            ReservationState::Uncertain => {
                return call(ids.get_reservations, Value::map([("customer_id", Value::Str(customer))]));
            }
            ReservationState::None => {}
        }
        if self.case.awaiting_user {
            return Action::Idle { wake_at_ms: None };
        }
        let Some(party) = self.party_size else {
            if self.case.asked {
                return Action::Idle { wake_at_ms: None };
            }
            return call(
                ids.send_message,
                Value::map([("customer_id", Value::Str(customer)), ("kind", Value::str("ask"))]),
            );
        };
        let fresh = self.weather.filter(|(_, at)| now_ms.saturating_sub(*at) <= WEATHER_FRESH_MS);
        let Some((raining, _)) = fresh else {
            let provider = if self.use_backup { ids.get_weather_backup } else { ids.get_weather };
            return call(provider, Value::map([("city", Value::str(&self.city))]));
        };
        self.book(customer, party, !raining, now_ms)
    }
    fn hear(&mut self, content: &Value) {
        take_str(content, "customer_id", &mut self.customer_id);
        take_str(content, "city", &mut self.city);
        take_int(content, "party_size", &mut self.party_size);
    }

    fn answer_lost(&mut self, name: &str) -> bool {
        (name == "reserve").then(|| self.reservation = ReservationState::Uncertain).is_some()
    }

    /// Learns from a tool result; returns how long to wait before acting again.
    fn learn(&mut self, name: &str, r: &ToolResult, body: &Value, cx: &AgentCx<'_>) -> Option<TimeMs> {
        let tool = r.call.tool;
        let read = Reader { cx, tool };
        if is_weather(name) {
            self.provider_failures = 0;
            let raining = read.str(body, "condition") == "rain";
            if self.weather.is_some_and(|(was, _)| was != raining) {
                // The weather turned: tables found for the old weather are beside the point.
                self.found = None;
            }
            self.weather = Some((raining, cx.now_ms));
        } else if name == "find_restaurants" {
            let outdoor = arg_str(&r.call.args, "seating") == "outdoor";
            let restaurants =
                read.list(body, "restaurants").iter().map(|x| (read.str(x, "restaurant_id"), tables_left(x))).collect();
            self.found = Some(Found { outdoor, restaurants, read_at_ms: cx.now_ms });
        } else if name == "reserve" {
            self.reservation = ReservationState::Reserved(read.str(body, "reservation_id"));
        } else if name == "get_reservations" {
            let ids_found: Vec<String> =
                read.list(body, "reservations").iter().map(|x| read.str(x, "reservation_id")).collect();
            self.reservation = match ids_found.first() {
                Some(id) => ReservationState::Reserved(id.clone()),
                None => ReservationState::None,
            };
        } else if name == "send_message" {
            match r.call.args.get("kind").and_then(Value::as_str) {
                Some("ask") => self.case.asked_user(),
                Some("done") => self.told = true,
                _ => {}
            }
        }
        None
    }

    fn learn_failure(&mut self, name: &str, r: &ToolResult) -> Option<TimeMs> {
        if is_weather(name) {
            self.provider_failures += 1;
            if self.provider_failures >= SWITCH_PROVIDER_AFTER {
                // This provider is in trouble: ask the other one.
                self.use_backup = !self.use_backup;
                self.provider_failures = 0;
            }
        }
        match &r.reply {
            Reply::Error { status: 409, .. } if name == "reserve" => {
                // That table is gone: look again.
                self.found = None;
                None
            }
            reply => self.case.after_failure(reply),
        }
    }

    fn blocked(&mut self, name: &str, _call: &ToolCall, layer: &str) -> Option<TimeMs> {
        if name == "reserve" {
            self.found = None;
        }
        if is_weather(name) {
            // Repeating the same provider is what got blocked: ask the other one.
            self.use_backup = name == "get_weather";
            self.provider_failures = 0;
        }
        (layer == "loop_detector").then_some(LOOP_PAUSE_MS)
    }

    fn case(&mut self) -> &mut Case {
        &mut self.case
    }
}

impl Expert {
    /// Reserves a table for `party` of `customer` with the seating the
    /// weather allows (`outdoor`): finds restaurants first, or again when
    /// the counted tables it read are stale; escalates when every one is
    /// shown full.
    fn book(&mut self, customer: String, party: i64, outdoor: bool, now_ms: TimeMs) -> Action {
        let ids = self.ids;
        let seating = if outdoor { "outdoor" } else { "indoor" };
        let find = || {
            call(
                ids.find_restaurants,
                Value::map([
                    ("city", Value::str(&self.city)),
                    ("party_size", Value::Int(party)),
                    ("seating", Value::str(seating)),
                ]),
            )
        };
        let Some(found) = self.found.as_ref().filter(|f| f.outdoor == outdoor) else {
            return find();
        };
        // A restaurant shown full is no choice; one whose tables are not
        // counted always is.
        match found.restaurants.iter().find(|(_, left)| *left != Some(0)) {
            Some((_, Some(_))) if self.tables_stale(found, now_ms) => find(),
            Some((restaurant, _)) => call(
                ids.reserve,
                Value::map([
                    ("customer_id", Value::Str(customer)),
                    ("restaurant_id", Value::str(restaurant)),
                    ("party_size", Value::Int(party)),
                    ("seating", Value::str(seating)),
                ]),
            ),
            None => {
                self.case.escalating = true;
                self.next(now_ms)
            }
        }
    }
}

/// Whether the tool `name` is one of the two weather providers.
fn is_weather(name: &str) -> bool {
    name == "get_weather" || name == "get_weather_backup"
}

/// The tables left a restaurant's read shows: `None` when the service does
/// not count them; a count it cannot read is taken as none left (the
/// restaurant is passed over).
fn tables_left(restaurant: &Value) -> Option<i64> {
    restaurant.get("tables_left").map(|v| v.as_int().unwrap_or(0))
}
