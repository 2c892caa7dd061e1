//! The report's tables of numbers: every field of each summary.json, and the
//! importance-sampling estimates of the sweeps that have them.

use std::fmt::Write as _;

use serde_json::Value as Json;

use crate::ReportInput;
use crate::text::{escape, num, raw, table_number};

/// The table of every summary.json's numbers, one column per sweep, under its
/// heading.
pub(crate) fn numbers_section(out: &mut String, inputs: &[ReportInput]) {
    out.push_str("<h2>Numbers</h2>\n<p class=\"meta\">Exactly as written in each summary.json.</p>\n");
    numbers_table(out, inputs);
}

/// Rate objects field by field, spreads by percentile, then the totals.
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
pub(crate) fn importance_section(out: &mut String, inputs: &[ReportInput]) {
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
