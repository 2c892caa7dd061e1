//! The loop detector's fingerprints, computed here with every write inlined.
//!
//! [`Print`] is the engine's `Fingerprinter` (the same constants, the same
//! folded multiply, the same avalanche), written again so that its writes
//! inline into the walk of a value: through the engine's hasher every string
//! costs a call (two with its terminator) and its last bytes are folded one at
//! a time. A fingerprint computed here is the number
//! `agentsim_engine::fingerprint::fingerprint` gives for the same data
//! (proptested below), so the loop detector decides exactly as it did, even on
//! a collision.

use std::hash::{Hash, Hasher};

use agentsim_engine::Value;

/// Multiplier of the folded multiply (the engine's).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
/// Starting state (the engine's).
const SEED: u64 = 0x243F_6A88_85A3_08D3;

/// Containers nested deeper than this are fed through `Value`'s own `Hash`
/// (the same writes, as the engine's fingerprint recurses).
const WALK_DEPTH_MAX: u32 = 32;

/// A [`Hasher`] that computes the engine's fingerprint.
pub(crate) struct Print {
    state: u64,
}

impl Print {
    pub(crate) fn new() -> Self {
        Self { state: SEED }
    }

    #[inline(always)]
    fn mix(&mut self, word: u64) {
        let product = u128::from(self.state ^ word) * u128::from(MULTIPLIER);
        self.state = (product as u64) ^ ((product >> 64) as u64);
    }

    /// A string as `str`'s `Hash` feeds it: its bytes, then `0xff`.
    #[inline(always)]
    fn str(&mut self, s: &str) {
        self.write(s.as_bytes());
        self.mix(0xff);
    }

    /// `value` as `Value`'s derived `Hash` feeds it: the variant's
    /// discriminant (`isize`), then its fields; a list or map its length,
    /// then its items.
    pub(crate) fn value(&mut self, value: &Value, depth: u32) {
        if !self.scalar(value) {
            self.container(value, depth);
        }
    }

    /// Feeds `value` and returns true if it holds no other value (a call
    /// saved for most of a map's items); feeds nothing otherwise.
    #[inline(always)]
    fn scalar(&mut self, value: &Value) -> bool {
        match value {
            Value::Null => self.mix(0),
            Value::Bool(b) => {
                self.mix(1);
                self.mix(u64::from(*b));
            }
            Value::Int(n) => {
                self.mix(2);
                self.mix(*n as u64);
            }
            Value::Str(s) => {
                self.mix(3);
                self.str(s);
            }
            Value::List(_) | Value::Map(_) | Value::Float(_) => return false,
        }
        true
    }

    /// Feeds a list, a map or a float.
    fn container(&mut self, value: &Value, depth: u32) {
        match value {
            _ if depth >= WALK_DEPTH_MAX => value.hash(self),
            Value::List(items) => {
                self.mix(4);
                self.mix(items.len() as u64);
                for item in items {
                    if !self.scalar(item) {
                        self.container(item, depth + 1);
                    }
                }
            }
            Value::Map(pairs) => {
                self.mix(5);
                self.mix(pairs.len() as u64);
                for (key, item) in pairs {
                    self.str(key);
                    if !self.scalar(item) {
                        self.container(item, depth + 1);
                    }
                }
            }
            _ => value.hash(self),
        }
    }

    /// The fingerprint of `tag`.
    pub(crate) fn tag(tag: u8) -> u64 {
        let mut print = Print::new();
        print.mix(u64::from(tag));
        print.finish()
    }

    /// The fingerprint of `(tag, value)`.
    pub(crate) fn tagged(tag: u8, value: &Value) -> u64 {
        let mut print = Print::new();
        print.mix(u64::from(tag));
        print.value(value, 0);
        print.finish()
    }

    /// The fingerprint of `(tag, text)`.
    pub(crate) fn tagged_str(tag: u8, text: &str) -> u64 {
        let mut print = Print::new();
        print.mix(u64::from(tag));
        print.str(text);
        print.finish()
    }
}

/// The little-endian word of the 1 to 7 bytes of `rest`, read with at most
/// three loads (overlapping where the length is not a power of two) instead
/// of a byte at a time.
#[inline(always)]
pub(crate) fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    let u32_at = |i: usize| u64::from(u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]));
    if n >= 4 {
        // Bytes 0..4 and n-4..n overlap on equal bytes, so or-ing them is exact.
        u32_at(0) | (u32_at(n - 4) << (8 * (n - 4)))
    } else {
        u64::from(rest[0]) | (u64::from(rest[n / 2]) << (8 * (n / 2))) | (u64::from(rest[n - 1]) << (8 * (n - 1)))
    }
}

impl Hasher for Print {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.mix(u64::from_le_bytes(word.try_into().expect("chunks of 8")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // The length tells "ab" from "ab\0".
            self.mix(tail_word(rest) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, n: u8) {
        self.mix(u64::from(n));
    }

    #[inline(always)]
    fn write_u16(&mut self, n: u16) {
        self.mix(u64::from(n));
    }

    #[inline(always)]
    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }

    #[inline(always)]
    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }

    #[inline(always)]
    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }

    fn finish(&self) -> u64 {
        // murmur3's fmix64, as the engine's.
        let mut h = self.state;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_engine::fingerprint::fingerprint;
    use proptest::prelude::*;

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            ".{0,20}".prop_map(Value::Str),
            any::<f64>().prop_filter_map("finite", |x| agentsim_engine::value::Float::new(x).map(Value::Float)),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::List),
                proptest::collection::vec((".{0,17}", inner), 0..6).prop_map(Value::map),
            ]
        })
    }

    /// A value nested `depth` levels, alternating lists and maps.
    fn nested(depth: u32) -> Value {
        (0..depth).fold(Value::str("leaf"), |inner, i| {
            if i % 2 == 0 {
                Value::List(vec![Value::Int(i64::from(i)), inner])
            } else {
                Value::map([("k", inner), ("other", Value::Null)])
            }
        })
    }

    proptest! {
        #[test]
        fn prints_are_the_engine_s_fingerprints(tag in any::<u8>(), value in any_value(), text in ".{0,40}") {
            prop_assert_eq!(Print::tagged(tag, &value), fingerprint(&(tag, &value)));
            prop_assert_eq!(Print::tagged_str(tag, &text), fingerprint(&(tag, &text)));
            prop_assert_eq!(Print::tag(tag), fingerprint(&tag));
        }

        #[test]
        fn bytes_are_fed_as_the_engine_feeds_them(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut print = Print::new();
            print.write(&bytes);
            let mut engine = agentsim_engine::fingerprint::Fingerprinter::default();
            engine.write(&bytes);
            prop_assert_eq!(print.finish(), engine.finish());
        }
    }

    #[test]
    fn deep_values_print_as_the_engine_s() {
        for depth in [0, 1, 31, 32, 33, 64, 100] {
            let value = nested(depth);
            assert_eq!(Print::tagged(0, &value), fingerprint(&(0u8, &value)), "depth {depth}");
        }
    }
}
