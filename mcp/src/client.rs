//! One MCP client's JSON-RPC handling, whatever carries its messages: the stdio
//! server has one [`Client`], the HTTP server one per session of the run.
//!
//! A client relays over two channels to the [`Bridge`](agentsim_runner::bridge::Bridge)
//! that is its session's planner: each `tools/call` (or `say_to_user`) becomes
//! the planner's next action and is answered with the next observation. The
//! client knows nothing of lines, sockets or recordings; its transport writes
//! the answers and, on [`Client::has_ended`], hands the run on to be judged.

use std::io::Write;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use agentsim_agents::external::protocol::{ARGS_DEPTH_MAX, from_json_within, to_json};
use agentsim_engine::{Catalog, Input, Message, Reply};
use agentsim_runner::bridge::{self, Command, Observation};
use agentsim_worlds::scripted::ArgumentErrors;
use serde_json::{Map, Value as Json, json};

use crate::{
    IDEMPOTENCY_KEY_META, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, NOT_INITIALIZED, PARSE_ERROR, PROMPT_NAME,
    PROTOCOL_VERSIONS, SAY_TOOL, THINK_MS_MAX, drift_in_effect, errors, listed_tools,
};

/// A JSON-RPC error code and its message.
type RpcError = (i64, String);

/// The two ends of a session's channels the client holds.
pub struct Channels {
    /// Commands to the session's planner.
    pub to_agent: Sender<Command>,
    /// Observations from it.
    pub from_agent: Receiver<Observation>,
}

/// One client's state: where its session stands and what it has seen.
pub struct Client<'a, L: Write> {
    catalog: &'a Catalog,
    /// How the world answers a tool it does not have: a JSON-RPC error by
    /// default, a tool result where the world says so (tau2's worlds).
    argument_errors: ArgumentErrors,
    /// Diagnostics; each line starts with `label`.
    log: L,
    label: String,
    /// `None` once the session has ended (a budget, the horizon): calls are then refused.
    to_agent: Option<Sender<Command>>,
    from_agent: Receiver<Observation>,
    /// The session's first observation has come (its user's opening message).
    started: bool,
    opening: Option<Message>,
    reply_wait_ms: u64,
    /// Virtual time of the latest observation: the tool list describes responses
    /// as of then (drift included).
    now_ms: u64,
    /// How many drift entries were in effect when the client last saw the tool
    /// list (or was told it changed).
    drift_seen: usize,
    /// A `notifications/tools/list_changed` to send after the current response.
    list_changed: bool,
    /// See [`crate::Options::wall_clock_scale`].
    wall_clock_scale: Option<f64>,
    /// When the last answer was written (the wall clock, for `--wall-clock` only).
    answered_at: Instant,
    /// `initialize` was answered: until then only `initialize` and `ping` are.
    initialized: bool,
}

/// The world's way of answering a tool it does not have.
pub fn argument_errors(prepared: &agentsim_worlds::Prepared) -> ArgumentErrors {
    match &prepared.scenario.world {
        agentsim_worlds::WorldConfig::Scripted(config) => config.argument_errors.clone(),
        _ => ArgumentErrors::Schema,
    }
}

/// A JSON-RPC error response.
pub fn error(id: Json, code: i64, message: impl Into<String>) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

impl<'a, L: Write> Client<'a, L> {
    /// A client of `prepared`'s session over `channels`, logging to `log` with
    /// each line starting with `label`.
    pub fn new(
        prepared: &'a agentsim_worlds::Prepared,
        options: &crate::Options,
        channels: Channels,
        log: L,
        label: String,
    ) -> Self {
        Self {
            catalog: &prepared.catalog,
            argument_errors: argument_errors(prepared),
            log,
            label,
            to_agent: Some(channels.to_agent),
            from_agent: channels.from_agent,
            started: false,
            opening: None,
            reply_wait_ms: options.reply_wait_ms,
            now_ms: 0,
            drift_seen: drift_in_effect(&prepared.catalog, 0),
            list_changed: false,
            wall_clock_scale: options.wall_clock_scale,
            answered_at: Instant::now(),
            initialized: false,
        }
    }

    /// The log, for the transport's own diagnostics.
    pub fn log(&mut self) -> &mut L {
        &mut self.log
    }

    /// Whether the session has ended (the run is over for it): the transport
    /// then has it judged before writing the answer.
    pub fn has_ended(&self) -> bool {
        self.to_agent.is_none()
    }

    /// Whether `initialize` was answered.
    pub fn initialized(&self) -> bool {
        self.initialized
    }

    /// Takes a pending `notifications/tools/list_changed` (a drift took effect).
    pub fn take_list_changed(&mut self) -> Option<Json> {
        std::mem::take(&mut self.list_changed)
            .then(|| json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    }

    /// The answer was written: `--wall-clock` counts think time from now.
    pub fn answered(&mut self) {
        self.answered_at = Instant::now();
    }

    /// The client is gone: its session's planner finishes.
    pub fn finish(&mut self) {
        if let Some(to_agent) = self.to_agent.take() {
            let _ = to_agent.send(Command::Finish);
        }
    }

    /// Waits (once) for the session's first observation, its user's opening
    /// message, so that `prompts/get` can offer it: in a run of many sessions,
    /// until the session arrives.
    pub fn start(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        match self.from_agent.recv() {
            Ok(Observation { input: Input::User(message), now_ms, .. }) => {
                // The log is diagnostics: a closed stderr must not end the session.
                let _ = writeln!(self.log, "{}the user says: {}", self.label, message.text);
                self.now_ms = now_ms;
                self.opening = Some(message);
            }
            // A world without an opening message: the first call answers this step.
            Ok(observation) => self.now_ms = observation.now_ms,
            Err(_) => self.to_agent = None,
        }
    }

    /// Answers one message; `None` for a notification or a client's response.
    pub fn handle(&mut self, line: &[u8]) -> Option<Json> {
        let (id, method, message) = match parse(line) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => return None,
            Err(response) => return Some(response),
        };
        let empty = Map::new();
        let params = match message.get("params") {
            None | Some(Json::Null) => &empty,
            Some(Json::Object(p)) => p,
            Some(_) => return Some(error(id, INVALID_PARAMS, "`params` must be an object")),
        };
        if !self.initialized && !matches!(method.as_str(), "initialize" | "ping") {
            // The lifecycle: nothing reaches the world (or the recording) before it.
            let reason = format!("server not initialized: send `initialize` before `{method}`");
            return Some(error(id, NOT_INITIALIZED, reason));
        }
        Some(match self.dispatch(&method, params) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => error(id, code, message),
        })
    }

    fn dispatch(&mut self, method: &str, params: &Map<String, Json>) -> Result<Json, RpcError> {
        match method {
            "initialize" => {
                self.initialized = true;
                Ok(initialize(params))
            }
            "ping" => Ok(json!({})),
            "tools/list" => {
                self.drift_seen = drift_in_effect(self.catalog, self.now_ms);
                Ok(json!({"tools": listed_tools(self.catalog, self.now_ms)}))
            }
            "tools/call" => self.call(params),
            "prompts/list" => Ok(json!({"prompts": [{
                "name": PROMPT_NAME,
                "description": "The task: the simulated user's opening message.",
            }]})),
            "prompts/get" => {
                self.start();
                self.prompt(params)
            }
            other => Err((METHOD_NOT_FOUND, format!("method not found: {other}"))),
        }
    }

    fn prompt(&self, params: &Map<String, Json>) -> Result<Json, RpcError> {
        match params.get("name").and_then(Json::as_str) {
            Some(PROMPT_NAME) => {
                let text = self.opening.as_ref().map_or("", |m| m.text.as_str());
                Ok(json!({
                    "description": "The simulated user's opening message.",
                    "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                }))
            }
            Some(other) => Err((INVALID_PARAMS, format!("unknown prompt `{other}` (prompts: {PROMPT_NAME})"))),
            None => Err((INVALID_PARAMS, "`name` must be a string".into())),
        }
    }

    /// `tools/call`: protocol problems are errors; whatever the world answers,
    /// injected faults included, is a result.
    fn call(&mut self, params: &Map<String, Json>) -> Result<Json, RpcError> {
        let Some(name) = params.get("name").and_then(Json::as_str) else {
            return Err((INVALID_PARAMS, "`name` must be a string".into()));
        };
        if name == SAY_TOOL && self.catalog.id(name).is_none() {
            return self.say(params);
        }
        if self.catalog.id(name).is_none() {
            return match self.argument_errors.unknown_tool(name) {
                Some(e) => Ok(unknown_tool_result(e)),
                None => Err((INVALID_PARAMS, format!("unknown tool `{name}`"))),
            };
        }
        let args = match params.get("arguments") {
            None | Some(Json::Null) => Json::Object(Map::new()),
            Some(a @ Json::Object(_)) => a.clone(),
            Some(_) => return Err((INVALID_PARAMS, "`arguments` must be an object".into())),
        };
        if let Err(e) = from_json_within(&args, "arguments", ARGS_DEPTH_MAX) {
            return Err((INVALID_PARAMS, e.to_string()));
        }
        self.start();
        if self.to_agent.is_none() {
            return Ok(ended_result());
        }
        let mut decision = json!({"action": "call", "tool": name, "args": args});
        match params.get("_meta").and_then(|meta| meta.get(IDEMPOTENCY_KEY_META)) {
            None | Some(Json::Null) => {}
            Some(Json::String(key)) => decision["idempotency_key"] = json!(key),
            Some(_) => return Err((INVALID_PARAMS, format!("`_meta.{IDEMPOTENCY_KEY_META}` must be a string"))),
        }
        let Some(observation) = self.act(decision)? else {
            return Ok(ended_result());
        };
        let result = self.result(&observation);
        let status = if result["isError"] == Json::Bool(true) { "error" } else { "ok" };
        let at_s = observation.now_ms as f64 / 1000.0;
        let _ = writeln!(self.log, "{}[{at_s:>7.1} s] {name} -> {status}", self.label);
        Ok(result)
    }

    /// Hands the decision (think time added) to the planner once the session
    /// has arrived; `None` once the session has ended.
    fn act(&mut self, mut decision: Json) -> Result<Option<Observation>, RpcError> {
        self.start();
        if self.to_agent.is_none() {
            return Ok(None);
        }
        self.add_think_ms(&mut decision);
        let cx = agentsim_engine::AgentCx::new(0, self.catalog);
        let (action, decision) = bridge::decide(decision, &cx).map_err(|e| (INVALID_PARAMS, e.to_string()))?;
        Ok(self.exchange(Command::Act(action, decision)))
    }

    /// With `--wall-clock`, the real time since the previous answer (scaled) is
    /// the decision's think time.
    fn add_think_ms(&self, decision: &mut Json) {
        if let Some(scale) = self.wall_clock_scale {
            // Saturated at the largest think time a decision can hold (an integer
            // `Value` is an i64); the CLI bounds the scale (`WALL_CLOCK_SCALE_MAX`).
            let think_ms =
                ((self.answered_at.elapsed().as_secs_f64() * 1_000.0 * scale).round() as u64).min(THINK_MS_MAX);
            decision["think_ms"] = json!(think_ms);
        }
    }

    /// Hands `command` to the planner and waits for the next observation; `None`
    /// once the session has ended (a budget, the horizon, nothing left to
    /// happen). Notes a drift that took effect since the last one.
    fn exchange(&mut self, command: Command) -> Option<Observation> {
        let to_agent = self.to_agent.as_ref()?;
        let observation = match to_agent.send(command) {
            Ok(()) => self.from_agent.recv().ok(),
            Err(_) => None,
        };
        let Some(observation) = observation else {
            // The session ended before answering (a budget ran out): the
            // transport has it judged before the client is told.
            self.to_agent = None;
            return None;
        };
        self.now_ms = observation.now_ms;
        let in_effect = drift_in_effect(self.catalog, self.now_ms);
        if in_effect != self.drift_seen {
            self.drift_seen = in_effect;
            self.list_changed = true;
        }
        Some(observation)
    }

    /// `say_to_user`: the protocol's `say` with the argument `text`; the result
    /// is the user's reply in words (the next input, which after `say` is the
    /// user's message).
    fn say(&mut self, params: &Map<String, Json>) -> Result<Json, RpcError> {
        let text = match params.get("arguments").and_then(|a| a.get("text")) {
            Some(Json::String(text)) => text.clone(),
            Some(other) => return Err((INVALID_PARAMS, format!("{SAY_TOOL}: `text` must be a string, found {other}"))),
            None => {
                return Err((INVALID_PARAMS, format!("{SAY_TOOL}: missing argument `text` (what to tell the user)")));
            }
        };
        let Some(observation) = self.act(json!({"action": "say", "text": text}))? else {
            return Ok(ended_result());
        };
        let at_s = observation.now_ms as f64 / 1000.0;
        let Input::User(reply) = &observation.input else {
            let _ = writeln!(self.log, "{}[{at_s:>7.1} s] {SAY_TOOL} -> no reply", self.label);
            return Ok(self.result(&observation));
        };
        let _ = writeln!(self.log, "{}[{at_s:>7.1} s] {SAY_TOOL} -> the user says: {}", self.label, reply.text);
        Ok(json!({
            "content": [{"type": "text", "text": reply.text}],
            "structuredContent": {"user_reply": reply.text},
            "isError": false,
            "_meta": {"agentsim/now_ms": observation.now_ms},
        }))
    }

    fn result(&self, observation: &Observation) -> Json {
        let meta = |latency_ms: u64| json!({"agentsim/now_ms": observation.now_ms, "agentsim/latency_ms": latency_ms});
        let Input::Tool(r) = &observation.input else {
            let text = match &observation.input {
                Input::Blocked { reason, .. } => format!("blocked: {reason}"),
                Input::User(m) => format!("the user says: {}", m.text),
                _ => "nothing happened".to_string(),
            };
            return json!({"content": [{"type": "text", "text": text}], "isError": true});
        };
        let (body, is_error) = match &r.reply {
            Reply::Ok(body) => (to_json(body), false),
            failed => (errors::error_body(failed).expect("a failed reply has an error body"), true),
        };
        let mut structured = match body {
            Json::Object(map) => map,
            other => Map::from_iter([("result".to_string(), other)]),
        };
        let mut content = vec![json!({"type": "text", "text": Json::Object(structured.clone()).to_string()})];
        if let Some(reply) = &observation.reply {
            let (text, value) = match reply {
                Some(m) => {
                    (format!("The user replied: {}", m.text), json!({"text": m.text, "content": to_json(&m.content)}))
                }
                None => (format!("The user did not reply within {} s.", self.reply_wait_ms / 1000), Json::Null),
            };
            content.push(json!({"type": "text", "text": text}));
            structured.insert("user_reply".into(), value);
        }
        json!({
            "content": content,
            "structuredContent": structured,
            "isError": is_error,
            "_meta": meta(r.latency_ms),
        })
    }
}

/// A request: its id, method and message.
type Parsed = (Json, String, Map<String, Json>);

/// A request's id, method and message; `Ok(None)` for a notification or a
/// response to us; `Err` with the error response for anything else.
fn parse(line: &[u8]) -> Result<Option<Parsed>, Json> {
    let message: Json =
        serde_json::from_slice(line).map_err(|e| error(Json::Null, PARSE_ERROR, format!("not JSON: {e}")))?;
    let Json::Object(message) = message else {
        return Err(error(Json::Null, INVALID_REQUEST, "expected a JSON-RPC object (batches are not supported)"));
    };
    let id = message.get("id").cloned();
    if let Some(id) = &id
        && !(id.is_string() || id.is_i64() || id.is_u64())
    {
        return Err(error(Json::Null, INVALID_REQUEST, "`id` must be a string or an integer"));
    }
    if message.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        let found = message.get("jsonrpc").map_or_else(|| "none".to_string(), Json::to_string);
        let reason = format!("`jsonrpc` must be \"2.0\" (found {found})");
        return Err(error(id.unwrap_or(Json::Null), INVALID_REQUEST, reason));
    }
    let Some(method) = message.get("method").and_then(Json::as_str).map(str::to_string) else {
        // A response to a request of ours (we send none) is ignored.
        return match id {
            Some(_) if message.contains_key("result") || message.contains_key("error") => Ok(None),
            id => Err(error(id.unwrap_or(Json::Null), INVALID_REQUEST, "missing `method`")),
        };
    };
    // Notifications (initialized, cancelled, ...) need no answer.
    Ok(id.map(|id| (id, method, message)))
}

/// Whether `line` is an `initialize` request (the HTTP transport opens a
/// session for it).
pub fn is_initialize(line: &[u8]) -> bool {
    matches!(parse(line), Ok(Some((_, method, _))) if method == "initialize")
}

/// The error an `initialize` request gets before it opens anything (its
/// `params` not an object), so that the HTTP transport gives no session to
/// an `initialize` it refuses; `None` for one that will be answered.
pub fn initialize_refusal(line: &[u8]) -> Option<Json> {
    let Ok(Some((id, _, message))) = parse(line) else { return None };
    match message.get("params") {
        None | Some(Json::Null) | Some(Json::Object(_)) => None,
        Some(_) => Some(error(id, INVALID_PARAMS, "`params` must be an object")),
    }
}

fn initialize(params: &Map<String, Json>) -> Json {
    let asked = params.get("protocolVersion").and_then(Json::as_str).unwrap_or("");
    let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": true}, "prompts": {"listChanged": false}},
        "serverInfo": {"name": "agentsim", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "A simulated world: get the prompt `task` for the user's request, then use the tools. \
                         say_to_user writes to the user in words and returns the user's reply (send_message, where \
                         the world has it, is the structured form). Close the session when done.",
    })
}

/// A call of a tool the world does not have, answered as the world declares
/// (tau2's `Error: Tool 'think' not found.`): a failed result the model reads,
/// as a refused call's. Nothing reaches the world and no time passes, as in
/// tau2, whose toolkit refuses the name before any tool runs.
fn unknown_tool_result(e: agentsim_engine::ToolError) -> Json {
    let reply = Reply::Error { status: e.status, retry_after_ms: None, message: e.message };
    let body = errors::error_body(&reply).expect("a failed reply has an error body");
    json!({"content": [{"type": "text", "text": body.to_string()}], "structuredContent": body, "isError": true})
}

/// What a call gets once its session has ended.
pub fn ended_result() -> Json {
    json!({
        "content": [{"type": "text", "text": "The simulated session has ended (a budget or the horizon ran out); close the session."}],
        "isError": true,
    })
}
