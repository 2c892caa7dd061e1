//! The bridge: an [`Agent`] whose decisions come from the MCP client.
//!
//! The engine runs its normal loop with this agent as the planner. Each step hands
//! the input on through a [`Relay`] and gets back what to do: the MCP server runs
//! the loop in a worker thread and relays over channels (the client's next
//! `tools/call`, or the end of stdin); a suspendable episode
//! (`crate::episode`) suspends the loop inside the step instead. Every answer is
//! recorded as an `("external", "decision", ...)` note in the format the replayed
//! external agent reads, and each step reads its input and takes one model turn as
//! the live external agent does, so a recorded session replays exactly without the
//! client (`agents/src/external/replayed.rs`).

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};

use agentsim_agents::external::{ExternalError, protocol, record_failure};
use agentsim_engine::{Action, Agent, AgentCx, Finish, Input, Message, Reply, ToolId, Value};
use serde_json::{Value as Json, json};

/// What the bridge tells the server: an input the client should see, then it waits
/// for a [`Command`].
#[derive(Debug)]
pub struct Observation {
    /// Virtual time the input reached the agent.
    pub now_ms: u64,
    /// The input (for a message sent to the user: the tool result of the send).
    pub input: Input,
    /// Set when the bridge waited for the user after a message: the reply, or `None`
    /// when none came within the wait.
    pub reply: Option<Option<Message>>,
    /// The input as the external protocol's observation line (the Python module's
    /// bridge renders it on the simulation's thread; the MCP server does not).
    pub line: Option<String>,
}

/// What the server tells the bridge.
#[derive(Debug)]
pub enum Command {
    /// Carry out this action; the value is the decision to record.
    Act(Action, Value),
    /// The client is gone: finish (done).
    Finish,
    /// No client ever came for this session: finish as absent (judged
    /// `absent`, outside the agent's rates).
    Absent,
    /// The agent failed (an exception, an action it could not express): the
    /// trajectory ends as `agent_error` with this reason, as an external agent's;
    /// `stderr` is its diagnostic (a traceback), kept beside the trajectory and
    /// out of the digest, as an external agent's stderr.
    Fail {
        /// Why (its kind names the failure's note; its reason is the
        /// trajectory's end reason).
        error: ExternalError,
        /// The diagnostic.
        stderr: String,
    },
}

/// How a bridge hands an observation on and learns what to do.
pub trait Relay: Send {
    /// Hands `observation` on and waits for the command; `None` when no one will
    /// answer any more (the bridge then finishes).
    fn exchange(&mut self, observation: Observation) -> Option<Command>;
}

/// A relay over two channels, to and from a server thread.
struct Channels {
    to_server: Sender<Observation>,
    from_server: Receiver<Command>,
}

impl Relay for Channels {
    fn exchange(&mut self, observation: Observation) -> Option<Command> {
        self.to_server.send(observation).ok()?;
        self.from_server.recv().ok()
    }
}

/// The agent that relays the engine's inputs to the MCP client and its calls back.
pub struct Bridge {
    relay: Box<dyn Relay>,
    /// The world's messaging tool: after a successful call the bridge waits for the
    /// user's reply before the client sees the result.
    messaging: Option<ToolId>,
    reply_wait_ms: u64,
    /// A messaging result held while the bridge waits for the reply.
    held: Option<Input>,
    /// Render each input as the external protocol's observation line.
    render: bool,
    /// The observations rendered so far (the protocol's `seq`).
    seq: u64,
    /// The tool list (JSON text) the first rendered observation carries; `None`:
    /// none (the caller adds it).
    tools: Option<Arc<str>>,
    /// Set once a [`Command::Fail`] ended the run: any later step (a layer that
    /// asks the planner again) fails at once, as the external agent does.
    failed: bool,
    /// The session this bridge's agent serves, in a run of many sessions: its
    /// rendered observations carry it (`"session": N`).
    session: Option<agentsim_engine::SessionId>,
}

impl Bridge {
    /// A bridge over the two channels; `messaging` is the tool whose results wait up
    /// to `reply_wait_ms` of virtual time for the user's answer.
    pub fn new(
        to_server: Sender<Observation>,
        from_server: Receiver<Command>,
        messaging: Option<ToolId>,
        reply_wait_ms: u64,
    ) -> Self {
        Self::relayed(Box::new(Channels { to_server, from_server }), messaging, reply_wait_ms)
    }

    /// A bridge over any relay (the MCP server's HTTP sessions wait for their
    /// client with a deadline), with [`Bridge::new`]'s messaging wait.
    pub fn relayed(relay: Box<dyn Relay>, messaging: Option<ToolId>, reply_wait_ms: u64) -> Self {
        Self {
            relay,
            messaging,
            reply_wait_ms,
            held: None,
            render: false,
            seq: 0,
            tools: None,
            failed: false,
            session: None,
        }
    }

    /// A bridge that hands every input on at once (no messaging wait), rendered as
    /// the external protocol's observation line: the planner of a suspendable
    /// episode (the Python module, persistent external agents). Its steps are the
    /// live external agent's (one read, one turn, one decision note per input), so
    /// it meets the same world as `--agent cmd:` and replays alike. The first
    /// observation carries `tools` (the tool list as JSON text), if given.
    pub fn protocol(relay: Box<dyn Relay>, tools: Option<Arc<str>>) -> Self {
        Self {
            relay,
            messaging: None,
            reply_wait_ms: 0,
            held: None,
            render: true,
            seq: 0,
            tools,
            failed: false,
            session: None,
        }
    }

    /// The bridge of session `session`'s agent in a run of many sessions: each
    /// rendered observation says which session it belongs to, so one caller
    /// can serve every session's agent (the Python module's `evaluate`).
    pub fn in_session(mut self, session: agentsim_engine::SessionId) -> Self {
        self.session = Some(session);
        self
    }
}

/// Turns an action in the external protocol's JSON into the action and the decision
/// to record, exactly as the replayed agent will parse it again; an error is the
/// protocol's (its kind and the field at fault).
pub fn decide(mut action: Json, cx: &AgentCx<'_>) -> Result<(Action, Value), protocol::ProtocolError> {
    if let Json::Object(map) = &mut action {
        map.insert("protocol".into(), Json::String(protocol::PROTOCOL.into()));
    }
    protocol::parse_action(action.to_string().as_bytes(), cx.catalog)
}

impl Agent for Bridge {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        if self.failed {
            return Action::Finish(Finish::Failed { reason: "the agent already failed".into() });
        }
        // Like the live external agent (and so like its replay): every input is read
        // and every answer is one model turn.
        cx.read(&input);
        cx.begin_turn();
        let observation = match (self.held.take(), input) {
            (Some(held), Input::User(message)) => {
                Observation { now_ms: cx.now_ms, input: held, reply: Some(Some(message)), line: None }
            }
            (Some(held), Input::Wake) => Observation { now_ms: cx.now_ms, input: held, reply: Some(None), line: None },
            (_, Input::Tool(result))
                if Some(result.call.tool) == self.messaging && matches!(result.reply, Reply::Ok(_)) =>
            {
                // The user answers a message some virtual seconds later: wait for it
                // (or the timer) so the client gets the answer with the result.
                self.held = Some(Input::Tool(result));
                let wake_at_ms = cx.now_ms.saturating_add(self.reply_wait_ms);
                return match decide(json!({"action": "idle", "wake_at_ms": wake_at_ms}), cx) {
                    Ok((action, decision)) => {
                        cx.note("external", "decision", decision);
                        action
                    }
                    Err(e) => Action::Finish(Finish::Failed { reason: e.to_string() }),
                };
            }
            (_, input) => {
                let line = self.render.then(|| {
                    self.seq += 1;
                    let mut line = protocol::observation_without_tools(self.seq, &input, cx);
                    if let (1, Some(tools)) = (self.seq, &self.tools) {
                        protocol::add_tools(&mut line, tools);
                    }
                    if let Some(session) = self.session {
                        protocol::add_session(&mut line, session);
                    }
                    line
                });
                Observation { now_ms: cx.now_ms, input, reply: None, line }
            }
        };
        let command = self.relay.exchange(observation).unwrap_or(Command::Finish);
        let decided = match command {
            Command::Act(action, decision) => Ok((action, decision)),
            Command::Finish => decide(json!({"action": "finish", "outcome": "done"}), cx),
            Command::Absent => {
                let absent = json!({"protocol": protocol::PROTOCOL, "action": "finish", "outcome": "absent"});
                protocol::parse_recorded_action(absent.to_string().as_bytes(), cx.catalog)
            }
            Command::Fail { error, stderr } => {
                self.failed = true;
                // What the external agent (and so its replay) does on a failure.
                return record_failure(cx, error.kind.note_what(), error.reason, stderr);
            }
        };
        match decided {
            Ok((action, decision)) => {
                if let Some(think_ms) = protocol::reported_think_ms(&decision) {
                    cx.set_think_ms(think_ms);
                }
                cx.note("external", "decision", decision);
                action
            }
            Err(e) => Action::Finish(Finish::Failed { reason: e.to_string() }),
        }
    }
}
