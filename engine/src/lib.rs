//! # agentsim-engine
//!
//! The deterministic core of agentsim: integer virtual time, an event queue ordered
//! by (time, sequence), per-component ChaCha streams, tools with latency, faults,
//! rate limits, sessions and drift, the agent and world interfaces, the event loop,
//! trajectories with stable digests.
//!
//! It knows no concrete world or agent, reads no clock and does no I/O.

#![warn(missing_docs)]

pub mod agent;
pub mod call;
mod chacha_block;
pub mod config;
pub mod corrupt;
pub mod fault;
pub mod field_path;
pub mod fingerprint;
pub mod hex;
pub mod inject;
pub mod input_error;
pub mod judge;
#[cfg(target_arch = "x86_64")]
mod lanes;
pub mod latency;
pub mod likelihood;
pub mod queue;
pub mod recipient;
pub mod rng;
pub mod runtime;
pub mod sessions;
pub mod sim;
pub mod task;
#[cfg(test)]
mod test_inputs;
pub mod time;
pub mod tool;
pub mod trajectory;
pub mod value;
pub mod voice;
mod wire;
pub mod world;

pub use agent::{Action, Agent, AgentCx, Finish, Input, Lens, Message, Note, Usage};
pub use call::{Args, Body, Reply, ToolCall, ToolError, ToolResult};
pub use config::{Budgets, ModelConfig, SimConfig};
pub use corrupt::Lie;
pub use fault::{Corruption, Fault, FaultRule, FaultTag, FieldPath, MalformedKind, Probability, Schedule};
pub use inject::{Injected, InjectedArg, InjectionStyle};
pub use input_error::{InputError, InputErrorKind};
pub use judge::{JudgeAnswer, JudgeSlot, ReadingJudge};
pub use latency::{Band, Latency};
pub use rng::{Stream, StreamSource};
pub use sessions::{Arrival, Explore, ModelCapacity, SessionId, Sessions};
pub use task::{DagError, MilestoneDag, OrderError, Progress};
pub use time::{TIME_MS_MAX, TimeMs};
pub use tool::{
    CallFault, Catalog, Constraint, Drift, DriftChange, ToolConfig, ToolDef, ToolId, ToolKind, ToolSpec, TracedCall,
};
pub use trajectory::{
    Digest, DigestChain, Event, EventKind, Metrics, Outcome, RealisedFault, SessionResult, Trajectory,
};
pub use value::{Float, Key, Value, ValueKind};
pub use voice::{UserVoice, VoiceCx, VoiceFactory, VoiceSlot, Voiced};
pub use world::{Check, Minefield, Verdict, World, WorldCx};
