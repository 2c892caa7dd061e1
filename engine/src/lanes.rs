//! Four 32-bit lanes in an SSE2 register (x86-64): the operations the ChaCha8
//! block (`chacha_block.rs`) and BLAKE3's compression (`rng/derive.rs`) share.
//! Both are ARX functions on a 4x4 state of words whose round works on the
//! four columns, then on the four diagonals: each row of the state is one
//! register, a column round is one operation a lane, and a diagonal round is
//! the same after the rows are turned ([`to_diagonals`]).
//!
//! Every function here needs SSE2, which every x86-64 processor has; they are
//! called from functions compiled with it.

use std::arch::x86_64::{
    __m128i, _mm_or_si128, _mm_set_epi32, _mm_shuffle_epi32, _mm_shufflehi_epi16, _mm_shufflelo_epi16, _mm_slli_epi32,
    _mm_srli_epi32, _mm_xor_si128,
};

/// A register of lanes `[w0, w1, w2, w3]`.
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn row(w: [u32; 4]) -> __m128i {
    _mm_set_epi32(w[3] as i32, w[2] as i32, w[1] as i32, w[0] as i32)
}

/// `(x ^ y)` turned by 16 bits in each lane (left and right are the same):
/// two 16-bit shuffles.
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn xor_rotate_16(x: __m128i, y: __m128i) -> __m128i {
    const SWAP_HALVES: i32 = 0b10_11_00_01;
    _mm_shufflehi_epi16::<SWAP_HALVES>(_mm_shufflelo_epi16::<SWAP_HALVES>(_mm_xor_si128(x, y)))
}

/// `(x ^ y)` turned left by `LEFT` bits in each lane (`RIGHT` = 32 - `LEFT`;
/// a turn right by n is a turn left by 32 - n).
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn xor_rotate_left<const LEFT: i32, const RIGHT: i32>(x: __m128i, y: __m128i) -> __m128i {
    const { assert!(LEFT + RIGHT == 32, "a turn of a 32-bit lane shifts by n and 32 - n") };
    let v = _mm_xor_si128(x, y);
    _mm_or_si128(_mm_slli_epi32::<LEFT>(v), _mm_srli_epi32::<RIGHT>(v))
}

// `_mm_shuffle_epi32` orders: lane i of the result is lane i + n (mod 4).
const LANES_LEFT_1: i32 = 0b00_11_10_01;
const LANES_LEFT_2: i32 = 0b01_00_11_10;
const LANES_LEFT_3: i32 = 0b10_01_00_11;

/// Turns rows `b`, `c` and `d` left by one, two and three lanes: lane i then
/// holds the i-th diagonal (lane 0: words 0, 5, 10, 15), so the column
/// round's operations compute the diagonal round.
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn to_diagonals(b: &mut __m128i, c: &mut __m128i, d: &mut __m128i) {
    *b = _mm_shuffle_epi32::<LANES_LEFT_1>(*b);
    *c = _mm_shuffle_epi32::<LANES_LEFT_2>(*c);
    *d = _mm_shuffle_epi32::<LANES_LEFT_3>(*d);
}

/// Undoes [`to_diagonals`]: the rows back in column order.
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn from_diagonals(b: &mut __m128i, c: &mut __m128i, d: &mut __m128i) {
    *b = _mm_shuffle_epi32::<LANES_LEFT_3>(*b);
    *c = _mm_shuffle_epi32::<LANES_LEFT_2>(*c);
    *d = _mm_shuffle_epi32::<LANES_LEFT_1>(*d);
}
