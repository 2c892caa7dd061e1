//! Why a world could not be built: a kind a caller can match, the tool (or
//! other name) it is about, and a sentence for a person.

use std::fmt;

/// What is wrong with a world given to [`super::WorldBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildErrorKind {
    /// A handler, fault, latency or timeout names a tool the world does not
    /// declare.
    UnknownTool,
    /// Two tools share a name.
    DuplicateTool,
    /// A tool, or a handler, takes a name the builder adds itself
    /// (`escalate`, `authenticate`).
    ReservedTool,
    /// A declared tool has no handler.
    MissingHandler,
    /// A tool has two handlers.
    DuplicateHandler,
    /// The world has no judge.
    MissingJudge,
    /// A fault, latency or timeout is out of its range (a probability above
    /// 1, a status that is no HTTP error, a window that ends before it starts).
    BadFault,
    /// A fault does not fit its tool (a corrupted field the tool does not
    /// answer, a write fault on a read).
    FaultDoesNotFit,
    /// The world's name is empty or too long, its horizon is out of range,
    /// or it has too many tools.
    BadScenario,
}

/// A world that could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    /// What is wrong.
    pub kind: BuildErrorKind,
    /// The tool it is about; the world's name for [`BuildErrorKind::BadScenario`]
    /// and [`BuildErrorKind::MissingJudge`].
    pub name: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl BuildError {
    /// An error of `kind` about `name`.
    pub fn new(kind: BuildErrorKind, name: &str, message: impl Into<String>) -> Self {
        BuildError { kind, name: name.to_string(), message: message.into() }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.name, self.message)
    }
}

impl std::error::Error for BuildError {}
