//! Test helpers: a tiny catalog, a scripted inner agent, and a step runner.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agentsim_engine::tool::AUTHENTICATE;
use agentsim_engine::{
    Action, Agent, AgentCx, Catalog, Constraint, Input, Note, Reply, StreamSource, ToolCall, ToolConfig, ToolDef,
    ToolId, ToolKind, ToolResult, ToolSpec, Value, ValueKind,
};

/// `lookup_order` (read), `refund_order` (write with both constraints) and
/// `list_news` (read, no id).
pub(crate) fn catalog() -> Catalog {
    let lookup = ToolDef::new("lookup_order", ToolKind::Read, "Looks up an order.")
        .id_arg("order_id")
        .field("order_id", ValueKind::Str)
        .field("total_cents", ValueKind::Int);
    let refund = ToolDef::new("refund_order", ToolKind::Write, "Refunds an order.")
        .id_arg("order_id")
        .arg("amount_cents", ValueKind::Int, true)
        .field("refund_id", ValueKind::Str)
        .constraint(Constraint::Positive { arg: "amount_cents".into() })
        .constraint(Constraint::AtMostSeen {
            arg: "amount_cents".into(),
            key_arg: "order_id".into(),
            source_tool: "lookup_order".into(),
            source_key: "order_id".into(),
            field: "total_cents".into(),
        });
    let news = ToolDef::new("list_news", ToolKind::Read, "Lists news.").field("items", ValueKind::List);
    let specs = [lookup, refund, news].into_iter().map(|def| ToolSpec { def, config: ToolConfig::default() });
    let catalog = Catalog::new(specs.collect());
    assert!(catalog.id(AUTHENTICATE).is_some());
    catalog
}

pub(crate) const LOOKUP: ToolId = ToolId(0);
pub(crate) const REFUND: ToolId = ToolId(1);
pub(crate) const NEWS: ToolId = ToolId(2);

pub(crate) fn streams(seed: u64) -> StreamSource {
    StreamSource::new([3; 32], seed)
}

pub(crate) fn lookup(order_id: &str) -> ToolCall {
    ToolCall::new(LOOKUP, Value::map([("order_id", Value::str(order_id))]))
}

pub(crate) fn refund(order_id: &str, amount_cents: i64) -> ToolCall {
    ToolCall::new(REFUND, Value::map([("order_id", Value::str(order_id)), ("amount_cents", Value::Int(amount_cents))]))
}

pub(crate) fn news() -> ToolCall {
    ToolCall::new(NEWS, Value::map::<&str>([]))
}

pub(crate) fn order_body(order_id: &str, total_cents: i64) -> Value {
    Value::map([("order_id", Value::str(order_id)), ("total_cents", Value::Int(total_cents))])
}

pub(crate) fn ok(call: &ToolCall, body: Value) -> Input {
    Input::Tool(ToolResult { call: call.clone(), reply: Reply::Ok(body.into()), latency_ms: 100, cache_age_ms: None })
}

pub(crate) fn error(call: &ToolCall, status: u16, retry_after_ms: Option<u64>) -> Input {
    let reply = Reply::Error { status, retry_after_ms, message: format!("status {status}") };
    Input::Tool(ToolResult { call: call.clone(), reply, latency_ms: 100, cache_age_ms: None })
}

pub(crate) fn reply(call: &ToolCall, reply: Reply) -> Input {
    Input::Tool(ToolResult { call: call.clone(), reply, latency_ms: 100, cache_age_ms: None })
}

/// What a scripted agent was told, shared with the test that owns the script.
pub(crate) type Seen = Arc<Mutex<Vec<Input>>>;

/// A fake planner: answers each input with the next scripted action (then the
/// fallback), records every input, and takes one turn per step like a planner.
pub(crate) struct Script {
    actions: VecDeque<Action>,
    fallback: Action,
    seen: Seen,
}

impl Script {
    pub(crate) fn new(actions: impl IntoIterator<Item = Action>, fallback: Action) -> (Box<Self>, Seen) {
        let seen = Seen::default();
        let script = Script { actions: actions.into_iter().collect(), fallback, seen: Arc::clone(&seen) };
        (Box::new(script), seen)
    }

    /// A script that answers every input with `action`.
    pub(crate) fn always(action: Action) -> (Box<Self>, Seen) {
        Self::new([], action)
    }
}

impl Agent for Script {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        cx.read(&input);
        cx.begin_turn();
        self.seen.lock().expect("test mutex").push(input);
        self.actions.pop_front().unwrap_or_else(|| self.fallback.clone())
    }
}

/// What one step produced.
pub(crate) struct Stepped {
    pub action: Action,
    pub notes: Vec<Note>,
    pub turns: u32,
    pub validate: bool,
}

pub(crate) fn step(agent: &mut dyn Agent, catalog: &Catalog, now_ms: u64, input: Input) -> Stepped {
    let mut cx = AgentCx::new(now_ms, catalog);
    let action = agent.step(input, &mut cx);
    Stepped { action, notes: cx.take_notes(), turns: cx.turns(), validate: cx.lens.validate }
}

pub(crate) fn user(text: &str) -> Input {
    Input::User(agentsim_engine::Message { text: text.into(), content: Value::Null })
}

pub(crate) fn idle() -> Action {
    Action::Idle { wake_at_ms: None }
}

pub(crate) fn seen(seen: &Seen) -> Vec<Input> {
    seen.lock().expect("test mutex").clone()
}
