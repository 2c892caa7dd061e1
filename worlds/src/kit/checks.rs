//! The cross-checks of a world's configuration that serde cannot express and
//! that every world makes the same way. Each returns the problem as a
//! [`ConfigError`] (its kind, the field path, the value to point at, the
//! message), which `Scenario` turns into a located error, so a mistake reads
//! the same whichever world it is made in.

use std::collections::BTreeSet;
use std::fmt;

use agentsim_engine::Latency;

/// What is wrong with a world's configuration, for a caller to match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigErrorKind {
    /// An id appears twice in a list.
    DuplicateId,
    /// A list the world draws from is empty.
    Empty,
    /// An interval between the world's own events is always 0.
    ZeroInterval,
    /// A persona weight is negative or not finite, or all are zero.
    PersonaWeight,
    /// A number is outside its range (or two bounds are out of order).
    OutOfRange,
    /// A reference names something the configuration does not hold.
    UnknownReference,
    /// The values are each fine, but together a seed could draw a task that
    /// cannot be done.
    Unsatisfiable,
}

/// A problem in a world's configuration: its kind, the field path it is
/// about (inside the scenario's `world` section), the value to point at in
/// the scenario's text, and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// What is wrong.
    pub kind: ConfigErrorKind,
    /// The field path, like `customers[2].id`.
    pub field: String,
    /// The value (or field name) to point at in the text.
    pub needle: String,
    /// What is wrong, in words.
    pub message: String,
}

impl ConfigError {
    /// A problem of `kind` at `field`, pointed at by `needle`.
    pub fn new(
        kind: ConfigErrorKind,
        field: impl Into<String>,
        needle: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self { kind, field: field.into(), needle: needle.into(), message: message.into() }
    }

    /// A problem of `kind` at `field`, pointed at by the field's own name.
    pub fn at_field(kind: ConfigErrorKind, field: &str, message: impl Into<String>) -> Self {
        Self::new(kind, field, field, message)
    }

    /// (field path, value to point at, message): the form
    /// [`WorldKind::check`](crate::world_model::WorldKind::check) returns.
    pub fn into_parts(self) -> (String, String, String) {
        (self.field, self.needle, self.message)
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

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
        assert_eq!(err.into_parts(), ("customers[2].id".into(), "C1".into(), "duplicate customer id `C1`".into()));
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
