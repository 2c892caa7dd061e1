//! The customer reads what the agent writes in words (`Action::Say`): the
//! support_desk side of the text channel (rules in `docs/conversation.md`).
//!
//! The customer's facts are its customer id, its name, the order, the item (or
//! `whole order`) and the amount it expects back. A question gets the facts it
//! names; a proposal is checked value by value (a wrong value is refused with
//! the correction; a right one that names the item is a yes, or
//! the change of mind of a `changes_mind` customer, exactly as a structured
//! `confirm`; one that does not name the item, or names one the customer
//! does not know, gets the request restated); a statement is judged: an amount or an id told that the world
//! never held is the minefield `told_wrong_value`, and a refund told is what
//! the customer was told (the `customer_told` milestone, contextual accuracy).

use std::rc::Rc;

use agentsim_engine::{Message, Value, WorldCx};

use super::{DeskEvent, Persona, SupportDesk};
use crate::kit::listen::{self, Listener};
use crate::talk::scan::Word;
use crate::talk::voice::Voice;
use crate::talk::{self, Fact, FactValue, Intent, Lexicon, Reading, money_text};

/// The minefield of a statement to the user that carries a value the world
/// never held (an amount, an order or a customer id); defined in `talk`, where
/// every world's user finds it.
pub use crate::talk::TOLD_WRONG_VALUE;

/// The facts' places in [`SupportDesk::facts`].
const CUSTOMER_ID: usize = 0;
const ORDER_ID: usize = 1;
const ITEM: usize = 2;

/// Words that name the refund an amount is about.
const REFUND_WORDS: &[&str] = &["refund", "refunded", "credited", "reimbursed", "returned", "refunding"];

impl<'c> SupportDesk<'c> {
    /// The customer's facts about what it wants now, made once per request:
    /// the request changes only on a change of mind, and the text channel reads
    /// every message against them.
    fn facts(&mut self) -> Rc<[Fact]> {
        match &self.user.facts {
            Some((target, facts)) if *target == self.user.record.target => Rc::clone(facts),
            _ => {
                let facts: Rc<[Fact]> = self.make_facts().into();
                self.user.facts = Some((self.user.record.target.clone(), Rc::clone(&facts)));
                facts
            }
        }
    }

    fn make_facts(&self) -> Vec<Fact> {
        let t = &self.user.record.target;
        let c = &self.config.customers[self.user.record.customer];
        vec![
            Fact::new("customer_id", FactValue::Id(c.id.clone())).alias("customer number").alias("account"),
            Fact::new("order_id", FactValue::Id(self.config.orders[t.order].id.clone())),
            Fact::new("item", FactValue::Name(self.item_name(t).to_string())).alias("product").alias("which item"),
            Fact::new("amount", FactValue::Money(self.amount_cents(t))).alias("amount").alias("price").alias("total"),
            Fact::new("name", FactValue::Name(c.name.clone())).alias("your name").alias("full name"),
        ]
    }

    /// Every item of the desk, and `whole order`: the names the customer knows
    /// (the same for every customer, made once per process).
    fn lexicon(&self) -> &'c Lexicon {
        self.config.index().lexicon()
    }

    /// The customer reads `text` and answers (or, for a statement, judges it).
    pub(super) fn hear_text(&mut self, text: &str, cx: &mut WorldCx<'_, DeskEvent>) {
        if self.user.record.left_at_ms.is_some() {
            return;
        }
        let facts = self.facts();
        let ws = talk::scan::words(text);
        let reading = talk::read_scanned(text, &ws, &facts, self.lexicon());
        let at = self.reply_at(cx.now_ms);
        let reply = match reading.intent {
            Intent::Ask => self.answer_question(&reading, &facts),
            Intent::Propose => self.answer_proposal(&reading, &facts, cx),
            Intent::Tell => self.judge_statement(text, &ws, &reading, &facts, cx),
            Intent::SmallTalk | Intent::Unclear => listen::chat(self, reading.intent, text, cx),
        };
        cx.tell_agent(at, reply);
    }

    fn answer_question(&mut self, reading: &Reading, facts: &[Fact]) -> Message {
        let content = Value::map([("customer_id", Value::str(self.customer_id()))]);
        listen::answer_question(self, reading, facts, label, content, |_, fact| fact.value.to_value())
    }

    fn answer_proposal(&mut self, reading: &Reading, facts: &[Fact], cx: &mut WorldCx<'_, DeskEvent>) -> Message {
        // Drawn nothing here that the structured `confirm` does not draw: the
        // change of mind is the persona's, once, as there.
        let t = self.user.record.target.clone();
        let wrong: Vec<usize> = reading.stated.iter().filter(|s| !s.right).map(|s| s.fact).collect();
        if !wrong.is_empty() {
            let text = listen::refuse(self, facts, &[ITEM, ORDER_ID], &wrong, label);
            let content = self.request_and(&t, [("confirm", Value::Bool(false))]);
            return Message { text, content };
        }
        if !reading.states_right(ITEM) {
            // "Shall I go ahead?", or an item the customer does not know ("the
            // monitor"): it restates what it wants instead of agreeing unseen.
            // The item (or `whole order`) is what the refund is of.
            let request = self.request_text();
            return Message { text: request, content: self.request(&t) };
        }
        if self.user.persona == Persona::ChangesMind && !self.user.mind_changed {
            return self.change_mind();
        }
        self.user.confirmed = true;
        self.user.record.progress.reach("confirmed", cx.now_ms);
        let content = self.request_and(&t, [("confirm", Value::Bool(true))]);
        Message { text: self.voice().yes(), content }
    }

    /// Judges a statement: every amount and id it tells must be one the world
    /// holds for this customer; a refund told is recorded as told.
    fn judge_statement(
        &mut self,
        text: &str,
        ws: &[Word],
        reading: &Reading,
        facts: &[Fact],
        cx: &mut WorldCx<'_, DeskEvent>,
    ) -> Message {
        let now_ms = cx.now_ms;
        for cents in reading.amounts() {
            if !self.true_amount(cents, now_ms) {
                cx.minefield(TOLD_WRONG_VALUE, format!("told {} (the world holds no such amount)", money_text(cents)));
            }
        }
        for s in &reading.stated {
            if (s.fact == ORDER_ID || s.fact == CUSTOMER_ID) && !s.right && !self.own_id(&s.written) {
                cx.minefield(TOLD_WRONG_VALUE, format!("told {} {}", label(&facts[s.fact]), s.written));
            }
        }
        if reading.done
            && let Some(cents) = refund_told(text, ws)
        {
            self.user.record.told_cents.push((now_ms, cents));
            if self.user.record.progress.has("refunded") && cents == self.amount_cents(&self.user.record.target) {
                self.user.record.progress.reach("customer_told", now_ms);
            }
        }
        listen::acknowledge(self, reading.done)
    }

    /// Whether `cents` is an amount the world holds for this customer now: an
    /// item's price or an order's total, or what was refunded (one refund, or an
    /// order's refunds together).
    fn true_amount(&self, cents: i64, now_ms: agentsim_engine::TimeMs) -> bool {
        for &i in self.config.index().orders_of(self.user.record.customer) {
            let order = &self.config.orders[i];
            if order.total_cents() == cents
                || order.items.iter().any(|item| item.price_cents == cents)
                || (cents > 0 && self.refunded_cents(i, now_ms) == cents)
            {
                return true;
            }
        }
        self.refunded_amounts.contains(&cents)
    }

    /// Whether `id` is this customer's id or one of its orders'.
    fn own_id(&self, id: &str) -> bool {
        let id = id.trim_start_matches('#');
        id.eq_ignore_ascii_case(self.customer_id())
            || self
                .config
                .index()
                .orders_of(self.user.record.customer)
                .iter()
                .any(|&o| self.config.orders[o].id.eq_ignore_ascii_case(id))
    }
}

impl Listener for SupportDesk<'_> {
    fn request_content(&self) -> Value {
        self.request(&self.user.record.target)
    }

    /// The request in words, as the customer restates it.
    fn request_text(&self) -> String {
        let t = &self.user.record.target;
        let order_id = &self.config.orders[t.order].id;
        match t.item {
            None => format!("I'd like my whole order {order_id} refunded."),
            Some(_) => format!("I'd like a refund for the {} from order {order_id}.", self.item_name(t)),
        }
    }

    fn voice(&mut self) -> &mut Voice {
        listen::voice_of(&mut self.user.voice, self.user.persona, &self.user.user_rng)
    }
}

/// The amount a closing says was refunded: in a sentence that says something
/// was done, the amount written closest to a refund word. `ws` are the
/// text's words, read already.
fn refund_told(text: &str, ws: &[Word]) -> Option<i64> {
    let mut best: Option<(usize, i64)> = None;
    for sentence in talk::intent::sentences_of(text, ws) {
        if !talk::intent::says_done(&sentence.words) {
            continue;
        }
        let refund_at: Vec<usize> = (sentence.words.iter().enumerate())
            .filter(|(_, w)| REFUND_WORDS.contains(&w.text.as_str()))
            .map(|(i, _)| i)
            .collect();
        for (i, cents) in talk::scan::amounts_at(&sentence.words) {
            let distance = refund_at.iter().map(|&r| r.abs_diff(i)).min().unwrap_or(usize::MAX);
            if distance <= 8 && best.is_none_or(|(d, _)| distance < d) {
                best = Some((distance, cents));
            }
        }
    }
    best.map(|(_, c)| c)
}

/// How the customer names a fact: `order id` for `order_id`.
fn label(fact: &Fact) -> String {
    match fact.name.as_str() {
        "order_id" => "order number".to_string(),
        "customer_id" => "customer id".to_string(),
        other => other.replace('_', " "),
    }
}
