//! The 10-call model as files (`benches/peer/ten_calls/`), loaded and swept in
//! process through the public API, as `agentsim sweep` loads and sweeps them.

use std::path::{Path, PathBuf};

use agentsim::prelude::*;

use crate::Tally;

/// The folder of the scripted world and its stack file.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ten_calls")
}

/// The scripted world, loaded as `agentsim sweep` loads it.
pub fn world() -> Prepared {
    let path = folder().join("ten_calls.ron");
    agentsim::load::scenario(path.to_str().expect("a UTF-8 path")).expect("the 10-call scenario loads")
}

/// The stack file `ten_calls/stack.ron`.
pub fn stack() -> StackSpec {
    let path = folder().join("stack.ron");
    let text = std::fs::read_to_string(&path).expect("the stack file is in the repository");
    agentsim::spec::parse_stack(&text, "stack.ron").expect("the stack file parses")
}

/// Sweeps `seeds` in memory with the sweep builder.
pub fn sweep_seeds(world: &Prepared, stack: &StackSpec, seeds: std::ops::Range<u64>) -> Tally {
    let out = sweep(world).stack("ten_calls", stack.clone()).seeds(seeds).failures(0).run().expect("the sweep runs");
    tally(&out)
}

/// A sweep's completions and virtual time.
pub fn tally(out: &SweepOutput) -> Tally {
    let n = out.summary.completion.n;
    Tally { successes: out.summary.completion.count, n, virtual_ms: out.rows.iter().map(|row| row.virtual_ms).sum() }
}
