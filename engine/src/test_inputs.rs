//! Test inputs shared by the engine's unit tests.

/// A cheap deterministic sequence of test inputs (splitmix64), seeded by
/// `state`: many keys, counters and bytes without a generator under test.
pub(crate) fn inputs(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
