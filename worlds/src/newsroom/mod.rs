//! newsroom: summarise the latest stories of a moving feed and plan the work as a
//! task DAG.
//!
//! Stories arrive and get corrected over virtual time. An editor asks for a summary
//! of the latest N stories and a task list: a `check` and a `summarise` task per
//! story (summarise depends on check) and one `publish` task that depends on every
//! summarise task. Tasks name their dependencies by key, so they can be created in
//! an order that is not topological; the world builds the graph (petgraph) and
//! judges it. Success: the summary covers the N stories current when it is sent, at
//! their current versions; the task graph is acyclic, was created in a topological
//! order and covers those stories. A summary built from stale data (a `Stale`
//! replica or a cache, `cache_age_ms`) must say so (`stale: true`); an unflagged
//! stale summary is the minefield `unflagged_stale_summary`, a flagged one is a
//! wrong result.

pub mod config;
pub mod expert;
pub mod tools;
pub mod world;

pub use config::NewsroomConfig;
pub use expert::Expert;
pub use tools::Ids;
pub use world::Newsroom;

crate::kit::builtin_world::builtin_world!(NewsroomConfig, Newsroom);
