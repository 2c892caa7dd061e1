//! Building note details.
//!
//! Notes are part of the trajectory and its digest, so their details use the
//! engine's integer-only `Value`; counts and durations convert here, saturating
//! instead of wrapping so an absurd configuration cannot produce a negative count.

use agentsim_engine::Value;

/// A count or a duration as a note value (saturates at `i64::MAX`).
pub(crate) fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}
