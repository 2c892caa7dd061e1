//! Keeping credentials out of what is printed and written: a URL's userinfo
//! and query (`http://user:password@host/v1?key=...`), and whatever of the API
//! key a provider echoes in an error body. Every URL and error body an
//! [`LlmError`](super::LlmError) or a retry's reason quotes goes through here:
//! those reach the timeline, stderr, incidents and cassette entries.

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The most bytes of a provider's error body kept (after scrubbing).
pub const BODY_EXCERPT_BYTES_MAX: usize = 512;

/// The most bytes of a body scrubbed: more than is kept, so that a secret
/// that starts in the kept part is found whole before the cut.
const SCRUB_WINDOW_BYTES: usize = 4096;

/// Words whose value (`word=value`, `"word": "value"`) is a secret, matched
/// as the end of a name (`api_key=`, `x-api-key:`, `access_token=`; not
/// `max_tokens`, whose value a provider's error explains).
const SECRET_NAMES: [&str; 6] = ["key", "token", "secret", "password", "passwd", "signature"];

/// Schemes whose next word is a credential (`Authorization: Bearer ...`).
const AUTH_SCHEMES: [&str; 2] = ["bearer ", "basic "];

/// The parts of a URL: the userinfo and the query removed.
struct Parts<'a> {
    /// `scheme://`, or empty for no scheme.
    scheme: &'a str,
    userinfo: Option<&'a str>,
    /// The host (and port) and the path.
    rest: &'a str,
    query: Option<&'a str>,
}

fn parts(url: &str) -> Parts<'_> {
    let (scheme, after) = url.find("://").map_or(("", url), |i| url.split_at(i + 3));
    let without_fragment = after.split('#').next().unwrap_or(after);
    let (before_query, query) = match without_fragment.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (without_fragment, None),
    };
    let authority_end = before_query.find('/').unwrap_or(before_query.len());
    let (userinfo, rest) = match before_query[..authority_end].rfind('@') {
        Some(at) => (Some(&before_query[..at]), &before_query[at + 1..]),
        None => (None, before_query),
    };
    Parts { scheme, userinfo, rest, query }
}

/// `url` as it may be shown: its userinfo and its query replaced by
/// [`REDACTED`], its fragment dropped (`http://[redacted]@host/v1?[redacted]`).
pub fn url(url: &str) -> String {
    let p = parts(url);
    let userinfo = if p.userinfo.is_some() { format!("{REDACTED}@") } else { String::new() };
    let query = if p.query.is_some() { format!("?{REDACTED}") } else { String::new() };
    format!("{}{userinfo}{}{query}", p.scheme, p.rest)
}

/// The secrets a URL carries: the user, the password and each query value
/// (a provider may echo them back).
pub fn url_secrets(url: &str) -> Vec<String> {
    let p = parts(url);
    let mut secrets: Vec<String> = Vec::new();
    if let Some(userinfo) = p.userinfo {
        secrets.extend(userinfo.split(':').map(str::to_string));
    }
    if let Some(query) = p.query {
        secrets.extend(query.split('&').map(|pair| pair.split_once('=').map_or(pair, |(_, v)| v).to_string()));
    }
    secrets
}

/// `text` with every secret of `secrets` (the API key, a URL's) replaced, and
/// what looks like a credential (`Bearer ...`, `key=...`, `"api_key": "..."`,
/// an `sk-...` key) too. Secrets shorter than 4 bytes are not searched for (a
/// one-letter user would blank every word).
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(secret.as_str(), REDACTED);
    }
    let mut spans = Vec::new();
    let lower = out.to_ascii_lowercase();
    for scheme in AUTH_SCHEMES {
        for (at, _) in lower.match_indices(scheme) {
            spans.push(value_after(&out, at + scheme.len()));
        }
    }
    for name in SECRET_NAMES {
        for (at, _) in lower.match_indices(name) {
            if let Some(start) = assigned_at(&out, at + name.len()) {
                spans.push(value_after(&out, start));
            }
        }
    }
    spans.extend(provider_keys(&out));
    replace_spans(&out, spans)
}

/// A provider's error body as it may be kept: scrubbed (see [`scrub`]) and
/// cut to [`BODY_EXCERPT_BYTES_MAX`] bytes (at a character boundary).
pub fn body(text: &str, secrets: &[String]) -> String {
    let scrubbed = scrub(cut(text, SCRUB_WINDOW_BYTES), secrets);
    let kept = cut(&scrubbed, BODY_EXCERPT_BYTES_MAX);
    if kept.len() < text.len().min(scrubbed.len()) { format!("{kept}…") } else { kept.to_string() }
}

/// The longest prefix of `text` of at most `bytes_max` bytes.
fn cut(text: &str, bytes_max: usize) -> &str {
    let mut end = text.len().min(bytes_max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Where the value of a name ending at `at` starts, when the name ends there
/// (`api_key`, not `key_id`; `access_token`, not `max_tokens`) and is
/// assigned one (`=`, or `:` in JSON or a header), quotes skipped.
fn assigned_at(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = at;
    if i < bytes.len() && is_name_byte(bytes[i]) {
        return None;
    }
    while i < bytes.len() && matches!(bytes[i], b'"' | b'\'' | b' ') {
        i += 1;
    }
    if i >= bytes.len() || !matches!(bytes[i], b'=' | b':') {
        return None;
    }
    i += 1;
    while i < bytes.len() && matches!(bytes[i], b'"' | b'\'' | b' ') {
        i += 1;
    }
    Some(i)
}

/// The span of the value starting at `start`: up to a space, a quote or a
/// separator.
fn value_after(text: &str, start: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut end = start;
    while end < bytes.len() && !matches!(bytes[end], b' ' | b'"' | b'\'' | b'&' | b',' | b';' | b'}' | b')' | b'\n') {
        end += 1;
    }
    (start, end)
}

/// The spans of words that look like a provider's API key (`sk-...`, as
/// OpenAI's and Anthropic's are written), 16 bytes or longer.
fn provider_keys(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    for (at, _) in text.match_indices("sk-") {
        if at > 0 && is_name_byte(bytes[at - 1]) {
            continue;
        }
        let mut end = at;
        while end < bytes.len() && is_name_byte(bytes[end]) {
            end += 1;
        }
        if end - at >= 16 {
            spans.push((at, end));
        }
    }
    spans
}

/// `text` with each non-empty span (merged where they overlap) replaced by
/// [`REDACTED`].
fn replace_spans(text: &str, mut spans: Vec<(usize, usize)>) -> String {
    spans.retain(|(start, end)| end > start);
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    for (start, end) in spans {
        if end <= done {
            continue;
        }
        out.push_str(&text[done..start.max(done)]);
        if !out.ends_with(REDACTED) {
            out.push_str(REDACTED);
        }
        done = end;
    }
    out.push_str(&text[done..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_userinfo_and_query() {
        assert_eq!(url("http://u:pw@h:8/v1?key=s&v=1#f"), "http://[redacted]@h:8/v1?[redacted]");
        assert_eq!(url("https://api.openai.com/v1"), "https://api.openai.com/v1");
        assert_eq!(url("http://h/v1/a@b"), "http://h/v1/a@b", "an @ in the path is no userinfo");
        assert_eq!(url_secrets("http://u:pw@h/v1?key=s&v=1"), ["u", "pw", "s", "1"]);
    }

    #[test]
    fn bodies_lose_what_looks_like_a_credential_and_are_bounded() {
        let secrets = vec!["hunter22".to_string()];
        let body = r#"{"error":"bad key sk-abcdefghijklmnop1234, Authorization: Bearer tok123; api_key=zzz&x=1", "password": "hunter22", "x-api-key": "kk12", "max_tokens": 4096}"#;
        let scrubbed = scrub(body, &secrets);
        for secret in ["sk-abcdefghijklmnop1234", "tok123", "zzz", "hunter22", "kk12"] {
            assert!(!scrubbed.contains(secret), "{secret}: {scrubbed}");
        }
        assert!(scrubbed.contains("x=1") && scrubbed.contains("bad key [redacted]"), "{scrubbed}");
        assert!(scrubbed.contains(r#""max_tokens": 4096"#), "{scrubbed}");
        let long = format!("{}é{}", "a".repeat(511), "b".repeat(5000));
        let kept = super::body(&long, &[]);
        assert!(kept.len() <= BODY_EXCERPT_BYTES_MAX + "…".len() && kept.ends_with('…'), "{}", kept.len());
        assert_eq!(super::body("short", &[]), "short");
    }
}
