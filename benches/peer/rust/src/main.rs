//! `peer-ten-calls MODE N`: runs N trajectories (seeds 0..N) of the 10-call
//! model on one thread of rayon's pool as `benches/peer/run.py` asks, and
//! prints `successes n seconds virtual_ms`, as the SimPy model does. MODE is
//! `scripted` (the world's files, loaded and swept in process), `rust` (the
//! world built against the public API) or `loop` (the minimal event loop).
//! The seconds are those of the sweep alone, without start-up or loading.

use std::process::ExitCode;
use std::time::Instant;

use agentsim_peer::{Tally, built, minimal, scripted};

// The allocator the `agentsim` binary runs with.
use agentsim_alloc as _;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(Ok(n)), 2) = (args.first(), args.get(1).map(|n| n.parse::<u64>()), args.len()) else {
        eprintln!("usage: peer-ten-calls scripted|rust|loop N");
        return ExitCode::from(2);
    };
    let (tally, seconds) = match mode.as_str() {
        "scripted" => {
            let (world, stack) = (scripted::world(), scripted::stack());
            timed(|| scripted::sweep_seeds(&world, &stack, 0..n))
        }
        "rust" => {
            let world = built::world();
            timed(|| built::sweep_seeds(&world, 0..n))
        }
        "loop" => {
            let mut minimal = minimal::Loop::default();
            timed(|| minimal.run(0..n))
        }
        other => {
            eprintln!("peer-ten-calls: unknown mode `{other}` (scripted, rust, loop)");
            return ExitCode::from(2);
        }
    };
    println!("{} {} {seconds:.6} {}", tally.successes, tally.n, tally.virtual_ms);
    ExitCode::SUCCESS
}

fn timed(run: impl FnOnce() -> Tally) -> (Tally, f64) {
    let started = Instant::now();
    let tally = run();
    (tally, started.elapsed().as_secs_f64())
}
