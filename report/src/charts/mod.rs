//! Hand-written SVG charts: the frame and geometry they share, and one module
//! per kind of chart.

use std::fmt::Write as _;

use crate::text::escape;

mod bars;
mod difference;
mod histogram;
mod line;

pub(crate) use bars::{outcomes_chart, rates_chart};
pub(crate) use difference::difference_chart;
pub(crate) use histogram::histogram_chart;
pub(crate) use line::{Series, TimeSeries, line_chart, time_chart};

/// Chart width in SVG units.
pub(crate) const WIDTH: f64 = 760.0;
/// Left margin for labels.
pub(crate) const LEFT: f64 = 270.0;
/// Right margin for values.
pub(crate) const RIGHT: f64 = 150.0;
/// Height of one bar row.
pub(crate) const ROW: f64 = 26.0;

/// Colours of the stacks, in input order (cycled).
const STACK_COLOURS: [&str; 6] = ["#2563eb", "#d97706", "#059669", "#7c3aed", "#dc2626", "#0891b2"];

/// The colour of the `i`-th stack (or comparison row).
pub(crate) fn colour(i: usize) -> &'static str {
    STACK_COLOURS[i % STACK_COLOURS.len()]
}

/// The x of a share in 0..=1 on a bar chart's axis.
pub(crate) fn x_of(value: f64) -> f64 {
    LEFT + value.clamp(0.0, 1.0) * (WIDTH - LEFT - RIGHT)
}

/// Opens a chart: its caption, then the `<svg>` element.
pub(crate) fn svg_open(out: &mut String, id: &str, height: f64, title: &str) {
    let _ = write!(
        out,
        r#"<figure><figcaption>{}</figcaption><svg id="{id}" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{}">"#,
        escape(title),
        escape(title)
    );
}

/// Closes what [`svg_open`] opened.
pub(crate) fn svg_close(out: &mut String) {
    out.push_str("</svg></figure>\n");
}
