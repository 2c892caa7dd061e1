//! The reliability surface: one sweep per fault scale, so a user sees where a
//! stack breaks as the world gets harsher. Written as `surface.json` beside one
//! sub-directory per scale (`scale-0`, `scale-0.5`, ...) holding that sweep's
//! `trajectories.csv` and `summary.json`.

use serde::Serialize;

use crate::rate::Rate;

use crate::summary::Summary;

/// The longest [`scale_label`]: 17 significant digits, a point, `e-` and
/// three digits of exponent.
pub const SCALE_LABEL_CHARS_MAX: usize = 24;

/// A fault scale in at most [`SCALE_LABEL_CHARS_MAX`] characters: as written
/// (`0.5`, `2`) when that is short, else in exponent form (`1e-300`, `1e308`),
/// which Rust prints with the fewest digits that read back as the same number.
/// Distinct scales get distinct labels (only the exponent form has an `e`).
pub fn scale_label(fault_scale: f64) -> String {
    let plain = format!("{fault_scale}");
    if plain.len() <= SCALE_LABEL_CHARS_MAX { plain } else { format!("{fault_scale:e}") }
}

/// The sub-directory of one scale's sweep: `scale-` and [`scale_label`], so
/// that any finite scale's folder name is far below the 255 bytes a file
/// system allows.
pub fn scale_dir(fault_scale: f64) -> String {
    format!("scale-{}", scale_label(fault_scale))
}

/// One point of the surface: a whole sweep at one fault scale.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SurfacePoint {
    /// The fault probability multiplier.
    pub fault_scale: f64,
    /// Where that sweep's files are, relative to `surface.json`.
    pub dir: String,
    /// Share of trajectories that succeeded.
    pub completion: Rate,
    /// Among trajectories that met a fault, the share that ended safely.
    pub recovery: Rate,
    /// Share of trajectories where a minefield fired.
    pub violation: Rate,
    /// Recovery per kind of fault met (`corrupted`, `injected`, `error_503`, ...):
    /// the surface of each fault kind, read across the points.
    pub recovery_by_fault: std::collections::BTreeMap<String, Rate>,
    /// The digest of that sweep.
    pub digest: String,
}

impl SurfacePoint {
    /// The point of one scale's summary.
    pub fn of(summary: &Summary) -> SurfacePoint {
        SurfacePoint {
            fault_scale: summary.fault_scale,
            dir: scale_dir(summary.fault_scale),
            completion: summary.completion,
            recovery: summary.recovery,
            violation: summary.violation,
            recovery_by_fault: summary.recovery_by_fault.clone(),
            digest: summary.digest.clone(),
        }
    }
}

/// What `surface.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Surface {
    /// Scenario name.
    pub scenario: String,
    /// Agent spec as given.
    pub agent: String,
    /// First seed (inclusive).
    pub seed_start: u64,
    /// Last seed (exclusive).
    pub seed_end: u64,
    /// Attempts per seed.
    pub trials: u32,
    /// One point per scale, in the order given.
    pub points: Vec<SurfacePoint>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scale_has_a_short_label_of_its_own() {
        let scales =
            [0.0, 0.5, 1.0, 2.0, 1e-300, 1e308, f64::MAX, f64::MIN_POSITIVE, 5e-324, 1.234_567_890_123_456_7e-300];
        let labels: Vec<String> = scales.iter().map(|s| scale_label(*s)).collect();
        assert_eq!(labels[..4], ["0", "0.5", "1", "2"], "short scales keep their names");
        assert_eq!(labels[4..6], ["1e-300", "1e308"]);
        for (scale, label) in scales.iter().zip(&labels) {
            assert!(label.len() <= SCALE_LABEL_CHARS_MAX, "{label}");
            assert_eq!(label.parse::<f64>().unwrap(), *scale, "{label} reads back as the scale");
        }
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), labels.len());
    }
}
