//! Intervals by seed cluster for `--trials K`: the trials of a seed share its
//! world, so a rate over n x K runs is known less well than n x K independent
//! runs would say.

use agentsim::SummaryBuilder;
use agentsim::rate::Rate;
use agentsim::summary::Record;
use agentsim_engine::{Outcome, StreamSource};

fn record(seed: u64, success: bool) -> Record {
    crate::common::bare_record(seed, if success { Outcome::Success } else { Outcome::GaveUp }, 0.0)
}

/// A summary of `seeds` seeds with `trials` trials each, where seed s's
/// trials succeed by `success(s, trial)`.
fn summary(seeds: std::ops::Range<u64>, trials: u32, success: impl Fn(u64, u32) -> bool) -> agentsim::Summary {
    let mut builder = SummaryBuilder::with_trials(trials);
    for seed in seeds.clone() {
        for trial in 0..trials {
            builder.add_record(&record(seed, success(seed, trial)));
        }
    }
    builder.finish("s", "a", seeds, 1.0)
}

/// Trials that always agree carry the information of one run per seed: the
/// design effect is K (times k/(k-1), the sample variance's correction), and
/// the interval is that of the seeds alone.
#[test]
fn identical_trials_count_as_one_run_per_seed() {
    let seeds = 400u64;
    let s = summary(0..seeds, 4, |seed, _| seed % 5 != 0);
    let deff = s.design_effect.as_ref().expect("with trials")["completion"];
    let expected = 4.0 * seeds as f64 / (seeds - 1) as f64;
    assert!((deff - expected).abs() < 1e-9, "{deff} vs {expected}");
    let by_seed = Rate::wilson(320, 400);
    assert!(
        (s.completion.hi - s.completion.lo) > 0.99 * (by_seed.hi - by_seed.lo),
        "{:?} vs {by_seed:?}",
        s.completion
    );
    assert_eq!((s.completion.count, s.completion.n), (1_280, 1_600));
}

/// Trials independent of the seed: no design effect beyond noise, the interval
/// is (at least) the plain one.
#[test]
fn independent_trials_keep_the_plain_interval() {
    let seeds = 2_000u64;
    let s = summary(0..seeds, 4, |seed, trial| StreamSource::new([2; 32], seed).stream(&trial.to_string()).chance(0.7));
    let deff = s.design_effect.as_ref().unwrap()["completion"];
    assert!((1.0..1.15).contains(&deff), "{deff}");
    let plain = Rate::wilson(s.completion.count, s.completion.n);
    assert!(s.completion.lo <= plain.lo && s.completion.hi >= plain.hi);
}

/// The point: over repeated sweeps where each seed has its own difficulty, the
/// clustered interval covers the true rate about 95% of the time, and the
/// interval as if independent does not.
#[test]
fn clustered_intervals_cover_and_naive_ones_do_not() {
    // Seed difficulty: half the seeds succeed with 0.95, half with 0.45; the
    // true rate is 0.7.
    let truth = 0.7;
    let (replicates, seeds, trials) = (300u64, 200u64, 4u32);
    let (mut clustered, mut naive) = (0, 0);
    for r in 0..replicates {
        let range = r * seeds..(r + 1) * seeds;
        let s = summary(range, trials, |seed, trial| {
            let source = StreamSource::new([4; 32], seed);
            let p = if source.stream("difficulty").chance(0.5) { 0.95 } else { 0.45 };
            source.stream(&format!("trial{trial}")).chance(p)
        });
        clustered += usize::from(s.completion.contains(truth));
        naive += usize::from(Rate::wilson(s.completion.count, s.completion.n).contains(truth));
    }
    let (clustered, naive) = (clustered as f64 / replicates as f64, naive as f64 / replicates as f64);
    // sd of a 95% coverage over 300 sweeps: 1.3 points.
    assert!((0.91..=0.99).contains(&clustered), "clustered coverage {clustered}");
    assert!(naive < 0.90, "naive coverage {naive}");
}
