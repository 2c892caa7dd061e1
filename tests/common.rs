//! Helpers shared by the integration tests.

use std::path::Path;
use std::process::{Command, Output};

use agentsim_agents::StackSpec;
use agentsim_worlds::{Prepared, Scenario};

/// The default scenario, parsed.
pub fn default_scenario() -> Prepared {
    let text = agentsim::builtin::scenario(agentsim::builtin::DEFAULT_SCENARIO).expect("default scenario is built in");
    Prepared::new(Scenario::parse(text, "built-in").expect("default scenario parses"))
}

/// A preset's stack.
pub fn preset(name: &str) -> StackSpec {
    agentsim_agents::preset(name).unwrap_or_else(|| panic!("preset {name} exists"))
}

/// Runs the agentsim binary with `args` in `dir`, with extra environment.
pub fn agentsim(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentsim"));
    command.current_dir(dir).args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("the agentsim binary runs")
}

/// Stdout and stderr as text, for assertion messages.
pub fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Skips the rest of a test whose tool or data is missing: required under CI
/// (`CI` set, as `.ci/run` sets it), so there it fails; elsewhere it says
/// `skipped` on the terminal, past the test harness's capture (a write to the
/// stderr handle, not `eprintln!`), so a skipped test never passes silently.
pub fn skip(test: &str, why: &str) {
    assert!(std::env::var_os("CI").is_none(), "{test}: {why}; required under CI");
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}
