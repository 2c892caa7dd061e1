//! # agentsim-agents
//!
//! The agents that act in agentsim's worlds: planners, the stack layers that wrap
//! them, and named presets.
//!
//! An agent is a **planner** wrapped in a **stack**. The planner decides what to do
//! next; it is either a world's expert as is ([`PlannerSpec::Oracle`], the upper
//! bound), or that expert behind a [`NoisyPlanner`] that makes an LLM's typical
//! mistakes at configured rates. The stack is the infrastructure between the planner
//! and the tools ([`Retry`], [`LoopDetector`], [`Guardrail`], [`Idempotency`]). Every
//! piece implements the engine's [`Agent`](agentsim_engine::Agent) trait and owns
//! the agent it wraps, so pieces compose in any order.
//!
//! ## Layer order
//!
//! [`StackSpec::layers`] is listed **from the planner outward**: `layers[0]` wraps
//! the planner directly and the last layer is the one closest to the tools (the one
//! the engine calls). Inputs travel from the engine inward, through the layers in
//! reverse list order; actions travel outward, in list order. A layer sees only what
//! the layers inside it decided and only what the layers outside it let through: a
//! loop detector listed before a retry layer counts planner decisions, a retry layer
//! listed after an idempotency layer re-sends calls that already carry their key.
//!
//! Architecture invariant: this crate knows no concrete world. Planners come in as
//! a world's expert (`Box<dyn Agent>`), and tool knowledge comes only from the
//! engine's [`Catalog`](agentsim_engine::Catalog).
//!
//! Architecture invariant: every random draw comes from a named
//! [`Stream`](agentsim_engine::Stream) (`"planner"`, `"stack.retry"`), so a stack
//! behaves the same for the same seed, and one component's draws never shift
//! another's.

#![warn(missing_docs)]

mod catalog;
pub mod external;
pub mod layers;
pub mod llm;
pub mod noisy;
mod notes;
mod outcomes;
pub mod preset;
mod print;
mod reuse;
pub mod stack;
pub mod stack_check;
pub mod temp_file;
#[cfg(test)]
mod testkit;

pub use external::{ExternalAgent, ExternalConfig};
pub use layers::{
    Approval, ApprovalConfig, Backoff, BreakerConfig, Cache, CacheConfig, CircuitBreaker, ContextBudget, ContextConfig,
    Contract, Fallback, FallbackConfig, Guardrail, GuardrailConfig, Idempotency, Jitter, LoopConfig, LoopDetector,
    Retry, RetryBudget, RetryConfig, Route, Rule, Timeout, TimeoutConfig, WriteRetry, idempotency_key,
};
pub use llm::{LlmAgent, LlmConfig};
pub use noisy::{NoisyConfig, NoisyPlanner};
pub use preset::{PRESETS, preset};
pub use stack::{LayerSpec, PlannerSpec, StackSpec, UnknownTool};
pub use stack_check::{LayerAt, LayerError, LayerErrorKind};
