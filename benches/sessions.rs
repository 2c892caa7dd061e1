//! Criterion bench: one run of many sessions of support_desk
//! (`seeds/support_desk_10k.ron`, its `count` set to 10, 1,000 and 10,000 and
//! its Poisson rate to `count / 60` a minute, so every run spreads its
//! arrivals over one virtual hour), reported per event: the engine's cost per
//! event should not grow with the number of sessions. Events are counted by
//! one run of each size before it is timed (a run is the same for the same
//! seed). Numbers and how to reproduce them: BENCHMARKS.md, "Many sessions".

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use agentsim::Runner;
// The allocator the `agentsim` binary runs with, so the bench times what it runs.
use agentsim_alloc as _;
use agentsim_engine::sessions::Arrival;
use agentsim_worlds::{Prepared, Scenario};

/// The scale scenario with `count` sessions arriving over one virtual hour.
fn scenario(count: u32) -> Prepared {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/seeds/support_desk_10k.ron");
    let text = std::fs::read_to_string(path).expect("the scenario is in the repository");
    let mut scenario = Scenario::parse(&text, path).expect("parses");
    scenario.sessions.count = count;
    scenario.sessions.arrival = Arrival::Poisson { per_minute: f64::from(count) / 60.0 };
    Prepared::new(scenario)
}

fn sessions(c: &mut Criterion) {
    let stack = agentsim_agents::preset("resilient").expect("preset exists");
    let mut group = c.benchmark_group("sessions_support_desk_resilient");
    group.sample_size(10);
    for count in [10u32, 1_000, 10_000] {
        let prepared = scenario(count);
        let runner = Runner::new(&prepared, &stack, false, 1.0);
        let events = runner.run(0).metrics.events;
        group.throughput(Throughput::Elements(u64::from(events)));
        group.bench_function(BenchmarkId::new("sessions", count), |b| b.iter(|| black_box(runner.run(0).digest)));
    }
    group.finish();
}

criterion_group!(benches, sessions);
criterion_main!(benches);
