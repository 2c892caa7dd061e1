//! Criterion benches: the event queue against a bare heap, one trajectory of every
//! built-in world per preset, the scripted support_desk against the Rust one, and a
//! 10,000-seed sweep on one and on two threads.
//! The scripted-against-Rust groups count the CPU time of the benchmarking
//! thread, not wall time: the ratio is one of CPU cost, and other processes on
//! a loaded machine do not enter it.
//! Numbers and how to reproduce them: BENCHMARKS.md.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use agentsim::Runner;
use agentsim_agents::StackSpec;

// The allocator the `agentsim` binary runs with, so the benches time what it runs.
use agentsim_alloc as _;
use agentsim_engine::queue::EventQueue;
use agentsim_worlds::{Prepared, Scenario};

fn scenario(name: &str) -> Prepared {
    let text = agentsim::builtin::scenario(name).expect("built in");
    Prepared::new(Scenario::parse(text, name).expect("parses"))
}

/// Times spread like a trajectory's: mostly forward, some ties.
fn times(n: u64) -> Vec<u64> {
    (0..n).map(|i| (i * 7_919) % 5_000 + i / 3).collect()
}

/// An event the size of the simulator's own (`Ev` with a whole tool result in it:
/// 144 bytes). Ordered like any payload, but the sequence number always decides
/// first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Realistic([u64; 18]);

/// A small event (a timer token).
type Small = u32;

fn queue(c: &mut Criterion) {
    let times = times(1_000);
    queue_group::<Realistic>(c, "queue_1000_push_pop", &times, |t| Realistic([t; 18]), |e| e.0[17]);
    queue_group::<Small>(c, "queue_1000_push_pop_small", &times, |t| t as u32, |e| u64::from(*e));
}

/// The event queue against a bare `BinaryHeap` of (time, sequence, event) doing
/// the same pushes and pops.
fn queue_group<E: Ord + Copy>(
    c: &mut Criterion,
    name: &str,
    times: &[u64],
    make: impl Fn(u64) -> E,
    read: impl Fn(&E) -> u64,
) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(times.len() as u64));
    group.bench_function("event_queue", |b| {
        b.iter(|| {
            let mut q = EventQueue::new();
            for &t in times {
                q.push(t, make(t));
            }
            let mut sum = 0u64;
            while let Some((t, _, e)) = q.pop() {
                sum = sum.wrapping_add(t ^ read(&e));
            }
            black_box(sum)
        })
    });
    group.bench_function("bare_binary_heap", |b| {
        b.iter(|| {
            let mut q = BinaryHeap::new();
            for (seq, &t) in times.iter().enumerate() {
                q.push(Reverse((t, seq as u64, make(t))));
            }
            let mut sum = 0u64;
            while let Some(Reverse((t, _, e))) = q.pop() {
                sum = sum.wrapping_add(t ^ read(&e));
            }
            black_box(sum)
        })
    });
    group.finish();
}

fn trajectory(c: &mut Criterion) {
    for (world, _) in agentsim::builtin::SCENARIOS {
        let prepared = scenario(world);
        let mut group = c.benchmark_group(format!("trajectory_{world}"));
        for preset in ["oracle", "naive", "resilient"] {
            let stack = agentsim_agents::preset(preset).expect("preset exists");
            let runner = Runner::new(&prepared, &stack, false, 1.0);
            let mut seed = 0u64;
            group.bench_function(BenchmarkId::from_parameter(preset), |b| {
                b.iter(|| {
                    // A different seed each iteration: the median is over the mix of
                    // trajectories a sweep runs, not one lucky seed.
                    seed = seed.wrapping_add(1) % 10_000;
                    black_box(runner.run(seed).digest)
                })
            });
        }
        group.finish();
    }
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`), in
/// nanoseconds. Criterion runs a benchmark's iterations on one thread, so this
/// is what the iterations cost, whatever else runs on the machine.
struct ThreadCpuTime {
    /// Formats the values as durations, like wall time.
    wall: WallTime,
}

fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant
    // every Linux kernel since 2.6.12 knows.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "the thread CPU clock is readable");
    u64::try_from(now.tv_sec).expect("positive") * 1_000_000_000 + u64::try_from(now.tv_nsec).expect("positive")
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, started_ns: u64) -> u64 {
        thread_cpu_ns() - started_ns
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        self.wall.formatter()
    }
}

/// One trajectory of support_desk written as files
/// (`examples/worlds/support_desk/`) against one of the Rust world, per preset,
/// on the same seeds in one run: the cost of a scripted world is their ratio
/// (in CPU time, see [`ThreadCpuTime`]).
fn scripted(c: &mut Criterion<ThreadCpuTime>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/worlds/support_desk/support_desk.ron");
    let text = std::fs::read_to_string(&path).expect("the example is in the repository");
    let scripted = Prepared::new(Scenario::parse_in(&text, "support_desk.ron", path.parent()).expect("parses"));
    let rust = scenario("support_desk");
    for preset in ["oracle", "naive", "resilient"] {
        let stack = agentsim_agents::preset(preset).expect("preset exists");
        let mut group = c.benchmark_group(format!("scripted_vs_rust_support_desk_{preset}"));
        for (name, prepared) in [("rust", &rust), ("scripted", &scripted)] {
            let runner = Runner::new(prepared, &stack, false, 1.0);
            let mut seed = 0u64;
            group.bench_function(name, |b| {
                b.iter(|| {
                    seed = seed.wrapping_add(1) % 10_000;
                    black_box(runner.run(seed).digest)
                })
            });
        }
        group.finish();
    }
    if asked_for("scripted_vs_rust") {
        for preset in ["oracle", "naive", "resilient"] {
            let stack = agentsim_agents::preset(preset).expect("preset exists");
            paired_ratio(
                &format!("scripted_vs_rust_support_desk_{preset}"),
                [("rust", &rust, &stack), ("scripted", &scripted, &stack)],
            );
        }
    }
    if asked_for("text_vs_structured") {
        text_vs_structured();
    }
}

/// Whether the bench's command line selects `name` (no filter selects all).
fn asked_for(name: &str) -> bool {
    // Options and their numeric values (`--warm-up-time 1`) are not filters.
    let filters: Vec<String> =
        std::env::args().skip(1).filter(|a| !a.starts_with('-') && a.parse::<f64>().is_err()).collect();
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()) || f.contains(name))
}

/// A CPU ratio measured in pairs: round after round, the same block of seeds
/// runs on each side (a world and a stack), in alternating order, and each
/// round gives a ratio. On a machine others load, a slow spell then falls on
/// both sides of a pair instead of on one side of the comparison; the median
/// of the rounds' ratios is printed with its quartiles, as `label`.
fn paired_ratio(label: &str, sides: [(&str, &Prepared, &StackSpec); 2]) {
    const ROUNDS: u64 = 60;
    const SEEDS_PER_ROUND: u64 = 200;
    let runners = sides.map(|(_, prepared, stack)| Runner::new(prepared, stack, false, 1.0));
    let cpu_ns = |runner: &Runner, seeds: std::ops::Range<u64>| {
        let started = thread_cpu_ns();
        for seed in seeds {
            black_box(runner.run(seed).digest);
        }
        (thread_cpu_ns() - started) as f64
    };
    // One warm-up block on each side.
    for runner in &runners {
        black_box(cpu_ns(runner, 0..SEEDS_PER_ROUND));
    }
    let mut ratios = Vec::new();
    let mut per_trajectory_us = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        let seeds = round * SEEDS_PER_ROUND..(round + 1) * SEEDS_PER_ROUND;
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut ns = [0.0; 2];
        for side in order {
            ns[side] = cpu_ns(&runners[side], seeds.clone());
        }
        ratios.push(ns[1] / ns[0]);
        for side in 0..2 {
            per_trajectory_us[side].push(ns[side] / SEEDS_PER_ROUND as f64 / 1_000.0);
        }
    }
    let quartiles = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: usize| v[(v.len() - 1) * q / 4];
        (at(1), at(2), at(3))
    };
    let (lo, median, hi) = quartiles(&mut ratios);
    let (_, a_us, _) = quartiles(&mut per_trajectory_us[0]);
    let (_, b_us, _) = quartiles(&mut per_trajectory_us[1]);
    let (a, b) = (sides[0].0, sides[1].0);
    println!(
        "{label}/paired: {b}/{a} CPU {median:.2}x (quartiles {lo:.2}x-{hi:.2}x; {ROUNDS} rounds of {SEEDS_PER_ROUND} \
         seeds; median per trajectory {a_us:.1} us {a}, {b_us:.1} us {b})"
    );
}

/// The text channel's cost: each preset against its free-text form (the
/// `Speak` layer and the user that reads words), on the same seeds of
/// support_desk, in CPU time.
fn text_vs_structured() {
    let prepared = scenario("support_desk");
    for preset in ["oracle", "naive", "resilient"] {
        let structured = agentsim_agents::preset(preset).expect("preset exists");
        let spoken = agentsim_agents::preset(&format!("{preset}_text")).expect("preset exists");
        paired_ratio(
            &format!("text_vs_structured_support_desk_{preset}"),
            [("structured", &prepared, &structured), ("text", &prepared, &spoken)],
        );
    }
}

fn sweep(c: &mut Criterion) {
    let prepared = scenario(agentsim::builtin::DEFAULT_SCENARIO);
    let stack = agentsim_agents::preset("resilient").expect("preset exists");
    let runner = Runner::new(&prepared, &stack, false, 1.0);
    let seeds = 10_000u64;
    let mut group = c.benchmark_group("sweep_support_desk_resilient_10000_seeds");
    group.sample_size(10).throughput(Throughput::Elements(seeds));
    for threads in [1usize, 2] {
        // A pool of its own per thread count, so the figure does not depend on
        // RAYON_NUM_THREADS or on how many cores the machine has.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool");
        group.bench_function(BenchmarkId::new("threads", threads), |b| {
            b.iter(|| {
                pool.install(|| {
                    let mut chain = agentsim_engine::DigestChain::new();
                    runner
                        .sweep(0..seeds, |t| {
                            chain.push(&t.digest);
                            Ok::<(), ()>(())
                        })
                        .expect("sink never fails");
                    black_box(chain.finish())
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, queue, trajectory, sweep);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(ThreadCpuTime { wall: WallTime });
    targets = scripted
}
criterion_main!(benches, cpu);
