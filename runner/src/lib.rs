//! # agentsim-runner
//!
//! Runs a scenario with an agent: one seed or a sweep in parallel on rayon
//! (`runner`, `ordered`), with a sweep's output folder, resume and shard merge
//! (`sweep`, `shard`, `files`), episodes stepped from outside and persistent
//! agents multiplexed over one process (`episode`, `persistent`, `bridge`),
//! incidents and their shrinking (`incident`, `shrink`), traces and timelines
//! (`trace`, `timeline`), the cross-entropy pilot (`cross_entropy`), and what a
//! user names on the command line: built-in scenarios, stacks, files and models
//! (`builtin`, `spec`, `load`, `llm`).
//!
//! It prints nothing and reads no clock except where a deadline is the point:
//! `persistent` times out a silent agent process (the only wall-clock reader of
//! this crate). The binary and the Python module own the terminal.

#![warn(missing_docs)]

pub mod bridge;
pub mod builtin;
pub mod cross_entropy;
pub mod episode;
mod error;
pub mod files;
pub mod incident;
pub mod llm;
pub mod load;
pub mod ordered;
pub mod persistent;
pub mod runner;
pub mod shard;
pub mod shrink;
pub mod spec;
pub mod sweep;
pub mod timeline;
pub mod trace;

pub use error::{Error, ErrorKind, Position};
pub use runner::Runner;
