//! Why a scripted world could not be loaded, and where: the one located error
//! of loading, shared by the readers of files, the compiler of the model and
//! the extensions.

/// Why a scripted world could not be loaded, and where: in a file it names
/// (`file`, with a position), or in the scenario itself (at `field` when it
/// is known, else found by `needle`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
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
        LoadError { file: None, line: 1, column: 1, needle: needle.into(), message: message.into(), field: None }
    }

    /// An error about the scenario's value at `field` (a path), with the
    /// message `field `FIELD`: MESSAGE`.
    pub fn in_field(field: &str, message: impl std::fmt::Display) -> LoadError {
        let at = FieldAt { path: field.to_string(), inside: None };
        LoadError { field: Some(Box::new(at)), ..LoadError::at("", format!("field `{field}`: {message}")) }
    }

    pub(super) fn in_file(file: &str, line: usize, column: usize, message: impl Into<String>) -> LoadError {
        LoadError {
            file: Some(file.to_string()),
            line,
            column,
            needle: String::new(),
            message: message.into(),
            field: None,
        }
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
