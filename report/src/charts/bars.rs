//! Bar charts of shares: rates with their intervals, and the outcomes of each
//! stack stacked in one bar.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::{LEFT, RIGHT, ROW, WIDTH, svg_close, svg_open, x_of};
use crate::ReportInput;
use crate::labels::{LABEL_CHARS_MAX, label_text};
use crate::text::{escape, num, pct, rate_text, raw};

/// Colours of the outcomes, in reporting order.
const OUTCOME_COLOURS: [(&str, &str); 9] = [
    ("success", "#16a34a"),
    ("wrong_result", "#f97316"),
    ("violation", "#dc2626"),
    ("gave_up", "#a3a3a3"),
    ("looped", "#9333ea"),
    ("budget_exhausted", "#db2777"),
    ("horizon", "#0ea5e9"),
    ("escalated", "#eab308"),
    ("agent_error", "#525252"),
];

/// A horizontal axis from 0% to 100% at `y`.
fn percent_axis(out: &mut String, y: f64) {
    for tick in 0..=10 {
        let v = f64::from(tick) / 10.0;
        let x = x_of(v);
        let _ = write!(out, r##"<line x1="{x:.1}" y1="18" x2="{x:.1}" y2="{y:.1}" stroke="#e5e7eb"/>"##);
        if tick % 2 == 0 {
            let _ = write!(
                out,
                r##"<text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{}%</text>"##,
                y + 12.0,
                tick * 10
            );
        }
    }
}

/// One row: label, a bar to `rate` and a whisker from `lo` to `hi`, the value text.
fn rate_row(out: &mut String, y: f64, label: &str, rate: &Json, fill: &str) {
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"##,
        LEFT - 8.0,
        y + 13.0,
        label_text(label, LABEL_CHARS_MAX)
    );
    if num(&rate["n"]) > 0.0 {
        let (r, lo, hi) = (num(&rate["rate"]), num(&rate["lo"]), num(&rate["hi"]));
        let _ = write!(
            out,
            r#"<rect x="{LEFT}" y="{:.1}" width="{:.1}" height="16" fill="{fill}" opacity="0.75"><title>{}</title></rect>"#,
            y + 2.0,
            x_of(r) - LEFT,
            escape(&rate_text(rate))
        );
        let (x_lo, x_hi) = (x_of(lo), x_of(hi));
        let _ = write!(
            out,
            r##"<line x1="{x_lo:.1}" y1="{:.1}" x2="{x_hi:.1}" y2="{:.1}" stroke="#111827" stroke-width="1.5"/><line x1="{x_lo:.1}" y1="{:.1}" x2="{x_lo:.1}" y2="{:.1}" stroke="#111827"/><line x1="{x_hi:.1}" y1="{:.1}" x2="{x_hi:.1}" y2="{:.1}" stroke="#111827"/>"##,
            y + 10.0,
            y + 10.0,
            y + 5.0,
            y + 15.0,
            y + 5.0,
            y + 15.0
        );
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
        WIDTH - RIGHT + 8.0,
        y + 13.0,
        escape(&rate_text(rate))
    );
}

/// A chart of rates, one row each: (label, rate object, colour).
pub(crate) fn rates_chart(out: &mut String, id: &str, title: &str, rows: &[(String, Json, &str)]) {
    let height = 30.0 + rows.len() as f64 * ROW + 20.0;
    svg_open(out, id, height, title);
    percent_axis(out, height - 20.0);
    for (i, (label, rate, fill)) in rows.iter().enumerate() {
        rate_row(out, 24.0 + i as f64 * ROW, label, rate, fill);
    }
    svg_close(out);
}

/// The outcomes of each stack as one stacked bar, with a legend.
pub(crate) fn outcomes_chart(out: &mut String, inputs: &[ReportInput]) {
    let height = 30.0 + inputs.len() as f64 * ROW + 40.0;
    svg_open(out, "outcomes", height, "Outcomes per stack (share of trajectories)");
    percent_axis(out, 24.0 + inputs.len() as f64 * ROW);
    for (i, input) in inputs.iter().enumerate() {
        let y = 24.0 + i as f64 * ROW;
        let total = num(&input.summary["trajectories"]).max(1.0);
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"##,
            LEFT - 8.0,
            y + 13.0,
            label_text(&input.label, LABEL_CHARS_MAX)
        );
        let mut x = LEFT;
        for (name, fill) in OUTCOME_COLOURS {
            let count = num(&input.summary["outcomes"][name]);
            if count <= 0.0 {
                continue;
            }
            let w = count / total * (WIDTH - LEFT - RIGHT);
            let _ = write!(
                out,
                r#"<rect x="{x:.2}" y="{:.1}" width="{w:.2}" height="16" fill="{fill}"><title>{name}: {} ({})</title></rect>"#,
                y + 2.0,
                raw(&input.summary["outcomes"][name]),
                pct(count / total)
            );
            x += w;
        }
        let success = num(&input.summary["outcomes"]["success"]);
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" font-size="11">success {}</text>"#,
            WIDTH - RIGHT + 8.0,
            y + 13.0,
            pct(success / total)
        );
    }
    outcome_legend(out, height - 12.0);
    svg_close(out);
}

/// The outcomes' colours in one line at `y`.
fn outcome_legend(out: &mut String, y: f64) {
    let mut x = 10.0;
    for (name, fill) in OUTCOME_COLOURS {
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{fill}"/><text x="{:.1}" y="{y:.1}" font-size="10">{name}</text>"#,
            y - 9.0,
            x + 13.0
        );
        x += 13.0 + 6.5 * name.len() as f64 + 12.0;
    }
}
