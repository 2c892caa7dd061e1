//! What is wrong with a value read from a file: a kind a caller can match, the
//! field it is in, and the message users see (the serde reader that called the
//! check adds the line and column).

use std::fmt;

/// What kind of problem a checked value has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputErrorKind {
    /// A number outside the range its field allows (an HTTP status of 200, a
    /// percent of 100, a time past [`crate::time::TIME_MS_MAX`], a zero where at
    /// least 1 is needed).
    OutOfRange,
    /// A number that is not finite (NaN or an infinity).
    NotFinite,
    /// Two fields that disagree (a window that ends before it starts, a
    /// maximum below its minimum).
    Inconsistent,
    /// A name or path of the wrong shape (an empty field name, a backtick).
    Malformed,
    /// More items than the field takes (arguments, values, field names).
    TooMany,
}

/// A value refused when read: its kind, the field (when the check knows it) and
/// the message, exactly as users see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    kind: InputErrorKind,
    field: Option<String>,
    message: String,
}

impl InputError {
    /// A problem of `kind` in `field`: the message is ``field `FIELD`: DETAIL``.
    pub fn at(kind: InputErrorKind, field: &str, detail: impl fmt::Display) -> Self {
        Self { kind, field: Some(field.to_string()), message: format!("field `{field}`: {detail}") }
    }

    /// A problem of `kind` whose field the caller names (the message is `detail`).
    pub fn bare(kind: InputErrorKind, detail: impl Into<String>) -> Self {
        Self { kind, field: None, message: detail.into() }
    }

    /// The same problem seen from the field that holds it: the message gains the
    /// prefix ``field `OUTER`: ``, the field path `OUTER` in front.
    pub fn within(self, outer: &str) -> Self {
        let field = match self.field {
            Some(inner) => format!("{outer}.{inner}"),
            None => outer.to_string(),
        };
        Self { kind: self.kind, message: format!("field `{outer}`: {}", self.message), field: Some(field) }
    }

    /// Names the field more precisely than the message does (`args.NAME` for a
    /// message about `args`).
    pub fn in_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// What kind of problem.
    pub fn kind(&self) -> InputErrorKind {
        self.kind
    }

    /// The field path, dot-separated, when the check knows it.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

/// For callers whose own errors are still strings (a `?` in a check that
/// returns `Result<_, String>`): the message users see.
impl From<InputError> for String {
    fn from(e: InputError) -> String {
        e.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_field_and_nest() {
        let e = InputError::at(InputErrorKind::OutOfRange, "n", "calls are counted from 1, found 0");
        assert_eq!(e.to_string(), "field `n`: calls are counted from 1, found 0");
        assert_eq!((e.kind(), e.field()), (InputErrorKind::OutOfRange, Some("n")));
        let e = InputError::bare(InputErrorKind::OutOfRange, "expected a probability").within("probability");
        assert_eq!(e.to_string(), "field `probability`: expected a probability");
        assert_eq!(e.field(), Some("probability"));
        assert_eq!(e.within("rule").field(), Some("rule.probability"));
    }
}
