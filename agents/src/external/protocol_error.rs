//! Why a line from an external agent is no valid protocol message: a kind a
//! caller can match, the field it is about (a path into the message, such as
//! `args.amount_cents`), and the message users see.

use std::fmt;

/// What kind of protocol error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolErrorKind {
    /// The line is not JSON.
    NotJson,
    /// The message is not a JSON object.
    NotAnObject,
    /// A required field is missing.
    Missing,
    /// A field holds a value of another type than the protocol says.
    WrongType,
    /// The message names another protocol or major version.
    Version,
    /// An unknown action, tool or outcome.
    Unknown,
    /// A value nested deeper than allowed.
    TooDeep,
    /// A number that is not finite.
    NotFinite,
    /// A number that is no 64-bit signed integer, or a fraction where the tool
    /// declares an integer.
    NotInteger,
    /// A number outside its range (`episodes_in_flight` of 0).
    OutOfRange,
}

/// A protocol error: its kind, the field (when there is one) and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError {
    kind: ProtocolErrorKind,
    field: Option<String>,
    message: String,
}

impl ProtocolError {
    /// A problem of `kind` with the field `name`: the message is
    /// ``field `NAME`: DETAIL``.
    pub fn in_field(kind: ProtocolErrorKind, name: &str, detail: impl fmt::Display) -> Self {
        Self { kind, field: Some(name.to_string()), message: format!("field `{name}`: {detail}") }
    }

    /// A problem of `kind` about `field` (if any), with the message as given.
    pub fn new(kind: ProtocolErrorKind, field: Option<&str>, message: impl Into<String>) -> Self {
        Self { kind, field: field.map(str::to_string), message: message.into() }
    }

    /// The same problem with `prefix` in front of its message (`hello: `).
    pub fn prefixed(mut self, prefix: &str) -> Self {
        self.message.insert_str(0, prefix);
        self
    }

    /// What kind of problem.
    pub fn kind(&self) -> ProtocolErrorKind {
        self.kind
    }

    /// The field it is about (a dotted path with `[i]` for array items), if any.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The message, as users see it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProtocolError {}

/// For callers that keep the reason in words (an [`super::ExternalError`]'s
/// reason): the message users see.
impl From<ProtocolError> for String {
    fn from(e: ProtocolError) -> String {
        e.message
    }
}
