//! The chart of a paired comparison: intervals on the difference between two
//! stacks, around zero.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::{LEFT, RIGHT, ROW, WIDTH, colour, svg_close, svg_open};
use crate::labels::{LABEL_CHARS_MAX, label_text};
use crate::text::{escape, num};

/// Where the chart draws a difference: symmetric around zero, out to `reach`.
struct Scale {
    reach: f64,
}

impl Scale {
    /// Wide enough for every interval of `rows` (at least a point), plus 15%.
    fn new(rows: &[(&str, &Json)]) -> Scale {
        let reach =
            rows.iter().flat_map(|(_, d)| [num(&d["lo"]).abs(), num(&d["hi"]).abs()]).fold(0.01, f64::max) * 1.15;
        Scale { reach }
    }

    fn x(&self, d: f64) -> f64 {
        let plot = WIDTH - LEFT - RIGHT;
        LEFT + (d / self.reach + 1.0) / 2.0 * plot
    }
}

/// The `index`-th comparison's chart: one row per (label, `{lo, estimate, hi}`)
/// difference, in percentage points.
pub(crate) fn difference_chart(out: &mut String, index: usize, rows: &[(&str, &Json)]) {
    let scale = Scale::new(rows);
    let height = 30.0 + rows.len() as f64 * ROW + 24.0;
    svg_open(
        out,
        &format!("compare-{index}"),
        height,
        "Difference in completion, candidate minus baseline (95% intervals)",
    );
    difference_axis(out, &scale, 24.0 + rows.len() as f64 * ROW);
    for (i, (label, d)) in rows.iter().enumerate() {
        difference_row(out, &scale, 24.0 + i as f64 * ROW + 10.0, label, d, colour(index + i));
    }
    svg_close(out);
}

/// Grid lines from `-reach` to `reach` (zero darker), labelled in points.
fn difference_axis(out: &mut String, scale: &Scale, axis_y: f64) {
    for tick in -4..=4 {
        let d = scale.reach * f64::from(tick) / 4.0;
        let _ = write!(
            out,
            r##"<line x1="{:.1}" y1="18" x2="{:.1}" y2="{axis_y:.1}" stroke="{}"/>"##,
            scale.x(d),
            scale.x(d),
            if tick == 0 { "#111827" } else { "#e5e7eb" },
        );
        if tick % 2 == 0 {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{:+.1} pp</text>"##,
                scale.x(d),
                axis_y + 12.0,
                100.0 * d
            );
        }
    }
}

/// One difference at `y`: its label, its interval, its estimate and the text.
fn difference_row(out: &mut String, scale: &Scale, y: f64, label: &str, d: &Json, stroke: &str) {
    let (lo, est, hi) = (num(&d["lo"]), num(&d["estimate"]), num(&d["hi"]));
    let text = format!("{:+.2} pp [{:+.2}, {:+.2}]", 100.0 * est, 100.0 * lo, 100.0 * hi);
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text><line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="3"/><circle cx="{:.1}" cy="{y:.1}" r="4.5" fill="#111827"><title>{}</title></circle><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"##,
        LEFT - 8.0,
        y + 4.0,
        label_text(label, LABEL_CHARS_MAX),
        scale.x(lo),
        scale.x(hi),
        stroke,
        scale.x(est),
        escape(&text),
        WIDTH - RIGHT + 8.0,
        y + 4.0,
        escape(&text)
    );
}
