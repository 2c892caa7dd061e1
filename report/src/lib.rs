//! The HTML report: one self-contained file (no network, no external script or
//! style) with hand-written SVG charts of one or more sweeps.
//!
//! It reads the sweeps' `summary.json` (and `surface.json`) as JSON values and
//! prints the numbers exactly as they are written there, so the report and the
//! files always agree. A few lines of inline script only check, once the page has
//! loaded, that every chart was laid out, and record that in `data-status` on the
//! body (the end-to-end test reads it from headless Chromium).

use std::fmt::Write as _;

use serde_json::Value as Json;

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

/// Disagreeing seeds listed per comparison (all of them are in compare.json).
const DISAGREEMENTS_SHOWN: usize = 15;

/// Chart width in SVG units.
const WIDTH: f64 = 760.0;
/// Left margin for labels.
const LEFT: f64 = 270.0;
/// Right margin for values.
const RIGHT: f64 = 150.0;
/// Height of one bar row.
const ROW: f64 = 26.0;

/// Colours of the stacks, in input order (cycled).
const STACK_COLOURS: [&str; 6] = ["#2563eb", "#d97706", "#059669", "#7c3aed", "#dc2626", "#0891b2"];

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

fn colour(i: usize) -> &'static str {
    STACK_COLOURS[i % STACK_COLOURS.len()]
}

/// Escapes text for HTML and SVG.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn num(v: &Json) -> f64 {
    match v {
        Json::Number(n) => n.as_f64().unwrap_or(0.0),
        Json::String(s) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// A value exactly as summary.json writes it.
fn raw(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => "n/a".to_string(),
        other => other.to_string(),
    }
}

/// Characters of a label that fit left of a chart's bars (12 px text in
/// `LEFT - 8` px); a longer label is shortened as [`fit`] says.
const LABEL_CHARS_MAX: usize = 38;

/// The characters of a label's part kept at least when it is shortened:
/// enough of each end to tell it from its neighbours.
const PART_CHARS_MIN: usize = 7;

/// `text` cut to `max` characters (at least 3) with its middle elided.
fn elide(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let max = max.max(3);
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let mut fitted: String = chars[..head].iter().collect();
    fitted.push('…');
    fitted.extend(&chars[chars.len() - tail..]);
    fitted
}

/// `label` cut to `max` characters. A label reads `SWEEP · MEASURE`, and a
/// sweep `AGENT (FOLDER)` when folders tell sweeps apart: each part keeps
/// both its ends, the longest part of the agent and the measure is shortened
/// first (the middle elided), and the folder, what tells two sweeps of one
/// agent apart, only once the others are down to [`PART_CHARS_MIN`]. One cut
/// in the middle of the whole label would hide the folder
/// (`resilient (out/res…nt)`).
fn fit(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        return label.to_string();
    }
    let (sweep, measure) = label.rsplit_once(" · ").map_or((label, None), |(s, m)| (s, Some(m)));
    let (agent, folder) =
        sweep.strip_suffix(')').and_then(|s| s.rsplit_once(" (")).map_or((sweep, None), |(a, f)| (a, Some(f)));
    // The agent, the measure, the folder: (text, length it is cut to).
    let parts = [Some(agent), measure, folder];
    let mut lengths: Vec<usize> = parts.iter().map(|p| p.map_or(0, |t| t.chars().count())).collect();
    let decoration = 3 * usize::from(measure.is_some()) + 3 * usize::from(folder.is_some());
    let mut total = decoration + lengths.iter().sum::<usize>();
    while total > max {
        // The longest of the agent and the measure above the floor, else the folder.
        let cut = [0, 1]
            .into_iter()
            .filter(|&i| lengths[i] > PART_CHARS_MIN)
            .max_by_key(|&i| (lengths[i], std::cmp::Reverse(i)))
            .or_else(|| (lengths[2] > PART_CHARS_MIN).then_some(2));
        let Some(i) = cut else { break };
        lengths[i] -= 1;
        total -= 1;
    }
    let piece = |i: usize| parts[i].map(|t| elide(t, lengths[i]));
    let mut fitted = piece(0).unwrap_or_default();
    if let Some(folder) = piece(2) {
        let _ = write!(fitted, " ({folder})");
    }
    if let Some(measure) = piece(1) {
        let _ = write!(fitted, " · {measure}");
    }
    // Parts at their floors may still be too long together.
    elide(&fitted, max)
}

/// The shortest trailing parts of each folder that tell them all apart, the
/// same number of parts for every folder (`runs/a/out` and `runs/b/out` give
/// `a/out` and `b/out`): how the report names sweeps of one agent. Folders
/// whose parts are all the same are named as given.
pub fn folder_suffixes(folders: &[&std::path::Path]) -> Vec<String> {
    use std::path::Component;
    let parts: Vec<Vec<String>> = folders
        .iter()
        .map(|f| {
            f.components()
                .filter(|c| !matches!(c, Component::CurDir))
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .collect();
    let longest = parts.iter().map(Vec::len).max().unwrap_or(0);
    let suffix = |p: &Vec<String>, k: usize| p[p.len().saturating_sub(k)..].join("/");
    for k in 1..=longest {
        let names: Vec<String> = parts.iter().map(|p| suffix(p, k)).collect();
        if names.iter().enumerate().all(|(i, n)| !names[..i].contains(n)) {
            return names;
        }
    }
    folders.iter().map(|f| f.display().to_string()).collect()
}

/// An SVG text's content: the fitted label, with the whole one as its tooltip.
fn label_text(label: &str, max: usize) -> String {
    let fitted = fit(label, max);
    if fitted == label { escape(label) } else { format!("<title>{}</title>{}", escape(label), escape(&fitted)) }
}

/// A number of summary.json for a table cell: integers as they are, other
/// numbers with six significant digits (a Wilson bound's 17 digits said no more
/// and overflowed the column), text escaped.
pub fn table_number(v: &Json) -> String {
    match v {
        Json::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(0.0);
            if x == 0.0 || !x.is_finite() {
                return format!("{x}");
            }
            if x.abs() < 1e-3 {
                return format!("{x:.4e}");
            }
            let decimals = (5 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
            let text = format!("{x:.decimals$}");
            let text =
                if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text };
            escape(&text)
        }
        other => escape(&raw(other)),
    }
}

fn pct(x: f64) -> String {
    agentsim_stats::text::percent(x)
}

/// `rate [lo, hi]` of a `{count, n, rate, lo, hi}` object, in percent.
fn rate_text(r: &Json) -> String {
    if num(&r["n"]) == 0.0 {
        return "n/a (none)".to_string();
    }
    format!("{} [{}, {}]", pct(num(&r["rate"])), pct(num(&r["lo"])), pct(num(&r["hi"])))
}

fn x_of(value: f64) -> f64 {
    LEFT + value.clamp(0.0, 1.0) * (WIDTH - LEFT - RIGHT)
}

fn svg_open(out: &mut String, id: &str, height: f64, title: &str) {
    let _ = write!(
        out,
        r#"<figure><figcaption>{}</figcaption><svg id="{id}" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{}">"#,
        escape(title),
        escape(title)
    );
}

fn svg_close(out: &mut String) {
    out.push_str("</svg></figure>\n");
}

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

fn rates_chart(out: &mut String, id: &str, title: &str, rows: &[(String, Json, &str)]) {
    let height = 30.0 + rows.len() as f64 * ROW + 20.0;
    svg_open(out, id, height, title);
    percent_axis(out, height - 20.0);
    for (i, (label, rate, fill)) in rows.iter().enumerate() {
        rate_row(out, 24.0 + i as f64 * ROW, label, rate, fill);
    }
    svg_close(out);
}

fn outcomes_chart(out: &mut String, inputs: &[ReportInput]) {
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
    // Legend.
    let y = height - 12.0;
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
    svg_close(out);
}

fn recovery_chart(out: &mut String, inputs: &[ReportInput]) {
    let mut rows = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if let Json::Object(kinds) = &input.summary["recovery_by_fault"] {
            for (kind, rate) in kinds {
                let label = if inputs.len() > 1 { format!("{} · {kind}", input.label) } else { kind.clone() };
                rows.push((label, rate.clone(), colour(i)));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    rates_chart(
        out,
        "recovery",
        "Recovery per fault kind: among runs that met the fault, the share that ended safely (95% Wilson)",
        &rows,
    );
}

fn histogram_chart(out: &mut String, id: &str, title: &str, spread: &Json, fill: &str, unit: impl Fn(f64) -> String) {
    let counts: Vec<f64> = spread["histogram"]["counts"].as_array().map_or(Vec::new(), |a| a.iter().map(num).collect());
    if counts.is_empty() {
        return;
    }
    let width = num(&spread["histogram"]["bin_width"]).max(1.0);
    // A long tail (a few runs at ten times the cost) squashed every other bar:
    // the bins past p99 are one last bar, drawn lighter and labelled as such.
    let shown_bins = ((num(&spread["p99"]) / width).floor() as usize + 1).min(counts.len());
    let tail: Option<f64> = (counts.len() > shown_bins + 1).then(|| counts[shown_bins..].iter().sum());
    let counts: Vec<f64> = match tail {
        Some(t) => counts[..shown_bins].iter().copied().chain([t]).collect(),
        None => counts,
    };
    let height = 170.0;
    let (plot_left, plot_right, top, bottom) = (60.0, WIDTH - 20.0, 20.0, height - 40.0);
    svg_open(out, id, height, title);
    let peak = counts.iter().copied().fold(1.0, f64::max);
    let bar_w = (plot_right - plot_left) / counts.len() as f64;
    for (i, c) in counts.iter().enumerate() {
        let h = c / peak * (bottom - top);
        let lo = i as f64 * width;
        let is_tail = tail.is_some() && i + 1 == counts.len();
        let what = if is_tail {
            format!("{} and more (the tail past p99, up to {})", unit(lo), unit(num(&spread["max"])))
        } else {
            format!("{} to {}", unit(lo), unit(lo + width))
        };
        let _ = write!(
            out,
            r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="{fill}" opacity="{}"><title>{what}: {c}</title></rect>"#,
            plot_left + i as f64 * bar_w + 1.0,
            bottom - h,
            (bar_w - 2.0).max(1.0),
            if is_tail { "0.35" } else { "0.8" },
        );
    }
    let span = counts.len() as f64 * width;
    let right_label = match tail {
        Some(_) => format!("{}+ (tail)", unit(span - width)),
        None => unit(span),
    };
    // Labels at alternating heights, so close percentiles stay readable.
    for (k, (name, key)) in [("p50", "p50"), ("p90", "p90"), ("p99", "p99")].into_iter().enumerate() {
        let v = num(&spread[key]);
        let label_y = if k % 2 == 0 { top - 6.0 } else { top + 8.0 };
        let x = plot_left + (v + 0.5) / span * (plot_right - plot_left);
        let near_right = x > plot_right - 90.0;
        let anchor = if near_right { "end" } else { "start" };
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="#111827" stroke-dasharray="3,2"/><text x="{:.1}" y="{label_y:.1}" font-size="10" text-anchor="{anchor}">{name} {}</text>"##,
            if near_right { x - 3.0 } else { x + 3.0 },
            unit(v)
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{plot_left}" y1="{bottom}" x2="{plot_right}" y2="{bottom}" stroke="#6b7280"/><text x="{plot_left}" y="{:.1}" font-size="10" fill="#6b7280">{}</text><text x="{plot_right}" y="{:.1}" font-size="10" fill="#6b7280" text-anchor="end">{}</text><text x="{:.1}" y="{:.1}" font-size="10" fill="#6b7280" text-anchor="middle">mean {}, max {}</text>"##,
        bottom + 14.0,
        unit(0.0),
        bottom + 14.0,
        right_label,
        (plot_left + plot_right) / 2.0,
        bottom + 30.0,
        unit(num(&spread["mean"])),
        unit(num(&spread["max"]))
    );
    svg_close(out);
}

/// One line of a line chart: its label, its points (x label, a rate object or a
/// bare number) and its colour.
type Series = (String, Vec<(String, Json)>, &'static str);

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

/// A line chart of rates with a 95% band; `points` are (x label, rate object).
fn line_chart(out: &mut String, id: &str, title: &str, series: &[Series], x_name: &str) {
    let height = 240.0;
    let (plot_left, plot_right, top, bottom) = (60.0, WIDTH - 160.0, 20.0, height - 40.0);
    svg_open(out, id, height, title);
    let (axis_lo, axis_hi) = rate_range(series);
    let ys = |v: f64| bottom - ((v - axis_lo) / (axis_hi - axis_lo)).clamp(0.0, 1.0) * (bottom - top);
    for tick in 0..=5 {
        let v = axis_lo + (axis_hi - axis_lo) * f64::from(tick) / 5.0;
        let label = if ((v * 100.0).round() - v * 100.0).abs() < 1e-9 {
            format!("{:.0}%", v * 100.0)
        } else {
            format!("{:.1}%", v * 100.0)
        };
        let _ = write!(
            out,
            r##"<line x1="{plot_left}" y1="{:.1}" x2="{plot_right}" y2="{:.1}" stroke="#e5e7eb"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#6b7280">{label}</text>"##,
            ys(v),
            ys(v),
            plot_left - 6.0,
            ys(v) + 3.0,
        );
    }
    let count = series.iter().map(|s| s.1.len()).max().unwrap_or(0);
    let xs = |i: usize| {
        if count <= 1 {
            (plot_left + plot_right) / 2.0
        } else {
            plot_left + i as f64 / (count - 1) as f64 * (plot_right - plot_left)
        }
    };
    if let Some((_, points, _)) = series.iter().max_by_key(|s| s.1.len()) {
        for (i, (label, _)) in points.iter().enumerate() {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{}</text>"##,
                xs(i),
                bottom + 14.0,
                escape(label)
            );
        }
    }
    let _ = write!(
        out,
        r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{}</text>"##,
        (plot_left + plot_right) / 2.0,
        bottom + 30.0,
        escape(x_name)
    );
    for (s, (label, points, fill)) in series.iter().enumerate() {
        let has_band = points.iter().all(|(_, r)| r.get("lo").is_some());
        if has_band {
            let upper: Vec<String> =
                points.iter().enumerate().map(|(i, (_, r))| format!("{:.1},{:.1}", xs(i), ys(num(&r["hi"])))).collect();
            let lower: Vec<String> = points
                .iter()
                .enumerate()
                .rev()
                .map(|(i, (_, r))| format!("{:.1},{:.1}", xs(i), ys(num(&r["lo"]))))
                .collect();
            let _ = write!(
                out,
                r#"<polygon points="{} {}" fill="{fill}" opacity="0.18"/>"#,
                upper.join(" "),
                lower.join(" ")
            );
        }
        let value = |r: &Json| if r.is_object() { num(&r["rate"]) } else { num(r) };
        let line: Vec<String> =
            points.iter().enumerate().map(|(i, (_, r))| format!("{:.1},{:.1}", xs(i), ys(value(r)))).collect();
        let _ = write!(out, r#"<polyline points="{}" fill="none" stroke="{fill}" stroke-width="2"/>"#, line.join(" "));
        for (i, (x_label, r)) in points.iter().enumerate() {
            let text = if r.is_object() { rate_text(r) } else { raw(r) };
            let _ = write!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{fill}"><title>{} at {}: {}</title></circle>"#,
                xs(i),
                ys(value(r)),
                escape(label),
                escape(x_label),
                escape(&text)
            );
        }
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{fill}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            plot_right + 14.0,
            top + s as f64 * 16.0,
            plot_right + 28.0,
            top + s as f64 * 16.0 + 9.0,
            label_text(label, 22)
        );
    }
    svg_close(out);
}

fn numbers_table(out: &mut String, inputs: &[ReportInput]) {
    out.push_str("<div class=\"scroll\"><table><thead><tr><th>summary.json</th>");
    for input in inputs {
        let _ = write!(out, "<th>{}</th>", escape(&input.label));
    }
    out.push_str("</tr></thead><tbody>\n");
    let rate_keys = ["completion", "recovery", "violation", "contextual_accuracy", "tool_fidelity"];
    for key in rate_keys {
        for field in ["count", "n", "rate", "lo", "hi"] {
            let _ = write!(out, "<tr><td>{key}.{field}</td>");
            for input in inputs {
                let _ = write!(out, "<td>{}</td>", table_number(&input.summary[key][field]));
            }
            out.push_str("</tr>\n");
        }
    }
    for key in ["turns", "tool_calls", "tokens", "cost_micro_usd", "virtual_ms"] {
        for field in ["mean", "p50", "p90", "p95", "p99", "max"] {
            let _ = write!(out, "<tr><td>{key}.{field}</td>");
            for input in inputs {
                let _ = write!(out, "<td>{}</td>", table_number(&input.summary[key][field]));
            }
            out.push_str("</tr>\n");
        }
    }
    for key in ["trajectories", "trials", "rejected_calls_total", "cost_usd_total", "cost_usd_per_success", "digest"] {
        let _ = write!(out, "<tr><td>{key}</td>");
        for input in inputs {
            let _ = write!(out, "<td>{}</td>", table_number(&input.summary[key]));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// The importance-sampling estimates of the sweeps that have them (`--importance`):
/// every rate seen in the sweep, with its interval, the runs that showed it and
/// whether the interval can be trusted.
fn importance_section(out: &mut String, inputs: &[ReportInput]) {
    let weighted: Vec<&ReportInput> = inputs.iter().filter(|x| x.summary["importance"].is_object()).collect();
    if weighted.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Rare failures: importance sampling</h2>\n<p class=\"meta\">Estimates of the nominal rates \
         (<code>estimator</code>: failure modes unbiased and completion their complement, or self-normalised; \
         either way the outcomes sum to 1) from runs whose faults were drawn at <code>scale</code> times their probability (or with a tilt per rule: \
         <code>tilts</code> in summary.json), each weighed back by its exact likelihood ratio; 95% intervals over seeds; <code>ess</code> is the effective sample size; \
         <code>trusted</code> is false where the diagnostics (mean weight, effective sample sizes, Pareto tail, \
         events) say the interval cannot be trusted.</p>\n",
    );
    out.push_str(
        "<table><thead><tr><th>summary.json</th><th>scale</th><th>ess</th><th>importance.rates</th>\
         <th>estimate</th><th>lo</th><th>hi</th><th>events</th><th>trusted</th></tr></thead><tbody>\n",
    );
    for input in weighted {
        let importance = &input.summary["importance"];
        let scale = match &importance["scale"] {
            Json::Null => format!("per rule ({})", raw(&importance["method"])),
            scale => raw(scale),
        };
        let rates = importance["rates"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v));
        let minefields =
            importance["minefields"].as_object().into_iter().flatten().map(|(k, v)| (format!("minefield {k}"), v));
        for (name, e) in rates.chain(minefields).filter(|(name, e)| num(&e["events"]) > 0.0 || name == "completion") {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&input.label),
                escape(&scale),
                raw(&importance["ess"]),
                escape(&name),
                raw(&e["estimate"]),
                raw(&e["lo"]),
                raw(&e["hi"]),
                raw(&e["events"]),
                raw(&e["trusted"])
            );
        }
        for warning in importance["warnings"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "<p class=\"meta\">warning: {}</p>", escape(warning.as_str().unwrap_or_default()));
        }
    }
    out.push_str("</tbody></table>\n");
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:820px;color:#111827}\
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}figure{margin:1rem 0}figcaption{font-size:.9rem;color:#374151;margin-bottom:.3rem}\
table{border-collapse:collapse;font-size:.8rem;font-variant-numeric:tabular-nums}td,th{border:1px solid #e5e7eb;padding:2px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}.meta{color:#6b7280;font-size:.85rem;overflow-wrap:anywhere}\
svg.chart{max-width:100%;height:auto}.scroll,table{overflow-x:auto;max-width:100%}table{display:block}";

/// Checks, after load, that every chart has a size: the page's own smoke test.
const SCRIPT: &str = "window.addEventListener('error',function(e){document.body.dataset.status='error: '+e.message;});\
window.addEventListener('load',function(){var c=document.querySelectorAll('svg.chart');var ok=c.length>0;\
for(var i=0;i<c.length;i++){var r=c[i].getBoundingClientRect();if(!(r.width>0&&r.height>0)){ok=false;}}\
if(document.body.dataset.status===undefined){document.body.dataset.status=ok?'ok':'empty chart';}\
document.body.dataset.charts=String(c.length);\
document.body.dataset.fits=String(document.documentElement.scrollWidth<=window.innerWidth+1);});";

/// A paired comparison (`compare.json`): the two intervals on the difference
/// around zero, the table of pairs, the test, the verdict and the worst seeds.
fn comparison_section(out: &mut String, index: usize, c: &Json) {
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} (baseline) vs {} (candidate) on {}, seeds {}..{}, fault scale {}: the same seeds, so the same world and faults.</p>",
        escape(&raw(&c["baseline"])),
        escape(&raw(&c["candidate"])),
        escape(&raw(&c["scenario"])),
        raw(&c["seed_start"]),
        raw(&c["seed_end"]),
        raw(&c["fault_scale"])
    );
    let rows = [("paired (Newcombe method 10)", &c["paired"]), ("unpaired (independent sweeps)", &c["unpaired"])];
    let reach = rows.iter().flat_map(|(_, d)| [num(&d["lo"]).abs(), num(&d["hi"]).abs()]).fold(0.01, f64::max) * 1.15;
    let height = 30.0 + rows.len() as f64 * ROW + 24.0;
    let plot = WIDTH - LEFT - RIGHT;
    let x = |d: f64| LEFT + (d / reach + 1.0) / 2.0 * plot;
    svg_open(
        out,
        &format!("compare-{index}"),
        height,
        "Difference in completion, candidate minus baseline (95% intervals)",
    );
    let axis_y = 24.0 + rows.len() as f64 * ROW;
    for tick in -4..=4 {
        let d = reach * f64::from(tick) / 4.0;
        let _ = write!(
            out,
            r##"<line x1="{:.1}" y1="18" x2="{:.1}" y2="{axis_y:.1}" stroke="{}"/>"##,
            x(d),
            x(d),
            if tick == 0 { "#111827" } else { "#e5e7eb" },
        );
        if tick % 2 == 0 {
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#6b7280">{:+.1} pp</text>"##,
                x(d),
                axis_y + 12.0,
                100.0 * d
            );
        }
    }
    for (i, (label, d)) in rows.iter().enumerate() {
        let y = 24.0 + i as f64 * ROW + 10.0;
        let (lo, est, hi) = (num(&d["lo"]), num(&d["estimate"]), num(&d["hi"]));
        let text = format!("{:+.2} pp [{:+.2}, {:+.2}]", 100.0 * est, 100.0 * lo, 100.0 * hi);
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text><line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="3"/><circle cx="{:.1}" cy="{y:.1}" r="4.5" fill="#111827"><title>{}</title></circle><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"##,
            LEFT - 8.0,
            y + 4.0,
            label_text(label, LABEL_CHARS_MAX),
            x(lo),
            x(hi),
            colour(index + i),
            x(est),
            escape(&text),
            WIDTH - RIGHT + 8.0,
            y + 4.0,
            escape(&text)
        );
    }
    svg_close(out);
    let p = &c["pairs"];
    let _ = writeln!(
        out,
        "<table><tbody><tr><td>pairs.both</td><td>{}</td></tr><tr><td>pairs.baseline_only</td><td>{}</td></tr><tr><td>pairs.candidate_only</td><td>{}</td></tr><tr><td>pairs.neither</td><td>{}</td></tr><tr><td>mcnemar_p</td><td>{}</td></tr><tr><td>verdict</td><td>{}</td></tr></tbody></table>",
        raw(&p["both"]),
        raw(&p["baseline_only"]),
        raw(&p["candidate_only"]),
        raw(&p["neither"]),
        raw(&c["mcnemar_p"]),
        escape(&raw(&c["verdict"]))
    );
    if let Some(list) = c["disagreements"].as_array().filter(|l| !l.is_empty()) {
        let _ = writeln!(
            out,
            "<p class=\"meta\">Seeds where they disagree ({}), worst first: the candidate's failures by severity, then its improvements.</p><table><thead><tr><th>seed</th><th>baseline</th><th>candidate</th></tr></thead><tbody>",
            list.len()
        );
        for d in list.iter().take(DISAGREEMENTS_SHOWN) {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                raw(&d["seed"]),
                escape(&raw(&d["baseline"])),
                escape(&raw(&d["candidate"]))
            );
        }
        out.push_str("</tbody></table>\n");
    }
}

/// The whole report: sweeps (with their surfaces) and paired comparisons
/// (`compare.json` from `agentsim compare --out`).
pub fn render(inputs: &[ReportInput], comparisons: &[Json]) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = writeln!(out, "<title>agentsim reliability report</title><style>{STYLE}</style></head><body>");
    out.push_str("<h1>agentsim reliability report</h1>\n");
    for input in inputs {
        let s = &input.summary;
        let _ = writeln!(
            out,
            "<p class=\"meta\"><b>{}</b>: scenario {}, agent {}, seeds {}..{}, {} trajectories, {} per seed, fault scale {}, digest <code>{}</code></p>",
            escape(&input.label),
            escape(&raw(&s["scenario"])),
            escape(&raw(&s["agent"])),
            raw(&s["seed_start"]),
            raw(&s["seed_end"]),
            raw(&s["trajectories"]),
            agentsim_stats::text::counted(s["trials"].as_u64().unwrap_or(1), "trial", "trials"),
            raw(&s["fault_scale"]),
            escape(&raw(&s["digest"]))
        );
    }

    if !comparisons.is_empty() {
        out.push_str("<h2>Paired comparison</h2>\n");
        for (i, c) in comparisons.iter().enumerate() {
            comparison_section(&mut out, i, c);
        }
    }
    if inputs.is_empty() {
        let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
        return out;
    }

    out.push_str("<h2>Task completion</h2>\n");
    let rows: Vec<_> =
        inputs.iter().enumerate().map(|(i, x)| (x.label.clone(), x.summary["completion"].clone(), colour(i))).collect();
    rates_chart(&mut out, "completion", "Completion per stack, with 95% Wilson intervals", &rows);
    outcomes_chart(&mut out, inputs);

    out.push_str("<h2>The four dimensions</h2>\n");
    let mut rows = Vec::new();
    for (i, x) in inputs.iter().enumerate() {
        for (key, name) in [
            ("completion", "completion"),
            ("recovery", "recovery"),
            ("contextual_accuracy", "contextual accuracy"),
            ("tool_fidelity", "tool fidelity"),
        ] {
            let label = if inputs.len() > 1 { format!("{} · {name}", x.label) } else { name.to_string() };
            rows.push((label, x.summary[key].clone(), colour(i)));
        }
    }
    rates_chart(&mut out, "dimensions", "Completion, recovery, contextual accuracy, tool fidelity (95% Wilson)", &rows);
    recovery_chart(&mut out, inputs);

    out.push_str("<h2>Distributions</h2>\n");
    for (i, x) in inputs.iter().enumerate() {
        histogram_chart(
            &mut out,
            &format!("turns-{i}"),
            &format!("{}: planner turns per trajectory", x.label),
            &x.summary["turns"],
            colour(i),
            |v| if v.fract() == 0.0 { format!("{v}") } else { format!("{v:.2}") },
        );
        histogram_chart(
            &mut out,
            &format!("cost-{i}"),
            &format!("{}: model cost per trajectory", x.label),
            &x.summary["cost_micro_usd"],
            colour(i),
            |v| format!("${:.4}", v / 1e6),
        );
    }

    let surfaces: Vec<Series> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, x)| {
            let points = x.surface.as_ref()?["points"].as_array()?;
            let points = points.iter().map(|p| (raw(&p["fault_scale"]), p["completion"].clone())).collect();
            Some((x.label.clone(), points, colour(i)))
        })
        .collect();
    if !surfaces.is_empty() {
        out.push_str("<h2>Reliability surface</h2>\n");
        line_chart(
            &mut out,
            "surface",
            "Completion as every fault probability is multiplied (95% Wilson band)",
            &surfaces,
            "fault scale",
        );
        out.push_str("<table><thead><tr><th>surface.json</th><th>fault scale</th><th>completion.rate</th><th>completion.lo</th><th>completion.hi</th></tr></thead><tbody>\n");
        for (label, points, _) in &surfaces {
            for (scale, r) in points {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(label),
                    escape(scale),
                    raw(&r["rate"]),
                    raw(&r["lo"]),
                    raw(&r["hi"])
                );
            }
        }
        out.push_str("</tbody></table>\n");
    }

    let pass_k: Vec<Series> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, x)| {
            let values = x.summary["pass_k"]["values"].as_object()?;
            let points = values.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>();
            Some((x.label.clone(), points, colour(i)))
        })
        .collect();
    if !pass_k.is_empty() {
        out.push_str("<h2>Consistency: pass^k</h2>\n");
        line_chart(
            &mut out,
            "pass-k",
            "pass^k: the chance of solving a task in all of k attempts (tau-bench)",
            &pass_k,
            "k",
        );
        out.push_str("<table><thead><tr><th>summary.json</th><th>k</th><th>pass_k.values</th></tr></thead><tbody>\n");
        for (label, points, _) in &pass_k {
            for (k, v) in points {
                let _ = writeln!(out, "<tr><td>{}</td><td>{k}</td><td>{}</td></tr>", escape(label), raw(v));
            }
        }
        out.push_str("</tbody></table>\n");
    }

    importance_section(&mut out, inputs);
    out.push_str("<h2>Numbers</h2>\n<p class=\"meta\">Exactly as written in each summary.json.</p>\n");
    numbers_table(&mut out, inputs);
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_keep_their_start_and_end() {
        let label = "resilient (out/resilient) · commit_then_timeout";
        let fitted = fit(label, LABEL_CHARS_MAX);
        assert_eq!(fitted.chars().count(), LABEL_CHARS_MAX);
        assert_eq!(fitted, "resilient (out/resilient) · comm…meout");
        assert_eq!(fit("naive", LABEL_CHARS_MAX), "naive");
        assert!(label_text(label, LABEL_CHARS_MAX).starts_with("<title>resilient (out/resilient)"));
        assert_eq!(fit("a-long-agent-name-without-any-parts-at-all", 20).chars().count(), 20);
    }

    /// Two sweeps of one agent in folders that differ in the middle keep
    /// their folders whole: the cut falls in the agent and the measure.
    #[test]
    fn labels_of_two_sweeps_of_one_agent_stay_apart() {
        let kind = " · commit_then_timeout";
        let agent = "resilient+breaker+budget";
        let a = fit(&format!("{agent} (out/resilient_a){kind}"), LABEL_CHARS_MAX);
        let b = fit(&format!("{agent} (out/resilient_b){kind}"), LABEL_CHARS_MAX);
        assert_ne!(a, b);
        assert!(a.contains("(out/resilient_a)") && b.contains("(out/resilient_b)"), "{a} / {b}");
        assert!(a.starts_with("res") && a.contains(" · comm") && a.ends_with("out"), "{a}");
        assert_eq!(a.chars().count(), LABEL_CHARS_MAX, "{a}");
        let long = fit(&format!("{agent} (some/very/long/folder/name/that/is/longer/than/all){kind}"), LABEL_CHARS_MAX);
        assert_eq!(long.chars().count(), LABEL_CHARS_MAX, "{long}");
    }

    #[test]
    fn folders_are_told_apart_by_their_shortest_distinct_suffix() {
        use std::path::Path;
        let names = |dirs: &[&str]| folder_suffixes(&dirs.iter().map(Path::new).collect::<Vec<_>>());
        assert_eq!(names(&["runs/a/out", "runs/b/out"]), ["a/out", "b/out"]);
        assert_eq!(names(&["out/resilient_a", "out/resilient_b/", "./naive"]), ["resilient_a", "resilient_b", "naive"]);
        assert_eq!(names(&["out", "x/out"]), ["out", "x/out"]);
        assert_eq!(names(&["a/x/y", "b/x/y", "c"]), ["a/x/y", "b/x/y", "c"], "the same number of parts for all");
    }

    #[test]
    fn table_numbers_have_six_significant_digits() {
        assert_eq!(table_number(&serde_json::json!(0.9869718317581478)), "0.986972");
        assert_eq!(table_number(&serde_json::json!(1234)), "1234");
        assert_eq!(table_number(&serde_json::json!(0.5)), "0.5");
        assert_eq!(table_number(&serde_json::json!(38613.25)), "38613.2");
        assert_eq!(table_number(&serde_json::json!(0.0)), "0");
        assert_eq!(table_number(&serde_json::json!(0.00035313639455927456)), "3.5314e-4");
        assert_eq!(table_number(&serde_json::json!("a<b")), "a&lt;b");
    }

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
