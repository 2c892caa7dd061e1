//! The cross-checks of a world's configuration that serde cannot express and
//! that every world makes the same way. Each returns the problem as a
//! [`ConfigError`] (its kind, the field path, the value to point at, the
//! message), which `Scenario` turns into a located error, so a mistake reads
//! the same whichever world it is made in.

use std::collections::BTreeSet;

use agentsim_engine::Latency;

pub use crate::world_model::{ConfigError, ConfigErrorKind};

/// Each id of `list` (a list field such as `customers`) is unique; a repeated
/// one is reported at its second occurrence, as the `what` it identifies.
/// O(n log n): a scenario may list hundreds of thousands of ids.
pub fn unique_ids<'a>(ids: impl IntoIterator<Item = &'a str>, list: &str, what: &str) -> Result<(), ConfigError> {
    unique_ids_set(ids, list, what).map(|_| ())
}

/// [`unique_ids`], returning the set of ids for later look-ups (a reference
/// to a customer checked against the customers) in O(log n) each.
pub fn unique_ids_set<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    list: &str,
    what: &str,
) -> Result<BTreeSet<&'a str>, ConfigError> {
    let mut seen = BTreeSet::new();
    for (i, id) in ids.into_iter().enumerate() {
        if !seen.insert(id) {
            let message = format!("duplicate {what} id `{id}`");
            return Err(ConfigError::new(ConfigErrorKind::DuplicateId, format!("{list}[{i}].id"), id, message));
        }
    }
    Ok(seen)
}

/// The largest amount of money a scenario may state, in cents ($10 million): far
/// above any price or fare, low enough that no sum of them in one world overflows.
pub const CENTS_MAX: i64 = 1_000_000_000;

/// The list field `list` has at least one `what`: a world draws its task from
/// it, and there is nothing to draw from an empty list.
pub fn not_empty(is_empty: bool, list: &str, what: &str) -> Result<(), ConfigError> {
    if is_empty {
        return Err(ConfigError::at_field(ConfigErrorKind::Empty, list, format!("at least one {what} is needed")));
    }
    Ok(())
}

/// The interval `field` between two of a world's own events (`what`, plural)
/// can be more than 0: an interval that is always 0 would schedule them forever
/// at the same instant.
pub fn positive_interval(interval: &Latency, field: &str, what: &str) -> Result<(), ConfigError> {
    if interval.max_ms() == 0 {
        return Err(ConfigError::at_field(
            ConfigErrorKind::ZeroInterval,
            field,
            format!("{what} need a positive interval"),
        ));
    }
    Ok(())
}

/// Persona weights (name, weight) are finite and not negative, and at least one
/// is positive, since a persona is drawn by weight.
pub fn persona_weights(weights: &[(&str, f64)]) -> Result<(), ConfigError> {
    for &(name, w) in weights {
        if !(w.is_finite() && w >= 0.0) {
            let message = format!("expected a weight >= 0, found {w}");
            return Err(ConfigError::new(ConfigErrorKind::PersonaWeight, format!("personas.{name}"), name, message));
        }
    }
    if weights.iter().map(|(_, w)| w).sum::<f64>() <= 0.0 {
        let message = "at least one persona weight must be positive";
        return Err(ConfigError::at_field(ConfigErrorKind::PersonaWeight, "personas", message));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_id_is_reported_at_its_second_place() {
        let err = unique_ids(["C1", "C2", "C1"], "customers", "customer").unwrap_err();
        assert_eq!(err.kind, ConfigErrorKind::DuplicateId);
        assert_eq!(
            (err.field.as_str(), err.needle.as_str(), err.message.as_str()),
            ("customers[2].id", "C1", "duplicate customer id `C1`")
        );
        assert!(unique_ids(["C1", "C2"], "customers", "customer").is_ok());
    }

    #[test]
    fn persona_weights_must_be_finite_non_negative_and_not_all_zero() {
        let err = persona_weights(&[("clear", 1.0), ("vague", -1.0)]).unwrap_err();
        assert_eq!((err.kind, err.field.as_str()), (ConfigErrorKind::PersonaWeight, "personas.vague"));
        let err = persona_weights(&[("clear", 0.0), ("vague", 0.0)]).unwrap_err();
        assert_eq!(err.field, "personas");
        assert!(persona_weights(&[("clear", 0.0), ("vague", 0.5)]).is_ok());
    }
}
