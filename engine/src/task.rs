//! Tasks as milestone DAGs: what a trajectory must reach, and in which orders.
//!
//! A world names its milestones and their prerequisites once ([`MilestoneDag`]),
//! then records milestones as the trajectory reaches them ([`Progress`]). A task
//! succeeds only if the milestones were reached in an order the DAG allows (each
//! one after all of its prerequisites) and no minefield fired; the last milestone
//! reached says how far a failed run got.

use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::time::TimeMs;

/// The milestones of a task and the prerequisites of each (a DAG, checked at
/// construction).
#[derive(Clone, Debug)]
pub struct MilestoneDag {
    /// The milestones, in declaration order.
    nodes: Vec<&'static str>,
    /// The direct prerequisites of each milestone (in `nodes`' order), in
    /// declaration order: read by every order checked, so found once.
    prerequisites: Vec<Vec<&'static str>>,
}

/// Why a milestone DAG could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DagError {
    /// A milestone is declared twice.
    Duplicate(&'static str),
    /// A prerequisite names no declared milestone.
    Unknown {
        /// The milestone whose prerequisite is unknown.
        milestone: &'static str,
        /// The unknown name.
        prerequisite: &'static str,
    },
    /// The prerequisites form a cycle through this milestone.
    Cycle(&'static str),
}

impl std::fmt::Display for DagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DagError::Duplicate(m) => write!(f, "milestone `{m}` is declared twice"),
            DagError::Unknown { milestone, prerequisite } => {
                write!(f, "milestone `{milestone}` needs `{prerequisite}`, which is not a milestone")
            }
            DagError::Cycle(m) => write!(f, "the prerequisites of `{m}` form a cycle"),
        }
    }
}

impl std::error::Error for DagError {}

impl MilestoneDag {
    /// A DAG from `(milestone, prerequisites)` pairs, prerequisites declared anywhere
    /// in the list. Refuses duplicates, unknown prerequisites and cycles.
    pub fn new(milestones: &[(&'static str, &[&'static str])]) -> Result<MilestoneDag, DagError> {
        let mut graph = DiGraph::new();
        let mut nodes: Vec<(&'static str, NodeIndex)> = Vec::with_capacity(milestones.len());
        for (name, _) in milestones {
            if nodes.iter().any(|(n, _)| n == name) {
                return Err(DagError::Duplicate(name));
            }
            nodes.push((name, graph.add_node(*name)));
        }
        for (name, prerequisites) in milestones {
            let to = nodes.iter().find(|(n, _)| n == name).expect("declared above").1;
            for prerequisite in *prerequisites {
                let from = nodes
                    .iter()
                    .find(|(n, _)| n == prerequisite)
                    .ok_or(DagError::Unknown { milestone: name, prerequisite })?
                    .1;
                graph.add_edge(from, to, ());
            }
        }
        toposort(&graph, None).map_err(|cycle| DagError::Cycle(graph[cycle.node_id()]))?;
        let prerequisites = nodes
            .iter()
            .map(|(_, node): &(&'static str, NodeIndex)| {
                let mut found: Vec<NodeIndex> =
                    graph.neighbors_directed(*node, petgraph::Direction::Incoming).collect();
                found.sort();
                found.into_iter().map(|i| graph[i]).collect()
            })
            .collect();
        Ok(MilestoneDag { nodes: nodes.into_iter().map(|(name, _)| name).collect(), prerequisites })
    }

    /// A chain: each milestone needs the one before it.
    pub fn chain(milestones: &[&'static str]) -> Result<MilestoneDag, DagError> {
        let pairs: Vec<(&'static str, &[&'static str])> = milestones
            .iter()
            .enumerate()
            .map(|(i, m)| (*m, if i == 0 { &[][..] } else { &milestones[i - 1..i] }))
            .collect();
        MilestoneDag::new(&pairs)
    }

    /// The position of `name` in declaration order.
    fn position(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| *n == name)
    }

    /// Whether `name` is a milestone of this DAG.
    pub fn contains(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// The direct prerequisites of `name`, in a stable order (declaration order).
    pub fn prerequisites(&self, name: &str) -> Vec<&'static str> {
        self.position(name).map_or_else(Vec::new, |at| self.prerequisites[at].clone())
    }

    /// The milestones in declaration order.
    pub fn milestones(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.nodes.iter().copied()
    }

    /// Checks that `order` reaches each milestone at most once and only after all of
    /// its prerequisites. Returns the first milestone reached too early (with the
    /// prerequisite it lacked) or unknown.
    pub fn check_order(&self, order: &[&'static str]) -> Result<(), OrderError> {
        self.check_order_of(order, |m| *m)
    }

    /// [`MilestoneDag::check_order`] of the milestones `name` reads from `order`.
    fn check_order_of<T>(&self, order: &[T], name: impl Fn(&T) -> &'static str) -> Result<(), OrderError> {
        let before = |index: usize, milestone: &str| order[..index].iter().any(|m| name(m) == milestone);
        for (index, milestone) in order.iter().map(&name).enumerate() {
            let Some(at) = self.position(milestone) else {
                return Err(OrderError::Unknown { milestone, index });
            };
            if before(index, milestone) {
                return Err(OrderError::Twice { milestone, index });
            }
            if let Some(&missing) = self.prerequisites[at].iter().find(|p| !before(index, p)) {
                return Err(OrderError::Early { milestone, missing, index });
            }
        }
        Ok(())
    }
}

/// Why an order of milestones is one the DAG does not allow: the first
/// milestone at fault and its position in the order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderError {
    /// A name that is no milestone of the DAG.
    Unknown {
        /// The name.
        milestone: &'static str,
        /// Its position in the order (0-based).
        index: usize,
    },
    /// A milestone that appears a second time.
    Twice {
        /// The milestone.
        milestone: &'static str,
        /// The position of its second appearance (0-based).
        index: usize,
    },
    /// A milestone reached before one of its prerequisites.
    Early {
        /// The milestone.
        milestone: &'static str,
        /// The prerequisite it lacked.
        missing: &'static str,
        /// Its position in the order (0-based).
        index: usize,
    },
}

impl OrderError {
    /// The milestone at fault.
    pub fn milestone(&self) -> &'static str {
        match self {
            OrderError::Unknown { milestone, .. }
            | OrderError::Twice { milestone, .. }
            | OrderError::Early { milestone, .. } => milestone,
        }
    }

    /// Its position in the order (0-based).
    pub fn index(&self) -> usize {
        match self {
            OrderError::Unknown { index, .. } | OrderError::Twice { index, .. } | OrderError::Early { index, .. } => {
                *index
            }
        }
    }
}

impl std::fmt::Display for OrderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OrderError::Unknown { milestone, .. } => write!(f, "`{milestone}` is not a milestone"),
            OrderError::Twice { milestone, .. } => write!(f, "`{milestone}` reached twice"),
            OrderError::Early { milestone, missing, .. } => write!(f, "`{milestone}` reached before `{missing}`"),
        }
    }
}

impl std::error::Error for OrderError {}

/// The milestones one trajectory reached, in order, with the virtual time of each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    reached: Vec<(&'static str, TimeMs)>,
}

impl Progress {
    /// Nothing reached yet.
    pub fn new() -> Progress {
        Progress::default()
    }

    /// Records that `milestone` was reached at `at_ms`. Reaching it again is not a
    /// new milestone and is ignored (the first time counts).
    pub fn reach(&mut self, milestone: &'static str, at_ms: TimeMs) {
        assert!(self.reached.last().is_none_or(|(_, t)| *t <= at_ms), "milestones are recorded in time order");
        if !self.has(milestone) {
            self.reached.push((milestone, at_ms));
        }
    }

    /// Whether `milestone` was reached.
    pub fn has(&self, milestone: &str) -> bool {
        self.reached.iter().any(|(m, _)| *m == milestone)
    }

    /// The milestones reached, in order, with their times.
    pub fn reached(&self) -> &[(&'static str, TimeMs)] {
        &self.reached
    }

    /// The last milestone reached, or `none`.
    pub fn last(&self) -> &'static str {
        self.reached.last().map_or(none(), |(m, _)| m)
    }

    /// Checks the order against `dag` (see [`MilestoneDag::check_order`]).
    pub fn check(&self, dag: &MilestoneDag) -> Result<(), OrderError> {
        dag.check_order_of(&self.reached, |(m, _)| *m)
    }

    /// Whether every milestone of `dag` was reached, in an order it allows.
    pub fn complete(&self, dag: &MilestoneDag) -> bool {
        dag.milestones().all(|m| self.has(m)) && self.check(dag).is_ok()
    }
}

const fn none() -> &'static str {
    "none"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_unknowns_and_duplicates_are_refused() {
        assert!(matches!(MilestoneDag::new(&[("a", &["b"]), ("b", &["a"])]), Err(DagError::Cycle(_))));
        assert!(matches!(MilestoneDag::new(&[("a", &["zz"])]), Err(DagError::Unknown { .. })));
        assert_eq!(MilestoneDag::new(&[("a", &[]), ("a", &[])]).unwrap_err(), DagError::Duplicate("a"));
        assert!(matches!(MilestoneDag::new(&[("a", &["a"])]), Err(DagError::Cycle("a"))));
    }

    #[test]
    fn orders_are_checked_against_the_dag() {
        // a -> b, a -> c, (b, c) -> d: b and c in either order.
        let dag = MilestoneDag::new(&[("a", &[]), ("b", &["a"]), ("c", &["a"]), ("d", &["b", "c"])]).unwrap();
        assert!(dag.check_order(&["a", "b", "c", "d"]).is_ok());
        assert!(dag.check_order(&["a", "c", "b", "d"]).is_ok());
        assert_eq!(dag.check_order(&["a", "b", "d"]).unwrap_err().to_string(), "`d` reached before `c`");
        assert_eq!(dag.check_order(&["b"]).unwrap_err(), OrderError::Early { milestone: "b", missing: "a", index: 0 });
        assert_eq!(dag.check_order(&["a", "a"]).unwrap_err(), OrderError::Twice { milestone: "a", index: 1 });
        assert_eq!(dag.check_order(&["x"]).unwrap_err().to_string(), "`x` is not a milestone");
        assert_eq!(dag.prerequisites("d"), vec!["b", "c"]);
    }

    #[test]
    fn progress_records_first_reach_and_knows_the_last() {
        let dag = MilestoneDag::chain(&["started", "found", "done"]).unwrap();
        let mut p = Progress::new();
        assert_eq!(p.last(), "none");
        p.reach("started", 0);
        p.reach("found", 10);
        p.reach("started", 20);
        assert_eq!(p.reached(), &[("started", 0), ("found", 10)]);
        assert_eq!(p.last(), "found");
        assert!(!p.complete(&dag));
        p.reach("done", 30);
        assert!(p.complete(&dag));
        let mut skipped = Progress::new();
        skipped.reach("started", 0);
        skipped.reach("done", 5);
        assert!(skipped.check(&dag).is_err());
    }
}
