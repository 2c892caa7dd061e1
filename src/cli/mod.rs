//! Argument parsing and the subcommands.

mod check;
mod compare;
mod load;
mod output;
mod progress;
mod report;
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
    /// Run two stacks on the same seeds and compare them pair by pair.
    Compare(compare::CompareArgs),
    /// Check a sweep's summary.json against a gate file; exit 1 if a rule fails.
    Check(check::CheckArgs),
    /// Render sweeps (and reliability surfaces) as one self-contained HTML file.
    Report(report::ReportArgs),
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
    /// Multiply every fault probability by this factor (0 turns faults off). `sweep`
    /// takes a comma-separated list (0,0.5,1,2,4) to map the reliability surface.
    #[arg(long, default_value = "1", value_parser = parse_fault_scales, allow_negative_numbers = true)]
    fault_scale: FaultScales,
}

/// One or more fault scales, as given to `--fault-scale`.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultScales(pub Vec<f64>);

impl FaultScales {
    /// The one scale of a command that runs a single configuration.
    fn single(&self, command: &str) -> Result<f64, Failure> {
        match self.0.as_slice() {
            [one] => Ok(*one),
            _ => Err(Failure::input(format!("--fault-scale: `{command}` takes one scale, found {}", self.0.len()))),
        }
    }
}

/// The most scales in one surface: each is a whole sweep.
const FAULT_SCALES_MAX: usize = 32;

fn parse_fault_scales(text: &str) -> Result<FaultScales, String> {
    let scales = text.split(',').map(|part| parse_fault_scale(part.trim())).collect::<Result<Vec<f64>, String>>()?;
    if scales.len() > FAULT_SCALES_MAX {
        return Err(format!("at most {FAULT_SCALES_MAX} scales, found {}", scales.len()));
    }
    for (i, a) in scales.iter().enumerate() {
        if scales[..i].contains(a) {
            return Err(format!("the scale {a} is listed twice"));
        }
    }
    Ok(FaultScales(scales))
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
    /// Attempts per seed with independent agent streams and the same world; adds
    /// pass^k for k = 1..=K to summary.json (tau-bench's measure of consistency).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    trials: u32,
    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    quiet: bool,
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
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Check(args) => check::check(&args),
        Command::Report(args) => report::report(&args),
        Command::List => {
            println!("scenarios:");
            for (name, _) in agentsim::builtin::SCENARIOS {
                println!("  {name}");
            }
            println!("agent presets:");
            for (name, about) in agentsim_agents::PRESETS {
                println!("  {name:<10} {about}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
