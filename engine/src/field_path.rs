//! A path to a value in a tool's response (`order.total_cents`), checked when
//! read: its own home, so that the faults, the corruption of values and the
//! injection of arguments share it without importing each other.

use serde::{Deserialize, Serialize};

use crate::input_error::{InputError, InputErrorKind};

/// A path to a value in a tool's response: dot-separated field names, checked
/// when read (not empty, no empty name, at most [`FieldPath::SEGMENTS_MAX`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FieldPath(String);

impl FieldPath {
    /// The most field names in a path.
    pub const SEGMENTS_MAX: usize = 16;

    /// The field names, outermost first.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('.')
    }

    /// The top-level field (a documented response field of the tool).
    pub fn top(&self) -> &str {
        self.segments().next().unwrap_or_default()
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for FieldPath {
    type Error = InputError;
    fn try_from(path: String) -> Result<Self, InputError> {
        let segments = path.split('.').count();
        let empty = path.split('.').any(str::is_empty);
        if empty || segments > FieldPath::SEGMENTS_MAX {
            let kind = if empty { InputErrorKind::Malformed } else { InputErrorKind::TooMany };
            return Err(InputError::at(
                kind,
                "path",
                format!("expected 1..={} dot-separated field names, found `{path}`", FieldPath::SEGMENTS_MAX),
            ));
        }
        Ok(FieldPath(path))
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> String {
        p.0
    }
}
