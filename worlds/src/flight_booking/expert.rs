//! The flight_booking expert: the policy that solves the task from observations
//! alone. It is the `oracle` planner, and the noisy planner wraps it with mistakes.
//!
//! Like support_desk's expert it keeps what it has learnt and derives the next
//! action from that every turn: learn the trip, search, quote a fare it read within
//! the last minute, book at the fare the traveller confirmed, and on a 409 read the
//! new fare and quote again. A booking whose answer was lost is checked with
//! `get_bookings` before anything is booked again.
//!
//! When the scenario counts seats, it quotes no flight shown sold out, and
//! reads a confirmed flight's seats again (`get_fare`) just before booking
//! it unless it read them within the last few seconds: another session may
//! have taken the last seat while the traveller made up their mind. That
//! narrows the race (docs/sessions.md) but cannot close it: `book` does not
//! check the seats.
//!
//! What it does not do: check how old a search replica's data is. A search that
//! came back a few seconds ago looks fresh, so a lagging replica (`Stale` on
//! `search_flights`) can make it quote a fare that is gone. That is the
//! contextual-accuracy failure the world counts as `stale_fare_told`.

use agentsim_engine::{Action, AgentCx, Finish, Reply, TimeMs, ToolCall, ToolResult, Value};

use super::tools::Ids;
use crate::kit::case::{Case, Opening, call};
use crate::kit::expert::{Policy, take_int, take_str};
use crate::read::{LOOP_PAUSE_MS, Reader, arg_str};

/// Who the expert serves and what it is after.
const OPENING: Opening = Opening { who: "traveller", user_arg: "traveller_id", goal: "book" };

/// Searches that found nothing within budget before the expert hands over.
const ESCALATE_AFTER_EMPTY_SEARCHES: u32 = 3;
/// A fare read longer ago than this is read again before it is quoted.
const FARE_FRESH_MS: TimeMs = 60_000;
/// How long to wait for fares to come down when nothing fits the budget.
const PRICE_WAIT_MS: TimeMs = 120_000;
/// Counted seats read longer ago than this are read again before booking.
const SEATS_FRESH_MS: TimeMs = 5_000;

/// What the expert knows about a flight's fare.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FareView {
    flight_id: String,
    date: String,
    fare_cents: i64,
    /// When the expert read it (its own clock).
    read_at_ms: TimeMs,
    /// Seats left, when the service counts them.
    seats_left: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum BookingState {
    NotBooked,
    /// A book call timed out: it may or may not have been applied.
    Uncertain,
    Booked {
        booking_id: String,
        flight_id: String,
        fare_cents: i64,
    },
}

/// The expert planner for flight_booking.
pub struct Expert {
    ids: Ids,
    case: Case,
    traveller_id: Option<String>,
    origin: String,
    destination: String,
    date: Option<String>,
    budget_cents: i64,
    /// Fares read for the current trip, by flight.
    fares: Vec<FareView>,
    searched: bool,
    empty_searches: u32,
    /// Flights the traveller refused (over budget).
    refused: Vec<String>,
    quoted: Option<(String, i64)>,
    confirmed: Option<(String, i64)>,
    booking: BookingState,
    /// Active bookings beyond the one kept, to cancel.
    extra_bookings: Vec<String>,
    told: bool,
}

impl Expert {
    /// A fresh expert using the tools `ids`.
    pub fn new(ids: Ids) -> Self {
        Self {
            ids,
            case: Case::new(ids.escalate, ids.authenticate),
            traveller_id: None,
            origin: String::new(),
            destination: String::new(),
            date: None,
            budget_cents: 0,
            fares: Vec::new(),
            searched: false,
            empty_searches: 0,
            refused: Vec::new(),
            quoted: None,
            confirmed: None,
            booking: BookingState::NotBooked,
            extra_bookings: Vec::new(),
            told: false,
        }
    }

    fn remember(&mut self, view: FareView) {
        if self.date.as_deref() != Some(view.date.as_str()) {
            return;
        }
        self.fares.retain(|f| f.flight_id != view.flight_id);
        self.fares.push(view);
    }

    fn message(&self, traveller: &str, kind: &str, extra: Vec<(&'static str, Value)>) -> Action {
        let mut args = Value::map([("traveller_id", Value::str(traveller)), ("kind", Value::str(kind))]);
        for (k, v) in extra {
            args.set(k, v);
        }
        call(self.ids.send_message, args)
    }

    /// What is left to do about bookings made: cancel an extra one, check an
    /// uncertain one, tell the traveller of the one kept (then finish).
    fn settle_booking(&mut self, traveller: &str) -> Option<Action> {
        let ids = self.ids;
        if let Some(extra) = self.extra_bookings.first() {
            return Some(call(ids.cancel, Value::map([("booking_id", Value::str(extra))])));
        }
        match self.booking.clone() {
            BookingState::Uncertain => {
                return Some(call(ids.get_bookings, Value::map([("traveller_id", Value::str(traveller))])));
            }
            BookingState::Booked { booking_id, flight_id, fare_cents } => {
                if self.told {
                    return Some(Action::Finish(Finish::Done));
                }
                return Some(self.message(
                    traveller,
                    "done",
                    vec![
                        ("booking_id", Value::Str(booking_id)),
                        ("flight_id", Value::Str(flight_id)),
                        ("fare_cents", Value::Int(fare_cents)),
                    ],
                ));
            }
            BookingState::NotBooked => {}
        }
        None
    }

    /// The search for a fare on `date` within the budget, read fresh, and
    /// its quote to the traveller; waits for fares to move when none fits.
    fn find_fare(&mut self, traveller: &str, date: String, now_ms: TimeMs) -> Action {
        let ids = self.ids;
        if !self.searched {
            return call(
                ids.search_flights,
                Value::map([
                    ("origin", Value::str(&self.origin)),
                    ("destination", Value::str(&self.destination)),
                    ("date", Value::Str(date)),
                ]),
            );
        }
        let candidate = self
            .fares
            .iter()
            .filter(|f| !self.refused.contains(&f.flight_id) && f.fare_cents > 0 && f.seats_left != Some(0))
            .min_by_key(|f| (f.fare_cents, f.flight_id.clone()))
            .cloned();
        let Some(best) = candidate else {
            // Nothing to offer (or all refused): wait for the fares to move, then search again.
            self.empty_searches += 1;
            self.searched = false;
            self.refused.clear();
            return Action::Idle { wake_at_ms: Some(now_ms.saturating_add(PRICE_WAIT_MS)) };
        };
        if now_ms.saturating_sub(best.read_at_ms) > FARE_FRESH_MS {
            return call(ids.get_fare, Value::map([("flight_id", Value::str(&best.flight_id))]));
        }
        if best.fare_cents > self.budget_cents {
            self.empty_searches += 1;
            self.searched = false;
            return Action::Idle { wake_at_ms: Some(now_ms.saturating_add(PRICE_WAIT_MS)) };
        }
        self.message(
            traveller,
            "quote",
            vec![("flight_id", Value::Str(best.flight_id)), ("fare_cents", Value::Int(best.fare_cents))],
        )
    }
}

impl Policy for Expert {
    fn next(&mut self, now_ms: TimeMs) -> Action {
        let empty_searches = self.empty_searches;
        let traveller = match self.case.opening(
            &OPENING,
            self.traveller_id.as_ref(),
            self.empty_searches >= ESCALATE_AFTER_EMPTY_SEARCHES,
            || format!(", {} searches without a fare in budget", empty_searches),
        ) {
            Ok(traveller) => traveller,
            Err(first) => return first,
        };
        if let Some(action) = self.settle_booking(&traveller) {
            return action;
        }
        if self.case.awaiting_user {
            return Action::Idle { wake_at_ms: None };
        }
        let Some(date) = self.date.clone() else {
            if self.case.asked {
                return Action::Idle { wake_at_ms: None };
            }
            return self.message(&traveller, "ask", Vec::new());
        };
        if let Some((flight, fare)) = self.confirmed.clone() {
            let view = self.fares.iter().find(|f| f.flight_id == flight);
            if let Some(view) = view.filter(|v| v.seats_left.is_some()) {
                if now_ms.saturating_sub(view.read_at_ms) > SEATS_FRESH_MS {
                    return call(self.ids.get_fare, Value::map([("flight_id", Value::Str(flight))]));
                }
                if view.seats_left == Some(0) || view.fare_cents != fare {
                    // Sold out, or the fare moved, while the traveller
                    // decided: offer what there is now.
                    self.confirmed = None;
                    self.quoted = None;
                    return self.find_fare(&traveller, date, now_ms);
                }
            }
            return call(
                self.ids.book,
                Value::map([
                    ("traveller_id", Value::str(&traveller)),
                    ("flight_id", Value::Str(flight)),
                    ("fare_cents", Value::Int(fare)),
                ]),
            );
        }
        self.find_fare(&traveller, date, now_ms)
    }

    fn hear(&mut self, content: &Value) {
        take_str(content, "traveller_id", &mut self.traveller_id);
        take_str(content, "origin", &mut self.origin);
        take_str(content, "destination", &mut self.destination);
        take_int(content, "budget_cents", &mut self.budget_cents);
        if let Some(d) = content.get("date").and_then(Value::as_str)
            && self.date.as_deref() != Some(d)
        {
            // A new day: everything read about the old one is beside the point.
            self.date = Some(d.to_string());
            self.fares.clear();
            self.searched = false;
            self.refused.clear();
            self.quoted = None;
            self.confirmed = None;
        }
        let flight = arg_str(content, "flight_id").to_string();
        let fare = content.get("fare_cents").and_then(Value::as_int).unwrap_or_default();
        match content.get("confirm") {
            Some(Value::Bool(true)) if self.quoted.as_ref() == Some(&(flight.clone(), fare)) => {
                self.confirmed = Some((flight, fare));
            }
            Some(Value::Bool(false)) if content.get("over_budget").is_some() => self.refused.push(flight),
            Some(Value::Bool(false)) => self.quoted = None,
            _ => {}
        }
    }

    fn answer_lost(&mut self, name: &str) -> bool {
        // The booking may have been made before the answer was lost.
        (name == "book").then(|| self.booking = BookingState::Uncertain).is_some()
    }

    /// Learns from a tool result; returns how long to wait before acting again.
    fn learn(&mut self, name: &str, r: &ToolResult, body: &Value, cx: &AgentCx<'_>) -> Option<TimeMs> {
        let tool = r.call.tool;
        let read = Reader { cx, tool };
        let now_ms = cx.now_ms;
        if name == "search_flights" {
            if arg_str(&r.call.args, "date") == self.date.as_deref().unwrap_or_default() {
                self.searched = true;
                self.fares.clear();
                let views: Vec<FareView> = read
                    .list(body, "flights")
                    .iter()
                    .map(|f| FareView {
                        flight_id: read.str(f, "flight_id"),
                        date: read.str(f, "date"),
                        fare_cents: read.int(f, "fare_cents"),
                        read_at_ms: seats_read_at(f, now_ms),
                        seats_left: seats_left(f),
                    })
                    .collect();
                views.into_iter().for_each(|v| self.remember(v));
            }
        } else if name == "get_fare" {
            let view = FareView {
                flight_id: read.str(body, "flight_id"),
                date: read.str(body, "date"),
                fare_cents: read.int(body, "fare_cents"),
                read_at_ms: seats_read_at(body, now_ms),
                seats_left: seats_left(body),
            };
            self.remember(view);
        } else if name == "book" {
            self.booking = BookingState::Booked {
                booking_id: read.str(body, "booking_id"),
                flight_id: arg_str(&r.call.args, "flight_id").to_string(),
                fare_cents: r.call.args.get("fare_cents").and_then(Value::as_int).unwrap_or_default(),
            };
        } else if name == "get_bookings" {
            let active: Vec<(String, String, i64)> = read
                .list(body, "bookings")
                .iter()
                .filter(|b| read.str(b, "status") == "booked")
                .map(|b| (read.str(b, "booking_id"), read.str(b, "flight_id"), read.int(b, "fare_cents")))
                .collect();
            let keep = active.iter().position(|(_, f, fare)| self.confirmed.as_ref() == Some(&(f.clone(), *fare)));
            self.booking = match keep.or((!active.is_empty()).then_some(0)) {
                Some(k) => {
                    let (id, flight, fare) = active[k].clone();
                    self.extra_bookings =
                        active.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, b)| b.0.clone()).collect();
                    BookingState::Booked { booking_id: id, flight_id: flight, fare_cents: fare }
                }
                None => BookingState::NotBooked,
            };
        } else if name == "cancel" {
            let id = arg_str(&r.call.args, "booking_id");
            self.extra_bookings.retain(|b| b != id);
        } else if name == "send_message" {
            match r.call.args.get("kind").and_then(Value::as_str) {
                Some("quote") => {
                    self.case.awaiting_user = true;
                    self.quoted = Some((
                        arg_str(&r.call.args, "flight_id").to_string(),
                        r.call.args.get("fare_cents").and_then(Value::as_int).unwrap_or_default(),
                    ));
                }
                Some("ask") => self.case.asked_user(),
                Some("done") => self.told = true,
                _ => {}
            }
        }
        None
    }

    fn learn_failure(&mut self, name: &str, r: &ToolResult) -> Option<TimeMs> {
        match &r.reply {
            Reply::Error { status: 409, .. } if name == "book" => {
                // The fare moved: what we quoted is gone. Read it again and re-quote.
                let flight = arg_str(&r.call.args, "flight_id");
                self.fares.iter_mut().filter(|f| f.flight_id == flight).for_each(|f| f.read_at_ms = 0);
                self.confirmed = None;
                self.quoted = None;
                self.case.failures = 0;
                None
            }
            reply => self.case.after_failure(reply),
        }
    }

    fn blocked(&mut self, name: &str, call: &ToolCall, layer: &str) -> Option<TimeMs> {
        if name == "book" {
            // What we knew about the fare led to a refused booking: read it again.
            let flight = arg_str(&call.args, "flight_id");
            self.fares.iter_mut().filter(|f| f.flight_id == flight).for_each(|f| f.read_at_ms = 0);
            self.confirmed = None;
            self.quoted = None;
        }
        (layer == "loop_detector").then_some(LOOP_PAUSE_MS)
    }

    fn case(&mut self) -> &mut Case {
        &mut self.case
    }
}

/// The seats left a flight's read shows: `None` when the service does not
/// count them; a count it cannot read is taken as none left until read again.
fn seats_left(flight: &Value) -> Option<i64> {
    flight.get("seats_left").map(|v| v.as_int().unwrap_or(0))
}

/// When a read counts as made: now, or never when its seat count could not
/// be read (so it is read again before anything is booked on it).
fn seats_read_at(flight: &Value, now_ms: TimeMs) -> TimeMs {
    match flight.get("seats_left") {
        Some(v) if v.as_int().is_none() => 0,
        _ => now_ms,
    }
}
