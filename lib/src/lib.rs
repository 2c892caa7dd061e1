//! # agentsim
//!
//! A deterministic discrete-event simulator for testing the reliability of
//! LLM-agent stacks. This crate is the glue between the engine, the worlds and the
//! agents, used by the `agentsim` binary, the Python module (`python/`), the tests
//! and the benches: built-in scenarios, agent specs, the runner, sweep summaries
//! and timelines, and a sweep's output folder (`sweep`, `files`, `load`: the
//! files both the binary and the Python module name). It prints nothing and reads
//! no clock; the binary and the Python module own the terminal and the arguments.

#![warn(missing_docs)]

pub mod builtin;
pub mod checks;
pub mod compare;
pub mod cross_entropy;
pub mod episode;
mod error;
pub mod files;
pub mod gate;
pub mod importance;
pub mod incident;
pub mod llm;
pub mod load;
pub mod mcp;
pub mod persistent;
pub mod report;
pub mod rows;
pub mod runner;
pub mod shard;
pub mod shrink;
pub mod spec;
pub mod summary;
pub mod surface;
pub mod sweep;
/// tau2-bench: the importer and the scripted-world extension (its own crate).
pub use agentsim_tau2 as tau2;
pub mod text;
pub mod tilts;
pub mod timeline;
pub mod trace;

pub use error::Error;
pub use runner::Runner;
pub use summary::{Row, Summary, SummaryBuilder};
