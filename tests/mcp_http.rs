//! `agentsim mcp --http`: the sessions of a run of many served to an MCP client
//! each over the Streamable HTTP transport: concurrent clients make one run
//! that records and replays, the same clients make the same run whoever
//! initializes first, hostile requests get clear errors, and sessions whose
//! client goes silent or never comes still end, judged.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{agentsim, repo_path, text};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/http_client.py");

/// The race scenario of support_desk cut to two sessions (the second arrives
/// later in virtual time), written into `dir`.
fn two_sessions(dir: &Path) -> String {
    let race = std::fs::read_to_string(repo_path("seeds/support_desk_race.ron")).unwrap();
    assert!(race.contains("count: 10,"));
    std::fs::write(dir.join("race2.ron"), race.replace("count: 10,", "count: 2,")).unwrap();
    "race2.ron".into()
}

/// Runs the example client's `--clients N -- agentsim mcp ... --http` in `dir`.
fn clients(dir: &Path, count: usize, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let output = Command::new("python3")
        .current_dir(dir)
        .args([CLIENT, "--clients", &count.to_string(), "--", env!("CARGO_BIN_EXE_agentsim"), "mcp"])
        .args(args)
        .args(["--http", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .output()
        .expect("python3 runs");
    (output.status.success(), text(&output))
}

/// `agentsim replay FILE` in `dir` passes.
fn replays(dir: &Path, file: &str) {
    let replay = agentsim(dir, &["replay", file], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
}

fn digest_in(log: &str) -> &str {
    let at = log.rfind(" digest ").unwrap_or_else(|| panic!("a digest in {log}"));
    log[at + 8..].split_whitespace().next().unwrap()
}

#[test]
fn two_concurrent_clients_are_two_sessions_of_one_run_which_replays() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = two_sessions(dir.path());
    let (ok, log) = clients(dir.path(), 2, &[&scenario, "--seed", "0", "--record", "run.ron"], &[]);
    assert!(ok, "{log}");
    assert!(log.contains("agentsim mcp: serving 2 sessions at http://127.0.0.1:"), "{log}");
    for session in ["session 0: a client initialized", "session 1: a client initialized", "session 0: success"] {
        assert!(log.contains(session), "{session}: {log}");
    }
    assert!(log.contains("session 1: success  (agent finished)  arrived 0.7 s"), "{log}");
    assert!(log.contains("outcome: success  (2 of 2 sessions succeeded, 0 hurt by another)"), "{log}");
    let replay = agentsim(dir.path(), &["replay", "run.ron"], &[]);
    let replayed = text(&replay);
    assert!(replay.status.success(), "{replayed}");
    assert!(replayed.contains(&format!("PASS run.ron: success (digest {})", digest_in(&log))), "{replayed}\n{log}");
}

#[test]
fn the_same_clients_make_the_same_run_whoever_initializes_first_on_one_and_four_threads() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = repo_path("seeds/support_desk_race.ron").to_string_lossy().into_owned();
    let mut runs = Vec::new();
    for (threads, record) in [("1", "a.ron"), ("4", "b.ron")] {
        let args = [scenario.as_str(), "--seed", "3", "--record", record];
        let (ok, log) = clients(dir.path(), 10, &args, &[("RAYON_NUM_THREADS", threads)]);
        assert!(ok, "{log}");
        assert!(log.contains("session 9: "), "{log}");
        runs.push((digest_in(&log).to_string(), std::fs::read(dir.path().join(record)).unwrap()));
    }
    assert_eq!(runs[0].0, runs[1].0, "the same digest");
    assert!(runs[0].1 == runs[1].1, "the same incident, byte for byte");
}

/// `agentsim mcp ARGS --http 127.0.0.1:0`, its stderr collected, and its address.
struct Server {
    child: Child,
    address: String,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
            .current_dir(dir)
            .arg("mcp")
            .args(args)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agentsim starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap());
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut address = None;
        let mut line = String::new();
        while address.is_none() && lines.read_line(&mut line).unwrap() > 0 {
            if let Some(url) = line.trim().split(" at http://").nth(1) {
                address = Some(url.trim_end_matches("/mcp").to_string());
            }
            stderr.lock().unwrap().push_str(&std::mem::take(&mut line));
        }
        let address = address.unwrap_or_else(|| panic!("no address: {}", stderr.lock().unwrap()));
        let collected = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = lines.read_to_string(&mut rest);
            collected.lock().unwrap().push_str(&rest);
        });
        Self { child, address, stderr }
    }

    /// Waits (at most two minutes) for the exit; its success and stderr.
    fn wait(mut self) -> (bool, String) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not end: {}", self.stderr.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(100));
        let stderr = self.stderr.lock().unwrap().clone();
        (status.success(), stderr)
    }

    /// Sends `raw` on a new connection and reads the response: status, the
    /// session header, the body.
    fn raw(&self, raw: &[u8]) -> (u16, Option<String>, String) {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        // The server may answer (and close) before a refused body is all sent.
        let _ = stream.write_all(raw);
        let mut response = Vec::new();
        let mut chunk = [0u8; 4096];
        // Reads the head, then the body of the length it gives.
        while !response_whole(&response) {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&chunk[..n]),
            }
        }
        let response = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or_else(|| panic!("a response: {response:?}"));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
        let session = head.lines().find_map(|l| l.strip_prefix("Mcp-Session-Id: ")).map(str::to_string);
        (status, session, body.to_string())
    }

    fn post(&self, session: Option<&str>, body: &str) -> (u16, Option<String>, String) {
        self.raw(post(session, body, "application/json").as_bytes())
    }
}

fn response_whole(response: &[u8]) -> bool {
    let text = String::from_utf8_lossy(response);
    let Some((head, body)) = text.split_once("\r\n\r\n") else { return false };
    let length = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).and_then(|n| n.parse().ok());
    body.len() >= length.unwrap_or(0)
}

fn post(session: Option<&str>, body: &str, content_type: &str) -> String {
    let header = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nAccept: application/json, \
         text/event-stream\r\n{header}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn initialize(id: u64) -> String {
    request(id, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}}))
}

#[test]
fn hostile_requests_get_clear_errors_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = two_sessions(dir.path());
    let server = Server::start(dir.path(), &[&scenario, "--seed", "0", "--client-wait-ms", "30000"]);
    let list = request(1, "tools/list", json!({}));
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), 405, "takes POST"),
        (post(None, &list, "application/json").replace("/mcp", "/other").into_bytes(), 404, "the MCP endpoint is /mcp"),
        (post(None, &list, "application/json").into_bytes(), 400, "missing the Mcp-Session-Id header"),
        (post(Some("s0-forged"), &list, "application/json").into_bytes(), 404, "no session `s0-forged`"),
        (post(None, "{not json", "application/json").into_bytes(), 400, "not JSON"),
        (post(None, &list, "text/plain").into_bytes(), 415, "Content-Type must be application/json"),
        (
            post(None, &list, "application/json")
                .replace("application/json, text/event-stream", "text/html")
                .into_bytes(),
            406,
            "Accept must allow application/json",
        ),
        (post(None, &"x".repeat(2 << 20), "application/json").into_bytes(), 413, "over the limit of 1048576"),
        (b"hello there\r\n\r\n".to_vec(), 400, "bad request line"),
        (format!("GET /mcp HTTP/1.1\r\nX: {}\r\n\r\n", "y".repeat(20 << 10)).into_bytes(), 431, "head longer"),
        (
            b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
            411,
            "send a Content-Length",
        ),
        (b"DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: nope\r\n\r\n".to_vec(), 404, "no session `nope`"),
        (
            post(None, &list, "application/json").replace("Host: x", "Origin: http://evil.example").into_bytes(),
            403,
            "Origin `http://evil.example` is not a loopback host",
        ),
        (
            post(None, &list, "application/json").replace("Host: x", "Origin: http://localhost:5173").into_bytes(),
            400,
            "missing the Mcp-Session-Id header",
        ),
        (
            post(None, &list, "application/json").replace("Host: x", "MCP-Protocol-Version: 1999-01-01").into_bytes(),
            400,
            "unsupported MCP-Protocol-Version `1999-01-01`",
        ),
    ];
    for (i, (raw, status, says)) in cases.iter().enumerate() {
        let (got, _, body) = server.raw(raw);
        assert_eq!((got, body.contains(says)), (*status, true), "case {i}, {says}: {body}");
    }
    // curl's `Expect: 100-continue`: the body follows the interim answer.
    let body = initialize(1);
    let head = post(None, &body, "application/json").replace(&body, "").replace("Host: x", "Expect: 100-continue");
    let mut stream = TcpStream::connect(&server.address).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut interim = [0u8; 25];
    stream.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200 OK") && answer.contains("Mcp-Session-Id: s0-"), "{answer}");
    // The other session takes a client; a third is refused.
    let first = answer.lines().find_map(|l| l.strip_prefix("Mcp-Session-Id: ")).unwrap().to_string();
    let (status, second, body) = server.post(None, &initialize(1));
    assert_eq!(status, 200, "{body}");
    let second = second.expect("initialize answers with a session id");
    assert_ne!(first, second);
    let (status, _, body) = server.post(None, &initialize(1));
    assert!(status == 409 && body.contains("all 2 sessions of the run have a client"), "{status} {body}");
    // A session's own garbage: JSON-RPC errors, and the session goes on.
    let (status, _, body) = server.post(Some(&first), "[1, 2]");
    assert!(status == 400 && body.contains("-32600"), "{status} {body}");
    let (status, _, body) = server.post(Some(&first), &json!({"jsonrpc": "2.0", "method": "x"}).to_string());
    assert!(status == 202 && body.is_empty(), "a notification: {status} {body}");
    let (status, _, body) = server.post(Some(&first), &request(2, "prompts/get", json!({"name": "task"})));
    assert!(status == 200 && body.contains("Please refund"), "{status} {body}");
    // DELETE ends each session as a closed stdin does; the run ends, judged.
    for session in [&first, &second] {
        let (status, _, _) =
            server.raw(format!("DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: {session}\r\n\r\n").as_bytes());
        assert_eq!(status, 200);
    }
    let (ok, stderr) = server.wait();
    assert!(ok, "{stderr}");
    assert!(stderr.contains("session 1: the client ended its session"), "{stderr}");
    assert!(stderr.contains("outcome: ") && !stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_client_that_leaves_mid_call_and_one_that_never_comes_end_their_sessions_which_are_judged() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = two_sessions(dir.path());
    let args = [scenario.as_str(), "--seed", "0", "--client-wait-ms", "1500", "--record", "left.ron"];
    let server = Server::start(dir.path(), &args);
    let (_, session, _) = server.post(None, &initialize(1));
    let session = session.unwrap();
    // A call, then the connection closes before the answer is read.
    let call = request(2, "tools/call", json!({"name": "lookup_order", "arguments": {"order_id": "A1001"}}));
    let mut stream = TcpStream::connect(&server.address).unwrap();
    stream.write_all(post(Some(&session), &call, "application/json").as_bytes()).unwrap();
    drop(stream);
    let (ok, stderr) = server.wait();
    assert!(ok, "{stderr}");
    assert!(stderr.contains("session 0: [") && stderr.contains("lookup_order -> "), "the call was made: {stderr}");
    let silent = "session 0: no call from its client within 1500 ms; ending the session";
    assert!(stderr.contains(silent), "{silent}: {stderr}");
    let absent = "session 1: no client came (none initialized within 1500 ms of the last one); the session is absent";
    assert!(stderr.contains(absent) && stderr.contains("session 1: absent"), "{absent}: {stderr}");
    assert!(stderr.contains("outcome: ") && !stderr.contains("panicked"), "{stderr}");
    replays(dir.path(), "left.ron");
}

/// The race scenario cut to `count` sessions, written into `dir`.
fn sessions_of(dir: &Path, count: usize) -> String {
    let race = std::fs::read_to_string(repo_path("seeds/support_desk_race.ron")).unwrap();
    let name = format!("race{count}.ron");
    std::fs::write(dir.join(&name), race.replace("count: 10,", &format!("count: {count},"))).unwrap();
    name
}

/// Sessions whose client never came are `absent`, outside the agents' count,
/// and waited for together (one `--client-wait-ms` from the last client to
/// initialize, not one each); an `initialize` refused for its `params` takes
/// no session.
#[test]
fn clients_that_never_come_are_absent_waited_for_together_and_a_refused_initialize_takes_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = sessions_of(dir.path(), 6);
    let args = [scenario.as_str(), "--seed", "0", "--client-wait-ms", "1000", "--record", "absent.ron"];
    let server = Server::start(dir.path(), &args);
    let refused = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": 5}).to_string();
    let (status, session, body) = server.post(None, &refused);
    assert!(status == 200 && session.is_none() && body.contains("-32602"), "{status} {session:?} {body}");
    let (_, session, _) = server.post(None, &initialize(2));
    let session = session.unwrap();
    assert!(session.starts_with("s0-"), "the refused initialize took no session: {session}");
    let (status, _, _) = server.post(Some(&session), &request(3, "prompts/get", json!({"name": "task"})));
    assert_eq!(status, 200);
    let (status, _, _) = server.raw(format!("DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: {session}\r\n\r\n").as_bytes());
    assert_eq!(status, 200);
    let left = Instant::now();
    let (ok, stderr) = server.wait();
    let waited = left.elapsed();
    assert!(ok, "{stderr}");
    for absent in 1..6 {
        let line = format!("session {absent}: absent  (no agent came)");
        assert!(stderr.contains(&line), "{line}: {stderr}");
    }
    assert!(stderr.contains("session 0: wrong_result  (agent finished)"), "{stderr}");
    assert!(stderr.contains("outcome: wrong_result"), "the run is its one client's session: {stderr}");
    assert!(stderr.contains("0 of 1 sessions succeeded, 0 hurt by another, 5 absent"), "{stderr}");
    // Five absent sessions one after another would take 5 s.
    assert!(waited < Duration::from_millis(3_500), "absent clients waited for one at a time: {waited:?}");
    replays(dir.path(), "absent.ron");
}

/// No client at all: the six sessions are waited for together, one
/// `--client-wait-ms` from the server's start (one each would be 6 s), and
/// the run, with no session of an agent's, is `absent`.
#[test]
fn a_run_whose_clients_never_come_waits_for_them_together_and_is_absent() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = sessions_of(dir.path(), 6);
    let started = Instant::now();
    let server = Server::start(dir.path(), &[scenario.as_str(), "--seed", "0", "--client-wait-ms", "1000"]);
    let (ok, stderr) = server.wait();
    let waited = started.elapsed();
    assert!(ok, "{stderr}");
    assert!(waited < Duration::from_millis(3_500), "absent clients waited for one at a time: {waited:?}: {stderr}");
    assert!(stderr.contains("outcome: absent") && stderr.contains("0 of 0 sessions succeeded"), "{stderr}");
}

#[test]
fn a_sigterm_ends_every_session_and_the_run_is_judged_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = two_sessions(dir.path());
    let server = Server::start(dir.path(), &[&scenario, "--seed", "0", "--record", "stopped.ron"]);
    let (_, session, _) = server.post(None, &initialize(1));
    let session = session.unwrap();
    let (status, _, body) = server.post(Some(&session), &request(2, "prompts/get", json!({"name": "task"})));
    assert_eq!(status, 200, "{body}");
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let (ok, stderr) = server.wait();
    assert!(ok, "{stderr}");
    assert!(stderr.contains("interrupted (SIGTERM or SIGINT); ending every session"), "{stderr}");
    assert!(stderr.contains("session 1: absent  (no agent came)"), "no client came for it: {stderr}");
    assert!(stderr.contains("outcome: "), "{stderr}");
    replays(dir.path(), "stopped.ron");
}

/// A client that pipelines requests and does not read the answers keeps a
/// connection writing after its session ended: the run's files are written
/// the moment it is judged, and the server exits a short grace later (the
/// socket is shut) rather than when the client reads or a write times out.
/// (A reader that does read, slowly, is held to a total deadline per response:
/// `http::tests::a_slow_reader_cannot_hold_a_response_past_its_deadline`.)
#[test]
fn a_client_that_does_not_read_neither_delays_the_record_nor_keeps_the_server_alive() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--seed", "1", "--record", "slow.ron", "--verdict", "slow.json", "--client-wait-ms", "30000"];
    let mut server = Server::start(dir.path(), &args);
    let (_, session, _) = server.post(None, &initialize(1));
    let session = session.unwrap();
    let list = post(Some(&session), &request(2, "tools/list", json!({})), "application/json")
        .replace("Connection: close\r\n", "");
    let stream = TcpStream::connect(&server.address).unwrap();
    let mut writer = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        for _ in 0..20_000 {
            if writer.write_all(list.as_bytes()).is_err() {
                return;
            }
        }
    });
    // Time for the pipelined answers to fill the socket's buffers (a few MiB).
    std::thread::sleep(Duration::from_millis(1500));
    let (status, _, _) = server.raw(format!("DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: {session}\r\n\r\n").as_bytes());
    assert_eq!(status, 200);
    let ended = Instant::now();
    let within = |limit: Duration, done: &mut dyn FnMut() -> bool| loop {
        if done() {
            break Some(ended.elapsed());
        }
        if ended.elapsed() > limit {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let written = within(Duration::from_secs(4), &mut || {
        dir.path().join("slow.ron").exists() && dir.path().join("slow.json").exists()
    });
    let exited = within(Duration::from_secs(6), &mut || server.child.try_wait().unwrap().is_some());
    if exited.is_none() {
        let _ = server.child.kill();
    }
    let stderr = server.stderr.lock().unwrap().clone();
    assert!(written.is_some(), "no record or verdict 4 s after the run ended: {stderr}");
    assert!(exited.is_some(), "the server still served a client that does not read 6 s after the run ended: {stderr}");
    drop(stream);
    let (ok, stderr) = server.wait();
    assert!(ok && stderr.contains("outcome: "), "{stderr}");
    replays(dir.path(), "slow.ron");
}

#[test]
fn a_run_of_one_session_over_http_is_the_stdio_session() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, over_http) = clients(dir.path(), 1, &["--seed", "1"], &[]);
    assert!(ok, "{over_http}");
    assert!(over_http.contains("agentsim mcp: serving 1 session at http://"), "{over_http}");
    let stdio_client = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/support_desk_client.py");
    let stdio = Command::new("python3")
        .current_dir(dir.path())
        .args([stdio_client, "--", env!("CARGO_BIN_EXE_agentsim"), "mcp", "--seed", "1"])
        .output()
        .expect("python3 runs");
    let stdio = text(&stdio);
    assert_eq!(digest_in(&over_http), digest_in(&stdio), "{over_http}\n{stdio}");
}

#[test]
fn with_wall_clock_a_clients_real_wait_is_its_think_time_a_drift_is_streamed_and_the_run_replays() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = two_sessions(dir.path());
    let args = [scenario.as_str(), "--seed", "0", "--wall-clock", "1000", "--record", "slow.ron"];
    let server = Server::start(dir.path(), &args);
    let (_, first, _) = server.post(None, &initialize(1));
    let (_, second, _) = server.post(None, &initialize(1));
    let call = request(2, "tools/call", json!({"name": "lookup_order", "arguments": {"order_id": "A1001"}}));
    let delete = |session: &Option<String>| {
        let delete = format!("DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: {}\r\n\r\n", session.as_deref().unwrap());
        assert_eq!(server.raw(delete.as_bytes()).0, 200);
    };
    // Session 1 arrives at 0.7 s: its client leaves at once, so the engine
    // does not wait for it while session 0 thinks.
    delete(&second);
    // Session 0's client waits 300 ms (300 virtual s at this scale) before
    // its call.
    std::thread::sleep(Duration::from_millis(300));
    let (status, _, body) = server.post(first.as_deref(), &call);
    assert_eq!(status, 200, "{body}");
    // A drift took effect meanwhile: an event stream, the notification first.
    let events: Vec<Value> =
        body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(events[0]["method"], "notifications/tools/list_changed", "{body}");
    let now_ms = events[1]["result"]["_meta"]["agentsim/now_ms"].as_u64().unwrap();
    assert!(now_ms >= 300_000, "{body}");
    delete(&first);
    let (ok, stderr) = server.wait();
    assert!(ok, "{stderr}");
    replays(dir.path(), "slow.ron");
}

#[test]
fn the_official_python_sdks_streamable_http_clients_are_the_sessions_and_the_run_replays() {
    let Ok(python) = std::env::var("AGENTSIM_MCP_PYTHON") else {
        crate::common::skip(
            "the official MCP Python SDK over HTTP",
            "set AGENTSIM_MCP_PYTHON to a Python with `pip install mcp==2.3.0` (.ci/run does)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let scenario = two_sessions(dir.path());
    let server = Server::start(dir.path(), &[&scenario, "--seed", "0", "--record", "sdk.ron"]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/python_sdk_http_client.py");
    let url = format!("http://{}/mcp", server.address);
    let output = Command::new(python).args([script, &url, "2"]).output().expect("the SDK's python runs");
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    assert_eq!(log.matches("lookup_order ok").count(), 2, "{log}");
    let (ok, stderr) = server.wait();
    assert!(ok, "{stderr}");
    for session in [0, 1] {
        let left = format!("session {session}: the client ended its session");
        assert!(stderr.contains(&left), "the SDK's DELETE ends the session: {stderr}");
    }
    replays(dir.path(), "sdk.ron");
}
