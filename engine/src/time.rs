//! Virtual time. Time is an integer count of milliseconds since the start of a
//! trajectory; nothing in the engine reads a wall clock.

/// A point in virtual time, in milliseconds since the trajectory started.
pub type TimeMs = u64;

/// One virtual second, in milliseconds.
pub const SECOND_MS: TimeMs = 1_000;

/// One virtual minute, in milliseconds.
pub const MINUTE_MS: TimeMs = 60 * SECOND_MS;

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
