//! Sweeps split across machines: `sweep --shard K/N` runs the K-th of N disjoint,
//! contiguous parts of the seed range and writes a manifest beside its output;
//! `merge` checks that shards belong together and combines them into exactly the
//! files one single run would have written.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The manifest format this build writes and reads.
pub const SHARD_FORMAT: u32 = 1;

/// Which part of a sweep a directory holds, and everything that must agree for
/// parts to be merged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardManifest {
    /// Manifest format ([`SHARD_FORMAT`]).
    pub format: u32,
    /// The agentsim version that wrote it: shards of different builds may differ.
    pub version: String,
    /// Scenario name.
    pub scenario: String,
    /// The scenario's key (hex): the same name with other content does not merge.
    pub scenario_key: String,
    /// The agent spec as given.
    pub agent: String,
    /// Key (hex) of the stack as resolved (a stack file's content, not its path).
    pub stack_key: String,
    /// The whole sweep's first seed.
    pub seed_start: u64,
    /// The whole sweep's end (excluded).
    pub seed_end: u64,
    /// This shard's index, from 0.
    pub shard: u32,
    /// Number of shards.
    pub shards: u32,
    /// Trials per seed.
    pub trials: u32,
    /// Fault scale.
    pub fault_scale: f64,
    /// Swarm mode.
    pub swarm: bool,
    /// Failing trajectories kept per failure mode.
    pub failures: usize,
    /// The importance-sampling tilt (`--importance`), absent in a plain sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f64>,
    /// How the importance-sampling sweep drew its faults, rule by rule (absent
    /// in a plain sweep): shards and a resumed run must draw alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance_plan: Option<agentsim_stats::tilts::Plan>,
}

/// Parses `K/N` (K from 0, below N).
/// An error is of kind [`ErrorKind::Argument`](crate::ErrorKind::Argument).
pub fn parse_shard(text: &str) -> Result<(u32, u32), Error> {
    let (k, n) =
        text.split_once('/').ok_or_else(|| Error::argument(format!("expected K/N like 0/8, found `{text}`")))?;
    let k: u32 = k.trim().parse().map_err(|_| Error::argument(format!("`{k}` is not a shard index (0, 1, ...)")))?;
    let n: u32 = n.trim().parse().map_err(|_| Error::argument(format!("`{n}` is not a number of shards")))?;
    if n == 0 {
        return Err(Error::argument("the number of shards must be at least 1"));
    }
    if k >= n {
        return Err(Error::argument(format!("shard {k} of {n} does not exist: shards are numbered 0..{n}")));
    }
    Ok((k, n))
}

/// The seeds of shard `k` of `n`: contiguous parts whose sizes differ by at most
/// one, in order, covering `seeds` exactly.
pub fn shard_seeds(seeds: &Range<u64>, k: u32, n: u32) -> Range<u64> {
    assert!(k < n, "shard {k} of {n}");
    let len = u128::from(seeds.end - seeds.start);
    let at = |i: u32| seeds.start + u64::try_from(len * u128::from(i) / u128::from(n)).expect("within the range");
    at(k)..at(k + 1)
}

impl ShardManifest {
    /// What two shards must agree on, as (field, this value, other value) for the
    /// first field that differs.
    pub fn mismatch(&self, other: &ShardManifest) -> Option<(&'static str, String, String)> {
        let plan = |m: &ShardManifest| serde_json::to_string(&m.importance_plan).expect("a plan is plain data");
        let pairs: [(&'static str, String, String); 14] = [
            ("format", self.format.to_string(), other.format.to_string()),
            ("version", self.version.clone(), other.version.clone()),
            ("scenario", self.scenario.clone(), other.scenario.clone()),
            ("scenario_key", self.scenario_key.clone(), other.scenario_key.clone()),
            ("agent", self.agent.clone(), other.agent.clone()),
            ("stack_key", self.stack_key.clone(), other.stack_key.clone()),
            (
                "seeds",
                format!("{}..{}", self.seed_start, self.seed_end),
                format!("{}..{}", other.seed_start, other.seed_end),
            ),
            ("shards", self.shards.to_string(), other.shards.to_string()),
            ("trials", self.trials.to_string(), other.trials.to_string()),
            ("fault_scale", self.fault_scale.to_string(), other.fault_scale.to_string()),
            ("swarm", self.swarm.to_string(), other.swarm.to_string()),
            ("failures", self.failures.to_string(), other.failures.to_string()),
            ("importance", format!("{:?}", self.importance), format!("{:?}", other.importance)),
            ("importance_plan", plan(self), plan(other)),
        ];
        pairs.into_iter().find(|(_, a, b)| a != b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_range_in_order() {
        for (seeds, n) in [(0..10u64, 3u32), (5..6, 4), (0..1_000_000, 8), (7..7, 2)] {
            let parts: Vec<_> = (0..n).map(|k| shard_seeds(&seeds, k, n)).collect();
            assert_eq!(parts.first().unwrap().start, seeds.start);
            assert_eq!(parts.last().unwrap().end, seeds.end);
            assert!(parts.windows(2).all(|w| w[0].end == w[1].start));
            let sizes: Vec<u64> = parts.iter().map(|p| p.end - p.start).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
        }
    }

    #[test]
    fn bad_shard_specs_are_refused() {
        assert_eq!(parse_shard("2/8"), Ok((2, 8)));
        assert!(parse_shard("8/8").is_err());
        assert!(parse_shard("0/0").is_err());
        assert!(parse_shard("x").is_err());
    }
}
