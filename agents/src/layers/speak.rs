//! Says a planner's structured messages to the user in words.
//!
//! A planner written for the structured user channel sends
//! `send_message(kind: "confirm", order_id: ..., amount_cents: ...)`; a chat
//! agent writes "Shall I refund the keyboard from order A1002, $89.00?". This
//! layer turns the first into the second: a call to a tool that documents how
//! its messages read ([`ToolDef::phrasing`], per `kind`) leaves the stack as
//! `Action::Say` with the filled template, and the planner is told its message
//! was sent (as the tool would answer), so it goes on exactly as after a real
//! send. The user then reads the words by the world's text rules, so the
//! planner's mistakes (a misread id, a wrong amount) reach the user as text and
//! are judged as text.
//!
//! Place it outermost (last in the list): the layers inside it (a guardrail, a
//! provenance rule) see the structured call first and may refuse it. Each
//! message said is noted as `("speak", "said", {kind})`.

use agentsim_engine::{Action, Agent, AgentCx, Input, Reply, ToolDef, ToolResult, Value, ValueKind};

/// The stack layer that says structured messages in words.
pub struct Speak {
    inner: Box<dyn Agent>,
    /// What the inner stack decided right after a message it sent, to be done
    /// when the user has answered (a `Finish` after a closing, say).
    pending: Option<Action>,
    /// A user's answer that arrived while a pending action ran, handed to the
    /// inner stack when it next waits.
    held: Option<Input>,
}

impl Speak {
    /// Wraps `inner`. The layer draws no randomness.
    pub fn new(inner: Box<dyn Agent>) -> Self {
        Self { inner, pending: None, held: None }
    }

    /// Says `action` in words when it sends a message through a tool with a
    /// phrasing; any other action passes unchanged.
    fn voice(&mut self, action: Action, cx: &mut AgentCx<'_>) -> Action {
        let Action::Call(call) = action else { return self.unhold(action, cx) };
        let def = &cx.catalog.spec(call.tool).def;
        let kind = call.args.get("kind").and_then(Value::as_str).unwrap_or("");
        let Some(text) = words(def, kind, &call.args) else { return Action::Call(call) };
        let body = sent_body(def);
        cx.note("speak", "said", Value::map([("kind", Value::str(kind))]));
        let sent = ToolResult { call, reply: Reply::Ok(body.into()), latency_ms: 0, cache_age_ms: None };
        // Saying waits for the user's answer: an inner stack that waits (with a
        // timer or without) gets that answer; anything else it does first waits
        // for the answer to arrive.
        match self.inner.step(Input::Tool(sent), cx) {
            Action::Idle { .. } => {}
            next => self.pending = Some(next),
        }
        Action::Say { text }
    }

    /// When the inner stack waits and a user's answer is held, it gets the
    /// answer instead of waiting.
    fn unhold(&mut self, action: Action, cx: &mut AgentCx<'_>) -> Action {
        match (&action, self.held.take()) {
            (Action::Idle { .. }, Some(input)) => {
                let next = self.inner.step(input, cx);
                self.voice(next, cx)
            }
            (_, held) => {
                self.held = held;
                action
            }
        }
    }
}

impl Agent for Speak {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        if let Some(pending) = self.pending.take() {
            if matches!(input, Input::User(_)) && !matches!(pending, Action::Finish(_)) {
                self.held = Some(input);
            }
            return self.voice(pending, cx);
        }
        let action = self.inner.step(input, cx);
        self.voice(action, cx)
    }
}

/// The message `args` of `kind` in words, from the tool's phrasing; `None`
/// when the tool says no phrasing for it (a tool that is no message).
pub fn words(def: &ToolDef, kind: &str, args: &Value) -> Option<String> {
    let template = def.phrasing_of(kind).or_else(|| def.phrasing_of(""))?;
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else { break };
        let name = &rest[open + 1..open + close];
        if name == "details" {
            out.push_str(&details(def, args));
        } else {
            if let Some(v) = args.get(name) {
                shown_into(&mut out, name, v);
            }
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Every argument but the kind and the recipient, as `the order id is A1002, the
/// amount is $89.00 and ...`; a map's own fields are listed in its place (`the
/// action is cancel pending order, the order id is #W1 and the reason is ...`).
fn details(def: &ToolDef, args: &Value) -> String {
    let Value::Map(pairs) = args else { return String::new() };
    let mut parts: Vec<String> = Vec::new();
    let top = pairs.iter().filter(|(k, _)| k != "kind" && Some(k.as_ref()) != def.recipient_arg.as_deref());
    for (k, v) in top {
        detail_parts(k, v, &mut parts);
    }
    match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `the {label} is {value}` for one argument, or one such part per field of a map.
fn detail_parts(name: &str, value: &Value, parts: &mut Vec<String>) {
    if let Value::Map(fields) = value {
        for (k, v) in fields {
            detail_parts(k, v, parts);
        }
        return;
    }
    let label = name.strip_suffix("_cents").unwrap_or(name).replace('_', " ");
    let verb = if matches!(value, Value::List(items) if items.len() > 1) { "are" } else { "is" };
    parts.push(format!("the {label} {verb} {}", shown(name, value)));
}

/// A value as a person writes it: cents as dollars, lists joined.
/// The answer of a message tool to a message said in words, as its documented
/// fields have it (`status: "sent"`, `message_id: "said"`), so that a planner
/// that checks the response against the schema takes it as sent.
fn sent_body(def: &ToolDef) -> Value {
    let mut body = Value::map([("status", Value::str("sent"))]);
    for field in &def.response {
        let value = match field.kind {
            ValueKind::Str => Value::str("said"),
            ValueKind::Int => Value::Int(0),
            ValueKind::Bool => Value::Bool(true),
            _ => continue,
        };
        if field.name != "status" {
            body.set(field.name.clone(), value);
        }
    }
    body
}

/// [`shown`] written into `out`: a template's money and names are written
/// where they stand, without a `String` of their own (a message is said on
/// every turn of every trajectory that talks).
fn shown_into(out: &mut String, name: &str, value: &Value) {
    use std::fmt::Write as _;
    match value {
        Value::Int(c) if name.ends_with("_cents") => {
            let sign = if *c < 0 { "-" } else { "" };
            let _ = write!(out, "{sign}${}.{:02}", c.unsigned_abs() / 100, c.unsigned_abs() % 100);
        }
        Value::Str(s) if s.contains('_') && !s.contains(|c: char| c.is_ascii_digit()) => {
            out.extend(s.chars().map(|c| if c == '_' { ' ' } else { c }));
        }
        Value::Str(s) => out.push_str(s),
        other => out.push_str(&shown(name, other)),
    }
}

fn shown(name: &str, value: &Value) -> String {
    match value {
        Value::Int(c) if name.ends_with("_cents") => {
            let sign = if *c < 0 { "-" } else { "" };
            format!("{sign}${}.{:02}", c.unsigned_abs() / 100, c.unsigned_abs() % 100)
        }
        // A name written as code (a tool's name) is said as words; an id with
        // digits is said as it is.
        Value::Str(s) if s.contains('_') && !s.contains(|c: char| c.is_ascii_digit()) => s.replace('_', " "),
        Value::Str(s) => s.clone(),
        Value::List(items) => {
            let shown: Vec<String> = items.iter().map(|v| shown(name, v)).collect();
            match shown.as_slice() {
                [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
                _ => shown.join(""),
            }
        }
        other => other.render(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_engine::{ToolKind, ValueKind};

    fn desk_message() -> ToolDef {
        ToolDef::new("send_message", ToolKind::Write, "")
            .recipient_arg("customer_id")
            .arg("kind", ValueKind::Str, true)
            .phrase("confirm", "Shall I refund the {item} from order {order_id}, {amount_cents}?")
            .phrase("info", "{details}")
    }

    #[test]
    fn templates_fill_arguments_and_money() {
        let args = Value::map([
            ("customer_id", Value::str("C001")),
            ("kind", Value::str("confirm")),
            ("order_id", Value::str("A1002")),
            ("item", Value::str("keyboard")),
            ("amount_cents", Value::Int(8_900)),
        ]);
        assert_eq!(
            words(&desk_message(), "confirm", &args).as_deref(),
            Some("Shall I refund the keyboard from order A1002, $89.00?")
        );
        assert_eq!(
            words(&desk_message(), "info", &args).as_deref(),
            Some("the order id is A1002, the item is keyboard and the amount is $89.00")
        );
        let nested = Value::map([
            ("kind", Value::str("confirm")),
            ("action", Value::str("return_delivered_order_items")),
            (
                "details",
                Value::map([
                    ("item_ids", Value::List(vec![Value::str("4602305039"), Value::str("9408160950")])),
                    ("payment_method_id", Value::str("credit_card_9513926")),
                ]),
            ),
        ]);
        assert_eq!(
            words(&desk_message(), "info", &nested).as_deref(),
            Some(
                "the action is return delivered order items, the item ids are 4602305039 and 9408160950 \
                 and the payment method id is credit_card_9513926"
            )
        );
        let plain = ToolDef::new("lookup", ToolKind::Read, "");
        assert_eq!(words(&plain, "", &args), None, "a tool without phrasing is no message");
    }
}
