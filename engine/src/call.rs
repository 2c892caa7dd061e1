//! Tool calls and what comes back from them.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::Serialize;

use crate::time::TimeMs;
use crate::tool::{Catalog, ToolId};
use crate::value::Value;

/// A request to a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// Which tool.
    pub tool: ToolId,
    /// Arguments, as a map.
    pub args: Args,
    /// An idempotency key: a write sent twice with the same key is applied once.
    pub idempotency_key: Option<String>,
}

/// A call's arguments: a [`Value`] that the copies of one call share. A call
/// is copied as it travels (a retry layer keeps the one it sent to send it
/// again, a planner keeps its last to reissue it, the loop remembers the last
/// that failed), and a copy costs a count, not a map. It reads as the value
/// (`Deref`); writing through it (`DerefMut`) copies the map first when another
/// call shares it, so no copy ever sees another's change. It compares,
/// hashes, prints and serialises as the value it holds.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Args(Arc<Value>);

impl Args {
    /// The arguments as a value of their own (copied only when shared).
    pub fn into_value(self) -> Value {
        Arc::unwrap_or_clone(self.0)
    }
}

impl From<Value> for Args {
    fn from(value: Value) -> Self {
        Args(Arc::new(value))
    }
}

impl Deref for Args {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl DerefMut for Args {
    fn deref_mut(&mut self) -> &mut Value {
        Arc::make_mut(&mut self.0)
    }
}

impl fmt::Debug for Args {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for Args {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl ToolCall {
    /// A call without an idempotency key, of a value of its own or of
    /// [`Args`] shared with whoever else holds them.
    pub fn new(tool: ToolId, args: impl Into<Args>) -> Self {
        Self { tool, args: args.into(), idempotency_key: None }
    }

    /// Whether two calls ask for the same thing (tool and arguments; the key is
    /// transport, not content).
    pub fn same_request(&self, other: &ToolCall) -> bool {
        self.tool == other.tool && self.args == other.args
    }
}

/// The body of a 200: a [`Value`], with what the engine's check of it against
/// its tool's schema found. Every layer of a stack asks whether a result
/// conforms (the retry layer, the guardrail, the loop detector, the planner:
/// about five checks a result); the answer depends only on the catalog, the
/// tool, the span of the tool's drift schedule the time falls in, and the
/// value, so the engine keeps it with the value when it serves the call, and
/// [`Body::conforms`] reads it while those match. Writing
/// through the body (`DerefMut`) forgets it. It reads as the value (`Deref`),
/// and compares, hashes, prints and serialises as the value.
#[derive(Clone, Default)]
pub struct Body {
    value: Value,
    checked: Option<Checked>,
}

/// The engine's conformance check of a [`Body`]: against which catalog (its
/// unique id), tool and span of the tool's drift schedule, and the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checked {
    catalog: u64,
    tool: ToolId,
    schema_span: u32,
    conforms: bool,
}

impl Body {
    /// The body as a value of its own.
    pub fn into_value(self) -> Value {
        self.value
    }

    /// Whether the body matches tool `tool`'s schema in `catalog` as of
    /// `at_ms` ([`Catalog::conforms`]): the engine's answer kept with the body
    /// when it served the call, while it holds (the same catalog, tool and span
    /// of the tool's drift schedule, the body unchanged); checked again
    /// otherwise.
    pub fn conforms(&self, catalog: &Catalog, tool: ToolId, at_ms: TimeMs) -> bool {
        match self.checked(catalog.unique_id(), tool, catalog.schema_span(tool, at_ms)) {
            Some(conforms) => {
                debug_assert_eq!(conforms, catalog.conforms(tool, at_ms, self), "a kept check still holds");
                conforms
            }
            None => catalog.conforms(tool, at_ms, self),
        }
    }

    /// [`Catalog::conforms`], the answer kept with the body for
    /// [`Body::conforms`].
    pub(crate) fn check_and_keep(&mut self, catalog: &Catalog, tool: ToolId, at_ms: TimeMs) -> bool {
        let conforms = catalog.conforms(tool, at_ms, self);
        let schema_span = catalog.schema_span(tool, at_ms);
        self.checked = Some(Checked { catalog: catalog.unique_id(), tool, schema_span, conforms });
        conforms
    }

    /// The answer of the check kept, if it was of this catalog, tool and span.
    fn checked(&self, catalog: u64, tool: ToolId, schema_span: u32) -> Option<bool> {
        self.checked.filter(|c| (c.catalog, c.tool, c.schema_span) == (catalog, tool, schema_span)).map(|c| c.conforms)
    }
}

impl From<Value> for Body {
    fn from(value: Value) -> Self {
        Body { value, checked: None }
    }
}

impl Deref for Body {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.value
    }
}

impl DerefMut for Body {
    fn deref_mut(&mut self) -> &mut Value {
        // The value may change: what was found of it no longer holds.
        self.checked = None;
        &mut self.value
    }
}

impl PartialEq for Body {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for Body {}

impl std::hash::Hash for Body {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value.hash(state);
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.value, f)
    }
}

impl Serialize for Body {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

/// What the caller receives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Reply {
    /// A 200 with a body (which may still be malformed against the schema).
    Ok(Body),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_are_shared_until_written_and_read_print_and_encode_as_their_value() {
        let value = Value::map([("order_id", Value::str("A1")), ("n", Value::Int(-7))]);
        let sent = ToolCall::new(ToolId(2), value.clone());
        let mut kept = sent.clone();
        assert!(Arc::ptr_eq(&sent.args.0, &kept.args.0), "a copy of a call shares its arguments");
        kept.args.set("n", Value::Int(8));
        assert_eq!(*sent.args, value, "writing to a copy leaves the call it was copied from alone");
        assert_eq!(kept.args.get("n"), Some(&Value::Int(8)));
        assert!(!sent.same_request(&kept));
        assert_eq!(format!("{:?}", sent.args), format!("{value:?}"));
        assert_eq!(postcard::to_allocvec(&sent.args).unwrap(), postcard::to_allocvec(&value).unwrap());
        assert_eq!(sent.args.clone().into_value(), value);
    }

    #[test]
    fn a_kept_check_answers_for_its_catalog_tool_and_drift_span_until_the_body_changes() {
        let tool = |drift: Vec<crate::tool::Drift>| crate::tool::ToolSpec {
            def: crate::tool::ToolDef::new("order", crate::tool::ToolKind::Read, "")
                .field("id", crate::value::ValueKind::Str),
            config: crate::tool::ToolConfig { drift, ..crate::tool::ToolConfig::default() },
        };
        let renamed = vec![crate::tool::Drift {
            at_ms: 10,
            change: crate::tool::DriftChange::RenameField { from: "id".into(), to: "order_id".into() },
        }];
        let catalog = Catalog::new(vec![tool(renamed.clone())]);
        let (order, other) = (ToolId(0), ToolId(1));
        let mut body = Body::from(Value::map([("id", Value::str("A1"))]));
        assert!(body.check_and_keep(&catalog, order, 3));
        // Kept: the same span of the drift schedule, whatever the time in it.
        assert_eq!(body.checked(catalog.unique_id(), order, catalog.schema_span(order, 9)), Some(true));
        assert!(body.conforms(&catalog, order, 9));
        // Past the rename the schema differs: checked again, and it fails.
        assert_eq!(body.checked(catalog.unique_id(), order, catalog.schema_span(order, 10)), None);
        assert!(!body.conforms(&catalog, order, 10));
        // Another tool, or another catalog with the same tools, asks again.
        assert_eq!(body.checked(catalog.unique_id(), other, 0), None);
        let twin = Catalog::new(vec![tool(renamed)]);
        assert_ne!(twin.unique_id(), catalog.unique_id(), "every catalog made has an id of its own");
        assert_eq!(body.checked(twin.unique_id(), order, 0), None);
        // A clone holds the same value and keeps the answer; a write forgets it.
        assert_eq!(body.clone().checked(catalog.unique_id(), order, 0), Some(true));
        body.set("id", Value::Int(7));
        assert_eq!(body.checked(catalog.unique_id(), order, 0), None);
        assert!(!body.conforms(&catalog, order, 3));
    }
}
