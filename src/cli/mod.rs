//! Argument parsing and the subcommands.

mod check;
mod compare;
mod incident;
mod interrupt;
mod llm;
mod load;
mod mcp;
mod merge;
pub(crate) mod output;
mod progress;
mod report;
mod run;
mod shell;
mod summarize;
mod sweep;
mod tau2;

use output::outln;

use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;

use agentsim_engine::Outcome;
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
        // A message quotes what a file says (a name, a value): its control
        // characters reach the terminal escaped; line breaks stay.
        let message: String = message.into();
        let message = if message.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
            message.split('\n').map(|l| agentsim::timeline::printable(l).into_owned()).collect::<Vec<_>>().join("\n")
        } else {
            message
        };
        Self { code: EXIT_BAD_INPUT, message }
    }
}

impl From<agentsim::Error> for Failure {
    fn from(e: agentsim::Error) -> Self {
        Self::input(e.message)
    }
}

impl From<agentsim::rows_file::RowsError> for Failure {
    fn from(e: agentsim::rows_file::RowsError) -> Self {
        Self::input(e.to_string())
    }
}

/// Deterministic simulator for testing the reliability of LLM-agent stacks.
#[derive(Parser, Debug)]
#[command(name = "agentsim", version, about, long_about = None)]
pub struct Cli {
    /// Threads that run trajectories (default: one per core, or
    /// RAYON_NUM_THREADS). Output never depends on it.
    #[arg(short = 'j', long, global = true, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
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
    List(ListArgs),
    /// Replay incident files: exit 0 when each reproduces its outcome and digest.
    Replay(ReplayArgs),
    /// Shrink a failing seed to its minimal fault schedule and write it as an incident.
    Shrink(ShrinkArgs),
    /// Turn a production trace (JSON lines, one tool call each) into an incident.
    ImportTrace(ImportTraceArgs),
    /// Run two stacks on the same seeds and compare them pair by pair.
    Compare(compare::CompareArgs),
    /// Check a sweep's summary.json against a gate file; exit 1 if a rule fails.
    Check(check::CheckArgs),
    /// Render sweeps (and reliability surfaces) as one self-contained HTML file.
    Report(report::ReportArgs),
    /// Combine the outputs of `sweep --shard K/N` into the files one run writes.
    Merge(merge::MergeArgs),
    /// Turn a folder of recorded sessions (incidents) into a sweep's output files.
    Summarize(summarize::SummarizeArgs),
    /// Serve a scenario's tools over MCP on stdio; judge the session when stdin closes.
    Mcp(mcp::McpArgs),
    /// Turn a tau2-bench domain folder (db.json, tasks.json, policy.md) into a scripted world.
    ImportTau2(tau2::ImportTau2Args),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(shell::CompletionsArgs),
    /// Print the manual page (roff) of agentsim and every subcommand.
    Man,
}

/// Where the scenario and the agent come from.
#[derive(Args, Debug)]
struct Setup {
    /// Scenario: a path to a RON file or a built-in name.
    #[arg(default_value = agentsim::builtin::DEFAULT_SCENARIO)]
    scenario: String,
    /// Agent: a preset (oracle, naive, retry, backoff, resilient), a stack file
    /// (.ron), cmd:COMMAND, or llm:MODEL (a model behind an OpenAI-compatible API).
    #[arg(long, default_value = "resilient")]
    agent: String,
    /// Multiply every drawn fault's probability by this factor; 0 injects no fault
    /// of any kind (rate limits, explicit and traced faults off too; drift stays).
    /// `sweep` takes a comma-separated list (0,0.5,1,2,4) to map the reliability
    /// surface.
    #[arg(long, default_value = "1", value_parser = parse_fault_scales, allow_negative_numbers = true)]
    fault_scale: FaultScales,
    /// Wall-clock limit per answer of an external agent (`cmd:`), in milliseconds;
    /// an agent slower than this ends its trajectory as agent_error.
    #[arg(long, default_value_t = load::TURN_LIMIT_MS_DEFAULT)]
    turn_limit_ms: u64,
    /// With `--agent cmd:COMMAND`: wrap the external agent in the layers of this
    /// stack file (its planner is not used).
    #[arg(long)]
    layers: Option<String>,
    /// Swarm mode: each seed draws its fault parameters from the scenario's `swarm` ranges.
    #[arg(long)]
    swarm: bool,
    /// In a world with named tasks (a scripted world): `all` (the default) or
    /// `ID,ID`. Seed s runs the (s mod n)-th task listed, so seeds 0..n*k run
    /// each task k times; the task is the `task` column of trajectories.csv.
    #[arg(long)]
    tasks: Option<String>,
    /// Who speaks for the world's user: `rules` (its documented rules, the
    /// default unless the scenario names a model) or llm:MODEL (a model told
    /// the task, over the same endpoint and cassette as --agent llm:MODEL).
    #[arg(long, value_name = "SPEC")]
    user: Option<String>,
    /// Who reads the agent's messages the rules reader cannot decide: `rules`
    /// (nobody: the reading is `uncertain`, the default unless the scenario
    /// names a model) or llm:MODEL (a model asked for a fixed JSON reading,
    /// over the same endpoint and cassette as --agent llm:MODEL).
    #[arg(long, value_name = "SPEC")]
    judge: Option<String>,
    #[command(flatten)]
    llm: llm::LlmArgs,
}

/// One or more fault scales, as given to `--fault-scale`.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultScales(pub Vec<f64>);

impl FaultScales {
    /// The one scale of a command that runs a single configuration.
    pub fn single(&self, command: &str) -> Result<f64, Failure> {
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
    /// The trial of the seed to run (a sweep's `--trials`: another attempt
    /// of the agents, or another schedule when the scenario explores
    /// interleavings).
    #[arg(long, default_value_t = 0)]
    trial: u32,
    /// Also write the trajectory as an incident file (RON) that replays exactly.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// With --record: the outcome another stack must reach on this incident, as
    /// AGENT=OUTCOME (for example resilient=success); repeatable.
    #[arg(long, value_name = "AGENT=OUTCOME", value_parser = parse_expect, requires = "record")]
    expect: Vec<(String, Outcome)>,
    /// Print one JSON document instead of the timeline: the trajectory
    /// (`outcome`, `verdict`, `end_reason`, `metrics`, `minefields`, `digest`,
    /// ...) with `scenario`, `agent`, `task` and `timeline` (its lines).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Print one JSON document instead of text: `scenarios` and `presets`, each
    /// a list of `name` and `description`.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// Incident files to replay.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
    /// Replay against this stack instead, judged on the outcome the incident expects
    /// of it (`expect`), success by default.
    #[arg(long)]
    agent: Option<String>,
    /// Print one JSON document instead of text: `results` (each `file`, `agent`,
    /// `pass`, `outcome`, `digest`, `expected`, `detail`), `passed`, `failed`.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ShrinkArgs {
    #[command(flatten)]
    setup: Setup,
    /// The failing seed.
    #[arg(long, required_unless_present = "incident")]
    seed: Option<u64>,
    /// The failing trial of the seed (a sweep's `--trials`).
    #[arg(long, default_value_t = 0, conflicts_with = "incident")]
    trial: u32,
    /// Shrink this incident instead (its scenario, seed, stack and fault scale).
    #[arg(long, value_name = "FILE", conflicts_with = "seed")]
    incident: Option<String>,
    /// Where to write the minimal incident.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: PathBuf,
    /// The outcome another stack must reach on the minimal incident, as
    /// AGENT=OUTCOME; repeatable.
    #[arg(long, value_name = "AGENT=OUTCOME", value_parser = parse_expect)]
    expect: Vec<(String, Outcome)>,
}

#[derive(Args, Debug)]
struct ImportTraceArgs {
    /// The trace: one JSON object per tool call (docs/traces.md).
    #[arg(value_name = "TRACE.jsonl")]
    trace: String,
    /// The scenario whose world and tools the trace ran against: a file or a
    /// built-in name (positional, as in every other command).
    #[arg(value_name = "SCENARIO")]
    scenario: Option<String>,
    /// The same, as a flag (the form of earlier versions).
    #[arg(long = "scenario", value_name = "SCENARIO", hide = true, conflicts_with = "scenario")]
    scenario_flag: Option<String>,
    /// The stack to replay the trace with (the one that ran in production).
    #[arg(long, default_value = "resilient")]
    agent: String,
    /// The seed for everything the trace does not record (the user, the planner).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where to write the incident.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: PathBuf,
    /// The outcome another stack must reach on the incident, as AGENT=OUTCOME; repeatable.
    #[arg(long, value_name = "AGENT=OUTCOME", value_parser = parse_expect)]
    expect: Vec<(String, Outcome)>,
}

fn parse_expect(text: &str) -> Result<(String, Outcome), String> {
    let (agent, outcome) = text
        .split_once('=')
        .ok_or_else(|| format!("expected AGENT=OUTCOME (like resilient=success), found `{text}`"))?;
    let outcome = Outcome::ALL.into_iter().find(|o| o.name() == outcome).ok_or_else(|| {
        let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
        format!("unknown outcome `{outcome}` (outcomes: {})", names.join(", "))
    })?;
    Ok((agent.to_string(), outcome))
}

#[derive(Args, Debug)]
struct SweepArgs {
    #[command(flatten)]
    setup: Setup,
    /// Seeds to run, `A..B` (B excluded).
    #[arg(long, default_value = "0..1000", value_parser = parse_seeds)]
    seeds: Range<u64>,
    /// Directory for trajectories.csv and summary.json (created if missing).
    #[arg(short = 'o', long, default_value = "out", value_name = "DIR")]
    out: PathBuf,
    /// Continue the interrupted sweep in DIR (instead of --out): the arguments must
    /// be those it ran with; the result is the files one uninterrupted run writes.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    resume: Option<PathBuf>,
    /// Write the first N failing trajectories of each failure mode as incidents
    /// under DIR/failures/ (0: none).
    #[arg(long, default_value_t = 3, value_name = "N")]
    failures: usize,
    /// Attempts per seed with independent agent streams and the same world; adds
    /// pass^k for k = 1..=K to summary.json (tau-bench's measure of consistency).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    trials: u32,
    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    quiet: bool,
    /// Run only the K-th (from 0) of N contiguous parts of the seeds, for a sweep
    /// split across machines; `agentsim merge` combines the parts.
    #[arg(long, value_name = "K/N", value_parser = agentsim::shard::parse_shard)]
    shard: Option<(u32, u32)>,
    /// Importance sampling for rare failures: draw every fault at SCALE times its
    /// probability and weigh each trajectory back by its exact likelihood ratio;
    /// summary.json gains `importance` (estimates of the nominal rates that sum
    /// to 1, 95% intervals and whether each can be trusted, effective sample
    /// size, the tilts) and trajectories.csv `log_weight`. Or a tilts file (FILE.ron: a probability or scale per fault
    /// rule), or `auto`: the cross-entropy method chooses the tilts on pilot
    /// sweeps for `--importance-target`.
    #[arg(long, value_name = "SCALE|FILE.ron|auto", value_parser = parse_importance)]
    importance: Option<Importance>,
    /// With `--importance auto`: the failure mode to make likely: `failure` (any
    /// outcome but success), an outcome (`gave_up`, `violation`, ...) or a
    /// minefield's name. Default: `failure`.
    #[arg(long, value_name = "NAME", value_parser = parse_target)]
    importance_target: Option<agentsim::cross_entropy::Target>,
    /// With `--importance auto`: seeds per pilot sweep (the pilot runs up to 8,
    /// on seeds from 2^63 on, apart from the sweep's own). Default: 1000.
    #[arg(long, value_name = "SEEDS", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    importance_pilot: Option<u64>,
    /// Episodes in flight at once, on threads of their own that wait on the
    /// network (default: 64 when a model plays the agent or the user and is
    /// asked live, i.e. not --cassette-mode replay; else one per core). The
    /// output does not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    in_flight: Option<u64>,
}

/// What `--importance` was given.
#[derive(Clone, Debug, PartialEq)]
pub enum Importance {
    /// Every rule at this many times its probability.
    Scale(f64),
    /// A tilts file.
    File(String),
    /// The cross-entropy method.
    Auto,
}

fn parse_target(text: &str) -> Result<agentsim::cross_entropy::Target, String> {
    agentsim::cross_entropy::Target::parse(text).map_err(|e| e.message)
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

fn parse_importance(text: &str) -> Result<Importance, String> {
    if text == "auto" {
        return Ok(Importance::Auto);
    }
    if text.ends_with(".ron") || text.contains('/') {
        return Ok(Importance::File(text.to_string()));
    }
    let scale: f64 = text.parse().map_err(|_| format!("`{text}` is not a number, a tilts file (.ron) or `auto`"))?;
    if !scale.is_finite() || scale <= 0.0 {
        return Err(format!("expected a finite scale above 0, found {text}"));
    }
    Ok(Importance::Scale(scale))
}

/// Runs the parsed command.
pub fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    if let Some(threads) = cli.threads {
        // Before any parallel work: the global pool is built once.
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(threads))
            .build_global()
            .map_err(|e| Failure::input(format!("--threads {threads}: {e}")))?;
    }
    match cli.command {
        Command::Run(args) => {
            run::run(&args.setup, (args.seed, args.trial), args.record.as_deref(), &args.expect, args.json)
        }
        Command::Replay(args) => incident::replay(&args.files, args.agent.as_deref(), args.json),
        Command::ImportTrace(args) => {
            let scenario = args.scenario.or(args.scenario_flag);
            let scenario = scenario.as_deref().unwrap_or(agentsim::builtin::DEFAULT_SCENARIO);
            incident::import_trace(&args.trace, scenario, &args.agent, args.seed, &args.out, &args.expect)
        }
        Command::Shrink(args) => {
            let seed = args.seed.map(|seed| (seed, args.trial));
            incident::shrink(&args.setup, seed, args.incident.as_deref(), &args.out, &args.expect)
        }
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Check(args) => check::check(&args),
        Command::Report(args) => report::report(&args),
        Command::Merge(args) => merge::merge(&args),
        Command::Summarize(args) => summarize::summarize(&args),
        Command::Mcp(args) => mcp::mcp(&args),
        Command::ImportTau2(args) => tau2::import_tau2(&args),
        Command::Completions(args) => shell::completions(&args),
        Command::Man => shell::man(),
        Command::List(args) => list(args.json),
    }
}

/// `agentsim list`: the built-in scenarios and the presets.
fn list(json: bool) -> Result<ExitCode, Failure> {
    // Built-ins are parsed by the tests; a description is shown when present.
    let scenarios: Vec<(&str, String)> = agentsim::builtin::SCENARIOS
        .iter()
        .map(|(name, text)| {
            (*name, agentsim_worlds::Scenario::parse(text, name).map(|s| s.description).unwrap_or_default())
        })
        .collect();
    if json {
        let entry = |name: &str, about: &str| serde_json::json!({ "name": name, "description": about });
        output::stdout_json(&serde_json::json!({
            "scenarios": scenarios.iter().map(|(n, a)| entry(n, a)).collect::<Vec<_>>(),
            "presets": agentsim_agents::PRESETS.iter().map(|(n, a)| entry(n, a)).collect::<Vec<_>>(),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("scenarios:")?;
    for (name, about) in &scenarios {
        outln!("  {name:<16} {about}")?;
    }
    outln!("agent presets (or a stack file .ron, or cmd:COMMAND for an external agent):")?;
    for (name, about) in agentsim_agents::PRESETS {
        outln!("  {name:<10} {about}")?;
    }
    Ok(ExitCode::SUCCESS)
}
