//! Why a session's final state does not meet its task: what the judge finds
//! (`judge.rs`) and each session's user keeps once judged (`caller.rs`).

/// Why the final state does not meet the task (the `db` check), in the
/// order the judge asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Unmet {
    /// The user left, after this many seconds.
    UserLeft {
        /// Whole seconds into the run.
        after_s: u64,
    },
    /// The final tables differ from the gold state.
    TablesDiffer,
    /// The milestones were reached out of the DAG's order (why, in words).
    MilestonesOutOfOrder(String),
    /// A milestone was never reached (its name).
    MilestoneMissing(String),
    /// The success predicate of the task (its id) does not hold.
    SuccessFalse(String),
    /// The success predicate of the task (its id) failed.
    SuccessFailed(String, crate::scripted::script::PredicateError),
}

impl std::fmt::Display for Unmet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmet::UserLeft { after_s } => write!(f, "the user left after {after_s} s"),
            Unmet::TablesDiffer => f.write_str("the final tables differ from those the gold actions produce"),
            Unmet::MilestonesOutOfOrder(why) => write!(f, "milestones out of order: {why}"),
            Unmet::MilestoneMissing(name) => write!(f, "milestone `{name}` not reached"),
            Unmet::SuccessFalse(task) => write!(f, "task `{task}`: the success predicate does not hold"),
            Unmet::SuccessFailed(task, e) => write!(f, "task `{task}`: the success predicate failed: {e}"),
        }
    }
}
