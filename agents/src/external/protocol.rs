//! The JSON-lines protocol spoken with external agents (`docs/protocol.md` is the
//! user-facing description; this is its implementation).
//!
//! agentsim writes one observation per line and reads one action per line. Every
//! message carries `"protocol": "agentsim/1"`; an action with another major
//! version is refused. Values map to JSON one to one: an integer literal is an
//! integer, a literal with a fraction or an exponent a float (scripted worlds
//! take numbers; the built-in worlds count money in cents and time in
//! milliseconds). A fraction for an argument the tool list declares
//! `integer`, and an integer beyond 64 bits, signed, are protocol errors.

use agentsim_engine::tool::ArgDef;
use agentsim_engine::{Action, AgentCx, Catalog, Finish, Float, Input, Reply, ToolCall, ToolKind, Value, ValueKind};
use serde_json::{Map, Number, Value as Json, json};

pub use super::protocol_error::{ProtocolError, ProtocolErrorKind};
use ProtocolErrorKind as Kind;

/// The protocol name and major version, in every message both ways.
pub const PROTOCOL: &str = "agentsim/1";

/// An engine value as JSON. The containers being built wait on an explicit
/// stack, not the call stack: a value nested however deeply (a world's script
/// builds what it likes) converts without overflowing it.
pub fn to_json(value: &Value) -> Json {
    /// A container being built: what is left of the value's, and what is built.
    enum Open<'v> {
        List(std::slice::Iter<'v, Value>, Vec<Json>),
        Map(std::slice::Iter<'v, (agentsim_engine::Key, Value)>, Map<String, Json>, String),
    }
    let mut open: Vec<Open<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        let mut built = match next.take() {
            Some(Value::List(items)) => {
                open.push(Open::List(items.iter(), Vec::with_capacity(items.len())));
                None
            }
            Some(Value::Map(pairs)) => {
                open.push(Open::Map(pairs.iter(), Map::new(), String::new()));
                None
            }
            Some(scalar) => Some(scalar_json(scalar)),
            None => None,
        };
        // Place what was built in its container; close the containers it completes.
        while next.is_none() {
            let Some(top) = open.last_mut() else { return built.expect("the outermost value is built last") };
            match top {
                Open::List(items, out) => {
                    out.extend(built.take());
                    next = items.next();
                }
                Open::Map(pairs, out, key) => {
                    if let Some(json) = built.take() {
                        out.insert(std::mem::take(key), json);
                    }
                    next = pairs.next().map(|(k, v)| {
                        *key = k.to_string();
                        v
                    });
                }
            }
            if next.is_none() {
                built = Some(match open.pop() {
                    Some(Open::List(_, out)) => Json::Array(out),
                    Some(Open::Map(_, out, _)) => Json::Object(out),
                    None => unreachable!("a container was open"),
                });
            }
        }
    }
}

/// A value that holds no others as JSON.
fn scalar_json(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(n) => Json::Number(Number::from(*n)),
        Value::Float(x) => Number::from_f64(x.get()).map_or(Json::Null, Json::Number),
        Value::Str(s) => Json::String(s.clone()),
        Value::List(_) | Value::Map(_) => unreachable!("containers are built by to_json"),
    }
}

/// How deeply an agent's decision may nest (an object or array is one level):
/// real tool arguments nest two or three levels. Bounded where the agent's input
/// is read, so that every decision recorded in an incident reads back: an
/// incident stores a decision as RON a few levels per value level inside the
/// incident's own, under the RON reader's recursion limit (128).
pub const DECISION_DEPTH_MAX: usize = 16;

/// How deeply a call's `args` may nest: one level less than the decision that
/// holds them.
pub const ARGS_DEPTH_MAX: usize = DECISION_DEPTH_MAX - 1;

/// JSON as an engine value, at most [`DECISION_DEPTH_MAX`] levels deep; `path`
/// names the place in errors.
pub fn from_json(json: &Json, path: &str) -> Result<Value, ProtocolError> {
    from_json_within(json, path, DECISION_DEPTH_MAX)
}

/// JSON as an engine value, at most `depth_max` levels deep (an object or an
/// array is a level); `path` names the place in errors.
pub fn from_json_within(json: &Json, path: &str, depth_max: usize) -> Result<Value, ProtocolError> {
    value_of(json, path, depth_max, depth_max)
}

fn value_of(json: &Json, path: &str, levels_left: usize, depth_max: usize) -> Result<Value, ProtocolError> {
    let at = |kind, what: String| ProtocolError::new(kind, Some(path), format!("`{path}`: {what}"));
    if levels_left == 0 && matches!(json, Json::Array(_) | Json::Object(_)) {
        return Err(at(Kind::TooDeep, format!("nested too deeply (at most {depth_max} levels of objects and arrays)")));
    }
    let levels_left = levels_left.saturating_sub(1);
    Ok(match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) if n.is_f64() => Value::Float(
            n.as_f64()
                .and_then(Float::new)
                .ok_or_else(|| at(Kind::NotFinite, format!("{n} is not a finite number")))?,
        ),
        Json::Number(n) => Value::Int(n.as_i64().ok_or_else(|| {
            at(Kind::NotInteger, format!("{n} is not an integer (amounts are in cents, times in ms)"))
        })?),
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(items) => Value::List(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| value_of(v, &format!("{path}[{i}]"), levels_left, depth_max))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(map) => Value::Map(
            map.iter()
                .map(|(k, v)| Ok((k.clone().into(), value_of(v, &format!("{path}.{k}"), levels_left, depth_max)?)))
                .collect::<Result<_, ProtocolError>>()?,
        ),
    })
}

fn kind_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Null => "null",
        ValueKind::Bool => "boolean",
        ValueKind::Int => "integer",
        ValueKind::Str => "string",
        ValueKind::List => "array",
        ValueKind::Map => "object",
        ValueKind::Float => "number",
    }
}

fn arg_schema(arg: &ArgDef) -> Json {
    let mut schema = json!({ "type": kind_name(arg.kind) });
    if arg.is_id {
        schema["description"] = Json::String("an identifier: copy it exactly".into());
    }
    if !arg.one_of.is_empty() {
        schema["enum"] = Json::Array(arg.one_of.iter().map(|v| Json::String(v.clone())).collect());
    }
    schema
}

/// The tool list in the style of function calling: name, description, kind
/// (`read` or `write`) and a JSON-schema object for the arguments.
pub fn tool_list(catalog: &Catalog) -> Json {
    let tools = catalog.specs().iter().map(|spec| {
        let def = &spec.def;
        let properties: Map<String, Json> = def.args.iter().map(|a| (a.name.clone(), arg_schema(a))).collect();
        let required: Vec<Json> = def.args.iter().filter(|a| a.required).map(|a| Json::String(a.name.clone())).collect();
        let mut tool = json!({
            "name": def.name,
            "description": def.description,
            "kind": match def.kind { ToolKind::Read => "read", ToolKind::Write => "write" },
            "parameters": { "type": "object", "properties": properties, "required": required },
            "response_fields": def.response.iter().map(|f| json!({"name": f.name, "type": kind_name(f.kind)})).collect::<Vec<_>>(),
        });
        if !def.annotations.is_null() {
            tool["annotations"] = to_json(&def.annotations);
        }
        tool
    });
    Json::Array(tools.collect())
}

fn call_json(call: &ToolCall, catalog: &Catalog) -> Json {
    json!({
        "tool": crate::catalog::name(catalog, call.tool),
        "args": to_json(&call.args),
        "idempotency_key": call.idempotency_key,
    })
}

/// The event part of an observation.
pub fn event_json(input: &Input, catalog: &Catalog) -> Json {
    match input {
        Input::User(message) => json!({
            "kind": "user_message", "text": message.text, "content": to_json(&message.content),
        }),
        Input::Tool(result) => {
            let mut event = json!({
                "kind": "tool_result",
                "call": call_json(&result.call, catalog),
                "latency_ms": result.latency_ms,
                "cache_age_ms": result.cache_age_ms,
            });
            match &result.reply {
                Reply::Ok(body) => {
                    event["ok"] = Json::Bool(true);
                    event["body"] = to_json(body);
                }
                Reply::Error { status, retry_after_ms, message } => {
                    event["ok"] = Json::Bool(false);
                    event["error"] = json!({
                        "type": "http", "status": status, "message": message, "retry_after_ms": retry_after_ms,
                    });
                }
                Reply::Timeout => {
                    event["ok"] = Json::Bool(false);
                    event["error"] = json!({ "type": "timeout", "status": 504 });
                }
                Reply::Garbled(text) => {
                    event["ok"] = Json::Bool(false);
                    event["error"] = json!({ "type": "unparseable", "status": 200, "text": text });
                }
            }
            event
        }
        Input::Blocked { call, layer, reason } => json!({
            "kind": "blocked", "call": call_json(call, catalog), "layer": layer, "reason": reason,
        }),
        Input::Wake => json!({ "kind": "wake" }),
    }
}

/// One observation line (without the newline). The first (`seq` 1) carries the
/// tool list.
pub fn observation(seq: u64, input: &Input, cx: &AgentCx<'_>) -> String {
    let mut line = observation_without_tools(seq, input, cx);
    if seq == 1 {
        add_tools(&mut line, &tool_list(cx.catalog).to_string());
    }
    line
}

/// An observation line without the tool list, whatever its `seq`.
pub fn observation_without_tools(seq: u64, input: &Input, cx: &AgentCx<'_>) -> String {
    let message = json!({
        "protocol": PROTOCOL,
        "type": "observation",
        "seq": seq,
        "now_ms": cx.now_ms,
        "event": event_json(input, cx.catalog),
    });
    message.to_string()
}

/// Adds `tools` (the [`tool_list`] as JSON text, rendered once for many
/// episodes) to an observation line.
pub fn add_tools(line: &mut String, tools: &str) {
    assert!(line.ends_with('}'), "an observation is a JSON object");
    line.pop();
    line.push_str(",\"tools\":");
    line.push_str(tools);
    line.push('}');
}

/// Adds `session` (the session the observation belongs to, in a run of many
/// sessions served by one caller) to an observation line.
pub fn add_session(line: &mut String, session: u32) {
    assert!(line.ends_with('}'), "an observation is a JSON object");
    line.pop();
    line.push_str(",\"session\":");
    line.push_str(&session.to_string());
    line.push('}');
}

fn missing(name: &str) -> ProtocolError {
    ProtocolError::new(Kind::Missing, Some(name), format!("missing field `{name}`"))
}

fn field<'a>(message: &'a Map<String, Json>, name: &str) -> Result<&'a Json, ProtocolError> {
    message.get(name).ok_or_else(|| missing(name))
}

fn uint(message: &Map<String, Json>, name: &str) -> Result<Option<u64>, ProtocolError> {
    match message.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            ProtocolError::in_field(Kind::WrongType, name, format!("expected a non-negative integer, found {v}"))
        }),
    }
}

fn text(message: &Map<String, Json>, name: &str) -> Result<String, ProtocolError> {
    match message.get(name) {
        None | Some(Json::Null) => Ok(String::new()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(v) => Err(ProtocolError::in_field(Kind::WrongType, name, format!("expected a string, found {v}"))),
    }
}

/// The think time an answer reports (`"think_ms": N`, optional): how long the
/// agent's model call took outside the simulation. It replaces the model's
/// think-time draw for that turn, and a replay reports the recorded value again.
pub fn reported_think_ms(decision: &Value) -> Option<u64> {
    decision.get("think_ms").and_then(Value::as_int).and_then(|ms| u64::try_from(ms).ok())
}

/// Episodes in flight on one persistent agent when its hello names none.
pub const EPISODES_IN_FLIGHT_DEFAULT: usize = 8;

/// The most episodes in flight on one persistent agent, whatever its hello says.
pub const EPISODES_IN_FLIGHT_MAX: usize = 256;

/// What a persistent agent's first line says: that it serves many episodes,
/// and how many it takes at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Episodes in flight at once on this process (its observations interleave).
    pub episodes_in_flight: usize,
}

/// Reads a line as a persistent agent's hello
/// (`{"protocol": "agentsim/1", "type": "hello", "persistent": true, "episodes_in_flight": 8}`):
/// `None` when it is not one (`type` is not `hello`), an error when it is one
/// but malformed.
pub fn parse_hello(line: &[u8]) -> Option<Result<Hello, ProtocolError>> {
    let json: Json = serde_json::from_slice(line).ok()?;
    let Json::Object(message) = &json else { return None };
    if message.get("type").and_then(Json::as_str) != Some("hello") {
        return None;
    }
    let hello = || {
        match message.get("protocol") {
            Some(Json::String(p)) if p == PROTOCOL => {}
            other => {
                let found = format!("expected \"{PROTOCOL}\", found {other:?}");
                return Err(ProtocolError::in_field(Kind::Version, "protocol", found).prefixed("hello: "));
            }
        }
        if message.get("persistent") != Some(&Json::Bool(true)) {
            return Err(ProtocolError::in_field(Kind::WrongType, "persistent", "expected true").prefixed("hello: "));
        }
        let episodes_in_flight = match uint(message, "episodes_in_flight").map_err(|e| e.prefixed("hello: "))? {
            None => EPISODES_IN_FLIGHT_DEFAULT,
            Some(n @ 1..) => usize::try_from(n).unwrap_or(usize::MAX).min(EPISODES_IN_FLIGHT_MAX),
            Some(0) => {
                let e = ProtocolError::in_field(Kind::OutOfRange, "episodes_in_flight", "expected at least 1");
                return Err(e.prefixed("hello: "));
            }
        };
        Ok(Hello { episodes_in_flight })
    };
    Some(hello())
}

/// An observation line for a persistent agent: `line` (an [`observation`]) with
/// the episode it belongs to.
pub fn with_episode(line: &str, episode: u64) -> String {
    assert!(line.starts_with('{'), "an observation is a JSON object");
    let mut out = String::with_capacity(line.len() + 24);
    out.push_str("{\"episode\":");
    out.push_str(&episode.to_string());
    if line != "{}" {
        out.push(',');
    }
    out.push_str(&line[1..]);
    out
}

/// The line that tells a persistent agent an episode has ended (no answer is
/// expected): it may forget the episode.
pub fn end_line(episode: u64) -> String {
    json!({"protocol": PROTOCOL, "type": "end", "episode": episode}).to_string()
}

/// The episode an answer names (`"episode": N`), if it names one.
pub fn episode_of(answer: &Json) -> Option<u64> {
    answer.get("episode").and_then(Json::as_u64)
}

/// Parses one action line. Returns the action and the decision as a value (what
/// the trajectory records so that the run can be replayed without the agent).
pub fn parse_action(line: &[u8], catalog: &Catalog) -> Result<(Action, Value), ProtocolError> {
    let json: Json =
        serde_json::from_slice(line).map_err(|e| ProtocolError::new(Kind::NotJson, None, format!("not JSON: {e}")))?;
    action_of(&json, catalog)
}

/// [`parse_action`] for a recorded decision: also reads the server's own
/// `{"action": "finish", "outcome": "absent"}` (an MCP client that never came,
/// [`Finish::Absent`]), which a recording holds and no agent may say
/// ([`action_of`] refuses it, so an agent cannot take itself out of its rates).
pub fn parse_recorded_action(line: &[u8], catalog: &Catalog) -> Result<(Action, Value), ProtocolError> {
    let json: Json =
        serde_json::from_slice(line).map_err(|e| ProtocolError::new(Kind::NotJson, None, format!("not JSON: {e}")))?;
    let absent = json.get("action").and_then(Json::as_str) == Some("finish")
        && json.get("outcome").and_then(Json::as_str) == Some("absent");
    if !absent {
        return action_of(&json, catalog);
    }
    // Read as `done` for every other field's checks, then recorded as it was.
    let mut done = json;
    done["outcome"] = Json::String("done".into());
    let (_, mut decision) = action_of(&done, catalog)?;
    if let Value::Map(pairs) = &mut decision {
        for (_, value) in pairs.iter_mut().filter(|(key, _)| key == "outcome") {
            *value = Value::Str("absent".into());
        }
    }
    Ok((Action::Finish(Finish::Absent), decision))
}

/// [`parse_action`] of a line already read as JSON. The decision leaves out
/// `protocol` and `episode` (which episode a persistent agent answered is not
/// part of the decision: the trajectory is the same whichever process ran it).
pub fn action_of(json: &Json, catalog: &Catalog) -> Result<(Action, Value), ProtocolError> {
    let Json::Object(message) = json else {
        return Err(ProtocolError::new(Kind::NotAnObject, None, "expected a JSON object"));
    };
    match field(message, "protocol")? {
        Json::String(p) if p == PROTOCOL => {}
        other => {
            return Err(ProtocolError::in_field(
                Kind::Version,
                "protocol",
                format!("expected \"{PROTOCOL}\", found {other}"),
            ));
        }
    }
    let Json::String(kind) = field(message, "action")? else {
        return Err(ProtocolError::in_field(Kind::WrongType, "action", "expected a string"));
    };
    if let Some(think) = message.get("think_ms")
        && !think.is_u64()
    {
        let found = format!("expected a non-negative integer (milliseconds), found {think}");
        return Err(ProtocolError::in_field(Kind::WrongType, "think_ms", found));
    }
    let action = match kind.as_str() {
        "call" => Action::Call(call_of(message, catalog)?),
        "say" => match message.get("text") {
            Some(Json::String(t)) => Action::Say { text: t.clone() },
            Some(other) => {
                return Err(ProtocolError::in_field(
                    Kind::WrongType,
                    "text",
                    format!("expected a string, found {other}"),
                ));
            }
            None => {
                let why = "missing field `text` (what the agent says to the user)";
                return Err(ProtocolError::new(Kind::Missing, Some("text"), why));
            }
        },
        "sleep" => Action::Sleep { until_ms: uint(message, "until_ms")?.ok_or_else(|| missing("until_ms"))? },
        "idle" => Action::Idle { wake_at_ms: uint(message, "wake_at_ms")? },
        "finish" => match text(message, "outcome")?.as_str() {
            "done" => Action::Finish(Finish::Done),
            "gave_up" => Action::Finish(Finish::GaveUp { reason: text(message, "reason")? }),
            other => {
                let found = format!("expected \"done\" or \"gave_up\", found \"{other}\"");
                return Err(ProtocolError::in_field(Kind::Unknown, "outcome", found));
            }
        },
        other => {
            let found = format!("expected call, say, sleep, idle or finish, found \"{other}\"");
            return Err(ProtocolError::in_field(Kind::Unknown, "action", found));
        }
    };
    let mut decision = from_json(json, "action")?;
    if let Value::Map(pairs) = &mut decision {
        pairs.retain(|(k, _)| k != "protocol" && k != "episode");
    }
    Ok((action, decision))
}

/// The call a `call` action asks for: a known tool, arguments in an object (an
/// integer where the tool declares one), an optional idempotency key.
fn call_of(message: &Map<String, Json>, catalog: &Catalog) -> Result<ToolCall, ProtocolError> {
    let Json::String(name) = field(message, "tool")? else {
        return Err(ProtocolError::in_field(Kind::WrongType, "tool", "expected a string"));
    };
    let tool = catalog
        .id(name)
        .ok_or_else(|| ProtocolError::in_field(Kind::Unknown, "tool", format!("unknown tool `{name}`")))?;
    let args = match message.get("args") {
        None | Some(Json::Null) => Value::Map(Vec::new()),
        Some(args @ Json::Object(_)) => from_json_within(args, "args", ARGS_DEPTH_MAX)?,
        Some(other) => {
            return Err(ProtocolError::in_field(Kind::WrongType, "args", format!("expected an object, found {other}")));
        }
    };
    // The tool list gives every argument's type: a number with a fraction
    // where it says anything but `number` (an integer, a string, ...) is the
    // agent's mistake about the declared schema (a protocol error), never a
    // value for the world to make sense of.
    for arg in catalog.spec(tool).def.args.iter().filter(|a| a.kind != ValueKind::Float) {
        if let Some(Value::Float(x)) = args.get(&arg.name) {
            let path = format!("args.{}", arg.name);
            let declared = kind_name(arg.kind);
            return Err(match arg.kind {
                ValueKind::Int => ProtocolError::in_field(
                    Kind::NotInteger,
                    &path,
                    format!("{x} is not an integer, the type the tool declares"),
                ),
                _ => ProtocolError::in_field(
                    Kind::WrongType,
                    &path,
                    format!("{x} is a number, and the tool declares {declared}"),
                ),
            });
        }
    }
    let idempotency_key = match message.get("idempotency_key") {
        None | Some(Json::Null) => None,
        Some(Json::String(k)) => Some(k.clone()),
        Some(other) => {
            let found = format!("expected a string, found {other}");
            return Err(ProtocolError::in_field(Kind::WrongType, "idempotency_key", found));
        }
    };
    Ok(ToolCall { tool, args: args.into(), idempotency_key })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    #[test]
    fn values_round_trip_through_json() {
        let v = Value::map([
            ("a", Value::Int(-5)),
            ("b", Value::List(vec![Value::Null, Value::Bool(true), Value::str("x\"y")])),
        ]);
        assert_eq!(from_json(&to_json(&v), "v").unwrap(), v);
        assert_eq!(from_json(&json!(1.5), "amount"), Ok(Value::Float(Float::new(1.5).expect("finite"))));
        let err = from_json(&json!(u64::MAX), "amount").unwrap_err();
        assert!(err.message().contains("not an integer"), "{err}");
        assert_eq!((err.kind(), err.field()), (ProtocolErrorKind::NotInteger, Some("amount")));
        // A fraction where the tool declares a string is refused as well
        // (issue 46, item 19): it never reaches the world.
        let line = r#"{"protocol":"agentsim/1","action":"call","tool":"lookup_order","args":{"order_id":1002.5}}"#;
        let err = parse_action(line.as_bytes(), &testkit::catalog()).unwrap_err();
        assert_eq!((err.kind(), err.field()), (ProtocolErrorKind::WrongType, Some("args.order_id")), "{err}");
    }

    #[test]
    fn deep_and_nested_values_convert_like_the_recursive_definition() {
        fn by_recursion(value: &Value) -> Json {
            match value {
                Value::List(items) => Json::Array(items.iter().map(by_recursion).collect()),
                Value::Map(pairs) => {
                    Json::Object(pairs.iter().map(|(k, v)| (k.to_string(), by_recursion(v))).collect())
                }
                other => scalar_json(other),
            }
        }
        let v = Value::map([
            ("a", Value::List(vec![Value::map([("x", Value::Int(1))]), Value::List(Vec::new()), Value::Null])),
            ("b", Value::map(Vec::<(&str, Value)>::new())),
            ("a", Value::str("again")),
            ("f", Value::Float(Float::new(2.5).expect("finite"))),
        ]);
        assert_eq!(to_json(&v), by_recursion(&v));
        assert_eq!(to_json(&v).to_string(), by_recursion(&v).to_string());
        assert_eq!(to_json(&Value::Int(3)), json!(3));
        let mut deep = Value::Null;
        for _ in 0..50_000 {
            deep = Value::List(vec![deep]);
        }
        let mut json = to_json(&deep);
        let mut depth = 0;
        // Taken apart by hand: the derived drops of both recurse.
        while let Json::Array(mut items) = json {
            depth += 1;
            json = items.pop().unwrap_or(Json::Bool(false));
        }
        while let Value::List(mut items) = deep {
            deep = items.pop().unwrap_or_default();
        }
        assert_eq!((depth, json), (50_000, Json::Null));
    }

    /// `absent` is the MCP server's word for a client that never came: a
    /// recording holds it and replays it, and no live agent may say it (it
    /// would take its session out of the agent's rates).
    #[test]
    fn only_a_recording_may_finish_a_session_as_absent() {
        let catalog = testkit::catalog();
        let line = r#"{"protocol":"agentsim/1","action":"finish","outcome":"absent"}"#;
        let refused = parse_action(line.as_bytes(), &catalog).unwrap_err();
        assert!(refused.to_string().contains("expected \"done\" or \"gave_up\""), "{refused}");
        let (action, decision) = parse_recorded_action(line.as_bytes(), &catalog).unwrap();
        assert_eq!(action, Action::Finish(Finish::Absent));
        assert_eq!(to_json(&decision), serde_json::json!({"action": "finish", "outcome": "absent"}));
        let done = r#"{"protocol":"agentsim/1","action":"finish","outcome":"done"}"#;
        assert_eq!(
            parse_recorded_action(done.as_bytes(), &catalog).unwrap(),
            parse_action(done.as_bytes(), &catalog).unwrap()
        );
    }

    #[test]
    fn parses_every_action_and_refuses_bad_ones() {
        let catalog = testkit::catalog();
        let p = |s: &str| parse_action(s.as_bytes(), &catalog);
        let (call, decision) =
            p(r#"{"protocol":"agentsim/1","action":"call","tool":"lookup_order","args":{"order_id":"o-1"}}"#).unwrap();
        assert_eq!(call, Action::Call(testkit::lookup("o-1")));
        assert_eq!(decision.get("tool"), Some(&Value::str("lookup_order")));
        assert_eq!(
            p(r#"{"protocol":"agentsim/1","action":"say","text":"Which order?"}"#).unwrap().0,
            Action::Say { text: "Which order?".into() }
        );
        assert_eq!(
            p(r#"{"protocol":"agentsim/1","action":"sleep","until_ms":5}"#).unwrap().0,
            Action::Sleep { until_ms: 5 }
        );
        assert_eq!(p(r#"{"protocol":"agentsim/1","action":"idle"}"#).unwrap().0, Action::Idle { wake_at_ms: None });
        assert_eq!(
            p(r#"{"protocol":"agentsim/1","action":"finish","outcome":"done"}"#).unwrap().0,
            Action::Finish(Finish::Done)
        );
        for (bad, needle) in [
            ("hello", "not JSON"),
            ("[1]", "object"),
            (r#"{"action":"idle"}"#, "protocol"),
            (r#"{"protocol":"agentsim/2","action":"idle"}"#, "agentsim/1"),
            (r#"{"protocol":"agentsim/1","action":"dance"}"#, "dance"),
            (r#"{"protocol":"agentsim/1","action":"call","tool":"nope"}"#, "unknown tool"),
            (
                r#"{"protocol":"agentsim/1","action":"call","tool":"refund_order","args":{"amount_cents":1.5}}"#,
                "integer",
            ),
            (r#"{"protocol":"agentsim/1","action":"sleep"}"#, "until_ms"),
            (r#"{"protocol":"agentsim/1","action":"say"}"#, "text"),
            (r#"{"protocol":"agentsim/1","action":"say","text":5}"#, "expected a string"),
        ] {
            let err = p(bad).unwrap_err();
            assert!(err.message().contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn hellos_episode_ids_and_end_lines() {
        let hello = |s: &str| parse_hello(s.as_bytes());
        assert_eq!(
            hello(r#"{"protocol":"agentsim/1","type":"hello","persistent":true}"#),
            Some(Ok(Hello { episodes_in_flight: EPISODES_IN_FLIGHT_DEFAULT }))
        );
        assert_eq!(
            hello(r#"{"protocol":"agentsim/1","type":"hello","persistent":true,"episodes_in_flight":100000}"#),
            Some(Ok(Hello { episodes_in_flight: EPISODES_IN_FLIGHT_MAX }))
        );
        assert_eq!(hello(r#"{"protocol":"agentsim/1","action":"idle"}"#), None, "an action is no hello");
        assert_eq!(hello("not json"), None);
        for (bad, needle) in [
            (r#"{"protocol":"agentsim/2","type":"hello","persistent":true}"#, "protocol"),
            (r#"{"protocol":"agentsim/1","type":"hello"}"#, "persistent"),
            (r#"{"protocol":"agentsim/1","type":"hello","persistent":true,"episodes_in_flight":0}"#, "at least 1"),
        ] {
            let err = hello(bad).expect("a hello").unwrap_err();
            assert!(err.message().contains(needle), "{bad}: {err}");
        }
        let catalog = testkit::catalog();
        let cx = AgentCx::new(7, &catalog);
        let line: Json = serde_json::from_str(&with_episode(&observation(1, &Input::Wake, &cx), 42)).unwrap();
        assert_eq!((line["episode"].as_u64(), line["seq"].as_u64()), (Some(42), Some(1)));
        assert!(line["tools"].is_array());
        let end: Json = serde_json::from_str(&end_line(42)).unwrap();
        assert_eq!((end["type"].as_str(), episode_of(&end)), (Some("end"), Some(42)));
        // Which episode an answer names is not part of the decision.
        let (_, decision) =
            parse_action(br#"{"protocol":"agentsim/1","action":"idle","episode":42}"#, &catalog).unwrap();
        assert_eq!(decision, Value::map([("action", Value::str("idle"))]));
    }

    #[test]
    fn the_first_observation_lists_the_tools() {
        let catalog = testkit::catalog();
        let cx = AgentCx::new(7, &catalog);
        let first: Json = serde_json::from_str(&observation(1, &testkit::user("hi"), &cx)).unwrap();
        assert_eq!(first["protocol"], PROTOCOL);
        assert_eq!(first["now_ms"], 7);
        assert_eq!(first["event"]["kind"], "user_message");
        assert_eq!(first["tools"][0]["name"], "lookup_order");
        assert_eq!(first["tools"][0]["parameters"]["required"][0], "order_id");
        let second: Json = serde_json::from_str(&observation(2, &Input::Wake, &cx)).unwrap();
        assert!(second.get("tools").is_none());
    }
}
