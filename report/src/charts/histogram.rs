//! The histogram of a spread (turns, cost): bins up to p99 and the tail past
//! it as one bar, with the percentiles marked.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::{WIDTH, svg_close, svg_open};
use crate::text::num;

/// The height of a histogram.
const HEIGHT: f64 = 170.0;
/// The plot's left edge.
const PLOT_LEFT: f64 = 60.0;
/// The plot's right edge.
const PLOT_RIGHT: f64 = WIDTH - 20.0;
/// The plot's top: the percentiles' labels are around it.
const TOP: f64 = 20.0;
/// The bars' baseline: the axis' labels are below it.
const BOTTOM: f64 = HEIGHT - 40.0;

/// The bars a histogram draws: the bins up to p99, then the tail past it as
/// one last bar when there is more than one bin past it.
struct Bars {
    counts: Vec<f64>,
    /// The width of a bin, in the spread's unit.
    width: f64,
    /// Whether the last bar is the tail.
    tail: bool,
}

impl Bars {
    /// The bars of `spread`'s histogram, `None` when it has no bins. A long tail
    /// (a few runs at ten times the cost) squashed every other bar: the bins
    /// past p99 are one last bar, drawn lighter and labelled as such.
    fn of(spread: &Json) -> Option<Bars> {
        let counts: Vec<f64> =
            spread["histogram"]["counts"].as_array().map_or(Vec::new(), |a| a.iter().map(num).collect());
        if counts.is_empty() {
            return None;
        }
        let width = num(&spread["histogram"]["bin_width"]).max(1.0);
        let shown_bins = ((num(&spread["p99"]) / width).floor() as usize + 1).min(counts.len());
        let tail: Option<f64> = (counts.len() > shown_bins + 1).then(|| counts[shown_bins..].iter().sum());
        let counts: Vec<f64> = match tail {
            Some(t) => counts[..shown_bins].iter().copied().chain([t]).collect(),
            None => counts,
        };
        Some(Bars { counts, width, tail: tail.is_some() })
    }

    /// The values the bars span, in the spread's unit.
    fn span(&self) -> f64 {
        self.counts.len() as f64 * self.width
    }
}

/// A histogram of `spread` (summary.json's `{histogram, p50, p90, p99, mean,
/// max}`), its values written by `unit`; nothing when it has no bins.
pub(crate) fn histogram_chart(
    out: &mut String,
    id: &str,
    title: &str,
    spread: &Json,
    fill: &str,
    unit: impl Fn(f64) -> String,
) {
    let Some(bars) = Bars::of(spread) else { return };
    svg_open(out, id, HEIGHT, title);
    draw_bars(out, &bars, spread, fill, &unit);
    percentile_marks(out, bars.span(), spread, &unit);
    value_axis(out, &bars, spread, &unit);
    svg_close(out);
}

/// The bars, each with its bin and count as a tooltip.
fn draw_bars(out: &mut String, bars: &Bars, spread: &Json, fill: &str, unit: &impl Fn(f64) -> String) {
    let counts = &bars.counts;
    let width = bars.width;
    let peak = counts.iter().copied().fold(1.0, f64::max);
    let bar_w = (PLOT_RIGHT - PLOT_LEFT) / counts.len() as f64;
    for (i, c) in counts.iter().enumerate() {
        let h = c / peak * (BOTTOM - TOP);
        let lo = i as f64 * width;
        let is_tail = bars.tail && i + 1 == counts.len();
        let what = if is_tail {
            format!("{} and more (the tail past p99, up to {})", unit(lo), unit(num(&spread["max"])))
        } else {
            format!("{} to {}", unit(lo), unit(lo + width))
        };
        let _ = write!(
            out,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="{fill}" opacity="{}"><title>{what}: {c}</title></rect>"#,
            PLOT_LEFT + i as f64 * bar_w + 1.0,
            BOTTOM - h,
            (bar_w - 2.0).max(1.0),
            if is_tail { "0.35" } else { "0.8" },
        );
    }
}

/// Dashed lines at p50, p90 and p99 over bars spanning `span`, labelled at
/// alternating heights so close percentiles stay readable.
fn percentile_marks(out: &mut String, span: f64, spread: &Json, unit: &impl Fn(f64) -> String) {
    for (k, (name, key)) in [("p50", "p50"), ("p90", "p90"), ("p99", "p99")].into_iter().enumerate() {
        let v = num(&spread[key]);
        let label_y = if k % 2 == 0 { TOP - 6.0 } else { TOP + 8.0 };
        let x = PLOT_LEFT + (v + 0.5) / span * (PLOT_RIGHT - PLOT_LEFT);
        let near_right = x > PLOT_RIGHT - 90.0;
        let anchor = if near_right { "end" } else { "start" };
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{BOTTOM}" stroke="#111827" stroke-dasharray="3,2"/><text x="{:.1}" y="{label_y:.1}" font-size="10" text-anchor="{anchor}">{name} {}</text>"##,
            if near_right { x - 3.0 } else { x + 3.0 },
            unit(v)
        );
    }
}

/// The baseline, the values at its ends (the tail's start when there is one),
/// and the mean and maximum below it.
fn value_axis(out: &mut String, bars: &Bars, spread: &Json, unit: &impl Fn(f64) -> String) {
    let span = bars.span();
    let right_label = if bars.tail { format!("{}+ (tail)", unit(span - bars.width)) } else { unit(span) };
    let _ = write!(
        out,
        r##"<line x1="{PLOT_LEFT}" y1="{BOTTOM}" x2="{PLOT_RIGHT}" y2="{BOTTOM}" stroke="#6b7280"/><text x="{PLOT_LEFT}" y="{:.1}" font-size="10" fill="#6b7280">{}</text><text x="{PLOT_RIGHT}" y="{:.1}" font-size="10" fill="#6b7280" text-anchor="end">{}</text><text x="{:.1}" y="{:.1}" font-size="10" fill="#6b7280" text-anchor="middle">mean {}, max {}</text>"##,
        BOTTOM + 14.0,
        unit(0.0),
        BOTTOM + 14.0,
        right_label,
        (PLOT_LEFT + PLOT_RIGHT) / 2.0,
        BOTTOM + 30.0,
        unit(num(&spread["mean"])),
        unit(num(&spread["max"]))
    );
}
