//! A model as the user (`--user llm:MODEL`, docs/llm.md), as tau2-bench's user
//! simulator prompts one: the system message is tau2's simulation guidelines
//! (`user_guidelines.md`, from tau2-bench, Apache-2.0 / MIT) followed by the
//! task's instructions in `<scenario>` tags; the conversation is seen from the
//! user's side (the agent's words are `user` messages, the model's own
//! `assistant`), opened by the agent's greeting [`GREETING`] as tau2's is; and
//! an answer holding one of [`STOP_TOKENS`] ends the conversation.
//!
//! Its requests go through the same client as the agent's: the same cassette,
//! keys made the same canonical way (a user's request has no `tools`, an
//! agent's always has, so the two never share a key), the same retries of the
//! provider's failures, recorded as the notes `llm_user.retry`, never as the
//! world's faults.

use agentsim_engine::{Message, UserVoice, Value, VoiceCx, VoiceFactory, Voiced};
use serde_json::{Value as Json, json};

use super::answer::{AnswerError, AnswerErrorKind};
use super::client::{self, Asked};
use super::{LlmConfig, request};

/// The note source of the user's requests (`llm_user.answer`, `llm_user.retry`).
pub const NOTE_SOURCE: &str = "llm_user";

/// What the agent is taken to have said first (tau2's default first message).
pub const GREETING: &str = "Hi! How can I help you today?";

/// Tokens that end the conversation (tau2's stop, transfer and out-of-scope).
pub const STOP_TOKENS: [&str; 3] = ["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"];

/// tau2's user simulation guidelines, the first part of the system prompt.
pub const GUIDELINES: &str = include_str!("user_guidelines.md");

/// The system prompt for `instructions`: tau2's layout.
pub fn system_prompt(instructions: &str) -> String {
    format!("{}\n\n<scenario>\n{}\n</scenario>", GUIDELINES.trim(), instructions.trim())
}

/// The instructions of a world that gives none: its user's opening words
/// and the facts they carry.
pub fn instructions_of(opening: &Message) -> String {
    let mut out = format!("Instructions:\n\tReason for call:\n\t\t{}\n", opening.text.trim());
    if let Value::Map(pairs) = &opening.content
        && !pairs.is_empty()
    {
        out.push_str("\tKnown info:\n");
        for (name, value) in pairs {
            let shown = value.as_str().map_or_else(|| value.render(), str::to_string);
            out.push_str(&format!("\t\t{name}: {shown}\n"));
        }
    }
    out
}

/// Makes the voice of each episode from one model's config.
pub struct LlmUserFactory {
    /// The model, its sampling and its endpoint; `system`, when not empty,
    /// replaces the world's instructions.
    pub config: LlmConfig,
}

impl VoiceFactory for LlmUserFactory {
    fn voice(&self, instructions: Option<String>) -> Box<dyn UserVoice> {
        let own = (!self.config.system.trim().is_empty()).then(|| self.config.system.clone());
        Box::new(LlmUser { config: self.config.clone(), instructions: own.or(instructions), messages: Vec::new() })
    }
}

/// One episode's user, played by a model.
pub struct LlmUser {
    config: LlmConfig,
    /// The task's instructions; `None` until the opening gives them (a world
    /// without its own).
    instructions: Option<String>,
    /// The conversation from the user's side, the system message first.
    messages: Vec<Json>,
}

impl LlmUser {
    fn open(&mut self, rules: &Message) {
        let instructions = self.instructions.take().unwrap_or_else(|| instructions_of(rules));
        self.messages.push(json!({"role": "system", "content": system_prompt(&instructions)}));
        self.messages.push(json!({"role": "user", "content": GREETING}));
    }
}

/// The user's words in an answer: its text (a tool call or nothing said is
/// malformed, and retried).
fn read_words(response: &Json) -> Result<String, AnswerError> {
    let message = response.pointer("/choices/0/message");
    let text = message.and_then(|m| m.get("content")).and_then(Json::as_str).unwrap_or_default();
    if text.trim().is_empty() {
        return Err(AnswerError {
            kind: AnswerErrorKind::Silent,
            field: Some("choices[0].message.content".into()),
            message: "the user's answer says nothing".into(),
        });
    }
    Ok(text.to_string())
}

impl UserVoice for LlmUser {
    fn speak(&mut self, said: Option<&str>, rules: &Message, cx: &mut VoiceCx) -> Voiced {
        match said {
            _ if self.messages.is_empty() => self.open(rules),
            Some(words) => self.messages.push(json!({"role": "user", "content": words})),
            None => {
                // The world's user speaks by itself (its patience ran out): its
                // words stand, and the model knows it said them.
                self.messages.push(json!({"role": "assistant", "content": rules.text}));
                return Voiced::Say(rules.text.clone());
            }
        }
        let body = request::user_body(&self.config, &self.messages);
        let asked = client::ask_with(&self.config.endpoint, &body, read_words).and_then(|asked| {
            for why in &asked.retries {
                cx.note(NOTE_SOURCE, "retry", Value::str(client::retry_kind(why)));
                cx.diagnose(NOTE_SOURCE, "retry_reason", Value::str(why.clone()));
            }
            cx.note(NOTE_SOURCE, "answer", Value::str(asked.key.clone()));
            let (what, detail) = asked.source.diagnostic();
            cx.diagnose(NOTE_SOURCE, what, detail);
            // Bounded before it joins the conversation, which every later request carries.
            request::check_answer(Json::String(asked.answer.clone()).to_string().len(), "the user's model's")?;
            Ok(asked)
        });
        match asked {
            Ok(Asked { answer, .. }) => {
                self.messages.push(json!({"role": "assistant", "content": answer}));
                match STOP_TOKENS.iter().find(|t| answer.contains(*t)) {
                    Some(_) => {
                        let words = STOP_TOKENS.iter().fold(answer, |text, t| text.replace(t, ""));
                        Voiced::Stop(words.trim().to_string())
                    }
                    None => Voiced::Say(answer),
                }
            }
            Err(error) => {
                cx.note(NOTE_SOURCE, error.kind.note_what(), Value::str(error.reason.clone()));
                Voiced::Failed(error.reason)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_tokens_end_and_are_not_said() {
        let answer = |text: &str| json!({"choices": [{"message": {"role": "assistant", "content": text}}]});
        assert_eq!(read_words(&answer("Thanks! ###STOP###")).unwrap(), "Thanks! ###STOP###");
        assert!(read_words(&answer("  ")).is_err());
        assert!(read_words(&json!({"choices": []})).is_err());
    }

    #[test]
    fn a_world_without_instructions_is_told_its_opening_and_facts() {
        let opening = Message {
            text: "I want a refund for order A1002.".into(),
            content: Value::map([("order_id", Value::str("A1002"))]),
        };
        let text = instructions_of(&opening);
        assert!(text.contains("Reason for call:\n\t\tI want a refund for order A1002."), "{text}");
        assert!(text.contains("order_id: A1002"), "{text}");
        assert!(system_prompt(&text).starts_with("# User Simulation Guidelines"));
        assert!(system_prompt(&text).ends_with("</scenario>"));
    }
}
