//! `agentsim mcp`: a scenario's tools served over the Model Context Protocol on
//! stdio, so an unchanged agent (any MCP client) meets a simulated world that fails
//! on schedule (`docs/mcp.md`). A run of many sessions is served over HTTP
//! instead, a client per session ([`streamable`]); both transports share one
//! client's handling ([`client`]).
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

pub mod client;
pub mod errors;
pub mod http;
pub mod streamable;

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use agentsim_agents::external::protocol::tool_list;
use agentsim_agents::{LayerSpec, PlannerSpec, StackSpec};
use agentsim_engine::{Catalog, Trajectory};
use agentsim_worlds::Prepared;
use serde_json::{Value as Json, json};

use agentsim_runner::bridge::{Bridge, Command, Observation};
use client::Client;

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
pub(crate) const THINK_MS_MAX: u64 = i64::MAX as u64;

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
        let channels = client::Channels { to_agent, from_agent };
        let mut server = Server {
            client: Client::new(prepared, options, channels, log, "agentsim mcp: ".into()),
            output,
            stop: ending.stop,
            judged,
            on_judged: ending.judged,
            trajectory: None,
        };
        // The opening user message is the agent's first input: wait for it so that
        // `prompts/get` can offer it from the first request on.
        server.client.start();
        server.judge_if_ended();
        let served = server.run(&lines, options.line_bytes_max);
        // The client is gone: the planner finishes and the world judges the session.
        server.client.finish();
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

/// The stdio transport: one client, one line per message.
struct Server<'a, 'l, W> {
    client: Client<'a, &'l mut dyn Write>,
    output: W,
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

impl<W: Write> Server<'_, '_, W> {
    /// The run is over (a budget, the horizon, or the planner finished): the
    /// judged trajectory is handed on now, before any further answer.
    fn judge_if_ended(&mut self) {
        if self.client.has_ended() {
            self.judge();
        }
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
                let _ =
                    writeln!(self.client.log(), "agentsim mcp: interrupted (SIGTERM or SIGINT); ending the session");
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
                    let _ = writeln!(
                        self.client.log(),
                        "agentsim mcp: cannot read from the client ({e}); ending the session"
                    );
                    return Ok(());
                }
            };
            let response = match line {
                Line::Eof => return Ok(()),
                Line::TooLong => Some(client::error(
                    Json::Null,
                    INVALID_REQUEST,
                    format!("request line longer than {line_bytes_max} bytes"),
                )),
                Line::Text(line) if line.iter().all(u8::is_ascii_whitespace) => None,
                Line::Text(line) => self.client.handle(&line),
            };
            self.judge_if_ended();
            if let Err(e) = self.answer(response) {
                // The client stopped reading (a closed pipe is `EPIPE` here, SIGPIPE
                // being ignored): the session is over, and it is judged and
                // recorded like one whose client closed stdin.
                let _ =
                    writeln!(self.client.log(), "agentsim mcp: the client stopped reading ({e}); ending the session");
                return Ok(());
            }
            self.client.answered();
        }
    }

    /// Writes a response (if any) and a pending `list_changed` notification.
    fn answer(&mut self, response: Option<Json>) -> io::Result<()> {
        if let Some(response) = response {
            writeln!(self.output, "{response}")?;
        }
        if let Some(notification) = self.client.take_list_changed() {
            // A drift took effect: the responses the tool list describes changed.
            writeln!(self.output, "{notification}")?;
        }
        self.output.flush()
    }
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
