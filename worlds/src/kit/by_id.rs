//! Maps a world only looks up by id (never iterates, so their order cannot
//! reach an output), hashed with the engine's fingerprint instead of std's
//! SipHash: ids come from the world's own configuration and calls, not from
//! an adversary, and a fingerprint hashes an id eight bytes a step, with no
//! random state to fetch when a map is made (a world is made per trajectory).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use agentsim_engine::fingerprint::Fingerprinter;

/// A `HashMap` keyed by ids, hashed with [`Fingerprinter`].
pub type ById<K, V> = HashMap<K, V, BuildHasherDefault<Fingerprinter>>;

/// An empty [`ById`] with room for `capacity` ids.
pub fn with_capacity<K, V>(capacity: usize) -> ById<K, V> {
    ById::with_capacity_and_hasher(capacity, BuildHasherDefault::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map answers as std's does for the same inserts (first place kept).
    #[test]
    fn looks_up_as_a_std_map() {
        let ids: Vec<String> = (0..500).map(|i| format!("o-{}", (i * 7919) % 613)).collect();
        let mut fast = with_capacity(ids.len());
        let mut std_map = HashMap::new();
        for (place, id) in ids.iter().enumerate() {
            fast.entry(id.clone()).or_insert(place);
            std_map.entry(id.clone()).or_insert(place);
        }
        assert_eq!(fast.len(), std_map.len());
        for probe in (0..700).map(|i| format!("o-{i}")).chain(["".to_string(), "o-".to_string()]) {
            assert_eq!(fast.get(probe.as_str()), std_map.get(probe.as_str()), "{probe}");
        }
    }
}
