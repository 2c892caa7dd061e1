//! The reliability surface: one sweep per fault scale, so a user sees where a
//! stack breaks as the world gets harsher. Written as `surface.json` beside one
//! sub-directory per scale (`scale-0`, `scale-0.5`, ...) holding that sweep's
//! `trajectories.csv` and `summary.json`.

use serde::Serialize;

use agentsim_engine::stats::Rate;

use crate::summary::Summary;

/// The sub-directory of one scale's sweep.
pub fn scale_dir(fault_scale: f64) -> String {
    format!("scale-{fault_scale}")
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
