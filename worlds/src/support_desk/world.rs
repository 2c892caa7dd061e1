//! The support_desk world: orders that move on their own, refunds, and a customer
//! who asks for one.

use std::sync::LazyLock;

use agentsim_engine::{
    Message, MilestoneDag, Progress, SessionId, Stream, StreamSource, TimeMs, ToolCall, ToolError, Value, Verdict,
    WorldCx,
};

use super::config::{OrderStatus, SupportDeskConfig};
use super::status_history::StatusHistory;
use crate::kit::args::{int_arg, one_of_arg, str_arg};
use crate::kit::fields::fields;
use crate::kit::goodbye::Goodbye;
use crate::kit::outbox::Outbox;
pub use crate::kit::persona::Persona;
use crate::kit::persona::draw;
use crate::kit::seats::{Seated, Seats};
use crate::kit::world::{Handover, KitWorld, Served, no_such_tool};
use crate::talk::voice::Voice;

#[path = "hear.rs"]
mod hear;
pub use hear::TOLD_WRONG_VALUE;

/// How the impatient user leaves.
const GOODBYE: Goodbye = Goodbye { note: "customer_left", text: "Forget it, I'll dispute the charge with my bank." };

/// What the customer calls a refund of the whole order.
pub const WHOLE_ORDER: &str = "whole order";

/// What the customer wants refunded: one item of an order, or all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Target {
    order: usize,
    item: Option<usize>,
}

/// One refund issued; its id (`R9001`, ...) follows from its place in the
/// desk's list of refunds, its idempotency key is in `refund_by_key`, and the
/// sessions it serves hold its place (`Record::refunds`).
struct Refund {
    /// The session whose agent issued it.
    session: SessionId,
    order: usize,
    amount_cents: i64,
    at_ms: TimeMs,
}

/// The id of the refund at `place` in the desk's list.
fn refund_id(place: usize) -> String {
    // Joined, not formatted (the world's texts on the hot path are; tested
    // against `format!` in `texts_equal_the_formatter_s`).
    ["R", itoa::Buffer::new().format(9001 + place)].concat()
}

/// The world's own events.
pub enum DeskEvent {
    /// An order moves to its next status.
    Status {
        /// Order index.
        order: usize,
    },
    /// An impatient customer's patience runs out.
    PatienceOut {
        /// Whose.
        session: SessionId,
    },
}

/// The task's milestones. The customer's confirmation is a milestone of its own but
/// not a prerequisite of the refund: the judge checks the refund against the
/// customer's request, whoever confirmed what.
/// (Built once per process: the judge of every trajectory reads it.)
pub fn milestones() -> &'static MilestoneDag {
    static MILESTONES: LazyLock<MilestoneDag> = LazyLock::new(|| {
        MilestoneDag::new(&[
            ("started", &[]),
            ("order_found", &["started"]),
            ("confirmed", &["order_found"]),
            ("refunded", &["started"]),
            ("customer_told", &["refunded"]),
        ])
        .expect("the support_desk milestones form a DAG")
    });
    &MILESTONES
}

/// One trajectory's support_desk: the orders and refunds every session
/// shares, and a customer per session.
pub struct SupportDesk<'c> {
    config: &'c SupportDeskConfig,
    world_rng: Stream,
    /// Per order: (time, status) changes, oldest first.
    status: Vec<StatusHistory>,
    /// The run's streams, for the customers of sessions that arrive later.
    streams: StreamSource,
    /// Per order: whether its status changes are already scheduled (two
    /// sessions of one customer move its orders once).
    moving: Vec<bool>,
    /// Every refund issued, in time order.
    refunds: Vec<Refund>,
    /// Per order: the places of its refunds in `refunds`, oldest first (a
    /// look-up reads the order's refunds, not every refund of the run).
    refunds_of: Vec<Vec<u32>>,
    /// The refund each idempotency key made (only looked up).
    refund_by_key: crate::kit::by_id::ById<String, u32>,
    /// Every amount refunded so far (what a customer may be told).
    refunded_amounts: std::collections::BTreeSet<i64>,
    /// The customer of the session being handled.
    user: Box<Customer>,
    /// The other sessions' customers, and the records of those that ended.
    seats: Seats<Box<Customer>>,
}

/// What the judge reads of a session's customer, kept after the session ended.
pub(super) struct Record {
    customer: usize,
    target: Target,
    told_cents: Vec<(TimeMs, i64)>,
    /// Closings that said the refund was done with a wrong value bound to it
    /// (another item or order, a second amount).
    told_wrong: u32,
    /// The first message the customer could not read for certain after the
    /// refund was complete, and why (boxed: rare, and kept for every session).
    uncertain: Option<Box<(TimeMs, String)>>,
    progress: Progress,
    left_at_ms: Option<TimeMs>,
    /// The refunds that serve the session (its agent's, and another's the
    /// service answered it with, by the same idempotency key): their places in
    /// the desk's `refunds`, ascending.
    refunds: Vec<u32>,
}

impl Record {
    /// A record of nothing (what `user` holds once its record was kept).
    fn empty(customer: usize) -> Self {
        Record {
            customer,
            target: Target { order: 0, item: None },
            told_cents: Vec::new(),
            told_wrong: 0,
            uncertain: None,
            progress: Progress::new(),
            left_at_ms: None,
            refunds: Vec::new(),
        }
    }
}

/// One session's customer: who, what they want, and what they were told.
pub(super) struct Customer {
    user_rng: Stream,
    /// What the judge reads (kept when the session ends).
    record: Record,
    persona: Persona,
    alternative: Option<Target>,
    mind_changed: bool,
    confirmed: bool,
    order_found: bool,
    outbox: Outbox,
    /// When an impatient customer's patience runs out (set when it arrives).
    patience_at_ms: Option<TimeMs>,
    /// Whether the customer has said its order id (a vague one does not in
    /// its opening, nor when it restates its request, until it is asked).
    order_said: bool,
    /// How the customer words its answers to text (made on the first one).
    voice: Option<Voice>,
    /// The customer's facts and the request they were made for: made anew only
    /// when the request changes (a change of mind), not for every text read.
    facts: Option<(Target, std::rc::Rc<[crate::talk::Fact]>)>,
}

impl Seated for Customer {
    type Record = Record;

    fn record(&self) -> &Record {
        &self.record
    }

    fn record_mut(&mut self) -> &mut Record {
        &mut self.record
    }

    fn take_record(&mut self) -> Record {
        let customer = self.record.customer;
        std::mem::replace(&mut self.record, Record::empty(customer))
    }

    fn into_record(self) -> Record {
        self.record
    }
}

impl Customer {
    /// Session `session`'s customer, request and persona, drawn from its user's
    /// stream (`"user.N"`).
    fn draw(config: &SupportDeskConfig, streams: &StreamSource, session: SessionId) -> Self {
        let mut user_rng = streams.session_stream("user", session);
        // The index: a session's customer costs its own orders, not a pass over the desk.
        let index = config.index();
        let with_orders = index.with_orders();
        let customer = with_orders[user_rng.below(with_orders.len() as u64) as usize];
        let orders = index.orders_of(customer);
        let order = orders[user_rng.below(orders.len() as u64) as usize];
        // One request in four is for the whole order; otherwise one item of it.
        let whole_order = user_rng.below(4) == 0;
        let item_draw = user_rng.below(config.orders[order].items.len() as u64) as usize;
        let item = (!whole_order).then_some(item_draw);
        let persona = draw(&config.personas.weights(), &mut user_rng).unwrap_or(Persona::Clear);
        // Another item of the same customer, preferring the same order.
        // Walked, not collected: counted, then walked again to the one drawn.
        let others = || {
            orders
                .iter()
                .flat_map(|&o| (0..config.orders[o].items.len()).map(move |i| Target { order: o, item: Some(i) }))
                .filter(move |t| !(t.order == order && t.item == item))
        };
        let alternative_draw = user_rng.next_u64();
        let (others_count, same_order_count) =
            others().fold((0u64, 0u64), |(all, same), t| (all + 1, same + u64::from(t.order == order)));
        let alternative = if others_count == 0 {
            None
        } else if same_order_count == 0 {
            others().nth((alternative_draw % others_count) as usize)
        } else {
            others().filter(|t| t.order == order).nth((alternative_draw % same_order_count) as usize)
        };
        let persona = if persona == Persona::ChangesMind && alternative.is_none() { Persona::Clear } else { persona };
        Customer {
            user_rng,
            record: Record {
                customer,
                target: Target { order, item },
                told_cents: Vec::new(),
                told_wrong: 0,
                uncertain: None,
                progress: Progress::new(),
                left_at_ms: None,
                refunds: Vec::new(),
            },
            persona,
            alternative,
            mind_changed: false,
            confirmed: false,
            order_found: false,
            outbox: Outbox::new(),
            patience_at_ms: None,
            order_said: false,
            voice: None,
            facts: None,
        }
    }
}

impl<'c> SupportDesk<'c> {
    /// A fresh world for one seed: session 0's customer, request and persona
    /// are drawn from its user's stream.
    pub fn new(config: &'c SupportDeskConfig, streams: &StreamSource) -> Self {
        let user = Customer::draw(config, streams, 0);
        Self {
            config,
            world_rng: streams.stream("world"),
            status: config.orders.iter().map(|o| StatusHistory::new(o.status)).collect(),
            moving: vec![false; config.orders.len()],
            refunds: Vec::new(),
            refunds_of: vec![Vec::new(); config.orders.len()],
            refund_by_key: crate::kit::by_id::with_capacity(0),
            refunded_amounts: std::collections::BTreeSet::new(),
            user: Box::new(user),
            seats: Seats::new(),
            streams: streams.clone(),
        }
    }

    /// Makes `session`'s customer the one handled (its calls, words and events).
    fn switch(&mut self, session: SessionId) {
        self.seats.switch(session, &mut self.user);
    }

    /// The customer of `session`, whose session is open.
    fn customer_of(&self, session: SessionId) -> &Customer {
        self.seats.user_of(session, &self.user)
    }

    /// What the judge reads of `session`'s customer.
    fn record_of(&self, session: SessionId) -> &Record {
        self.seats.record_of(session, &self.user)
    }

    /// The persona drawn for this seed.
    pub fn persona(&self) -> Persona {
        self.user.persona
    }

    fn customer_id(&self) -> &str {
        &self.config.customers[self.user.record.customer].id
    }

    fn item_name(&self, t: &Target) -> &str {
        match t.item {
            Some(i) => &self.config.orders[t.order].items[i].name,
            None => WHOLE_ORDER,
        }
    }

    fn amount_cents(&self, t: &Target) -> i64 {
        let order = &self.config.orders[t.order];
        match t.item {
            Some(i) => order.items[i].price_cents,
            None => order.total_cents(),
        }
    }

    fn order_index(&self, id: &str) -> Option<usize> {
        self.config.index().order(id)
    }

    fn status_at(&self, order: usize, at_ms: TimeMs) -> OrderStatus {
        self.status[order].at(at_ms)
    }

    /// The refunds of `order`, oldest first.
    fn refunds_on(&self, order: usize) -> impl Iterator<Item = &Refund> + Clone {
        self.refunds_of[order].iter().map(|&r| &self.refunds[r as usize])
    }

    /// The refunds that serve the session of `record`, in the order they were issued.
    fn refunds_serving<'a>(&'a self, record: &'a Record) -> impl DoubleEndedIterator<Item = &'a Refund> + Clone {
        record.refunds.iter().map(|&r| &self.refunds[r as usize])
    }

    fn refunded_cents(&self, order: usize, at_ms: TimeMs) -> i64 {
        // Saturating: the amounts are the agent's, any i64.
        self.refunds_on(order).filter(|r| r.at_ms <= at_ms).fold(0i64, |sum, r| sum.saturating_add(r.amount_cents))
    }

    /// What the refunds serving the session of `record` refunded on `order`
    /// up to `at_ms` (in a run of one session, every refund).
    fn own_refunded_cents(&self, record: &Record, order: usize, at_ms: TimeMs) -> i64 {
        self.refunds_serving(record)
            .filter(|r| r.order == order && r.at_ms <= at_ms)
            .fold(0i64, |sum, r| sum.saturating_add(r.amount_cents))
    }

    /// When `session`'s request for `target` was met: every refund its agent
    /// issued is on the requested order and they add up to `want_cents` (the
    /// time of the last one).
    ///
    /// In a run of many sessions, a session whose agent issued no refund is
    /// served when another session's refunds met the request (one of the same
    /// amount on the same order, or the whole order refunded): the money
    /// reached the customer once.
    fn completed_at_ms(&self, record: &Record, want_cents: i64) -> Option<TimeMs> {
        let target = &record.target;
        let mut own = self.refunds_serving(record);
        let all_on_target = own.clone().all(|r| r.order == target.order);
        let Some(last) = own.next_back() else {
            if self.seats.count() == 1 {
                return None;
            }
            // Another session's refund of this amount, or the whole order's.
            let total_cents = self.config.orders[target.order].total_cents();
            let met = self
                .refunds_on(target.order)
                .find(|r| r.amount_cents == want_cents || self.refunded_cents(target.order, r.at_ms) >= total_cents);
            return met.map(|r| r.at_ms);
        };
        (all_on_target && self.own_refunded_cents(record, target.order, last.at_ms) == want_cents).then_some(last.at_ms)
    }

    fn reply_at(&mut self, now_ms: TimeMs) -> TimeMs {
        now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user.user_rng))
    }

    fn request(&self, t: &Target) -> Value {
        self.request_by(self.user.record.customer, t)
    }

    /// The request of the customer of `record`.
    fn request_of(&self, record: &Record) -> Value {
        self.request_by(record.customer, &record.target)
    }

    /// Customer `customer`'s request for `t`.
    fn request_by(&self, customer: usize, t: &Target) -> Value {
        self.request_with(customer, t, [])
    }

    /// The request for `t` with `more` fields after its own, as
    /// `Value::set` of each on [`SupportDesk::request`] would add them (none
    /// of them is a request's field), built at its size at once.
    pub(super) fn request_and<const N: usize>(&self, t: &Target, more: [(&'static str, Value); N]) -> Value {
        self.request_with(self.user.record.customer, t, more)
    }

    fn request_with<const N: usize>(&self, customer: usize, t: &Target, more: [(&'static str, Value); N]) -> Value {
        let mut pairs = Vec::with_capacity(3 + N);
        pairs.push(("customer_id".into(), Value::str(&self.config.customers[customer].id)));
        pairs.push(("order_id".into(), Value::str(&self.config.orders[t.order].id)));
        pairs.push(("item".into(), Value::str(self.item_name(t))));
        for (key, value) in more {
            assert!(!matches!(key, "customer_id" | "order_id" | "item"), "`{key}` is a request's own field");
            pairs.push((key.into(), value));
        }
        Value::Map(pairs)
    }

    fn lookup_order(&mut self, args: &Value, as_of_ms: TimeMs, now_ms: TimeMs) -> Result<Value, ToolError> {
        let id = str_arg(args, "order_id")?;
        let order = self.order_index(id).ok_or_else(|| ToolError::not_found(format!("no order `{id}`")))?;
        let o = &self.config.orders[order];
        // The history starts with the order's status at time 0: a look-up at
        // any time finds a status.
        assert!(
            self.status[order].entries().first().is_some_and(|(t, _)| *t == 0),
            "order {} has no status at time 0",
            o.id
        );
        if order == self.user.record.target.order && as_of_ms == now_ms {
            self.user.order_found = true;
            self.user.record.progress.reach("order_found", now_ms);
        }
        let items = o
            .items
            .iter()
            .map(|i| {
                fields([
                    ("sku", Value::str(&i.sku)),
                    ("name", Value::str(&i.name)),
                    ("price_cents", Value::Int(i.price_cents)),
                ])
            })
            .collect();
        let refunds = self.refunds_of[order]
            .iter()
            .map(|&r| (r as usize, &self.refunds[r as usize]))
            .filter(|(_, r)| r.at_ms <= as_of_ms)
            .map(|(place, r)| {
                fields([("refund_id", Value::Str(refund_id(place))), ("amount_cents", Value::Int(r.amount_cents))])
            })
            .collect();
        Ok(fields([
            ("order_id", Value::str(&o.id)),
            ("customer_id", Value::str(&o.customer)),
            ("status", Value::str(self.status_at(order, as_of_ms).name())),
            ("total_cents", Value::Int(o.total_cents())),
            ("items", Value::List(items)),
            ("refunded_cents", Value::Int(self.refunded_cents(order, as_of_ms))),
            ("refunds", Value::List(refunds)),
        ]))
    }

    fn get_customer(&self, args: &Value) -> Result<Value, ToolError> {
        let id = str_arg(args, "customer_id")?;
        let index = self.config.index();
        let customer = index.customer(id).ok_or_else(|| ToolError::not_found(format!("no customer `{id}`")))?;
        let c = &self.config.customers[customer];
        let order_ids: Vec<Value> =
            index.orders_of(customer).iter().map(|&o| Value::str(&self.config.orders[o].id)).collect();
        assert!(order_ids.len() <= self.config.orders.len(), "a customer has at most every order");
        Ok(fields([
            ("customer_id", Value::str(&c.id)),
            ("name", Value::str(&c.name)),
            ("order_ids", Value::List(order_ids)),
        ]))
    }

    fn issue_refund(&mut self, call: &ToolCall, cx: &mut WorldCx<'_, DeskEvent>) -> Result<Value, ToolError> {
        let id = str_arg(&call.args, "order_id")?;
        let order = self.order_index(id).ok_or_else(|| ToolError::not_found(format!("no order `{id}`")))?;
        let amount_cents = int_arg(&call.args, "amount_cents")?;
        if let Some(key) = &call.idempotency_key
            && let Some(body) = self.replay(key, cx)
        {
            return Ok(body);
        }
        let now_ms = cx.now_ms;
        let session = self.seats.current();
        let own_already_cents = self.own_refunded_cents(&self.user.record, order, now_ms);
        self.check_total(order, amount_cents, cx);
        let order_id = &self.config.orders[order].id;
        if order != self.user.record.target.order {
            let wanted = &self.config.orders[self.user.record.target.order].id;
            cx.minefield("refund_wrong_order", format!("refund on {order_id}, the customer asked about {wanted}"));
        }
        // A second refund on an order refunds something twice, unless it only
        // completes what the customer asked for (the rest of a refund the service
        // applied in part): the order's refunds then add up to the request.
        let asked_cents =
            if order == self.user.record.target.order { self.amount_cents(&self.user.record.target) } else { 0 };
        if self.refunds_serving(&self.user.record).any(|r| r.order == order)
            && amount_cents.saturating_add(own_already_cents) > asked_cents
        {
            cx.minefield("duplicate_refund", format!("second refund on {order_id}"));
        }
        // `refunded_cents(order, at)` sums the refunds up to a time: they are
        // issued in time order.
        assert!(self.refunds.last().is_none_or(|r| r.at_ms <= now_ms), "refunds out of time order");
        let refund = Refund { session, order, amount_cents, at_ms: now_ms };
        let place = u32::try_from(self.refunds.len()).expect("fewer than 2^32 refunds in a run");
        cx.note(
            "refund_issued",
            fields([("order_id", Value::str(order_id)), ("amount_cents", Value::Int(amount_cents))]),
        );
        let body = refund_body(place as usize, &refund, order_id);
        let completes = own_already_cents.saturating_add(amount_cents) == self.amount_cents(&self.user.record.target);
        if order == self.user.record.target.order
            && (amount_cents == self.amount_cents(&self.user.record.target) || completes)
        {
            self.user.record.progress.reach("refunded", now_ms);
        }
        if let Some(key) = &call.idempotency_key {
            self.refund_by_key.insert(key.clone(), place);
        }
        self.refunds_of[order].push(place);
        self.refunded_amounts.insert(amount_cents);
        // The newest refund: the session's list stays ascending.
        self.user.record.refunds.push(place);
        self.refunds.push(refund);
        Ok(body)
    }

    /// The service's answer to a refund whose idempotency key it has seen: the
    /// first result, to whichever session sends it (which it then serves).
    fn replay(&mut self, key: &str, cx: &mut WorldCx<'_, DeskEvent>) -> Option<Value> {
        let place = *self.refund_by_key.get(key)?;
        let r = &self.refunds[place as usize];
        cx.note("idempotent_replay", fields([("refund_id", Value::Str(refund_id(place as usize)))]));
        let own = &mut self.user.record.refunds;
        if let Err(at) = own.binary_search(&place) {
            own.insert(at, place);
            let target = &self.user.record.target;
            if r.order == target.order && r.amount_cents == self.amount_cents(target) {
                self.user.record.progress.reach("refunded", cx.now_ms);
            }
        }
        Some(refund_body(place as usize, r, &self.config.orders[r.order].id))
    }

    /// The minefields of a refund's amount: not positive, past the order's
    /// total, or the same amount another session refunded on the order (the
    /// last two races when another session refunded the order first).
    fn check_total(&self, order: usize, amount_cents: i64, cx: &mut WorldCx<'_, DeskEvent>) {
        let session = self.seats.current();
        let total_cents = self.config.orders[order].total_cents();
        let already_cents = self.refunded_cents(order, cx.now_ms);
        // The first other session that refunded this order: a collision with
        // it is a race between sessions, not this agent's mistake alone.
        let other = self.refunds_on(order).find(|r| r.session != session).map(|r| r.session);
        let order_id = &self.config.orders[order].id;
        if amount_cents <= 0 {
            cx.minefield("refund_not_positive", format!("refund of {amount_cents} cents on {order_id}"));
        } else if amount_cents.saturating_add(already_cents) > total_cents {
            let detail = format!(
                "refund of {amount_cents} cents on {order_id} (total {total_cents}, already refunded {already_cents})"
            );
            match other {
                Some(other) => {
                    cx.race("refund_over_total", format!("{detail}, by session {other} too"), session, other)
                }
                None => cx.minefield("refund_over_total", detail),
            }
        } else if let Some(twin) =
            self.refunds_on(order).find(|r| r.session != session && r.amount_cents == amount_cents)
        {
            // Within the total, but the same amount on the same order again:
            // one request refunded by two sessions.
            let detail =
                format!("refund of {amount_cents} cents on {order_id}, refunded by session {} already", twin.session);
            cx.race("refunded_twice", detail, session, twin.session);
        }
    }

    /// The customer's answer to a structured `confirm` of (order, item,
    /// amount): no with what it meant, a change of mind (once, for a
    /// `changes_mind` customer), or yes.
    fn confirm_reply(&mut self, args: &Value, now_ms: TimeMs) -> Message {
        let order = args.get("order_id").and_then(Value::as_str).unwrap_or("");
        let item = args.get("item").and_then(Value::as_str).unwrap_or("");
        let amount = args.get("amount_cents").and_then(Value::as_int).unwrap_or(0);
        let t = self.user.record.target.clone();
        assert!(
            t.item.is_none_or(|i| i < self.config.orders[t.order].items.len()),
            "the request names an item of its order"
        );
        let right =
            order == self.config.orders[t.order].id && item == self.item_name(&t) && amount == self.amount_cents(&t);
        if !right {
            let content = self.request_and(&t, [("confirm", Value::Bool(false))]);
            let text = [
                "No, that's not it: I meant the ",
                self.item_name(&t),
                " from order ",
                &self.config.orders[t.order].id,
                ".",
            ]
            .concat();
            return Message { text, content };
        }
        if self.user.persona == Persona::ChangesMind && !self.user.mind_changed {
            return self.change_mind();
        }
        self.user.confirmed = true;
        self.user.record.progress.reach("confirmed", now_ms);
        let content = self.request_and(&t, [("confirm", Value::Bool(true))]);
        Message { text: "Yes, that's right, go ahead.".into(), content }
    }

    /// A `changes_mind` customer asks for its other item instead, once: the
    /// request is the other one from now on.
    fn change_mind(&mut self) -> Message {
        let alt = self.user.alternative.clone().expect("changes_mind is only drawn with an alternative");
        assert!(alt != self.user.record.target, "a change of mind asks for another item");
        self.user.mind_changed = true;
        self.user.record.target = alt.clone();
        let content = self.request_and(&alt, [("confirm", Value::Bool(false)), ("changed_mind", Value::Bool(true))]);
        let text = [
            "Actually, sorry, could you refund the ",
            self.item_name(&alt),
            " from order ",
            &self.config.orders[alt.order].id,
            " instead?",
        ]
        .concat();
        Message { text, content }
    }

    fn send_message(&mut self, args: &Value, cx: &mut WorldCx<'_, DeskEvent>) -> Result<Value, ToolError> {
        let kind = one_of_arg(args, "kind", super::tools::MESSAGE_KINDS)?;
        let to = str_arg(args, "customer_id")?;
        if self.config.index().customer(to).is_none() {
            if self.config.messages_to_anyone {
                // Out of the desk to a stranger: the engine judges the recipient.
                return Ok(self.user.outbox.sent());
            }
            return Err(ToolError::not_found(format!("no customer `{to}`")));
        }
        if to != self.customer_id() {
            cx.minefield("message_to_wrong_customer", format!("message meant for {} sent to {to}", self.customer_id()));
            return Ok(self.user.outbox.sent());
        }
        let now_ms = cx.now_ms;
        match kind {
            "confirm" => {
                let at = self.reply_at(now_ms);
                let reply = self.confirm_reply(args, now_ms);
                cx.tell_agent(at, reply);
            }
            "ask" => {
                let t = self.user.record.target.clone();
                let at = self.reply_at(now_ms);
                let text =
                    ["It's the ", self.item_name(&t), " from order ", &self.config.orders[t.order].id, "."].concat();
                cx.tell_agent(at, Message { text, content: self.request(&t) });
            }
            "done" => {
                let amount = args.get("amount_cents").and_then(Value::as_int).unwrap_or(0);
                // Contextual accuracy compares each amount told with the refunds
                // at its time: told amounts are kept in time order.
                assert!(
                    self.user.record.told_cents.last().is_none_or(|(at, _)| *at <= now_ms),
                    "told amounts out of time order"
                );
                self.user.record.told_cents.push((now_ms, amount));
                if self.user.record.progress.has("refunded") && amount == self.amount_cents(&self.user.record.target) {
                    self.user.record.progress.reach("customer_told", now_ms);
                }
            }
            _ => {}
        }
        Ok(self.user.outbox.sent())
    }
}

fn refund_body(place: usize, r: &Refund, order_id: &str) -> Value {
    fields([
        ("refund_id", Value::Str(refund_id(place))),
        ("order_id", Value::str(order_id)),
        ("amount_cents", Value::Int(r.amount_cents)),
        ("status", Value::str("issued")),
    ])
}

impl KitWorld for SupportDesk<'_> {
    type Event = DeskEvent;

    /// The customer's persona, what it wants refunded, and every fact it holds
    /// (whatever its persona states in its opening).
    fn user_instructions(&self) -> Option<String> {
        Some(self.instructions(&self.user))
    }

    const SESSIONS_MAX: u32 = agentsim_engine::sessions::SESSIONS_MAX;

    fn session_instructions(&self, session: SessionId) -> Option<String> {
        Some(self.instructions(self.customer_of(session)))
    }

    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, DeskEvent>) {
        let customer = Box::new(Customer::draw(self.config, &self.streams, session));
        self.seats.arrive(session, customer, &mut self.user);
        self.open(cx);
    }

    fn session_ended(&mut self, session: SessionId) {
        // Only what the judge reads is kept (`Seats`).
        self.seats.end(session, &mut self.user);
    }

    fn judge_session(&self, session: SessionId, case: Handover) -> Verdict {
        self.judge_customer(self.record_of(session), case)
    }

    fn serve(&mut self, served: Served<'_>, cx: &mut WorldCx<'_, DeskEvent>) -> Result<Value, ToolError> {
        self.switch(cx.session().unwrap_or(0));
        let (call, as_of_ms) = (served.call, served.as_of_ms);
        match served.name {
            "lookup_order" => self.lookup_order(&call.args, as_of_ms, cx.now_ms),
            "get_customer" => self.get_customer(&call.args),
            "issue_refund" => self.issue_refund(call, cx),
            "send_message" => self.send_message(&call.args, cx),
            _ => Err(no_such_tool()),
        }
    }

    fn start(&mut self, cx: &mut WorldCx<'_, DeskEvent>) {
        self.open(cx);
    }

    fn on_event(&mut self, event: DeskEvent, cx: &mut WorldCx<'_, DeskEvent>) {
        match event {
            DeskEvent::PatienceOut { session } => {
                cx.act_for(session);
                if !self.seats.is_closed(session) {
                    self.switch(session);
                }
                let request = self.request_of(self.record_of(session));
                let record = self.seats.record_mut(session, &mut self.user);
                GOODBYE.patience_out(!record.refunds.is_empty(), &mut record.left_at_ms, request, cx);
            }
            DeskEvent::Status { order } => self.move_order(order, cx),
        }
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, DeskEvent>) {
        self.switch(cx.session().unwrap_or(0));
        self.hear_text(text, cx);
    }

    fn judge(&self, case: Handover) -> Verdict {
        self.judge_customer(self.record_of(self.seats.current()), case)
    }
}

impl SupportDesk<'_> {
    /// The customer's persona, what it wants refunded, and every fact it holds
    /// (whatever its persona states in its opening).
    fn instructions(&self, user: &Customer) -> String {
        let t = &user.record.target;
        let order_id = &self.config.orders[t.order].id;
        let wanted = match t.item {
            None => format!("your whole order {order_id}"),
            Some(_) => format!("the {} from order {order_id}", self.item_name(t)),
        };
        format!(
            "Persona:\n\t{}\nInstructions:\n\tReason for call:\n\t\tYou want a refund of {wanted}.\n\tKnown info:\n\t\tcustomer_id: {}\n\t\torder_id: {order_id}\n\t\titem: {}\n",
            user.persona.name(),
            self.config.customers[user.record.customer].id,
            self.item_name(t),
        )
    }

    /// The customer of the session being handled arrives: its orders start to
    /// move (unless another session's already do), and it says what it wants.
    fn open(&mut self, cx: &mut WorldCx<'_, DeskEvent>) {
        // The customer's orders move along on their own.
        for &order in self.config.index().orders_of(self.user.record.customer) {
            if std::mem::replace(&mut self.moving[order], true) {
                continue;
            }
            if self.config.orders[order].status.next().is_some() {
                let at = self.config.status_change_ms.sample(&mut self.world_rng);
                cx.schedule(at, DeskEvent::Status { order });
            }
        }
        let t = self.user.record.target.clone();
        let c = &self.config.customers[self.user.record.customer];
        let item = self.item_name(&t);
        let order_id = &self.config.orders[t.order].id;
        let (text, content) = match self.user.persona {
            Persona::Vague => (
                ["Hi, this is ", &c.name, " (", &c.id, "). I want my money back for the ", item, " I bought."].concat(),
                fields([("customer_id", Value::str(&c.id)), ("item", Value::str(item))]),
            ),
            Persona::Clear | Persona::ChangesMind | Persona::Impatient if t.item.is_none() => (
                ["Hi, this is ", &c.name, " (", &c.id, "). Please refund my whole order ", order_id, "."].concat(),
                self.request(&t),
            ),
            Persona::Clear | Persona::ChangesMind | Persona::Impatient => (
                ["Hi, this is ", &c.name, " (", &c.id, "). Please refund the ", item, " from order ", order_id, "."]
                    .concat(),
                self.request(&t),
            ),
        };
        self.user.order_said = self.user.persona != Persona::Vague;
        cx.note("persona", Value::str(self.user.persona.name()));
        if self.user.persona == Persona::Impatient {
            let at = cx.now_ms.saturating_add(self.config.patience_ms);
            self.user.patience_at_ms = Some(at);
            cx.schedule(at, DeskEvent::PatienceOut { session: self.seats.current() });
        }
        self.user.record.progress.reach("started", cx.now_ms);
        cx.tell_agent(cx.now_ms, Message { text, content });
    }

    /// An order moves to its next status, and its next move is scheduled.
    fn move_order(&mut self, order: usize, cx: &mut WorldCx<'_, DeskEvent>) {
        {
            {
                let current = self.status_at(order, cx.now_ms);
                if let Some(next) = current.next() {
                    self.status[order].push(cx.now_ms, next);
                    cx.note(
                        "order_status",
                        fields([
                            ("order_id", Value::str(&self.config.orders[order].id)),
                            ("status", Value::str(next.name())),
                        ]),
                    );
                    if next.next().is_some() {
                        let at = cx.now_ms.saturating_add(self.config.status_change_ms.sample(&mut self.world_rng));
                        cx.schedule(at, DeskEvent::Status { order });
                    }
                }
            }
        }
    }

    /// Judges one session's request: what its customer's `user` record holds.
    fn judge_customer(&self, user: &Record, case: Handover) -> Verdict {
        let t = &user.target;
        let want_cents = self.amount_cents(t);
        let order_id = &self.config.orders[t.order].id;
        let own: Vec<&Refund> = self.refunds_serving(user).collect();
        let right_refund = own.iter().find(|r| r.order == t.order && r.amount_cents == want_cents);
        // The request is met by one refund of the amount, or by refunds of the
        // order that add up to it (a refund applied in part, then completed).
        let completed_at_ms = self.completed_at_ms(user, want_cents);
        let told =
            completed_at_ms.is_some_and(|done| user.told_cents.iter().any(|(at, c)| *at >= done && *c == want_cents));
        let order_ok = user.progress.check(milestones());
        let success = completed_at_ms.is_some() && told && order_ok.is_ok();
        let milestone = user.progress.last();
        // Contextual accuracy: each amount the customer was told must be what the
        // requested order had actually been refunded at that moment.
        let told_accurately = (!user.told_cents.is_empty() || user.told_wrong > 0).then(|| {
            user.told_wrong == 0
                && user.told_cents.iter().all(|(at, cents)| *cents > 0 && self.refunded_cents(t.order, *at) == *cents)
        });
        // A closing the customer could not read for certain, after the refund
        // was complete and before it was told it: it may have told it, so the
        // verdict is not a wrong result, and never a success.
        let uncertain = match (&user.uncertain, completed_at_ms) {
            (Some(unread), Some(done)) if !told && unread.0 >= done => Some(unread.1.clone()),
            _ => None,
        };
        if let Some(why) = uncertain {
            let mut verdict = case.verdict_told(false, milestone, why.clone(), told_accurately);
            verdict.uncertain = Some(why);
            return verdict;
        }
        if let Some(left) = user.left_at_ms {
            let mut seconds = itoa::Buffer::new();
            let detail = ["the customer left after ", seconds.format(left / 1_000), " s without a refund"].concat();
            return case.verdict_told(false, milestone, detail, told_accurately);
        }
        let mut cents = itoa::Buffer::new();
        let detail = if success {
            ["refunded ", cents.format(want_cents), " cents on ", order_id, " and told the customer"].concat()
        } else if own.is_empty() {
            ["no refund issued (wanted ", cents.format(want_cents), " cents on ", order_id, ")"].concat()
        } else if own.len() > 1 && completed_at_ms.is_none() {
            format!("{} refunds issued (wanted one of {want_cents} cents on {order_id})", own.len())
        } else if right_refund.is_none() && completed_at_ms.is_none() {
            let r = own[0];
            format!(
                "refunded {} cents on {} (wanted {want_cents} cents on {order_id})",
                r.amount_cents, self.config.orders[r.order].id
            )
        } else if let Err(why) = order_ok {
            format!("milestones out of order: {why}")
        } else {
            format!("refunded {want_cents} cents on {order_id} but never told the customer that amount")
        };
        case.verdict_told(success, milestone, detail, told_accurately)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request built with more fields is the request with each set on it.
    #[test]
    fn request_and_equals_the_request_with_fields_set() {
        let config = SupportDeskConfig::default();
        for seed in 0..20 {
            let desk = SupportDesk::new(&config, &StreamSource::new([7; 32], seed));
            let targets = (0..config.orders.len())
                .flat_map(|order| {
                    let items = config.orders[order].items.len();
                    std::iter::once(Target { order, item: None })
                        .chain((0..items).map(move |i| Target { order, item: Some(i) }))
                })
                .collect::<Vec<_>>();
            for t in &targets {
                let mut set = desk.request(t);
                set.set("confirm", Value::Bool(false));
                set.set("changed_mind", Value::Bool(true));
                let built = desk.request_and(t, [("confirm", Value::Bool(false)), ("changed_mind", Value::Bool(true))]);
                assert_eq!(built, set);
                let mut one = desk.request(t);
                one.set("confirm", Value::Bool(true));
                assert_eq!(desk.request_and(t, [("confirm", Value::Bool(true))]), one);
            }
        }
    }

    /// The texts joined from pieces print numbers as the formatter does
    /// (refund ids, cents that may be negative, seconds).
    #[test]
    fn texts_equal_the_formatter_s() {
        for place in (0..2_000).chain([usize::MAX - 9_001]) {
            assert_eq!(refund_id(place), format!("R{}", 9001 + place));
        }
        let cents = [0, 1, -1, 9, 10, -10, 12_345, i64::MIN, i64::MAX];
        for c in cents.into_iter().chain((-300..300).map(|i| i * 37)) {
            assert_eq!(itoa::Buffer::new().format(c), c.to_string());
        }
        for ms in [0u64, 999, 1_000, 61_234, u64::MAX] {
            assert_eq!(itoa::Buffer::new().format(ms / 1_000), (ms / 1_000).to_string());
        }
    }

    /// What support_desk keeps of every session once it ended: its judge's
    /// record (the customer, its conversation and its user's stream go).
    #[test]
    fn an_ended_session_keeps_its_record_only() {
        let seat = Seats::<Box<Customer>>::seat_bytes();
        let customer = std::mem::size_of::<Customer>();
        eprintln!("Seat {seat} bytes, Record {} bytes, Customer {customer} bytes", std::mem::size_of::<Record>());
        assert!(seat <= 160, "a session's seat is {seat} bytes");
        assert!(customer > 2 * seat, "the customer ({customer} bytes) is what a closed seat no longer holds");
    }
}
