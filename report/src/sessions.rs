//! The section on sweeps of many sessions in one world ("Sessions under
//! load"): task latency and sessions in flight over virtual time, the share of
//! sessions that completed and that another session hurt, and the series'
//! numbers as `summary.json` writes them.

use std::fmt::Write as _;

use serde_json::Value as Json;

use crate::ReportInput;
use crate::charts::{TimeSeries, colour, rates_chart, time_chart};
use crate::text::{escape, num, raw, table_number};

/// The axis name of the charts over time.
const TIME_AXIS: &str = "virtual time at arrival (minutes from the start of a run)";

/// The section, for the sweeps whose summary has `sessions` (nothing when none has).
pub(crate) fn sessions_section(out: &mut String, inputs: &[ReportInput]) {
    let with_sessions: Vec<(usize, &ReportInput)> =
        inputs.iter().enumerate().filter(|(_, x)| x.summary["sessions"].is_object()).collect();
    if with_sessions.is_empty() {
        return;
    }
    out.push_str("<h2>Sessions under load</h2>\n");
    out.push_str(
        "<p class=\"meta\">Many sessions in one world: each session is put in the bucket of virtual time \
         it arrived in, over every run of the sweep (<code>sessions.over_time</code>). Latency is from a \
         session's arrival to its end; p99 is over all runs' sessions of the bucket, to within an eighth of its \
         value. Sessions in flight are those arrived and not yet ended at the bucket's start, the mean over \
         runs. The rates' 95% intervals are by seed (the sessions of one run share its world).</p>\n",
    );
    let over_time: Vec<(usize, &ReportInput, &Json)> = with_sessions
        .iter()
        .filter_map(|(i, x)| {
            let series = &x.summary["sessions"]["over_time"];
            series["buckets"].is_array().then_some((*i, *x, series))
        })
        .collect();
    if !over_time.is_empty() {
        latency_chart(out, &over_time);
        in_flight_chart(out, &over_time);
    }
    let mut rows = Vec::new();
    for (i, x) in &with_sessions {
        for (key, name) in [("completion", "sessions completed"), ("hurt_by_another", "hurt by another")] {
            rows.push((format!("{} · {name}", x.label), x.summary["sessions"][key].clone(), colour(*i)));
        }
    }
    rates_chart(
        out,
        "sessions-rates",
        "Sessions completed and hurt by another session (a race), with 95% intervals by seed",
        &rows,
    );
    outside_the_rates(out, &with_sessions);
    if !over_time.is_empty() {
        series_table(out, &over_time);
    }
}

/// The sessions counted apart from the agents' (an MCP client that never
/// came, a session past the horizon), for the sweeps that have any: the rates
/// above leave them out, and the report says so rather than hide them.
fn outside_the_rates(out: &mut String, with_sessions: &[(usize, &ReportInput)]) {
    for (_, x) in with_sessions {
        let sessions = &x.summary["sessions"];
        let (absent, not_started) =
            (sessions["absent"].as_u64().unwrap_or(0), sessions["not_started"].as_u64().unwrap_or(0));
        if absent + not_started == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "<p class=\"meta\">{}: outside the rates, {absent} sessions absent (no agent came) and {not_started} \
             not started (past the horizon), besides the {} sessions of the agents'.</p>",
            escape(&x.label),
            raw(&sessions["sessions"]),
        );
    }
}

/// The buckets of a sweep's series: (start minute, bucket).
fn buckets(series: &Json) -> impl Iterator<Item = (f64, &Json)> {
    series["buckets"].as_array().into_iter().flatten().map(|b| (num(&b["start_minute"]), b))
}

/// A bucket's value of `key`, `None` where it is null (no session arrived).
fn value(bucket: &Json, key: &str) -> Option<f64> {
    (!bucket[key].is_null()).then(|| num(&bucket[key]))
}

/// Mean and p99 task latency over time, two lines per sweep.
fn latency_chart(out: &mut String, over_time: &[(usize, &ReportInput, &Json)]) {
    let mut lines: Vec<TimeSeries> = Vec::new();
    for (k, (_, x, series)) in over_time.iter().enumerate() {
        for (j, (key, name)) in [("latency_mean_ms", "mean"), ("latency_p99_ms", "p99")].into_iter().enumerate() {
            let points = buckets(series).map(|(minute, b)| (minute, value(b, key))).collect();
            let label = if over_time.len() > 1 { format!("{} · {name}", x.label) } else { name.to_string() };
            lines.push((label, points, colour(2 * k + j)));
        }
    }
    time_chart(
        out,
        "sessions-latency",
        "Task latency (arrival to end) by the minute a session arrived: mean and p99 over all runs",
        &lines,
        TIME_AXIS,
        &seconds,
    );
}

/// Sessions in flight over time, one line per sweep.
fn in_flight_chart(out: &mut String, over_time: &[(usize, &ReportInput, &Json)]) {
    let lines: Vec<TimeSeries> = over_time
        .iter()
        .map(|(i, x, series)| {
            let points = buckets(series).map(|(minute, b)| (minute, value(b, "in_flight_mean"))).collect();
            (x.label.clone(), points, colour(*i))
        })
        .collect();
    time_chart(
        out,
        "sessions-in-flight",
        "Sessions in flight (arrived, not yet ended) at each bucket's start: mean over runs",
        &lines,
        TIME_AXIS,
        &|v| if v.fract() == 0.0 { format!("{v}") } else { format!("{v:.1}") },
    );
}

/// Milliseconds as seconds, to a tenth below a minute.
fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    if s < 60.0 && s.fract() != 0.0 { format!("{s:.1} s") } else { format!("{s:.0} s") }
}

/// The series exactly as summary.json writes it.
fn series_table(out: &mut String, over_time: &[(usize, &ReportInput, &Json)]) {
    let keys = [
        "start_minute",
        "sessions",
        "succeeded",
        "success_share",
        "latency_mean_ms",
        "latency_p99_ms",
        "model_queue_mean_ms",
        "in_flight_mean",
    ];
    out.push_str("<div class=\"scroll\"><table><thead><tr><th>sessions.over_time</th>");
    for key in keys {
        let _ = write!(out, "<th>{key}</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for (_, x, series) in over_time {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td colspan=\"{}\" style=\"text-align:left\">buckets of {} min over {} runs</td></tr>",
            escape(&x.label),
            keys.len(),
            raw(&series["bucket_minutes"]),
            raw(&series["runs"])
        );
        for (_, b) in buckets(series) {
            let _ = write!(out, "<tr><td>{}</td>", escape(&x.label));
            for key in keys {
                let _ = write!(out, "<td>{}</td>", table_number(&b[key]));
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</tbody></table></div>\n");
}
