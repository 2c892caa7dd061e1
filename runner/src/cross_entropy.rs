//! `sweep --importance auto`: the cross-entropy method chooses the tilts.
//!
//! The best tilt for estimating the rate of an event `A` draws each run with
//! its nominal probability *given* `A`: every run then shows `A` and carries the
//! same weight. The cross-entropy method fits the per-rule Bernoulli
//! probabilities to that distribution from pilot sweeps. Each pilot sweep runs
//! [`PILOT_SEEDS_DEFAULT`] seeds (or `--importance-pilot N`) at the current
//! tilts; its *elite* are the runs where the target happened; each rule's
//! probability becomes its weighted hit fraction over the elite,
//!
//! ```text
//!     p_j = sum_elite w_i * hits_ij / sum_elite w_i * draws_ij
//! ```
//!
//! with `w_i` the run's likelihood ratio (nominal over sampled) and `draws_ij`,
//! `hits_ij` the rule's decisive draws and hits in it (recorded by the engine
//! beside the weight, `Trajectory::rule_draws`). That is the maximum-likelihood
//! fit, weighted back to the nominal measure, of the runs that show the target.
//!
//! When fewer than [`ELITE_MIN`] runs show the target (it is too rare at the
//! current tilts to fit anything), every tilted rule's probability is
//! multiplied by [`RAISE`] instead, and the next pilot tries again: the
//! multi-level form of the method, with the level being the tilt itself. The
//! pilot stops when an update moves no probability by more than [`STABLE`], or
//! after [`ITERATIONS_MAX`] sweeps. Probabilities are kept in
//! `[min(nominal, P_EDGE), max(nominal, 1 - P_EDGE)]`, away from 0 and 1, so
//! that every value that can happen nominally can still be drawn (the estimate
//! stays unbiased); a rule no elite run drew goes back to its nominal value.
//!
//! Pilot seeds: iteration k runs seeds `PILOT_SEED_START + k * n` onwards, far
//! from any sweep's own seeds (a sweep reaching them is refused), the same
//! whatever the sweep's range, shard or thread count: the tilts, and so the
//! sweep, are deterministic.

use agentsim_agents::StackSpec;
use agentsim_engine::{Outcome, Trajectory};
use agentsim_worlds::Prepared;

use crate::Error;
use crate::Runner;
use agentsim_stats::tilts::{Method, Pilot, Plan};

/// The first pilot seed: 2^63, above any seed range a sweep uses in practice.
pub const PILOT_SEED_START: u64 = 1 << 63;
/// Seeds per pilot sweep unless `--importance-pilot` says otherwise.
pub const PILOT_SEEDS_DEFAULT: u64 = 1_000;
/// The most pilot sweeps.
pub const ITERATIONS_MAX: u32 = 8;
/// Fewer elite runs than this and the pilot raises the tilt instead of fitting it.
pub const ELITE_MIN: u64 = 10;
/// How much a pilot that saw too few elite runs multiplies each probability by.
pub const RAISE: f64 = 4.0;
/// How near 0 or 1 a fitted probability may come.
pub const P_EDGE: f64 = 0.01;
/// The pilot stops once an update moves no probability by more than this.
pub const STABLE: f64 = 0.02;

/// What `--importance auto` makes likely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Any outcome but success (`failure`, the default).
    Failure,
    /// One failure mode (`gave_up`, `violation`, ...).
    Outcome(Outcome),
    /// A minefield, by name.
    Minefield(String),
}

impl Target {
    /// `failure`, an outcome's name, or else a minefield's name.
    /// An error is of kind [`ErrorKind::Argument`](crate::ErrorKind::Argument).
    pub fn parse(name: &str) -> Result<Target, Error> {
        if name == "failure" {
            return Ok(Target::Failure);
        }
        if name == "success" || name == "completion" {
            return Err(Error::argument(format!(
                "`{name}` is not a failure mode: name one (gave_up, violation, ...), or `failure`"
            )));
        }
        if let Some(outcome) = Outcome::ALL.into_iter().find(|o| o.name() == name) {
            return Ok(Target::Outcome(outcome));
        }
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Error::argument(format!("`{name}` is neither `failure`, an outcome nor a minefield name")));
        }
        Ok(Target::Minefield(name.to_string()))
    }

    /// The name, as given.
    pub fn name(&self) -> &str {
        match self {
            Target::Failure => "failure",
            Target::Outcome(o) => o.name(),
            Target::Minefield(m) => m,
        }
    }

    /// Whether the run shows the target.
    pub fn happened(&self, t: &Trajectory) -> bool {
        match self {
            Target::Failure => t.outcome != Outcome::Success,
            Target::Outcome(o) => t.outcome == *o,
            Target::Minefield(m) => t.minefields.iter().any(|f| f == m),
        }
    }
}

/// The weighted sums of one pilot sweep's elite, per drawn rule.
struct EliteSums {
    /// Runs that showed the target.
    elite: u64,
    /// The elite's log weights and (draws, hits) per rule of the plan.
    runs: Vec<(f64, Vec<(u32, u32)>)>,
}

/// Chooses the tilts for `target` by the cross-entropy method (see the module
/// documentation), with `seeds_per_iteration` seeds per pilot sweep.
pub fn choose(
    prepared: &Prepared,
    stack: &StackSpec,
    fault_scale: f64,
    target: &Target,
    seeds_per_iteration: u64,
) -> Result<Plan, Error> {
    assert!(seeds_per_iteration >= 1, "a pilot of at least one seed");
    let catalog = &prepared.catalog;
    let mut plan = Plan::of_scale(catalog, fault_scale, 1.0);
    plan.method = Method::CrossEntropy;
    plan.scale = None;
    let offsets = rule_positions(catalog, &plan);
    let mut iterations = 0;
    let mut events_last = 0;
    for k in 0..u64::from(ITERATIONS_MAX) {
        let start = PILOT_SEED_START + k * seeds_per_iteration;
        let runner =
            Runner::new(prepared, stack, false, fault_scale).with_tilts(Some(plan.probabilities(catalog, fault_scale)));
        let mut sums = EliteSums { elite: 0, runs: Vec::new() };
        runner
            .sweep(start..start + seeds_per_iteration, |t| {
                if target.happened(&t) && t.log_weight > f64::NEG_INFINITY {
                    sums.elite += 1;
                    let counts = offsets.iter().map(|i| (t.rule_draws[*i].draws, t.rule_draws[*i].hits)).collect();
                    sums.runs.push((t.log_weight, counts));
                }
                Ok::<(), ()>(())
            })
            .expect("the pilot's sink never fails");
        iterations += 1;
        events_last = sums.elite;
        let moved = if sums.elite < ELITE_MIN { raise(&mut plan) } else { fit(&mut plan, &sums) };
        // Stable after a fit, or nothing left to raise.
        if (sums.elite >= ELITE_MIN && moved <= STABLE) || moved == 0.0 {
            break;
        }
    }
    if events_last == 0 {
        return Err(Error::run(format!(
            "--importance auto: `{}` never happened in the last of {iterations} pilot sweeps of \
             {seeds_per_iteration} seeds, with every fault raised up to {RAISE}^{} times its probability \
             (at most {}); name a failure mode this scenario and stack can reach (--importance-target), \
             or give the tilts in a file",
            target.name(),
            iterations - 1,
            1.0 - P_EDGE
        )));
    }
    plan.pilot = Some(Pilot {
        target: target.name().to_string(),
        seeds_per_iteration,
        iterations,
        seed_start: PILOT_SEED_START,
        trajectories: u64::from(iterations) * seeds_per_iteration,
        events_last,
    });
    plan.check_support().map_err(|m| Error::run(format!("--importance auto chose a biased tilt: {m}")))?;
    Ok(plan)
}

/// Where each rule of `plan` sits in a trajectory's `rule_draws` (tools in id
/// order, then each tool's rules).
fn rule_positions(catalog: &agentsim_engine::Catalog, plan: &Plan) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut offset = 0;
    for spec in catalog.specs() {
        starts.push(offset);
        offset += spec.config.faults.len();
    }
    plan.tilts.iter().map(|t| starts[catalog.id(&t.tool).expect("the plan's tools").0 as usize] + t.rule).collect()
}

/// The interval a rule's sampled probability is kept in.
fn bounds(nominal: f64) -> (f64, f64) {
    (nominal.min(P_EDGE), nominal.max(1.0 - P_EDGE))
}

/// A rule that cannot be tilted: one that never or always fires nominally.
fn fixed(nominal: f64) -> bool {
    nominal <= 0.0 || nominal >= 1.0
}

/// Multi-level step: every tilted rule's probability times [`RAISE`], within
/// its bounds. Returns the largest change.
fn raise(plan: &mut Plan) -> f64 {
    let mut moved: f64 = 0.0;
    for t in plan.tilts.iter_mut().filter(|t| !fixed(t.nominal)) {
        let (lo, hi) = bounds(t.nominal);
        let next = (t.sampled * RAISE).clamp(lo, hi);
        moved = moved.max((next - t.sampled).abs());
        t.sampled = next;
    }
    moved
}

/// The cross-entropy update over the elite. Returns the largest change.
fn fit(plan: &mut Plan, sums: &EliteSums) -> f64 {
    // Weights relative to the heaviest elite run: the ratio is what counts, and
    // the runs' own weights may be far below the smallest f64.
    let top = sums.runs.iter().map(|(lw, _)| *lw).fold(f64::NEG_INFINITY, f64::max);
    let mut moved: f64 = 0.0;
    for (j, t) in plan.tilts.iter_mut().enumerate() {
        if fixed(t.nominal) {
            continue;
        }
        let (mut hits, mut draws) = (0.0, 0.0);
        for (lw, counts) in &sums.runs {
            let w = (lw - top).exp();
            hits += w * f64::from(counts[j].1);
            draws += w * f64::from(counts[j].0);
        }
        let (lo, hi) = bounds(t.nominal);
        let next = if draws > 0.0 { (hits / draws).clamp(lo, hi) } else { t.nominal };
        moved = moved.max((next - t.sampled).abs());
        t.sampled = next;
    }
    moved
}
