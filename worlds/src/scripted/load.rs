//! Reading the files a scripted world names, relative to the scenario's folder,
//! into the scenario itself (so its key covers them and incidents embed them).

use std::path::{Component, Path};

use agentsim_engine::Value;

use super::data::{DEPTH_MAX, Data, depth, from_csv_text, from_json_text};
use super::{ScriptedConfig, Source};

/// The largest table or script file read: the same bound as a scenario file.
pub const FILE_BYTES_MAX: u64 = 16 << 20;

/// Records in one table, at most.
pub const ROWS_MAX: usize = 1_000_000;

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

/// A relative path that stays inside the scenario's folder, or why not.
fn inside(name: &str) -> Result<&Path, String> {
    let path = Path::new(name);
    if path.is_absolute() {
        return Err(format!("`{name}` is an absolute path: files a scenario names are relative to its folder"));
    }
    if path.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("`{name}` leaves the scenario's folder: a scenario reads only files beside or below it"));
    }
    Ok(path)
}

fn read(dir: &Path, name: &str, field: &str) -> Result<String, LoadError> {
    let relative = inside(name).map_err(|m| LoadError::at(format!("\"{name}\""), format!("field `{field}`: {m}")))?;
    let path = dir.join(relative);
    let shown = path.display().to_string();
    let cannot =
        |m: String| LoadError::at(format!("\"{name}\""), format!("field `{field}`: cannot read `{shown}`: {m}"));
    // A symlink could point anywhere: the file must really be inside the folder.
    let real = path.canonicalize().map_err(|e| cannot(e.to_string()))?;
    let real_dir = dir.canonicalize().map_err(|e| cannot(e.to_string()))?;
    if !real.starts_with(&real_dir) {
        return Err(cannot("it resolves outside the scenario's folder".into()));
    }
    if !real.is_file() {
        return Err(cannot("it is not a regular file".into()));
    }
    let size = real.metadata().map_err(|e| cannot(e.to_string()))?.len();
    if size > FILE_BYTES_MAX {
        return Err(cannot(format!("it is larger than {} MiB, the limit for a table or script", FILE_BYTES_MAX >> 20)));
    }
    let bytes = std::fs::read(&real).map_err(|e| cannot(e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| {
        let ok = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let text = String::from_utf8_lossy(ok);
        let line = text.matches('\n').count() + 1;
        let column = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        LoadError::in_file(name, line, column, "not valid UTF-8")
    })
}

/// Reads every file `config` names from `dir` (the scenario's folder) into
/// the config: tables into their `rows`, the script inline. With no folder
/// (an incident, a built-in), a file reference is an error: such scenarios
/// must be whole.
pub fn resolve(config: &mut ScriptedConfig, dir: Option<&Path>) -> Result<(), LoadError> {
    if let Source::File(name) = &config.script {
        let Some(dir) = dir else {
            return Err(LoadError::at(
                format!("\"{name}\""),
                "field `world.script`: this scenario has no folder to read files from (an incident or a built-in embeds its script inline)",
            ));
        };
        let text = read(dir, name, "world.script")?;
        // The name as written, not where the folder is: the scenario's key (and
        // so every digest) must not depend on where it was loaded from.
        config.script = Source::Inline { origin: name.clone(), text };
    }
    for (i, table) in config.tables.iter_mut().enumerate() {
        let Some(name) = table.file.take() else { continue };
        let field = format!("world.tables[{i}].file");
        let Some(dir) = dir else {
            return Err(LoadError::at(
                format!("\"{name}\""),
                format!("field `{field}`: this scenario has no folder to read files from"),
            ));
        };
        if table.rows != Data::default() {
            return Err(LoadError::at(
                format!("\"{name}\""),
                format!("field `{field}`: a table has `rows` or a `file`, not both"),
            ));
        }
        let text = read(dir, &name, &field)?;
        let rows = if name.ends_with(".csv") {
            Value::List(from_csv_text(&text).map_err(|(l, c, m)| LoadError::in_file(&name, l, c, m))?)
        } else if name.ends_with(".json") {
            from_json_text(&text).map_err(|(l, c, m)| LoadError::in_file(&name, l, c, m))?
        } else {
            return Err(LoadError::at(
                format!("\"{name}\""),
                format!("field `{field}`: a table file is `.json` or `.csv`"),
            ));
        };
        table.rows = Data(rows);
    }
    Ok(())
}

/// Checks the shape of inline data: depth and size.
pub fn check_rows(rows: &Value, field: &str) -> Result<(), String> {
    let count = match rows {
        Value::List(items) => items.len(),
        Value::Map(pairs) => pairs.len(),
        Value::Null => 0,
        _ => return Err(format!("field `{field}`: expected a list of records or a map of records by key")),
    };
    if count > ROWS_MAX {
        return Err(format!("field `{field}`: {count} records, more than the {ROWS_MAX} a table may hold"));
    }
    if depth(rows) > DEPTH_MAX + 1 {
        return Err(format!("field `{field}`: records nest deeper than {DEPTH_MAX} levels"));
    }
    Ok(())
}
