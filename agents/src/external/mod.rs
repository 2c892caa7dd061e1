//! External agents: a planner in another process, in any language, speaking
//! newline-delimited JSON over stdin and stdout (`docs/protocol.md`).
//!
//! The process is started at the agent's first step, one per trajectory (a sweep
//! builds one agent per seed, so processes run in parallel). An agent that
//! greets with a hello line serves many episodes in one process: a sweep then
//! multiplexes episodes over a few of them (`agentsim::persistent`); here such
//! an agent serves its one trajectory. Each step sends one
//! observation and reads one action; each step is one model turn (it reads the
//! observation and costs tokens like any planner). Every decision is recorded in
//! the trajectory as `("external", "decision", <the action>)`, so a run can be
//! replayed later without the process.
//!
//! A crash, a hang past `turn_limit_ms` of wall-clock time, a line that is not a
//! valid action, or a line longer than `line_bytes_max` ends the trajectory with
//! `Finish::Failed` (outcome `agent_error`) and the reason, recorded as the note
//! `("external", "error.<kind>", reason)` ([`ErrorKind`]); the process group is
//! killed and the process reaped, and the tail of its stderr is kept beside the
//! trajectory as an `("external", "stderr", text)` diagnostic (`AgentCx::diagnose`:
//! in the timeline and incidents, not in the digest, since an agent may print a
//! pid or a time there). The sweep goes on with the next seed.

pub mod error;
mod process;
pub mod protocol;
mod protocol_error;
pub mod replayed;

use agentsim_engine::{Action, Agent, AgentCx, Finish, Input, Value};
use serde::{Deserialize, Serialize};

pub use error::{ErrorKind, ExternalError};
pub use process::{
    CLOSED, CommandError, Line, Process, Tagged, check_command, interrupt, interrupted, kill_all, starts, timeout,
};

/// How an external agent is run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalConfig {
    /// The command, split on whitespace and run without a shell.
    pub command: String,
    /// Wall-clock limit per answer (default 10 s).
    #[serde(default = "default_turn_limit_ms")]
    pub turn_limit_ms: u64,
    /// Longest accepted action line, in bytes (default 1 MiB).
    #[serde(default = "default_line_bytes_max")]
    pub line_bytes_max: usize,
    /// Stderr kept, in bytes: the tail (default 4 KiB).
    #[serde(default = "default_stderr_bytes_max")]
    pub stderr_bytes_max: usize,
}

fn default_turn_limit_ms() -> u64 {
    10_000
}
fn default_line_bytes_max() -> usize {
    1 << 20
}
fn default_stderr_bytes_max() -> usize {
    4 << 10
}

impl ExternalConfig {
    /// A config for `command` with the default limits.
    pub fn new(command: &str) -> Self {
        Self {
            command: command.to_string(),
            turn_limit_ms: default_turn_limit_ms(),
            line_bytes_max: default_line_bytes_max(),
            stderr_bytes_max: default_stderr_bytes_max(),
        }
    }
}

/// A planner that is an external process.
pub struct ExternalAgent {
    config: ExternalConfig,
    process: Option<Process>,
    seq: u64,
    failed: bool,
}

impl ExternalAgent {
    /// An agent that starts `config.command` at its first step.
    pub fn new(config: ExternalConfig) -> Self {
        Self { config, process: None, seq: 0, failed: false }
    }

    fn exchange(&mut self, input: &Input, cx: &AgentCx<'_>) -> Result<(Action, Value), ExternalError> {
        let config = &self.config;
        let process = match &mut self.process {
            Some(process) => process,
            none => none.insert(Process::spawn(&config.command, config.line_bytes_max, config.stderr_bytes_max)?),
        };
        self.seq += 1;
        process.send(&protocol::observation(self.seq, input, cx))?;
        let mut line = process.receive(self.config.turn_limit_ms)?;
        if self.seq == 1 {
            // A persistent agent greets first; run as one process per trajectory
            // (`agentsim run`, a failure's recording) it serves this one episode.
            if let Some(hello) = protocol::parse_hello(&line) {
                hello.map_err(|reason| ExternalError::new(ErrorKind::BadHello, reason.to_string()))?;
                line = process.receive(self.config.turn_limit_ms)?;
            }
        }
        answer(&line, self.seq, cx)
    }
}

/// Reads `line`, the answer to observation `seq`, as an action and the decision to
/// record; a failure says whether the line was not JSON or not a valid action.
pub fn answer(line: &[u8], seq: u64, cx: &AgentCx<'_>) -> Result<(Action, Value), ExternalError> {
    let failed = |kind, e: String| ExternalError::new(kind, format!("answer to observation {seq}: {e}"));
    let json: serde_json::Value =
        serde_json::from_slice(line).map_err(|e| failed(ErrorKind::NotJson, format!("not JSON: {e}")))?;
    protocol::action_of(&json, cx.catalog).map_err(|e| failed(ErrorKind::InvalidAction, e.to_string()))
}

/// Records a failure as the note `("external", what, reason)` (`what` is
/// `error.<kind>`, or a recording's kindless `error`), with the tail of the
/// agent's stderr as a diagnostic (out of the digest), and ends the trajectory
/// with the reason. The live agent, its replay and the protocol bridge all end so.
pub fn record_failure(cx: &mut AgentCx<'_>, what: &'static str, reason: String, stderr: String) -> Action {
    assert!(ErrorKind::of_note_what(what).is_some(), "`{what}` names an external failure");
    cx.note("external", what, Value::str(reason.clone()));
    cx.diagnose("external", "stderr", Value::Str(stderr));
    Action::Finish(Finish::Failed { reason })
}

impl Agent for ExternalAgent {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        if self.failed {
            return Action::Finish(Finish::Failed { reason: "the agent already failed".into() });
        }
        cx.read(&input);
        cx.begin_turn();
        match self.exchange(&input, cx) {
            Ok((action, decision)) => {
                if let Some(think_ms) = protocol::reported_think_ms(&decision) {
                    cx.set_think_ms(think_ms);
                }
                cx.note("external", "decision", decision);
                if matches!(action, Action::Finish(_))
                    && let Some(mut process) = self.process.take()
                {
                    process.stop();
                }
                action
            }
            Err(error) => {
                self.failed = true;
                let stderr = self.process.take().map(|mut p| p.stop()).unwrap_or_default();
                record_failure(cx, error.kind.note_what(), error.reason, stderr)
            }
        }
    }
}
