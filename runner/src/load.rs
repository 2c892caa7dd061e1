//! Loading scenarios and stack layers from files or built-ins, for the binary and
//! the Python module alike. Every input file is bounded in size before parsing.

use std::path::Path;

use agentsim_agents::StackSpec;
use agentsim_worlds::{Prepared, Scenario};

use crate::Error;
use crate::files::read_text;
use crate::spec::parse_stack;

/// Installs the scripted-world extensions a scenario may name (tau2's state
/// hash, argument errors and Python functions): every loader here calls it
/// before it reads a scenario, and so must a program that parses scenarios
/// with [`Scenario::parse_in`] itself. Installing twice does nothing.
pub fn install_extensions() {
    agentsim_tau2::install();
}

/// The scenario named by `spec`: an existing file, else a built-in name.
pub fn scenario(spec: &str) -> Result<Prepared, Error> {
    install_extensions();
    let (text, origin) = if Path::new(spec).is_file() {
        (read_text(spec, "scenario")?, spec.to_string())
    } else if let Some(text) = crate::builtin::scenario(spec) {
        (text.to_string(), format!("built-in {spec}"))
    } else if Path::new(spec).exists() {
        // A directory or a device: read_text says which.
        (read_text(spec, "scenario")?, spec.to_string())
    } else {
        let names: Vec<&str> = crate::builtin::SCENARIOS.iter().map(|(n, _)| *n).collect();
        return Err(Error::argument(format!(
            "scenario `{spec}` is neither a file nor a built-in scenario (built-ins: {})",
            names.join(", ")
        )));
    };
    // A scenario file's folder is where a scripted world's tables and script are.
    let dir = Path::new(spec).is_file().then(|| Path::new(spec).parent().unwrap_or(Path::new(".")));
    let dir = dir.map(|d| if d.as_os_str().is_empty() { Path::new(".") } else { d });
    let scenario = Scenario::parse_in(&text, &origin, dir)?;
    Ok(Prepared::new(scenario))
}

/// Applies `--tasks` (`all`, or ids separated by commas) to a prepared scenario.
pub fn select_tasks(prepared: &mut Prepared, tasks: Option<&str>) -> Result<(), Error> {
    let Some(tasks) = tasks else { return Ok(()) };
    if !prepared.has_tasks() {
        return Err(Error::argument(format!(
            "--tasks {tasks}: scenario `{}` has no named tasks (only scripted worlds do)",
            prepared.scenario.name
        )));
    }
    let names: Vec<&str> = tasks.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    prepared.select_tasks(&names).map_err(|e| Error::argument(format!("--tasks: {e}")))
}

/// The layers of the stack file at `path` (its planner is not used), checked
/// against the scenario's tools: what `mcp --layers` puts around the client.
pub fn layers(path: &str, prepared: &Prepared) -> Result<Vec<agentsim_agents::LayerSpec>, Error> {
    let text = read_text(path, "stack file")?;
    let stack = parse_stack(&text, path)?;
    check_tools(&stack, path, prepared, Some(&text))?;
    Ok(stack.layers)
}

/// Refuses a stack whose layers name a tool the scenario lacks, or a cache that
/// names a write tool; `spec` names the file in the message, and `text` (the
/// file's, when it is one) gives the position: the field as written (a
/// fallback route's `to`, a guardrail's `forbidden_tools` or rule `required`).
pub fn check_tools(stack: &StackSpec, spec: &str, prepared: &Prepared, text: Option<&str>) -> Result<(), Error> {
    if let Some(unknown) = stack.unknown_tool_fields(&prepared.catalog).first() {
        let at = text.and_then(|text| tool_position(text, unknown.layer, unknown.nth, unknown.field, &unknown.tool));
        return Err(Error::content(format!(
            "{}: field `{}`: unknown tool `{}` (the scenario's tools: {})",
            located(spec, at),
            unknown.field,
            unknown.tool,
            prepared.catalog.specs().iter().map(|s| s.def.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    if let Some((nth, tool)) = stack.cached_writes(&prepared.catalog).first() {
        let at = text.and_then(|text| tool_position(text, "Cache", *nth, "tools", tool));
        return Err(Error::content(format!(
            "{}: field `tools`: `{tool}` is a write tool; a cache answers only reads, so naming a write does nothing",
            located(spec, at.or(Some((1, 1))))
        )));
    }
    Ok(())
}

/// `spec:LINE:COLUMN` when the position is known, else `spec`.
fn located(spec: &str, at: Option<(usize, usize)>) -> String {
    match at {
        Some((line, column)) => format!("{spec}:{line}:{column}"),
        None => spec.to_string(),
    }
}

/// The position of the quoted `tool` in the `nth` (1-based) `layer(` of a stack
/// file's text: the first one whose field (the name before the nearest `:`) is
/// `field`, else the first one after the layer's start.
fn tool_position(text: &str, layer: &str, nth: usize, field: &str, tool: &str) -> Option<(usize, usize)> {
    let opening = format!("{layer}(");
    let start = text
        .match_indices(&opening)
        .filter(|(at, _)| !text[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .nth(nth.checked_sub(1)?)?
        .0;
    let quoted = format!("\"{tool}\"");
    let mut mentions = text[start..].match_indices(&quoted).map(|(at, _)| start + at);
    let first = mentions.clone().next()?;
    let of_field = |at: &usize| {
        let before = &text[start..*at];
        let colon = before.rfind(':')?;
        let name = before[..colon].trim_end();
        let word = name.rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next()?;
        Some(word == field)
    };
    let at = mentions.find(|at| of_field(at) == Some(true)).unwrap_or(first);
    Some(crate::spec::position(text, at))
}
