//! Required arguments of a tool call, as every world's service reads them: a
//! missing or mistyped argument is the caller's fault, so it is a 400 that names
//! the argument, worded the same in every world.

use agentsim_engine::{ToolError, Value};

/// The string argument `name`, or a 400 saying it must be a string.
pub fn str_arg<'v>(args: &'v Value, name: &str) -> Result<&'v str, ToolError> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| ToolError::bad_request(format!("`{name}` must be a string")))
}

/// The integer argument `name`, or a 400 saying it must be an integer. Strict
/// (no lenient reading of "12" as 12): a service validates what it is sent.
pub fn int_arg(args: &Value, name: &str) -> Result<i64, ToolError> {
    args.get(name).and_then(Value::as_int).ok_or_else(|| ToolError::bad_request(format!("`{name}` must be an integer")))
}

/// The string argument `name`, which must be one of `allowed`, or a 400 naming
/// the allowed values (a declared `enum`: required means required).
pub fn one_of_arg<'v>(args: &'v Value, name: &str, allowed: &[&str]) -> Result<&'v str, ToolError> {
    // The list is written only for the refusal: every well-formed call passes here.
    let list = || allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
    match args.get(name) {
        Some(Value::Str(s)) if allowed.contains(&s.as_str()) => Ok(s),
        Some(Value::Str(s)) => Err(ToolError::bad_request(format!("`{name}` must be one of {}, not `{s}`", list()))),
        _ => Err(ToolError::bad_request(format!("`{name}` is required: one of {}", list()))),
    }
}
