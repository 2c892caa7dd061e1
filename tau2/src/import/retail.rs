//! tau2's retail domain: its database as pydantic dumps it (products, users,
//! orders), its 16 tools (`retail.rhai`), the read that verifies each write,
//! and the facts its users state (names, zip, email, order ids).

use serde::Deserialize;

use agentsim_engine::{Key, Value};

use super::scenario::{Arg, FaultProfile, ToolShape};
use super::tasks::{Action, Task};
use super::{DB, Domain, ImportError, Options, Ordered, Records, f, map, opt, parse, s, strings};

/// The port of tau2's retail tools, written beside the scenario: its head,
/// the Python helpers every domain shares, and the tools.
pub const RETAIL_SCRIPT: &str =
    concat!(include_str!("../retail_head.rhai"), include_str!("../python.rhai"), include_str!("../retail_tools.rhai"));

/// tau2's retail domain.
pub(crate) const RETAIL: Domain = Domain {
    name: "retail",
    class: "RetailTools",
    header: "// tau2-bench's retail domain, imported by `agentsim import-tau2`: the tables\n// are its database, retail.rhai its 16 tools, and each task one of its tasks\n// with its gold actions. `state_hash: Tau2` hashes the final database as\n// tau2 does (the `state_hash` column of trajectories.csv). The agent's\n// rules are in policy.md beside this file.\n",
    description: "tau2-bench retail: a customer asks to cancel, modify, exchange or return orders, or to change an address or payment method.",
    tables: &["products", "users", "orders"],
    tools: TOOLS,
    faults: FaultProfile {
        stale_read: "get_order_details",
        rate_limited: "get_product_details",
        drift: ("get_user_details", "payment_methods", "payment_options"),
    },
    limits: None,
    records,
    script: retail_script,
    verify,
    facts,
};

/// The line of `retail.rhai` that chooses tau2's reading of a multi-item
/// modification (its code's) or the corrected one.
const QUIRK_LINE: &str = "fn per_item_variants() { false }";

/// The port of the tools as `options` read them.
pub fn retail_script(options: Options) -> String {
    debug_assert_eq!(RETAIL_SCRIPT.matches(QUIRK_LINE).count(), 1);
    if options.corrected {
        RETAIL_SCRIPT.replace(QUIRK_LINE, "fn per_item_variants() { true }")
    } else {
        RETAIL_SCRIPT.to_string()
    }
}

/// The database's three tables as tau2's pydantic models dump them.
fn records(db_json: &str) -> Result<Vec<Records>, ImportError> {
    let db: Db = parse(db_json, DB)?;
    let mut products = Vec::with_capacity(db.products.0.len());
    for (k, p) in &db.products.0 {
        products.push((k.clone(), product(p)?));
    }
    let mut users = Vec::with_capacity(db.users.0.len());
    for (k, u) in &db.users.0 {
        users.push((k.clone(), user(u)?));
    }
    let mut orders = Vec::with_capacity(db.orders.0.len());
    for (k, o) in &db.orders.0 {
        orders.push((k.clone(), order(o)?));
    }
    Ok(vec![products, users, orders])
}

// ----- tau2's retail data model, as db.json holds it -----

#[derive(Deserialize)]
struct Db {
    products: Ordered<Product>,
    users: Ordered<User>,
    orders: Ordered<Order>,
}

#[derive(Deserialize)]
struct Variant {
    item_id: String,
    options: Ordered<String>,
    available: bool,
    price: f64,
}

#[derive(Deserialize)]
struct Product {
    name: String,
    product_id: String,
    variants: Ordered<Variant>,
}

#[derive(Deserialize)]
struct UserName {
    first_name: String,
    last_name: String,
}

#[derive(Deserialize)]
struct Address {
    address1: String,
    address2: String,
    city: String,
    country: String,
    state: String,
    zip: String,
}

#[derive(Deserialize)]
#[serde(tag = "source")]
enum PaymentMethod {
    #[serde(rename = "credit_card")]
    CreditCard { id: String, brand: String, last_four: String },
    #[serde(rename = "gift_card")]
    GiftCard { id: String, balance: f64 },
    #[serde(rename = "paypal")]
    Paypal { id: String },
}

#[derive(Deserialize)]
struct User {
    user_id: String,
    name: UserName,
    address: Address,
    email: String,
    payment_methods: Ordered<PaymentMethod>,
    orders: Vec<String>,
}

#[derive(Deserialize)]
struct Fulfillment {
    tracking_id: Vec<String>,
    item_ids: Vec<String>,
}

#[derive(Deserialize)]
struct OrderItem {
    name: String,
    product_id: String,
    item_id: String,
    price: f64,
    options: Ordered<String>,
}

#[derive(Deserialize)]
struct OrderPayment {
    transaction_type: PaymentType,
    amount: f64,
    payment_method_id: String,
}

#[derive(Deserialize)]
enum PaymentType {
    #[serde(rename = "payment")]
    Payment,
    #[serde(rename = "refund")]
    Refund,
}

#[derive(Deserialize)]
struct Order {
    order_id: String,
    user_id: String,
    address: Address,
    items: Vec<OrderItem>,
    status: OrderStatus,
    fulfillments: Vec<Fulfillment>,
    payment_history: Vec<OrderPayment>,
    #[serde(default)]
    cancel_reason: Option<CancelReason>,
    #[serde(default)]
    exchange_items: Option<Vec<String>>,
    #[serde(default)]
    exchange_new_items: Option<Vec<String>>,
    #[serde(default)]
    exchange_payment_method_id: Option<String>,
    #[serde(default)]
    exchange_price_difference: Option<f64>,
    #[serde(default)]
    return_items: Option<Vec<String>>,
    #[serde(default)]
    return_payment_method_id: Option<String>,
}

#[derive(Deserialize)]
enum OrderStatus {
    #[serde(rename = "processed")]
    Processed,
    #[serde(rename = "pending")]
    Pending,
    #[serde(rename = "pending (item modified)")]
    PendingItemModified,
    #[serde(rename = "delivered")]
    Delivered,
    #[serde(rename = "cancelled")]
    Cancelled,
    #[serde(rename = "exchange requested")]
    ExchangeRequested,
    #[serde(rename = "return requested")]
    ReturnRequested,
}

impl OrderStatus {
    fn name(&self) -> &'static str {
        match self {
            OrderStatus::Processed => "processed",
            OrderStatus::Pending => "pending",
            OrderStatus::PendingItemModified => "pending (item modified)",
            OrderStatus::Delivered => "delivered",
            OrderStatus::Cancelled => "cancelled",
            OrderStatus::ExchangeRequested => "exchange requested",
            OrderStatus::ReturnRequested => "return requested",
        }
    }
}

#[derive(Deserialize)]
enum CancelReason {
    #[serde(rename = "no longer needed")]
    NoLongerNeeded,
    #[serde(rename = "ordered by mistake")]
    OrderedByMistake,
}

// ----- conversion to values, as pydantic's model_dump writes them -----

fn options(o: &Ordered<String>) -> Value {
    Value::Map(o.0.iter().map(|(k, v)| (Key::Owned(k.clone()), s(v))).collect())
}

fn address(a: &Address) -> Value {
    map(vec![
        ("address1", s(&a.address1)),
        ("address2", s(&a.address2)),
        ("city", s(&a.city)),
        ("country", s(&a.country)),
        ("state", s(&a.state)),
        ("zip", s(&a.zip)),
    ])
}

fn product(p: &Product) -> Result<Value, ImportError> {
    let mut variants = Vec::with_capacity(p.variants.0.len());
    for (id, v) in &p.variants.0 {
        let price = f(v.price, DB, &format!("products.{}.variants.{id}.price", p.product_id))?;
        variants.push((
            Key::Owned(id.clone()),
            map(vec![
                ("item_id", s(&v.item_id)),
                ("options", options(&v.options)),
                ("available", Value::Bool(v.available)),
                ("price", price),
            ]),
        ));
    }
    Ok(map(vec![("name", s(&p.name)), ("product_id", s(&p.product_id)), ("variants", Value::Map(variants))]))
}

fn user(u: &User) -> Result<Value, ImportError> {
    let mut methods = Vec::with_capacity(u.payment_methods.0.len());
    for (id, m) in &u.payment_methods.0 {
        let value = match m {
            PaymentMethod::CreditCard { id, brand, last_four } => {
                map(vec![("source", s("credit_card")), ("id", s(id)), ("brand", s(brand)), ("last_four", s(last_four))])
            }
            PaymentMethod::GiftCard { id, balance } => map(vec![
                ("source", s("gift_card")),
                ("id", s(id)),
                ("balance", f(*balance, DB, &format!("users.{}.payment_methods.{id}.balance", u.user_id))?),
            ]),
            PaymentMethod::Paypal { id } => map(vec![("source", s("paypal")), ("id", s(id))]),
        };
        methods.push((Key::Owned(id.clone()), value));
    }
    Ok(map(vec![
        ("user_id", s(&u.user_id)),
        ("name", map(vec![("first_name", s(&u.name.first_name)), ("last_name", s(&u.name.last_name))])),
        ("address", address(&u.address)),
        ("email", s(&u.email)),
        ("payment_methods", Value::Map(methods)),
        ("orders", strings(&u.orders)),
    ]))
}

fn order(o: &Order) -> Result<Value, ImportError> {
    let at = |field: &str| format!("orders.{}.{field}", o.order_id);
    let items = o
        .items
        .iter()
        .map(|i| {
            Ok(map(vec![
                ("name", s(&i.name)),
                ("product_id", s(&i.product_id)),
                ("item_id", s(&i.item_id)),
                ("price", f(i.price, DB, &at("items.price"))?),
                ("options", options(&i.options)),
            ]))
        })
        .collect::<Result<Vec<_>, ImportError>>()?;
    let payments = o
        .payment_history
        .iter()
        .map(|p| {
            Ok(map(vec![
                (
                    "transaction_type",
                    s(match p.transaction_type {
                        PaymentType::Payment => "payment",
                        PaymentType::Refund => "refund",
                    }),
                ),
                ("amount", f(p.amount, DB, &at("payment_history.amount"))?),
                ("payment_method_id", s(&p.payment_method_id)),
            ]))
        })
        .collect::<Result<Vec<_>, ImportError>>()?;
    let fulfillments = o
        .fulfillments
        .iter()
        .map(|x| map(vec![("tracking_id", strings(&x.tracking_id)), ("item_ids", strings(&x.item_ids))]))
        .collect();
    Ok(map(vec![
        ("order_id", s(&o.order_id)),
        ("user_id", s(&o.user_id)),
        ("address", address(&o.address)),
        ("items", Value::List(items)),
        ("status", s(o.status.name())),
        ("fulfillments", Value::List(fulfillments)),
        ("payment_history", Value::List(payments)),
        (
            "cancel_reason",
            opt(&o.cancel_reason, |r| {
                Ok(s(match r {
                    CancelReason::NoLongerNeeded => "no longer needed",
                    CancelReason::OrderedByMistake => "ordered by mistake",
                }))
            })?,
        ),
        ("exchange_items", opt(&o.exchange_items, |l| Ok(strings(l)))?),
        ("exchange_new_items", opt(&o.exchange_new_items, |l| Ok(strings(l)))?),
        ("exchange_payment_method_id", opt(&o.exchange_payment_method_id, |x| Ok(s(x)))?),
        (
            "exchange_price_difference",
            opt(&o.exchange_price_difference, |x| f(*x, DB, &at("exchange_price_difference")))?,
        ),
        ("return_items", opt(&o.return_items, |l| Ok(strings(l)))?),
        ("return_payment_method_id", opt(&o.return_payment_method_id, |x| Ok(s(x)))?),
    ]))
}

const ADDRESS_ARGS: [(&str, Arg); 6] = [
    ("address1", Arg::Str),
    ("address2", Arg::Str),
    ("city", Arg::Str),
    ("state", Arg::Str),
    ("country", Arg::Str),
    ("zip", Arg::Str),
];

const ORDER_FIELDS: &[(&str, &str)] = &[
    ("order_id", "string"),
    ("user_id", "string"),
    ("address", "object"),
    ("items", "array"),
    ("status", "string"),
    ("fulfillments", "array"),
    ("payment_history", "array"),
];

const USER_FIELDS: &[(&str, &str)] = &[
    ("user_id", "string"),
    ("name", "object"),
    ("address", "object"),
    ("email", "string"),
    ("payment_methods", "object"),
    ("orders", "array"),
];

const RESULT: &[(&str, &str)] = &[("result", "string")];

macro_rules! with_address {
    ($first:expr) => {{
        const A: [(&str, Arg); 7] = [
            $first,
            ADDRESS_ARGS[0],
            ADDRESS_ARGS[1],
            ADDRESS_ARGS[2],
            ADDRESS_ARGS[3],
            ADDRESS_ARGS[4],
            ADDRESS_ARGS[5],
        ];
        &A
    }};
}

/// tau2's 16 retail tools, in its order.
const TOOLS: &[ToolShape] = &[
    ToolShape {
        name: "calculate",
        write: false,
        description: "Calculates a mathematical expression of numbers, + - * /, parentheses and spaces; the result is rounded to 2 decimals.",
        args: &[("expression", Arg::Str)],
        ids: &[],
        response: RESULT,
    },
    ToolShape {
        name: "cancel_pending_order",
        write: true,
        description: "Cancels a pending order (reason: 'no longer needed' or 'ordered by mistake'); a gift card is refunded at once, other methods in 5-7 business days. Needs the user's explicit confirmation first. Returns the order.",
        args: &[("order_id", Arg::Str), ("reason", Arg::Str)],
        ids: &["order_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "exchange_delivered_order_items",
        write: true,
        description: "Exchanges items of a delivered order for other variants of the same products; the price difference is paid with or refunded to the payment method. Once per delivered order; needs the user's explicit confirmation. Returns the order.",
        args: &[
            ("order_id", Arg::Str),
            ("item_ids", Arg::Strings),
            ("new_item_ids", Arg::Strings),
            ("payment_method_id", Arg::Str),
        ],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "find_user_id_by_name_zip",
        write: false,
        description: "Finds a user id by first name, last name and zip code (use it when the email is not known).",
        args: &[("first_name", Arg::Str), ("last_name", Arg::Str), ("zip", Arg::Str)],
        ids: &[],
        response: RESULT,
    },
    ToolShape {
        name: "find_user_id_by_email",
        write: false,
        description: "Finds a user id by email.",
        args: &[("email", Arg::Str)],
        ids: &[],
        response: RESULT,
    },
    ToolShape {
        name: "get_order_details",
        write: false,
        description: "The status and details of an order (an id such as '#W0000000').",
        args: &[("order_id", Arg::Str)],
        ids: &["order_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "get_product_details",
        write: false,
        description: "A product and its variants (items) with options, availability and price.",
        args: &[("product_id", Arg::Str)],
        ids: &["product_id"],
        response: &[("name", "string"), ("product_id", "string"), ("variants", "object")],
    },
    ToolShape {
        name: "get_item_details",
        write: false,
        description: "One item (a variant of a product): options, availability and price.",
        args: &[("item_id", Arg::Str)],
        ids: &["item_id"],
        response: &[("item_id", "string"), ("options", "object"), ("available", "boolean"), ("price", "number")],
    },
    ToolShape {
        name: "get_user_details",
        write: false,
        description: "A user's details: name, address, email, payment methods and order ids.",
        args: &[("user_id", Arg::Str)],
        ids: &["user_id"],
        response: USER_FIELDS,
    },
    ToolShape {
        name: "list_all_product_types",
        write: false,
        description: "The name and product id of every product type, as a JSON object sorted by name.",
        args: &[],
        ids: &[],
        response: RESULT,
    },
    ToolShape {
        name: "modify_pending_order_address",
        write: true,
        description: "Changes the shipping address of a pending order; needs the user's explicit confirmation. Returns the order.",
        args: with_address!(("order_id", Arg::Str)),
        ids: &["order_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "modify_pending_order_items",
        write: true,
        description: "Changes items of a pending order to other variants of the same products, paying or refunding the difference; once per order; needs the user's explicit confirmation. Returns the order.",
        args: &[
            ("order_id", Arg::Str),
            ("item_ids", Arg::Strings),
            ("new_item_ids", Arg::Strings),
            ("payment_method_id", Arg::Str),
        ],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "modify_pending_order_payment",
        write: true,
        description: "Changes the payment method of a pending order; needs the user's explicit confirmation. Returns the order.",
        args: &[("order_id", Arg::Str), ("payment_method_id", Arg::Str)],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "modify_user_address",
        write: true,
        description: "Changes a user's default address; needs the user's explicit confirmation. Returns the user.",
        args: with_address!(("user_id", Arg::Str)),
        ids: &["user_id"],
        response: USER_FIELDS,
    },
    ToolShape {
        name: "return_delivered_order_items",
        write: true,
        description: "Requests the return of items of a delivered order, refunded to the original payment method or a gift card; needs the user's explicit confirmation. Returns the order.",
        args: &[("order_id", Arg::Str), ("item_ids", Arg::Strings), ("payment_method_id", Arg::Str)],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "transfer_to_human_agents",
        write: false,
        description: "Transfers the user to a human agent with a summary of the issue: only when the user asks for one, or the policy and tools cannot solve the issue.",
        args: &[("summary", Arg::Str)],
        ids: &[],
        response: RESULT,
    },
];

/// The default fault profile of an imported world (`--fault-scale 0` injects
/// no fault, the rate limit included; the drift stays and changes no state).
/// the read and the predicate over its `result`.
fn verify(
    tool: &str,
    args: &serde_json::Map<String, serde_json::Value>,
    _before: &[Action],
) -> Option<(&'static str, String, String)> {
    let arg = |name: &str| args.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let quoted = |text: &str| serde_json::to_string(text).expect("a string serialises");
    let address_matches = || {
        ["address1", "address2", "city", "state", "country", "zip"]
            .iter()
            .map(|f| format!("result.address.{f} == {}", quoted(&arg(f))))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    let order = || format!("{{\"order_id\": {}}}", quoted(&arg("order_id")));
    Some(match tool {
        "cancel_pending_order" => ("get_order_details", order(), r#"result.status == "cancelled""#.into()),
        "exchange_delivered_order_items" => {
            ("get_order_details", order(), r#"result.status == "exchange requested""#.into())
        }
        "return_delivered_order_items" => {
            ("get_order_details", order(), r#"result.status == "return requested""#.into())
        }
        "modify_pending_order_items" => {
            ("get_order_details", order(), r#"result.status == "pending (item modified)""#.into())
        }
        "modify_pending_order_payment" => ("get_order_details", order(), "result.payment_history.len() > 1".into()),
        "modify_pending_order_address" => ("get_order_details", order(), address_matches()),
        "modify_user_address" => {
            ("get_user_details", format!("{{\"user_id\": {}}}", quoted(&arg("user_id"))), address_matches())
        }
        _ => return None,
    })
}

/// The facts a user states: from the lookup the gold actions make (name and
/// zip, or email) when the user scenario mentions them, and the order ids it
/// mentions.
fn facts(task: &Task, actions: &[Action]) -> Vec<(String, String)> {
    let i = &task.user_scenario.instructions;
    let text = format!("{} {}", i.known_info.as_deref().unwrap_or(""), i.reason_for_call);
    let lower = text.to_lowercase();
    let mut facts: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, value: &str| {
        if !value.is_empty() && !facts.iter().any(|(n, _)| n == name) && lower.contains(&value.to_lowercase()) {
            facts.push((name.to_string(), value.to_string()));
        }
    };
    for a in actions {
        if a.name == "find_user_id_by_name_zip" || a.name == "find_user_id_by_email" {
            for field in ["first_name", "last_name", "zip", "email"] {
                if let Some(v) = a.arguments.get(field).and_then(|v| v.as_str()) {
                    add(field, v);
                }
            }
        }
    }
    let mut orders = 0;
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(p) = text[at..].find("#W") {
        let start = at + p;
        let end = start + 2 + bytes[start + 2..].iter().take_while(|b| b.is_ascii_digit()).count();
        at = end.max(start + 2);
        if end == start + 2 {
            continue;
        }
        let id = &text[start..end];
        if facts.iter().any(|(_, v)| v == id) {
            continue;
        }
        orders += 1;
        let name = if orders == 1 { "order_id".to_string() } else { format!("order_id_{orders}") };
        facts.push((name, id.to_string()));
    }
    facts
}
