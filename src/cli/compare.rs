//! `agentsim compare`: two stacks on the same seeds, analysed pair by pair.

use agentsim::text::percent;
use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use agentsim::compare::{Comparison, ComparisonBuilder};
use agentsim::paired::Difference;
use agentsim::rate::Rate;
use agentsim::summary::Summary;
use agentsim::{Runner, SummaryBuilder};

use super::output::{check_output_dir, errln, lock_dir, stdout_json, stdout_text, write_atomic};
use super::progress::Progress;
use super::{Failure, load, parse_fault_scale, parse_seeds};

/// Arguments of `agentsim compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Scenario: a path to a RON file or a built-in name.
    #[arg(default_value = agentsim::builtin::DEFAULT_SCENARIO)]
    scenario: String,
    /// The stack in production today: a preset, a stack file (.ron).
    #[arg(long)]
    baseline: String,
    /// The stack that wants to replace it.
    #[arg(long)]
    candidate: String,
    /// Seeds to run, `A..B` (B excluded); both stacks run every seed.
    #[arg(long, default_value = "0..1000", value_parser = parse_seeds)]
    seeds: Range<u64>,
    /// Multiply every fault probability by this factor.
    #[arg(long, default_value_t = 1.0, value_parser = parse_fault_scale, allow_negative_numbers = true)]
    fault_scale: f64,
    /// Wall-clock limit per answer of an external agent (`cmd:`), in milliseconds.
    #[arg(long, default_value_t = load::TURN_LIMIT_MS_DEFAULT)]
    turn_limit_ms: u64,
    /// Also write DIR/compare.json (created if missing).
    #[arg(short = 'o', long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// How many disagreeing seeds to print (all are in compare.json).
    #[arg(long, default_value_t = 10)]
    show: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Print one JSON document instead of text: the comparison (as compare.json)
    /// and each stack's summary (as summary.json), under `comparison`,
    /// `baseline` and `candidate`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    llm: super::llm::LlmArgs,
}

/// Runs both stacks on every seed, prints the paired analysis.
pub fn compare(args: &CompareArgs) -> Result<ExitCode, Failure> {
    // Before the work, as every output is checked.
    if let Some(out) = &args.out {
        check_output_dir(out)?;
    }
    let prepared = load::scenario(&args.scenario)?;
    let mut baseline = load::agent(&args.baseline, &prepared, args.turn_limit_ms, None)?;
    let mut candidate = load::agent(&args.candidate, &prepared, args.turn_limit_ms, None)?;
    // A model on either side is set up from the same flags (they do nothing
    // for a preset, so only both presets refuse them).
    let options = args.llm.options();
    let model = |s: &agentsim_agents::StackSpec| matches!(s.planner, agentsim_agents::PlannerSpec::Llm(_));
    for stack in [&mut baseline, &mut candidate] {
        let own = if model(stack) { options.clone() } else { Default::default() };
        agentsim::llm::configure(stack, &own, &prepared, &args.scenario)?;
    }
    if options.any() && !model(&baseline) && !model(&candidate) {
        agentsim::llm::configure(&mut baseline, &options, &prepared, &args.scenario)?;
    }
    let run_baseline = Runner::new(&prepared, &baseline, false, args.fault_scale);
    let run_candidate = Runner::new(&prepared, &candidate, false, args.fault_scale);
    let mut builder = ComparisonBuilder::default();
    let (mut baseline_summary, mut candidate_summary) = (SummaryBuilder::new(), SummaryBuilder::new());
    let mut progress = Progress::new("compare", args.seeds.end - args.seeds.start, args.quiet);
    agentsim::ordered::for_each_ordered(
        args.seeds.clone(),
        |seed| (run_baseline.run(seed), run_candidate.run(seed)),
        |(b, c)| {
            builder.add(&b, &c);
            baseline_summary.add(&b);
            candidate_summary.add(&c);
            progress.advance(1);
            Ok::<(), Failure>(())
        },
    )?;
    progress.finish();
    let comparison =
        builder.finish(&prepared.scenario.name, &args.baseline, &args.candidate, args.seeds.clone(), args.fault_scale);
    if let Some(out) = &args.out {
        let _lock = lock_dir(out, true)?;
        let json = serde_json::to_string_pretty(&comparison).expect("a comparison is plain data") + "\n";
        write_atomic(&out.join("compare.json"), json.as_bytes())?;
    }
    let finish = |builder: SummaryBuilder, spec: &str| {
        builder.finish(&prepared.scenario.name, spec, args.seeds.clone(), args.fault_scale)
    };
    let (baseline_summary, candidate_summary) =
        (finish(baseline_summary, &args.baseline), finish(candidate_summary, &args.candidate));
    if args.json {
        stdout_json(&serde_json::json!({
            "comparison": comparison, "baseline": baseline_summary, "candidate": candidate_summary,
        }))?;
    } else {
        stdout_text(&render(&comparison, &args.scenario, args.show))?;
        stdout_text(&side_by_side(&baseline_summary, &candidate_summary))?;
    }
    if let Some(out) = &args.out {
        errln!("wrote {}/compare.json", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The other dimensions of both stacks, for context (each with its own Wilson
/// interval; only completion is analysed pair by pair above).
fn side_by_side(b: &Summary, c: &Summary) -> String {
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::UTF8_FULL_CONDENSED).set_header(vec![
        "both stacks",
        "baseline",
        "candidate",
    ]);
    for (name, x, y) in [
        ("recovery", &b.recovery, &c.recovery),
        ("violations", &b.violation, &c.violation),
        ("contextual accuracy", &b.contextual_accuracy, &c.contextual_accuracy),
        ("tool fidelity", &b.tool_fidelity, &c.tool_fidelity),
    ] {
        table.add_row(vec![name.to_string(), rate(x), rate(y)]);
    }
    table.add_row(vec!["turns p50 / p95 / p99".to_string(), spread(&b.turns), spread(&c.turns)]);
    let per_success = |s: &Summary| s.cost_usd_per_success.as_ref().map_or("n/a".to_string(), |c| format!("${c}"));
    table.add_row(vec!["cost per success".to_string(), per_success(b), per_success(c)]);
    format!("{table}\n")
}

fn spread(s: &agentsim::summary::Spread) -> String {
    format!("{} / {} / {}", s.p50, s.p95, s.p99)
}

fn rate(r: &Rate) -> String {
    format!("{} ({}/{}) [{}, {}]", percent(r.rate), r.count, r.n, percent(r.lo), percent(r.hi))
}

fn points(d: &Difference) -> String {
    format!("[{:+.2}, {:+.2}] pp, width {:.2} pp", 100.0 * d.lo, 100.0 * d.hi, 100.0 * d.width())
}

/// The comparison as the terminal shows it; `scenario` is the spec as given, for
/// the commands that reproduce a seed.
pub fn render(c: &Comparison, scenario: &str, show: usize) -> String {
    let p = &c.pairs;
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!(
        "compare {}: baseline {} vs candidate {}, seeds {}..{} ({} pairs, same seeds, same faults), fault scale {}",
        c.scenario,
        c.baseline,
        c.candidate,
        c.seed_start,
        c.seed_end,
        p.n(),
        c.fault_scale
    ));
    line(format!("  baseline  completion {}", rate(&c.baseline_completion)));
    line(format!("  candidate completion {}", rate(&c.candidate_completion)));
    line(format!(
        "pairs: both succeed {}, only baseline {}, only candidate {}, neither {} ({} discordant)",
        p.both,
        p.baseline_only,
        p.candidate_only,
        p.neither,
        p.discordant()
    ));
    line(format!("McNemar exact test on the {} discordant pairs: p = {:.3e}", p.discordant(), c.mcnemar_p));
    line(format!("difference in completion, candidate - baseline: {:+.2} pp", 100.0 * c.paired.estimate));
    line(format!("  paired 95% interval (Newcombe method 10):   {}", points(&c.paired)));
    line(format!("  unpaired 95% interval (independent sweeps): {}", points(&c.unpaired)));
    if c.unpaired.width() > 0.0 {
        line(format!(
            "  pairing the seeds makes the interval {:.0}% narrower",
            100.0 * (1.0 - c.paired.width() / c.unpaired.width())
        ));
    }
    line(format!("verdict: {} (read from the paired interval)", c.verdict.describe()));
    if c.disagreements.is_empty() {
        line("the stacks agree on every seed".to_string());
    } else {
        line(format!(
            "seeds where they disagree ({}), worst first: candidate failures by severity, then seed",
            c.disagreements.len()
        ));
        for d in c.disagreements.iter().take(show) {
            let (who, spec) = if d.is_regression() { ("candidate", &c.candidate) } else { ("baseline", &c.baseline) };
            line(format!(
                "  seed {:<8} baseline {:<16} candidate {:<16} ({who} fails: agentsim run {} --agent {spec} --seed {})",
                d.seed, d.baseline, d.candidate, scenario, d.seed
            ));
        }
        if c.disagreements.len() > show {
            line(format!("  ... {} more (all of them in compare.json with --out)", c.disagreements.len() - show));
        }
    }
    out
}
