//! Criterion benches: the event queue against a bare heap, one trajectory of every
//! built-in world per preset, the scripted support_desk against the Rust one, and a
//! 10,000-seed sweep on one and on two threads.
//! Numbers and how to reproduce them: BENCHMARKS.md.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use agentsim::Runner;

// The allocator the `agentsim` binary runs with, so the benches time what it runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
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

/// One trajectory of support_desk written as files
/// (`examples/worlds/support_desk/`) against one of the Rust world, per preset,
/// on the same seeds in one run: the cost of a scripted world is their ratio.
fn scripted(c: &mut Criterion) {
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

criterion_group!(benches, queue, trajectory, scripted, sweep);
criterion_main!(benches);
