//! The support_desk section of a scenario: customers, orders, personas and tools.

use serde::{Deserialize, Serialize};

use agentsim_engine::{Latency, TimeMs};

use crate::kit::checks::{CENTS_MAX, ConfigError, ConfigErrorKind, not_empty, unique_ids, unique_ids_set};
use crate::kit::derived::Derived;
use crate::kit::persona::personas;
use crate::kit::tool_configs::tool_configs;

/// A customer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Customer {
    /// Customer id, like `"C001"`.
    pub id: String,
    /// Display name.
    pub name: String,
}

/// One line of an order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "ItemUnchecked")]
pub struct Item {
    /// Stock-keeping unit.
    pub sku: String,
    /// What the customer calls it.
    pub name: String,
    /// Price in cents, positive, at most [`CENTS_MAX`].
    pub price_cents: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemUnchecked {
    sku: String,
    name: String,
    price_cents: i64,
}

impl TryFrom<ItemUnchecked> for Item {
    type Error = ConfigError;
    fn try_from(i: ItemUnchecked) -> Result<Self, Self::Error> {
        if i.price_cents <= 0 || i.price_cents > CENTS_MAX {
            return Err(ConfigError::at_field(
                ConfigErrorKind::OutOfRange,
                "price_cents",
                format!("expected a positive price in cents up to {CENTS_MAX}, found {}", i.price_cents),
            ));
        }
        Ok(Item { sku: i.sku, name: i.name, price_cents: i.price_cents })
    }
}

/// An order's delivery status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum OrderStatus {
    /// Paid, not shipped.
    #[default]
    Processing,
    /// On its way.
    Shipped,
    /// Arrived.
    Delivered,
}

impl OrderStatus {
    /// The name tools report.
    pub fn name(self) -> &'static str {
        match self {
            OrderStatus::Processing => "processing",
            OrderStatus::Shipped => "shipped",
            OrderStatus::Delivered => "delivered",
        }
    }

    /// The next status, if any.
    pub fn next(self) -> Option<OrderStatus> {
        match self {
            OrderStatus::Processing => Some(OrderStatus::Shipped),
            OrderStatus::Shipped => Some(OrderStatus::Delivered),
            OrderStatus::Delivered => None,
        }
    }
}

/// An order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Order {
    /// Order id, like `"A1003"`.
    pub id: String,
    /// The customer's id.
    pub customer: String,
    /// Lines, at least one.
    pub items: Vec<Item>,
    /// Status at time 0.
    #[serde(default)]
    pub status: OrderStatus,
}

impl Order {
    /// Sum of the item prices (saturating: each is at most [`CENTS_MAX`], so only
    /// an order of billions of items could reach `i64::MAX`).
    pub fn total_cents(&self) -> i64 {
        self.items.iter().fold(0i64, |sum, i| sum.saturating_add(i.price_cents))
    }
}

personas! {
    /// How often each persona is drawn (relative weights, not all zero).
    pub struct Personas {
        #[doc = "States customer, order and item."]
        clear: Clear = 0.5,
        #[doc = "Names only the item; the agent must find the order."]
        vague: Vague = 0.3,
        #[doc = "States it clearly, then switches to another item when asked to confirm."]
        changes_mind: ChangesMind = 0.2,
        #[doc = "Clear, but leaves after `patience_ms` without a refund. Left out of the canonical form when 0 (the default), so older scenarios keep their keys."]
        #[serde(skip_serializing_if = "is_zero")]
        impatient: Impatient = 0.0,
    }
}

fn is_zero(w: &f64) -> bool {
    *w == 0.0
}

tool_configs! {
    /// The tools of support_desk and their behaviour.
    pub struct Tools {
        /// `lookup_order(order_id)`.
        lookup_order,
        /// `get_customer(customer_id)`.
        get_customer,
        /// `issue_refund(order_id, amount_cents)`.
        issue_refund,
        /// `send_message(customer_id, kind, ...)`.
        send_message,
        /// `escalate(customer_id, reason)`.
        escalate,
        /// `authenticate()`, the engine's session renewal.
        authenticate,
    }
}

/// The support_desk world's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SupportDeskConfig {
    /// Customers.
    pub customers: Vec<Customer>,
    /// Orders.
    pub orders: Vec<Order>,
    /// Persona weights.
    pub personas: Personas,
    /// How long the customer takes to answer.
    pub reply_ms: Latency,
    /// Time between an order's status changes.
    pub status_change_ms: Latency,
    /// How long an impatient customer waits for the refund before leaving (left out
    /// of the canonical form at its default, 180 s).
    #[serde(skip_serializing_if = "is_default_patience", deserialize_with = "agentsim_engine::time::bounded_ms")]
    pub patience_ms: TimeMs,
    /// Whether `send_message` delivers to any address, not only the desk's
    /// customers (as email does): a message to a stranger then goes out instead
    /// of failing with 404, and is `message_to_unnamed_recipient` (default false,
    /// left out of the canonical form).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub messages_to_anyone: bool,
    /// The tools.
    pub tools: Tools,
    /// Look-ups by id, made on first use (not part of the scenario).
    #[serde(skip)]
    pub(super) index: Derived,
}

/// The default patience of an impatient customer.
const PATIENCE_MS_DEFAULT: TimeMs = 180_000;

fn is_default_patience(ms: &TimeMs) -> bool {
    *ms == PATIENCE_MS_DEFAULT
}

impl Default for SupportDeskConfig {
    fn default() -> Self {
        let item = |sku: &str, name: &str, price_cents| Item { sku: sku.into(), name: name.into(), price_cents };
        let order = |id: &str, customer: &str, items| Order {
            id: id.into(),
            customer: customer.into(),
            items,
            status: OrderStatus::Processing,
        };
        Self {
            customers: vec![
                Customer { id: "C001".into(), name: "Ada".into() },
                Customer { id: "C002".into(), name: "Grace".into() },
                Customer { id: "C003".into(), name: "Linus".into() },
            ],
            orders: vec![
                order("A1001", "C001", vec![item("HP-200", "headphones", 4_250), item("CB-010", "usb cable", 1_299)]),
                order("A1002", "C001", vec![item("KB-550", "keyboard", 8_900)]),
                order("A1003", "C002", vec![item("BL-900", "blender", 12_999), item("MG-002", "mug set", 2_450)]),
                order("A1004", "C003", vec![item("LM-300", "desk lamp", 3_575), item("BK-777", "notebook", 899)]),
                order("A1005", "C003", vec![item("CH-120", "office chair", 24_900)]),
            ],
            personas: Personas::default(),
            reply_ms: Latency::Uniform { min_ms: 4_000, max_ms: 30_000 },
            status_change_ms: Latency::Uniform { min_ms: 60_000, max_ms: 600_000 },
            patience_ms: PATIENCE_MS_DEFAULT,
            messages_to_anyone: false,
            tools: Tools::default(),
            index: Derived::default(),
        }
    }
}

impl SupportDeskConfig {
    /// Cross-checks that serde cannot express: unique ids, known customers, orders
    /// with items, usable persona weights. Returns the first problem.
    pub fn check(&self) -> Result<(), ConfigError> {
        let customers = unique_ids_set(self.customers.iter().map(|c| c.id.as_str()), "customers", "customer")?;
        unique_ids(self.orders.iter().map(|o| o.id.as_str()), "orders", "order")?;
        for (i, o) in self.orders.iter().enumerate() {
            if !customers.contains(o.customer.as_str()) {
                return Err(ConfigError::new(
                    ConfigErrorKind::UnknownReference,
                    format!("orders[{i}].customer"),
                    &o.customer,
                    format!("unknown customer `{}` (not in `customers`)", o.customer),
                ));
            }
            if o.items.is_empty() {
                let message = "an order needs at least one item";
                return Err(ConfigError::new(ConfigErrorKind::Empty, format!("orders[{i}].items"), &o.id, message));
            }
        }
        not_empty(self.orders.is_empty(), "orders", "order")?;
        self.personas.check()
    }
}
