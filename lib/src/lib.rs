//! # agentsim
//!
//! A deterministic discrete-event simulator for testing the reliability of
//! LLM-agent stacks. This crate is the front door: [`prelude`] for a Rust user,
//! and the modules of the crates below under one name, so that the `agentsim`
//! binary, the Python module (`python/`), the tests and the benches name one
//! crate. Each module lives in the crate that has its job:
//!
//! - `agentsim-engine` ([`engine`]): virtual time, the queue, faults, tools,
//!   trajectories;
//! - `agentsim-worlds` ([`worlds`]) and `agentsim-agents` ([`agents`]): the
//!   worlds and the stacks;
//! - `agentsim-stats`: rates, pass^k, rows and summaries, importance, gates
//!   ([`summary`], [`rows`], [`gate`], ...);
//! - `agentsim-runner`: sweeps, shards, episodes, incidents, shrink
//!   ([`sweep`], [`runner`], [`incident`], ...);
//! - `agentsim-report` ([`report`]) and `agentsim-mcp` ([`mcp`]).
//!
//! It prints nothing and reads no clock; the binary and the Python module own
//! the terminal and the arguments.

#![warn(missing_docs)]

pub use agentsim_agents as agents;
pub use agentsim_engine as engine;
pub use agentsim_mcp as mcp;
pub use agentsim_report as report;
pub use agentsim_worlds as worlds;

pub use agentsim_stats::{
    checks, compare, gate, importance, paired, pass_k, rate, rows, rows_file, summary, surface, text, tilts,
};

pub use agentsim_runner::{
    bridge, builtin, cross_entropy, episode, files, incident, llm, load, ordered, persistent, runner, shard, shrink,
    spec, sweep, timeline, trace,
};

pub mod prelude;
pub mod sweep_builder;
/// tau2-bench: the importer and the scripted-world extension (`agentsim-tau2`).
pub use agentsim_tau2 as tau2;

pub use agentsim_runner::{Error, ErrorKind, Position, Runner};
pub use agentsim_stats::{Row, Summary, SummaryBuilder};
