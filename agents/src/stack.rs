//! Stack specifications: which planner, which layers, in which order; and building
//! the agent they describe.
//!
//! Specs are plain data (serde, unknown fields refused) so that stack files in RON
//! can name them. With the newtype variants unwrapped, as the CLI reads them, and
//! every omitted field at its default:
//!
//! ```ron
//! (
//!     planner: Noisy(misread_id: 0.05),
//!     layers: [Guardrail(), LoopDetector(), Idempotency, Retry(attempts_max: 5)],
//! )
//! ```

use agentsim_engine::{Agent, Catalog, StreamSource};
use serde::{Deserialize, Serialize};

use crate::external::replayed::{RecordedStep, ReplayedAgent, session_steps};
use crate::external::{ExternalAgent, ExternalConfig};
use crate::layers::{
    Approval, ApprovalConfig, BreakerConfig, Cache, CacheConfig, CircuitBreaker, ContextBudget, ContextConfig,
    Contract, CrossCheck, CrossCheckConfig, Fallback, FallbackConfig, Guardrail, GuardrailConfig, Idempotency,
    LoopConfig, LoopDetector, Retry, RetryConfig, Speak, Timeout, TimeoutConfig, VerifyWrite, VerifyWriteConfig,
};
use crate::llm::{LlmAgent, LlmConfig};
use crate::noisy::{NoisyConfig, NoisyPlanner};

/// The planner at the core of a stack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PlannerSpec {
    /// The world's expert as is: the upper bound.
    Oracle,
    /// The expert making an LLM's mistakes at these rates.
    Noisy(NoisyConfig),
    /// An external process (`--agent cmd:COMMAND`); the expert is not used. Never
    /// read from a stack file: files are data and cannot start processes.
    #[serde(skip_deserializing)]
    External(ExternalConfig),
    /// An external agent played back from its recorded steps (what incidents store,
    /// so they replay without the agent).
    Replayed(Vec<RecordedStep>),
    /// A model behind an OpenAI-compatible endpoint (`--agent llm:MODEL`, or
    /// `Llm(model: "...")` in a stack file); the expert is not used. Where it
    /// is served comes from the command line ([`crate::llm::Endpoint`]).
    Llm(LlmConfig),
}

/// One layer of a stack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LayerSpec {
    /// Retries transient failures with backoff ([`Retry`]).
    Retry(RetryConfig),
    /// Blocks, then halts, a planner in a loop ([`LoopDetector`]).
    LoopDetector(LoopConfig),
    /// Refuses calls breaking documented tool rules ([`Guardrail`]).
    Guardrail(GuardrailConfig),
    /// Adds idempotency keys to writes ([`Idempotency`]): the same write gets
    /// the same key from every agent.
    Idempotency,
    /// A virtual-time deadline on every call ([`Timeout`]).
    Timeout(TimeoutConfig),
    /// Per-tool circuits: closed, open, half-open ([`CircuitBreaker`]).
    CircuitBreaker(BreakerConfig),
    /// Caches reads with a TTL, serves stale entries flagged ([`Cache`]).
    Cache(CacheConfig),
    /// Reroutes failed calls to alternate tools ([`Fallback`]).
    Fallback(FallbackConfig),
    /// Turns malformed responses into typed errors ([`Contract`]).
    Contract,
    /// Holds writes for a simulated human's approval ([`Approval`]).
    Approval(ApprovalConfig),
    /// Evicts old observations past a token budget ([`ContextBudget`]).
    ContextBudget(ContextConfig),
    /// Confirms reads by reading again ([`CrossCheck`]).
    CrossCheck(CrossCheckConfig),
    /// Reads a record back after writing to it; completes a partial write and
    /// escalates a duplicated one ([`VerifyWrite`]).
    VerifyWrite(VerifyWriteConfig),
    /// Says the planner's structured messages to the user in words ([`Speak`]);
    /// place it last (outermost).
    Speak,
    /// Adds idempotency keys of this agent's own to writes
    /// ([`Idempotency::per_agent`]): retries share a key, other agents' (other
    /// sessions') copies of the same write do not.
    IdempotencyPerAgent,
}

impl LayerSpec {
    /// The layer's name: its stream is `stack.NAME`.
    pub fn name(&self) -> &'static str {
        match self {
            LayerSpec::Retry(_) => "retry",
            LayerSpec::LoopDetector(_) => "loop_detector",
            LayerSpec::Guardrail(_) => "guardrail",
            LayerSpec::Idempotency => "idempotency",
            LayerSpec::IdempotencyPerAgent => "idempotency_per_agent",
            LayerSpec::Timeout(_) => "timeout",
            LayerSpec::CircuitBreaker(_) => "circuit_breaker",
            LayerSpec::Cache(_) => "cache",
            LayerSpec::Fallback(_) => "fallback",
            LayerSpec::Contract => "contract",
            LayerSpec::Approval(_) => "approval",
            LayerSpec::ContextBudget(_) => "context_budget",
            LayerSpec::CrossCheck(_) => "cross_check",
            LayerSpec::VerifyWrite(_) => "verify_write",
            LayerSpec::Speak => "speak",
        }
    }
}

/// The most layers a stack may have: each layer is a frame on the stack of every
/// step (10,000 overflowed it), and real stacks have about ten.
pub const LAYERS_MAX: usize = 64;
/// The most attempts per call a `Retry` layer may make (`attempts_max`).
pub const ATTEMPTS_MAX: u32 = 100;
/// The most entries a `Cache` layer may keep, and the largest circuit breaker
/// `window`: both are kept in memory and searched on every call.
pub const ENTRIES_MAX: u32 = 10_000;

/// A planner and its stack of layers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackSpec {
    /// The planner.
    pub planner: PlannerSpec,
    /// The layers, **from the planner outward**: `layers[0]` wraps the planner, the
    /// last layer is the one closest to the tools.
    #[serde(default)]
    pub layers: Vec<LayerSpec>,
}

impl StackSpec {
    /// Builds the agent: the planner around `expert`, then each layer around what
    /// is built so far, in list order. The planner draws from stream `"planner"`;
    /// each layer that draws uses `"stack.NAME"` (`"stack.retry"`), with `.2`, `.3`,
    /// ... appended for a second or third layer of the same kind, so that two layers
    /// never share draws.
    pub fn build(&self, expert: Box<dyn Agent>, streams: &StreamSource) -> Box<dyn Agent> {
        let planner: Box<dyn Agent> = match &self.planner {
            PlannerSpec::Oracle => expert,
            PlannerSpec::Noisy(config) => {
                Box::new(NoisyPlanner::new(expert, config.clone(), streams.agent_stream("planner")))
            }
            PlannerSpec::External(config) => Box::new(ExternalAgent::new(config.clone())),
            PlannerSpec::Replayed(steps) => Box::new(ReplayedAgent::new(session_steps(steps, streams.session()))),
            PlannerSpec::Llm(config) => Box::new(LlmAgent::new(config.clone())),
        };
        self.wrap(planner, streams)
    }

    /// Wraps `planner` (any agent: the one this spec names, or one that lives
    /// elsewhere, such as an MCP client) in this spec's layers, in list order,
    /// with the streams [`StackSpec::build`] gives them.
    pub fn wrap(&self, planner: Box<dyn Agent>, streams: &StreamSource) -> Box<dyn Agent> {
        let mut agent = planner;
        for (i, layer) in self.layers.iter().enumerate() {
            let stream = || streams.agent_stream(&self.stream_name(i));
            agent = match layer {
                LayerSpec::Retry(config) => Box::new(Retry::new(agent, config.clone(), stream())),
                LayerSpec::LoopDetector(config) => Box::new(LoopDetector::new(agent, config.clone())),
                LayerSpec::Guardrail(config) => Box::new(Guardrail::new(agent, config.clone())),
                LayerSpec::Idempotency => Box::new(Idempotency::new(agent)),
                LayerSpec::IdempotencyPerAgent => Box::new(Idempotency::per_agent(agent, stream().next_u64())),
                LayerSpec::Timeout(config) => Box::new(Timeout::new(agent, config.clone())),
                LayerSpec::CircuitBreaker(config) => Box::new(CircuitBreaker::new(agent, config.clone())),
                LayerSpec::Cache(config) => Box::new(Cache::new(agent, config.clone())),
                LayerSpec::Fallback(config) => Box::new(Fallback::new(agent, config.clone())),
                LayerSpec::Contract => Box::new(Contract::new(agent)),
                LayerSpec::Approval(config) => Box::new(Approval::new(agent, config.clone(), stream())),
                LayerSpec::ContextBudget(config) => Box::new(ContextBudget::new(agent, config.clone())),
                LayerSpec::CrossCheck(config) => Box::new(CrossCheck::new(agent, config.clone())),
                LayerSpec::VerifyWrite(config) => Box::new(VerifyWrite::new(agent, config.clone())),
                LayerSpec::Speak => Box::new(Speak::new(agent)),
            };
        }
        agent
    }

    /// Tool names the stack mentions that `catalog` lacks (a guardrail's
    /// `forbidden_tools` and rules, a fallback's routes, the tool lists of the
    /// breaker, cache and approval gate), in order of appearance, for validating a
    /// stack file against a scenario. Building never fails on them: at run time
    /// they are inert.
    pub fn unknown_tools(&self, catalog: &Catalog) -> Vec<String> {
        self.unknown_tool_fields(catalog).into_iter().map(|u| u.tool).collect()
    }

    /// [`StackSpec::unknown_tools`], each with the layer and the field that
    /// names it (its first mention), so that an error can point at it.
    pub fn unknown_tool_fields(&self, catalog: &Catalog) -> Vec<UnknownTool> {
        let mut unknown: Vec<UnknownTool> = Vec::new();
        for (index, layer) in self.layers.iter().enumerate() {
            let Some((kind, fields)) = tool_fields(layer) else { continue };
            let nth =
                1 + self.layers[..index].iter().filter(|l| tool_fields(l).is_some_and(|(k, _)| k == kind)).count();
            for (field, name) in fields {
                if catalog.id(name).is_none() && !unknown.iter().any(|u| u.tool == name) {
                    unknown.push(UnknownTool { layer: kind, nth, field, tool: name.to_string() });
                }
            }
        }
        unknown
    }

    /// Write tools that a `Cache` layer names in its `tools` (a cache answers only
    /// reads: naming a write there does nothing, and suggests a mistake), as
    /// (the cache's 1-based rank among the stack's caches, tool name).
    pub fn cached_writes(&self, catalog: &Catalog) -> Vec<(usize, String)> {
        let caches = self.layers.iter().filter_map(|l| match l {
            LayerSpec::Cache(config) => Some(config),
            _ => None,
        });
        let mut found = Vec::new();
        for (i, config) in caches.enumerate() {
            for name in &config.tools {
                let write = catalog
                    .id(name)
                    .and_then(|id| crate::catalog::def(catalog, id))
                    .is_some_and(|def| def.kind == agentsim_engine::ToolKind::Write);
                if write {
                    found.push((i + 1, name.clone()));
                }
            }
        }
        found
    }

    /// The stream name of layer `index`: `stack.NAME`, or `stack.NAME.K` for the
    /// K-th layer of that kind (K ≥ 2).
    pub fn stream_name(&self, index: usize) -> String {
        let Some(layer) = self.layers.get(index) else {
            return String::from("stack");
        };
        let same_kind_before = self.layers[..index].iter().filter(|l| l.name() == layer.name()).count();
        // Pushed, not `format!`ed: every trajectory builds its stack.
        let mut name = String::with_capacity(32);
        name.push_str("stack.");
        name.push_str(layer.name());
        if same_kind_before > 0 {
            name.push('.');
            name.push_str(itoa::Buffer::new().format(same_kind_before + 1));
        }
        name
    }
}

/// A tool name a stack mentions that the scenario lacks, and where the stack
/// names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTool {
    /// The layer, as a stack file writes it (`Fallback`, `Guardrail`).
    pub layer: &'static str,
    /// The layer's 1-based rank among the stack's layers of that kind.
    pub nth: usize,
    /// The field that names the tool, as a stack file writes it (`to`,
    /// `forbidden_tools`, `required`).
    pub field: &'static str,
    /// The tool's name.
    pub tool: String,
}

/// The layer's name as a stack file writes it and the tool names it mentions,
/// each with its field; `None` for a layer that names no tool.
fn tool_fields(layer: &LayerSpec) -> Option<(&'static str, Vec<(&'static str, &str)>)> {
    fn list<'a>(field: &'static str, tools: &'a [String]) -> Vec<(&'static str, &'a str)> {
        tools.iter().map(|t| (field, t.as_str())).collect()
    }
    Some(match layer {
        LayerSpec::Guardrail(config) => {
            let mut fields = list("forbidden_tools", &config.forbidden_tools);
            fields.extend(config.rules.iter().flat_map(|r| r.tool_fields()));
            ("Guardrail", fields)
        }
        LayerSpec::Fallback(config) => (
            "Fallback",
            config.routes.iter().flat_map(|r| [("from", r.from.as_str()), ("to", r.to.as_str())]).collect(),
        ),
        LayerSpec::CircuitBreaker(config) => ("CircuitBreaker", list("tools", &config.tools)),
        LayerSpec::Cache(config) => ("Cache", list("tools", &config.tools)),
        LayerSpec::Approval(config) => ("Approval", list("tools", &config.tools)),
        LayerSpec::CrossCheck(config) => ("CrossCheck", list("tools", &config.tools)),
        LayerSpec::VerifyWrite(config) => {
            let mut fields: Vec<(&'static str, &str)> =
                config.checks.iter().flat_map(|c| [("write", c.write.as_str()), ("read", c.read.as_str())]).collect();
            // The default `escalate` may be missing: the layer then only stops.
            if config.escalate != VerifyWriteConfig::default().escalate {
                fields.push(("escalate", config.escalate.as_str()));
            }
            ("VerifyWrite", fields)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, error, lookup, refund, step};
    use agentsim_engine::{Action, Input};

    #[test]
    fn oracle_without_layers_is_the_expert() {
        let catalog = testkit::catalog();
        let spec = StackSpec { planner: PlannerSpec::Oracle, layers: vec![] };
        let (expert, seen) = Script::always(Action::Call(lookup("o-1")));
        let mut agent = spec.build(expert, &testkit::streams(1));
        assert_eq!(step(&mut agent, &catalog, 0, testkit::user("hi")).action, Action::Call(lookup("o-1")));
        assert_eq!(testkit::seen(&seen).len(), 1);
    }

    #[test]
    fn layers_wrap_from_the_planner_outward() {
        let catalog = testkit::catalog();
        // Idempotency inside retry: the retried write carries the key.
        let spec = StackSpec {
            planner: PlannerSpec::Oracle,
            layers: vec![LayerSpec::Idempotency, LayerSpec::Retry(RetryConfig::default())],
        };
        let (expert, seen) = Script::new([Action::Call(refund("o-1", 100))], testkit::idle());
        let mut agent = spec.build(expert, &testkit::streams(1));
        let Action::Call(sent) = step(&mut agent, &catalog, 0, testkit::user("hi")).action else { panic!() };
        assert!(sent.idempotency_key.is_some());
        let s = step(&mut agent, &catalog, 10, testkit::reply(&sent, agentsim_engine::Reply::Timeout));
        let Action::Sleep { until_ms } = s.action else { panic!("a keyed write is retried: {:?}", s.action) };
        assert_eq!(step(&mut agent, &catalog, until_ms, Input::Wake).action, Action::Call(sent.clone()));
        assert_eq!(testkit::seen(&seen).len(), 1);

        // The other way round the retry layer sees a write without a key and passes
        // the timeout to the planner.
        let spec = StackSpec { layers: spec.layers.into_iter().rev().collect(), ..spec };
        let (expert, seen) = Script::new([Action::Call(refund("o-1", 100))], testkit::idle());
        let mut agent = spec.build(expert, &testkit::streams(1));
        let Action::Call(sent) = step(&mut agent, &catalog, 0, testkit::user("hi")).action else { panic!() };
        step(&mut agent, &catalog, 10, testkit::reply(&sent, agentsim_engine::Reply::Timeout));
        assert_eq!(testkit::seen(&seen).len(), 2);
    }

    #[test]
    fn unknown_tools_are_reported() {
        let guardrail = |names: &[&str]| {
            LayerSpec::Guardrail(GuardrailConfig {
                forbidden_tools: names.iter().map(|n| n.to_string()).collect(),
                ..GuardrailConfig::default()
            })
        };
        let spec = StackSpec {
            planner: PlannerSpec::Oracle,
            layers: vec![guardrail(&["lookup_order", "nope"]), guardrail(&["nope", "nada"])],
        };
        assert_eq!(spec.unknown_tools(&testkit::catalog()), ["nope", "nada"]);
    }

    #[test]
    fn stream_names() {
        let spec = StackSpec {
            planner: PlannerSpec::Oracle,
            layers: vec![
                LayerSpec::Retry(RetryConfig::default()),
                LayerSpec::Idempotency,
                LayerSpec::Retry(RetryConfig::default()),
            ],
        };
        let names: Vec<String> = (0..4).map(|i| spec.stream_name(i)).collect();
        assert_eq!(names, ["stack.retry", "stack.idempotency", "stack.retry.2", "stack"]);
    }

    #[test]
    fn noisy_planner_uses_its_stream() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let spec = StackSpec {
            planner: PlannerSpec::Noisy(NoisyConfig {
                repeat_failing: agentsim_engine::Probability::ONE,
                ..NoisyConfig::perfect()
            }),
            layers: vec![LayerSpec::LoopDetector(LoopConfig::default())],
        };
        let (expert, _) = Script::always(Action::Call(call.clone()));
        let mut agent = spec.build(expert, &testkit::streams(1));
        step(&mut agent, &catalog, 0, testkit::user("hi"));
        // Stuck repeating; the loop detector blocks the third failure, halts the sixth.
        let actions: Vec<Action> =
            (0..6).map(|i| step(&mut agent, &catalog, i, error(&call, 401, None)).action).collect();
        assert!(actions[..5].iter().all(|a| *a == Action::Call(call.clone())));
        assert!(matches!(actions[5], Action::Finish(agentsim_engine::Finish::Halted { .. })));
    }
}
