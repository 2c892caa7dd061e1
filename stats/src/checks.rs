//! The parts of a world's judgement (tau2-bench's reward basis), from the
//! trajectory to its `checks` column and to `summary.json`: how often each
//! check passed, over all trajectories and per task.
//!
//! The column lists each check as `name=pass`, `name=fail` or
//! `name=unjudged`, in the world's order, `;`-separated; a `+` before the
//! name marks a check of the task's reward basis (success requires it):
//! `+db=pass;communicate=fail;+nl_assertion=unjudged`.

use std::collections::BTreeMap;

use crate::rate::Rate;
use agentsim_engine::Check;
use serde::Serialize;

/// One check of a row, as the column holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowCheck {
    /// The check's name.
    pub name: String,
    /// Passed, failed, or `None`: not judged.
    pub passed: Option<bool>,
    /// In the task's reward basis.
    pub in_reward: bool,
}

impl RowCheck {
    /// The row's form of a trajectory's check.
    pub fn of(check: &Check) -> RowCheck {
        RowCheck { name: check.name.to_string(), passed: check.passed, in_reward: check.in_reward }
    }
}

/// The `checks` column of a trajectory's checks.
pub fn column(checks: &[Check]) -> String {
    let parts: Vec<String> = checks
        .iter()
        .map(|c| {
            let result = match c.passed {
                Some(true) => "pass",
                Some(false) => "fail",
                None => "unjudged",
            };
            format!("{}{}={result}", if c.in_reward { "+" } else { "" }, c.name)
        })
        .collect();
    parts.join(";")
}

/// Reads a `checks` column back; the error says which part is not
/// `[+]name=pass|fail|unjudged`.
pub fn parse_column(text: &str) -> Result<Vec<RowCheck>, String> {
    let mut out = Vec::new();
    for part in text.split(';').filter(|p| !p.is_empty()) {
        let bad = || format!("column `checks`: `{part}` is not [+]name=pass, fail or unjudged");
        let (name, result) = part.split_once('=').ok_or_else(bad)?;
        let (in_reward, name) = match name.strip_prefix('+') {
            Some(n) => (true, n),
            None => (false, name),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad());
        }
        let passed = match result {
            "pass" => Some(true),
            "fail" => Some(false),
            "unjudged" => None,
            _ => return Err(bad()),
        };
        out.push(RowCheck { name: name.to_string(), passed, in_reward });
    }
    Ok(out)
}

/// How one check went over many trajectories.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckCount {
    /// Trajectories that report it.
    pub trajectories: u64,
    /// Of which it was in the reward basis.
    pub in_reward: u64,
    /// Passed among those judged, with its Wilson interval (`n` is the judged).
    pub passed: Rate,
    /// Trajectories where it was not judged.
    pub unjudged: u64,
}

/// One task's trajectories and checks.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskChecks {
    /// Trajectories of the task.
    pub trajectories: u64,
    /// Of which succeeded.
    pub successes: u64,
    /// Each check: (judged, passed).
    pub checks: BTreeMap<String, (u64, u64)>,
}

/// What `summary.json` says of the checks (present when the world reports them).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ChecksSummary {
    /// Each check over all trajectories, by name.
    pub overall: BTreeMap<String, CheckCount>,
    /// Per task (a world with named tasks), by task id.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_task: BTreeMap<String, TaskChecks>,
}

/// Counts checks, row by row.
#[derive(Clone, Debug, Default)]
pub struct ChecksBuilder {
    /// name -> (trajectories, in reward, judged, passed).
    overall: BTreeMap<String, [u64; 4]>,
    by_task: BTreeMap<String, TaskChecks>,
}

impl ChecksBuilder {
    /// Counts one trajectory's checks, with its task and success.
    pub fn add(&mut self, checks: &[RowCheck], task: Option<&str>, success: bool) {
        if checks.is_empty() {
            return;
        }
        for c in checks {
            let counts = self.overall.entry(c.name.clone()).or_default();
            counts[0] += 1;
            counts[1] += u64::from(c.in_reward);
            counts[2] += u64::from(c.passed.is_some());
            counts[3] += u64::from(c.passed == Some(true));
        }
        let Some(task) = task else { return };
        let tally = self.by_task.entry(task.to_string()).or_default();
        tally.trajectories += 1;
        tally.successes += u64::from(success);
        for c in checks.iter().filter(|c| c.passed.is_some()) {
            let (judged, passed) = tally.checks.entry(c.name.clone()).or_default();
            *judged += 1;
            *passed += u64::from(c.passed == Some(true));
        }
    }

    /// The summary, or `None` when no row had checks.
    pub fn finish(self) -> Option<ChecksSummary> {
        if self.overall.is_empty() {
            return None;
        }
        let overall = (self.overall.into_iter())
            .map(|(name, [n, in_reward, judged, passed])| {
                let count = CheckCount {
                    trajectories: n,
                    in_reward,
                    passed: Rate::wilson(passed, judged),
                    unjudged: n - judged,
                };
                (name, count)
            })
            .collect();
        Some(ChecksSummary { overall, by_task: self.by_task })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_reads_back_what_it_wrote() {
        let checks = [
            Check { name: "db", passed: Some(true), in_reward: true },
            Check { name: "communicate", passed: Some(false), in_reward: false },
            Check { name: "nl_assertion", passed: None, in_reward: true },
        ];
        let text = column(&checks);
        assert_eq!(text, "+db=pass;communicate=fail;+nl_assertion=unjudged");
        assert_eq!(parse_column(&text).unwrap(), checks.iter().map(RowCheck::of).collect::<Vec<_>>());
        assert_eq!(parse_column("").unwrap(), Vec::new());
        for bad in ["db", "db=maybe", "=pass", "+=pass", "d b=pass"] {
            assert!(parse_column(bad).unwrap_err().contains(bad), "{bad}");
        }
    }

    #[test]
    fn counts_overall_and_per_task() {
        let row = |db: bool, said: bool| {
            vec![
                RowCheck { name: "db".into(), passed: Some(db), in_reward: true },
                RowCheck { name: "communicate".into(), passed: Some(said), in_reward: false },
                RowCheck { name: "nl_assertion".into(), passed: None, in_reward: true },
            ]
        };
        let mut b = ChecksBuilder::default();
        b.add(&row(true, false), Some("1"), true);
        b.add(&row(false, true), Some("1"), false);
        b.add(&row(true, true), Some("2"), true);
        let s = b.finish().unwrap();
        assert_eq!((s.overall["db"].passed.count, s.overall["db"].passed.n), (2, 3));
        assert_eq!((s.overall["nl_assertion"].unjudged, s.overall["nl_assertion"].passed.n), (3, 0));
        assert_eq!(s.overall["communicate"].in_reward, 0);
        assert_eq!(s.by_task["1"].checks["communicate"], (2, 1));
        assert_eq!((s.by_task["1"].trajectories, s.by_task["1"].successes), (2, 1));
        assert!(!s.by_task["2"].checks.contains_key("nl_assertion"), "only judged checks are counted per task");
        assert_eq!(ChecksBuilder::default().finish(), None);
    }
}
