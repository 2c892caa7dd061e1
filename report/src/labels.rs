//! Labels: fitted to the room left of a chart's bars without losing what
//! tells them apart, and the folder names that tell sweeps of one agent apart.

use std::fmt::Write as _;

use crate::text::escape;

/// Characters of a label that fit left of a chart's bars (12 px text in
/// `LEFT - 8` px); a longer label is shortened as [`fit`] says.
pub(crate) const LABEL_CHARS_MAX: usize = 38;

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
pub(crate) fn label_text(label: &str, max: usize) -> String {
    let fitted = fit(label, max);
    if fitted == label { escape(label) } else { format!("<title>{}</title>{}", escape(label), escape(&fitted)) }
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
}
