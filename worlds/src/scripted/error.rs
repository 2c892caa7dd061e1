//! Why a scripted world could not be loaded, and where: the one located error
//! of loading, shared by the readers of files, the compiler of the model and
//! the extensions.

/// Why a scripted world could not be loaded, and where: in a file it names
/// (`file`, with a position), or in the scenario itself (at `field` when it
/// is known, else found by `needle`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// What kind of problem it is, for a caller to match.
    pub kind: LoadErrorKind,
    /// The file the error is in, relative to the scenario's folder; `None`
    /// for the scenario.
    pub file: Option<String>,
    /// 1-based line in `file`.
    pub line: usize,
    /// 1-based column in `file`.
    pub column: usize,
    /// In the scenario: the text to point at.
    pub needle: String,
    /// What is wrong, naming the field.
    pub message: String,
    /// In the scenario: the value the error is about, found by its path;
    /// `needle` is then looked for inside that value only.
    pub field: Option<Box<FieldAt>>,
}

/// What kind of problem a [`LoadError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadErrorKind {
    /// A value of the scenario is wrong or inconsistent (the message names
    /// the field and what it must be).
    Invalid,
    /// A file the scenario names cannot be read: outside its folder, missing,
    /// not a regular file, too large, not UTF-8, or no folder to read from.
    Unreadable,
    /// A table file's JSON or CSV is malformed, at its position.
    Data,
    /// The script or a predicate does not parse, at its position.
    Syntax,
    /// A setting names a state hash or an argument-error style no installed
    /// extension provides.
    NoExtension,
    /// An installed extension refused its setting.
    Extension,
}

/// Where in the scenario a [`LoadError`] is: a value by its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldAt {
    /// The value's path (`world.tasks[1].milestones[0].when`).
    pub path: String,
    /// A 1-based line and column inside the value's string (where a
    /// predicate's own syntax error is).
    pub inside: Option<(usize, usize)>,
}

impl LoadError {
    /// An error in the scenario text, at the first occurrence of `needle`.
    pub fn at(needle: impl Into<String>, message: impl Into<String>) -> LoadError {
        LoadError {
            kind: LoadErrorKind::Invalid,
            file: None,
            line: 1,
            column: 1,
            needle: needle.into(),
            message: message.into(),
            field: None,
        }
    }

    /// An error about the scenario's value at `field` (a path), with the
    /// message `field `FIELD`: MESSAGE`.
    pub fn in_field(field: &str, message: impl std::fmt::Display) -> LoadError {
        let at = FieldAt { path: field.to_string(), inside: None };
        LoadError { field: Some(Box::new(at)), ..LoadError::at("", format!("field `{field}`: {message}")) }
    }

    /// An error of `kind` in `file` (relative to the scenario's folder), at
    /// `line` and `column`.
    pub(super) fn in_file(
        kind: LoadErrorKind,
        file: &str,
        line: usize,
        column: usize,
        message: impl Into<String>,
    ) -> LoadError {
        LoadError {
            kind,
            file: Some(file.to_string()),
            line,
            column,
            needle: String::new(),
            message: message.into(),
            field: None,
        }
    }

    /// This error as one of `kind`.
    pub fn with_kind(self, kind: LoadErrorKind) -> LoadError {
        LoadError { kind, ..self }
    }

    /// The 1-based line and column in the scenario's `text` this error
    /// points at (one not in a file of its own): inside the value at `field`
    /// when the path leads somewhere, else at the first `needle` (1:1 if
    /// absent).
    pub fn position_in(&self, text: &str) -> (usize, usize) {
        let at = self.field.as_deref();
        let span = at.and_then(|f| super::locate::field_span(text, &f.path));
        let offset = match span {
            Some((start, end)) => {
                let inside =
                    at.and_then(|f| f.inside).and_then(|(l, c)| super::locate::offset_in_literal(text, start, l, c));
                let needle =
                    (!self.needle.is_empty()).then(|| text[start..end].find(&self.needle).map(|o| start + o)).flatten();
                inside.or(needle).unwrap_or(start)
            }
            None => text.find(&self.needle).unwrap_or(0),
        };
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }
}
