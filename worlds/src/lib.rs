//! # agentsim-worlds
//!
//! The built-in worlds, each with its tools, its simulated users, its judge and
//! its expert (the policy that solves its tasks, used as the oracle planner and
//! wrapped by the noisy planner), and the scenario format that configures them.
//!
//! Worlds know nothing of stacks: agents reach them only through the engine's
//! `Agent` trait.

#![warn(missing_docs)]

pub mod builder;
pub mod flight_booking;
pub mod kit;
pub mod newsroom;
pub mod read;
pub mod scenario;
pub mod scripted;
pub mod support_desk;
pub mod swarm;
pub mod talk;
pub mod user_spec;
pub mod weather_dining;
pub mod world_model;

pub use scenario::{BuiltinWorld, NamedWorld, Prepared, Scenario, ScenarioError, WorldConfig, WorldKind, WorldModel};
pub use user_spec::{JudgeModel, JudgeSpec, UserModel, UserSpec};
