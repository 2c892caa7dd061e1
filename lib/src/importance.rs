//! Importance sampling: estimates of nominal rates from a sweep whose faults were
//! drawn with tilted probabilities (`sweep --importance SCALE`).
//!
//! Each trajectory carries `log_weight`, the log of its exact likelihood ratio,
//! nominal over sampled (see `agentsim_engine::likelihood`). For an event `f`
//! (an outcome, a minefield) the estimate of its nominal rate is
//!
//! ```text
//!     p_hat = (1/n) * sum_i w_i * f_i
//! ```
//!
//! the *unbiased* estimator, not the self-normalised `sum w f / sum w`. The
//! likelihood ratios are exact ratios of normalised probabilities, so
//! `E_sampled[w] = 1` and `E_sampled[w f] = p` exactly: no normalisation is
//! needed, and the self-normalised form would add an O(1/n) bias (it divides by
//! a noisy `sum w`) for no gain. Its variance is lower only when `w` varies a
//! lot outside the event, which the effective sample size reports.
//!
//! Intervals: trajectories are grouped by seed (the `--trials` of one seed share
//! the world and the faults, so they are one cluster), the estimate is the mean
//! of the per-seed means `y_s = (1/K) sum_trials w f`, and the 95% interval is the
//! normal (Wald) interval `p_hat +- z * s_y / sqrt(n_seeds)` with `s_y` the
//! sample standard deviation of the `y_s`, clamped to `[0, 1]`. A Wilson interval
//! has no meaning for a weighted mean. The normal interval needs enough
//! events to hold: with fewer than [`EVENTS_FEW`] sampled events it is flagged,
//! and with none its upper bound is `null` (nothing bounds it; a gate fails).
//!
//! Each rate also has its own effective sample size, Kish's over the runs that
//! showed it (`(sum w f)^2 / sum (w f)^2`): how many equally weighted runs the
//! estimate is worth. A tilt chosen for one failure mode (`--importance auto`)
//! makes it large for that rate while the overall one below may be small.
//!
//! Effective sample size: Kish's `(sum w)^2 / sum w^2` over trajectories. It is
//! near n when the weights are even and collapses when a few trajectories carry
//! most of the weight (a tilt too strong for a run with many fault draws); below
//! [`ESS_SHARE_LOW`] of n the summary warns that the interval is not to be
//! trusted.

use std::collections::BTreeMap;

use serde::Serialize;

use agentsim_engine::rng::{CHANCE_ONE, chance_threshold};
use agentsim_engine::stats::Z_95;
use agentsim_engine::{Catalog, Fault, Outcome};

use crate::summary::Record;
use crate::tilts::{Method, Pilot, Plan, RuleTilt};

/// Below this share of the trajectories, the effective sample size earns a warning.
pub const ESS_SHARE_LOW: f64 = 0.1;

/// Fewer sampled events than this and a rate's normal interval earns a warning.
pub const EVENTS_FEW: u64 = 10;

/// One importance-sampling estimate of a nominal rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The unbiased estimate of the nominal rate.
    pub estimate: f64,
    /// Lower bound of the 95% interval.
    pub lo: f64,
    /// Upper bound of the 95% interval; `null` when no trajectory showed the
    /// event: nothing then bounds it from above (a gate on it fails).
    pub hi: Option<f64>,
    /// Trajectories of the (tilted) sweep in which the event happened.
    pub events: u64,
    /// Kish's effective sample size of the runs that showed the event
    /// (`(sum w f)^2 / sum (w f)^2`; 0 when none did).
    pub ess: f64,
}

impl Estimate {
    /// Whether `p` lies inside the interval.
    pub fn contains(&self, p: f64) -> bool {
        self.lo <= p && self.hi.is_some_and(|hi| p <= hi)
    }
}

/// What `summary.json` says of an importance-sampling sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImportanceSummary {
    /// How the tilts were chosen: `scale`, `tilts` (a file) or `cross-entropy`.
    pub method: Method,
    /// The tilt: fault probabilities were drawn at `scale` times their nominal
    /// values (the nominal ones being at the sweep's `fault_scale`); with a tilts
    /// file, the scale of the rules it does not list; `null` with the
    /// cross-entropy method, whose tilts differ per rule (see `tilts`).
    pub scale: Option<f64>,
    /// Every drawn fault rule with its nominal and sampled probability
    /// (`tool`, `rule`, `nominal`, `sampled`).
    pub tilts: Vec<RuleTilt>,
    /// With `--importance auto`: the pilot's target, size and seeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pilot: Option<Pilot>,
    /// Kish's effective sample size of the weights.
    pub ess: f64,
    /// Seeds (clusters) the intervals are over.
    pub seeds: u64,
    /// Nominal rates: `completion`, then each other outcome by name (`violation`,
    /// `looped`, `gave_up`, ...).
    pub rates: BTreeMap<String, Estimate>,
    /// Nominal rates of each minefield that fired in the sweep, by name.
    pub minefields: BTreeMap<String, Estimate>,
    /// What makes these numbers doubtful (low effective sample size, rates seen
    /// in too few trajectories), in words.
    pub warnings: Vec<String>,
}

/// Per-event sums over one seed's trials, then over seeds.
#[derive(Clone, Debug, Default)]
struct EventSums {
    /// Sum over seeds of y_s, and of y_s^2.
    sum_y: f64,
    sum_y2: f64,
    /// The open seed's sum of w f over its trials.
    open: f64,
    events: u64,
    /// Sum of w f and of (w f)^2 over runs, for the rate's own ESS.
    sum_wf: f64,
    sum_wf2: f64,
}

impl EventSums {
    fn close(&mut self, trials: f64) {
        let y = self.open / trials;
        self.sum_y += y;
        self.sum_y2 += y * y;
        self.open = 0.0;
    }

    /// Counts one run that showed the event, with weight `w`.
    fn add(&mut self, w: f64) {
        self.open += w;
        self.events += 1;
        self.sum_wf += w;
        self.sum_wf2 += w * w;
    }

    fn estimate(&self, seeds: u64) -> Estimate {
        if seeds == 0 {
            return Estimate { estimate: 0.0, lo: 0.0, hi: Some(1.0), events: 0, ess: 0.0 };
        }
        let ess = if self.sum_wf2 > 0.0 { self.sum_wf * self.sum_wf / self.sum_wf2 } else { 0.0 };
        let n = seeds as f64;
        let mean = self.sum_y / n;
        // The sample variance of the y_s; rounding can leave it a hair below 0.
        let variance = if seeds > 1 { ((self.sum_y2 - n * mean * mean) / (n - 1.0)).max(0.0) } else { 0.0 };
        let half = Z_95 * (variance / n).sqrt();
        let hi = (self.events > 0).then(|| (mean + half).min(1.0));
        Estimate { estimate: mean, lo: (mean - half).max(0.0), hi, events: self.events, ess }
    }
}

/// Accumulates records, in (seed, trial) order, into an [`ImportanceSummary`].
#[derive(Clone, Debug)]
pub struct ImportanceBuilder {
    plan: Plan,
    sum_w: f64,
    sum_w2: f64,
    seeds: u64,
    open_seed: Option<(u64, u32)>,
    outcomes: BTreeMap<&'static str, EventSums>,
    minefields: BTreeMap<String, EventSums>,
}

impl ImportanceBuilder {
    /// Empty, for a sweep tilted by `scale` (its tilts not listed).
    pub fn new(scale: f64) -> Self {
        Self::with_plan(Plan { method: Method::Scale, scale: Some(scale), tilts: Vec::new(), pilot: None })
    }

    /// Empty, for a sweep drawn under `plan`.
    pub fn with_plan(plan: Plan) -> Self {
        let outcomes = Outcome::ALL
            .iter()
            .map(|o| (if *o == Outcome::Success { "completion" } else { o.name() }, EventSums::default()))
            .collect();
        Self { plan, sum_w: 0.0, sum_w2: 0.0, seeds: 0, open_seed: None, outcomes, minefields: BTreeMap::new() }
    }

    fn close_seed(&mut self) {
        if let Some((_, trials)) = self.open_seed.take() {
            let trials = f64::from(trials);
            for sums in self.outcomes.values_mut().chain(self.minefields.values_mut()) {
                sums.close(trials);
            }
            self.seeds += 1;
        }
    }

    /// Adds the next record, in (seed, trial) order.
    pub fn add(&mut self, r: &Record) {
        match &mut self.open_seed {
            Some((seed, trials)) if *seed == r.seed => *trials += 1,
            _ => {
                self.close_seed();
                self.open_seed = Some((r.seed, 1));
            }
        }
        let w = r.log_weight.exp();
        assert!(!w.is_nan(), "seed {}: log_weight {} is not a number", r.seed, r.log_weight);
        self.sum_w += w;
        self.sum_w2 += w * w;
        let name = if r.outcome == Outcome::Success { "completion" } else { r.outcome.name() };
        self.outcomes.get_mut(name).expect("every outcome is listed").add(w);
        for minefield in &r.minefields {
            if !self.minefields.contains_key(minefield) {
                // A minefield first met now: every seed closed so far had y = 0.
                self.minefields.insert(minefield.clone(), EventSums::default());
            }
            self.minefields.get_mut(minefield).expect("inserted above").add(w);
        }
    }

    /// The summary of everything added, over `trajectories` trajectories.
    pub fn finish(mut self, trajectories: u64) -> ImportanceSummary {
        self.close_seed();
        let seeds = self.seeds;
        let ess = if self.sum_w2 > 0.0 { self.sum_w * self.sum_w / self.sum_w2 } else { 0.0 };
        let rates: BTreeMap<String, Estimate> =
            self.outcomes.iter().map(|(name, sums)| (name.to_string(), sums.estimate(seeds))).collect();
        let minefields: BTreeMap<String, Estimate> =
            self.minefields.iter().map(|(name, sums)| (name.clone(), sums.estimate(seeds))).collect();
        let mut warnings = Vec::new();
        let target = self.plan.pilot.as_ref().map(|p| p.target.as_str());
        if let (Some(target), true) = (target, trajectories > 0 && ess < ESS_SHARE_LOW * trajectories as f64) {
            warnings.push(format!(
                "effective sample size {ess:.1} of {trajectories} trajectories: the tilts were chosen for \
                 `{target}`, so the other rates rest on a few heavy runs and are not to be trusted (see each \
                 rate's own `ess`)"
            ));
        } else if trajectories > 0 && ess < ESS_SHARE_LOW * trajectories as f64 {
            warnings.push(format!(
                "effective sample size {ess:.1} of {trajectories} trajectories: a few runs carry most of the \
                 weight, so the estimates and their intervals are not to be trusted; lower --importance"
            ));
        }
        for (name, e) in rates.iter().chain(&minefields).filter(|(_, e)| (1..EVENTS_FEW).contains(&e.events)) {
            warnings.push(format!(
                "{name}: seen in {} trajectories, too few for the normal interval; raise --importance or the seeds",
                e.events
            ));
        }
        let Plan { method, scale, tilts, pilot } = self.plan;
        ImportanceSummary { method, scale, tilts, pilot, ess, seeds, rates, minefields, warnings }
    }
}

/// Refuses a tilt under which some fault decision would lose a value it can take
/// nominally: a rule with nominal probability below 1 tilted to 1 never draws
/// "no fault", so the runs without it, which the estimate must weigh, are never
/// sampled and the estimate would be biased. Returns the reason.
pub fn check_support(catalog: &Catalog, fault_scale: f64, importance: f64) -> Result<(), String> {
    if !(importance.is_finite() && importance > 0.0) {
        return Err(format!("--importance: expected a finite scale above 0, found {importance}"));
    }
    let sampled_scale = crate::runner::tilted_scale(fault_scale, importance);
    for spec in catalog.specs() {
        for rule in spec.config.faults.iter().filter(|r| !matches!(r.fault, Fault::RateLimit { .. })) {
            let p = rule.probability.get();
            if chance_threshold(p * fault_scale) < CHANCE_ONE && chance_threshold(p * sampled_scale) == CHANCE_ONE {
                return Err(format!(
                    "--importance {importance}: tool `{}`'s fault {:?} (probability {p} at fault scale {fault_scale}) \
                     would be drawn with probability 1, so runs without it would never be sampled and the estimate \
                     would be biased; use a scale below {}",
                    spec.def.name,
                    rule.fault,
                    1.0 / (p * fault_scale)
                ));
            }
        }
    }
    Ok(())
}
