//! Puts a scenario and an agent together and runs seeds: one, or a sweep.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use agentsim_agents::StackSpec;
use agentsim_engine::{SimConfig, Trajectory};
pub use agentsim_stats::tilts::tilted_scale;
use agentsim_worlds::Prepared;

/// A scenario and a stack, ready to run any seed.
pub struct Runner<'a> {
    prepared: &'a Prepared,
    stack: &'a StackSpec,
    config: SimConfig,
    swarm: bool,
}

impl<'a> Runner<'a> {
    /// A runner; `record` keeps every event (for timelines), `fault_scale`
    /// multiplies every fault probability.
    pub fn new(prepared: &'a Prepared, stack: &'a StackSpec, record: bool, fault_scale: f64) -> Self {
        Self { prepared, stack, config: prepared.scenario.sim_config(record, fault_scale), swarm: false }
    }

    /// Importance sampling (`Some(scale)`): faults are drawn at `scale` times the
    /// fault scale, and each trajectory carries the log of its likelihood ratio
    /// against the fault scale (`Trajectory::log_weight`). The trajectories are
    /// exactly those of a plain runner at the tilted scale. `None`: plain.
    pub fn with_importance(mut self, scale: Option<f64>) -> Self {
        if let Some(scale) = scale {
            self.config.nominal_fault_scale = Some(self.config.fault_scale);
            self.config.fault_scale = tilted_scale(self.config.fault_scale, scale);
        }
        self
    }

    /// Importance sampling with a tilt per rule: each fault rule is drawn with its
    /// probability in `table` (see [`agentsim_stats::tilts::Plan::probabilities`]) and each
    /// trajectory carries its log likelihood ratio against the fault scale, and
    /// its rules' decisive draws (`Trajectory::rule_draws`). `None`: as before.
    pub fn with_tilts(mut self, table: Option<agentsim_engine::likelihood::RuleProbabilities>) -> Self {
        if let Some(table) = table {
            self.config.nominal_fault_scale = Some(self.config.fault_scale);
            self.config.sampled_probabilities = Some(table);
        }
        self
    }

    /// Keeps the last diagnostics of a run that keeps no events (an external
    /// agent's stderr: `SimConfig::keep_diagnostics`).
    pub fn with_diagnostics(mut self, keep: bool) -> Self {
        self.config.keep_diagnostics = keep;
        self
    }

    /// Turns swarm mode on or off: each seed draws its fault parameters from the
    /// scenario's `swarm` ranges (see `agentsim_worlds::swarm`).
    pub fn with_swarm(mut self, swarm: bool) -> Self {
        self.swarm = swarm;
        self
    }

    /// What this seed drew in swarm mode (`name=value;...`), `None` when off.
    pub fn swarm_values(&self, seed: u64) -> Option<String> {
        if !self.swarm {
            return None;
        }
        Some(self.prepared.swarm_draw(seed).map(|d| d.describe()).unwrap_or_default())
    }

    /// Runs one seed.
    pub fn run(&self, seed: u64) -> Trajectory {
        self.run_trial(seed, 0)
    }

    /// Runs the `trial`-th independent attempt at one seed (pass^k); trial 0 is
    /// [`Runner::run`].
    pub fn run_trial(&self, seed: u64, trial: u32) -> Trajectory {
        // One agent per session (one in a run of one), each its own stack.
        let agent = |expert, streams: &_| self.stack.build(expert, streams);
        let mut t = self.prepared.run_each(seed, trial, self.swarm, &self.config, &agent);
        t.trial = trial;
        t
    }

    /// Runs `trials` attempts at every seed of `seeds` in parallel and hands
    /// `(trial, trajectory)` to `sink` in (seed, trial) order. With one trial this is
    /// [`Runner::sweep`].
    pub fn sweep_trials<E>(
        &self,
        seeds: Range<u64>,
        trials: u32,
        mut sink: impl FnMut(u32, Trajectory) -> Result<(), E>,
    ) -> Result<(), E> {
        self.sweep_mapped(seeds, trials, |trial, t| (trial, t), |(trial, t)| sink(trial, t))
    }

    /// [`Runner::sweep_trials`] with `map` applied to each `(trial, trajectory)` on
    /// the thread that ran it: whatever does not depend on the order of seeds
    /// (rendering a CSV row, reducing a trajectory to what the summary needs,
    /// dropping its events) runs in parallel, and only `sink` runs in order.
    pub fn sweep_mapped<T: Send, E>(
        &self,
        seeds: Range<u64>,
        trials: u32,
        map: impl Fn(u32, Trajectory) -> T + Sync,
        sink: impl FnMut(T) -> Result<(), E>,
    ) -> Result<(), E> {
        assert!(trials >= 1, "at least one trial");
        let k = u64::from(trials);
        let units = 0..(seeds.end - seeds.start).checked_mul(k).expect("seeds times trials fits in u64");
        crate::ordered::for_each_ordered(
            units,
            |unit| {
                let trial = (unit % k) as u32;
                map(trial, self.run_trial(seeds.start + unit / k, trial))
            },
            sink,
        )
    }

    /// [`Runner::sweep_trials`] in chunks of `chunk_seeds` seeds (every trial of a
    /// seed in one chunk), stopping between chunks once `stop` is set. Returns the
    /// first seed not handed to `sink`: `seeds.end` when the sweep is complete.
    /// The chunk running when `stop` is set is dropped, never handed on in part, so
    /// `sink` always sees whole seeds from `seeds.start` on.
    pub fn sweep_trials_until<E: Send>(
        &self,
        seeds: Range<u64>,
        trials: u32,
        chunk_seeds: u64,
        stop: &AtomicBool,
        mut sink: impl FnMut(u32, Trajectory) -> Result<(), E> + Send,
    ) -> Result<u64, E> {
        self.sweep_mapped_until(seeds, trials, chunk_seeds, stop, |trial, t| (trial, t), |(trial, t)| sink(trial, t))
    }

    /// [`Runner::sweep_trials_until`] with `map` applied in parallel, as in
    /// [`Runner::sweep_mapped`].
    ///
    /// `sink` takes chunk k while the pool computes chunk k + 1 (a `rayon::join`
    /// on the pool, so on one thread the two simply take turns and no thread is
    /// added), so the cores do not wait for the ordered part.
    pub fn sweep_mapped_until<T: Send, E: Send>(
        &self,
        seeds: Range<u64>,
        trials: u32,
        chunk_seeds: u64,
        stop: &AtomicBool,
        map: impl Fn(u32, Trajectory) -> T + Sync,
        mut sink: impl FnMut(T) -> Result<(), E> + Send,
    ) -> Result<u64, E> {
        assert!(chunk_seeds >= 1, "at least one seed per chunk");
        let chunk_end = |start: u64| start.saturating_add(chunk_seeds).min(seeds.end);
        let compute = |range: Range<u64>, into: &mut Vec<T>| {
            self.sweep_mapped(range, trials, &map, |item| {
                into.push(item);
                Ok::<(), E>(())
            })
        };
        // Two buffers, reused: the chunk being handed to `sink` and the next one.
        let (mut ready, mut next) = (Vec::new(), Vec::new());
        let mut start = seeds.start;
        if start < seeds.end && !stop.load(Ordering::SeqCst) {
            compute(start..chunk_end(start), &mut ready)?;
        }
        while start < seeds.end {
            // The signal that set the flag also ends the external agents' waits
            // (`agentsim_agents::external::interrupt`), so a chunk computed while
            // it arrived may hold runs it broke: only a chunk finished before the
            // flag was seen is handed on.
            if stop.load(Ordering::SeqCst) {
                return Ok(start);
            }
            let end = chunk_end(start);
            let (sunk, computed) =
                rayon::join(|| ready.drain(..).try_for_each(&mut sink), || compute(end..chunk_end(end), &mut next));
            sunk?;
            computed?;
            std::mem::swap(&mut ready, &mut next);
            start = end;
        }
        Ok(seeds.end)
    }

    /// Runs every seed of `seeds` in parallel and hands the trajectories to `sink`
    /// in seed order.
    pub fn sweep<E>(&self, seeds: Range<u64>, sink: impl FnMut(Trajectory) -> Result<(), E>) -> Result<(), E> {
        crate::ordered::for_each_ordered(seeds, |seed| self.run(seed), sink)
    }
}
