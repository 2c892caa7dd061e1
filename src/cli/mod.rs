//! Argument parsing and the subcommands.

mod load;
mod output;
mod run;
mod sweep;

use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Exit code for bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;

/// A command that could not complete: the message and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// Process exit code.
    pub code: u8,
    /// What went wrong, naming the file or argument.
    pub message: String,
}

impl Failure {
    /// Bad input or usage (exit 2).
    pub fn input(message: impl Into<String>) -> Self {
        Self { code: EXIT_BAD_INPUT, message: message.into() }
    }
}

/// Deterministic simulator for testing the reliability of LLM-agent stacks.
#[derive(Parser, Debug)]
#[command(name = "agentsim", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one seed and print its trajectory as a timeline.
    Run(RunArgs),
    /// Run many seeds in parallel; write trajectories.csv and summary.json.
    Sweep(SweepArgs),
    /// List the built-in scenarios and agent presets.
    List,
}

/// Where the scenario and the agent come from.
#[derive(Args, Debug)]
struct Setup {
    /// Scenario: a path to a RON file or a built-in name.
    #[arg(default_value = agentsim::builtin::DEFAULT_SCENARIO)]
    scenario: String,
    /// Agent: a preset (oracle, naive, resilient), a stack file (.ron), or cmd:COMMAND.
    #[arg(long, default_value = "resilient")]
    agent: String,
    /// Multiply every fault probability by this factor (0 turns faults off).
    #[arg(long, default_value_t = 1.0, value_parser = parse_fault_scale, allow_negative_numbers = true)]
    fault_scale: f64,
    /// Swarm mode: each seed draws its fault parameters from the scenario's `swarm` ranges.
    #[arg(long)]
    swarm: bool,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    setup: Setup,
    /// The seed to run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Args, Debug)]
struct SweepArgs {
    #[command(flatten)]
    setup: Setup,
    /// Seeds to run, `A..B` (B excluded).
    #[arg(long, default_value = "0..1000", value_parser = parse_seeds)]
    seeds: Range<u64>,
    /// Directory for trajectories.csv and summary.json (created if missing).
    #[arg(long, default_value = "out")]
    out: PathBuf,
}

fn parse_seeds(text: &str) -> Result<Range<u64>, String> {
    let (a, b) = text.split_once("..").ok_or_else(|| format!("expected A..B (like 0..1000), found `{text}`"))?;
    let start: u64 = a.trim().parse().map_err(|_| format!("`{a}` is not a seed (a non-negative integer)"))?;
    let end: u64 = b.trim().parse().map_err(|_| format!("`{b}` is not a seed (a non-negative integer)"))?;
    if end <= start {
        return Err(format!("the range {start}..{end} is empty: the end is excluded and must be above the start"));
    }
    Ok(start..end)
}

fn parse_fault_scale(text: &str) -> Result<f64, String> {
    let scale: f64 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
    if !scale.is_finite() || scale < 0.0 {
        return Err(format!("expected a finite number >= 0, found {text}"));
    }
    Ok(scale)
}

/// Runs the parsed command.
pub fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Run(args) => run::run(&args.setup, args.seed),
        Command::Sweep(args) => sweep::sweep(&args.setup, args.seeds, &args.out),
        Command::List => {
            println!("scenarios:");
            for (name, text) in agentsim::builtin::SCENARIOS {
                // Built-ins are parsed by the tests; a description is shown when present.
                let about = agentsim_worlds::Scenario::parse(text, name).map(|s| s.description).unwrap_or_default();
                println!("  {name:<16} {about}");
            }
            println!("agent presets:");
            for (name, about) in agentsim_agents::PRESETS {
                println!("  {name:<10} {about}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
