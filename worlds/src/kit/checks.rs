//! The cross-checks of a world's configuration that serde cannot express and
//! that every world makes the same way. Each returns the problem as (field path,
//! value to point at, message), the form `Scenario` turns into a located error,
//! so a mistake reads the same whichever world it is made in.

use std::collections::BTreeSet;

use agentsim_engine::Latency;

/// A configuration problem: (field path, value to point at, message).
pub type Problem = (String, String, String);

/// Each id of `list` (a list field such as `customers`) is unique; a repeated
/// one is reported at its second occurrence, as the `what` it identifies.
/// O(n log n): a scenario may list hundreds of thousands of ids.
pub fn unique_ids<'a>(ids: impl IntoIterator<Item = &'a str>, list: &str, what: &str) -> Result<(), Problem> {
    unique_ids_set(ids, list, what).map(|_| ())
}

/// [`unique_ids`], returning the set of ids for later look-ups (a reference
/// to a customer checked against the customers) in O(log n) each.
pub fn unique_ids_set<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    list: &str,
    what: &str,
) -> Result<BTreeSet<&'a str>, Problem> {
    let mut seen = BTreeSet::new();
    for (i, id) in ids.into_iter().enumerate() {
        if !seen.insert(id) {
            return Err((format!("{list}[{i}].id"), id.to_string(), format!("duplicate {what} id `{id}`")));
        }
    }
    Ok(seen)
}

/// The largest amount of money a scenario may state, in cents ($10 million): far
/// above any price or fare, low enough that no sum of them in one world overflows.
pub const CENTS_MAX: i64 = 1_000_000_000;

/// The list field `list` has at least one `what`: a world draws its task from
/// it, and there is nothing to draw from an empty list.
pub fn not_empty(is_empty: bool, list: &str, what: &str) -> Result<(), Problem> {
    if is_empty {
        return Err((list.into(), list.into(), format!("at least one {what} is needed")));
    }
    Ok(())
}

/// The interval `field` between two of a world's own events (`what`, plural)
/// can be more than 0: an interval that is always 0 would schedule them forever
/// at the same instant.
pub fn positive_interval(interval: &Latency, field: &str, what: &str) -> Result<(), Problem> {
    if interval.max_ms() == 0 {
        return Err((field.into(), field.into(), format!("{what} need a positive interval")));
    }
    Ok(())
}

/// Persona weights (name, weight) are finite and not negative, and at least one
/// is positive, since a persona is drawn by weight.
pub fn persona_weights(weights: &[(&str, f64)]) -> Result<(), Problem> {
    for &(name, w) in weights {
        if !(w.is_finite() && w >= 0.0) {
            return Err((format!("personas.{name}"), name.into(), format!("expected a weight >= 0, found {w}")));
        }
    }
    if weights.iter().map(|(_, w)| w).sum::<f64>() <= 0.0 {
        return Err(("personas".into(), "personas".into(), "at least one persona weight must be positive".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_id_is_reported_at_its_second_place() {
        let err = unique_ids(["C1", "C2", "C1"], "customers", "customer").unwrap_err();
        assert_eq!(err, ("customers[2].id".into(), "C1".into(), "duplicate customer id `C1`".into()));
        assert!(unique_ids(["C1", "C2"], "customers", "customer").is_ok());
    }

    #[test]
    fn persona_weights_must_be_finite_non_negative_and_not_all_zero() {
        let err = persona_weights(&[("clear", 1.0), ("vague", -1.0)]).unwrap_err();
        assert_eq!(err.0, "personas.vague");
        let err = persona_weights(&[("clear", 0.0), ("vague", 0.0)]).unwrap_err();
        assert_eq!(err.0, "personas");
        assert!(persona_weights(&[("clear", 0.0), ("vague", 0.5)]).is_ok());
    }
}
