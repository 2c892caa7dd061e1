//! Numbers as people read them: percentages that never round a rate to a
//! bound it does not reach, and counts with their noun.

/// `x` (a share in [0, 1]) as a percentage with one decimal, or with as many
/// more as it takes (up to six, then scientific) not to round a share below 1 up to "100.0%" or
/// a share above 0 down to "0.0%": 19862/19863 prints `99.99%`, not `100.0%`.
pub fn percent(x: f64) -> String {
    let hundred = 100.0 * x;
    for decimals in 1..=6 {
        let text = format!("{hundred:.decimals$}");
        let shown: f64 = text.parse().expect("a formatted float parses");
        let rounded_to_a_bound = (shown >= 100.0 && x < 1.0) || (shown <= 0.0 && x > 0.0);
        if !rounded_to_a_bound {
            return format!("{text}%");
        }
    }
    // Within a millionth of a percent of a bound: scientific notation.
    format!("{hundred:.1e}%")
}

/// `n` and its noun, singular for one: "1 comparison", "2 comparisons".
pub fn counted(n: u64, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_never_rounds_to_a_bound_it_does_not_reach() {
        assert_eq!(percent(0.994), "99.4%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(19862.0 / 19863.0), "99.99%");
        assert_eq!(percent(0.99999), "99.999%");
        assert_eq!(percent(0.9996), "99.96%");
        assert_eq!(percent(1.0 / 19863.0), "0.01%");
        assert_eq!(percent(1e-9), "1.0e-7%");
        assert_eq!(counted(1, "trial", "trials"), "1 trial");
        assert_eq!(counted(3, "trial", "trials"), "3 trials");
    }
}
