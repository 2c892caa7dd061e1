//! The Chat Completions request: the world's tools as function schemas, the
//! request body, and its canonical key.
//!
//! The body holds exactly what determines the answer (model, messages, tools,
//! `tool_choice`, temperature, seed, max_tokens) and nothing else, so the key
//! of a request is the hash of its body in a canonical encoding: JSON with
//! every object's keys sorted, no spaces, numbers as serde_json writes them.

use agentsim_engine::Catalog;
use serde_json::{Value as Json, json};

use super::error::{LlmError, LlmErrorKind};
use super::{FINISH_TOOL, LlmConfig};
use crate::external::protocol;

/// The context of the cassette key's hash (BLAKE3 `derive_key`): a new
/// version of the key's definition gets a new context, so old keys never
/// match requests they did not answer.
pub const KEY_CONTEXT: &str = "agentsim llm cassette key v1";

/// The most bytes one answer may add to a conversation (the assistant
/// message, or a model user's words, as canonical JSON): far above any real
/// answer (4,096 tokens are about 16 KiB), low enough that a model answering
/// megabytes each turn ends its episode at the first such answer, instead of
/// growing every later request by it.
pub const ANSWER_BYTES_MAX: usize = 256 << 10;

/// The most bytes of one request body (canonical JSON): above what any
/// model's context holds (a million tokens are about 4 MiB of text), so only
/// a runaway conversation reaches it; it bounds the memory and the traffic of
/// every turn.
pub const REQUEST_BYTES_MAX: usize = 4 << 20;

/// Refuses an answer of `bytes` (what it adds to the conversation) larger
/// than [`ANSWER_BYTES_MAX`]; `whose` says whose model answered.
pub fn check_answer(bytes: usize, whose: &str) -> Result<(), LlmError> {
    if bytes <= ANSWER_BYTES_MAX {
        return Ok(());
    }
    Err(LlmError::new(
        LlmErrorKind::TooLarge,
        format!(
            "{whose} answer is {bytes} bytes, more than the {} KiB one answer may add to the conversation",
            ANSWER_BYTES_MAX >> 10
        ),
    ))
}

/// Refuses a request whose canonical encoding `canonical` is larger than
/// [`REQUEST_BYTES_MAX`].
pub fn check_request(canonical: &str) -> Result<(), LlmError> {
    if canonical.len() <= REQUEST_BYTES_MAX {
        return Ok(());
    }
    Err(LlmError::new(
        LlmErrorKind::TooLarge,
        format!(
            "the request would be {} bytes, more than the {} MiB a request may be: the conversation grew too large",
            canonical.len(),
            REQUEST_BYTES_MAX >> 20
        ),
    ))
}

/// The world's tools as Chat Completions function schemas, in catalog order,
/// with [`FINISH_TOOL`] last (unless the world has a tool of that name).
pub fn tools(catalog: &Catalog) -> Json {
    let list = protocol::tool_list(catalog);
    let mut functions: Vec<Json> = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["parameters"],
                },
            })
        })
        .collect();
    if catalog.id(FINISH_TOOL).is_none() {
        functions.push(json!({
            "type": "function",
            "function": {
                "name": FINISH_TOOL,
                "description": "Ends the conversation: call it once the customer's request is handled (outcome \"done\"), or when it cannot be (outcome \"gave_up\", with the reason).",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "outcome": {"type": "string", "enum": ["done", "gave_up"]},
                        "reason": {"type": "string"},
                    },
                    "required": ["outcome"],
                },
            },
        }));
    }
    Json::Array(functions)
}

/// The request body for `messages` (the system message first).
pub fn body(config: &LlmConfig, messages: &[Json], tools: &Json) -> Json {
    let body = json!({
        "model": config.model,
        "messages": messages,
        "tools": tools,
        "tool_choice": "auto",
    });
    with_sampling(config, body)
}

/// The request body of a model playing the user: `messages` (its system
/// message first) and the sampling parameters, without tools (so that its key
/// never equals an agent's, whose requests always carry tools).
pub fn user_body(config: &LlmConfig, messages: &[Json]) -> Json {
    with_sampling(config, json!({"model": config.model, "messages": messages}))
}

/// `body` with the sampling parameters `config` sets (temperature, seed, most
/// tokens), the same for the agent's requests and the user's.
fn with_sampling(config: &LlmConfig, mut body: Json) -> Json {
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(seed) = config.seed {
        body["seed"] = json!(seed);
    }
    if let Some(n) = config.max_tokens {
        body["max_tokens"] = json!(n);
    }
    body
}

/// `value` in the canonical encoding: object keys sorted (whatever order the
/// map kept them in), no whitespace.
pub fn canonical(value: &Json) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Json, out: &mut String) {
    match value {
        Json::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Json::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The cassette key of a request body: the BLAKE3 hash (64 hex digits) of its
/// canonical encoding.
pub fn key(body: &Json) -> String {
    key_of_canonical(&canonical(body))
}

/// The cassette key of a request body already in its canonical encoding.
pub fn key_of_canonical(canonical: &str) -> String {
    let hash = blake3::Hasher::new_derive_key(KEY_CONTEXT).update(canonical.as_bytes()).finalize();
    hash.to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let a = json!({"b": 1, "a": {"d": [1, {"z": true, "y": null}], "c": "x"}});
        assert_eq!(canonical(&a), r#"{"a":{"c":"x","d":[1,{"y":null,"z":true}]},"b":1}"#);
    }

    #[test]
    fn the_key_depends_on_what_determines_the_answer() {
        let config = LlmConfig::new("m");
        let tools = tools(&testkit::catalog());
        let messages = [json!({"role": "user", "content": "hi"})];
        let base = key(&body(&config, &messages, &tools));
        assert_eq!(base.len(), 64);
        let hotter = LlmConfig { temperature: Some(0.5), ..config.clone() };
        assert_ne!(key(&body(&hotter, &messages, &tools)), base);
        let other = [json!({"role": "user", "content": "hello"})];
        assert_ne!(key(&body(&config, &other, &tools)), base);
        // Where the model is served is not part of the key.
        let mut elsewhere = config.clone();
        elsewhere.endpoint.base_url = "http://127.0.0.1:1/v1".into();
        assert_eq!(key(&body(&elsewhere, &messages, &tools)), base);
    }

    #[test]
    fn tools_are_functions_with_the_finish_function_last() {
        let tools = tools(&testkit::catalog());
        let names: Vec<&str> =
            tools.as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
        assert_eq!(names.first(), Some(&"lookup_order"));
        assert_eq!(names.last(), Some(&FINISH_TOOL));
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(tools[0]["function"]["parameters"]["required"][0], "order_id");
    }
}
