//! Line charts: of rates over a setting (the fault scale, k of pass^k), one
//! line per sweep with its 95% band, the vertical axis zoomed to the tenths
//! the points hold; and of values over virtual time (latency, sessions in
//! flight), the vertical axis from 0, a line broken where a point has no value.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::{WIDTH, svg_close, svg_open};
use crate::labels::label_text;
use crate::text::{escape, num, rate_text, raw};

/// One line of a line chart: its label, its points (x label, a rate object or a
/// bare number) and its colour.
pub(crate) type Series = (String, Vec<(String, Json)>, &'static str);

/// One line over virtual time: its label, its points (minutes, the value or
/// `None` where there is none: a gap in the line) and its colour.
pub(crate) type TimeSeries = (String, Vec<(f64, Option<f64>)>, &'static str);

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

/// Where a line chart draws: the plot's edges, the values its vertical axis
/// spans and the values along its horizontal one.
struct Plot {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    axis_lo: f64,
    axis_hi: f64,
    /// The horizontal axis' last value (its first is 0).
    x_hi: f64,
}

impl Plot {
    /// A plot whose vertical axis spans `axis_lo..axis_hi` and horizontal one `0..=x_hi`.
    fn new(axis_lo: f64, axis_hi: f64, x_hi: f64) -> Plot {
        assert!(axis_hi > axis_lo, "an axis of no extent");
        Plot { left: 60.0, right: WIDTH - 160.0, top: 20.0, bottom: HEIGHT - 40.0, axis_lo, axis_hi, x_hi }
    }

    /// The plot of rate series: their zoomed range, one place per point.
    fn of_rates(series: &[Series]) -> Plot {
        let (axis_lo, axis_hi) = rate_range(series);
        let count = series.iter().map(|s| s.1.len()).max().unwrap_or(0);
        Plot::new(axis_lo, axis_hi, count.saturating_sub(1) as f64)
    }

    /// The x of a value along the horizontal axis (a single place in the middle).
    fn x(&self, v: f64) -> f64 {
        if self.x_hi <= 0.0 {
            (self.left + self.right) / 2.0
        } else {
            self.left + (v / self.x_hi).clamp(0.0, 1.0) * (self.right - self.left)
        }
    }

    /// The y of a value, clamped to the axis.
    fn y(&self, v: f64) -> f64 {
        self.bottom - ((v - self.axis_lo) / (self.axis_hi - self.axis_lo)).clamp(0.0, 1.0) * (self.bottom - self.top)
    }
}

/// A line chart of rates with a 95% band; `points` are (x label, rate object).
pub(crate) fn line_chart(out: &mut String, id: &str, title: &str, series: &[Series], x_name: &str) {
    let plot = Plot::of_rates(series);
    svg_open(out, id, HEIGHT, title);
    y_axis(out, &plot, &percent_label);
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

/// A rate as an axis label: a percentage, with one decimal where the zoomed
/// axis needs it.
fn percent_label(v: f64) -> String {
    if ((v * 100.0).round() - v * 100.0).abs() < 1e-9 {
        format!("{:.0}%", v * 100.0)
    } else {
        format!("{:.1}%", v * 100.0)
    }
}

/// Six horizontal grid lines with their values, written by `label`.
fn y_axis(out: &mut String, plot: &Plot, label: &dyn Fn(f64) -> String) {
    for tick in 0..=5 {
        let v = plot.axis_lo + (plot.axis_hi - plot.axis_lo) * f64::from(tick) / 5.0;
        let _ = write!(
            out,
            r##"<line x1="{}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="#e5e7eb"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#6b7280">{}</text>"##,
            plot.left,
            plot.y(v),
            plot.right,
            plot.y(v),
            plot.left - 6.0,
            plot.y(v) + 3.0,
            escape(&label(v)),
        );
    }
}

/// The points' labels (those of the longest series) and the axis' name.
fn x_axis(out: &mut String, plot: &Plot, series: &[Series], x_name: &str) {
    if let Some((_, points, _)) = series.iter().max_by_key(|s| s.1.len()) {
        for (i, (label, _)) in points.iter().enumerate() {
            x_tick(out, plot, i as f64, label);
        }
    }
    x_name_label(out, plot, x_name);
}

/// A label under the horizontal axis at `v`.
fn x_tick(out: &mut String, plot: &Plot, v: f64, label: &str) {
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{}</text>"##,
        plot.x(v),
        plot.bottom + 14.0,
        escape(label)
    );
}

/// The horizontal axis' name, under its labels.
fn x_name_label(out: &mut String, plot: &Plot, x_name: &str) {
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
    let upper: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, (_, r))| format!("{:.1},{:.1}", plot.x(i as f64), plot.y(num(&r["hi"]))))
        .collect();
    let lower: Vec<String> = points
        .iter()
        .enumerate()
        .rev()
        .map(|(i, (_, r))| format!("{:.1},{:.1}", plot.x(i as f64), plot.y(num(&r["lo"]))))
        .collect();
    let _ = write!(out, r#"<polygon points="{} {}" fill="{fill}" opacity="0.18"/>"#, upper.join(" "), lower.join(" "));
}

/// A series' line and its points, each with its value as a tooltip.
fn line(out: &mut String, plot: &Plot, label: &str, points: &[(String, Json)], fill: &str) {
    let value = |r: &Json| if r.is_object() { num(&r["rate"]) } else { num(r) };
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, (_, r))| format!("{:.1},{:.1}", plot.x(i as f64), plot.y(value(r))))
        .collect();
    let _ = write!(out, r#"<polyline points="{}" fill="none" stroke="{fill}" stroke-width="2"/>"#, line.join(" "));
    for (i, (x_label, r)) in points.iter().enumerate() {
        let text = if r.is_object() { rate_text(r) } else { raw(r) };
        let _ = write!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{fill}"><title>{} at {}: {}</title></circle>"#,
            plot.x(i as f64),
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

/// A line chart of values over virtual time: one line per series, the vertical
/// axis from 0 to a round value above the largest, its labels written by
/// `unit`, the horizontal axis in minutes.
pub(crate) fn time_chart(
    out: &mut String,
    id: &str,
    title: &str,
    series: &[TimeSeries],
    x_name: &str,
    unit: &dyn Fn(f64) -> String,
) {
    let values = series.iter().flat_map(|s| s.1.iter().filter_map(|p| p.1));
    let axis_hi = round_up(values.fold(0.0, f64::max));
    let x_hi = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(0.0, f64::max);
    let plot = Plot::new(0.0, axis_hi, x_hi);
    svg_open(out, id, HEIGHT, title);
    y_axis(out, &plot, unit);
    let step = minutes_step(x_hi);
    let mut minute = 0.0;
    while minute <= x_hi {
        x_tick(out, &plot, minute, &format!("{minute}"));
        minute += step;
    }
    x_name_label(out, &plot, x_name);
    for (s, (label, points, stroke)) in series.iter().enumerate() {
        time_line(out, &plot, label, points, stroke, unit);
        legend_entry(out, &plot, s, label, stroke);
    }
    svg_close(out);
}

/// The smallest of 1, 2 and 5 times a power of ten, five of which reach `v`
/// (1 when `v` is 0): the top of a value axis with round labels.
fn round_up(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let step = v / 5.0;
    let power = 10f64.powf(step.log10().floor());
    let nice = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * power).find(|m| *m >= step).unwrap_or(10.0 * power);
    nice * 5.0
}

/// Minutes between labels of a time axis reaching `x_hi`: a round step with
/// at most 12 labels.
fn minutes_step(x_hi: f64) -> f64 {
    let steps = [1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1_440.0];
    let mut step = steps.into_iter().find(|s| x_hi / s <= 11.0).unwrap_or(1_440.0);
    while x_hi / step > 11.0 {
        step *= 2.0;
    }
    step
}

/// A series over time: a line through each run of points with a value (a
/// point without one breaks it), and each point with its value as a tooltip.
fn time_line(
    out: &mut String,
    plot: &Plot,
    label: &str,
    points: &[(f64, Option<f64>)],
    stroke: &str,
    unit: &dyn Fn(f64) -> String,
) {
    for run in points.split(|p| p.1.is_none()).filter(|run| !run.is_empty()) {
        let line: Vec<String> =
            run.iter().map(|(x, v)| format!("{:.1},{:.1}", plot.x(*x), plot.y(v.unwrap_or(0.0)))).collect();
        let _ =
            write!(out, r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="2"/>"#, line.join(" "));
    }
    for (x, v) in points {
        let Some(v) = v else { continue };
        let _ = write!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{stroke}"><title>{} at minute {x}: {}</title></circle>"#,
            plot.x(*x),
            plot.y(*v),
            escape(label),
            escape(&unit(*v))
        );
    }
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

    #[test]
    fn a_value_axis_ends_at_a_round_value_and_time_labels_are_few() {
        assert_eq!(round_up(0.0), 1.0);
        assert_eq!(round_up(3.7), 5.0);
        assert_eq!(round_up(212_991.0), 250_000.0);
        assert_eq!(round_up(50.0), 50.0);
        assert_eq!(minutes_step(4.0), 1.0);
        assert_eq!(minutes_step(64.0), 10.0);
        assert_eq!(minutes_step(119.0 * 8.0), 120.0);
    }

    #[test]
    fn a_point_without_a_value_breaks_the_line() {
        let series: Vec<TimeSeries> =
            vec![("mean".into(), vec![(0.0, Some(1.0)), (1.0, Some(2.0)), (2.0, None), (3.0, Some(1.0))], "#000")];
        let mut out = String::new();
        time_chart(&mut out, "t", "title", &series, "minutes", &|v| format!("{v}"));
        assert_eq!(out.matches("<polyline").count(), 2);
        assert_eq!(out.matches("<circle").count(), 3);
    }
}
