//! Reading the files a scripted world names, relative to the scenario's folder,
//! into the scenario itself (so its key covers them and incidents embed them).

use std::path::{Component, Path};

use agentsim_engine::Value;

use super::data::{DEPTH_MAX, Data, depth, from_csv_text, from_json_text};
use super::error::{LoadError, LoadErrorKind};
use super::{ScriptedConfig, Source};

/// The largest table or script file read: the same bound as a scenario file.
pub const FILE_BYTES_MAX: u64 = 16 << 20;

/// Records in one table, at most.
pub const ROWS_MAX: usize = 1_000_000;

/// A relative path that stays inside the scenario's folder, or why not (an
/// [`LoadErrorKind::Unreadable`] error at `field`, pointed at by the name).
fn inside<'n>(name: &'n str, field: &str) -> Result<&'n Path, LoadError> {
    let refused = |m: String| {
        LoadError::at(format!("\"{name}\""), format!("field `{field}`: {m}")).with_kind(LoadErrorKind::Unreadable)
    };
    let path = Path::new(name);
    if path.is_absolute() {
        return Err(refused(format!(
            "`{name}` is an absolute path: files a scenario names are relative to its folder"
        )));
    }
    if path.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(refused(format!(
            "`{name}` leaves the scenario's folder: a scenario reads only files beside or below it"
        )));
    }
    Ok(path)
}

fn read(dir: &Path, name: &str, field: &str) -> Result<String, LoadError> {
    let relative = inside(name, field)?;
    let path = dir.join(relative);
    let shown = path.display().to_string();
    let cannot = |m: String| {
        LoadError::at(format!("\"{name}\""), format!("field `{field}`: cannot read `{shown}`: {m}"))
            .with_kind(LoadErrorKind::Unreadable)
    };
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
        LoadError::in_file(LoadErrorKind::Unreadable, name, line, column, "not valid UTF-8")
    })
}

/// Reads every file `config` names from `dir` (the scenario's folder) into
/// the config: tables into their `rows`, the script inline; and puts the
/// settings extensions define in their canonical form. With no folder
/// (an incident, a built-in), a file reference is an error: such scenarios
/// must be whole.
pub fn resolve(config: &mut ScriptedConfig, dir: Option<&Path>) -> Result<(), LoadError> {
    if let Source::File(name) = &config.script {
        let Some(dir) = dir else {
            return Err(LoadError::at(
                format!("\"{name}\""),
                "field `world.script`: this scenario has no folder to read files from (an incident or a built-in embeds its script inline)",
            )
            .with_kind(LoadErrorKind::Unreadable));
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
            )
            .with_kind(LoadErrorKind::Unreadable));
        };
        if table.rows != Data::default() {
            return Err(LoadError::at(
                format!("\"{name}\""),
                format!("field `{field}`: a table has `rows` or a `file`, not both"),
            ));
        }
        let text = read(dir, &name, &field)?;
        let rows = if name.ends_with(".csv") {
            Value::List(
                from_csv_text(&text).map_err(|(l, c, m)| LoadError::in_file(LoadErrorKind::Data, &name, l, c, m))?,
            )
        } else if name.ends_with(".json") {
            from_json_text(&text).map_err(|(l, c, m)| LoadError::in_file(LoadErrorKind::Data, &name, l, c, m))?
        } else {
            return Err(LoadError::at(
                format!("\"{name}\""),
                format!("field `{field}`: a table file is `.json` or `.csv`"),
            ));
        };
        table.rows = Data(rows);
    }
    super::extend::canonicalise(&mut config.state_hash, &mut config.argument_errors)
}

/// Checks the shape of inline data: depth and size (an error at `field`,
/// pointed at by `needle`).
pub fn check_rows(rows: &Value, field: &str, needle: &str) -> Result<(), LoadError> {
    let wrong = |m: String| LoadError::at(needle, format!("field `{field}`: {m}"));
    let count = match rows {
        Value::List(items) => items.len(),
        Value::Map(pairs) => pairs.len(),
        Value::Null => 0,
        _ => return Err(wrong("expected a list of records or a map of records by key".to_string())),
    };
    if count > ROWS_MAX {
        return Err(wrong(format!("{count} records, more than the {ROWS_MAX} a table may hold")));
    }
    if depth(rows) > DEPTH_MAX + 1 {
        return Err(wrong(format!("records nest deeper than {DEPTH_MAX} levels")));
    }
    Ok(())
}
