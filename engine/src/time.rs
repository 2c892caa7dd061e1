//! Virtual time. Time is an integer count of milliseconds since the start of a
//! trajectory; nothing in the engine reads a wall clock.

use crate::input_error::{InputError, InputErrorKind};

/// A point in virtual time, in milliseconds since the trajectory started.
pub type TimeMs = u64;

/// One virtual second, in milliseconds.
pub const SECOND_MS: TimeMs = 1_000;

/// One virtual minute, in milliseconds.
pub const MINUTE_MS: TimeMs = 60 * SECOND_MS;

/// The largest virtual time or duration any input may state, in milliseconds: ten
/// years (365-day) of virtual time. A horizon, a latency, a `Retry-After`, a
/// window or a backoff past it is refused at load, so that the clock (at most the
/// horizon) plus any duration stays far below `u64::MAX`: the clock cannot wrap.
/// The clock's own additions saturate as well, so a bound missed elsewhere ends
/// the run at the horizon instead of sending time back.
pub const TIME_MS_MAX: TimeMs = 10 * 365 * 24 * 60 * MINUTE_MS;

/// Checks a time or duration read from a file against [`TIME_MS_MAX`].
pub fn check_ms(field: &str, ms: TimeMs) -> Result<TimeMs, InputError> {
    if ms > TIME_MS_MAX {
        return Err(InputError::at(
            InputErrorKind::OutOfRange,
            field,
            format!("expected at most {TIME_MS_MAX} ms (ten years), found {ms}"),
        ));
    }
    Ok(ms)
}

/// For `#[serde(deserialize_with)]`: a time in milliseconds of at most
/// [`TIME_MS_MAX`], refused at its position otherwise.
pub fn bounded_ms<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<TimeMs, D::Error> {
    let ms = <TimeMs as serde::Deserialize>::deserialize(deserializer)?;
    if ms > TIME_MS_MAX {
        return Err(serde::de::Error::custom(format!("expected at most {TIME_MS_MAX} ms (ten years), found {ms}")));
    }
    Ok(ms)
}

/// [`bounded_ms`] for an optional time.
pub fn bounded_ms_opt<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<TimeMs>, D::Error> {
    let ms = <Option<TimeMs> as serde::Deserialize>::deserialize(deserializer)?;
    match ms {
        Some(ms) if ms > TIME_MS_MAX => {
            Err(serde::de::Error::custom(format!("expected at most {TIME_MS_MAX} ms (ten years), found {ms}")))
        }
        ms => Ok(ms),
    }
}

/// Formats a virtual time as `mm:ss.mmm` (or `h:mm:ss.mmm` past an hour) for timelines.
pub fn format_time(at_ms: TimeMs) -> String {
    let ms = at_ms % 1000;
    let total_s = at_ms / 1000;
    let (h, m, s) = (total_s / 3600, (total_s / 60) % 60, total_s % 60);
    if h > 0 { format!("{h}:{m:02}:{s:02}.{ms:03}") } else { format!("{m:02}:{s:02}.{ms:03}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_minutes_and_hours() {
        assert_eq!(format_time(0), "00:00.000");
        assert_eq!(format_time(61_005), "01:01.005");
        assert_eq!(format_time(3_600_000 + 2_000), "1:00:02.000");
    }
}
