//! Loading scenarios and agent specs from files or built-ins.

use std::path::Path;

use agentsim::spec::{AgentSource, parse_stack};
use agentsim_agents::StackSpec;
use agentsim_worlds::{Prepared, Scenario};

use super::Failure;

/// The largest scenario, stack, gate or incident file read: far above any real one
/// (the largest incident in `seeds/incidents/` is 22 KB), low enough that a wrong or
/// hostile file is refused at once instead of parsed for minutes.
pub const INPUT_BYTES_MAX: u64 = 16 << 20;

/// The largest trace read (`import-trace`): production traces are longer than
/// scenarios, but a trace holds at most `agentsim::trace::RECORDS_MAX` records.
pub const TRACE_BYTES_MAX: u64 = 64 << 20;

/// The UTF-8 encoding of U+FEFF, the byte-order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads a text file of at most [`INPUT_BYTES_MAX`], naming it (as `what`) in the error.
pub fn text(path: &str, what: &str) -> Result<String, Failure> {
    read_text(path, what)
}

/// Reads a text file of at most [`INPUT_BYTES_MAX`], naming it in the error.
pub fn read_text(path: &str, what: &str) -> Result<String, Failure> {
    read_bounded(path, what, Some(INPUT_BYTES_MAX))
}

/// Reads a text file of at most `bytes_max` bytes (any size with `None`: the CSV
/// files agentsim wrote itself), naming it in the error: a directory, a file too
/// large, or bytes that are not UTF-8 (with the line and column of the first).
pub fn read_bounded(path: &str, what: &str, bytes_max: Option<u64>) -> Result<String, Failure> {
    use std::io::Read;
    let cannot = |e: &dyn std::fmt::Display| Failure::input(format!("cannot read {what} `{path}`: {e}"));
    if Path::new(path).is_dir() {
        return Err(cannot(&"it is a directory, not a file"));
    }
    let file = std::fs::File::open(path).map_err(|e| cannot(&e))?;
    let mut bytes = Vec::new();
    // `take` bounds the read even when the size on disk says nothing (a pipe).
    let limit = bytes_max.map_or(u64::MAX, |max| max + 1);
    file.take(limit).read_to_end(&mut bytes).map_err(|e| cannot(&e))?;
    if let Some(max) = bytes_max.filter(|max| bytes.len() as u64 > *max) {
        return Err(Failure::input(format!(
            "{path}: {what} is larger than {} MiB, the limit for {what}s (is it the right file?)",
            max >> 20
        )));
    }
    // A UTF-8 byte-order mark (some Windows editors write one) is not part of the
    // text: dropped, so the parser sees the first real character at 1:1, where an
    // editor shows it, and every position stays right.
    if bytes.starts_with(UTF8_BOM) {
        bytes.drain(..UTF8_BOM.len());
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.as_bytes()[..offset]).into_owned();
        let line = text.matches('\n').count() + 1;
        let column = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Failure::input(format!(
            "{path}:{line}:{column}: {what} is not valid UTF-8 (byte 0x{:02x})",
            e.as_bytes()[offset]
        ))
    })
}

/// The scenario named by `spec`: an existing file, else a built-in name.
pub fn scenario(spec: &str) -> Result<Prepared, Failure> {
    let (text, origin) = if Path::new(spec).is_file() {
        (read_text(spec, "scenario")?, spec.to_string())
    } else if let Some(text) = agentsim::builtin::scenario(spec) {
        (text.to_string(), format!("built-in {spec}"))
    } else if Path::new(spec).exists() {
        // A directory or a device: read_text says which.
        (read_text(spec, "scenario")?, spec.to_string())
    } else {
        let names: Vec<&str> = agentsim::builtin::SCENARIOS.iter().map(|(n, _)| *n).collect();
        return Err(Failure::input(format!(
            "scenario `{spec}` is neither a file nor a built-in scenario (built-ins: {})",
            names.join(", ")
        )));
    };
    // A scenario file's folder is where a scripted world's tables and script are.
    let dir = Path::new(spec).is_file().then(|| Path::new(spec).parent().unwrap_or(Path::new(".")));
    let dir = dir.map(|d| if d.as_os_str().is_empty() { Path::new(".") } else { d });
    let scenario = Scenario::parse_in(&text, &origin, dir).map_err(|e| Failure::input(e.to_string()))?;
    Ok(Prepared::new(scenario))
}

/// Applies `--tasks` (`all`, or ids separated by commas) to a prepared scenario.
pub fn select_tasks(prepared: &mut Prepared, tasks: Option<&str>) -> Result<(), Failure> {
    let Some(tasks) = tasks else { return Ok(()) };
    if !prepared.has_tasks() {
        return Err(Failure::input(format!(
            "--tasks {tasks}: scenario `{}` has no named tasks (only scripted worlds do)",
            prepared.scenario.name
        )));
    }
    let names: Vec<&str> = tasks.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    prepared.select_tasks(&names).map_err(|e| Failure::input(format!("--tasks: {e}")))
}

/// The layers of the stack file at `path` (its planner is not used), checked
/// against the scenario's tools: what `mcp --layers` puts around the client.
pub fn layers(path: &str, prepared: &Prepared) -> Result<Vec<agentsim_agents::LayerSpec>, Failure> {
    let text = read_text(path, "stack file")?;
    let stack = parse_stack(&text, path).map_err(|e| Failure::input(e.to_string()))?;
    check_tools(&stack, path, prepared, Some(&text))?;
    Ok(stack.layers)
}

/// The external agents' wall-clock limit per answer when no `--turn-limit-ms` applies.
pub const TURN_LIMIT_MS_DEFAULT: u64 = 10_000;

/// The stack named by `--agent`, checked against the scenario's tools.
/// `turn_limit_ms` is the wall-clock limit per answer of an external agent, and
/// `layers` a stack file whose layers wrap it.
pub fn agent(spec: &str, prepared: &Prepared, turn_limit_ms: u64, layers: Option<&str>) -> Result<StackSpec, Failure> {
    let (mut stack, mut text) = stack(spec)?;
    match (&mut stack.planner, layers) {
        (agentsim_agents::PlannerSpec::External(config), layers) => {
            config.turn_limit_ms = turn_limit_ms;
            if let Some(path) = layers {
                let layers_text = read_text(path, "stack file")?;
                stack.layers = parse_stack(&layers_text, path).map_err(|e| Failure::input(e.to_string()))?.layers;
                text = Some(layers_text);
            }
        }
        (_, Some(_)) => {
            return Err(Failure::input(
                "--layers: only for external agents (--agent cmd:COMMAND); put the layers in the stack file",
            ));
        }
        (_, None) => {}
    }
    check_tools(&stack, layers.unwrap_or(spec), prepared, text.as_deref())?;
    Ok(stack)
}

/// Refuses a stack whose layers name a tool the scenario lacks, or a cache that
/// names a write tool; `spec` names the file in the message, and `text` (the
/// file's, when it is one) gives the position.
fn check_tools(stack: &StackSpec, spec: &str, prepared: &Prepared, text: Option<&str>) -> Result<(), Failure> {
    if let Some(tool) = stack.unknown_tools(&prepared.catalog).first() {
        return Err(Failure::input(format!(
            "{spec}: field `forbidden_tools`: unknown tool `{tool}` (the scenario's tools: {})",
            prepared.catalog.specs().iter().map(|s| s.def.name.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    if let Some((nth, tool)) = stack.cached_writes(&prepared.catalog).first() {
        // The tool's name after the nth `Cache(` of the file.
        let at = text.and_then(|text| {
            let start = text.match_indices("Cache(").nth(nth - 1)?.0;
            let offset = start + text[start..].find(&format!("\"{tool}\""))?;
            let before = &text[..offset];
            Some((before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1))
        });
        let (line, column) = at.unwrap_or((1, 1));
        return Err(Failure::input(format!(
            "{spec}:{line}:{column}: field `tools`: `{tool}` is a write tool; a cache answers only reads, so naming a write does nothing"
        )));
    }
    Ok(())
}

/// The stack `spec` names, with the file's text when it is a file.
fn stack(spec: &str) -> Result<(StackSpec, Option<String>), Failure> {
    let stack = match AgentSource::classify(spec) {
        AgentSource::Preset(name) => agentsim_agents::preset(&name).ok_or_else(|| {
            let names: Vec<&str> = agentsim_agents::PRESETS.iter().map(|(n, _)| *n).collect();
            Failure::input(format!(
                "--agent: unknown preset `{name}` (presets: {}; or a stack file ending in .ron, or cmd:COMMAND)",
                names.join(", ")
            ))
        }),
        AgentSource::File(path) => {
            let text = read_text(&path, "stack file")?;
            let stack = parse_stack(&text, &path).map_err(|e| Failure::input(e.to_string()))?;
            return Ok((stack, Some(text)));
        }
        AgentSource::Command(command) if command.trim().is_empty() => {
            Err(Failure::input("--agent cmd:COMMAND: the command is empty"))
        }
        // An agent that cannot start fails every seed alike: a configuration
        // error, named before any seed runs, not a sweep of 100% agent_error.
        AgentSource::Command(command) => agentsim_agents::external::check_command(&command)
            .map_err(|e| Failure::input(format!("--agent cmd:{command}: {e}")))
            .map(|()| {
                // Its agents are in their own process groups: a signal must end them.
                super::interrupt::install_for_agents();
                StackSpec {
                    planner: agentsim_agents::PlannerSpec::External(agentsim_agents::ExternalConfig::new(&command)),
                    layers: Vec::new(),
                }
            }),
    };
    Ok((stack?, None))
}

/// Refuses `--swarm` for a scenario without a `swarm` section: nothing would vary.
pub fn check_swarm(setup: &super::Setup, prepared: &Prepared) -> Result<(), Failure> {
    if setup.swarm && prepared.scenario.swarm.is_empty() {
        return Err(Failure::input(format!(
            "--swarm: scenario `{}` has no `swarm` section, so nothing would vary (see seeds/README.md)",
            setup.scenario
        )));
    }
    Ok(())
}
