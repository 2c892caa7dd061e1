//! Importance sampling: estimates of nominal rates from a sweep whose faults were
//! drawn with tilted probabilities (`sweep --importance SCALE`).
//!
//! Each trajectory carries `log_weight`, the log of its exact likelihood ratio,
//! nominal over sampled (see `agentsim_engine::likelihood`), so `E_sampled[w] = 1`
//! and `E_sampled[w f] = p` for any event `f`.
//!
//! # Two estimators, one distribution
//!
//! The outcomes partition the runs, so their rates must sum to 1 and each lie
//! in `[0, 1]`. The summary uses one of two coherent estimators, whichever
//! estimates the total failure rate `F` (every outcome but success) with the
//! lower variance, and says which in `estimator`:
//!
//! - `complement`: each failure mode by the unbiased `(1/n) sum_i w_i f_i`, and
//!   completion as `1 - F`. It uses what only an exact ratio gives, the known
//!   normalisation `E[w] = 1`, so the heavy weights of runs that did *not* fail
//!   (a tilt fitted to a failure) do not enter the failure rates. It is not
//!   chosen when the failure estimates sum above 1.
//! - `self-normalised`: each rate as `sum_i w_i f_i / sum_i w_i`, always in
//!   `[0, 1]`, with an O(1/n) bias.
//!
//! Either way the rates of the outcomes sum to 1 (up to rounding), and
//! completion's interval is `1 - ` the interval of `F`, as tight as the
//! failures' own. Minefields (not a partition) use the same estimator.
//!
//! Intervals: trajectories are grouped by seed (the `--trials` of one seed share
//! the world and the faults, so they are one cluster), with `y_s` and `W_s` the
//! seed's mean of `w f` and of `w`. The unbiased estimate's variance is the
//! sample variance of the `y_s` over `n_seeds`; the self-normalised one's is the
//! linearised (ratio-estimator) variance `sum_s (y_s - R W_s)^2 / (n (n - 1) W^2)`.
//! The 95% interval is the normal one, `estimate +- z * se`, and estimate and
//! interval are clamped alike to `[0, 1]` (clamping is monotone, so the estimate
//! stays inside its interval). With no run showing the event, `hi` is `null`
//! (nothing bounds it; a gate fails), and then completion's `lo` is 0.
//!
//! # When an interval cannot be trusted
//!
//! A normal interval is only as good as the sample of weights behind it. Each
//! estimate carries `trusted`, false (with a warning saying why, and shown in
//! the table) when any of these diagnostics fails:
//!
//! - the mean weight: it is exactly 1 in expectation, so a sweep whose weights
//!   average further than [`WEIGHT_MEAN_Z`] standard errors from 1 missed (or
//!   over-counted) runs carrying nominal probability: a tilt that made a
//!   nominally likely value nearly impossible. Every rate is then in doubt,
//!   whatever its interval says.
//! - Kish's effective sample size `(sum w)^2 / sum w^2`, over all runs (for
//!   completion, and for every rate under `self-normalised`) and over the runs
//!   showing the event (`(sum w f)^2 / sum (w f)^2`): below [`ESS_SHARE_LOW`] of
//!   the runs it is worth, a few runs carry the estimate.
//! - the Pareto shape `k` of the weights' upper tail (Vehtari et al., "Pareto
//!   smoothed importance sampling", JMLR 2024): above [`pareto_k_max`] the
//!   weights' variance is infinite or as good as, and the interval unreliable.
//! - fewer than [`EVENTS_FEW`] runs showing the event.
//!
//! A tilt chosen for one failure mode (`--importance auto`) makes that rate's
//! own diagnostics good while the overall ones, and so completion, may fail.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use serde::Serialize;

use crate::rate::Z_95;
use agentsim_engine::rng::{CHANCE_ONE, chance_threshold};
use agentsim_engine::{Catalog, Fault, Outcome};

use crate::rows::Record;
use crate::tilts::{Method, Pilot, Plan, RuleTilt};

/// Below this share of the runs it rests on, an effective sample size earns a
/// warning: Kish's ESS is the number of equally weighted runs the estimate is
/// worth, and at a tenth of them the normal interval's variance estimate rests
/// on a few runs (the usual rule of thumb for importance sampling).
pub const ESS_SHARE_LOW: f64 = 0.1;

/// Fewer sampled events than this and a rate's normal interval earns a warning.
pub const EVENTS_FEW: u64 = 10;

/// How many standard errors the mean weight may stray from 1. Under a sound
/// tilt the mean of exact likelihood ratios is 1 plus a normal error; beyond
/// 4 standard errors (a chance of 6e-5 for a normal error, so a correct sweep
/// is almost never flagged) the sweep has, all but surely, not sampled runs
/// that carry nominal probability. Heavy-tailed weights make the standard
/// error too small, which makes the check stricter, as it should be.
pub const WEIGHT_MEAN_Z: f64 = 4.0;

/// The Pareto shape above which importance-sampling estimates are unreliable
/// at any sample size: 0.7 (Vehtari, Simpson, Gelman, Yao and Gabry, "Pareto
/// smoothed importance sampling", JMLR 25, 2024, section 3).
pub const PARETO_K_LIMIT: f64 = 0.7;

/// The most upper-tail weights kept per event for the Pareto fit: the fit uses
/// the largest `min(n / 5, 3 sqrt(n))` of `n` (Vehtari et al.), which this
/// bound caps from a million runs on, so the summary's memory stays fixed.
pub const TAIL_KEPT_MAX: usize = 3_000;

/// The fewest tail weights a Pareto fit is made from.
const TAIL_FIT_MIN: usize = 5;

/// The Pareto shape above which an estimate from `n` runs is not trusted:
/// `min(1 - 1 / log10(n), 0.7)`, Vehtari et al.'s sample-size dependent
/// threshold (a small sample cannot make even a moderately heavy tail's mean
/// converge).
pub fn pareto_k_max(n: u64) -> f64 {
    let digits = (n.max(1) as f64).log10();
    if digits <= 1.0 { 0.0 } else { (1.0 - 1.0 / digits).min(PARETO_K_LIMIT) }
}

/// Which estimator the rates of a summary use (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// Failure modes unbiased, completion as 1 minus their sum.
    Complement,
    /// Every rate as `sum w f / sum w`.
    SelfNormalised,
}

/// One importance-sampling estimate of a nominal rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The estimate of the nominal rate, in `[0, 1]` and inside `[lo, hi]`.
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
    /// The largest Pareto shape of the weight tails the estimate rests on
    /// (its own runs; with them, all runs for completion and under
    /// `self-normalised`); `null` when no tail was long and varied enough to fit.
    pub pareto_k: Option<f64>,
    /// Whether every diagnostic holds, so that the interval can be trusted
    /// (see the module documentation); `warnings` says why not.
    pub trusted: bool,
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
    /// How the rates were estimated: `complement` (failure modes unbiased,
    /// completion 1 minus their sum) or `self-normalised`; either way the
    /// outcomes' rates sum to 1.
    pub estimator: Estimator,
    /// Kish's effective sample size of the weights.
    pub ess: f64,
    /// The mean weight over seeds, exactly 1 in expectation.
    pub weight_mean: f64,
    /// Its standard error.
    pub weight_mean_se: f64,
    /// The Pareto shape of the upper tail of all weights (`null`: no tail long
    /// and varied enough to fit).
    pub pareto_k: Option<f64>,
    /// The Pareto shape above which an estimate is not trusted at this sample
    /// size ([`pareto_k_max`]).
    pub pareto_k_max: f64,
    /// Seeds (clusters) the intervals are over.
    pub seeds: u64,
    /// Nominal rates: `completion`, then each other outcome by name (`violation`,
    /// `looped`, `gave_up`, ...).
    pub rates: BTreeMap<String, Estimate>,
    /// Nominal rates of each minefield that fired in the sweep, by name.
    pub minefields: BTreeMap<String, Estimate>,
    /// Why some intervals are not to be trusted, in words.
    pub warnings: Vec<String>,
}

/// A log weight ordered by `total_cmp`, for the tail heaps.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ordered(f64);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The largest log weights of an event's runs, at most [`TAIL_KEPT_MAX`] + 1:
/// the same set whatever order the runs come in.
#[derive(Clone, Debug, Default)]
struct Tail {
    smallest_first: BinaryHeap<Reverse<Ordered>>,
}

impl Tail {
    fn push(&mut self, log_weight: f64) {
        let full = self.smallest_first.len() > TAIL_KEPT_MAX;
        if full && self.smallest_first.peek().is_some_and(|Reverse(Ordered(least))| log_weight <= *least) {
            // Below the kept tail (or tied with its least): the kept set is the same.
            return;
        }
        self.smallest_first.push(Reverse(Ordered(log_weight)));
        if self.smallest_first.len() > TAIL_KEPT_MAX + 1 {
            self.smallest_first.pop();
        }
    }

    /// The Pareto shape of the upper tail of `runs` weights (see [`pareto_shape`]).
    fn pareto_k(&self, runs: u64) -> Option<f64> {
        let r = runs as f64;
        let wanted = (0.2 * r).min(3.0 * r.sqrt()).ceil() as usize;
        let size = wanted.min(TAIL_KEPT_MAX).min(self.smallest_first.len().saturating_sub(1));
        if size < TAIL_FIT_MIN {
            return None;
        }
        let mut kept: Vec<f64> = self.smallest_first.iter().map(|Reverse(Ordered(lw))| *lw).collect();
        kept.sort_by(f64::total_cmp);
        let tail = &kept[kept.len() - size..];
        let cutoff = kept[kept.len() - size - 1];
        let top = tail[size - 1];
        // Relative to the largest weight: the weights themselves may underflow.
        let exceedances: Vec<f64> = tail.iter().map(|lw| (lw - top).exp() - (cutoff - top).exp()).collect();
        pareto_shape(&exceedances)
    }
}

/// The shape `k` of a generalised Pareto distribution fitted to `x` (ascending,
/// at least 0) by Zhang and Stephens' (2009) empirical Bayes method with the
/// weakly informative prior PSIS uses (`loo::gpdfit`); `None` when the tail is
/// flat (every exceedance 0: bounded weights) or the fit is not a number.
fn pareto_shape(x: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let largest = *x.last()?;
    if largest <= 0.0 {
        return None;
    }
    let quartile = x[((n / 4.0 + 0.5).floor() as usize).saturating_sub(1)];
    // Ties at the cutoff leave the quartile 0: the grid then scales on the
    // smallest positive exceedance.
    let scale = if quartile > 0.0 { quartile } else { x.iter().copied().find(|v| *v > 0.0)? };
    let prior = 3.0;
    let grid = 30 + n.sqrt().floor() as usize;
    let mean_log = |theta: f64| x.iter().map(|v| (-theta * v).ln_1p()).sum::<f64>() / n;
    let thetas: Vec<f64> =
        (1..=grid).map(|j| 1.0 / largest + (1.0 - (grid as f64 / (j as f64 - 0.5)).sqrt()) / prior / scale).collect();
    let profile: Vec<f64> = thetas
        .iter()
        .map(|theta| {
            let k = mean_log(*theta);
            n * ((-theta / k).ln() - k - 1.0)
        })
        .collect();
    let top = profile.iter().copied().filter(|l| l.is_finite()).fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return None;
    }
    let weights: Vec<f64> = profile.iter().map(|l| if l.is_finite() { (l - top).exp() } else { 0.0 }).collect();
    let total: f64 = weights.iter().sum();
    let theta: f64 = thetas.iter().zip(&weights).map(|(t, w)| t * w / total).sum();
    let k = mean_log(theta);
    // The prior's pull towards 0.5, as PSIS applies it (10 pseudo-observations).
    let k = (k * n + 5.0) / (n + 10.0);
    k.is_finite().then_some(k)
}

/// Per-event sums over one seed's trials, then over seeds.
#[derive(Clone, Debug, Default)]
struct EventSums {
    /// Sum over seeds of y_s, of y_s^2 and of y_s W_s.
    sum_y: f64,
    sum_y2: f64,
    sum_yw: f64,
    /// The open seed's sum of w f over its trials.
    open: f64,
    events: u64,
    /// Sum of w f and of (w f)^2 over runs, for the rate's own ESS.
    sum_wf: f64,
    sum_wf2: f64,
    tail: Tail,
}

/// An estimate before clamping: the point and its standard error.
#[derive(Clone, Copy, Debug)]
struct Raw {
    point: f64,
    se: f64,
}

impl EventSums {
    /// Closes the seed, whose mean weight over its `trials` was `w_seed`.
    fn close(&mut self, trials: f64, w_seed: f64) {
        let y = self.open / trials;
        self.sum_y += y;
        self.sum_y2 += y * y;
        self.sum_yw += y * w_seed;
        self.open = 0.0;
    }

    /// Counts one run that showed the event, with log weight `log_weight`.
    fn add(&mut self, log_weight: f64) {
        let w = log_weight.exp();
        self.open += w;
        self.events += 1;
        self.sum_wf += w;
        self.sum_wf2 += w * w;
        self.tail.push(log_weight);
    }

    fn ess(&self) -> f64 {
        if self.sum_wf2 > 0.0 { self.sum_wf * self.sum_wf / self.sum_wf2 } else { 0.0 }
    }

    /// The unbiased estimate over `seeds` seeds.
    fn unbiased(&self, seeds: u64) -> Raw {
        let n = seeds as f64;
        let mean = self.sum_y / n;
        // The sample variance of the y_s; rounding can leave it a hair below 0.
        let variance = if seeds > 1 { ((self.sum_y2 - n * mean * mean) / (n - 1.0)).max(0.0) } else { 0.0 };
        Raw { point: mean, se: (variance / n).sqrt() }
    }

    /// The self-normalised estimate, with `w` the sums of the seeds' mean weights.
    fn self_normalised(&self, w: &WeightSums) -> Raw {
        let n = w.seeds as f64;
        if w.sum_w <= 0.0 {
            return Raw { point: 0.0, se: 0.0 };
        }
        let ratio = self.sum_y / w.sum_w;
        let residuals = (self.sum_y2 - 2.0 * ratio * self.sum_yw + ratio * ratio * w.sum_w2).max(0.0);
        let variance = if w.seeds > 1 { residuals / (n * (n - 1.0)) } else { 0.0 };
        Raw { point: ratio, se: variance.sqrt() / (w.sum_w / n) }
    }
}

/// Sums over seeds of the seeds' mean weight `W_s` and of `W_s^2`.
#[derive(Clone, Debug, Default)]
struct WeightSums {
    seeds: u64,
    sum_w: f64,
    sum_w2: f64,
}

impl WeightSums {
    fn mean(&self) -> Raw {
        let n = self.seeds as f64;
        if self.seeds == 0 {
            return Raw { point: 1.0, se: 0.0 };
        }
        let mean = self.sum_w / n;
        let variance = if self.seeds > 1 { ((self.sum_w2 - n * mean * mean) / (n - 1.0)).max(0.0) } else { 0.0 };
        Raw { point: mean, se: (variance / n).sqrt() }
    }
}

/// The estimate and interval of `raw`, clamped alike to `[0, 1]`.
fn clamped(raw: Raw, events: u64) -> (f64, f64, Option<f64>) {
    let half = Z_95 * raw.se;
    let unit = |v: f64| v.clamp(0.0, 1.0);
    (unit(raw.point), unit(raw.point - half), (events > 0).then(|| unit(raw.point + half)))
}

/// Accumulates records, in (seed, trial) order, into an [`ImportanceSummary`].
#[derive(Clone, Debug)]
pub struct ImportanceBuilder {
    plan: Plan,
    /// Sums of w and w^2 over runs (Kish's ESS).
    sum_w: f64,
    sum_w2: f64,
    /// Sums of the seeds' mean weights.
    weights: WeightSums,
    /// The open seed, its trials so far and their sum of w.
    open_seed: Option<(u64, u32)>,
    open_w: f64,
    outcomes: BTreeMap<&'static str, EventSums>,
    /// Every outcome but success, together.
    failure: EventSums,
    /// The largest log weights of all runs.
    tail: Tail,
    minefields: BTreeMap<String, EventSums>,
}

impl ImportanceBuilder {
    /// Empty, for a sweep tilted by `scale` (its tilts not listed).
    pub fn new(scale: f64) -> Self {
        Self::with_plan(Plan { method: Method::Scale, scale: Some(scale), tilts: Vec::new(), pilot: None })
    }

    /// Empty, for a sweep drawn under `plan`.
    pub fn with_plan(plan: Plan) -> Self {
        let outcomes = Outcome::ALL.iter().map(|o| (rate_name(*o), EventSums::default())).collect();
        Self {
            plan,
            sum_w: 0.0,
            sum_w2: 0.0,
            weights: WeightSums::default(),
            open_seed: None,
            open_w: 0.0,
            outcomes,
            failure: EventSums::default(),
            tail: Tail::default(),
            minefields: BTreeMap::new(),
        }
    }

    fn close_seed(&mut self) {
        if let Some((_, trials)) = self.open_seed.take() {
            let trials = f64::from(trials);
            let w_seed = self.open_w / trials;
            self.open_w = 0.0;
            let all = self.outcomes.values_mut().chain(self.minefields.values_mut());
            for sums in all.chain(std::iter::once(&mut self.failure)) {
                sums.close(trials, w_seed);
            }
            self.weights.seeds += 1;
            self.weights.sum_w += w_seed;
            self.weights.sum_w2 += w_seed * w_seed;
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
        assert!(!r.log_weight.is_nan(), "seed {}: log_weight {} is not a number", r.seed, r.log_weight);
        let w = r.log_weight.exp();
        self.sum_w += w;
        self.sum_w2 += w * w;
        self.open_w += w;
        self.tail.push(r.log_weight);
        self.outcomes.get_mut(rate_name(r.outcome)).expect("every outcome is listed").add(r.log_weight);
        if r.outcome != Outcome::Success {
            self.failure.add(r.log_weight);
        }
        for minefield in &r.minefields {
            // A minefield first met now: every seed closed so far had y = 0.
            self.minefields.entry(minefield.clone()).or_default().add(r.log_weight);
        }
    }

    /// The summary of everything added, over `trajectories` trajectories.
    pub fn finish(mut self, trajectories: u64) -> ImportanceSummary {
        self.close_seed();
        let judge = Judge::new(&self, trajectories);
        let mut warnings = judge.overall_warnings(self.plan.pilot.as_ref().map(|p| p.target.as_str()));
        let mut rates = BTreeMap::new();
        for (name, sums) in &self.outcomes {
            let (estimate, reasons) =
                if *name == "completion" { judge.completion(&self.failure, sums) } else { judge.rate(sums) };
            warnings.extend(reasons.into_iter().map(|reason| format!("{name}: {reason}")));
            rates.insert(name.to_string(), estimate);
        }
        let mut minefields = BTreeMap::new();
        for (name, sums) in &self.minefields {
            let (estimate, reasons) = judge.rate(sums);
            warnings.extend(reasons.into_iter().map(|reason| format!("{name}: {reason}")));
            minefields.insert(name.clone(), estimate);
        }
        let weight_mean = self.weights.mean();
        let Plan { method, scale, tilts, pilot } = self.plan;
        ImportanceSummary {
            method,
            scale,
            tilts,
            pilot,
            estimator: judge.estimator,
            ess: judge.ess,
            weight_mean: weight_mean.point,
            weight_mean_se: weight_mean.se,
            pareto_k: judge.pareto_k,
            pareto_k_max: judge.pareto_k_max,
            seeds: judge.weights.seeds,
            rates,
            minefields,
            warnings,
        }
    }
}

/// `completion` for success, else the outcome's name.
fn rate_name(outcome: Outcome) -> &'static str {
    if outcome == Outcome::Success { "completion" } else { outcome.name() }
}

/// The sweep-wide diagnostics, and the estimates and verdicts they give.
struct Judge {
    estimator: Estimator,
    weights: WeightSums,
    runs: u64,
    /// Kish's ESS over all runs, and whether it is high enough.
    ess: f64,
    ess_ok: bool,
    pareto_k: Option<f64>,
    pareto_k_max: f64,
    /// Whether the mean weight is within [`WEIGHT_MEAN_Z`] standard errors of 1.
    weight_mean_ok: bool,
}

impl Judge {
    fn new(b: &ImportanceBuilder, runs: u64) -> Self {
        let ess = if b.sum_w2 > 0.0 { b.sum_w * b.sum_w / b.sum_w2 } else { 0.0 };
        let pareto_k_max = pareto_k_max(runs);
        let mean = b.weights.mean();
        let weight_mean_ok = (mean.point - 1.0).abs() <= WEIGHT_MEAN_Z * mean.se;
        // The estimator that gives the total failure rate the lower variance;
        // the complement only while the failure modes' estimates sum to at most 1.
        let unbiased = b.failure.unbiased(b.weights.seeds.max(1));
        let normalised = b.failure.self_normalised(&b.weights);
        let complement = b.weights.sum_w <= 0.0 || (unbiased.point <= 1.0 && unbiased.se <= normalised.se);
        Judge {
            estimator: if complement { Estimator::Complement } else { Estimator::SelfNormalised },
            weights: b.weights.clone(),
            runs,
            ess,
            ess_ok: runs == 0 || ess >= ESS_SHARE_LOW * runs as f64,
            pareto_k: b.tail.pareto_k(runs),
            pareto_k_max,
            weight_mean_ok,
        }
    }

    fn overall_k_ok(&self) -> bool {
        self.pareto_k.is_none_or(|k| k <= self.pareto_k_max)
    }

    /// Whether the diagnostics of all runs hold (they bear on completion, and
    /// on every rate under the self-normalised estimator).
    fn overall_ok(&self) -> bool {
        self.ess_ok && self.overall_k_ok()
    }

    fn raw(&self, sums: &EventSums) -> Raw {
        if self.weights.seeds == 0 {
            return Raw { point: 0.0, se: 0.0 };
        }
        match self.estimator {
            Estimator::Complement => sums.unbiased(self.weights.seeds),
            Estimator::SelfNormalised => sums.self_normalised(&self.weights),
        }
    }

    /// Why the runs showing an event cannot carry its interval (empty: they can).
    fn own_doubts(&self, sums: &EventSums) -> Vec<String> {
        let mut doubts = Vec::new();
        if (1..EVENTS_FEW).contains(&sums.events) {
            doubts.push(format!(
                "seen in {} trajectories, too few for the normal interval; raise --importance or the seeds",
                sums.events
            ));
        }
        let ess = sums.ess();
        if sums.events >= EVENTS_FEW && ess < ESS_SHARE_LOW * sums.events as f64 {
            doubts.push(format!(
                "its own ess is {ess:.1} of the {} runs showing it: a few of them carry the estimate, so its \
                 interval is not to be trusted",
                sums.events
            ));
        }
        if let Some(k) = sums.tail.pareto_k(sums.events).filter(|k| *k > self.pareto_k_max) {
            doubts.push(format!(
                "the weights of the runs showing it have a Pareto tail k = {k:.2}, above {:.2}: their variance \
                 is as good as infinite, so its interval is not to be trusted",
                self.pareto_k_max
            ));
        }
        doubts
    }

    /// A failure mode's or a minefield's estimate, and its own doubts.
    fn rate(&self, sums: &EventSums) -> (Estimate, Vec<String>) {
        let (estimate, lo, hi) = clamped(self.raw(sums), sums.events);
        let doubts = self.own_doubts(sums);
        let own_k = sums.tail.pareto_k(sums.events);
        let pareto_k = match self.estimator {
            Estimator::Complement => own_k,
            Estimator::SelfNormalised => max_k(own_k, self.pareto_k),
        };
        let overall_ok = self.estimator == Estimator::Complement || self.overall_ok();
        let trusted = doubts.is_empty() && sums.events > 0 && overall_ok && self.weight_mean_ok;
        (Estimate { estimate, lo, hi, events: sums.events, ess: sums.ess(), pareto_k, trusted }, doubts)
    }

    /// Completion: 1 minus the total failure rate, its interval from that of
    /// the failures (`success` gives the runs showing it and their ESS).
    fn completion(&self, failure: &EventSums, success: &EventSums) -> (Estimate, Vec<String>) {
        let (f, f_lo, f_hi) = clamped(self.raw(failure), failure.events);
        let mut doubts = Vec::new();
        if failure.events == 0 && self.weights.seeds > 0 {
            doubts.push(
                "no run failed, so nothing bounds the failure rate from above: completion's lower bound is 0"
                    .to_string(),
            );
        }
        doubts.extend(self.own_doubts(failure).into_iter().map(|d| format!("from the failing runs: {d}")));
        let trusted = failure.events > 0 && doubts.is_empty() && self.overall_ok() && self.weight_mean_ok;
        let estimate = Estimate {
            estimate: 1.0 - f,
            lo: f_hi.map_or(0.0, |hi| 1.0 - hi),
            hi: Some(1.0 - f_lo),
            events: success.events,
            ess: success.ess(),
            pareto_k: max_k(failure.tail.pareto_k(failure.events), self.pareto_k),
            trusted,
        };
        (estimate, doubts)
    }

    /// The warnings on all runs' diagnostics: `target` is the failure mode the
    /// tilts were chosen for, if a pilot chose them.
    fn overall_warnings(&self, target: Option<&str>) -> Vec<String> {
        let mut warnings = Vec::new();
        let mean = self.weights.mean();
        if !self.weight_mean_ok {
            warnings.push(format!(
                "the weights average {:.4} (standard error {:.2e}) where they must average exactly 1: the tilt \
                 made runs that carry about {:.2} of the nominal probability too rare to be drawn, so no \
                 estimate or interval is to be trusted; bring the tilted probabilities nearer the nominal ones",
                mean.point,
                mean.se,
                (1.0 - mean.point).abs()
            ));
        }
        let which = match self.estimator {
            Estimator::Complement => "completion and its interval are",
            Estimator::SelfNormalised => {
                "the estimates and intervals (self-normalised: each divides by the weights' sum) are"
            }
        };
        let (ess, runs) = (self.ess, self.runs);
        match target {
            Some(target) if !self.ess_ok => warnings.push(format!(
                "effective sample size {ess:.1} of {runs} trajectories: the tilts were chosen for `{target}`, so \
                 the other rates rest on a few heavy runs: {which} not to be trusted (see each rate's own `ess` \
                 and `trusted`)"
            )),
            None if !self.ess_ok => warnings.push(format!(
                "effective sample size {ess:.1} of {runs} trajectories: a few runs carry most of the weight, so \
                 {which} not to be trusted; lower --importance"
            )),
            _ => {}
        }
        if let Some(k) = self.pareto_k.filter(|_| !self.overall_k_ok()) {
            warnings.push(format!(
                "the weights' upper tail has Pareto k = {k:.2}, above {:.2} for {runs} runs: their variance is as \
                 good as infinite, so {which} not to be trusted",
                self.pareto_k_max
            ));
        }
        warnings
    }
}

/// The larger of two Pareto shapes, either possibly not fitted.
fn max_k(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Refuses a tilt under which some fault decision would lose a value it can take
/// nominally: a rule with nominal probability below 1 tilted to 1 never draws
/// "no fault", so the runs without it, which the estimate must weigh, are never
/// sampled and the estimate would be biased. Returns the rule and the reason.
pub fn check_support(catalog: &Catalog, fault_scale: f64, importance: f64) -> Result<(), crate::tilts::SupportError> {
    use crate::tilts::{SupportError, SupportErrorKind};
    if !(importance.is_finite() && importance > 0.0) {
        return Err(SupportError {
            kind: SupportErrorKind::Scale,
            message: format!("--importance: expected a finite scale above 0, found {importance}"),
        });
    }
    let sampled_scale = crate::tilts::tilted_scale(fault_scale, importance);
    for spec in catalog.specs() {
        for (index, rule) in
            spec.config.faults.iter().enumerate().filter(|(_, r)| !matches!(r.fault, Fault::RateLimit { .. }))
        {
            let p = rule.probability.get();
            if chance_threshold(p * fault_scale) < CHANCE_ONE && chance_threshold(p * sampled_scale) == CHANCE_ONE {
                let message = format!(
                    "--importance {importance}: tool `{}`'s fault {:?} (probability {p} at fault scale {fault_scale}) \
                     would be drawn with probability 1, so runs without it would never be sampled and the estimate \
                     would be biased; use a scale below {}",
                    spec.def.name,
                    rule.fault,
                    1.0 / (p * fault_scale)
                );
                return Err(SupportError {
                    kind: SupportErrorKind::CertainFault { tool: spec.def.name.to_string(), rule: index },
                    message,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log weights of `n` runs whose weights are `u^-k`, `u` evenly spread
    /// over (0, 1): a Pareto tail of shape `k`, in a scrambled order.
    fn pareto_log_weights(n: u64, k: f64) -> Vec<f64> {
        (0..n).map(|i| (i * 7_919) % n).map(|i| -k * ((i as f64 + 0.5) / n as f64).ln()).collect()
    }

    #[test]
    fn the_pareto_fit_recovers_the_tail_shape() {
        for k in [0.2, 0.5, 0.9, 1.5] {
            let mut tail = Tail::default();
            let weights = pareto_log_weights(10_000, k);
            weights.iter().for_each(|lw| tail.push(*lw));
            let fitted = tail.pareto_k(10_000).expect("a fit");
            assert!((fitted - k).abs() < 0.15, "shape {k}: fitted {fitted}");
        }
    }

    #[test]
    fn a_flat_or_short_tail_is_not_fitted_and_the_kept_tail_ignores_order() {
        let mut flat = Tail::default();
        (0..1_000).for_each(|_| flat.push(0.0));
        assert_eq!(flat.pareto_k(1_000), None, "tied weights are bounded");
        let mut short = Tail::default();
        (0..20).for_each(|i| short.push(f64::from(i)));
        assert_eq!(short.pareto_k(20), None, "fewer than five tail weights");
        let weights = pareto_log_weights(20_000, 0.8);
        let (mut forward, mut backward) = (Tail::default(), Tail::default());
        weights.iter().for_each(|lw| forward.push(*lw));
        weights.iter().rev().for_each(|lw| backward.push(*lw));
        assert_eq!(forward.pareto_k(20_000), backward.pareto_k(20_000));
    }

    #[test]
    fn the_threshold_follows_the_sample_size() {
        assert!((pareto_k_max(100) - 0.5).abs() < 1e-12);
        assert_eq!(pareto_k_max(1_000_000), PARETO_K_LIMIT);
        assert_eq!(pareto_k_max(5), 0.0);
    }
}
