//! Criterion benches of the 10-call model (benches/peer/README.md): one
//! trajectory of the scripted world (its files), of the world built in Rust
//! with the agent stack, of the hand-written world and agent run by the engine
//! alone, and of the minimal event loop, each on a different seed every iteration;
//! then their ratios, measured in pairs of seed blocks in thread CPU time.
//! SimPy is measured by `benches/peer/run.py`. Figures: BENCHMARKS.md, "The
//! peer: SimPy".

use std::hint::black_box;
use std::ops::Range;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use agentsim::prelude::*;
use agentsim_peer::{built, engine, minimal, scripted};

// The allocator the `agentsim` binary runs with, so the benches time what it runs.
use agentsim_alloc as _;

/// One side of a paired comparison: its name, and what runs a block of seeds.
type Side<'a> = (&'static str, Box<dyn FnMut(Range<u64>) + 'a>);

/// Seeds cycle over this many, so the median is over a mix of trajectories.
const SEEDS: u64 = 10_000;

fn trajectories(c: &mut Criterion) {
    let (scripted_world, scripted_stack) = (scripted::world(), scripted::stack());
    let built_world = built::world();
    let scripted_runner = Runner::new(&scripted_world, &scripted_stack, false, 1.0);
    let built_stack = built::stack();
    let built_runner = Runner::new(built_world.prepared(), &built_stack, false, 1.0);
    let engine_scenario = engine::Scenario::new();
    let mut minimal_loop = minimal::Loop::default();

    let mut group = c.benchmark_group("peer_ten_calls");
    group.throughput(Throughput::Elements(1));
    let mut seed = 0u64;
    group.bench_function("agentsim_scripted", |b| {
        b.iter(|| {
            seed = (seed + 1) % SEEDS;
            black_box(scripted_runner.run(seed).digest)
        })
    });
    group.bench_function("agentsim_rust", |b| {
        b.iter(|| {
            seed = (seed + 1) % SEEDS;
            black_box(built_runner.run(seed).digest)
        })
    });
    group.bench_function("agentsim_engine", |b| {
        b.iter(|| {
            seed = (seed + 1) % SEEDS;
            black_box(engine_scenario.run(seed).digest)
        })
    });
    group.bench_function("minimal_loop", |b| {
        b.iter(|| {
            seed = (seed + 1) % SEEDS;
            black_box(minimal_loop.trajectory(seed))
        })
    });
    group.finish();

    let mut sides: [Side<'_>; 4] = [
        (
            "minimal_loop",
            Box::new(|seeds| {
                black_box(minimal_loop.run(seeds));
            }),
        ),
        (
            "agentsim_engine",
            Box::new(|seeds| {
                for seed in seeds {
                    black_box(engine_scenario.run(seed).digest);
                }
            }),
        ),
        (
            "agentsim_rust",
            Box::new(|seeds| {
                for seed in seeds {
                    black_box(built_runner.run(seed).digest);
                }
            }),
        ),
        (
            "agentsim_scripted",
            Box::new(|seeds| {
                for seed in seeds {
                    black_box(scripted_runner.run(seed).digest);
                }
            }),
        ),
    ];
    paired_ratios("peer_ten_calls", &mut sides);
}

/// The CPU time the calling thread has used, in nanoseconds: what the
/// iterations cost, whatever else runs on the machine.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant
    // every Linux kernel since 2.6.12 knows.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "the thread CPU clock is readable");
    u64::try_from(now.tv_sec).expect("positive") * 1_000_000_000 + u64::try_from(now.tv_nsec).expect("positive")
}

/// Each side's cost per trajectory and its ratio to the first side, measured
/// in rounds: every round runs the same block of seeds on each side, in a
/// rotating order, so a slow spell of the machine falls on all sides of a
/// round. Prints the median over rounds of each side's time and of each ratio
/// (with quartiles).
fn paired_ratios(label: &str, sides: &mut [Side<'_>]) {
    const ROUNDS: u64 = 40;
    const SEEDS_PER_ROUND: u64 = 250;
    let cpu_ns = |side: &mut Box<dyn FnMut(Range<u64>) + '_>, seeds: Range<u64>| {
        let started = thread_cpu_ns();
        side(seeds);
        (thread_cpu_ns() - started) as f64
    };
    for (_, side) in sides.iter_mut() {
        black_box(cpu_ns(side, 0..SEEDS_PER_ROUND));
    }
    let mut us: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    for round in 0..ROUNDS {
        let seeds = round * SEEDS_PER_ROUND..(round + 1) * SEEDS_PER_ROUND;
        let mut ns = vec![0.0; sides.len()];
        for k in 0..sides.len() {
            let i = (k + round as usize) % sides.len();
            ns[i] = cpu_ns(&mut sides[i].1, seeds.clone());
        }
        for i in 0..sides.len() {
            us[i].push(ns[i] / SEEDS_PER_ROUND as f64 / 1_000.0);
            ratios[i].push(ns[i] / ns[0]);
        }
    }
    let quartiles = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: usize| v[(v.len() - 1) * q / 4];
        (at(1), at(2), at(3))
    };
    let base = sides[0].0;
    for i in 0..sides.len() {
        let (_, median_us, _) = quartiles(&mut us[i]);
        let (lo, ratio, hi) = quartiles(&mut ratios[i]);
        println!(
            "{label}/paired/{}: {median_us:.2} us CPU per trajectory, {ratio:.1}x {base} (quartiles {lo:.1}x-{hi:.1}x; \
             {ROUNDS} rounds of {SEEDS_PER_ROUND} seeds)",
            sides[i].0
        );
    }
}

criterion_group!(benches, trajectories);
criterion_main!(benches);
