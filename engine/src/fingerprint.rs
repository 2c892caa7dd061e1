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
    fn mix(&mut self, word: u64) {
        let product = u128::from(self.state ^ word) * u128::from(MULTIPLIER);
        self.state = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for Fingerprinter {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.mix(u64::from_le_bytes(word.try_into().expect("chunks of 8")));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // Little-endian, byte by byte: a copy into a buffer would be a call
            // to memcpy for at most seven bytes.
            let last = rest.iter().rev().fold(0u64, |word, &byte| (word << 8) | u64::from(byte));
            // The length tells "ab" from "ab\0".
            self.mix(last ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.mix(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.mix(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }

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
}
