//! The LLM agent: the conversation as chat messages, one model request per
//! decision.

use std::collections::VecDeque;

use agentsim_engine::{Action, Agent, AgentCx, Finish, Input, Value};
use serde_json::{Value as Json, json};

use super::answer::PlannedCall;
use super::client::{self, Asked};
use super::error::LlmError;
use super::{LlmConfig, request};
use crate::external::protocol;

/// A planner that is a model behind an OpenAI-compatible endpoint.
pub struct LlmAgent {
    config: LlmConfig,
    /// The conversation so far, the system message first.
    messages: Vec<Json>,
    /// The tool schemas, made at the first step (from the step's catalog).
    tools: Option<Json>,
    /// Calls of the last answer not sent yet, in order.
    queued: VecDeque<PlannedCall>,
    /// The id of the call whose result is awaited.
    in_flight: Option<String>,
    failed: bool,
}

impl LlmAgent {
    /// An agent for `config`; its system prompt is `config.system`.
    pub fn new(config: LlmConfig) -> Self {
        let messages = vec![json!({"role": "system", "content": config.system})];
        Self { config, messages, tools: None, queued: VecDeque::new(), in_flight: None, failed: false }
    }

    /// Adds what the agent was told to the conversation.
    fn hear(&mut self, input: &Input, cx: &AgentCx<'_>) {
        match input {
            Input::User(message) => self.messages.push(json!({"role": "user", "content": message.text})),
            Input::Tool(_) | Input::Blocked { .. } => {
                let mut event = protocol::event_json(input, cx.catalog);
                if let Json::Object(map) = &mut event {
                    // The call is the model's own (it is in the assistant message).
                    map.remove("kind");
                    map.remove("call");
                }
                let content = request::canonical(&event);
                match self.in_flight.take() {
                    Some(id) => self.messages.push(json!({"role": "tool", "tool_call_id": id, "content": content})),
                    // A result nobody awaits (a layer's own call): the model reads it as news.
                    None => self.messages.push(json!({"role": "user", "content": content})),
                }
            }
            Input::Wake => {}
        }
    }

    /// The next queued call, sent: its result is awaited.
    fn send_next(&mut self) -> Option<Action> {
        let next = self.queued.pop_front()?;
        if matches!(next.action, Action::Call(_)) {
            self.in_flight = Some(next.id);
        }
        Some(next.action)
    }

    /// Asks the model and records what the trajectory keeps of the answer.
    fn decide(&mut self, cx: &mut AgentCx<'_>) -> Result<Action, LlmError> {
        let tools = self.tools.get_or_insert_with(|| request::tools(cx.catalog));
        let body = request::body(&self.config, &self.messages, tools);
        let Asked { answer, key, retries, source } = client::ask(&self.config.endpoint, &body, cx.catalog)?;
        for why in &retries {
            cx.note("llm", "retry", Value::str(client::retry_kind(why)));
            cx.diagnose("llm", "retry_reason", Value::str(why.clone()));
        }
        cx.note("llm", "answer", Value::str(key));
        let (what, detail) = source.diagnostic();
        cx.diagnose("llm", what, detail);
        match answer.usage {
            Ok(usage) => cx.set_usage(usage),
            // The scenario's estimate counts instead: said, so that tokens and
            // cost are never taken for measured (counted in `decisions`).
            Err(why) => cx.note("llm", "usage_estimated", Value::str(why)),
        }
        // Bounded before it joins the conversation, which every later request carries.
        request::check_answer(request::canonical(&answer.message).len(), "the model's")?;
        self.messages.push(answer.message);
        self.queued = answer.calls.into();
        if let Some(action) = self.send_next() {
            return Ok(action);
        }
        Ok(Action::Say { text: answer.text.unwrap_or_default() })
    }
}

impl Agent for LlmAgent {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        if self.failed {
            return Action::Finish(Finish::Failed { reason: "the agent already failed".into() });
        }
        cx.read(&input);
        if matches!(input, Input::Wake) && self.in_flight.is_none() && self.queued.is_empty() {
            // Nothing new to read: the model is not asked again.
            return Action::Idle { wake_at_ms: None };
        }
        self.hear(&input, cx);
        if self.in_flight.is_none()
            && let Some(action) = self.send_next()
        {
            return action;
        }
        if self.in_flight.is_some() {
            // Still waiting for the call's result (a layer woke us).
            return Action::Idle { wake_at_ms: None };
        }
        cx.begin_turn();
        match self.decide(cx) {
            Ok(action) => action,
            Err(error) => {
                self.failed = true;
                cx.note("llm", error.kind.note_what(), Value::str(error.reason.clone()));
                Action::Finish(Finish::Failed { reason: error.reason })
            }
        }
    }
}
