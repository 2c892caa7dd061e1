//! ChaCha8, one 64-byte block at a time: the generator of sub-streams
//! ([`crate::Stream::substream`]), which most often serve a handful of draws.
//! `rand_chacha` computes four blocks per refill (with SIMD, about the cost of
//! one here); a sub-stream that draws three words needs one.
//!
//! The state is laid out as `rand_chacha`'s (constants, the 32-byte key, a
//! 64-bit block counter, a 64-bit stream id) and the words are read in its
//! order, two little-endian 32-bit words to a `u64`, so the draws are the same
//! (`rng::tests::substreams_draw_what_rand_chacha_draws`).

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
        let mut state = [0u32; BLOCK_WORDS];
        state[..4].copy_from_slice(&CONSTANTS);
        state[4..12].copy_from_slice(&self.key);
        state[12] = counter as u32;
        state[13] = (counter >> 32) as u32;
        state[14] = self.stream as u32;
        state[15] = (self.stream >> 32) as u32;
        let mut x = state;
        // Eight rounds: four double rounds of a column and a diagonal round.
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
        self.words = x;
        self.at = 0;
    }
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
