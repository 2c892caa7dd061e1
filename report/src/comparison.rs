//! The paired comparisons (`compare.json` from `agentsim compare --out`): the
//! two intervals on the difference around zero, the table of pairs, the test,
//! the verdict and the worst seeds.

use std::fmt::Write as _;

use serde_json::Value as Json;

use crate::charts::difference_chart;
use crate::text::{escape, raw};

/// Disagreeing seeds listed per comparison (all of them are in compare.json).
const DISAGREEMENTS_SHOWN: usize = 15;

/// Every comparison under one heading (nothing when there is none).
pub(crate) fn comparisons_section(out: &mut String, comparisons: &[Json]) {
    if comparisons.is_empty() {
        return;
    }
    out.push_str("<h2>Paired comparison</h2>\n");
    for (i, c) in comparisons.iter().enumerate() {
        comparison(out, i, c);
    }
}

/// The `index`-th comparison: what was compared, the chart, the pairs and the
/// seeds they disagree on.
fn comparison(out: &mut String, index: usize, c: &Json) {
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
    difference_chart(out, index, &rows);
    pairs_table(out, c);
    disagreements_table(out, c);
}

/// The four kinds of pair, McNemar's p and the verdict.
fn pairs_table(out: &mut String, c: &Json) {
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
}

/// The first [`DISAGREEMENTS_SHOWN`] seeds the stacks disagree on, worst
/// first (nothing when they agree on every seed).
fn disagreements_table(out: &mut String, c: &Json) {
    let Some(list) = c["disagreements"].as_array().filter(|l| !l.is_empty()) else { return };
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
