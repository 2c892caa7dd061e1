//! The sweep runner: many seeds in parallel, results in seed order.
//!
//! Seeds run in chunks on rayon's pool; each chunk is collected in seed order
//! (`collect` keeps order, unlike `reduce`) and handed to a sequential sink before
//! the next starts, so memory is bounded by the chunk, not the sweep, and every
//! aggregate is computed in seed order whatever the number of threads.

use std::ops::Range;

use rayon::prelude::*;

/// Seeds per chunk: large enough to keep every core busy, small enough that a
/// chunk of results stays small.
pub const CHUNK_SEEDS: u64 = 4_096;

/// Runs `run` for every seed of `seeds` in parallel and feeds the results to `sink`
/// in seed order. Stops at the first error from `sink`.
pub fn for_each_ordered<T, E>(
    seeds: Range<u64>,
    run: impl Fn(u64) -> T + Sync,
    mut sink: impl FnMut(T) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
{
    let mut start = seeds.start;
    // One buffer for every chunk: a fresh one each time would be fresh pages from
    // the kernel each time, zeroed (0.5% of a sweep's CPU, BENCHMARKS.md).
    let mut chunk: Vec<T> = Vec::new();
    while start < seeds.end {
        let end = start.saturating_add(CHUNK_SEEDS).min(seeds.end);
        chunk.par_extend((start..end).into_par_iter().map(&run));
        for item in chunk.drain(..) {
            sink(item)?;
        }
        start = end;
    }
    Ok(())
}

/// Runs `op` on a pool of `threads` threads of its own, or on the current
/// pool when `None`: episodes whose agent or user waits on a network (a model
/// asked live) keep that many in flight, their threads mostly asleep. What
/// `op` computes in order stays in order; only the scheduling changes.
pub fn in_flight<R: Send>(threads: Option<usize>, op: impl FnOnce() -> R + Send) -> Result<R, String> {
    let Some(threads) = threads else { return Ok(op()) };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("agentsim-in-flight-{i}"))
        .build()
        .map_err(|e| format!("{threads} episodes in flight: the threads could not be started: {e}"))?;
    Ok(pool.install(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_arrive_in_seed_order_across_chunks() {
        let mut seen = Vec::new();
        let n = CHUNK_SEEDS * 2 + 17;
        for_each_ordered(
            5..5 + n,
            |s| s * 2,
            |x| {
                seen.push(x);
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert_eq!(seen, (5..5 + n).map(|s| s * 2).collect::<Vec<_>>());
    }
}
