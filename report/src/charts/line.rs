//! Line charts of rates over a setting (the fault scale, k of pass^k): one
//! line per sweep with its 95% band, the vertical axis zoomed to the tenths
//! the points hold.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::{WIDTH, svg_close, svg_open};
use crate::labels::label_text;
use crate::text::{escape, num, rate_text, raw};

/// One line of a line chart: its label, its points (x label, a rate object or a
/// bare number) and its colour.
pub(crate) type Series = (String, Vec<(String, Json)>, &'static str);

/// The height of a line chart.
const HEIGHT: f64 = 240.0;

/// Characters of a legend label (right of the plot).
const LEGEND_CHARS_MAX: usize = 22;

/// The vertical range of a rate chart: the tenths that hold every point and
/// every band (at least a tenth wide), so a surface between 92% and 99% is not
/// a flat line under a 0-100% axis. The axis labels say where it starts.
fn rate_range(series: &[Series]) -> (f64, f64) {
    let (mut lo, mut hi) = (1.0_f64, 0.0_f64);
    for (_, points, _) in series {
        for (_, r) in points {
            let (a, b) = if r.is_object() {
                let rate = num(&r["rate"]);
                (r.get("lo").map_or(rate, num), r.get("hi").map_or(rate, num))
            } else {
                (num(r), num(r))
            };
            (lo, hi) = (lo.min(a), hi.max(b));
        }
    }
    if lo > hi {
        return (0.0, 1.0);
    }
    let (mut lo, mut hi) = (((lo * 10.0).floor() / 10.0).max(0.0), ((hi * 10.0).ceil() / 10.0).min(1.0));
    if hi - lo < 0.1 {
        if hi >= 1.0 { lo = hi - 0.1 } else { hi = lo + 0.1 }
    }
    (lo, hi)
}

/// Where a line chart draws: the plot's edges, the rates its axis spans and
/// the number of points along it.
struct Plot {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    axis_lo: f64,
    axis_hi: f64,
    /// The points of the longest series.
    count: usize,
}

impl Plot {
    fn new(series: &[Series]) -> Plot {
        let (axis_lo, axis_hi) = rate_range(series);
        Plot {
            left: 60.0,
            right: WIDTH - 160.0,
            top: 20.0,
            bottom: HEIGHT - 40.0,
            axis_lo,
            axis_hi,
            count: series.iter().map(|s| s.1.len()).max().unwrap_or(0),
        }
    }

    /// The x of the `i`-th point (a single point in the middle).
    fn x(&self, i: usize) -> f64 {
        if self.count <= 1 {
            (self.left + self.right) / 2.0
        } else {
            self.left + i as f64 / (self.count - 1) as f64 * (self.right - self.left)
        }
    }

    /// The y of a rate, clamped to the axis.
    fn y(&self, v: f64) -> f64 {
        self.bottom - ((v - self.axis_lo) / (self.axis_hi - self.axis_lo)).clamp(0.0, 1.0) * (self.bottom - self.top)
    }
}

/// A line chart of rates with a 95% band; `points` are (x label, rate object).
pub(crate) fn line_chart(out: &mut String, id: &str, title: &str, series: &[Series], x_name: &str) {
    let plot = Plot::new(series);
    svg_open(out, id, HEIGHT, title);
    rate_axis(out, &plot);
    x_axis(out, &plot, series, x_name);
    for (s, (label, points, fill)) in series.iter().enumerate() {
        if points.iter().all(|(_, r)| r.get("lo").is_some()) {
            band(out, &plot, points, fill);
        }
        line(out, &plot, label, points, fill);
        legend_entry(out, &plot, s, label, fill);
    }
    svg_close(out);
}

/// Six horizontal grid lines with their percentages (one decimal where the
/// zoomed axis needs it).
fn rate_axis(out: &mut String, plot: &Plot) {
    for tick in 0..=5 {
        let v = plot.axis_lo + (plot.axis_hi - plot.axis_lo) * f64::from(tick) / 5.0;
        let label = if ((v * 100.0).round() - v * 100.0).abs() < 1e-9 {
            format!("{:.0}%", v * 100.0)
        } else {
            format!("{:.1}%", v * 100.0)
        };
        let _ = write!(
            out,
            r##"<line x1="{}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="#e5e7eb"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#6b7280">{label}</text>"##,
            plot.left,
            plot.y(v),
            plot.right,
            plot.y(v),
            plot.left - 6.0,
            plot.y(v) + 3.0,
        );
    }
}

/// The points' labels (those of the longest series) and the axis' name.
fn x_axis(out: &mut String, plot: &Plot, series: &[Series], x_name: &str) {
    if let Some((_, points, _)) = series.iter().max_by_key(|s| s.1.len()) {
        for (i, (label, _)) in points.iter().enumerate() {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{}</text>"##,
                plot.x(i),
                plot.bottom + 14.0,
                escape(label)
            );
        }
    }
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{}</text>"##,
        (plot.left + plot.right) / 2.0,
        plot.bottom + 30.0,
        escape(x_name)
    );
}

/// A series' 95% band: along its upper bounds and back along its lower ones.
fn band(out: &mut String, plot: &Plot, points: &[(String, Json)], fill: &str) {
    let upper: Vec<String> =
        points.iter().enumerate().map(|(i, (_, r))| format!("{:.1},{:.1}", plot.x(i), plot.y(num(&r["hi"])))).collect();
    let lower: Vec<String> = points
        .iter()
        .enumerate()
        .rev()
        .map(|(i, (_, r))| format!("{:.1},{:.1}", plot.x(i), plot.y(num(&r["lo"]))))
        .collect();
    let _ = write!(out, r#"<polygon points="{} {}" fill="{fill}" opacity="0.18"/>"#, upper.join(" "), lower.join(" "));
}

/// A series' line and its points, each with its value as a tooltip.
fn line(out: &mut String, plot: &Plot, label: &str, points: &[(String, Json)], fill: &str) {
    let value = |r: &Json| if r.is_object() { num(&r["rate"]) } else { num(r) };
    let line: Vec<String> =
        points.iter().enumerate().map(|(i, (_, r))| format!("{:.1},{:.1}", plot.x(i), plot.y(value(r)))).collect();
    let _ = write!(out, r#"<polyline points="{}" fill="none" stroke="{fill}" stroke-width="2"/>"#, line.join(" "));
    for (i, (x_label, r)) in points.iter().enumerate() {
        let text = if r.is_object() { rate_text(r) } else { raw(r) };
        let _ = write!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{fill}"><title>{} at {}: {}</title></circle>"#,
            plot.x(i),
            plot.y(value(r)),
            escape(label),
            escape(x_label),
            escape(&text)
        );
    }
}

/// The `s`-th series' line of the legend, right of the plot.
fn legend_entry(out: &mut String, plot: &Plot, s: usize, label: &str, fill: &str) {
    let _ = write!(
        out,
        r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{fill}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
        plot.right + 14.0,
        plot.top + s as f64 * 16.0,
        plot.right + 28.0,
        plot.top + s as f64 * 16.0 + 9.0,
        label_text(label, LEGEND_CHARS_MAX)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_chart_zooms_to_the_tenths_its_points_hold() {
        let point = |rate: f64, lo: f64, hi: f64| serde_json::json!({ "rate": rate, "lo": lo, "hi": hi });
        let series: Vec<Series> = vec![(
            "resilient".into(),
            vec![("1".into(), point(0.994, 0.987, 0.997)), ("4".into(), point(0.924, 0.906, 0.939))],
            "#000",
        )];
        assert_eq!(rate_range(&series), (0.9, 1.0));
        let flat: Vec<Series> = vec![("a".into(), vec![("1".into(), serde_json::json!(0.0))], "#000")];
        assert_eq!(rate_range(&flat), (0.0, 0.1));
    }
}
