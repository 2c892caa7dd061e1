//! ChaCha8, one 64-byte block at a time: the generator of every stream
//! ([`crate::Stream`]), most of which serve a handful of draws per trajectory
//! (a tool call's sub-stream three or four words, a component's stream a dozen).
//! `rand_chacha` computes four blocks per refill; a stream that draws three
//! words needs one. The block is computed in SSE2 registers on x86-64.
//!
//! The state is laid out as `rand_chacha`'s (constants, the 32-byte key, a
//! 64-bit block counter, a 64-bit stream id) and the words are read in its
//! order, two little-endian 32-bit words to a `u64`, so the draws are the same
//! (`tests::block_streams_draw_what_rand_chacha_draws`,
//! `rng::tests::substreams_draw_what_rand_chacha_draws`).

/// "expand 32-byte k".
const CONSTANTS: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Words in a block.
const BLOCK_WORDS: usize = 16;

/// One ChaCha8 key stream, block by block.
#[derive(Clone, Debug)]
pub(crate) struct BlockStream {
    key: [u32; 8],
    stream: u64,
    /// The counter of the next block to compute.
    next_block: u64,
    words: [u32; BLOCK_WORDS],
    /// The next unread word of `words` (`BLOCK_WORDS`: none left).
    at: usize,
}

impl BlockStream {
    /// The key stream of `key` and stream id `stream`, from block 0.
    pub(crate) fn new(key: [u8; 32], stream: u64) -> Self {
        let mut words = [0u32; 8];
        for (word, bytes) in words.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        Self { key: words, stream, next_block: 0, words: [0; BLOCK_WORDS], at: BLOCK_WORDS }
    }

    /// The 32-byte key.
    pub(crate) fn key(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (bytes, word) in out.chunks_exact_mut(4).zip(self.key) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        out
    }

    /// The next two words, the first the low half.
    pub(crate) fn next_u64(&mut self) -> u64 {
        // Words are taken two at a time from a block of sixteen: a pair never
        // straddles two blocks.
        if self.at >= BLOCK_WORDS {
            self.refill();
        }
        let low = u64::from(self.words[self.at]);
        let high = u64::from(self.words[self.at + 1]);
        self.at += 2;
        assert!(self.at <= BLOCK_WORDS, "a draw reads inside one block");
        (high << 32) | low
    }

    fn refill(&mut self) {
        let counter = self.next_block;
        self.next_block = self.next_block.wrapping_add(1);
        self.words = block(&self.key, counter, self.stream);
        self.at = 0;
    }
}

/// The ChaCha8 block `counter` of stream `stream` under `key`: the same
/// sixteen words as [`block_by_words`] (tests compare them over many inputs).
///
/// The four quarter rounds of a ChaCha round work on the four lanes of each
/// row of the 4x4 state at once, so the block is computed as operations on
/// four rows of four lanes: SSE2 registers on x86-64 (every x86-64 processor
/// has SSE2), about a third of the instructions of the word-by-word
/// formulation, which the compiler does not vectorise itself (measured).
#[cfg(target_arch = "x86_64")]
fn block(key: &[u32; 8], counter: u64, stream: u64) -> [u32; BLOCK_WORDS] {
    // SAFETY: SSE2 is part of x86-64 itself: every x86-64 processor has it,
    // and the target enables it by default (`block_sse2` needs nothing else).
    unsafe { block_sse2(key, counter, stream) }
}

/// [`block`] in SSE2 registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn block_sse2(key: &[u32; 8], counter: u64, stream: u64) -> [u32; BLOCK_WORDS] {
    use crate::lanes::{from_diagonals, row, to_diagonals, xor_rotate_16, xor_rotate_left};
    use std::arch::x86_64::{__m128i, _mm_add_epi32};
    /// Four quarter rounds at once: lane `i` is the quarter round of
    /// `(a[i], b[i], c[i], d[i])`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn quarter_rounds(a: &mut __m128i, b: &mut __m128i, c: &mut __m128i, d: &mut __m128i) {
        *a = _mm_add_epi32(*a, *b);
        *d = xor_rotate_16(*d, *a);
        *c = _mm_add_epi32(*c, *d);
        *b = xor_rotate_left::<12, 20>(*b, *c);
        *a = _mm_add_epi32(*a, *b);
        *d = xor_rotate_left::<8, 24>(*d, *a);
        *c = _mm_add_epi32(*c, *d);
        *b = xor_rotate_left::<7, 25>(*b, *c);
    }
    let initial = [
        row(CONSTANTS),
        row([key[0], key[1], key[2], key[3]]),
        row([key[4], key[5], key[6], key[7]]),
        row([counter as u32, (counter >> 32) as u32, stream as u32, (stream >> 32) as u32]),
    ];
    let [mut a, mut b, mut c, mut d] = initial;
    // Eight rounds: four double rounds of a column and a diagonal round.
    for _ in 0..4 {
        quarter_rounds(&mut a, &mut b, &mut c, &mut d);
        to_diagonals(&mut b, &mut c, &mut d);
        quarter_rounds(&mut a, &mut b, &mut c, &mut d);
        from_diagonals(&mut b, &mut c, &mut d);
    }
    let rows = [
        _mm_add_epi32(a, initial[0]),
        _mm_add_epi32(b, initial[1]),
        _mm_add_epi32(c, initial[2]),
        _mm_add_epi32(d, initial[3]),
    ];
    // SAFETY: `[__m128i; 4]` and `[u32; 16]` are both 64 bytes of plain
    // integers, every bit pattern valid in either, and lane i of an
    // `__m128i` is the i-th little-endian 32-bit word of its memory, so word
    // 4r + i is lane i of row r.
    unsafe { std::mem::transmute::<[__m128i; 4], [u32; BLOCK_WORDS]>(rows) }
}

/// The block elsewhere: the word-by-word formulation.
#[cfg(not(target_arch = "x86_64"))]
fn block(key: &[u32; 8], counter: u64, stream: u64) -> [u32; BLOCK_WORDS] {
    block_by_words(key, counter, stream)
}

/// The ChaCha8 block as the specification writes it, word by word: the
/// reference [`block`] is checked against, and the block on targets other
/// than x86-64.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn block_by_words(key: &[u32; 8], counter: u64, stream: u64) -> [u32; BLOCK_WORDS] {
    let mut state = [0u32; BLOCK_WORDS];
    state[..4].copy_from_slice(&CONSTANTS);
    state[4..12].copy_from_slice(key);
    state[12] = counter as u32;
    state[13] = (counter >> 32) as u32;
    state[14] = stream as u32;
    state[15] = (stream >> 32) as u32;
    let mut x = state;
    for _ in 0..4 {
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    for (word, initial) in x.iter_mut().zip(state) {
        *word = word.wrapping_add(initial);
    }
    x
}

#[inline(always)]
fn quarter_round(x: &mut [u32; BLOCK_WORDS], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_inputs::inputs;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn rows_compute_the_block_the_words_do() {
        let mut next = inputs(1);
        let edges = [0, 1, u64::from(u32::MAX), 1 << 32, u64::MAX - 1, u64::MAX];
        for case in 0..20_000 {
            let key: [u32; 8] = std::array::from_fn(|_| next() as u32);
            let (counter, stream) = match case % 4 {
                0 => (edges[case / 4 % edges.len()], edges[case / 24 % edges.len()]),
                1 => (next() % 16, next()),
                _ => (next(), next()),
            };
            assert_eq!(
                block(&key, counter, stream),
                block_by_words(&key, counter, stream),
                "key {key:?}, counter {counter}, stream {stream}"
            );
        }
    }

    #[test]
    fn block_streams_draw_what_rand_chacha_draws() {
        let mut next = inputs(2);
        for case in 0..300 {
            let key: [u8; 32] = std::array::from_fn(|_| next() as u8);
            let stream = if case % 3 == 0 { next() % 8 } else { next() };
            let mut ours = BlockStream::new(key, stream);
            let mut theirs = ChaCha8Rng::from_seed(key);
            theirs.set_stream(stream);
            assert_eq!(ours.key(), key, "the key reads back");
            // Nine blocks: past rand_chacha's four-block refills twice.
            for draw in 0..72 {
                assert_eq!(ours.next_u64(), theirs.next_u64(), "key {key:?}, stream {stream}, draw {draw}");
            }
        }
    }
}
