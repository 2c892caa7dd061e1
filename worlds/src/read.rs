//! Reading tool results the way a planner's lens says, shared by the experts of
//! the newer worlds: fields by their documented names followed through drift;
//! strictly typed when the planner validates, leniently when it trusts the data.

use agentsim_engine::{AgentCx, Reply, ToolId, ToolResult, Value};

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
        Reply::Ok(body) if !cx.lens.validate || cx.catalog.check_response(r.call.tool, cx.now_ms, body).is_ok() => {
            Some(body)
        }
        _ => None,
    }
}

/// A string argument of a call ("" when absent).
pub fn arg_str<'v>(args: &'v Value, name: &str) -> &'v str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}
