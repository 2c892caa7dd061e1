//! # agentsim
//!
//! A deterministic discrete-event simulator for testing the reliability of
//! LLM-agent stacks. This crate is the glue between the engine, the worlds and the
//! agents, used by the `agentsim` binary (and by tests and benches): built-in
//! scenarios, agent specs, the runner, sweep summaries and timelines. It reads no
//! files and prints nothing; the binary does.

#![warn(missing_docs)]

pub mod builtin;
pub mod compare;
mod error;
pub mod files;
pub mod gate;
pub mod incident;
pub mod load;
pub mod mcp;
pub mod property;
pub mod report;
pub mod runner;
pub mod shard;
pub mod shrink;
pub mod spec;
pub mod summary;
pub mod surface;
pub mod sweep;
pub mod timeline;
pub mod trace;

pub use error::Error;
pub use runner::Runner;
pub use summary::{Row, Summary, SummaryBuilder};
