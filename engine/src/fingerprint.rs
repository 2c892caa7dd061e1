//! A fast 64-bit fingerprint for comparing values that are not kept.
//!
//! Layers that must recognise "the same thing again" (the loop detector's
//! request and result) keep a fingerprint instead of a copy or a rendering. The
//! function is written here, not taken from a hashing crate, so that its values
//! are fixed by this code (and by how std's `Hash` impls feed it): a collision
//! (about 2^-64 per comparison) would change a decision, and which one must not
//! depend on a dependency's version. It is not a digest: nothing it computes is
//! recorded or compared across runs.

use std::hash::{Hash, Hasher};

/// Multiplier of the folded multiply (the 64-bit golden ratio, odd).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
/// Starting state (an arbitrary odd constant, so that empty input is not 0).
const SEED: u64 = 0x243F_6A88_85A3_08D3;

/// A [`Hasher`] mixing 8 bytes at a time with a folded 128-bit multiply.
#[derive(Clone, Debug)]
pub struct Fingerprinter {
    state: u64,
}

impl Default for Fingerprinter {
    fn default() -> Self {
        Self { state: SEED }
    }
}

impl Fingerprinter {
    // Every method is inlined: the loop detector feeds whole values through
    // them from another crate (`agentsim_agents`' walk of a value), where a
    // call per write cost more than the write.
    #[inline(always)]
    fn mix(&mut self, word: u64) {
        let product = u128::from(self.state ^ word) * u128::from(MULTIPLIER);
        self.state = (product as u64) ^ ((product >> 64) as u64);
    }
}

/// The little-endian word of the 1 to 7 bytes of `rest`, read with at most
/// three loads (overlapping where the length is not a power of two) instead
/// of a byte at a time. Equal to folding the bytes in, last first.
#[inline(always)]
pub fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    assert!((1..8).contains(&n), "a tail of 1 to 7 bytes");
    let u32_at = |i: usize| u64::from(u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]));
    if n >= 4 {
        // Bytes 0..4 and n-4..n overlap on equal bytes, so or-ing them is exact.
        u32_at(0) | (u32_at(n - 4) << (8 * (n - 4)))
    } else {
        u64::from(rest[0]) | (u64::from(rest[n / 2]) << (8 * (n / 2))) | (u64::from(rest[n - 1]) << (8 * (n - 1)))
    }
}

impl Hasher for Fingerprinter {
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

    #[inline]
    fn finish(&self) -> u64 {
        // A final avalanche (murmur3's fmix64), so that close inputs differ in every bit.
        let mut h = self.state;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// The fingerprint of anything hashable.
pub fn fingerprint<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut hasher = Fingerprinter::default();
    value.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn values_are_fixed_by_this_code() {
        // Pinned, so that a change to the function (or to how std feeds a `str` or
        // an enum to a hasher) is seen: it would change which rare collisions occur.
        assert_eq!(fingerprint(&Value::Int(7)), 1_213_858_285_398_463_571);
        assert_eq!(fingerprint("order_id"), 11_971_951_850_708_107_575);
        let a = Value::map([("order_id", Value::str("o-1")), ("total", Value::Int(4250))]);
        let b = Value::map([("order_id", Value::str("o-1")), ("total", Value::Int(4251))]);
        let c = Value::map([("order_id", Value::str("o-")), ("1total", Value::Int(4250))]);
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        assert_ne!(fingerprint("ab"), fingerprint("ab\0"));
        assert_ne!(fingerprint(&Value::Null), fingerprint(&Value::Bool(false)));
    }

    #[test]
    fn a_tail_word_is_its_bytes_folded_in() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for n in 1..8 {
            for _ in 0..2_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let rest = &x.to_le_bytes()[..n];
                let folded = rest.iter().rev().fold(0u64, |word, &byte| (word << 8) | u64::from(byte));
                assert_eq!(tail_word(rest), folded, "{rest:?}");
            }
        }
    }
}
