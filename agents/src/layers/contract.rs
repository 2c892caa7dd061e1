//! Checks tool responses against the tool's schema before the planner reads them.
//!
//! A response that breaks its documented schema (a missing field, a number sent
//! as the string `"4,250"`, a truncated or non-JSON body) is data a model will
//! happily misread. This layer turns every such response into a typed error,
//! `502 contract violation: <what is wrong>`, so it reaches the planner as a
//! failure, never as data. Placed planner-side of a retry layer it reports the
//! violation after the retries; placed tool-side of it (listed after it), the 502
//! is transient and the retry layer retries it.
//!
//! Each violation is noted as `("contract", "violation", {tool, detail})`.

use agentsim_engine::{Action, Agent, AgentCx, Input, Reply, ToolResult, Value};

use crate::catalog;

/// The status a contract violation is reported with: a bad gateway, as a proxy
/// would report an upstream that answered off-protocol.
pub const CONTRACT_STATUS: u16 = 502;

/// A stack layer that turns malformed responses into typed errors.
pub struct Contract {
    inner: Box<dyn Agent>,
}

impl Contract {
    /// Wraps `inner`. The layer draws no randomness.
    pub fn new(inner: Box<dyn Agent>) -> Self {
        Self { inner }
    }
}

/// What is wrong with a malformed reply, or `None` when it is well formed (or not a
/// 200 at all).
fn violation(result: &ToolResult, cx: &AgentCx<'_>) -> Option<String> {
    if !catalog::malformed(cx.catalog, result.call.tool, cx.now_ms, &result.reply) {
        return None;
    }
    match &result.reply {
        Reply::Ok(body) => Some(
            cx.catalog
                .check_response(result.call.tool, cx.now_ms, body)
                .err()
                .map_or_else(|| "unknown tool".into(), |e| e.to_string()),
        ),
        _ => Some("the body does not parse".into()),
    }
}

impl Agent for Contract {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let input = match input {
            Input::Tool(result) => match violation(&result, cx) {
                Some(detail) => {
                    let tool = catalog::name(cx.catalog, result.call.tool);
                    cx.note(
                        "contract",
                        "violation",
                        Value::map([("tool", Value::str(tool)), ("detail", Value::str(detail.clone()))]),
                    );
                    let reply = Reply::Error {
                        status: CONTRACT_STATUS,
                        retry_after_ms: None,
                        message: format!("contract violation: {detail}"),
                    };
                    Input::Tool(ToolResult { reply, ..result })
                }
                None => Input::Tool(result),
            },
            other => other,
        };
        self.inner.step(input, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup, ok, order_body, reply, step};

    #[test]
    fn malformed_data_arrives_as_a_typed_error() {
        let catalog = testkit::catalog();
        let call = lookup("o-1");
        let mut wrong_type = order_body("o-1", 4_250);
        wrong_type.set("total_cents", Value::str("4,250"));
        for input in [ok(&call, wrong_type), reply(&call, Reply::Garbled("{\"ord".into()))] {
            let (inner, seen) = Script::always(testkit::idle());
            let mut layer = Contract::new(inner);
            let s = step(&mut layer, &catalog, 0, input);
            assert_eq!(s.notes[0].what, "violation");
            let seen = testkit::seen(&seen);
            let Input::Tool(r) = &seen[0] else { panic!() };
            assert_eq!(r.reply.status(), CONTRACT_STATUS);
            assert!(r.reply.is_transient());
        }
        // Well-formed data and errors pass untouched.
        let (inner, seen) = Script::always(testkit::idle());
        let mut layer = Contract::new(inner);
        let good = ok(&call, order_body("o-1", 4_250));
        assert!(step(&mut layer, &catalog, 0, good.clone()).notes.is_empty());
        assert_eq!(testkit::seen(&seen)[0], good);
    }
}
