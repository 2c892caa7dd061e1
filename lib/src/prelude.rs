//! Everything a world author and a sweep user need, in one import:
//!
//! ```
//! use agentsim::prelude::*;
//! ```
//!
//! - Building a world: [`WorldBuilder`] (tools, handlers, faults, the user's
//!   opening, the judge, a [`Plan`] for the default expert), [`read_tool`] and
//!   [`write_tool`], [`FaultSpec`] with [`fixed_ms`], [`uniform_ms`] and
//!   [`log_normal_ms`] latencies, [`Says`], [`Call`], [`Known`], and the
//!   engine's values ([`Value`], [`ValueKind`], [`ToolError`], [`Stream`]).
//! - Sweeping it: [`sweep`], in memory ([`SweepOutput`]) or into a folder
//!   `agentsim report` reads, with its [`Summary`] and [`Row`]s, or two
//!   agents compared on the same seeds ([`Comparison`]).
//! - Going further: [`Prepared`] and [`Runner`] (one seed, a trajectory's
//!   events), [`StackSpec`] and [`preset`] (stacks of one's own).

pub use crate::compare::Comparison;
pub use crate::rows::Row;
pub use crate::runner::Runner;
pub use crate::summary::Summary;
pub use crate::sweep_builder::{SweepBuilder, SweepError, SweepErrorKind, SweepOutput, Sweepable, sweep};
pub use agentsim_agents::{StackSpec, preset};
pub use agentsim_engine::{
    Fault, Latency, MalformedKind, Outcome, Stream, TimeMs, ToolDef, ToolError, ToolKind, Trajectory, Value, ValueKind,
};
pub use agentsim_worlds::Prepared;
pub use agentsim_worlds::builder::{
    BuildError, BuildErrorKind, BuiltWorld, Call, FaultSpec, Known, Plan, Says, WorldBuilder, fixed_ms, log_normal_ms,
    read_tool, uniform_ms, write_tool,
};
