//! A failed call as the model reads it. Some clients hand the model only the
//! result's text (the OpenAI Agents SDK drops `isError`), so the error object
//! says everything a model needs to act on it: the status, whether repeating
//! the call can help, how long to wait, and a sentence saying so.

use agentsim_engine::Reply;
use serde_json::{Value as Json, json};

/// The `{"error": {...}}` body of a failed call, or `None` for a success:
/// `status`, `message`, `retryable`, `retry_after_ms` and `explanation`, a
/// sentence naming the status and what to do next (a garbled answer adds the
/// raw `body`).
pub fn error_body(reply: &Reply) -> Option<Json> {
    let status = reply.status();
    let retry_after_ms = reply.retry_after_ms();
    let (message, extra) = match reply {
        Reply::Ok(_) => return None,
        Reply::Error { message, .. } => (message.clone(), None),
        Reply::Timeout => ("the call timed out; it may still have taken effect".to_string(), None),
        Reply::Garbled(text) => ("the response body is not valid JSON".to_string(), Some(text.clone())),
    };
    let mut error = json!({
        "status": status,
        "message": message,
        "retryable": retryable(reply),
        "retry_after_ms": retry_after_ms,
        "explanation": explanation(reply, &message),
    });
    if let Some(body) = extra {
        error["body"] = json!(body);
    }
    Some(json!({ "error": error }))
}

/// The reply a protocol `error` object describes (`docs/protocol.md`: `type`
/// `http` with `status`, `message` and `retry_after_ms`, `timeout`, or
/// `unparseable` with `text`), so that a client of the protocol (the Python
/// loop) words an error exactly as [`error_body`] does. `None` when the
/// object is not one of those.
pub fn reply_of_protocol_error(error: &Json) -> Option<Reply> {
    match error.get("type")?.as_str()? {
        "timeout" => Some(Reply::Timeout),
        "unparseable" => Some(Reply::Garbled(error.get("text").and_then(Json::as_str).unwrap_or_default().to_string())),
        "http" => Some(Reply::Error {
            status: u16::try_from(error.get("status")?.as_u64()?).ok()?,
            retry_after_ms: match error.get("retry_after_ms") {
                None | Some(Json::Null) => None,
                Some(wait) => Some(wait.as_u64()?),
            },
            message: error.get("message").and_then(Json::as_str).unwrap_or_default().to_string(),
        }),
        _ => None,
    }
}

/// Whether repeating the same call can succeed: the transient statuses (408,
/// 429, 5xx), a timeout, and a garbled answer (the next one may parse).
pub fn retryable(reply: &Reply) -> bool {
    reply.is_transient() || matches!(reply, Reply::Garbled(_))
}

/// One sentence for the model: what happened and what to do.
fn explanation(reply: &Reply, message: &str) -> String {
    let status = reply.status();
    match reply {
        Reply::Ok(_) => String::new(),
        Reply::Timeout => format!(
            "HTTP {status} timeout: temporary, retryable; the call may still have taken effect, so check \
             before repeating a write (a read can be repeated at once)."
        ),
        Reply::Garbled(_) => format!(
            "HTTP {status} with a body that is not valid JSON: the call reached the service and may have \
             taken effect; repeating a read may return a valid body, check before repeating a write."
        ),
        Reply::Error { retry_after_ms: Some(wait_ms), .. } if reply.is_transient() => format!(
            "HTTP {status} {message}: temporary, retryable; wait at least {wait_ms} ms ({:.1} s, the \
             server's Retry-After) before repeating the call.",
            *wait_ms as f64 / 1000.0
        ),
        Reply::Error { .. } if reply.is_transient() => format!(
            "HTTP {status} {message}: temporary, retryable; repeat the call after a short wait, backing off \
             if it fails again (the server gave no Retry-After)."
        ),
        Reply::Error { .. } if status == 401 => format!(
            "HTTP {status} {message}: not retryable as is; authenticate again (if a tool does that), then \
             repeat the call."
        ),
        Reply::Error { .. } if status == 404 => format!(
            "HTTP {status} {message}: not retryable; what the call names does not exist, so check its \
             arguments instead of repeating it."
        ),
        Reply::Error { .. } => format!(
            "HTTP {status} {message}: not retryable; the same call fails the same way, so change it instead \
             of repeating it."
        ),
    }
}
