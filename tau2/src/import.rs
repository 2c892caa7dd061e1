//! `agentsim import-tau2`: a tau2-bench domain folder (`db.json`, `tasks.json`,
//! `policy.md`) as a scripted agentsim world. The retail domain is the one
//! ported: its 16 tools are `retail.rhai` (tau2's semantics and error texts),
//! its database becomes three tables normalised as tau2's pydantic models dump
//! them (every optional field present, floats as floats, unknown fields
//! dropped), so the world's declared `state_hash: Tau2(...)` is the hash tau2
//! computes; each task becomes a task with its gold actions and a user built
//! from its user scenario.
//!
//! This is library code over texts: the CLI reads the files and writes the
//! folder ([`ImportedWorld::files`]) atomically.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};

use agentsim_engine::{Float, Key, Value};

/// The port of tau2's retail tools, written beside the scenario.
pub const RETAIL_SCRIPT: &str = include_str!("retail.rhai");

/// The scenario file's name in the folder written.
pub const SCENARIO_FILE: &str = "retail.ron";

/// Why a domain folder could not be imported: the file, a 1-based position
/// (1:1 when the problem is not at one place) and what is wrong, naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// `db.json`, `tasks.json` or `policy.md`.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)
    }
}

impl std::error::Error for ImportError {}

/// What an import produces: the files of the world's folder, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedWorld {
    /// (file name, contents), the scenario first.
    pub files: Vec<(String, String)>,
    /// Tasks imported.
    pub tasks: usize,
}

// ----- tau2's retail data model, as db.json holds it -----

/// A JSON object read in its written order (tau2's dicts keep insertion
/// order, and lookups such as `find_user_id_by_email` return the first match).
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered<T>, A::Error> {
                let mut out: Vec<(String, T)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value()?;
                    // Python keeps the last value of a repeated key, in the
                    // first one's place.
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = value,
                        None => out.push((key, value)),
                    }
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

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

fn s(text: &str) -> Value {
    Value::Str(text.to_string())
}

fn f(x: f64, file: &str, what: &str) -> Result<Value, ImportError> {
    Float::new(x).map(Value::Float).ok_or_else(|| ImportError {
        file: file.into(),
        line: 1,
        column: 1,
        message: format!("field `{what}`: {x} is not a finite number"),
    })
}

fn map(pairs: Vec<(&'static str, Value)>) -> Value {
    Value::Map(pairs.into_iter().map(|(k, v)| (Key::Borrowed(k), v)).collect())
}

fn strings(list: &[String]) -> Value {
    Value::List(list.iter().map(|x| s(x)).collect())
}

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

fn opt<T>(v: &Option<T>, g: impl FnOnce(&T) -> Result<Value, ImportError>) -> Result<Value, ImportError> {
    v.as_ref().map_or(Ok(Value::Null), g)
}

const DB: &str = "db.json";

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

/// A table as a JSON object of records by key, in the database's order.
fn table_json(records: Vec<(String, Value)>) -> String {
    let mut out = String::from("{\n");
    for (i, (key, record)) in records.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&serde_json::to_string(key).expect("a string serialises"));
        out.push_str(": ");
        record.render_into(&mut out);
    }
    out.push_str("\n}\n");
    out
}

fn parse<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, ImportError> {
    serde_json::from_str(text).map_err(|e| ImportError {
        file: file.into(),
        line: e.line().max(1),
        column: e.column().max(1),
        message: e.to_string().split(" at line ").next().unwrap_or_default().to_string(),
    })
}

// ----- tasks -----

#[derive(Deserialize)]
struct Task {
    id: String,
    user_scenario: UserScenario,
    evaluation_criteria: Criteria,
}

#[derive(Deserialize)]
struct UserScenario {
    instructions: Instructions,
}

#[derive(Deserialize)]
struct Instructions {
    #[serde(default)]
    reason_for_call: String,
    #[serde(default)]
    known_info: Option<String>,
    #[serde(default)]
    unknown_info: Option<String>,
    #[serde(default)]
    task_instructions: String,
}

#[derive(Deserialize)]
struct Criteria {
    #[serde(default)]
    actions: Option<Vec<Action>>,
    #[serde(default)]
    communicate_info: Option<Vec<String>>,
    #[serde(default)]
    nl_assertions: Option<Vec<String>>,
    #[serde(default)]
    reward_basis: Option<Vec<String>>,
}

/// tau2's reward basis names and the scripted world's.
const BASES: [(&str, &str); 3] = [("DB", "Db"), ("COMMUNICATE", "Communicate"), ("NL_ASSERTION", "NlAssertion")];

/// A task's `success`: tau2's strings to communicate, its natural-language
/// assertions (reported, never judged) and its reward basis.
fn success_ron(task: &Task, n: usize, tasks_json: &str) -> Result<String, ImportError> {
    let criteria = &task.evaluation_criteria;
    let mut basis = Vec::new();
    for name in criteria.reward_basis.as_deref().unwrap_or(&["DB".to_string()]) {
        let Some((_, ours)) = BASES.iter().find(|(theirs, _)| theirs == name) else {
            return Err(located(
                tasks_json,
                &format!("\"{name}\""),
                "tasks.json",
                format!(
                    "field `[{n}].evaluation_criteria.reward_basis`: `{name}` is not supported (DB, COMMUNICATE, NL_ASSERTION)"
                ),
            ));
        };
        if !basis.contains(ours) {
            basis.push(*ours);
        }
    }
    let strings = |list: &Option<Vec<String>>| -> String {
        list.iter().flatten().map(|s| ron_string(s)).collect::<Vec<_>>().join(", ")
    };
    Ok(format!(
        "(communicate: [{}], nl_assertions: [{}], reward_basis: [{}])",
        strings(&criteria.communicate_info),
        strings(&criteria.nl_assertions),
        basis.join(", ")
    ))
}

#[derive(Deserialize)]
struct Action {
    name: String,
    #[serde(default)]
    arguments: serde_json::Map<String, serde_json::Value>,
    #[serde(default = "assistant")]
    requestor: String,
}

fn assistant() -> String {
    "assistant".into()
}

/// One retail tool as the world declares it.
struct ToolShape {
    name: &'static str,
    write: bool,
    description: &'static str,
    /// (argument, JSON type) in tau2's order; all are required.
    args: &'static [(&'static str, &'static str)],
    /// Arguments that are identifiers.
    ids: &'static [&'static str],
    /// Top-level response fields and types.
    response: &'static [(&'static str, &'static str)],
}

const ADDRESS_ARGS: [(&str, &str); 6] = [
    ("address1", "string"),
    ("address2", "string"),
    ("city", "string"),
    ("state", "string"),
    ("country", "string"),
    ("zip", "string"),
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
        const A: [(&str, &str); 7] = [
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
        args: &[("expression", "string")],
        ids: &[],
        response: RESULT,
    },
    ToolShape {
        name: "cancel_pending_order",
        write: true,
        description: "Cancels a pending order (reason: 'no longer needed' or 'ordered by mistake'); a gift card is refunded at once, other methods in 5-7 business days. Needs the user's explicit confirmation first. Returns the order.",
        args: &[("order_id", "string"), ("reason", "string")],
        ids: &["order_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "exchange_delivered_order_items",
        write: true,
        description: "Exchanges items of a delivered order for other variants of the same products; the price difference is paid with or refunded to the payment method. Once per delivered order; needs the user's explicit confirmation. Returns the order.",
        args: &[
            ("order_id", "string"),
            ("item_ids", "array"),
            ("new_item_ids", "array"),
            ("payment_method_id", "string"),
        ],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "find_user_id_by_name_zip",
        write: false,
        description: "Finds a user id by first name, last name and zip code (use it when the email is not known).",
        args: &[("first_name", "string"), ("last_name", "string"), ("zip", "string")],
        ids: &[],
        response: RESULT,
    },
    ToolShape {
        name: "find_user_id_by_email",
        write: false,
        description: "Finds a user id by email.",
        args: &[("email", "string")],
        ids: &[],
        response: RESULT,
    },
    ToolShape {
        name: "get_order_details",
        write: false,
        description: "The status and details of an order (an id such as '#W0000000').",
        args: &[("order_id", "string")],
        ids: &["order_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "get_product_details",
        write: false,
        description: "A product and its variants (items) with options, availability and price.",
        args: &[("product_id", "string")],
        ids: &["product_id"],
        response: &[("name", "string"), ("product_id", "string"), ("variants", "object")],
    },
    ToolShape {
        name: "get_item_details",
        write: false,
        description: "One item (a variant of a product): options, availability and price.",
        args: &[("item_id", "string")],
        ids: &["item_id"],
        response: &[("item_id", "string"), ("options", "object"), ("available", "boolean"), ("price", "number")],
    },
    ToolShape {
        name: "get_user_details",
        write: false,
        description: "A user's details: name, address, email, payment methods and order ids.",
        args: &[("user_id", "string")],
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
        args: with_address!(("order_id", "string")),
        ids: &["order_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "modify_pending_order_items",
        write: true,
        description: "Changes items of a pending order to other variants of the same products, paying or refunding the difference; once per order; needs the user's explicit confirmation. Returns the order.",
        args: &[
            ("order_id", "string"),
            ("item_ids", "array"),
            ("new_item_ids", "array"),
            ("payment_method_id", "string"),
        ],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "modify_pending_order_payment",
        write: true,
        description: "Changes the payment method of a pending order; needs the user's explicit confirmation. Returns the order.",
        args: &[("order_id", "string"), ("payment_method_id", "string")],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "modify_user_address",
        write: true,
        description: "Changes a user's default address; needs the user's explicit confirmation. Returns the user.",
        args: with_address!(("user_id", "string")),
        ids: &["user_id"],
        response: USER_FIELDS,
    },
    ToolShape {
        name: "return_delivered_order_items",
        write: true,
        description: "Requests the return of items of a delivered order, refunded to the original payment method or a gift card; needs the user's explicit confirmation. Returns the order.",
        args: &[("order_id", "string"), ("item_ids", "array"), ("payment_method_id", "string")],
        ids: &["order_id", "payment_method_id"],
        response: ORDER_FIELDS,
    },
    ToolShape {
        name: "transfer_to_human_agents",
        write: false,
        description: "Transfers the user to a human agent with a summary of the issue: only when the user asks for one, or the policy and tools cannot solve the issue.",
        args: &[("summary", "string")],
        ids: &[],
        response: RESULT,
    },
];

/// The default fault profile of an imported world (`--fault-scale 0` injects
/// no fault, the rate limit included; the drift stays and changes no state).
fn tool_config(t: &ToolShape) -> &'static str {
    match (t.write, t.name) {
        (true, _) => {
            "(latency: LogNormal(median_ms: 250, p99_ms: 2_000), timeout_ms: 10_000, faults: [(fault: CommitThenTimeout, probability: 0.1), (fault: Error(status: 503), probability: 0.05)])"
        }
        (false, "get_order_details") => {
            "(latency: LogNormal(median_ms: 120, p99_ms: 900), timeout_ms: 10_000, faults: [(fault: Error(status: 503), probability: 0.1), (fault: Timeout, probability: 0.03), (fault: Stale(lag_ms: 120_000), probability: 0.1)])"
        }
        (false, "get_product_details") => {
            "(latency: LogNormal(median_ms: 120, p99_ms: 900), timeout_ms: 10_000, faults: [(fault: RateLimit(capacity: 3, refill_ms: 20_000)), (fault: Error(status: 503), probability: 0.1), (fault: Timeout, probability: 0.03)])"
        }
        (false, "get_user_details") => {
            "(latency: LogNormal(median_ms: 120, p99_ms: 900), timeout_ms: 10_000, faults: [(fault: Error(status: 503), probability: 0.1), (fault: Timeout, probability: 0.03)], drift: [(at_ms: 600_000, change: RenameField(from: \"payment_methods\", to: \"payment_options\"))])"
        }
        _ => {
            "(latency: LogNormal(median_ms: 120, p99_ms: 900), timeout_ms: 10_000, faults: [(fault: Error(status: 503), probability: 0.1), (fault: Timeout, probability: 0.03)])"
        }
    }
}

/// How the expert checks, after a write timed out, whether it was applied:
/// the read and the predicate over its `result`.
fn verify(tool: &str, args: &serde_json::Map<String, serde_json::Value>) -> Option<(&'static str, String, String)> {
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

/// A string arg equal to a fact's value becomes the fact's template.
fn templated(value: &serde_json::Value, facts: &[(String, String)]) -> serde_json::Value {
    match value {
        serde_json::Value::String(text) => match facts.iter().find(|(_, v)| v == text) {
            Some((name, _)) => serde_json::Value::String(format!("{{{name}}}")),
            None => value.clone(),
        },
        other => other.clone(),
    }
}

fn ron_string(text: &str) -> String {
    // JSON string syntax is RON string syntax for these texts (RON reads the
    // same escapes), and a JSON string never holds a raw line break.
    serde_json::to_string(text).expect("a string serialises")
}

/// Data (JSON) written as a RON value: JSON maps, lists, strings, numbers and
/// booleans are RON's data syntax; null is `()`.
fn ron_data(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "()".into(),
        serde_json::Value::Array(items) => format!("[{}]", items.iter().map(ron_data).collect::<Vec<_>>().join(", ")),
        serde_json::Value::Object(pairs) => format!(
            "{{{}}}",
            pairs.iter().map(|(k, v)| format!("{}: {}", ron_string(k), ron_data(v))).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn located(text: &str, needle: &str, file: &str, message: String) -> ImportError {
    located_nth(text, needle, 0, file, message)
}

/// [`located`] at the `nth` (0-based) occurrence of `needle`.
fn located_nth(text: &str, needle: &str, nth: usize, file: &str, message: String) -> ImportError {
    let (line, column) = match text.match_indices(needle).nth(nth).map(|(at, _)| at) {
        Some(at) => {
            let before = &text[..at];
            (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
        }
        None => (1, 1),
    };
    ImportError { file: file.into(), line, column, message }
}

/// Refuses a task id that an earlier task has: the scenario's loader refuses a
/// task declared twice, so the world would be written and then never load.
fn check_unique_ids(tasks: &[Task], tasks_json: &str) -> Result<(), ImportError> {
    let mut seen: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (n, task) in tasks.iter().enumerate() {
        if let Some(&first) = seen.get(task.id.as_str()) {
            let before = tasks[..n].iter().filter(|t| t.id == task.id).count();
            return Err(located_nth(
                tasks_json,
                &format!("\"id\": {}", ron_string(&task.id)),
                before,
                "tasks.json",
                format!("field `[{n}].id`: task `{}` is declared twice (first as task [{first}])", task.id),
            ));
        }
        seen.insert(&task.id, n);
    }
    Ok(())
}

/// How the import reads tau2 where its code and its intent part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `modify_pending_order_items` gives each modified item its own new
    /// variant's price and options (`import-tau2 --corrected`). By default
    /// the import does what tau2's code does, and tau2's evaluator computes
    /// its gold databases with: every item modified in one call gets the
    /// price and options of the call's last new variant.
    pub corrected: bool,
}

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

/// Imports a tau2-bench retail domain from the texts of its files, as tau2's
/// code behaves (its quirks included).
pub fn import(db_json: &str, tasks_json: &str, policy_md: &str) -> Result<ImportedWorld, ImportError> {
    import_with(db_json, tasks_json, policy_md, Options::default())
}

/// [`import`] with the readings `options` chooses.
pub fn import_with(
    db_json: &str,
    tasks_json: &str,
    policy_md: &str,
    options: Options,
) -> Result<ImportedWorld, ImportError> {
    let db: Db = parse(db_json, DB)?;
    let tasks: Vec<Task> = parse(tasks_json, "tasks.json")?;
    if tasks.is_empty() {
        return Err(ImportError { file: "tasks.json".into(), line: 1, column: 1, message: "no tasks".into() });
    }
    check_unique_ids(&tasks, tasks_json)?;
    let (products, users, orders) = records(&db)?;
    let mut ron = scenario_head();
    ron.push_str("        tasks: [\n");
    for (n, task) in tasks.iter().enumerate() {
        let actions = assistant_actions(task, n, tasks_json)?;
        push_task(&mut ron, task, n, &actions, tasks_json)?;
    }
    ron.push_str("        ],\n    ),\n)\n");
    let files = vec![
        (SCENARIO_FILE.to_string(), ron),
        ("retail.rhai".to_string(), retail_script(options)),
        ("products.json".to_string(), table_json(products)),
        ("users.json".to_string(), table_json(users)),
        ("orders.json".to_string(), table_json(orders)),
        ("policy.md".to_string(), policy_md.to_string()),
    ];
    Ok(ImportedWorld { files, tasks: tasks.len() })
}

/// Records of one table, by key.
type Records = Vec<(String, Value)>;

/// The database's three tables as tau2's pydantic models dump them.
fn records(db: &Db) -> Result<(Records, Records, Records), ImportError> {
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

    Ok((products, users, orders))
}

/// The scenario up to its tasks: the world's tables, script, settings, tools,
/// persona and latencies.
fn scenario_head() -> String {
    let mut ron = String::new();
    ron.push_str("// tau2-bench's retail domain, imported by `agentsim import-tau2`: the tables\n");
    ron.push_str("// are its database, retail.rhai its 16 tools, and each task one of its tasks\n");
    ron.push_str("// with its gold actions. `state_hash: Tau2` hashes the final database as\n");
    ron.push_str("// tau2 does (the `state_hash` column of trajectories.csv). The agent's\n");
    ron.push_str("// rules are in policy.md beside this file.\n");
    ron.push_str("Scenario(\n    name: \"tau2-retail\",\n");
    ron.push_str("    description: \"tau2-bench retail: a customer asks to cancel, modify, exchange or return orders, or to change an address or payment method.\",\n");
    ron.push_str("    horizon_ms: 3_600_000,\n");
    ron.push_str("    budgets: (turns_max: 120, tool_calls_max: 100, tokens_max: 2_000_000, events_max: 4_000),\n");
    ron.push_str("    world: Scripted(\n        tables: [\n");
    ron.push_str("            (name: \"products\", file: \"products.json\"),\n");
    ron.push_str("            (name: \"users\", file: \"users.json\"),\n");
    ron.push_str("            (name: \"orders\", file: \"orders.json\"),\n        ],\n");
    ron.push_str("        script: File(\"retail.rhai\"),\n");
    ron.push_str("        state_hash: Tau2(tables: [\"products\", \"users\", \"orders\"]),\n");
    ron.push_str("        gold_may_fail: true,\n");
    // tau2 answers a call whose arguments do not bind, or of a tool it does
    // not have, with Python's error text, and passes values of any type on.
    ron.push_str("        argument_errors: Python(class: \"RetailTools\"),\n");
    ron.push_str("        tools: [\n");
    for t in TOOLS {
        let properties: Vec<String> = t
            .args
            .iter()
            .map(|(name, ty)| {
                if *ty == "array" {
                    format!("\"{name}\": {{\"type\": \"array\", \"items\": {{\"type\": \"string\"}}}}")
                } else {
                    format!("\"{name}\": {{\"type\": \"{ty}\"}}")
                }
            })
            .collect();
        let required: Vec<String> = t.args.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        let ids: Vec<String> = t.ids.iter().map(|n| format!("\"{n}\"")).collect();
        let response: Vec<String> = t.response.iter().map(|(n, ty)| format!("\"{n}\": \"{ty}\"")).collect();
        ron.push_str(&format!(
            "            (\n                name: \"{}\",\n                description: {},\n                kind: {},\n                args: {{\"type\": \"object\", \"properties\": {{{}}}, \"required\": [{}]}},\n                ids: [{}],\n                response: {{{}}},\n                config: {},\n            ),\n",
            t.name,
            ron_string(t.description),
            if t.write { "Write" } else { "Read" },
            properties.join(", "),
            required.join(", "),
            ids.join(", "),
            response.join(", "),
            tool_config(t),
        ));
    }
    ron.push_str("        ],\n");
    ron.push_str("        personas: [(name: \"clear\", weight: 1.0)],\n");
    ron.push_str("        reply_ms: Uniform(min_ms: 4_000, max_ms: 30_000),\n");
    ron.push_str("        send_message: (latency: Uniform(min_ms: 50, max_ms: 200)),\n");
    ron
}

/// Task `n`'s actions the assistant takes, each checked against the tool it
/// names (a tool of the port, its arguments of the types the tool takes).
fn assistant_actions<'t>(task: &'t Task, n: usize, tasks_json: &str) -> Result<Vec<&'t Action>, ImportError> {
    let field = |f: &str| format!("field `[{n}].{f}`");
    let actions: Vec<&Action> = task
        .evaluation_criteria
        .actions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|a| a.requestor == "assistant")
        .collect();
    for (a, action) in actions.iter().enumerate() {
        let Some(shape) = TOOLS.iter().find(|t| t.name == action.name) else {
            return Err(located(
                tasks_json,
                &format!("\"name\": {}", ron_string(&action.name)),
                "tasks.json",
                format!(
                    "{}: unknown tool `{}` (the retail tools: {})",
                    field(&format!("evaluation_criteria.actions[{a}].name")),
                    action.name,
                    TOOLS.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        for (arg, ty) in shape.args {
            let ok = match action.arguments.get(*arg) {
                Some(serde_json::Value::String(_)) => *ty == "string",
                Some(serde_json::Value::Array(items)) => *ty == "array" && items.iter().all(|i| i.is_string()),
                _ => false,
            };
            if !ok {
                return Err(located(
                    tasks_json,
                    &format!("\"action_id\": \"{}_{a}\"", task.id),
                    "tasks.json",
                    format!(
                        "{}: tool `{}` takes `{arg}` as a {}",
                        field(&format!("evaluation_criteria.actions[{a}].arguments.{arg}")),
                        action.name,
                        if *ty == "array" { "list of strings" } else { "string" }
                    ),
                ));
            }
        }
    }
    Ok(actions)
}

/// Task `n` as a task of the scenario: its facts, request, success and gold
/// actions (each write after the user's confirmation).
fn push_task(
    ron: &mut String,
    task: &Task,
    n: usize,
    actions: &[&Action],
    tasks_json: &str,
) -> Result<(), ImportError> {
    let owned: Vec<Action> = actions
        .iter()
        .map(|a| Action { name: a.name.clone(), arguments: a.arguments.clone(), requestor: a.requestor.clone() })
        .collect();
    let facts = facts(task, &owned);
    let i = &task.user_scenario.instructions;
    let mut request = i.reason_for_call.trim().to_string();
    if let Some(known) = i.known_info.as_deref().filter(|k| !k.trim().is_empty()) {
        request = format!("{} {}", known.trim(), request);
    }
    // Braces in the text would read as fact templates.
    let request = request.replace(['{', '}'], "");
    let mut facts_ron: Vec<String> =
        facts.iter().map(|(k, v)| format!("{}: {}", ron_string(k), ron_string(v))).collect();
    if let Some(unknown) = i.unknown_info.as_deref().filter(|u| !u.trim().is_empty()) {
        facts_ron.push(format!("\"unknown_info\": {}", ron_string(unknown.trim())));
    }
    ron.push_str(&format!(
        "            (\n                id: {},\n                description: {},\n                facts: {{{}}},\n                request: {},\n                success: {},\n                gold: [\n",
        ron_string(&task.id),
        ron_string(i.task_instructions.trim()),
        facts_ron.join(", "),
        ron_string(&request),
        success_ron(task, n, tasks_json)?,
    ));
    push_gold(ron, task, &owned, &facts);
    Ok(())
}

/// The gold actions of a task: its `owned` actions with their arguments
/// templated on the `facts`, each write proposed first, and the closing.
fn push_gold(ron: &mut String, task: &Task, owned: &[Action], facts: &[(String, String)]) {
    for action in owned {
        let shape = TOOLS.iter().find(|t| t.name == action.name).expect("checked above");
        let args: serde_json::Map<String, serde_json::Value> =
            action.arguments.iter().map(|(k, v)| (k.clone(), templated(v, facts))).collect();
        let args_ron = ron_data(&serde_json::Value::Object(args));
        if shape.write {
            // tau2's policy: the details, and the user's explicit yes,
            // before any write. The details make each proposal a message
            // of its own (an idempotency layer keys writes by content).
            ron.push_str(&format!(
                "                    (tool: \"send_message\", args: {{\"kind\": \"confirm\", \"action\": \"{}\", \"details\": {args_ron}}}),\n",
                shape.name
            ));
        }
        match verify(&action.name, &action.arguments) {
            Some((tool, vargs, applied)) if shape.write => ron.push_str(&format!(
                "                    (tool: \"{}\", args: {args_ron}, verify: (tool: \"{tool}\", args: {vargs}, applied: {})),\n",
                action.name,
                ron_string(&applied)
            )),
            _ => ron.push_str(&format!("                    (tool: \"{}\", args: {args_ron}),\n", action.name)),
        }
    }
    let communicate = task.evaluation_criteria.communicate_info.as_deref().unwrap_or_default();
    if !communicate.is_empty() {
        // What the agent must tell the user, said in the closing.
        ron.push_str(&format!(
            "                    (tool: \"send_message\", args: {{\"kind\": \"done\", \"details\": {}}}),\n",
            ron_string(&communicate.join(", "))
        ));
    } else if owned.is_empty() {
        // Nothing to change (the user must be refused or only informed):
        // the gold is to answer and leave the database as it is.
        ron.push_str("                    (tool: \"send_message\", args: {\"kind\": \"done\"}),\n");
    }
    ron.push_str("                ],\n            ),\n");
}
