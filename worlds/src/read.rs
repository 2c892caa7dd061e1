//! What every world's expert shares: reading tool results the way a planner's
//! lens says (fields by their documented names followed through drift; strictly
//! typed when the planner validates, leniently when it trusts the data), and the
//! failure policy (back off, pause on a loop block, hand over to a human).

use agentsim_engine::{AgentCx, Reply, TimeMs, ToolId, ToolResult, Value};

/// Consecutive failed calls after which an expert hands the case to a human.
pub const ESCALATE_AFTER_FAILURES: u32 = 8;
/// Refusals by the stack after which an expert hands the case to a human.
pub const ESCALATE_AFTER_BLOCKS: u32 = 4;
/// The longest an expert waits before retrying a failed call.
pub const BACKOFF_MS_MAX: TimeMs = 30_000;
/// How long an expert pauses when the stack says it is looping.
pub const LOOP_PAUSE_MS: TimeMs = 20_000;

/// How long an expert waits after its `failures`-th failure in a row: a second,
/// doubling, at most [`BACKOFF_MS_MAX`], and never less than the server's
/// `Retry-After`.
pub fn backoff_ms(failures: u32, reply: &Reply) -> TimeMs {
    let exp = 1_000u64.saturating_mul(1 << failures.saturating_sub(1).min(5));
    exp.min(BACKOFF_MS_MAX).max(reply.retry_after_ms().unwrap_or(0))
}

/// Reads the fields of one tool's response.
pub struct Reader<'a, 'c> {
    /// The step's context (time, catalog, lens).
    pub cx: &'a AgentCx<'c>,
    /// The tool whose response is read.
    pub tool: ToolId,
}

impl Reader<'_, '_> {
    /// The field documented as `name`, under its name at this time.
    pub fn field<'v>(&self, body: &'v Value, name: &str) -> Option<&'v Value> {
        let current = self.cx.catalog.field_name_at(self.tool, name, self.cx.now_ms)?;
        body.get(current)
    }

    /// An integer field (0 when missing or unreadable).
    pub fn int(&self, body: &Value, name: &str) -> i64 {
        let v = self.field(body, name);
        if self.cx.lens.validate {
            v.and_then(Value::as_int).unwrap_or_default()
        } else {
            v.map(Value::lenient_int).unwrap_or(0)
        }
    }

    /// A string field ("" when missing).
    pub fn str(&self, body: &Value, name: &str) -> String {
        self.field(body, name).and_then(Value::as_str).unwrap_or_default().to_string()
    }

    /// A list field (empty when missing).
    pub fn list<'v>(&self, body: &'v Value, name: &str) -> &'v [Value] {
        self.field(body, name).map(Value::as_list).unwrap_or(&[])
    }
}

/// The body of a result the planner accepts: a 200 whose body passes the schema
/// check, or any 200 body when the lens does not validate.
pub fn accepted<'r>(r: &'r ToolResult, cx: &AgentCx<'_>) -> Option<&'r Value> {
    match &r.reply {
        Reply::Ok(body) if !cx.lens.validate || body.conforms(cx.catalog, r.call.tool, cx.now_ms) => Some(body),
        _ => None,
    }
}

/// A string argument of a call ("" when absent).
pub fn arg_str<'v>(args: &'v Value, name: &str) -> &'v str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}
