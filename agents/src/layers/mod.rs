//! Stack layers: the infrastructure between a planner and its tools.
//!
//! Each layer is an [`Agent`](agentsim_engine::Agent) that owns the agent it wraps
//! (the one closer to the planner). It sees every input before that inner agent and
//! every action after it, so it can answer an input itself (a retry sleeps instead
//! of reporting a 503), change what goes in or out (an idempotency key), or refuse
//! an action and tell the inner agent why (`Input::Blocked`). Layers never call
//! `begin_turn` or `read`: they are code, not model calls, and cost no tokens.

pub mod approval;
pub mod cache;
pub mod circuit_breaker;
pub mod context_budget;
pub mod contract;
pub mod cross_check;
pub mod fallback;
pub mod guardrail;
pub mod idempotency;
pub mod loop_detector;
pub mod retry;
pub mod speak;
pub mod timeout;
pub mod verify_write;

pub use approval::{Approval, ApprovalConfig};
pub use cache::{Cache, CacheConfig};
pub use circuit_breaker::{BreakerConfig, CircuitBreaker};
pub use context_budget::{ContextBudget, ContextConfig};
pub use contract::Contract;
pub use cross_check::{CrossCheck, CrossCheckConfig};
pub use fallback::{Fallback, FallbackConfig, Route};
pub use guardrail::{Guardrail, GuardrailConfig, Rule};
pub use idempotency::{Idempotency, idempotency_key};
pub use loop_detector::{LoopConfig, LoopDetector};
pub use retry::{Backoff, Jitter, Retry, RetryBudget, RetryConfig, WriteRetry};
pub use speak::Speak;
pub use timeout::{Timeout, TimeoutConfig};
pub use verify_write::{VerifyWrite, VerifyWriteConfig, WriteCheck};
