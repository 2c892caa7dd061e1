//! The support_desk expert: the policy that solves the task from observations
//! alone. It is the `oracle` planner, and the noisy planner wraps it with mistakes.
//!
//! It keeps what it has learnt and derives its next action from that knowledge
//! every turn, so an error, a block or a change of mind at any point just changes
//! what it knows, and the next action follows: find the order, confirm with the
//! customer, refund, verify the refund after a timeout, tell the customer, finish.

use agentsim_engine::{Action, AgentCx, Finish, Reply, TimeMs, ToolCall, ToolResult, Value};

use super::tools::Ids;
use super::world::WHOLE_ORDER;
use crate::kit::case::{Case, Opening, call};
use crate::kit::expert::{Policy, take_str};
use crate::kit::fields::fields;
use crate::read::{LOOP_PAUSE_MS, Reader};

/// Who the expert serves and what it is after.
const OPENING: Opening = Opening { who: "customer", user_arg: "customer_id", goal: "complete the refund" };

#[derive(Clone, Debug)]
struct OrderView {
    id: String,
    customer_id: String,
    total_cents: i64,
    /// (item name, price in cents)
    items: Vec<(String, i64)>,
    refunds_cents: Vec<i64>,
    /// When the expert read it (a context eviction forgets older reads).
    learnt_at_ms: TimeMs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefundState {
    NotIssued,
    /// A refund call timed out: it may or may not have been applied.
    Uncertain,
    /// Looking the order up to find out.
    Verifying,
    Issued(i64),
}

/// The expert planner for support_desk.
pub struct Expert {
    ids: Ids,
    case: Case,
    customer_id: Option<String>,
    want_order: Option<String>,
    want_item: Option<String>,
    order_ids: Option<Vec<String>>,
    /// When `order_ids` was read.
    order_ids_at_ms: TimeMs,
    scanned: Vec<String>,
    known: Vec<OrderView>,
    confirmed: Option<(String, String, i64)>,
    refund: RefundState,
    told: bool,
}

impl Expert {
    /// A fresh expert using the tools `ids`.
    pub fn new(ids: Ids) -> Self {
        Self {
            ids,
            case: Case::new(ids.escalate, ids.authenticate),
            customer_id: None,
            want_order: None,
            want_item: None,
            order_ids: None,
            order_ids_at_ms: 0,
            scanned: Vec::new(),
            known: Vec::new(),
            confirmed: None,
            refund: RefundState::NotIssued,
            told: false,
        }
    }

    /// (order, item, amount) the expert would refund now, if it knows enough.
    fn proposal(&self) -> Option<(String, String, i64)> {
        let order = self.known.iter().find(|o| Some(&o.id) == self.want_order.as_ref())?;
        let item = self.want_item.as_ref()?;
        let amount = amount_for(order, item)?;
        Some((order.id.clone(), item.clone(), amount))
    }

    /// The order the customer means (its place in `known`: the view is read
    /// there, not copied), or the action that finds it. Strings are copied
    /// only into the call made.
    fn find_order(&mut self, item: &str) -> Result<usize, Action> {
        if let Some(id) = &self.want_order {
            return match self.known.iter().position(|o| o.id == *id) {
                Some(i) => Ok(i),
                None => Err(self.lookup(id)),
            };
        }
        let customer = self.customer_id.as_deref().unwrap_or_default();
        if let Some(i) = self
            .known
            .iter()
            .position(|o| o.customer_id == customer && amount_for(o, item).is_some() && item != WHOLE_ORDER)
        {
            self.want_order = Some(self.known[i].id.clone());
            return Ok(i);
        }
        if item != WHOLE_ORDER {
            match &self.order_ids {
                None => {
                    return Err(call(self.ids.get_customer, fields([("customer_id", Value::str(customer))])));
                }
                Some(ids) => {
                    if let Some(next) = ids.iter().find(|id| !self.scanned.contains(id)) {
                        return Err(self.lookup(next));
                    }
                }
            }
        }
        if self.case.asked {
            return Err(Action::Idle { wake_at_ms: None });
        }
        Err(call(
            self.ids.send_message,
            fields([("customer_id", Value::str(customer)), ("kind", Value::str("ask")), ("item", Value::str(item))]),
        ))
    }

    fn lookup(&self, order_id: &str) -> Action {
        call(self.ids.lookup_order, fields([("order_id", Value::str(order_id))]))
    }

    /// The customer's id, copied into a call (the case's opening moves have
    /// made sure it is known).
    fn customer(&self) -> Value {
        Value::str(self.customer_id.as_deref().unwrap_or_default())
    }

    fn plan(&mut self) -> Action {
        if let Err(first) = self.case.open(&OPENING, self.customer_id.as_ref(), false, String::new) {
            return first;
        }
        if self.case.awaiting_user {
            return Action::Idle { wake_at_ms: None };
        }
        // Taken out for the plan and put back (nothing in it changes it), so
        // that it is read, not copied, while the expert changes what it knows.
        let Some(item) = self.want_item.take() else {
            return Action::Idle { wake_at_ms: None };
        };
        let action = self.plan_for(&item);
        self.want_item = Some(item);
        action
    }

    /// [`Expert::plan`] once the case is open and the customer's `item` known.
    fn plan_for(&mut self, item: &str) -> Action {
        let ids = self.ids;
        let (i, amount) = match self.find_order(item) {
            Ok(i) => (i, amount_for(&self.known[i], item)),
            Err(action) => return action,
        };
        let order = &self.known[i];
        let refunded = amount.is_some_and(|a| order.refunds_cents.contains(&a));
        let Some(amount) = amount else {
            // The order does not show the item: the data is off, look again.
            let order_id = order.id.clone();
            self.known.retain(|o| o.id != order_id);
            self.case.failures += 1;
            return self.lookup(&order_id);
        };
        match self.refund {
            RefundState::Uncertain | RefundState::Verifying => {
                self.refund = RefundState::Verifying;
                self.lookup(&self.known[i].id)
            }
            RefundState::NotIssued if refunded => {
                // Already refunded (an earlier attempt went through): do not refund twice.
                self.refund = RefundState::Issued(amount);
                self.plan_for(item)
            }
            RefundState::NotIssued => {
                let confirmed =
                    self.confirmed.as_ref().is_some_and(|(o, i, a)| *o == order.id && i == item && *a == amount);
                if !confirmed {
                    call(
                        ids.send_message,
                        fields([
                            ("customer_id", self.customer()),
                            ("kind", Value::str("confirm")),
                            ("order_id", Value::str(&order.id)),
                            ("item", Value::str(item)),
                            ("amount_cents", Value::Int(amount)),
                        ]),
                    )
                } else {
                    call(
                        ids.issue_refund,
                        fields([
                            ("order_id", Value::str(&order.id)),
                            ("amount_cents", Value::Int(amount)),
                            ("reason", Value::str("customer request")),
                        ]),
                    )
                }
            }
            RefundState::Issued(cents) if !self.told => call(
                ids.send_message,
                fields([
                    ("customer_id", self.customer()),
                    ("kind", Value::str("done")),
                    ("order_id", Value::str(&order.id)),
                    ("amount_cents", Value::Int(cents)),
                ]),
            ),
            RefundState::Issued(_) => Action::Finish(Finish::Done),
        }
    }
}

fn amount_for(order: &OrderView, item: &str) -> Option<i64> {
    if item == WHOLE_ORDER {
        return Some(order.total_cents);
    }
    order.items.iter().find(|(name, _)| name == item).map(|(_, cents)| *cents)
}

impl Policy for Expert {
    /// The next action: the time plays no part in it (what is read goes
    /// stale by the context's eviction, not by the clock).
    fn next(&mut self, _now_ms: TimeMs) -> Action {
        self.plan()
    }

    /// Drops what was read from tools before `before_ms`: that part of the context
    /// was evicted, so the expert must look it up again. (What the customer said
    /// and what the expert itself did stay: a model keeps a running summary of
    /// the conversation, not of every tool body.)
    fn forget(&mut self, before_ms: TimeMs) {
        self.known.retain(|o| o.learnt_at_ms >= before_ms);
        if self.order_ids.is_some() && self.order_ids_at_ms < before_ms {
            self.order_ids = None;
            self.scanned.clear();
        }
    }

    fn hear(&mut self, content: &Value) {
        take_str(content, "customer_id", &mut self.customer_id);
        take_str(content, "order_id", &mut self.want_order);
        take_str(content, "item", &mut self.want_item);
        match content.get("confirm") {
            Some(Value::Bool(true)) => self.confirmed = self.proposal(),
            Some(Value::Bool(false)) if content.get("changed_mind").is_none() => {
                // The customer says our proposal is wrong although they asked for the
                // same thing: what we read about the order must be off. Look again.
                let order = self.want_order.clone();
                self.known.retain(|o| Some(&o.id) != order.as_ref());
            }
            _ => {}
        }
    }

    fn answer_lost(&mut self, name: &str) -> bool {
        // The refund may have been applied before the answer was lost.
        (name == "issue_refund").then(|| self.refund = RefundState::Uncertain).is_some()
    }

    /// Learns from a tool result; returns how long to wait before acting again.
    fn learn(&mut self, name: &str, r: &ToolResult, body: &Value, cx: &AgentCx<'_>) -> Option<TimeMs> {
        let tool = r.call.tool;
        let read = Reader { cx, tool };
        if name == "lookup_order" {
            let view = OrderView {
                id: read.str(body, "order_id"),
                customer_id: read.str(body, "customer_id"),
                total_cents: read.int(body, "total_cents"),
                items: read
                    .list(body, "items")
                    .iter()
                    .map(|i| (read.str(i, "name"), read.int(i, "price_cents")))
                    .collect(),
                refunds_cents: read.list(body, "refunds").iter().map(|r| read.int(r, "amount_cents")).collect(),
                learnt_at_ms: cx.now_ms,
            };
            let asked_for = r.call.args.get("order_id").and_then(Value::as_str).unwrap_or_default();
            if !self.scanned.iter().any(|s| s == asked_for) {
                self.scanned.push(asked_for.to_string());
            }
            if self.refund == RefundState::Verifying && Some(&view.id) == self.want_order.as_ref() {
                let expected = self.want_item.as_ref().and_then(|item| amount_for(&view, item));
                self.refund = match expected {
                    Some(cents) if view.refunds_cents.contains(&cents) => RefundState::Issued(cents),
                    _ => RefundState::NotIssued,
                };
            }
            self.known.retain(|o| o.id != view.id);
            self.known.push(view);
        } else if name == "get_customer" {
            self.order_ids =
                Some(read.list(body, "order_ids").iter().filter_map(|v| v.as_str().map(str::to_string)).collect());
            self.order_ids_at_ms = cx.now_ms;
        } else if name == "issue_refund" {
            let cents = r.call.args.get("amount_cents").and_then(Value::as_int).unwrap_or_default();
            self.refund = RefundState::Issued(cents);
        } else if name == "send_message" {
            match r.call.args.get("kind").and_then(Value::as_str) {
                Some("confirm") => self.case.awaiting_user = true,
                Some("ask") => self.case.asked_user(),
                Some("done") => self.told = true,
                _ => {}
            }
        }
        None
    }

    fn learn_failure(&mut self, name: &str, r: &ToolResult) -> Option<TimeMs> {
        match &r.reply {
            Reply::Error { status: 404, .. } if name == "lookup_order" => {
                let asked = r.call.args.get("order_id").and_then(Value::as_str);
                if asked.is_some() && asked == self.want_order.as_deref() {
                    // The customer's order id does not exist: ask again.
                    self.want_order = None;
                    self.case.asked = false;
                }
                None
            }
            reply => self.case.after_failure(reply),
        }
    }

    fn blocked(&mut self, name: &str, call: &ToolCall, layer: &str) -> Option<TimeMs> {
        if name == "issue_refund" {
            // What we knew about the order led to a refused refund: look again.
            let order = call.args.get("order_id").and_then(Value::as_str).unwrap_or_default();
            self.known.retain(|o| o.id != order);
        }
        // Told it is looping, or that the tool's circuit is open: pause
        // before trying again rather than asking at once.
        (layer == "loop_detector" || layer == "circuit_breaker").then_some(LOOP_PAUSE_MS)
    }

    fn case(&mut self) -> &mut Case {
        &mut self.case
    }
}
