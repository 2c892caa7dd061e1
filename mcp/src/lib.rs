//! `agentsim mcp`: a scenario's tools served over the Model Context Protocol on
//! stdio, so an unchanged agent (any MCP client) meets a simulated world that fails
//! on schedule (`docs/mcp.md`).
//!
//! A small synchronous loop, no async runtime: JSON-RPC 2.0, one message per line
//! (read by a thread of its own, so that a stop flag is seen while the client is
//! silent). The engine runs its normal loop in a worker thread whose planner is a
//! [`bridge::Bridge`]; each `tools/call` becomes that planner's next action, so
//! latencies, faults, drift, think time and budgets are the seed's, exactly as in
//! `agentsim run`. Nothing reaches the world before `initialize`. When stdin
//! closes (or the stop flag is set: a SIGTERM) the planner finishes and the world
//! judges the session; its decisions are in the trajectory, so it replays without
//! the client. The judged trajectory is handed to [`Ending::judged`] as soon as it
//! exists, before any further answer is written: a session that a budget ended is
//! recorded before the client reads that it has ended.

pub mod errors;

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use agentsim_agents::external::protocol::{ARGS_DEPTH_MAX, from_json_within, to_json, tool_list};
use agentsim_agents::{LayerSpec, PlannerSpec, StackSpec};
use agentsim_engine::{Catalog, Input, Message, Reply, Trajectory};
use agentsim_worlds::Prepared;
use serde_json::{Map, Value as Json, json};

use agentsim_runner::bridge::{self, Bridge, Command, Observation};

/// The protocol versions this server speaks; the first is answered to a client
/// asking for one it does not know.
pub const PROTOCOL_VERSIONS: [&str; 2] = ["2025-06-18", "2025-11-25"];

/// JSON-RPC: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the message is not a request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: bad parameters (an unknown tool or prompt, arguments of the wrong shape).
pub const INVALID_PARAMS: i64 = -32602;
/// A request other than `initialize` or `ping` before `initialize`: the
/// "server not initialized" code of the Language Server Protocol, which MCP's
/// lifecycle follows (the client must initialize first).
pub const NOT_INITIALIZED: i64 = -32002;

/// How often the server looks at [`Ending::stop`] while the client is silent.
const STOP_POLL_MS: u64 = 50;

/// The largest `--wall-clock` scale: one real second is then 11.6 virtual days.
pub const WALL_CLOCK_SCALE_MAX: f64 = 1e6;

/// The `_meta` key of a `tools/call` that carries an idempotency key: a write
/// sent again with the same key is applied once (as the external protocol's
/// `idempotency_key`).
pub const IDEMPOTENCY_KEY_META: &str = "agentsim/idempotency_key";

/// The largest think time a recorded decision holds, in ms (an integer `Value`
/// is an i64): a measured think time is saturated here.
const THINK_MS_MAX: u64 = i64::MAX as u64;

/// The one prompt: the task's opening user message.
pub const PROMPT_NAME: &str = "task";

/// The tool that writes to the user in words (the protocol's `say` action); its
/// result is the user's reply, in words. Listed after the world's tools unless
/// the world has a tool of that name (the world's wins).
pub const SAY_TOOL: &str = "say_to_user";

/// How the server runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The seed.
    pub seed: u64,
    /// Multiplier on fault probabilities.
    pub fault_scale: f64,
    /// Virtual time the bridge waits for the user's reply after a message, in ms.
    pub reply_wait_ms: u64,
    /// Longest request line accepted, in bytes; a longer one is refused unread.
    pub line_bytes_max: usize,
    /// `--wall-clock SCALE`: the real time between the previous answer and a call,
    /// times SCALE, is the agent's think time for it (instead of the model's
    /// think-time draw), so an agent that backs off by sleeping moves the virtual
    /// clock. Recorded in each decision, so the replay is exact.
    pub wall_clock_scale: Option<f64>,
    /// `--layers FILE`: stack layers between the client and the tools (its
    /// planner is not used): a retry layer, say, absorbs a 503 the client then
    /// never sees. Empty: the client calls the tools directly.
    pub layers: Vec<LayerSpec>,
}

impl Options {
    /// Defaults for `seed`: fault scale 1, a minute's wait for replies, 1 MiB lines.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            fault_scale: 1.0,
            reply_wait_ms: 60_000,
            line_bytes_max: 1 << 20,
            wall_clock_scale: None,
            layers: Vec::new(),
        }
    }
}

/// How a session ends besides its stdin closing, and who is told when it is judged.
pub struct Ending<'a> {
    /// Set (by a signal handler, say) to end the session as a closed stdin does.
    pub stop: &'a AtomicBool,
    /// Called once with the judged trajectory, as soon as the world has judged
    /// it and before any further answer is written (to record it, say).
    pub judged: &'a mut dyn FnMut(&Trajectory),
}

/// Serves `prepared` on `input`/`output` until `input` ends, logging to `log`, and
/// returns the judged trajectory (recorded, so it can be written as an incident).
pub fn serve(
    prepared: &Prepared,
    options: &Options,
    input: impl BufRead + Send + 'static,
    output: impl Write,
    log: &mut dyn Write,
) -> io::Result<Trajectory> {
    let never = AtomicBool::new(false);
    serve_until(prepared, options, input, output, log, Ending { stop: &never, judged: &mut |_| {} })
}

/// [`serve`], ending also when `ending.stop` is set, and handing the judged
/// trajectory to `ending.judged` the moment it exists. `input` is read by a
/// thread of its own, left behind (blocked in its read) if the session ends by
/// the flag.
pub fn serve_until(
    prepared: &Prepared,
    options: &Options,
    input: impl BufRead + Send + 'static,
    output: impl Write,
    log: &mut dyn Write,
    ending: Ending<'_>,
) -> io::Result<Trajectory> {
    let config = prepared.scenario.sim_config(true, options.fault_scale);
    let (to_server, from_agent) = mpsc::channel::<Observation>();
    let (to_agent, from_server) = mpsc::channel::<Command>();
    let (to_judge, judged) = mpsc::channel::<Trajectory>();
    let messaging = prepared.catalog.id("send_message");
    let bridge = Bridge::new(to_server, from_server, messaging, options.reply_wait_ms);
    // The client is the planner; the layers, if any, stand between it and the tools.
    let layers = StackSpec { planner: PlannerSpec::Oracle, layers: options.layers.clone() };
    let lines = read_lines(input, options.line_bytes_max);
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let trajectory =
                prepared.run(options.seed, &config, move |_expert, streams| layers.wrap(Box::new(bridge), streams));
            let _ = to_judge.send(trajectory);
        });
        let argument_errors = match &prepared.scenario.world {
            agentsim_worlds::WorldConfig::Scripted(config) => config.argument_errors.clone(),
            _ => agentsim_worlds::scripted::ArgumentErrors::Schema,
        };
        let mut server = Server {
            catalog: &prepared.catalog,
            argument_errors,
            output,
            log,
            to_agent: Some(to_agent),
            from_agent,
            opening: None,
            reply_wait_ms: options.reply_wait_ms,
            now_ms: 0,
            drift_seen: drift_in_effect(&prepared.catalog, 0),
            list_changed: false,
            wall_clock_scale: options.wall_clock_scale,
            answered_at: std::time::Instant::now(),
            initialized: false,
            stop: ending.stop,
            judged,
            on_judged: ending.judged,
            trajectory: None,
        };
        // The opening user message is the agent's first input: wait for it so that
        // `prompts/get` can offer it from the first request on.
        let served = server.first_observation().and_then(|()| server.run(&lines, options.line_bytes_max));
        // The client is gone: the planner finishes and the world judges the session.
        if let Some(to_agent) = server.to_agent.take() {
            let _ = to_agent.send(Command::Finish);
        }
        server.judge();
        let trajectory = server.trajectory.take();
        drop(server);
        let panicked = || io::Error::other("the simulation thread panicked");
        worker.join().map_err(|_| panicked())?;
        served.and_then(|()| trajectory.ok_or_else(panicked))
    })
}

/// What the reader thread hands on: a line, or why reading stopped.
type Received = io::Result<Line>;

/// Reads `input` line by line on a thread of its own (one line ahead at most),
/// so that the server can look at its stop flag while the client is silent.
fn read_lines(mut input: impl BufRead + Send + 'static, bytes_max: usize) -> mpsc::Receiver<Received> {
    let (to_server, lines) = mpsc::sync_channel::<Received>(1);
    std::thread::spawn(move || {
        loop {
            let line = read_line(&mut input, bytes_max);
            let last = matches!(line, Ok(Line::Eof) | Err(_));
            if to_server.send(line).is_err() || last {
                return;
            }
        }
    });
    lines
}

struct Server<'a, W> {
    catalog: &'a Catalog,
    /// How the world answers a tool it does not have: a JSON-RPC error by
    /// default, a tool result where the world says so (tau2's worlds).
    argument_errors: agentsim_worlds::scripted::ArgumentErrors,
    output: W,
    log: &'a mut dyn Write,
    /// `None` once the run has ended (a budget, the horizon): calls are then refused.
    to_agent: Option<mpsc::Sender<Command>>,
    from_agent: mpsc::Receiver<Observation>,
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
    /// See [`Options::wall_clock_scale`].
    wall_clock_scale: Option<f64>,
    /// When the last answer was written (the wall clock, for `--wall-clock` only).
    answered_at: std::time::Instant,
    /// `initialize` was answered: until then only `initialize` and `ping` are.
    initialized: bool,
    /// Ends the session as a closed stdin does.
    stop: &'a AtomicBool,
    /// The judged trajectory, from the simulation thread.
    judged: mpsc::Receiver<Trajectory>,
    /// Told once the session is judged.
    on_judged: &'a mut dyn FnMut(&Trajectory),
    /// The judged trajectory, once it came.
    trajectory: Option<Trajectory>,
}

/// One line read with a bound on its length.
enum Line {
    Eof,
    Text(Vec<u8>),
    TooLong,
}

fn read_line(input: &mut impl BufRead, bytes_max: usize) -> io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if line.is_empty() && !too_long {
                Line::Eof
            } else if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        // Past the limit the rest of the line is skipped, never stored.
        if !too_long {
            if line.len() + chunk.len() > bytes_max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(available.len());
        input.consume(consumed);
        if done.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Text(line) });
        }
    }
}

fn error(id: Json, code: i64, message: impl Into<String>) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

impl<W: Write> Server<'_, W> {
    fn first_observation(&mut self) -> io::Result<()> {
        match self.from_agent.recv() {
            Ok(Observation { input: Input::User(message), .. }) => {
                // The log is diagnostics: a closed stderr must not end the session.
                let _ = writeln!(self.log, "agentsim mcp: the user says: {}", message.text);
                self.opening = Some(message);
            }
            // A world without an opening message: the first call answers this step.
            Ok(_) => {}
            Err(_) => self.ended(),
        }
        Ok(())
    }

    /// The run is over (a budget, the horizon, or the planner finished): no call
    /// reaches the world any more, and the judged trajectory is handed on now,
    /// before any further answer.
    fn ended(&mut self) {
        self.to_agent = None;
        self.judge();
    }

    /// Waits for the judged trajectory and hands it to `on_judged`, once.
    fn judge(&mut self) {
        if self.trajectory.is_none()
            && let Ok(trajectory) = self.judged.recv()
        {
            (self.on_judged)(&trajectory);
            self.trajectory = Some(trajectory);
        }
    }

    /// The next line from the client, or `Eof` once the stop flag is set.
    fn next_line(&mut self, lines: &mpsc::Receiver<Received>) -> io::Result<Line> {
        loop {
            if self.stop.load(Ordering::SeqCst) {
                let _ = writeln!(self.log, "agentsim mcp: interrupted (SIGTERM or SIGINT); ending the session");
                return Ok(Line::Eof);
            }
            match lines.recv_timeout(Duration::from_millis(STOP_POLL_MS)) {
                Ok(line) => return line,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(Line::Eof),
            }
        }
    }

    fn run(&mut self, lines: &mpsc::Receiver<Received>, line_bytes_max: usize) -> io::Result<()> {
        loop {
            let line = match self.next_line(lines) {
                Ok(line) => line,
                Err(e) => {
                    // Like a closed stdin: the session ends, judged and recorded.
                    let _ = writeln!(self.log, "agentsim mcp: cannot read from the client ({e}); ending the session");
                    return Ok(());
                }
            };
            let response = match line {
                Line::Eof => return Ok(()),
                Line::TooLong => {
                    Some(error(Json::Null, INVALID_REQUEST, format!("request line longer than {line_bytes_max} bytes")))
                }
                Line::Text(line) if line.iter().all(u8::is_ascii_whitespace) => None,
                Line::Text(line) => self.handle(&line)?,
            };
            if let Err(e) = self.answer(response) {
                // The client stopped reading (a closed pipe is `EPIPE` here, SIGPIPE
                // being ignored): the session is over, and it is judged and
                // recorded like one whose client closed stdin.
                let _ = writeln!(self.log, "agentsim mcp: the client stopped reading ({e}); ending the session");
                return Ok(());
            }
            self.answered_at = std::time::Instant::now();
        }
    }

    /// Writes a response (if any) and a pending `list_changed` notification.
    fn answer(&mut self, response: Option<Json>) -> io::Result<()> {
        if let Some(response) = response {
            writeln!(self.output, "{response}")?;
        }
        if std::mem::take(&mut self.list_changed) {
            // A drift took effect: the responses the tool list describes changed.
            writeln!(self.output, "{}", json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))?;
        }
        self.output.flush()
    }

    /// Answers one line; `None` for a notification or a client's response.
    fn handle(&mut self, line: &[u8]) -> io::Result<Option<Json>> {
        let message: Json = match serde_json::from_slice(line) {
            Ok(m) => m,
            Err(e) => return Ok(Some(error(Json::Null, PARSE_ERROR, format!("not JSON: {e}")))),
        };
        let Json::Object(message) = message else {
            return Ok(Some(error(
                Json::Null,
                INVALID_REQUEST,
                "expected a JSON-RPC object (batches are not supported)",
            )));
        };
        let id = message.get("id").cloned();
        if let Some(id) = &id
            && !(id.is_string() || id.is_i64() || id.is_u64())
        {
            return Ok(Some(error(Json::Null, INVALID_REQUEST, "`id` must be a string or an integer")));
        }
        if message.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
            let found = message.get("jsonrpc").map_or_else(|| "none".to_string(), Json::to_string);
            let reason = format!("`jsonrpc` must be \"2.0\" (found {found})");
            return Ok(Some(error(id.unwrap_or(Json::Null), INVALID_REQUEST, reason)));
        }
        let Some(method) = message.get("method").and_then(Json::as_str) else {
            // A response to a request of ours (we send none) is ignored.
            return Ok(match id {
                Some(_) if message.contains_key("result") || message.contains_key("error") => None,
                id => Some(error(id.unwrap_or(Json::Null), INVALID_REQUEST, "missing `method`")),
            });
        };
        let Some(id) = id else {
            // Notifications (initialized, cancelled, ...) need no answer.
            return Ok(None);
        };
        let empty = Map::new();
        let params = match message.get("params") {
            None | Some(Json::Null) => &empty,
            Some(Json::Object(p)) => p,
            Some(_) => return Ok(Some(error(id, INVALID_PARAMS, "`params` must be an object"))),
        };
        if !self.initialized && !matches!(method, "initialize" | "ping") {
            // The lifecycle: nothing reaches the world (or the recording) before it.
            let reason = format!("server not initialized: send `initialize` before `{method}`");
            return Ok(Some(error(id, NOT_INITIALIZED, reason)));
        }
        let result = match method {
            "initialize" => {
                self.initialized = true;
                Ok(self.initialize(params))
            }
            "ping" => Ok(json!({})),
            "tools/list" => {
                self.drift_seen = drift_in_effect(self.catalog, self.now_ms);
                Ok(json!({"tools": listed_tools(self.catalog, self.now_ms)}))
            }
            "tools/call" => self.call(params)?,
            "prompts/list" => Ok(json!({"prompts": [{
                "name": PROMPT_NAME,
                "description": "The task: the simulated user's opening message.",
            }]})),
            "prompts/get" => self.prompt(params),
            other => Err((METHOD_NOT_FOUND, format!("method not found: {other}"))),
        };
        Ok(Some(match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => error(id, code, message),
        }))
    }

    fn initialize(&mut self, params: &Map<String, Json>) -> Json {
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

    fn prompt(&self, params: &Map<String, Json>) -> Result<Json, (i64, String)> {
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
    fn call(&mut self, params: &Map<String, Json>) -> io::Result<Result<Json, (i64, String)>> {
        let Some(name) = params.get("name").and_then(Json::as_str) else {
            return Ok(Err((INVALID_PARAMS, "`name` must be a string".into())));
        };
        if name == SAY_TOOL && self.catalog.id(name).is_none() {
            return self.say(params);
        }
        if self.catalog.id(name).is_none() {
            return Ok(match self.argument_errors.unknown_tool(name) {
                Some(e) => Ok(unknown_tool_result(e)),
                None => Err((INVALID_PARAMS, format!("unknown tool `{name}`"))),
            });
        }
        let args = match params.get("arguments") {
            None | Some(Json::Null) => Json::Object(Map::new()),
            Some(a @ Json::Object(_)) => a.clone(),
            Some(_) => return Ok(Err((INVALID_PARAMS, "`arguments` must be an object".into()))),
        };
        if let Err(e) = from_json_within(&args, "arguments", ARGS_DEPTH_MAX) {
            return Ok(Err((INVALID_PARAMS, e.to_string())));
        }
        if self.to_agent.is_none() {
            return Ok(Ok(ended_result()));
        }
        let cx = agentsim_engine::AgentCx::new(0, self.catalog);
        let mut decision = json!({"action": "call", "tool": name, "args": args});
        match params.get("_meta").and_then(|meta| meta.get(IDEMPOTENCY_KEY_META)) {
            None | Some(Json::Null) => {}
            Some(Json::String(key)) => decision["idempotency_key"] = json!(key),
            Some(_) => {
                return Ok(Err((INVALID_PARAMS, format!("`_meta.{IDEMPOTENCY_KEY_META}` must be a string"))));
            }
        }
        self.add_think_ms(&mut decision);
        let (action, decision) = match bridge::decide(decision, &cx) {
            Ok(decided) => decided,
            Err(e) => return Ok(Err((INVALID_PARAMS, e.to_string()))),
        };
        let Some(observation) = self.exchange(Command::Act(action, decision)) else {
            return Ok(Ok(ended_result()));
        };
        let result = self.result(&observation);
        let status = if result["isError"] == Json::Bool(true) { "error" } else { "ok" };
        let _ = writeln!(self.log, "agentsim mcp: [{:>7.1} s] {name} -> {status}", observation.now_ms as f64 / 1000.0);
        Ok(Ok(result))
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
    /// once the run has ended (a budget, the horizon, nothing left to happen).
    /// Notes a drift that took effect since the last one.
    fn exchange(&mut self, command: Command) -> Option<Observation> {
        let to_agent = self.to_agent.as_ref()?;
        if to_agent.send(command).is_err() {
            self.ended();
            return None;
        }
        let Ok(observation) = self.from_agent.recv() else {
            // The run ended before answering (a budget ran out): judged now, and
            // recorded before the client is told.
            self.ended();
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
    fn say(&mut self, params: &Map<String, Json>) -> io::Result<Result<Json, (i64, String)>> {
        let text = match params.get("arguments").and_then(|a| a.get("text")) {
            Some(Json::String(text)) => text.clone(),
            Some(other) => {
                return Ok(Err((INVALID_PARAMS, format!("{SAY_TOOL}: `text` must be a string, found {other}"))));
            }
            None => {
                return Ok(Err((
                    INVALID_PARAMS,
                    format!("{SAY_TOOL}: missing argument `text` (what to tell the user)"),
                )));
            }
        };
        if self.to_agent.is_none() {
            return Ok(Ok(ended_result()));
        }
        let mut decision = json!({"action": "say", "text": text});
        self.add_think_ms(&mut decision);
        let cx = agentsim_engine::AgentCx::new(0, self.catalog);
        let (action, decision) = match bridge::decide(decision, &cx) {
            Ok(decided) => decided,
            Err(e) => return Ok(Err((INVALID_PARAMS, e.to_string()))),
        };
        let Some(observation) = self.exchange(Command::Act(action, decision)) else {
            return Ok(Ok(ended_result()));
        };
        let at_s = observation.now_ms as f64 / 1000.0;
        let Input::User(reply) = &observation.input else {
            let _ = writeln!(self.log, "agentsim mcp: [{at_s:>7.1} s] {SAY_TOOL} -> no reply");
            return Ok(Ok(self.result(&observation)));
        };
        let _ = writeln!(self.log, "agentsim mcp: [{at_s:>7.1} s] {SAY_TOOL} -> the user says: {}", reply.text);
        Ok(Ok(json!({
            "content": [{"type": "text", "text": reply.text}],
            "structuredContent": {"user_reply": reply.text},
            "isError": false,
            "_meta": {"agentsim/now_ms": observation.now_ms},
        })))
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

/// A call of a tool the world does not have, answered as the world declares
/// (tau2's `Error: Tool 'think' not found.`): a failed result the model reads,
/// as a refused call's. Nothing reaches the world and no time passes, as in
/// tau2, whose toolkit refuses the name before any tool runs.
fn unknown_tool_result(e: agentsim_engine::ToolError) -> Json {
    let reply = Reply::Error { status: e.status, retry_after_ms: None, message: e.message };
    let body = errors::error_body(&reply).expect("a failed reply has an error body");
    json!({"content": [{"type": "text", "text": body.to_string()}], "structuredContent": body, "isError": true})
}

fn ended_result() -> Json {
    json!({
        "content": [{"type": "text", "text": "The simulated session has ended (a budget or the horizon ran out); close the session."}],
        "isError": true,
    })
}

/// What `tools/list` answers at `now_ms`: the world's [`tools`], then
/// [`SAY_TOOL`] (unless the world has a tool of that name).
pub fn listed_tools(catalog: &Catalog, now_ms: u64) -> Json {
    let mut listed = tools(catalog, now_ms);
    if let (Json::Array(list), None) = (&mut listed, catalog.id(SAY_TOOL)) {
        list.push(say_tool());
    }
    listed
}

/// The [`SAY_TOOL`] as `tools/list` shows it.
fn say_tool() -> Json {
    json!({
        "name": SAY_TOOL,
        "description": "Write to the user in words: a question, a proposal to confirm, or what was done. \
                        Returns the user's reply, in words.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "what to tell the user"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
    })
}

/// How many drift entries, over all tools, are in effect at `at_ms`.
pub fn drift_in_effect(catalog: &Catalog, at_ms: u64) -> usize {
    catalog.specs().iter().map(|s| s.config.drift.iter().filter(|d| d.at_ms <= at_ms).count()).sum()
}

/// The scenario's tools in MCP form at virtual time `now_ms`: the argument schema
/// of the external agents' tool list, annotations from the tool's kind (and its
/// own, which take precedence), and the
/// description ending with the response fields as they are now (after drift), so
/// a drift is a change of the tool list.
pub fn tools(catalog: &Catalog, now_ms: u64) -> Json {
    let Json::Array(list) = tool_list(catalog) else { return Json::Array(Vec::new()) };
    let tools = list.into_iter().zip(catalog.specs()).map(|(tool, spec)| {
        let read = tool["kind"] == "read";
        let id = catalog.id(&spec.def.name).expect("the tool is in its own catalog");
        let fields: Vec<&str> =
            spec.def.response.iter().filter_map(|f| catalog.field_name_at(id, &f.name, now_ms)).collect();
        let description = match tool["description"].as_str() {
            Some(text) if !fields.is_empty() => format!("{text} Returns: {}.", fields.join(", ")),
            Some(text) => text.to_string(),
            None => String::new(),
        };
        let mut annotations = json!({
            "readOnlyHint": read,
            "destructiveHint": !read,
            "idempotentHint": read,
            "openWorldHint": false,
        });
        // A scripted tool's own annotations (`title`, hints) take precedence.
        if let (Json::Object(merged), Some(Json::Object(own))) = (&mut annotations, tool.get("annotations")) {
            merged.extend(own.clone());
        }
        json!({
            "name": tool["name"],
            "description": description,
            "inputSchema": tool["parameters"],
            "annotations": annotations,
        })
    });
    Json::Array(tools.collect())
}
