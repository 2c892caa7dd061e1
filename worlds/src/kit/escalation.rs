//! What a world's `escalate` tool does: the case goes to a human. The same in
//! every world, so that a trajectory's `escalated` note and the ticket the agent
//! reads do not depend on which world it ran in.

use agentsim_engine::{ToolCall, Value, WorldCx};

/// Hands the case over: notes `escalated` with the reason given (null when
/// none), and answers with the ticket. The world keeps that it was escalated
/// itself, since its judge reports it in the verdict.
pub fn escalate<E>(call: &ToolCall, cx: &mut WorldCx<'_, E>) -> Value {
    cx.note("escalated", call.args.get("reason").cloned().unwrap_or_default());
    Value::map([("ticket_id", Value::str("T-1"))])
}
