//! The support_desk tools as a service documents them.

use agentsim_engine::{Constraint, ToolDef, ToolKind, ToolSpec, ValueKind};

use super::config::Tools;
use crate::kit::catalog::{escalate_def, specs_by_name};
use crate::kit::tool_ids::tool_ids;

/// The kinds of message `send_message` sends.
pub const MESSAGE_KINDS: &[&str] = &["ask", "confirm", "done", "info"];

tool_ids! {
    /// Tool ids of support_desk in a catalog.
    pub struct Ids { lookup_order, get_customer, issue_refund, send_message, escalate }
}

/// The tools with their documentation and the scenario's configuration.
pub fn specs(tools: &Tools) -> Vec<ToolSpec> {
    specs_by_name(
        vec![
            lookup_order(),
            get_customer(),
            issue_refund(),
            send_message(),
            escalate_def("customer_id", "Hands the conversation to a human agent."),
        ],
        &tools.configs(),
    )
}

/// `lookup_order`, as the service documents it.
fn lookup_order() -> ToolDef {
    use ValueKind::{Int, List, Str};
    ToolDef::new("lookup_order", ToolKind::Read, "Looks up an order: status, items, total and refunds so far.")
        .id_arg("order_id")
        .field("order_id", Str)
        .field("customer_id", Str)
        .field("status", Str)
        .field("total_cents", Int)
        .field("items", List)
        .field("refunded_cents", Int)
        .field("refunds", List)
}

/// `get_customer`, as the service documents it.
fn get_customer() -> ToolDef {
    use ValueKind::{List, Str};
    ToolDef::new("get_customer", ToolKind::Read, "Looks up a customer and the ids of their orders.")
        .id_arg("customer_id")
        .field("customer_id", Str)
        .field("name", Str)
        .field("order_ids", List)
}

/// `issue_refund`, as the service documents it.
fn issue_refund() -> ToolDef {
    use ValueKind::{Int, Str};
    ToolDef::new(
        "issue_refund",
        ToolKind::Write,
        "Refunds an amount on an order. Not idempotent unless an idempotency key is sent. \
         The amount must be positive and at most the order total (not enforced by the service).",
    )
    .id_arg("order_id")
    .arg("amount_cents", Int, true)
    .arg("reason", Str, false)
    .field("refund_id", Str)
    .field("order_id", Str)
    .field("amount_cents", Int)
    .field("status", Str)
    .constraint(Constraint::Positive { arg: "amount_cents".into() })
    .constraint(Constraint::AtMostSeen {
        arg: "amount_cents".into(),
        key_arg: "order_id".into(),
        source_tool: "lookup_order".into(),
        source_key: "order_id".into(),
        field: "total_cents".into(),
    })
}

/// `send_message`, as the service documents it.
fn send_message() -> ToolDef {
    use ValueKind::{Int, Str};
    ToolDef::new(
        "send_message",
        ToolKind::Write,
        "Sends the customer a message: kind `confirm` (asks to confirm order, item and amount), \
         `done` (tells the refunded amount), `ask` (asks which order) or `info`.",
    )
    .id_arg("customer_id")
    .recipient_arg("customer_id")
    .arg_one_of("kind", MESSAGE_KINDS)
    .arg("order_id", Str, false)
    .arg("item", Str, false)
    .arg("amount_cents", Int, false)
    .field("message_id", Str)
    .field("status", Str)
    .phrase("ask", "Could you tell me your order number for the {item}?")
    .phrase("confirm", "Shall I refund the {item} from order {order_id}, {amount_cents}?")
    .phrase("done", "I've refunded {amount_cents} on order {order_id}.")
    .phrase("info", "{details}")
}
