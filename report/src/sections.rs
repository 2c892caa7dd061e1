//! The report's sections about sweeps, in the order the page shows them: what
//! each sweep is, completion and outcomes, the four dimensions, distributions,
//! the reliability surface and pass^k.

use std::fmt::Write as _;

use crate::ReportInput;
use crate::charts::{Series, colour, histogram_chart, line_chart, outcomes_chart, rates_chart};
use crate::text::{escape, raw};

/// One line per sweep: its scenario, agent, seeds, trials, fault scale, digest.
pub(crate) fn sweep_lines(out: &mut String, inputs: &[ReportInput]) {
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
}

/// Completion per stack with its interval, then the outcomes per stack.
pub(crate) fn completion_section(out: &mut String, inputs: &[ReportInput]) {
    out.push_str("<h2>Task completion</h2>\n");
    let rows: Vec<_> =
        inputs.iter().enumerate().map(|(i, x)| (x.label.clone(), x.summary["completion"].clone(), colour(i))).collect();
    rates_chart(out, "completion", "Completion per stack, with 95% Wilson intervals", &rows);
    outcomes_chart(out, inputs);
}

/// Completion, recovery, contextual accuracy and tool fidelity of every stack
/// in one chart, then recovery per fault kind.
pub(crate) fn dimensions_section(out: &mut String, inputs: &[ReportInput]) {
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
    rates_chart(out, "dimensions", "Completion, recovery, contextual accuracy, tool fidelity (95% Wilson)", &rows);
    recovery_chart(out, inputs);
}

/// Recovery per fault kind met, of every stack (nothing when none met a fault).
fn recovery_chart(out: &mut String, inputs: &[ReportInput]) {
    let mut rows = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        if let serde_json::Value::Object(kinds) = &input.summary["recovery_by_fault"] {
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

/// The histograms of planner turns and model cost of every stack.
pub(crate) fn distributions_section(out: &mut String, inputs: &[ReportInput]) {
    out.push_str("<h2>Distributions</h2>\n");
    for (i, x) in inputs.iter().enumerate() {
        histogram_chart(
            out,
            &format!("turns-{i}"),
            &format!("{}: planner turns per trajectory", x.label),
            &x.summary["turns"],
            colour(i),
            |v| if v.fract() == 0.0 { format!("{v}") } else { format!("{v:.2}") },
        );
        histogram_chart(
            out,
            &format!("cost-{i}"),
            &format!("{}: model cost per trajectory", x.label),
            &x.summary["cost_micro_usd"],
            colour(i),
            |v| format!("${:.4}", v / 1e6),
        );
    }
}

/// Completion over the fault scales of the sweeps that hold a surface, as a
/// chart and as surface.json's numbers (nothing when none does).
pub(crate) fn surface_section(out: &mut String, inputs: &[ReportInput]) {
    let surfaces: Vec<Series> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, x)| {
            let points = x.surface.as_ref()?["points"].as_array()?;
            let points = points.iter().map(|p| (raw(&p["fault_scale"]), p["completion"].clone())).collect();
            Some((x.label.clone(), points, colour(i)))
        })
        .collect();
    if surfaces.is_empty() {
        return;
    }
    out.push_str("<h2>Reliability surface</h2>\n");
    line_chart(
        out,
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

/// pass^k over k of the sweeps with several trials per seed, as a chart and as
/// summary.json's numbers (nothing when none has them).
pub(crate) fn pass_k_section(out: &mut String, inputs: &[ReportInput]) {
    let pass_k: Vec<Series> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, x)| {
            let values = x.summary["pass_k"]["values"].as_object()?;
            let points = values.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>();
            Some((x.label.clone(), points, colour(i)))
        })
        .collect();
    if pass_k.is_empty() {
        return;
    }
    out.push_str("<h2>Consistency: pass^k</h2>\n");
    line_chart(out, "pass-k", "pass^k: the chance of solving a task in all of k attempts (tau-bench)", &pass_k, "k");
    out.push_str("<table><thead><tr><th>summary.json</th><th>k</th><th>pass_k.values</th></tr></thead><tbody>\n");
    for (label, points, _) in &pass_k {
        for (k, v) in points {
            let _ = writeln!(out, "<tr><td>{}</td><td>{k}</td><td>{}</td></tr>", escape(label), raw(v));
        }
    }
    out.push_str("</tbody></table>\n");
}
