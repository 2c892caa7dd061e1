//! Seeded random streams.
//!
//! Every random draw comes from a ChaCha8 stream whose key is derived from
//! (scenario key, seed, component name) with BLAKE3. Components never share a
//! stream, so what one component draws cannot shift what another sees: a tool's
//! faults for a seed are the same whatever the agent did before (common random
//! numbers across stacks).

use std::sync::LazyLock;

use crate::chacha_block::BlockStream;

mod derive;

/// A 32-byte key for anything serialisable: BLAKE3 over its canonical postcard
/// encoding. Scenarios use it so that two different scenarios never share streams.
pub fn key_of<T: serde::Serialize + ?Sized>(value: &T) -> [u8; 32] {
    let bytes = postcard::to_allocvec(value).expect("postcard encodes plain data into memory");
    *blake3::Hasher::new_derive_key("agentsim scenario key v1").update(&bytes).finalize().as_bytes()
}

/// The key-derivation context of every stream, hashed once per process: BLAKE3's
/// `derive_key` would hash the context string again for every stream.
static STREAM_CONTEXT_KEY: LazyLock<derive::DeriveKey> = LazyLock::new(|| derive::DeriveKey::new("agentsim stream v1"));

/// Derives the per-component streams of one trajectory.
#[derive(Clone, Debug)]
pub struct StreamSource {
    scenario_key: [u8; 32],
    seed: u64,
    trial: u32,
    /// The session whose agent streams these are (0 in a run of one), as
    /// drawn (see [`StreamSource::drawing_as`]).
    session: u32,
    /// The sessions of the full run the run's sessions draw as, when a run
    /// holds some of them (`Sessions::drawn_as`).
    drawn_as: Option<std::sync::Arc<[u32]>>,
}

impl StreamSource {
    /// Streams for `seed` of the scenario identified by `scenario_key` (a digest of
    /// the scenario's canonical form, so two different scenarios never share streams).
    pub fn new(scenario_key: [u8; 32], seed: u64) -> Self {
        Self { scenario_key, seed, trial: 0, session: 0, drawn_as: None }
    }

    /// The same streams for a run whose session `k` draws as session
    /// `drawn_as[k]` of the full run (`Sessions::drawn_as`): its user's and
    /// its agent's streams are that session's. `None`: each draws as itself.
    pub fn drawing_as(&self, drawn_as: Option<&[u32]>) -> Self {
        Self { drawn_as: drawn_as.map(std::sync::Arc::from), ..self.clone() }
    }

    /// The session of the full run that session `session` draws as.
    pub fn drawn_as(&self, session: u32) -> u32 {
        self.drawn_as.as_ref().map_or(session, |origins| origins[session as usize])
    }

    /// The same seed's streams for the `trial`-th independent attempt of the agent:
    /// world, user and tool streams stay the same (the same task instance, the same
    /// faults); agent streams ([`StreamSource::agent_stream`]) change. Trial 0 is the
    /// plain seed. This is what pass^k measures.
    pub fn with_trial(&self, trial: u32) -> Self {
        Self { trial, ..self.clone() }
    }

    /// The streams of session `session`'s agent in a run of many sessions:
    /// agent streams ([`StreamSource::agent_stream`]) differ per session, and
    /// session 0's are the plain ones; the world's side stays the same (one
    /// world; a world names its users' streams `"user.N"` itself).
    pub fn with_session(&self, session: u32) -> Self {
        // Mapped once: the agent's source draws nothing per session itself.
        Self { session: self.drawn_as(session), drawn_as: None, ..self.clone() }
    }

    /// The world's stream `"COMPONENT.N"` of session `session`, `N` the
    /// session it draws as: a world names its users' streams this way
    /// (`"user.0"`, `"user.1"`, ...).
    pub fn session_stream(&self, component: &str, session: u32) -> Stream {
        self.stream(&format!("{component}.{}", self.drawn_as(session)))
    }

    /// The session of the agent streams (0 unless set with
    /// [`StreamSource::with_session`]), as drawn.
    pub fn session(&self) -> u32 {
        self.session
    }

    /// The trial number (0 unless set with [`StreamSource::with_trial`]).
    pub fn trial(&self) -> u32 {
        self.trial
    }

    /// The seed this source derives from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream of one component, named like `"tool.lookup_order"`, `"world"`,
    /// `"user.0"`, `"planner"`, `"stack.retry"`.
    ///
    /// These are the world's side (world, users, tools): the same in every trial.
    pub fn stream(&self, component: &str) -> Stream {
        self.derive(&[component.as_bytes()])
    }

    /// The stream of tool `name`: [`StreamSource::stream`] of `"tool.NAME"`,
    /// without building the name.
    pub fn tool_stream(&self, name: &str) -> Stream {
        self.derive(&[b"tool.", name.as_bytes()])
    }

    /// The stream of one of the agent's components (`"planner"`, `"model"`,
    /// `"stack.retry"`): it differs between trials of the same seed, and equals
    /// [`StreamSource::stream`] in trial 0.
    pub fn agent_stream(&self, component: &str) -> Stream {
        let trial = self.trial.to_le_bytes();
        let session = self.session.to_le_bytes();
        match (self.trial > 0, self.session > 0) {
            (false, false) => self.derive(&[component.as_bytes()]),
            (true, false) => self.derive(&[component.as_bytes(), b"\0trial", &trial]),
            (false, true) => self.derive(&[component.as_bytes(), b"\0session", &session]),
            (true, true) => self.derive(&[component.as_bytes(), b"\0trial", &trial, b"\0session", &session]),
        }
    }

    /// The stream keyed by BLAKE3 in key-derivation mode (the same as
    /// `Hasher::new_derive_key("agentsim stream v1")`) over the scenario key, the
    /// seed and `name`'s pieces (at most five).
    fn derive(&self, name: &[&[u8]]) -> Stream {
        let seed = self.seed.to_le_bytes();
        let mut pieces: [&[u8]; 7] = [&self.scenario_key, &seed, &[], &[], &[], &[], &[]];
        assert!(name.len() <= pieces.len() - 2, "a stream's name has at most five pieces");
        pieces[2..2 + name.len()].copy_from_slice(name);
        Stream { rng: BlockStream::new(STREAM_CONTEXT_KEY.derive(&pieces[..2 + name.len()]), 0) }
    }
}

/// `2^53`: the number of values of the 53-bit draw [`Stream::chance`] compares.
pub const CHANCE_ONE: u64 = 1 << 53;

/// How many of the `2^53` values of its draw make [`Stream::chance`]`(p)` true:
/// the probability it realises is this over `2^53`.
pub fn chance_threshold(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * CHANCE_ONE as f64) as u64
}

/// One component's random stream, with the few portable draws the simulator needs.
///
/// The helpers are written here rather than taken from `rand`'s distributions so
/// that their values are fixed by this code, not by a dependency's minor version.
///
/// The words are those of `rand_chacha`'s `ChaCha8Rng` seeded with the
/// stream's key (stream id 0; a sub-stream's is its index plus one), computed
/// one 64-byte block at a time: most streams serve a few draws per trajectory
/// (a tool call's fault rules and latency, a dozen model turns), where
/// `ChaCha8Rng` computes four blocks per refill. Tests compare the two.
#[derive(Clone, Debug)]
pub struct Stream {
    rng: BlockStream,
}

impl Stream {
    /// A sub-stream for the `index`-th use (for example the n-th call of a tool).
    ///
    /// Sub-streams are counter-based: the draws of call n do not depend on how many
    /// draws earlier calls consumed.
    pub fn substream(&self, index: u64) -> Stream {
        // Stream 0 is the parent's own sequence; sub-streams start at 1. The
        // words are those of `ChaCha8Rng::from_seed(key)` after
        // `set_stream(index + 1)`.
        assert!(index < u64::MAX, "sub-stream indices never wrap onto the parent's stream");
        Stream { rng: BlockStream::new(self.rng.key(), index + 1) }
    }

    /// A uniform 64-bit draw.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A uniform draw in `[0, 1)` with 53 bits of precision.
    pub fn unit(&mut self) -> f64 {
        let x = (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        assert!((0.0..1.0).contains(&x), "a unit draw is in [0, 1)");
        x
    }

    /// True with probability `p` (clamped to `[0, 1]`; exactly
    /// `chance_threshold(p) / 2^53`). Always consumes one draw.
    pub fn chance(&mut self, p: f64) -> bool {
        let draw = self.next_u64() >> 11;
        assert!(draw < CHANCE_ONE, "a chance draw has 53 bits");
        draw < chance_threshold(p)
    }

    /// A uniform draw in `[0, n)`; `n` must be positive. Unbiased (Lemire's method).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no values");
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                let x = (m >> 64) as u64;
                assert!(x < n, "a draw below n is below n");
                return x;
            }
        }
    }

    /// A uniform draw in `[lo, hi]` (inclusive); requires `lo <= hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "between({lo}, {hi}) is empty");
        if hi - lo == u64::MAX {
            return self.next_u64();
        }
        let x = lo + self.below(hi - lo + 1);
        assert!((lo..=hi).contains(&x), "a draw between lo and hi is between them");
        x
    }

    /// Picks an index by non-negative weights; returns `None` when all are zero.
    pub fn weighted(&mut self, weights: &[f64]) -> Option<usize> {
        let total: f64 = weights.iter().filter(|w| **w > 0.0).sum();
        if total <= 0.0 {
            return None;
        }
        let mut x = self.unit() * total;
        let mut last = None;
        for (i, w) in weights.iter().enumerate() {
            if *w <= 0.0 {
                continue;
            }
            last = Some(i);
            if x < *w {
                return Some(i);
            }
            x -= *w;
        }
        last
    }

    /// A standard normal draw (Box-Muller with `libm`, so it is identical on every
    /// platform, unlike `std`'s platform-provided transcendental functions).
    pub fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // in (0, 1]: ln is finite
        let u2 = self.unit();
        let z = libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2);
        assert!(z.is_finite(), "a normal draw is finite");
        z
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn source(seed: u64) -> StreamSource {
        StreamSource::new([7; 32], seed)
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a1 = source(1).stream("tool.a").next_u64();
        let a2 = source(1).stream("tool.a").next_u64();
        let b = source(1).stream("tool.b").next_u64();
        let a_other_seed = source(2).stream("tool.a").next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, a_other_seed);
    }

    #[test]
    fn trials_change_agent_streams_only() {
        let plain = source(5);
        let trial = plain.with_trial(2);
        assert_eq!(plain.stream("tool.a").next_u64(), trial.stream("tool.a").next_u64());
        assert_eq!(plain.agent_stream("planner").next_u64(), plain.stream("planner").next_u64());
        assert_ne!(plain.agent_stream("planner").next_u64(), trial.agent_stream("planner").next_u64());
        assert_ne!(
            trial.agent_stream("planner").next_u64(),
            source(5).with_trial(3).agent_stream("planner").next_u64()
        );
    }

    #[test]
    fn substreams_do_not_depend_on_parent_position() {
        let fresh = source(3).stream("tool.a");
        let mut used = source(3).stream("tool.a");
        for _ in 0..17 {
            used.next_u64();
        }
        assert_eq!(fresh.substream(5).next_u64(), used.substream(5).next_u64());
        assert_ne!(fresh.substream(5).next_u64(), fresh.substream(6).next_u64());
    }

    /// The words of `ChaCha8Rng` keyed as the stream of `name` is documented
    /// to be: BLAKE3 `derive_key("agentsim stream v1")` over the scenario
    /// key, the seed's little-endian bytes and the name.
    fn reference_stream(scenario_key: [u8; 32], seed: u64, name: &[u8]) -> ChaCha8Rng {
        let mut hasher = blake3::Hasher::new_derive_key("agentsim stream v1");
        hasher.update(&scenario_key).update(&seed.to_le_bytes()).update(name);
        ChaCha8Rng::from_seed(*hasher.finalize().as_bytes())
    }

    /// Every kind of name, of every length around the 64-byte block of BLAKE3
    /// (scenario key and seed are 40 bytes of it).
    fn names() -> Vec<String> {
        let mut names: Vec<String> =
            ["", "world", "user.0", "planner", "stack.retry", "interleaving.3.model.12"].map(str::to_string).to_vec();
        names.extend((0..80).map(|n| "n".repeat(n)));
        names.push("é✓ unicode ✓".repeat(9));
        names
    }

    #[test]
    fn streams_draw_what_rand_chacha_draws_from_the_derived_key() {
        for (case, name) in names().iter().enumerate() {
            let scenario_key: [u8; 32] = std::array::from_fn(|i| (i * 31 + case) as u8);
            let seed = (case as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let streams = StreamSource::new(scenario_key, seed);
            let mut theirs = reference_stream(scenario_key, seed, name.as_bytes());
            let mut ours = streams.stream(name);
            // Past one of our blocks and one of rand_chacha's four-block refills.
            for draw in 0..40 {
                assert_eq!(ours.next_u64(), theirs.next_u64(), "name {name:?}, draw {draw}");
            }
            let mut tool = streams.tool_stream(name);
            let mut theirs = reference_stream(scenario_key, seed, format!("tool.{name}").as_bytes());
            assert_eq!(tool.next_u64(), theirs.next_u64(), "tool {name:?}");
            for (trial, session) in [(0u32, 0u32), (3, 0), (0, 2), (7, 5)] {
                let agent = streams.with_trial(trial).with_session(session);
                let mut suffixed = name.as_bytes().to_vec();
                if trial > 0 {
                    suffixed.extend_from_slice(b"\0trial");
                    suffixed.extend_from_slice(&trial.to_le_bytes());
                }
                if session > 0 {
                    suffixed.extend_from_slice(b"\0session");
                    suffixed.extend_from_slice(&session.to_le_bytes());
                }
                let mut theirs = reference_stream(scenario_key, seed, &suffixed);
                let mut ours = agent.agent_stream(name);
                assert_eq!(ours.next_u64(), theirs.next_u64(), "agent {name:?}, trial {trial}, session {session}");
            }
        }
    }

    #[test]
    fn substreams_draw_what_rand_chacha_draws() {
        for (seed, index) in [(0u64, 0u64), (1, 1), (7, 41), (99, u64::MAX - 1), (1 << 40, 1 << 33)] {
            let parent = source(seed).stream("tool.a");
            let mut ours = parent.substream(index);
            let mut theirs = ChaCha8Rng::from_seed(parent.rng.key());
            theirs.set_stream(index + 1);
            // Several blocks: the block counter advances as rand_chacha's does.
            for draw in 0..100 {
                assert_eq!(ours.next_u64(), theirs.next_u64(), "seed {seed}, index {index}, draw {draw}");
            }
            let mut nested = ours.substream(3);
            theirs.set_stream(4);
            theirs.set_word_pos(0);
            assert_eq!(nested.next_u64(), theirs.next_u64(), "a sub-stream's sub-stream");
        }
    }

    #[test]
    fn chance_edges_and_ranges() {
        let mut s = source(4).stream("x");
        assert!((0..1000).all(|_| s.chance(1.0)));
        assert!((0..1000).all(|_| !s.chance(0.0)));
        assert!((0..1000).all(|_| (3..=9).contains(&s.between(3, 9))));
        assert_eq!(s.weighted(&[0.0, 0.0]), None);
        assert_eq!(s.weighted(&[0.0, 2.0, 0.0]), Some(1));
    }
}
