//! `agentsim run`: one seed, printed as a timeline.

use std::process::ExitCode;

use agentsim::{Runner, timeline};

use super::{Failure, Setup, load};

/// Runs one seed and prints its timeline and outcome.
pub fn run(setup: &Setup, seed: u64) -> Result<ExitCode, Failure> {
    let prepared = load::scenario(&setup.scenario)?;
    let stack = load::agent(&setup.agent, &prepared)?;
    let runner = Runner::new(&prepared, &stack, true, setup.fault_scale.single("run")?);
    let t = runner.run(seed);
    println!("agentsim run: scenario {}, agent {}, seed {seed}", prepared.scenario.name, setup.agent);
    print!("{}", timeline::render(&t, &prepared.catalog));
    let m = &t.metrics;
    println!(
        "outcome: {}  turns {}  tool calls {} ({} failed, {} faults)  tokens {}  cost ${}  virtual time {:.1} s",
        t.outcome,
        m.turns,
        m.tool_calls,
        m.failed_calls,
        m.faults_seen,
        m.tokens(),
        agentsim::summary::usd(m.cost_micro_usd),
        m.virtual_ms as f64 / 1000.0
    );
    println!("digest:  {}", t.digest);
    Ok(ExitCode::SUCCESS)
}
