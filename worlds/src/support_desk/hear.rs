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

use agentsim_engine::{Message, TimeMs, Value, WorldCx};

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
const AMOUNT: usize = 3;

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
        // A customer whose patience runs out before its answer would come
        // leaves instead: it takes in what it was told, and answers or agrees
        // to nothing (docs/conversation.md).
        if self.user.patience_at_ms.is_some_and(|p| at >= p) && self.user.record.refunds.is_empty() {
            if reading.intent == Intent::Tell {
                let _unsent = self.judge_statement(text, &ws, &reading, &facts, cx);
            }
            return;
        }
        let reply = match reading.intent {
            Intent::Ask => self.answer_question(&reading, &facts),
            Intent::Propose => self.answer_proposal(&reading, &facts, cx),
            Intent::Tell => self.judge_statement(text, &ws, &reading, &facts, cx),
            Intent::SmallTalk | Intent::Unclear => listen::chat(self, reading.intent, text, cx),
        };
        cx.tell_agent(at, reply);
    }

    fn answer_question(&mut self, reading: &Reading, facts: &[Fact]) -> Message {
        self.user.order_said |= reading.asked.contains(&ORDER_ID);
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
        // A whole order is named by its order and its total as well as by the
        // words ("a full refund of $154.49 for order A1003").
        let whole_by_values = t.item.is_none() && reading.states_right(ORDER_ID) && reading.states_right(AMOUNT);
        if !reading.states_right(ITEM) && !whole_by_values {
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
    /// holds for this customer; a closing (a refund said done, affirmed and
    /// unhedged) is read for the values bound to it (docs/conversation.md):
    /// one amount, and no other item or order, is what the customer was told;
    /// anything else is a wrong statement, corrected. A refund said not done,
    /// would-have-been or hedged is not a closing; one the reader cannot place
    /// is noted `uncertain`.
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
        // Every closing is about the refund (the desk does nothing else), so a
        // done claim with values is read as one.
        let told = talk::claims::told(text, ws, reading);
        if told.said_done && !(told.amounts.is_empty() && told.stated.is_empty()) {
            return self.closing(&told, reading, facts, now_ms);
        }
        if !ws.iter().any(|w| REFUND_WORDS.contains(&w.text.as_str())) {
            return listen::acknowledge(self, false);
        }
        if let Some(doubt) = told.doubt {
            if doubt == talk::claims::Doubt::Mixed {
                return self.unsure(text, "it says the refund was done and that it was not", now_ms, cx);
            }
            let request = self.request_text();
            return listen::doubted(self, doubt, &request);
        }
        if reading.amounts().is_empty() {
            return listen::acknowledge(self, false);
        }
        // A refund and an amount, and nothing that says whether it was done:
        // the reader cannot tell a closing from a promise.
        self.unsure(text, "it speaks of a refund and an amount without saying it was done", now_ms, cx)
    }

    /// The customer cannot read `text` for certain (`why`): with a judge
    /// (`--judge llm:MODEL`), the judge reads it (see [`Self::judged`]);
    /// without one, or when the judge cannot tell, it is noted in the
    /// trajectory, kept for the verdict once the refund is complete, and said.
    fn unsure(&mut self, text: &str, why: &str, now_ms: TimeMs, cx: &mut WorldCx<'_, DeskEvent>) -> Message {
        let mut why = why.to_string();
        if let Some(judge) = cx.judge() {
            match self.judged(judge, text, now_ms, cx) {
                Ok(reply) => return reply,
                Err(judge_why) => why = format!("{why}; the judge: {judge_why}"),
            }
        }
        if self.user.record.uncertain.is_none() && self.user.record.progress.has("refunded") {
            let why = format!("the customer could not read the closing for certain ({why}): {text:?}");
            self.user.record.uncertain = Some(Box::new((now_ms, why)));
        }
        cx.note("uncertain_reading", Value::map([("why", Value::str(&why)), ("text", Value::str(text))]));
        let request = self.request_text();
        listen::unsure(self, &request)
    }

    /// The judge reads `text`, which the rules could not decide, knowing the
    /// customer's facts; what it read is the note `judged_reading` (in the
    /// digest). Said done with the request's amount, and with its order and
    /// item when it names them: the closing is read (told, as
    /// [`Self::closing`] reads a right one). Said done with another amount,
    /// order or item: a wrong statement, corrected. Said not done: doubted, as
    /// a negated closing. Otherwise (the judge failed, or cannot tell, or says
    /// done without an amount): `Err` with why, and the reading stays
    /// uncertain.
    fn judged(
        &mut self,
        judge: &dyn agentsim_engine::ReadingJudge,
        text: &str,
        now_ms: TimeMs,
        cx: &mut WorldCx<'_, DeskEvent>,
    ) -> Result<Message, String> {
        let facts = self.facts();
        let pairs: Vec<(String, String)> = facts.iter().map(|f| (f.name.clone(), f.value.shown())).collect();
        let answer = match judge.read(text, &pairs) {
            Ok(answer) => answer,
            Err(reason) => {
                let detail = Value::map([("text", Value::str(text)), ("failed", Value::str(&reason))]);
                cx.note("judged_reading", detail);
                return Err(format!("failed ({reason})"));
            }
        };
        let t = self.user.record.target.clone();
        let expected_cents = self.amount_cents(&t);
        let order_right = answer
            .order_id
            .as_deref()
            .is_none_or(|o| o.trim().trim_start_matches('#').eq_ignore_ascii_case(&self.config.orders[t.order].id));
        let item_right = answer.item.as_deref().is_none_or(|i| same_item(i, self.item_name(&t), t.item.is_none()));
        let reading = match (answer.done, answer.amount_cents) {
            (Some(true), Some(cents)) if cents == expected_cents && order_right && item_right => "told",
            (Some(true), Some(_)) => "told_wrong",
            (Some(false), _) => "not_done",
            _ => "cannot_tell",
        };
        let shown = |v: Option<String>| v.map_or(Value::Null, Value::Str);
        let detail = Value::map([
            ("text", Value::str(text)),
            ("done", answer.done.map_or(Value::Null, Value::Bool)),
            ("amount_cents", answer.amount_cents.map_or(Value::Null, Value::Int)),
            ("order_id", shown(answer.order_id.clone())),
            ("item", shown(answer.item.clone())),
            ("reading", Value::str(reading)),
            ("key", Value::str(&answer.key)),
            ("retries", Value::List(answer.retries.iter().map(Value::str).collect())),
        ]);
        cx.note("judged_reading", detail);
        match reading {
            "told" => {
                self.user.record.told_cents.push((now_ms, expected_cents));
                if self.user.record.progress.has("refunded") {
                    self.user.record.progress.reach("customer_told", now_ms);
                }
                Ok(listen::acknowledge(self, true))
            }
            "told_wrong" => {
                self.user.record.told_wrong = self.user.record.told_wrong.saturating_add(1);
                let text = listen::refuse(self, &facts, &[ITEM, ORDER_ID, AMOUNT], &[], label);
                Ok(Message { text, content: self.request_and(&t, [("told_wrong", Value::Bool(true))]) })
            }
            "not_done" => {
                let request = self.request_text();
                Ok(listen::doubted(self, talk::claims::Doubt::Negated, &request))
            }
            _ => Err("it could not tell whether the refund was done, or for how much".to_string()),
        }
    }

    /// The customer reads a closing: its bound values must be the request's
    /// (one amount, the item and order if named); a closing with none, or a
    /// wrong one, is answered so that the agent can repair it.
    fn closing(&mut self, told: &talk::claims::Told, reading: &Reading, facts: &[Fact], now_ms: TimeMs) -> Message {
        let wrong: Vec<usize> = told
            .stated
            .iter()
            .map(|&i| &reading.stated[i])
            .filter(|s| !s.right && matches!(s.fact, ORDER_ID | ITEM | CUSTOMER_ID))
            .map(|s| s.fact)
            .collect();
        let t = self.user.record.target.clone();
        match told.amounts.as_slice() {
            [cents] if wrong.is_empty() => {
                self.user.record.told_cents.push((now_ms, *cents));
                if self.user.record.progress.has("refunded") && *cents == self.amount_cents(&t) {
                    self.user.record.progress.reach("customer_told", now_ms);
                }
                if *cents == self.amount_cents(&t) {
                    return listen::acknowledge(self, true);
                }
                let text = listen::refuse(self, facts, &[ITEM, ORDER_ID, AMOUNT], &[], label);
                Message { text, content: self.request_and(&t, [("told_wrong", Value::Bool(true))]) }
            }
            [] if wrong.is_empty() => {
                let request = self.request_text();
                listen::how_much(self, &request)
            }
            _ => {
                self.user.record.told_wrong = self.user.record.told_wrong.saturating_add(1);
                let text = listen::refuse(self, facts, &[ITEM, ORDER_ID, AMOUNT], &wrong, label);
                Message { text, content: self.request_and(&t, [("told_wrong", Value::Bool(true))]) }
            }
        }
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
        match (t.item, self.user.order_said) {
            (None, true) => format!("I'd like my whole order {order_id} refunded."),
            (Some(_), true) => format!("I'd like a refund for the {} from order {order_id}.", self.item_name(t)),
            // A vague customer restates what it wants as it first said it.
            (None, false) => "I'd like my money back for the whole order I bought.".to_string(),
            (Some(_), false) => format!("I'd like my money back for the {} I bought.", self.item_name(t)),
        }
    }

    fn voice(&mut self) -> &mut Voice {
        listen::voice_of(&mut self.user.voice, self.user.persona, &self.user.user_rng)
    }
}

/// Whether `said` (an item as the judge read it) is `item` (the request's;
/// `whole` when the request is the whole order): the same words, or one
/// within the other (`keyboard`, `wireless keyboard`), case aside.
fn same_item(said: &str, item: &str, whole: bool) -> bool {
    let said = said.trim().to_lowercase();
    if whole {
        return ["order", "whole", "entire", "all", "everything"].iter().any(|w| said.contains(w));
    }
    let item = item.to_lowercase();
    !said.is_empty() && (said.contains(&item) || item.contains(&said))
}

/// How the customer names a fact: `order id` for `order_id`.
fn label(fact: &Fact) -> String {
    match fact.name.as_str() {
        "order_id" => "order number".to_string(),
        "customer_id" => "customer id".to_string(),
        other => other.replace('_', " "),
    }
}
