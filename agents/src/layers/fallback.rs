//! Sends a failed call to an alternate tool.
//!
//! When a call to a tool with a route fails transiently (5xx, 429, timeout) or
//! answers off-schema, this layer sends the same arguments (and idempotency key)
//! to the route's alternate tool, once, and hands the planner the alternate's
//! answer as the answer to its call. The alternate must accept the same
//! arguments and answer in the same schema (a replica, a secondary provider, a
//! read-only mirror). Placed planner-side of a retry layer (listed before it),
//! the fallback happens after the retries of the primary are spent.
//!
//! Each fallback is noted as `("fallback", "rerouted", {from, to, status})`.

use agentsim_engine::{Action, Agent, AgentCx, Input, ToolCall, ToolResult, Value};
use serde::{Deserialize, Serialize};

use crate::{catalog, notes};

/// A primary tool and its alternate, by name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The primary tool.
    pub from: String,
    /// The alternate tool with the same arguments and schema.
    pub to: String,
}

/// Where the [`Fallback`] layer reroutes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FallbackConfig {
    /// The routes (default none).
    pub routes: Vec<Route>,
}

/// A stack layer that reroutes failed calls to alternate tools.
pub struct Fallback {
    inner: Box<dyn Agent>,
    config: FallbackConfig,
    /// The planner's call whose alternate is out, awaiting its answer.
    rerouted: Option<ToolCall>,
}

impl Fallback {
    /// Wraps `inner`. The layer draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: FallbackConfig) -> Self {
        Self { inner, config, rerouted: None }
    }

    /// The alternate call for a failed `result`, if its tool has a route.
    fn alternate(&self, result: &ToolResult, cx: &AgentCx<'_>) -> Option<ToolCall> {
        let tool = result.call.tool;
        let failed = result.reply.is_transient() || catalog::malformed(cx.catalog, tool, cx.now_ms, &result.reply);
        if !failed {
            return None;
        }
        let name = catalog::name(cx.catalog, tool);
        let route = self.config.routes.iter().find(|r| r.from == name)?;
        let to = cx.catalog.id(&route.to)?;
        Some(ToolCall { tool: to, ..result.call.clone() })
    }
}

impl Agent for Fallback {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let input = match input {
            Input::Tool(result) => match self.rerouted.take() {
                // The alternate's answer, handed over as the answer to the planner's call.
                Some(original) if result.call.tool != original.tool => {
                    Input::Tool(ToolResult { call: original, ..result })
                }
                _ => match self.alternate(&result, cx) {
                    Some(alternate) => {
                        cx.note(
                            "fallback",
                            "rerouted",
                            Value::map([
                                ("from", Value::str(catalog::name(cx.catalog, result.call.tool))),
                                ("to", Value::str(catalog::name(cx.catalog, alternate.tool))),
                                ("status", notes::int(u64::from(result.reply.status()))),
                            ]),
                        );
                        self.rerouted = Some(result.call);
                        return Action::Call(alternate);
                    }
                    None => Input::Tool(result),
                },
            },
            other => {
                self.rerouted = None;
                other
            }
        };
        self.inner.step(input, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, NEWS, Script, error, lookup, ok, order_body, step};

    #[test]
    fn a_failed_call_goes_to_the_alternate_once() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let config = FallbackConfig { routes: vec![Route { from: "lookup_order".into(), to: "list_news".into() }] };
        let (inner, seen) = Script::always(testkit::idle());
        let mut layer = Fallback::new(inner, config);
        let s = step(&mut layer, &catalog, 0, error(&call, 503, None));
        let Action::Call(alt) = s.action else { panic!("{:?}", s.action) };
        assert_eq!(alt.tool, NEWS);
        assert_eq!(alt.args, call.args);
        assert_eq!(s.notes[0].what, "rerouted");
        assert!(testkit::seen(&seen).is_empty(), "the planner has not heard of the 503");
        // The alternate's answer reaches the planner as the answer to its call.
        step(&mut layer, &catalog, 10, ok(&alt, order_body("o-1", 5)));
        let Some(Input::Tool(r)) = testkit::seen(&seen).last().cloned() else { panic!() };
        assert_eq!(r.call, call);
        assert!(r.reply.is_ok());
        // A 404 is not rerouted; neither is a tool without a route.
        step(&mut layer, &catalog, 20, error(&call, 404, None));
        assert_eq!(testkit::seen(&seen).len(), 2);
    }
}
