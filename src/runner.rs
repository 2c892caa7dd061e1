//! Puts a scenario and an agent together and runs seeds: one, or a sweep.

use std::ops::Range;

use agentsim_agents::StackSpec;
use agentsim_engine::{SimConfig, Trajectory};
use agentsim_worlds::Prepared;

/// A scenario and a stack, ready to run any seed.
pub struct Runner<'a> {
    prepared: &'a Prepared,
    stack: &'a StackSpec,
    config: SimConfig,
}

impl<'a> Runner<'a> {
    /// A runner; `record` keeps every event (for timelines), `fault_scale`
    /// multiplies every fault probability.
    pub fn new(prepared: &'a Prepared, stack: &'a StackSpec, record: bool, fault_scale: f64) -> Self {
        Self { prepared, stack, config: prepared.scenario.sim_config(record, fault_scale) }
    }

    /// Runs one seed.
    pub fn run(&self, seed: u64) -> Trajectory {
        self.prepared.run(seed, &self.config, |expert, streams| self.stack.build(expert, streams))
    }

    /// Runs every seed of `seeds` in parallel and hands the trajectories to `sink`
    /// in seed order.
    pub fn sweep<E>(&self, seeds: Range<u64>, sink: impl FnMut(Trajectory) -> Result<(), E>) -> Result<(), E> {
        agentsim_engine::sweep::for_each_ordered(seeds, |seed| self.run(seed), sink)
    }
}
