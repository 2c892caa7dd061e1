//! A model as the judge of what the rules reader cannot decide
//! (`--judge llm:MODEL`, docs/conversation.md and docs/llm.md).
//!
//! The world asks it about one message at a time: the system message says
//! what to read and the JSON shape to answer in ([`SYSTEM_PROMPT`]); the user
//! message holds the customer's facts and the agent's words. Its requests go
//! through the same client as the agent's and the user's: the same cassette,
//! keyed by the canonical hash of the request (a judge's request has no
//! `tools` and its own system prompt, so its keys are its own), the same
//! retries of the provider's failures. An answer that is not the JSON asked
//! is the judge's failure: the reading stays uncertain, never success.

use agentsim_engine::{JudgeAnswer, ReadingJudge};
use serde_json::{Value as Json, json};

use super::answer::{AnswerError, AnswerErrorKind};
use super::{LlmConfig, client, request};

/// What the judge is told: the task and the fixed shape of its answer.
pub const SYSTEM_PROMPT: &str = "You read one message that a customer-support agent wrote to a customer, and say what it tells the customer about the customer's request. \
Answer with one JSON object and nothing else, exactly of this shape:\n\
{\"done\": true | false | null, \"amount_cents\": integer | null, \"order_id\": string | null, \"item\": string | null}\n\
- done: true if the message states that the requested action (the refund) has been done; false if it says it was not done, will be done later, would have been done, only proposes or asks, or is unsure; null if you cannot tell.\n\
- amount_cents: the amount the message says was refunded, in cents ($89.00 is 8900); null if it names none.\n\
- order_id: the order the message says the refund was for; null if it names none.\n\
- item: the item the message says was refunded; null if it names none.\n\
Read only what the message says; do not assume the customer's facts are what it says.";

/// A model that reads messages, with its endpoint and sampling.
pub struct LlmJudge {
    /// The model, its sampling and its endpoint (`system`, when not empty,
    /// replaces [`SYSTEM_PROMPT`]).
    pub config: LlmConfig,
}

/// The request's messages for `text` read against `facts`.
pub fn messages(system: &str, text: &str, facts: &[(String, String)]) -> Vec<Json> {
    let mut user = String::from("The customer's facts:\n");
    for (name, value) in facts {
        user.push_str(&format!("- {name}: {value}\n"));
    }
    user.push_str("\nThe agent's message:\n");
    user.push_str(text);
    vec![json!({"role": "system", "content": system}), json!({"role": "user", "content": user})]
}

/// The judge's words: the answer's text (nothing said is malformed, and
/// retried).
fn read_words(response: &Json) -> Result<String, AnswerError> {
    let text = response.pointer("/choices/0/message/content").and_then(Json::as_str).unwrap_or_default();
    if text.trim().is_empty() {
        return Err(AnswerError {
            kind: AnswerErrorKind::Silent,
            field: Some("choices[0].message.content".into()),
            message: "the judge's answer says nothing".into(),
        });
    }
    Ok(text.to_string())
}

/// Reads the JSON object of the judge's words (inside a code fence, or
/// between other words, its outermost braces): `Err` says why it is not the
/// shape asked.
pub fn parse(words: &str) -> Result<JudgeAnswer, String> {
    let (Some(start), Some(end)) = (words.find('{'), words.rfind('}')) else {
        return Err("its answer holds no JSON object".to_string());
    };
    if end < start {
        return Err("its answer holds no JSON object".to_string());
    }
    let object: Json =
        serde_json::from_str(&words[start..=end]).map_err(|e| format!("its answer is not the JSON asked: {e}"))?;
    let field = |name: &str| object.get(name).filter(|v| !v.is_null());
    let wrong = |name: &str, expected: &str| format!("its answer's `{name}` is not {expected}");
    let done = match field("done") {
        None => None,
        Some(v) => Some(v.as_bool().ok_or_else(|| wrong("done", "true, false or null"))?),
    };
    let amount_cents = match field("amount_cents") {
        None => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| wrong("amount_cents", "an integer or null"))?),
    };
    let text_of = |name: &str| -> Result<Option<String>, String> {
        match field(name) {
            None => Ok(None),
            Some(v) => v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| wrong(name, "a string or null")),
        }
    };
    Ok(JudgeAnswer {
        done,
        amount_cents,
        order_id: text_of("order_id")?,
        item: text_of("item")?,
        key: String::new(),
        retries: Vec::new(),
    })
}

impl ReadingJudge for LlmJudge {
    fn read(&self, text: &str, facts: &[(String, String)]) -> Result<JudgeAnswer, String> {
        let system = if self.config.system.trim().is_empty() { SYSTEM_PROMPT } else { self.config.system.as_str() };
        let body = request::user_body(&self.config, &messages(system, text, facts));
        let asked = client::ask_with(&self.config.endpoint, &body, read_words).map_err(|e| e.reason)?;
        let mut answer = parse(&asked.answer).map_err(|why| format!("request {}: {why}", asked.key))?;
        answer.key = asked.key;
        answer.retries = asked.retries.iter().map(|why| client::retry_kind(why).to_string()).collect();
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_asked_is_read_and_anything_else_refused() {
        let a = parse(r#"{"done": true, "amount_cents": 8900, "order_id": "A1002", "item": null}"#).unwrap();
        assert_eq!(
            (a.done, a.amount_cents, a.order_id.as_deref(), a.item),
            (Some(true), Some(8900), Some("A1002"), None)
        );
        let fenced = parse("```json\n{\"done\": false}\n```").unwrap();
        assert_eq!((fenced.done, fenced.amount_cents), (Some(false), None));
        assert!(parse(r#"{"done": "yes"}"#).is_err());
        assert!(parse(r#"{"amount_cents": 89.5}"#).is_err());
        assert!(parse("I think so.").is_err());
        assert!(parse("} {").is_err());
    }

    #[test]
    fn the_request_holds_the_facts_and_the_message() {
        let facts = [("order_id".to_string(), "A1002".to_string())];
        let m = messages(SYSTEM_PROMPT, "Refund: $89.00.", &facts);
        assert_eq!(m[0]["role"], "system");
        let user = m[1]["content"].as_str().unwrap();
        assert!(user.contains("- order_id: A1002") && user.ends_with("Refund: $89.00."), "{user}");
    }
}
