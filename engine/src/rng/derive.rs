//! BLAKE3 in key-derivation mode for the short inputs that key streams (a
//! scenario key, a seed and a component name: 40 bytes and the name), without
//! the general hasher: an input of one chunk (1,024 bytes) is a chain of
//! compressions of its 64-byte blocks, and a stream's key is one compression.
//! The `blake3` crate's hasher spends more on its set-up, buffering and
//! finalisation than on that compression; this computes the compressions
//! directly (in SSE2 registers on x86-64) and hands longer inputs to the crate.
//! The bytes are the crate's: tests compare them over every length up to past
//! one chunk.

use blake3::hazmat::{ContextKey, HasherExt};

/// Bytes in a block.
const BLOCK_LEN: usize = 64;
/// Bytes in a chunk: inputs up to this length are one chunk, hashed here.
const CHUNK_LEN: usize = 1024;

/// BLAKE3's flags (the specification's names).
const CHUNK_START: u32 = 1 << 0;
const CHUNK_END: u32 = 1 << 1;
const ROOT: u32 = 1 << 3;
const DERIVE_KEY_MATERIAL: u32 = 1 << 6;

/// BLAKE3's initialisation vector (SHA-256's).
const IV: [u32; 8] =
    [0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A, 0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19];

/// The message word each of the sixteen inputs of round `r`'s eight G
/// functions reads (the columns' pairs, then the diagonals').
const MSG_SCHEDULE: [[usize; 16]; 7] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8],
    [3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1],
    [10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6],
    [12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4],
    [9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7],
    [11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13],
];

/// A key-derivation context, hashed: its bytes (for the crate's hasher) and
/// words (the chaining value every input starts from).
#[derive(Clone, Copy, Debug)]
pub(super) struct DeriveKey {
    bytes: ContextKey,
    words: [u32; 8],
}

impl DeriveKey {
    /// The context `context` (`blake3::derive_key`'s first argument).
    pub(super) fn new(context: &str) -> Self {
        let bytes = blake3::hazmat::hash_derive_key_context(context);
        let words = std::array::from_fn(|i| u32::from_le_bytes(std::array::from_fn(|j| bytes[4 * i + j])));
        Self { bytes, words }
    }

    /// `blake3::derive_key(context, key_material)` of the concatenation of
    /// `pieces`.
    pub(super) fn derive(&self, pieces: &[&[u8]]) -> [u8; 32] {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        if len > CHUNK_LEN {
            let mut hasher = blake3::Hasher::new_from_context_key(&self.bytes);
            for piece in pieces {
                hasher.update(piece);
            }
            return *hasher.finalize().as_bytes();
        }
        let mut cv = self.words;
        let mut block = [0u8; BLOCK_LEN];
        let mut filled = 0;
        let mut flags = DERIVE_KEY_MATERIAL | CHUNK_START;
        for piece in pieces {
            let mut rest = *piece;
            while !rest.is_empty() {
                // A full block is compressed only once more input follows:
                // the last block, full or not, carries the chunk's end.
                if filled == BLOCK_LEN {
                    cv = compress(&cv, &words_of(&block), BLOCK_LEN as u32, flags);
                    flags = DERIVE_KEY_MATERIAL;
                    block = [0; BLOCK_LEN];
                    filled = 0;
                }
                let take = rest.len().min(BLOCK_LEN - filled);
                block[filled..filled + take].copy_from_slice(&rest[..take]);
                filled += take;
                rest = &rest[take..];
            }
        }
        // The last block, zero-padded; one chunk is the root.
        let out = compress(&cv, &words_of(&block), filled as u32, flags | CHUNK_END | ROOT);
        let mut bytes = [0u8; 32];
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(out) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes
    }
}

/// A block's sixteen little-endian words.
fn words_of(block: &[u8; BLOCK_LEN]) -> [u32; 16] {
    std::array::from_fn(|i| u32::from_le_bytes([block[4 * i], block[4 * i + 1], block[4 * i + 2], block[4 * i + 3]]))
}

/// The compression function: the chaining value after `block` (`len` bytes
/// of it input, counter 0: the first chunk) from `cv`, with `flags`.
#[cfg(target_arch = "x86_64")]
fn compress(cv: &[u32; 8], block: &[u32; 16], len: u32, flags: u32) -> [u32; 8] {
    // SAFETY: SSE2 is part of x86-64 itself: every x86-64 processor has it,
    // and the target enables it by default (`compress_sse2` needs nothing else).
    unsafe { compress_sse2(cv, block, len, flags) }
}

/// [`compress`] in SSE2 registers: the state's four rows, each G of a round
/// in one lane, as in `chacha_block`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn compress_sse2(cv: &[u32; 8], block: &[u32; 16], len: u32, flags: u32) -> [u32; 8] {
    use crate::lanes::{from_diagonals, row, to_diagonals, xor_rotate_16, xor_rotate_left};
    use std::arch::x86_64::{__m128i, _mm_add_epi32, _mm_xor_si128};
    /// Four G functions at once, lane `i` reading message words `x[i]`, `y[i]`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn g(a: &mut __m128i, b: &mut __m128i, c: &mut __m128i, d: &mut __m128i, x: __m128i, y: __m128i) {
        *a = _mm_add_epi32(_mm_add_epi32(*a, *b), x);
        *d = xor_rotate_16(*d, *a);
        *c = _mm_add_epi32(*c, *d);
        // BLAKE3 turns right by 12, 8 and 7: left by 20, 24 and 25.
        *b = xor_rotate_left::<20, 12>(*b, *c);
        *a = _mm_add_epi32(_mm_add_epi32(*a, *b), y);
        *d = xor_rotate_left::<24, 8>(*d, *a);
        *c = _mm_add_epi32(*c, *d);
        *b = xor_rotate_left::<25, 7>(*b, *c);
    }
    /// Round `R`: the columns' G functions, then the diagonals'. The round is
    /// a constant, so the message words it reads are at constant places.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn round<const R: usize>(state: &mut [__m128i; 4], block: &[u32; 16]) {
        let m = |i: usize| block[MSG_SCHEDULE[R][i]];
        let [a, b, c, d] = state;
        g(a, b, c, d, row([m(0), m(2), m(4), m(6)]), row([m(1), m(3), m(5), m(7)]));
        to_diagonals(b, c, d);
        g(a, b, c, d, row([m(8), m(10), m(12), m(14)]), row([m(9), m(11), m(13), m(15)]));
        from_diagonals(b, c, d);
    }
    let mut state = [
        row([cv[0], cv[1], cv[2], cv[3]]),
        row([cv[4], cv[5], cv[6], cv[7]]),
        row([IV[0], IV[1], IV[2], IV[3]]),
        row([0, 0, len, flags]),
    ];
    round::<0>(&mut state, block);
    round::<1>(&mut state, block);
    round::<2>(&mut state, block);
    round::<3>(&mut state, block);
    round::<4>(&mut state, block);
    round::<5>(&mut state, block);
    round::<6>(&mut state, block);
    let [a, b, c, d] = state;
    let out = [_mm_xor_si128(a, c), _mm_xor_si128(b, d)];
    // SAFETY: `[__m128i; 2]` and `[u32; 8]` are both 32 bytes of plain
    // integers, every bit pattern valid in either, and lane i of an `__m128i`
    // is the i-th little-endian 32-bit word of its memory.
    unsafe { std::mem::transmute::<[__m128i; 2], [u32; 8]>(out) }
}

/// The compression function elsewhere: word by word.
#[cfg(not(target_arch = "x86_64"))]
fn compress(cv: &[u32; 8], block: &[u32; 16], len: u32, flags: u32) -> [u32; 8] {
    compress_by_words(cv, block, len, flags)
}

/// The compression function as the specification writes it, word by word:
/// the reference the SSE2 one is checked against, and the one on targets
/// other than x86-64.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn compress_by_words(cv: &[u32; 8], block: &[u32; 16], len: u32, flags: u32) -> [u32; 8] {
    fn g(v: &mut [u32; 16], (a, b, c, d): (usize, usize, usize, usize), x: u32, y: u32) {
        v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
        v[d] = (v[d] ^ v[a]).rotate_right(16);
        v[c] = v[c].wrapping_add(v[d]);
        v[b] = (v[b] ^ v[c]).rotate_right(12);
        v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
        v[d] = (v[d] ^ v[a]).rotate_right(8);
        v[c] = v[c].wrapping_add(v[d]);
        v[b] = (v[b] ^ v[c]).rotate_right(7);
    }
    const GS: [(usize, usize, usize, usize); 8] = [
        (0, 4, 8, 12),
        (1, 5, 9, 13),
        (2, 6, 10, 14),
        (3, 7, 11, 15),
        (0, 5, 10, 15),
        (1, 6, 11, 12),
        (2, 7, 8, 13),
        (3, 4, 9, 14),
    ];
    let mut v = [0u32; 16];
    v[..8].copy_from_slice(cv);
    v[8..12].copy_from_slice(&IV[..4]);
    v[14] = len;
    v[15] = flags;
    for s in &MSG_SCHEDULE {
        for (i, abcd) in GS.into_iter().enumerate() {
            g(&mut v, abcd, block[s[2 * i]], block[s[2 * i + 1]]);
        }
    }
    std::array::from_fn(|i| v[i] ^ v[i + 8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_inputs::inputs;

    #[test]
    fn every_length_derives_what_the_blake3_crate_derives() {
        let key = DeriveKey::new("agentsim stream v1");
        let mut next = inputs(3);
        let bytes: Vec<u8> = (0..CHUNK_LEN + 200).map(|_| next() as u8).collect();
        for len in 0..=bytes.len() {
            let input = &bytes[..len];
            let theirs = blake3::derive_key("agentsim stream v1", input);
            assert_eq!(key.derive(&[input]), theirs, "length {len}, one piece");
            // Pieces cut anywhere, empty ones included, make no difference.
            let cut = (next() as usize) % (len + 1);
            let (head, tail) = input.split_at(cut);
            let cut2 = (next() as usize) % (tail.len() + 1);
            let (middle, tail) = tail.split_at(cut2);
            assert_eq!(key.derive(&[head, &[], middle, tail]), theirs, "length {len}, cut at {cut} and {cut2}");
        }
    }

    #[test]
    fn other_contexts_derive_what_the_blake3_crate_derives() {
        for context in ["", "agentsim scenario key v1", "another context, longer than one block of sixty-four bytes"] {
            let key = DeriveKey::new(context);
            for input in [&b""[..], b"tool.lookup_order", &[0xA5; 200]] {
                assert_eq!(key.derive(&[input]), blake3::derive_key(context, input), "{context:?}");
            }
        }
    }

    #[test]
    fn the_compression_is_the_word_by_word_one() {
        let mut next = inputs(4);
        for case in 0..20_000u32 {
            let cv: [u32; 8] = std::array::from_fn(|_| next() as u32);
            let block: [u32; 16] = std::array::from_fn(|_| next() as u32);
            let (len, flags) = ((next() % 65) as u32, case % 128);
            assert_eq!(compress(&cv, &block, len, flags), compress_by_words(&cv, &block, len, flags), "case {case}");
        }
    }
}
