//! Tool calls and what comes back from them.

use serde::Serialize;

use crate::time::TimeMs;
use crate::tool::ToolId;
use crate::value::Value;

/// A request to a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// Which tool.
    pub tool: ToolId,
    /// Arguments, as a map.
    pub args: Value,
    /// An idempotency key: a write sent twice with the same key is applied once.
    pub idempotency_key: Option<String>,
}

impl ToolCall {
    /// A call without an idempotency key.
    pub fn new(tool: ToolId, args: Value) -> Self {
        Self { tool, args, idempotency_key: None }
    }

    /// Whether two calls ask for the same thing (tool and arguments; the key is
    /// transport, not content).
    pub fn same_request(&self, other: &ToolCall) -> bool {
        self.tool == other.tool && self.args == other.args
    }
}

/// What the caller receives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Reply {
    /// A 200 with a body (which may still be malformed against the schema).
    Ok(Value),
    /// An error status.
    Error {
        /// HTTP status.
        status: u16,
        /// `Retry-After`, in milliseconds, when the server sent one.
        retry_after_ms: Option<TimeMs>,
        /// The error message.
        message: String,
    },
    /// No answer before the client's timeout.
    Timeout,
    /// A body that does not parse (truncated or not the format at all).
    Garbled(String),
}

impl Reply {
    /// True for a 200 with a body.
    pub fn is_ok(&self) -> bool {
        matches!(self, Reply::Ok(_))
    }

    /// The HTTP-like status: 200, the error status, 504 for a timeout, 200 for a
    /// garbled body (the transport succeeded).
    pub fn status(&self) -> u16 {
        match self {
            Reply::Ok(_) | Reply::Garbled(_) => 200,
            Reply::Error { status, .. } => *status,
            Reply::Timeout => 504,
        }
    }

    /// Whether a retry may succeed: 408, 429, 5xx and timeouts.
    pub fn is_transient(&self) -> bool {
        match self {
            Reply::Error { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            Reply::Timeout => true,
            Reply::Ok(_) | Reply::Garbled(_) => false,
        }
    }

    /// The `Retry-After` hint, if any.
    pub fn retry_after_ms(&self) -> Option<TimeMs> {
        match self {
            Reply::Error { retry_after_ms, .. } => *retry_after_ms,
            _ => None,
        }
    }

    /// A rough token count of the reply as the model would read it.
    pub fn token_estimate(&self) -> u32 {
        match self {
            Reply::Ok(v) => v.token_estimate(),
            Reply::Error { message, .. } => 8 + (message.len() / 4) as u32,
            Reply::Timeout => 8,
            Reply::Garbled(text) => (text.len() / 4) as u32 + 1,
        }
    }
}

/// A call together with its reply, as delivered to the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolResult {
    /// The call as it was sent.
    pub call: ToolCall,
    /// What came back.
    pub reply: Reply,
    /// Virtual time the call took.
    pub latency_ms: TimeMs,
    /// Set when a stack layer answered from a cache instead of the tool: how old
    /// the cached answer is. `None` means the reply came from the tool just now. A
    /// planner that passes on cached data should flag it as possibly stale.
    pub cache_age_ms: Option<TimeMs>,
}

/// A world's refusal of a call: a status and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    /// HTTP status (404 not found, 400 bad request, 409 conflict, ...).
    pub status: u16,
    /// What went wrong.
    pub message: String,
}

impl ToolError {
    /// A 400 with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { status: 400, message: message.into() }
    }

    /// A 404 with a message.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self { status: 404, message: message.into() }
    }
}
