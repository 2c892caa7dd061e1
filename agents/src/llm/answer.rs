//! Reading a Chat Completions answer: its text, its tool calls as actions, and
//! its usage. An answer that cannot be acted on is malformed (and retried).

use agentsim_engine::{Action, Catalog, Finish, Usage};
use serde_json::{Value as Json, json};

use super::FINISH_TOOL;
use crate::external::protocol::{self, ProtocolErrorKind};

/// What kind of malformed answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnswerErrorKind {
    /// The body, or a call's arguments, are not JSON.
    NotJson,
    /// No `choices[0].message`, or a call without its `id`, `function` or name.
    Missing,
    /// A field of another type than Chat Completions says.
    WrongType,
    /// The answer says nothing and calls no tool.
    Silent,
    /// A call that is no valid action (an unknown tool, bad arguments), of
    /// the protocol error's kind.
    InvalidAction(ProtocolErrorKind),
}

/// Why an answer is malformed: its kind, the field of the answer it is about
/// (`tool_calls[0].function.name`), and the message users see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnswerError {
    /// What kind of problem.
    pub kind: AnswerErrorKind,
    /// The field of the answer, when there is one.
    pub field: Option<String>,
    /// The message users see.
    pub message: String,
}

impl AnswerError {
    fn new(kind: AnswerErrorKind, field: Option<&str>, message: impl Into<String>) -> Self {
        Self { kind, field: field.map(str::to_string), message: message.into() }
    }

    /// A body that is not JSON (`reason` is the parser's).
    pub fn not_json(reason: impl std::fmt::Display) -> Self {
        Self::new(AnswerErrorKind::NotJson, None, format!("the body is not JSON: {reason}"))
    }
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AnswerError {}

/// One tool call of an answer, checked against the catalog.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCall {
    /// The provider's id for the call (what the tool's result must name).
    pub id: String,
    /// What to do: a tool call, or the end of the conversation.
    pub action: Action,
}

/// A model's answer, ready to act on.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The assistant message to add to the conversation, rebuilt from the
    /// fields read (so that a provider's extra fields never reach later keys).
    pub message: Json,
    /// The text, when the answer says something (and calls nothing).
    pub text: Option<String>,
    /// The tool calls, in the order the model gave them.
    pub calls: Vec<PlannedCall>,
    /// The tokens used as the answer reports them, or why they cannot be
    /// read (the scenario's estimate then counts, and the trajectory says so).
    pub usage: Result<Usage, String>,
}

/// Reads a response body (parsed JSON) as an [`Answer`]; an error says why it
/// is malformed.
pub fn read(response: &Json, catalog: &Catalog) -> Result<Answer, AnswerError> {
    use AnswerErrorKind as Kind;
    let message = response.pointer("/choices/0/message").and_then(Json::as_object).ok_or_else(|| {
        AnswerError::new(Kind::Missing, Some("choices[0].message"), "no `choices[0].message` in the answer")
    })?;
    let wrong = |name: &str, expected: &str, found: &Json| {
        AnswerError::new(Kind::WrongType, Some(name), format!("`{name}`: expected {expected}, found {found}"))
    };
    let text = match message.get("content") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
        Some(other) => return Err(wrong("content", "a string", other)),
    };
    let raw_calls = match message.get("tool_calls") {
        None | Some(Json::Null) => &[][..],
        Some(Json::Array(calls)) => calls.as_slice(),
        Some(other) => return Err(wrong("tool_calls", "an array", other)),
    };
    let mut calls = Vec::with_capacity(raw_calls.len());
    let mut rebuilt = Vec::with_capacity(raw_calls.len());
    for (i, call) in raw_calls.iter().enumerate() {
        let (planned, json) = read_call(call, i, catalog)?;
        calls.push(planned);
        rebuilt.push(json);
    }
    if text.is_none() && calls.is_empty() {
        return Err(AnswerError::new(Kind::Silent, None, "the answer says nothing and calls no tool"));
    }
    let mut assistant = json!({"role": "assistant", "content": text});
    if !rebuilt.is_empty() {
        assistant["tool_calls"] = Json::Array(rebuilt);
    }
    Ok(Answer { message: assistant, text, calls, usage: usage(response) })
}

/// One tool call: the planned action and the call as the conversation keeps it.
fn read_call(call: &Json, i: usize, catalog: &Catalog) -> Result<(PlannedCall, Json), AnswerError> {
    use AnswerErrorKind as Kind;
    let at = |kind, field: &str, what: &str| {
        let field = if field.is_empty() { format!("tool_calls[{i}]") } else { format!("tool_calls[{i}].{field}") };
        AnswerError::new(kind, Some(&field), format!("`tool_calls[{i}]`: {what}"))
    };
    let id = call.get("id").and_then(Json::as_str).ok_or_else(|| at(Kind::Missing, "id", "no `id`"))?.to_string();
    let function = call.get("function").ok_or_else(|| at(Kind::Missing, "function", "no `function`"))?;
    let name = function
        .get("name")
        .and_then(Json::as_str)
        .ok_or_else(|| at(Kind::Missing, "function.name", "no `function.name`"))?;
    let arguments = match function.get("arguments") {
        None | Some(Json::Null) => "{}".to_string(),
        Some(Json::String(s)) if s.trim().is_empty() => "{}".to_string(),
        Some(Json::String(s)) => s.clone(),
        Some(other) => {
            let what = format!("`arguments`: expected a JSON string, found {other}");
            return Err(at(Kind::WrongType, "function.arguments", &what));
        }
    };
    let args: Json = serde_json::from_str(&arguments).map_err(|e| {
        let what = format!("`{name}`'s arguments are not JSON ({e}): {arguments}");
        at(Kind::NotJson, "function.arguments", &what)
    })?;
    let action = if name == FINISH_TOOL && catalog.id(FINISH_TOOL).is_none() {
        finish(&args)
    } else {
        let decision = json!({"protocol": protocol::PROTOCOL, "action": "call", "tool": name, "args": args});
        protocol::action_of(&decision, catalog)
            .map_err(|e| at(Kind::InvalidAction(e.kind()), "function", e.message()))?
            .0
    };
    let kept = json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}});
    Ok((PlannedCall { id, action }, kept))
}

fn finish(args: &Json) -> Action {
    let reason = args.get("reason").and_then(Json::as_str).unwrap_or_default().to_string();
    match args.get("outcome").and_then(Json::as_str) {
        Some("gave_up") => Action::Finish(Finish::GaveUp { reason }),
        _ => Action::Finish(Finish::Done),
    }
}

/// The answer's `usage`, or why it cannot be read: absent, or a count that
/// is missing or not a whole number (then nothing of it is taken).
fn usage(response: &Json) -> Result<Usage, String> {
    let Some(usage) = response.get("usage").filter(|u| !u.is_null()) else {
        return Err("no `usage` in the answer".into());
    };
    let tokens = |name: &str| match usage.get(name) {
        None | Some(Json::Null) => Err(format!("no `usage.{name}` in the answer")),
        Some(n) => n
            .as_u64()
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
            .ok_or(format!("`usage.{name}` is not a count: {n}")),
    };
    Ok(Usage { prompt_tokens: tokens("prompt_tokens")?, completion_tokens: tokens("completion_tokens")? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    fn answer(message: Json) -> Json {
        json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}})
    }

    #[test]
    fn tool_calls_become_actions_in_order() {
        let catalog = testkit::catalog();
        let a = read(
            &answer(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"o-1\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "end_conversation", "arguments": "{\"outcome\":\"done\"}"}},
            ]})),
            &catalog,
        )
        .unwrap();
        assert_eq!(a.calls[0].action, Action::Call(testkit::lookup("o-1")));
        assert_eq!(a.calls[1].action, Action::Finish(Finish::Done));
        assert_eq!(a.usage, Ok(Usage { prompt_tokens: 10, completion_tokens: 3 }));
        let mut unread = answer(json!({"content": "Hi"}));
        unread["usage"]["completion_tokens"] = json!(-1);
        assert_eq!(read(&unread, &catalog).unwrap().usage, Err("`usage.completion_tokens` is not a count: -1".into()));
        unread.as_object_mut().unwrap().remove("usage");
        assert_eq!(read(&unread, &catalog).unwrap().usage, Err("no `usage` in the answer".into()));
        assert_eq!(a.message["tool_calls"][1]["id"], "c2");
    }

    #[test]
    fn malformed_answers_say_why() {
        let catalog = testkit::catalog();
        let call = |name: &str, args: &str| {
            answer(json!({"tool_calls": [{"id": "c", "function": {"name": name, "arguments": args}}]}))
        };
        for (bad, needle) in [
            (json!({}), "choices"),
            (answer(json!({"content": ""})), "says nothing"),
            (call("nope", "{}"), "unknown tool"),
            (call("lookup_order", "{\"order_id\":"), "not JSON"),
            (call("lookup_order", "[1]"), "expected an object"),
        ] {
            let err = read(&bad, &catalog).unwrap_err();
            assert!(err.message.contains(needle), "{bad}: {err}");
        }
        let err = read(&call("nope", "{}"), &catalog).unwrap_err();
        assert_eq!(err.kind, AnswerErrorKind::InvalidAction(ProtocolErrorKind::Unknown));
        assert_eq!(err.field.as_deref(), Some("tool_calls[0].function"));
        let text = read(&answer(json!({"content": "Which order?"})), &catalog).unwrap();
        assert_eq!(text.text.as_deref(), Some("Which order?"));
    }
}
