//! Stack layers: the infrastructure between a planner and its tools.
//!
//! Each layer is an [`Agent`](agentsim_engine::Agent) that owns the agent it wraps
//! (the one closer to the planner). It sees every input before that inner agent and
//! every action after it, so it can answer an input itself (a retry sleeps instead
//! of reporting a 503), change what goes in or out (an idempotency key), or refuse
//! an action and tell the inner agent why (`Input::Blocked`). Layers never call
//! `begin_turn` or `read`: they are code, not model calls, and cost no tokens.

pub mod guardrail;
pub mod idempotency;
pub mod loop_detector;
pub mod retry;

pub use guardrail::{Guardrail, GuardrailConfig};
pub use idempotency::{Idempotency, idempotency_key};
pub use loop_detector::{LoopConfig, LoopDetector};
pub use retry::{Retry, RetryConfig, WriteRetry};
