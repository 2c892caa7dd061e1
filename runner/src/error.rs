//! The library's error: what kind of thing went wrong (a kind a caller can
//! match), where, when it is about a place in a file (file, line, column,
//! field), and a message that says both, ready to show. Every library error is
//! bad input to the command (the binary exits 2).

use std::fmt;

/// What kind of thing went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An input could not be read: missing, a folder, too large, unreadable.
    Read,
    /// An output could not be written, or is not a path agentsim writes over.
    Write,
    /// A file's content is wrong (its syntax, a field, a row): see `position`.
    Content,
    /// An argument (a flag, a name, an option) is wrong or unknown.
    Argument,
    /// Things that must agree do not: a resume with other arguments, shards
    /// of different sweeps, an incident and its row.
    Mismatch,
    /// The run could not go on: no agent could be started, a pilot found no
    /// failure to tilt towards.
    Run,
}

/// A place in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The file, as shown to the user.
    pub file: String,
    /// 1-based line (0 when only the file is known).
    pub line: usize,
    /// 1-based column (0 when only the line is known).
    pub column: usize,
    /// The field the error is about, when known.
    pub field: Option<String>,
}

/// An error: its kind, its place and a message that says what went wrong and
/// where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What kind of thing went wrong.
    pub kind: ErrorKind,
    /// Where, when the error is about a place in a file.
    pub position: Option<Position>,
    /// What went wrong, naming the file or argument (and the place, when
    /// there is one).
    pub message: String,
}

impl Error {
    /// An error of `kind` with this message and no place.
    pub fn of(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, position: None, message: message.into() }
    }

    /// An input that could not be read.
    pub fn read(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Read, message)
    }

    /// An output that could not be written.
    pub fn write(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Write, message)
    }

    /// A file's content that is wrong (give its place with [`Error::at`]).
    pub fn content(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Content, message)
    }

    /// A wrong or unknown argument.
    pub fn argument(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Argument, message)
    }

    /// Things that must agree and do not.
    pub fn mismatch(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Mismatch, message)
    }

    /// A run that could not go on.
    pub fn run(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Run, message)
    }

    /// The same error, placed at line `line`, column `column` of `file`.
    pub fn at(mut self, file: impl Into<String>, line: usize, column: usize) -> Self {
        self.position = Some(Position { file: file.into(), line, column, field: None });
        self
    }

    /// The same error, about `field` (keeping its place, if any).
    pub fn in_field(mut self, field: impl Into<String>) -> Self {
        let position = self.position.get_or_insert(Position { file: String::new(), line: 0, column: 0, field: None });
        position.field = Some(field.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<agentsim_stats::rows_file::RowsError> for Error {
    fn from(e: agentsim_stats::rows_file::RowsError) -> Self {
        let line = e.line.unwrap_or(0) as usize;
        let field = match &e.kind {
            agentsim_stats::rows_file::RowsErrorKind::Column(c) if !c.column.is_empty() => Some(c.column.clone()),
            _ => None,
        };
        let error = Error::content(e.to_string()).at(e.origin, line, 0);
        match field {
            Some(field) => error.in_field(field),
            None => error,
        }
    }
}

impl From<agentsim_worlds::ScenarioError> for Error {
    fn from(e: agentsim_worlds::ScenarioError) -> Self {
        Error::content(e.to_string()).at(e.origin, e.line, e.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_stats::rows::{ColumnError, ColumnErrorKind};
    use agentsim_stats::rows_file::{RowsError, RowsErrorKind};

    #[test]
    fn a_row_error_keeps_its_line_and_column() {
        let column = ColumnError::new("digest", ColumnErrorKind::Malformed, "column `digest`: bad".into());
        let rows = RowsError { origin: "t.csv".into(), line: Some(3), kind: RowsErrorKind::Column(column) };
        let error = Error::from(rows);
        assert_eq!(error.message, "t.csv:3: column `digest`: bad");
        let position = error.position.expect("a place");
        assert_eq!((position.file.as_str(), position.line, position.field.as_deref()), ("t.csv", 3, Some("digest")));
    }
}
