//! The support desk's configuration indexed for look-ups: an order or a
//! customer by id, a customer's orders, the item names its customers know.
//! Built once per process (see `kit::derived`), so a call's cost does not grow
//! with the number of customers and orders, and a session's arrival costs the
//! orders of its customer rather than a pass over the whole desk.

use std::collections::HashMap;

use super::config::SupportDeskConfig;
use super::world::WHOLE_ORDER;
use crate::kit::by_id::{self, ById};
use crate::talk::Lexicon;

/// How people write `whole order` (docs/conversation.md).
const WHOLE_ORDER_SPELLINGS: &[&str] = &[
    "entire order",
    "full order",
    "complete order",
    "whole of order",
    "all of order",
    "all of your order",
    "all items in order",
    "all items from order",
    "all items on order",
    "all the items in order",
    "all the items on order",
    "all the items from order",
    "everything in order",
    "everything on order",
    "everything from order",
    "in full",
    "full refund of order",
    "full refund for order",
    "full refund on order",
    "full amount of order",
    "whole thing",
    "entirely",
    "in its entirety",
    "every item",
    "all items",
    "all the items",
    "entire purchase",
    "full charge",
    // `100% refund`: the scanner drops the `%`.
    "100 refund",
    "complete refund",
    "the order total",
    // `full refund, order A1003`: the scanner drops the comma.
    "full refund order",
    "full refund for",
    "refund all of",
    "everything on it",
    "everything in it",
    "as a whole",
    // `Items: all`: the scanner drops the colon.
    "items all",
];

/// Look-ups over one [`SupportDeskConfig`]. Only looked up, never iterated:
/// nothing in the output depends on the maps' order.
pub struct DeskIndex {
    /// The sizes it was built for (checked on every use).
    sizes: (usize, usize),
    order_by_id: ById<String, usize>,
    customer_by_id: ById<String, usize>,
    /// Per customer, its orders in the configuration's order.
    orders_of: Vec<Vec<usize>>,
    /// The customers with at least one order, in the configuration's order.
    with_orders: Vec<usize>,
    /// Every item of the desk, and `whole order`: the names a customer knows.
    lexicon: Lexicon,
}

impl DeskIndex {
    /// The index of `config`; a repeated id maps to its first place, as a
    /// scan from the front finds it (`check` refuses repeated ids anyway).
    pub fn new(config: &SupportDeskConfig) -> Self {
        let mut customer_by_id = by_id::with_capacity(config.customers.len());
        // Every place of each id (one in a checked configuration).
        let mut places: HashMap<&str, Vec<usize>> = HashMap::with_capacity(config.customers.len());
        for (i, c) in config.customers.iter().enumerate() {
            customer_by_id.entry(c.id.clone()).or_insert(i);
            places.entry(c.id.as_str()).or_default().push(i);
        }
        let mut order_by_id = by_id::with_capacity(config.orders.len());
        let mut orders_of = vec![Vec::new(); config.customers.len()];
        for (o, order) in config.orders.iter().enumerate() {
            order_by_id.entry(order.id.clone()).or_insert(o);
            for &c in places.get(order.customer.as_str()).map_or(&[][..], Vec::as_slice) {
                orders_of[c].push(o);
            }
        }
        let with_orders = (0..config.customers.len()).filter(|&c| !orders_of[c].is_empty()).collect();
        let mut lexicon = Lexicon::new();
        for order in &config.orders {
            for item in &order.items {
                lexicon.add("item", &item.name);
            }
        }
        lexicon.add("item", WHOLE_ORDER);
        for spelling in WHOLE_ORDER_SPELLINGS {
            lexicon.spelling(WHOLE_ORDER, spelling);
        }
        DeskIndex {
            sizes: (config.customers.len(), config.orders.len()),
            order_by_id,
            customer_by_id,
            orders_of,
            with_orders,
            lexicon,
        }
    }

    /// Asserts the index is `config`'s (its lists were not changed since).
    pub fn check(&self, config: &SupportDeskConfig) {
        assert_eq!(self.sizes, (config.customers.len(), config.orders.len()), "the desk's index is stale");
    }

    /// The place of order `id`.
    pub fn order(&self, id: &str) -> Option<usize> {
        self.order_by_id.get(id).copied()
    }

    /// The place of customer `id`.
    pub fn customer(&self, id: &str) -> Option<usize> {
        self.customer_by_id.get(id).copied()
    }

    /// Customer `customer`'s orders, in the configuration's order.
    pub fn orders_of(&self, customer: usize) -> &[usize] {
        &self.orders_of[customer]
    }

    /// The customers with at least one order.
    pub fn with_orders(&self) -> &[usize] {
        &self.with_orders
    }

    /// The names the desk's customers know.
    pub fn lexicon(&self) -> &Lexicon {
        &self.lexicon
    }
}

impl SupportDeskConfig {
    /// The desk indexed by id (made once, on first use).
    pub(super) fn index(&self) -> &DeskIndex {
        let index = self.index.get_or_init(|| DeskIndex::new(self));
        index.check(self);
        index
    }
}
