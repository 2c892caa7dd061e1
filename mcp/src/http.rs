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
    /// Longest time one response may take to be written, however slowly the
    /// peer reads: past it the connection is dropped (its answer with it), so
    /// a slow reader cannot hold the server.
    pub response_wait: Duration,
}

impl Limits {
    /// 16 KiB heads, `body_bytes_max` bodies, 10 s to finish a request (from
    /// its first byte), 5 minutes idle, 30 s to write a response.
    pub fn new(body_bytes_max: usize) -> Self {
        Self {
            head_bytes_max: 16 << 10,
            body_bytes_max,
            request_wait: Duration::from_secs(10),
            idle_wait: Duration::from_secs(300),
            response_wait: Duration::from_secs(30),
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
        // Writes poll too: a response has a total deadline (`write_within`),
        // which a per-call timeout alone would not give against a peer that
        // reads a little at a time.
        stream.set_write_timeout(Some(Duration::from_millis(POLL_MS)))?;
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
        let idle_since = Instant::now();
        // The request's own wait runs from its first byte, not from the end of
        // the previous request: a keep-alive connection idle between requests
        // (up to `idle_wait`) is not a slow request.
        let mut started_at = (!self.pending.is_empty()).then(Instant::now);
        let head_end = loop {
            if let Some(i) = find(&self.pending, b"\r\n\r\n") {
                break i;
            }
            if self.pending.len() > limits.head_bytes_max {
                return refused(431, format!("request head longer than {} bytes", limits.head_bytes_max));
            }
            let filled = self.fill();
            if started_at.is_none() && !self.pending.is_empty() {
                started_at = Some(Instant::now());
            }
            match (filled, started_at) {
                (Ok(true), _) => {}
                (Ok(false), Some(_)) => return refused(400, "the connection closed inside a request head"),
                (Ok(false), None) => return Next::Closed,
                (Err(e), Some(at)) if e.kind() == io::ErrorKind::TimedOut => {
                    if at.elapsed() > limits.request_wait {
                        return refused(408, "the request head did not come in time");
                    }
                }
                (Err(e), None) if e.kind() == io::ErrorKind::TimedOut => {
                    // Idle between requests: closed quietly, never a 408.
                    if closing.load(Ordering::SeqCst) || idle_since.elapsed() > limits.idle_wait {
                        return Next::Closed;
                    }
                }
                (Err(_), _) => return Next::Closed,
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
        let length = body_length(request).map_err(Next::Refused)?;
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
            let deadline = Instant::now() + limits.response_wait;
            self.write_within(b"HTTP/1.1 100 Continue\r\n\r\n", deadline).map_err(|_| Next::Closed)?;
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

    /// A handle on the same socket, for the server to shut it down when the
    /// run is over.
    pub fn handle(&self) -> io::Result<TcpStream> {
        self.stream.try_clone()
    }

    /// Writes all of `bytes` by `deadline`, or fails with `TimedOut`: each
    /// write waits at most a poll, so a peer reading 4 KiB a second cannot
    /// stretch one response past its deadline.
    fn write_within(&mut self, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
        while !bytes.is_empty() {
            if Instant::now() >= deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "the peer did not read the response in time"));
            }
            match self.stream.write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes `response` within `limits.response_wait`; `close` adds
    /// `Connection: close`.
    pub fn write(&mut self, response: &Response, close: bool, limits: &Limits) -> io::Result<()> {
        let deadline = Instant::now() + limits.response_wait;
        let mut head = format!("HTTP/1.1 {} {}\r\n", response.status, reason_phrase(response.status));
        for (name, value) in &response.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n", response.body.len()));
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        self.write_within(head.as_bytes(), deadline)?;
        self.write_within(&response.body, deadline)
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

/// The length of the request's body from its framing headers, refusing any
/// framing two parsers could read two ways (RFC 9112 section 6.3, the root of
/// request smuggling): a `Transfer-Encoding` with a `Content-Length` (400), more
/// than one `Content-Length` even when they agree (400), one that is not plain
/// digits (`+5`, `5, 5`, `0x5`: 400); a chunked body alone is `411` (this
/// server reads only lengths) and any other transfer coding `400`.
fn body_length(request: &Request) -> Result<usize, Refusal> {
    let refuse = |status: u16, reason: String| Refusal { status, reason };
    let lengths: Vec<&str> =
        request.headers.iter().filter(|(n, _)| n == "content-length").map(|(_, v)| v.as_str()).collect();
    let codings = request.headers.iter().filter(|(n, _)| n == "transfer-encoding").count();
    if codings > 0 && !lengths.is_empty() {
        return Err(refuse(400, "both Transfer-Encoding and Content-Length: the body's length is ambiguous".into()));
    }
    if codings > 0 {
        let chunked =
            codings == 1 && request.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        return Err(if chunked {
            refuse(411, "chunked bodies are not supported: send a Content-Length".into())
        } else {
            refuse(400, "unsupported Transfer-Encoding: send the body with a Content-Length".into())
        });
    }
    match lengths.as_slice() {
        [] => Ok(0),
        [v] if !v.is_empty() && v.len() <= 19 && v.bytes().all(|b| b.is_ascii_digit()) => {
            v.parse::<usize>().map_err(|_| refuse(400, format!("bad Content-Length `{v}`")))
        }
        [v] => Err(refuse(400, format!("bad Content-Length `{}`", v.chars().take(40).collect::<String>()))),
        _ => Err(refuse(400, format!("{} Content-Length headers: the body's length is ambiguous", lengths.len()))),
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
        let bad = || format!("bad header line `{}`", line.chars().take(80).collect::<String>());
        let Some((name, value)) = line.split_once(':') else { return Err(bad()) };
        // A name is a token: no space before the colon and no folded line
        // (RFC 9112 section 5), which a proxy could read as another header; a
        // value holds no control character but a tab (no bare CR or LF).
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(bad());
        }
        if value.bytes().any(|b| (b.is_ascii_control() && b != b'\t') || b == 0x7f) {
            return Err(bad());
        }
        headers.push((name.to_ascii_lowercase(), value.trim_matches([' ', '\t']).to_string()));
    }
    let connection = headers.iter().find(|(n, _)| n == "connection").map(|(_, v)| v.to_ascii_lowercase());
    let close = version == "HTTP/1.0" || connection.is_some_and(|v| v.contains("close"));
    let path = target.split('?').next().unwrap_or_default().to_string();
    Ok(Request { method: method.to_string(), path, headers, body: Vec::new(), close })
}

/// A byte of an HTTP token (RFC 9110 section 5.6.2).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
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

    /// A connected pair: the server's `Connection` and the peer's stream.
    fn pair() -> (Connection, TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (stream, _) = listener.accept().unwrap();
        (Connection::new(stream).unwrap(), peer)
    }

    fn status_of(next: Next) -> u16 {
        match next {
            Next::Request(_) => 200,
            Next::Refused(r) => r.status,
            Next::Closed => 0,
        }
    }

    /// RFC 9112 section 6.3: framing two parsers could read two ways is a 400,
    /// so that no second request can hide in a first one's body.
    #[test]
    fn ambiguous_or_invalid_framing_is_a_400_and_a_plain_length_reads() {
        let cases: [(&str, u16); 14] = [
            ("Content-Length: 2\r\nContent-Length: 40", 400),
            ("Content-Length: 2\r\nContent-Length: 2", 400),
            ("Content-Length: 2, 2", 400),
            ("Content-Length: +2", 400),
            ("Content-Length: -2", 400),
            ("Content-Length: 0x2", 400),
            ("Content-Length:", 400),
            ("Content-Length: 99999999999999999999999", 400),
            ("Content-Length: 2\r\nTransfer-Encoding: chunked", 400),
            ("Transfer-Encoding: chunked\r\nContent-Length: 2", 400),
            ("Transfer-Encoding: identity", 400),
            ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", 400),
            ("Transfer-Encoding: chunked", 411),
            ("Content-Length: 2", 200),
        ];
        for (headers, status) in cases {
            let (mut connection, mut peer) = pair();
            peer.write_all(format!("POST /mcp HTTP/1.1\r\nHost: x\r\n{headers}\r\n\r\n{{}}").as_bytes()).unwrap();
            let got = status_of(connection.next(&Limits::new(1 << 20), &AtomicBool::new(false)));
            assert_eq!(got, status, "{headers:?}");
        }
    }

    /// A header name with a space before its colon, a folded line or a bare
    /// CR in a value is read differently by different parsers: refused.
    #[test]
    fn header_lines_a_proxy_could_read_otherwise_are_refused() {
        for head in [
            &b"POST /mcp HTTP/1.1\r\nContent-Length : 5"[..],
            b"POST /mcp HTTP/1.1\r\nTransfer-Encoding\t: chunked",
            b"POST /mcp HTTP/1.1\r\nX: a\r\n Content-Length: 5",
            b"POST /mcp HTTP/1.1\r\nX: a\rContent-Length: 5",
            b"POST /mcp HTTP/1.1\r\nX: a\nContent-Length: 5",
            b"POST /mcp HTTP/1.1\r\n: empty",
        ] {
            assert!(parse_head(head).is_err(), "{:?}", String::from_utf8_lossy(head));
        }
        let r = parse_head(b"POST /mcp HTTP/1.1\r\nX-Tab:\tvalue\t").unwrap();
        assert_eq!(r.header("x-tab"), Some("value"));
    }

    /// A keep-alive connection idle longer than a request may take is not a
    /// slow request: the next request's wait starts at its first byte.
    #[test]
    fn a_request_after_a_long_idle_is_read_not_refused_with_408() {
        let (mut connection, mut peer) = pair();
        let limits = Limits { request_wait: Duration::from_millis(300), ..Limits::new(1 << 20) };
        let client = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            peer.write_all(b"POST /mcp HTTP/1.1\r\n").unwrap();
            std::thread::sleep(Duration::from_millis(2 * POLL_MS + 50));
            peer.write_all(b"Content-Length: 2\r\n\r\n{}").unwrap();
            peer
        });
        assert_eq!(status_of(connection.next(&limits, &AtomicBool::new(false))), 200);
        // Idle past `idle_wait`: closed quietly, with no 408 written.
        let limits = Limits { idle_wait: Duration::from_millis(300), ..limits };
        assert_eq!(status_of(connection.next(&limits, &AtomicBool::new(false))), 0);
        drop(client.join());
    }

    /// A peer that reads a little at a time cannot stretch a response past
    /// its deadline (a per-write timeout alone never fires while it reads).
    #[test]
    fn a_slow_reader_cannot_hold_a_response_past_its_deadline() {
        let (mut connection, mut peer) = pair();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let reading = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while !reading.load(Ordering::SeqCst) && matches!(peer.read(&mut chunk), Ok(n) if n > 0) {
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let limits = Limits { response_wait: Duration::from_millis(500), ..Limits::new(1 << 20) };
        let (done, written) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let response = Response::new(200, "application/json", vec![b' '; 256 << 20]);
            let _ = done.send(connection.write(&response, false, &limits));
        });
        let written = written.recv_timeout(Duration::from_secs(20));
        stop.store(true, Ordering::SeqCst);
        let error = written.expect("the write ended within its deadline").expect_err("256 MiB at 800 KiB/s");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn garbage_heads_are_refused() {
        for head in [&b"hello"[..], b"POST /mcp HTTP/2\r\n", b"POST /mcp HTTP/1.1\r\nno colon", b"\xff\xfe"] {
            assert!(parse_head(head).is_err(), "{head:?}");
        }
    }
}
