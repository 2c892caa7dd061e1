//! Data-driven tests of the stack layers: every file in `tests/layer_cases/` is a
//! case. A case names a stack of layers, a call the planner makes (`calls` times,
//! pausing `gap_ms` after each answer), the tool's scripted replies call by call
//! (success once the script runs out), and what must happen: what the planner saw
//! for each of its calls, how many calls reached the tool, how many writes were
//! applied, and which layer decisions were noted.
//!
//! The harness is a miniature event loop over virtual time: a sleep or timer jumps
//! the clock, a tool call takes its scripted latency (100 ms unless `Slow`), and a
//! timeout layer's deadline cuts it short. A write is applied when the tool served
//! it (`Ok`, `CommitThenTimeout`, or `Slow` past a deadline), once per idempotency
//! key.

use std::path::Path;
use std::sync::{Arc, Mutex};

use agentsim_agents::{LayerSpec, PlannerSpec, StackSpec};
use agentsim_engine::{Action, Agent, AgentCx, Input, Message, Reply, TimeMs, ToolCall, ToolResult, Value};
use serde::Deserialize;

use crate::common::default_scenario;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    layers: Vec<LayerSpec>,
    call: CallKind,
    #[serde(default = "one")]
    calls: u32,
    #[serde(default)]
    gap_ms: TimeMs,
    replies: Vec<Scripted>,
    expect: Expect,
}

fn one() -> u32 {
    1
}

#[derive(Deserialize, Clone, Copy)]
enum CallKind {
    Lookup,
    Refund,
}

#[derive(Deserialize, Clone, Copy, Debug)]
enum Scripted {
    Ok,
    Error(u16),
    RetryAfter(u16, TimeMs),
    Timeout,
    CommitThenTimeout,
    Malformed,
    Slow(TimeMs),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// Per planner call: `ok`, `ok(cached)`, a status (`503`, `504` for a
    /// timeout), or `blocked:LAYER`.
    seen: Vec<String>,
    tool_calls: u32,
    #[serde(default)]
    applied: Option<u32>,
    /// `source.what` of notes that must appear, in this order (others may come between).
    #[serde(default)]
    notes: Vec<String>,
}

/// The planner: makes the same call `calls` times and records what it is told.
struct Planner {
    call: ToolCall,
    calls_left: u32,
    gap_ms: TimeMs,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Agent for Planner {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        cx.begin_turn();
        let answered = match &input {
            Input::Tool(r) => Some(match (&r.reply, r.cache_age_ms) {
                (Reply::Ok(_), Some(_)) => "ok(cached)".to_string(),
                (Reply::Ok(_), None) => "ok".to_string(),
                (reply, _) => reply.status().to_string(),
            }),
            Input::Blocked { layer, .. } => Some(format!("blocked:{layer}")),
            Input::User(_) | Input::Wake => None,
        };
        if let Some(answer) = answered {
            self.seen.lock().unwrap().push(answer);
            if self.gap_ms > 0 && self.calls_left > 0 {
                return Action::Idle { wake_at_ms: Some(cx.now_ms + self.gap_ms) };
            }
        }
        if self.calls_left == 0 {
            return Action::Idle { wake_at_ms: None };
        }
        self.calls_left -= 1;
        Action::Call(self.call.clone())
    }
}

fn order_body(total: Value) -> Value {
    Value::map([
        ("order_id", Value::str("A1001")),
        ("customer_id", Value::str("C001")),
        ("status", Value::str("delivered")),
        ("total_cents", total),
        ("items", Value::List(vec![])),
        ("refunded_cents", Value::Int(0)),
        ("refunds", Value::List(vec![])),
    ])
}

fn refund_body() -> Value {
    Value::map([
        ("refund_id", Value::str("R1")),
        ("order_id", Value::str("A1001")),
        ("amount_cents", Value::Int(100)),
        ("status", Value::str("refunded")),
    ])
}

fn run_case(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Case = agentsim_worlds::scenario::ron_options()
        .from_str(&text)
        .map_err(|e| agentsim_worlds::scenario::ron_error(&text, &path.to_string_lossy(), &e).to_string())?;
    let prepared = default_scenario();
    let catalog = &prepared.catalog;
    let (call, ok_body) = match case.call {
        CallKind::Lookup => (
            ToolCall::new(catalog.id("lookup_order").unwrap(), Value::map([("order_id", Value::str("A1001"))])),
            order_body(Value::Int(4_250)),
        ),
        CallKind::Refund => (
            ToolCall::new(
                catalog.id("issue_refund").unwrap(),
                Value::map([("order_id", Value::str("A1001")), ("amount_cents", Value::Int(100))]),
            ),
            refund_body(),
        ),
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let planner = Planner { call, calls_left: case.calls, gap_ms: case.gap_ms, seen: Arc::clone(&seen) };
    let stack = StackSpec { planner: PlannerSpec::Oracle, layers: case.layers };
    let mut agent = stack.build(Box::new(planner), &prepared.streams(1));

    let mut now_ms: TimeMs = 0;
    let mut input = Input::User(Message { text: "go".into(), content: Value::Null });
    let (mut tool_calls, mut applied) = (0u32, 0u32);
    let mut keys: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for _ in 0..500 {
        let mut cx = AgentCx::new(now_ms, catalog);
        let action = agent.step(input, &mut cx);
        notes.extend(cx.take_notes().iter().map(|n| format!("{}.{}", n.source, n.what)));
        match action {
            Action::Call(call) => {
                let scripted = case.replies.get(tool_calls as usize).copied().unwrap_or(Scripted::Ok);
                tool_calls += 1;
                let (mut reply, mut latency_ms, served) = match scripted {
                    Scripted::Ok => (Reply::Ok(ok_body.clone().into()), 100, true),
                    Scripted::Error(status) => (error(status, None), 100, false),
                    Scripted::RetryAfter(status, ms) => (error(status, Some(ms)), 100, false),
                    Scripted::Timeout => (Reply::Timeout, 10_000, false),
                    Scripted::CommitThenTimeout => (Reply::Timeout, 10_000, true),
                    Scripted::Malformed => (Reply::Ok(order_body(Value::str("4,250")).into()), 100, false),
                    Scripted::Slow(ms) => (Reply::Ok(ok_body.clone().into()), ms, true),
                };
                if let Some(limit_ms) = cx.call_timeout_ms()
                    && latency_ms > limit_ms
                {
                    (reply, latency_ms) = (Reply::Timeout, limit_ms);
                }
                if served && matches!(case.call, CallKind::Refund) {
                    match &call.idempotency_key {
                        Some(key) if keys.contains(key) => {}
                        Some(key) => {
                            keys.push(key.clone());
                            applied += 1;
                        }
                        None => applied += 1,
                    }
                }
                now_ms += latency_ms;
                input = Input::Tool(ToolResult { call, reply, latency_ms, cache_age_ms: None });
            }
            Action::Sleep { until_ms } | Action::Idle { wake_at_ms: Some(until_ms) } => {
                now_ms = until_ms.max(now_ms);
                input = Input::Wake;
            }
            Action::Idle { wake_at_ms: None } | Action::Say { .. } | Action::Finish(_) => break,
        }
    }
    let seen = seen.lock().unwrap().clone();
    let mut problems = Vec::new();
    if seen != case.expect.seen {
        problems.push(format!("planner saw {seen:?}, expected {:?}", case.expect.seen));
    }
    if tool_calls != case.expect.tool_calls {
        problems.push(format!("{tool_calls} calls reached the tool, expected {}", case.expect.tool_calls));
    }
    if let Some(expected) = case.expect.applied
        && applied != expected
    {
        problems.push(format!("{applied} writes applied, expected {expected}"));
    }
    let mut rest = notes.iter();
    for wanted in &case.expect.notes {
        if !rest.any(|n| n == wanted) {
            problems.push(format!("note `{wanted}` missing or out of order in {notes:?}"));
            break;
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

fn error(status: u16, retry_after_ms: Option<TimeMs>) -> Reply {
    Reply::Error { status, retry_after_ms, message: format!("status {status}") }
}

#[test]
fn every_layer_case_holds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/layer_cases");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    assert!(paths.len() >= 10, "the cases are there");
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| run_case(p).err().map(|e| format!("{}: {e}", p.file_name().unwrap().to_string_lossy())))
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
