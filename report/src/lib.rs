//! The HTML report: one self-contained file (no network, no external script or
//! style) with hand-written SVG charts of one or more sweeps.
//!
//! It reads the sweeps' `summary.json` (and `surface.json`) as JSON values and
//! prints the numbers exactly as they are written there, so the report and the
//! files always agree. A few lines of inline script only check, once the page has
//! loaded, that every chart was laid out, and record that in `data-status` on the
//! body (the end-to-end test reads it from headless Chromium).

use serde_json::Value as Json;

mod charts;
mod comparison;
mod labels;
mod page;
mod sections;
mod sessions;
mod tables;
mod text;

pub use labels::folder_suffixes;
pub use text::{escape, table_number};

/// One sweep to show.
#[derive(Clone, Debug)]
pub struct ReportInput {
    /// How the sweep is named in the report (the agent spec, made unique).
    pub label: String,
    /// Its `summary.json`.
    pub summary: Json,
    /// Its `surface.json`, when the directory holds a reliability surface.
    pub surface: Option<Json>,
}

/// The whole report: sweeps (with their surfaces) and paired comparisons
/// (`compare.json` from `agentsim compare --out`).
pub fn render(inputs: &[ReportInput], comparisons: &[Json]) -> String {
    let mut out = page::head();
    sections::sweep_lines(&mut out, inputs);
    comparison::comparisons_section(&mut out, comparisons);
    if !inputs.is_empty() {
        sections::completion_section(&mut out, inputs);
        sections::dimensions_section(&mut out, inputs);
        sections::distributions_section(&mut out, inputs);
        sections::surface_section(&mut out, inputs);
        sections::pass_k_section(&mut out, inputs);
        sessions::sessions_section(&mut out, inputs);
        tables::importance_section(&mut out, inputs);
        tables::numbers_section(&mut out, inputs);
    }
    page::end(&mut out);
    out
}
