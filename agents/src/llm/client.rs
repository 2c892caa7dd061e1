//! Asking the model: through the cassette when there is one, else (or for an
//! answer the cassette lacks) over HTTP with retries.
//!
//! The provider's failures are its own: a 429 (after its `Retry-After`), a
//! 5xx, a timeout, a dropped connection or a malformed answer is retried with
//! exponential backoff on the wall clock, outside the simulation. The reasons
//! of the failed attempts are kept with the answer (and in its cassette
//! entry), so the trajectory's `llm.retry` notes are the same when the answer
//! is replayed. Other statuses (400, 401, 404) are configuration errors and
//! are not retried.

use std::time::{Duration, Instant};

use agentsim_engine::Catalog;
use serde_json::Value as Json;

use super::Endpoint;
use super::answer::{self, Answer};
use super::cassette::{self, CassetteMode, Entry, Recording};
use super::error::{LlmError, LlmErrorKind};
use super::{memory, redact, request};

/// The largest response body read, in bytes.
pub const BODY_BYTES_MAX: u64 = 8 << 20;

/// Where an answer came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The cassette had it.
    Cassette,
    /// The cassette had it in an entry without a checksum (recorded before
    /// checksums), read unchecked.
    CassetteUnchecked,
    /// The run carried it (an incident's answers).
    Carried,
    /// This process had it already (see [`super::memory`]).
    Memory,
    /// The provider gave it, after this much wall-clock time (all attempts).
    Live {
        /// Milliseconds of wall clock.
        latency_ms: u64,
    },
}

impl Source {
    /// The diagnostic the trajectory keeps of it: `("source", where)` or
    /// `("latency_ms", wall-clock milliseconds)`.
    pub fn diagnostic(&self) -> (&'static str, agentsim_engine::Value) {
        use agentsim_engine::Value;
        match self {
            Source::Cassette => ("source", Value::str("cassette")),
            Source::CassetteUnchecked => ("source", Value::str("cassette (no checksum: unchecked)")),
            Source::Carried => ("source", Value::str("incident")),
            Source::Memory => ("source", Value::str("memory")),
            Source::Live { latency_ms } => ("latency_ms", Value::Int(*latency_ms as i64)),
        }
    }
}

/// An answer and how it was had.
#[derive(Clone, Debug, PartialEq)]
pub struct Asked<A = Answer> {
    /// The answer.
    pub answer: A,
    /// The request's cassette key.
    pub key: String,
    /// Why each failed attempt failed (`http 429`, `timeout`), in order.
    pub retries: Vec<String>,
    /// Where it came from.
    pub source: Source,
}

/// Asks for the answer to `body` (a request made by [`request::body`]).
pub fn ask(endpoint: &Endpoint, body: &Json, catalog: &Catalog) -> Result<Asked, LlmError> {
    ask_with(endpoint, body, |response| answer::read(response, catalog))
}

/// Asks for the answer to `body`, read by `read` (an answer it refuses is
/// malformed, and retried when live). The answer comes from the first that has
/// it: the run's carried answers, this process's memory, the cassette, the
/// model; every answer given is kept in the memory.
pub fn ask_with<A>(
    endpoint: &Endpoint,
    body: &Json,
    read: impl Fn(&Json) -> Result<A, answer::AnswerError>,
) -> Result<Asked<A>, LlmError> {
    let canonical = request::canonical(body);
    // Checked before any answer source: the same request is refused whether
    // recorded or not, so a replay ends where the recording did.
    request::check_request(&canonical)?;
    let key = request::key_of_canonical(&canonical);
    drop(canonical);
    if let Some(entry) = endpoint.answers.get(&key) {
        return replayed(entry.clone(), key, Source::Carried, "the incident's answer", &read);
    }
    if let Some(entry) = memory::recall(&key) {
        return replayed(entry, key, Source::Memory, "an answer of this run", &read);
    }
    if endpoint.offline {
        return Err(LlmError::new(
            LlmErrorKind::MissingAnswer,
            format!("offline: the incident carries no answer for request {key} (its replay asks no model)"),
        ));
    }
    // One asker per key in this process; the others then read its answer.
    let _asking = Recording::begin(&key);
    if let Some(entry) = memory::recall(&key) {
        return replayed(entry, key, Source::Memory, "an answer of this run", &read);
    }
    let cassette = endpoint.cassette.as_ref();
    if let Some((dir, mode)) = cassette
        && *mode != CassetteMode::Record
    {
        match cassette::load_checked(dir, &key)? {
            Some((entry, checked)) => {
                let file = cassette::path(dir, &key);
                let asked = replayed(
                    entry.clone(),
                    key,
                    if checked { Source::Cassette } else { Source::CassetteUnchecked },
                    &format!("cassette entry `{}`", file.display()),
                    &read,
                )?;
                memory::keep(&asked.key, &entry);
                return Ok(asked);
            }
            None if *mode == CassetteMode::Replay => {
                return Err(LlmError::new(
                    LlmErrorKind::MissingAnswer,
                    format!(
                        "replay: the cassette has no answer for request {key} (no file `{}`)",
                        cassette::path(dir, &key).display()
                    ),
                ));
            }
            None => {}
        }
    }
    let (answer, response, retries, latency_ms) = live(endpoint, body, &key, &read)?;
    let entry = Entry { response, retries: retries.clone() };
    if let Some((dir, _)) = cassette {
        cassette::store(dir, &key, body, &entry)?;
    }
    memory::keep(&key, &entry);
    Ok(Asked { answer, key, retries, source: Source::Live { latency_ms } })
}

fn replayed<A>(
    entry: Entry,
    key: String,
    source: Source,
    origin: &str,
    read: &impl Fn(&Json) -> Result<A, answer::AnswerError>,
) -> Result<Asked<A>, LlmError> {
    let answer = read(&entry.response)
        .map_err(|e| LlmError::new(LlmErrorKind::Cassette, format!("{origin} for request {key}: {e}")))?;
    memory::keep(&key, &entry);
    Ok(Asked { answer, key, retries: entry.retries, source })
}

/// One failed attempt: why (as recorded), how long the provider asked us to
/// wait, and whether it was a malformed answer.
struct Failed {
    why: String,
    retry_after_ms: Option<u64>,
    malformed: bool,
}

/// Asks the provider, retrying its failures: the answer, the response body,
/// the failed attempts' reasons and the wall-clock time taken.
fn live<A>(
    endpoint: &Endpoint,
    body: &Json,
    key: &str,
    read: &impl Fn(&Json) -> Result<A, answer::AnswerError>,
) -> Result<(A, Json, Vec<String>, u64), LlmError> {
    let url = completions_url(&endpoint.base_url);
    let text = body.to_string();
    let api_key = std::env::var(&endpoint.api_key_env).ok().filter(|k| !k.trim().is_empty());
    // What must never be printed or written: the key, and what the URL carries.
    let secrets: Vec<String> = redact::url_secrets(&url).into_iter().chain(api_key.clone()).collect();
    let shown = redact::url(&url);
    let started = Instant::now();
    let mut failures: Vec<Failed> = Vec::new();
    for attempt in 1..=endpoint.attempts_max.max(1) {
        let failed = match transport::post(&url, api_key.as_deref(), &text, endpoint.request_timeout_ms) {
            Ok(http) if (200..300).contains(&http.status) => match read_body(&http.body, read) {
                Ok((answer, response)) => {
                    let reasons = failures.into_iter().map(|f| f.why).collect();
                    return Ok((answer, response, reasons, started.elapsed().as_millis() as u64));
                }
                Err(e) => Failed { why: format!("malformed: {e}"), retry_after_ms: None, malformed: true },
            },
            Ok(http) if http.status == 408 || http.status == 429 || http.status >= 500 => {
                Failed { why: format!("http {}", http.status), retry_after_ms: http.retry_after_ms, malformed: false }
            }
            Ok(http) if (300..400).contains(&http.status) => return Err(redirected(&shown, &http, &secrets)),
            Ok(http) => return Err(refused(&shown, http.status, &http.body, &secrets)),
            Err(transport::SendError::Unsupported(reason)) => {
                return Err(LlmError::new(LlmErrorKind::Unsupported, hide_url(&reason, &url, &shown, &secrets)));
            }
            Err(transport::SendError::Timeout) => {
                Failed { why: "timeout".into(), retry_after_ms: None, malformed: false }
            }
            Err(transport::SendError::Failed(e)) => {
                let why = format!("connection: {}", hide_url(&e, &url, &shown, &secrets));
                Failed { why, retry_after_ms: None, malformed: false }
            }
        };
        let wait = failed.retry_after_ms.unwrap_or_else(|| backoff_ms(endpoint, attempt));
        failures.push(failed);
        if attempt < endpoint.attempts_max {
            std::thread::sleep(Duration::from_millis(wait.min(endpoint.backoff_cap_ms)));
        }
    }
    Err(exhausted(&failures, key, &shown))
}

fn read_body<A>(
    body: &str,
    read: &impl Fn(&Json) -> Result<A, answer::AnswerError>,
) -> Result<(A, Json), answer::AnswerError> {
    let response: Json = serde_json::from_str(body).map_err(answer::AnswerError::not_json)?;
    Ok((read(&response)?, response))
}

/// Exponential backoff: `base`, `2 base`, `4 base`, ... (capped by the caller).
fn backoff_ms(endpoint: &Endpoint, attempt: u32) -> u64 {
    endpoint.backoff_base_ms.saturating_mul(1u64 << (attempt - 1).min(30))
}

/// The URL requests go to: `/chat/completions` joined to the base URL's path,
/// before its query (`http://h/v1?api-version=1` asks
/// `http://h/v1/chat/completions?api-version=1`); a fragment is dropped (it is
/// never sent).
pub fn completions_url(base_url: &str) -> String {
    let without_fragment = base_url.split('#').next().unwrap_or(base_url);
    let (path, query) = match without_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (without_fragment, None),
    };
    let query = query.map_or_else(String::new, |q| format!("?{q}"));
    format!("{}/chat/completions{query}", path.trim_end_matches('/'))
}

/// A message of the transport's with the URL shown redacted and any secret
/// it quotes scrubbed.
fn hide_url(message: &str, url: &str, shown: &str, secrets: &[String]) -> String {
    redact::scrub(&message.replace(url, shown), secrets)
}

/// A provider's refusal (400, 401, 404): its status and the start of its body,
/// scrubbed (a provider may echo the key) and bounded.
fn refused(shown: &str, status: u16, body: &str, secrets: &[String]) -> LlmError {
    let excerpt = redact::body(body, secrets);
    LlmError::new(
        LlmErrorKind::Refused,
        format!("the provider at {shown} refused the request: http {status}: {excerpt}"),
    )
}

/// A redirect: never followed (the answer of another host would be recorded
/// as the model's, and the request, the key included, sent there).
fn redirected(shown: &str, http: &transport::HttpAnswer, secrets: &[String]) -> LlmError {
    let to = http
        .location
        .as_deref()
        .map_or_else(|| "nowhere said".to_string(), |l| redact::scrub(&redact::url(l), secrets));
    LlmError::new(
        LlmErrorKind::Refused,
        format!(
            "the provider at {shown} answered http {} redirecting to {to}; redirects are not followed: give the final address as --llm-base-url",
            http.status
        ),
    )
}

fn exhausted(failures: &[Failed], key: &str, url: &str) -> LlmError {
    let kind =
        if failures.last().is_some_and(|f| f.malformed) { LlmErrorKind::Malformed } else { LlmErrorKind::Provider };
    // Runs of one reason are said once, with their count.
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for failure in failures {
        match runs.last_mut() {
            Some((why, n)) if *why == failure.why => *n += 1,
            _ => runs.push((&failure.why, 1)),
        }
    }
    let said: Vec<String> =
        runs.iter().map(|(why, n)| if *n == 1 { why.to_string() } else { format!("{why} ({n} times)") }).collect();
    LlmError::new(
        kind,
        format!("the model at {url} failed request {key} on all {} attempts: {}", failures.len(), said.join("; ")),
    )
}

/// What the note `llm.retry` records of a failed attempt: its kind, without
/// the details that vary by machine (an OS error's wording).
pub fn retry_kind(why: &str) -> &str {
    why.split(':').next().unwrap_or(why)
}

mod transport {
    /// A response, whatever its status.
    pub struct HttpAnswer {
        pub status: u16,
        pub retry_after_ms: Option<u64>,
        /// The `Location` header (a redirect's target).
        pub location: Option<String>,
        pub body: String,
    }

    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub enum SendError {
        Timeout,
        Failed(String),
        Unsupported(String),
    }

    /// `Retry-After` in seconds (an HTTP date is ignored: the backoff applies).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub fn retry_after_ms(value: &str) -> Option<u64> {
        let seconds: f64 = value.trim().parse().ok()?;
        (seconds.is_finite() && seconds >= 0.0).then_some((seconds * 1000.0) as u64)
    }

    /// Idle connections kept open for the next requests (per host, and in all).
    #[cfg(feature = "http")]
    const IDLE_CONNECTIONS_MAX: usize = 256;

    #[cfg(feature = "http")]
    pub fn post(url: &str, api_key: Option<&str>, body: &str, timeout_ms: u64) -> Result<HttpAnswer, SendError> {
        use std::sync::LazyLock;
        use std::time::Duration;
        // One agent per process: its connection pool serves every episode,
        // with room for every episode in flight (`--in-flight`, 64 by default)
        // to keep its connection (ureq keeps 3 per host unless told).
        static AGENT: LazyLock<ureq::Agent> = LazyLock::new(|| {
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_idle_connections(IDLE_CONNECTIONS_MAX)
                .max_idle_connections_per_host(IDLE_CONNECTIONS_MAX)
                // No redirect is followed: another host's answer would be
                // recorded as the model's (the caller reports the 3xx).
                .max_redirects(0)
                .build()
                .into()
        });
        if url.starts_with("https:") && !cfg!(feature = "tls") {
            return Err(SendError::Unsupported(format!(
                "{url}: this build has no TLS; rebuild with `--features llm-tls`, or use a plain-HTTP endpoint"
            )));
        }
        let mut request = AGENT
            .post(url)
            .config()
            .timeout_global(Some(Duration::from_millis(timeout_ms)))
            .build()
            .header("Content-Type", "application/json");
        if let Some(key) = api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let failed = |e: ureq::Error| match e {
            ureq::Error::Timeout(_) => SendError::Timeout,
            other => SendError::Failed(other.to_string()),
        };
        let mut response = request.send(body).map_err(failed)?;
        let status = response.status().as_u16();
        let retry_after_ms =
            response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(retry_after_ms);
        let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_string);
        let body = response.body_mut().with_config().limit(super::BODY_BYTES_MAX).read_to_string().map_err(failed)?;
        Ok(HttpAnswer { status, retry_after_ms, location, body })
    }

    #[cfg(not(feature = "http"))]
    pub fn post(url: &str, _: Option<&str>, _: &str, _: u64) -> Result<HttpAnswer, SendError> {
        Err(SendError::Unsupported(format!(
            "{url}: this build has no HTTP client (the `llm` feature is off); a cassette still replays"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_and_backoff() {
        assert_eq!(transport::retry_after_ms("2"), Some(2000));
        assert_eq!(transport::retry_after_ms("0.5"), Some(500));
        assert_eq!(transport::retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        let endpoint = Endpoint::default();
        assert_eq!((backoff_ms(&endpoint, 1), backoff_ms(&endpoint, 3)), (500, 2000));
        assert_eq!(retry_kind("connection: refused (os error 111)"), "connection");
        assert_eq!(retry_kind("http 429"), "http 429");
    }
}
