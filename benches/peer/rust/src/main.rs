//! `peer-ten-calls MODE N`: runs N trajectories (seeds 0..N) of the 10-call
//! model on one thread of rayon's pool as `benches/peer/run.py` asks, and
//! prints `successes n seconds virtual_ms cpu_seconds`, as the SimPy model does. MODE is
//! `scripted` (the world's files, loaded and swept in process), `rust` (the
//! world built with `WorldBuilder`, swept with the agent stack), `engine` (a
//! hand-written world and agent run by the engine alone) or `loop` (the
//! minimal event loop).
//! The seconds (wall clock) and CPU seconds (the process's, all threads) are
//! those of the sweep alone, without start-up or loading.

use std::process::ExitCode;
use std::time::Instant;

use agentsim_peer::{Tally, built, engine, minimal, scripted};

// The allocator the `agentsim` binary runs with.
use agentsim_alloc as _;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(Ok(n)), 2) = (args.first(), args.get(1).map(|n| n.parse::<u64>()), args.len()) else {
        eprintln!("usage: peer-ten-calls scripted|rust|engine|loop N");
        return ExitCode::from(2);
    };
    let (tally, seconds, cpu_seconds) = match mode.as_str() {
        "scripted" => {
            let (world, stack) = (scripted::world(), scripted::stack());
            timed(|| scripted::sweep_seeds(&world, &stack, 0..n))
        }
        "rust" => {
            let world = built::world();
            timed(|| built::sweep_seeds(&world, 0..n))
        }
        "engine" => {
            let scenario = engine::Scenario::new();
            timed(|| scenario.sweep_seeds(0..n))
        }
        "loop" => {
            let mut minimal = minimal::Loop::default();
            timed(|| minimal.run(0..n))
        }
        other => {
            eprintln!("peer-ten-calls: unknown mode `{other}` (scripted, rust, engine, loop)");
            return ExitCode::from(2);
        }
    };
    println!("{} {} {seconds:.6} {} {cpu_seconds:.6}", tally.successes, tally.n, tally.virtual_ms);
    ExitCode::SUCCESS
}

/// What `run` came to, and the wall-clock and CPU seconds it took.
fn timed(run: impl FnOnce() -> Tally) -> (Tally, f64, f64) {
    let (started, started_cpu) = (Instant::now(), process_cpu_s());
    let tally = run();
    (tally, started.elapsed().as_secs_f64(), process_cpu_s() - started_cpu)
}

/// The CPU time the process has used, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
fn process_cpu_s() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant
    // every Linux kernel since 2.6.12 knows.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "the process CPU clock is readable");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}
