//! The little of HTTP/1.1 the MCP Streamable HTTP transport needs, on a
//! blocking `TcpStream`: requests with a `Content-Length` body (no chunked
//! bodies), keep-alive, and responses with a length. Written by hand (std
//! only) so that every bound a hostile peer could push is ours: the head and
//! the body have a size limit, and reads poll with a short timeout so that a
//! silent socket neither hangs the server nor keeps it from ending.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a read looks at the closing flag while the peer is silent.
const POLL_MS: u64 = 100;

/// Bounds on what one request may be.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The request line and headers, in bytes.
    pub head_bytes_max: usize,
    /// The body, in bytes (the stdio server's line limit).
    pub body_bytes_max: usize,
    /// Longest wait for the rest of a request once its first byte came.
    pub request_wait: Duration,
    /// Longest wait for the next request on an idle keep-alive connection.
    pub idle_wait: Duration,
}

impl Limits {
    /// 16 KiB heads, `body_bytes_max` bodies, 10 s to finish a request, 5
    /// minutes idle.
    pub fn new(body_bytes_max: usize) -> Self {
        Self {
            head_bytes_max: 16 << 10,
            body_bytes_max,
            request_wait: Duration::from_secs(10),
            idle_wait: Duration::from_secs(300),
        }
    }
}

/// One request.
#[derive(Debug)]
pub struct Request {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The target without its query.
    pub path: String,
    /// Headers with lower-case names, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The peer asked to close after this one (or speaks HTTP/1.0).
    pub close: bool,
}

impl Request {
    /// The first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A request refused before it was whole: answered with this status, then the
/// connection is closed.
#[derive(Debug)]
pub struct Refusal {
    /// The status code.
    pub status: u16,
    /// Why, for the body.
    pub reason: String,
}

/// A response.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers besides `Content-Length` and `Connection`.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with a body of `content_type`.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self { status, headers: vec![("Content-Type", content_type.to_string())], body: body.into() }
    }

    /// A response without a body.
    pub fn empty(status: u16) -> Self {
        Self { status, headers: Vec::new(), body: Vec::new() }
    }

    /// Adds a header.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// A connection: the stream and what was read past the last request.
pub struct Connection {
    stream: TcpStream,
    pending: Vec<u8>,
}

/// What reading the next request gave.
pub enum Next {
    /// A whole request.
    Request(Request),
    /// Refused: answer and close.
    Refused(Refusal),
    /// The peer closed, stayed idle too long, or the server is closing.
    Closed,
}

fn refused(status: u16, reason: impl Into<String>) -> Next {
    Next::Refused(Refusal { status, reason: reason.into() })
}

impl Connection {
    /// Wraps an accepted stream (made blocking, with a polling read timeout).
    pub fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(Duration::from_millis(POLL_MS)))?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        let _ = stream.set_nodelay(true);
        Ok(Self { stream, pending: Vec::new() })
    }

    /// Reads more bytes into `pending`: `Ok(false)` at the end of the stream,
    /// `Err(TimedOut)` when nothing came within a poll.
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 8192];
        match self.stream.read(&mut chunk) {
            Ok(0) => Ok(false),
            Ok(n) => {
                self.pending.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                Err(io::ErrorKind::TimedOut.into())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// The next request, waiting while `closing` is not set.
    pub fn next(&mut self, limits: &Limits, closing: &AtomicBool) -> Next {
        let since = Instant::now();
        let head_end = loop {
            if let Some(i) = find(&self.pending, b"\r\n\r\n") {
                break i;
            }
            if self.pending.len() > limits.head_bytes_max {
                return refused(431, format!("request head longer than {} bytes", limits.head_bytes_max));
            }
            let started = !self.pending.is_empty();
            match self.fill() {
                Ok(true) => {}
                Ok(false) if started => return refused(400, "the connection closed inside a request head"),
                Ok(false) => return Next::Closed,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    if started && since.elapsed() > limits.request_wait {
                        return refused(408, "the request head did not come in time");
                    }
                    if !started && (closing.load(Ordering::SeqCst) || since.elapsed() > limits.idle_wait) {
                        return Next::Closed;
                    }
                }
                Err(_) => return Next::Closed,
            }
        };
        if head_end > limits.head_bytes_max {
            return refused(431, format!("request head longer than {} bytes", limits.head_bytes_max));
        }
        let head: Vec<u8> = self.pending.drain(..head_end + 4).collect();
        let mut request = match parse_head(&head[..head_end]) {
            Ok(request) => request,
            Err(reason) => return refused(400, reason),
        };
        match self.body(&request, limits) {
            Ok(body) => request.body = body,
            Err(next) => return next,
        }
        Next::Request(request)
    }

    fn body(&mut self, request: &Request, limits: &Limits) -> Result<Vec<u8>, Next> {
        if request.header("transfer-encoding").is_some_and(|v| !v.eq_ignore_ascii_case("identity")) {
            return Err(refused(411, "chunked bodies are not supported: send a Content-Length"));
        }
        let length = match request.header("content-length") {
            None => 0,
            Some(v) => v.trim().parse::<usize>().map_err(|_| refused(400, format!("bad Content-Length `{v}`")))?,
        };
        if length > limits.body_bytes_max {
            return Err(refused(
                413,
                format!("request body of {length} bytes, over the limit of {}", limits.body_bytes_max),
            ));
        }
        if length > self.pending.len()
            && request.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
        {
            // curl asks before sending a body over 1 KiB.
            self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").map_err(|_| Next::Closed)?;
        }
        let since = Instant::now();
        while self.pending.len() < length {
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return Err(refused(400, "the connection closed inside a request body")),
                Err(e) if e.kind() == io::ErrorKind::TimedOut && since.elapsed() <= limits.request_wait => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    return Err(refused(408, "the request body did not come in time"));
                }
                Err(_) => return Err(Next::Closed),
            }
        }
        Ok(self.pending.drain(..length).collect())
    }

    /// Writes `response`; `close` adds `Connection: close`.
    pub fn write(&mut self, response: &Response, close: bool) -> io::Result<()> {
        let mut head = format!("HTTP/1.1 {} {}\r\n", response.status, reason_phrase(response.status));
        for (name, value) in &response.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n", response.body.len()));
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes())?;
        self.stream.write_all(&response.body)?;
        self.stream.flush()
    }
}

impl Connection {
    /// Ends the connection after a refusal: stops writing, then reads and drops
    /// what the peer still sends (a body over the limit, say) for a little
    /// while, so that it reads the refusal instead of a reset.
    pub fn close_gracefully(mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let since = Instant::now();
        let mut drained = 0usize;
        while since.elapsed() < Duration::from_secs(2) && drained < (64 << 20) {
            self.pending.clear();
            match self.fill() {
                Ok(true) => drained += self.pending.len(),
                Ok(false) => return,
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                Err(_) => return,
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The request line and headers; the body is read after.
fn parse_head(head: &[u8]) -> Result<Request, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8".to_string())?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad request line `{}`", line.chars().take(80).collect::<String>()));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0")
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err(format!("bad request line `{}`", line.chars().take(80).collect::<String>()));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("bad header line `{}`", line.chars().take(80).collect::<String>()));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let connection = headers.iter().find(|(n, _)| n == "connection").map(|(_, v)| v.to_ascii_lowercase());
    let close = version == "HTTP/1.0" || connection.is_some_and(|v| v.contains("close"));
    let path = target.split('?').next().unwrap_or_default().to_string();
    Ok(Request { method: method.to_string(), path, headers, body: Vec::new(), close })
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_parses_with_lower_case_names_and_no_query() {
        let r = parse_head(b"POST /mcp?x=1 HTTP/1.1\r\nContent-Type: application/json\r\nConnection: close").unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str(), r.close), ("POST", "/mcp", true));
        assert_eq!(r.header("content-type"), Some("application/json"));
    }

    #[test]
    fn garbage_heads_are_refused() {
        for head in [&b"hello"[..], b"POST /mcp HTTP/2\r\n", b"POST /mcp HTTP/1.1\r\nno colon", b"\xff\xfe"] {
            assert!(parse_head(head).is_err(), "{head:?}");
        }
    }
}
