//! # agentsim-stats
//!
//! What a sweep's numbers mean: rates with Wilson intervals and percentiles
//! (`rate`), pass^k (`pass_k`), paired comparison of two stacks on the same
//! seeds (`paired`, `compare`), the rows of `trajectories.csv` and their one
//! path to `summary.json` (`rows`, `row_line`, `checks`, `summary`), runs of many sessions
//! and their sessions over virtual time (`sessions`, `over_time`), importance-sampling
//! estimates and their tilts (`importance`, `tilts`), gates (`gate`), fault
//! surfaces (`surface`) and numbers as people read them (`text`).
//!
//! It runs nothing: it reads trajectories and rows, in seed order, and never
//! imports the runner, a world's code, an agent, rayon or a clock.

#![warn(missing_docs)]

pub mod checks;
pub mod compare;
pub mod gate;
pub mod importance;
pub mod measures;
pub mod over_time;
pub mod paired;
pub mod pass_k;
pub mod rate;
pub mod row_line;
pub mod rows;
pub mod rows_file;
pub mod sessions;
pub mod summary;
pub mod surface;
pub mod text;
pub mod tilts;

pub use rows::{Record, Row};
pub use summary::{Summary, SummaryBuilder};
