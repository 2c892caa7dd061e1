//! `agentsim mcp`: the JSON-RPC lifecycle and errors, a support_desk task solved by
//! a scripted MCP client through an injected fault, and the recorded session
//! replaying exactly (and byte for byte the same on the same seed).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{agentsim, text};

/// Runs `agentsim mcp ARGS` with `lines` on stdin (then closed); returns the
/// responses on stdout, stderr, and whether it exited 0.
fn session(args: &[&str], lines: &[String]) -> (Vec<Value>, String, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .arg("mcp")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentsim starts");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let responses = stdout.lines().map(|l| serde_json::from_str(l).expect("every stdout line is JSON")).collect();
    (responses, String::from_utf8_lossy(&output.stderr).into_owned(), output.status.success())
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[test]
fn the_lifecycle_the_tool_list_and_protocol_errors() {
    let lines = vec![
        request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}})),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        request(2, "initialize", json!({"protocolVersion": "1999-01-01"})),
        request(3, "ping", json!({})),
        request(4, "tools/list", json!({})),
        request(5, "prompts/list", json!({})),
        request(6, "prompts/get", json!({"name": "task"})),
        request(7, "server/discover", json!({})),
        "{not json".to_string(),
        request(8, "tools/call", json!({"name": "no_such_tool", "arguments": {}})),
        request(
            9,
            "tools/call",
            json!({"name": "issue_refund", "arguments": {"order_id": "A1001", "amount_cents": 1.5}}),
        ),
        request(10, "tools/call", json!({"name": "lookup_order", "arguments": "A1001"})),
        request(11, "prompts/get", json!({"name": "nope"})),
        "[1, 2]".to_string(),
        "x".repeat(2 << 20),
        request(12, "ping", json!({})),
    ];
    let (r, stderr, ok) = session(&["--seed", "1"], &lines);
    assert!(ok, "{stderr}");
    assert_eq!(r.len(), 15, "one response per request, none for the notification: {r:?}");
    assert_eq!(r[0]["result"]["protocolVersion"], "2025-11-25");
    // A drift sends `notifications/tools/list_changed` (tested below).
    assert_eq!(r[0]["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(r[1]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(r[2]["result"], json!({}));
    let tools = r[3]["result"]["tools"].as_array().unwrap();
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} listed"));
    let refund = tool("issue_refund");
    assert_eq!(refund["inputSchema"]["type"], "object");
    assert_eq!(refund["inputSchema"]["properties"]["amount_cents"]["type"], "integer");
    assert_eq!(refund["inputSchema"]["required"], json!(["order_id", "amount_cents"]));
    assert_eq!(refund["annotations"]["destructiveHint"], true);
    assert_eq!(refund["annotations"]["readOnlyHint"], false);
    assert_eq!(tool("lookup_order")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool("lookup_order")["annotations"]["idempotentHint"], true);
    assert_eq!(r[4]["result"]["prompts"][0]["name"], "task");
    let task = r[5]["result"]["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(task.contains("refund") && stderr.contains(task), "{task}\n{stderr}");
    let codes: Vec<&Value> = r[6..14].iter().map(|r| &r["error"]["code"]).collect();
    assert_eq!(
        codes,
        [-32601, -32700, -32602, -32602, -32602, -32602, -32600, -32600].map(|c| json!(c)).iter().collect::<Vec<_>>()
    );
    assert_eq!(r[6]["id"], 7);
    assert!(r[8]["error"]["message"].as_str().unwrap().contains("unknown tool"));
    assert_eq!(r[14]["id"], 12, "the server goes on after a line too long");
    assert!(stderr.contains("outcome: "), "{stderr}");
}

#[test]
fn a_scripted_client_meets_a_fault_solves_the_task_and_the_session_replays() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/support_desk_client.py");
    let mut recorded = Vec::new();
    for name in ["a.ron", "b.ron"] {
        let output = Command::new("python3")
            .current_dir(dir.path())
            .args([script, "--", env!("CARGO_BIN_EXE_agentsim"), "mcp", "--seed", "1", "--record", name])
            .output()
            .expect("python3 runs");
        let log = text(&output);
        assert!(output.status.success(), "{log}");
        // Seed 1 fails the first lookup with an injected 503, which reaches the
        // client as a result with isError.
        // The error explains itself (a client may hand the model only this text).
        assert!(
            log.contains(
                "lookup_order failed: HTTP 503 service unavailable: temporary, retryable; repeat the call after a \
                 short wait"
            ),
            "{log}"
        );
        assert!(log.contains("the customer says: Yes"), "{log}");
        assert!(log.contains("outcome: success"), "{log}");
        assert!(log.contains("verdict: refunded 8900 cents on A1002 and told the customer"), "{log}");
        recorded.push(std::fs::read(dir.path().join(name)).unwrap());
    }
    assert_eq!(recorded[0], recorded[1], "the same seed and calls record the same incident");
    let replay = agentsim(dir.path(), &["replay", "a.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(String::from_utf8_lossy(&replay.stdout).contains("PASS a.ron: success"), "{}", text(&replay));
}

#[test]
fn layers_between_the_client_and_the_tools_absorb_the_fault_and_replay_with_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/support_desk_client.py");
    let layers = concat!(env!("CARGO_MANIFEST_DIR"), "/seeds/stacks/retry.ron");
    let output = Command::new("python3")
        .current_dir(dir.path())
        .args([script, "--", env!("CARGO_BIN_EXE_agentsim"), "mcp", "--seed", "1"])
        .args(["--layers", layers, "--record", "layered.ron"])
        .output()
        .expect("python3 runs");
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    // The same seed as the scripted client's test above, whose first lookup meets
    // a 503: the retry layer sends it again, and the client only sees the answer.
    assert!(!log.contains("lookup_order failed"), "{log}");
    assert!(log.contains("lookup_order -> ok"), "{log}");
    assert!(log.contains("tool calls 5 (1 failed, 1 faults)"), "{log}");
    assert!(log.contains("outcome: success"), "{log}");
    let incident = std::fs::read_to_string(dir.path().join("layered.ron")).unwrap();
    assert!(incident.contains("Retry("), "the incident keeps the layers: {incident}");
    let replay = agentsim(dir.path(), &["replay", "layered.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(String::from_utf8_lossy(&replay.stdout).contains("PASS layered.ron: success"), "{}", text(&replay));
}

#[test]
fn calls_past_the_budget_say_the_session_has_ended_and_it_still_replays() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("budget.ron");
    let mut lines = vec![request(0, "initialize", json!({}))];
    // The scenario allows 40 turns: the 40th call ends the run.
    for id in 1..=45 {
        lines.push(request(id, "tools/call", json!({"name": "lookup_order", "arguments": {"order_id": "A1001"}})));
    }
    let (r, stderr, ok) = session(&["--seed", "3", "--record", record.to_str().unwrap()], &lines);
    assert!(ok, "{stderr}");
    assert_eq!(r.len(), 46);
    assert_eq!(r[45]["result"]["isError"], true);
    assert!(r[45]["result"]["content"][0]["text"].as_str().unwrap().contains("has ended"), "{}", r[45]);
    assert!(stderr.contains("outcome: budget_exhausted"), "{stderr}");
    let replay = agentsim(dir.path(), &["replay", "budget.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
}

#[test]
fn a_folder_of_mcp_sessions_summarizes_like_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/support_desk_client.py");
    std::fs::create_dir(dir.path().join("sessions")).unwrap();
    for seed in ["1", "2", "5"] {
        let record = format!("sessions/seed-{seed}.ron");
        let output = Command::new("python3")
            .current_dir(dir.path())
            .args([script, "--", env!("CARGO_BIN_EXE_agentsim"), "mcp", "--seed", seed, "--record", &record])
            .output()
            .expect("python3 runs");
        assert!(output.status.success(), "{}", text(&output));
    }
    let output = agentsim(dir.path(), &["summarize", "sessions", "--out", "summary"], &[]);
    assert!(output.status.success(), "{}", text(&output));
    let csv = std::fs::read_to_string(dir.path().join("summary/trajectories.csv")).unwrap();
    let seeds: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(seeds, ["1", "2", "5"], "one row per session, in seed order");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["trajectories"], 3);
    assert_eq!(summary["digest"].as_str().unwrap().len(), 32);
    // The same folder summarizes to the same bytes, however often.
    let again = agentsim(dir.path(), &["summarize", "sessions", "--out", "again"], &[]);
    assert!(again.status.success(), "{}", text(&again));
    for file in ["trajectories.csv", "summary.json"] {
        assert_eq!(
            std::fs::read(dir.path().join("summary").join(file)).unwrap(),
            std::fs::read(dir.path().join("again").join(file)).unwrap()
        );
    }
}

/// The official MCP Python SDK completes the task through the server; `.ci/run`
/// installs it (pinned) and points `AGENTSIM_MCP_PYTHON` at its interpreter.
#[test]
fn the_official_python_sdk_completes_the_task_and_the_session_replays() {
    let python = match std::env::var("AGENTSIM_MCP_PYTHON") {
        Ok(python) => python,
        Err(_) => {
            crate::common::skip(
                "the official MCP Python SDK",
                "set AGENTSIM_MCP_PYTHON to a Python with `pip install mcp==2.3.0` (.ci/run does)",
            );
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/python_sdk_client.py");
    let output = Command::new(python)
        .current_dir(dir.path())
        .args([script, env!("CARGO_BIN_EXE_agentsim")])
        .output()
        .expect("the SDK's python runs");
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("lookup_order is_error True"), "the injected 503 is a result with isError: {log}");
    assert!(log.contains("customer: Yes"), "{log}");
    assert!(log.contains("unknown tool:"), "an unknown tool is a JSON-RPC error: {log}");
    assert!(log.contains("outcome: success"), "{log}");
    let replay = agentsim(dir.path(), &["replay", "sdk-seed-1.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
}

#[test]
fn a_drift_changes_the_tool_list_and_the_client_is_told() {
    // The default scenario renames `total_cents` at 120 s; here at 1 s, so the
    // first call (think time plus latency) crosses it.
    let dir = tempfile::tempdir().unwrap();
    let text = agentsim::builtin::scenario("support_desk").unwrap().replace("at_ms: 120_000", "at_ms: 1_000");
    let scenario = dir.path().join("early_drift.ron");
    std::fs::write(&scenario, text).unwrap();
    let lines = vec![
        request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}})),
        request(2, "tools/list", json!({})),
        request(3, "tools/call", json!({"name": "get_customer", "arguments": {"customer_id": "C001"}})),
        request(4, "tools/list", json!({})),
        request(5, "tools/call", json!({"name": "get_customer", "arguments": {"customer_id": "C001"}})),
    ];
    let (r, stderr, ok) = session(&[scenario.to_str().unwrap(), "--seed", "2"], &lines);
    assert!(ok, "{stderr}");
    let lookup = |list: &Value| {
        list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "lookup_order").unwrap()["description"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(lookup(&r[1]).contains("total_cents"), "{}", lookup(&r[1]));
    // The call's response, then the notification, then the new list.
    assert_eq!(r[2]["id"], 3);
    assert_eq!(r[3]["method"], "notifications/tools/list_changed", "{:?}", r[3]);
    assert!(r[3].get("id").is_none());
    assert!(
        lookup(&r[4]).contains("total_amount_cents") && !lookup(&r[4]).contains("total_cents,"),
        "{}",
        lookup(&r[4])
    );
    // Once told, not told again for the same drift.
    assert_eq!(r[5]["id"], 5);
    assert_eq!(r.len(), 6, "{r:?}");
}

#[test]
fn with_wall_clock_real_waits_move_the_virtual_clock_and_the_session_still_replays() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("wall.ron");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .args(["mcp", "--seed", "2", "--wall-clock", "1000", "--record", record.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentsim starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: String| -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    ask(request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}})));
    let call = |id| request(id, "tools/call", json!({"name": "get_customer", "arguments": {"customer_id": "C001"}}));
    let first = ask(call(2));
    // An agent that backs off by sleeping: 300 ms of real time is at least 300
    // virtual seconds at scale 1000.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let second = ask(call(3));
    let at = |r: &Value| r["result"]["_meta"]["agentsim/now_ms"].as_u64().unwrap();
    assert!(at(&second) - at(&first) >= 300_000, "{} -> {}", at(&first), at(&second));
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let replay = agentsim(dir.path(), &["replay", "wall.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
}

#[test]
fn a_client_that_stops_reading_ends_the_session_which_is_judged_and_recorded() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("gone.ron");
    // Stdout is a pipe whose read end is closed: the client reads nothing.
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills the two descriptors; each is then owned exactly once.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .args(["mcp", "--record", record.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentsim starts");
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}})),
        request(2, "tools/call", json!({"name": "get_customer", "arguments": {"customer_id": "C001"}})),
    ] {
        // The server may already have ended the session and closed its stdin.
        let _ = writeln!(stdin, "{line}");
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(stderr.contains("stopped reading") && stderr.contains("outcome:"), "{stderr}");
    let replay = agentsim(dir.path(), &["replay", "gone.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
}

#[test]
fn a_wall_clock_scale_beyond_its_bound_is_refused_naming_the_flag() {
    for scale in ["1e17", "1e300", "inf", "0", "-1"] {
        let (responses, stderr, ok) = session(&[&format!("--wall-clock={scale}")], &[]);
        assert!(!ok && responses.is_empty(), "{scale}: {stderr}");
        assert!(stderr.contains("--wall-clock"), "{scale}: {stderr}");
    }
    let (_, stderr, ok) = session(&["--wall-clock", "1e6"], &[]);
    assert!(ok, "{stderr}");
}

/// A failed call's text says the status, whether repeating it can help and how
/// long to wait: the OpenAI Agents SDK hands the model only this text.
#[test]
fn a_failed_calls_error_says_status_retryable_and_retry_after() {
    use agentsim::mcp::errors::error_body;
    use agentsim_engine::Reply;
    let error = |reply: Reply| error_body(&reply).expect("a failed reply has an error body")["error"].clone();
    let limited = error(Reply::Error { status: 429, retry_after_ms: Some(2_000), message: "rate limited".into() });
    assert_eq!(limited["status"], 429);
    assert_eq!(limited["retryable"], true);
    assert_eq!(limited["retry_after_ms"], 2_000);
    assert_eq!(
        limited["explanation"],
        "HTTP 429 rate limited: temporary, retryable; wait at least 2000 ms (2.0 s, the server's Retry-After) \
         before repeating the call."
    );
    let unavailable = error(Reply::Error { status: 503, retry_after_ms: None, message: "service unavailable".into() });
    assert_eq!((&unavailable["retryable"], &unavailable["retry_after_ms"]), (&json!(true), &Value::Null));
    assert!(unavailable["explanation"].as_str().unwrap().contains("no Retry-After"), "{unavailable}");
    for (status, says) in [(401, "authenticate again"), (404, "does not exist"), (400, "change it")] {
        let refused = error(Reply::Error { status, retry_after_ms: None, message: "no".into() });
        assert_eq!(refused["retryable"], false, "{refused}");
        let explanation = refused["explanation"].as_str().unwrap();
        assert!(explanation.starts_with(&format!("HTTP {status} no: not retryable")), "{explanation}");
        assert!(explanation.contains(says), "{explanation}");
    }
    let timeout = error(Reply::Timeout);
    assert_eq!((&timeout["status"], &timeout["retryable"]), (&json!(504), &json!(true)));
    assert!(timeout["explanation"].as_str().unwrap().contains("may still have taken effect"), "{timeout}");
    let garbled = error(Reply::Garbled("<html>".into()));
    assert_eq!((&garbled["status"], &garbled["body"]), (&json!(200), &json!("<html>")));
    assert!(error_body(&Reply::Ok(Default::default())).is_none());
}

/// The refund ids of the `issue_refund` answers of a session that sends the same
/// refund twice, with `meta` as the calls' `_meta`.
fn refund_twice(dir: &std::path::Path, meta: Value) -> Vec<Value> {
    let refund = |id| {
        request(
            id,
            "tools/call",
            json!({"name": "issue_refund", "arguments": {"order_id": "A1001", "amount_cents": 1299}, "_meta": meta}),
        )
    };
    let lines = vec![
        request(1, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}})),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        refund(2),
        refund(3),
    ];
    let record = dir.join("session.ron");
    let args = ["--seed", "0", "--fault-scale", "0", "--record", record.to_str().unwrap()];
    let (responses, log, ok) = session(&args, &lines);
    assert!(ok, "{log}");
    let replay = agentsim(dir, &["replay", "session.ron"], &[]);
    assert!(replay.status.success(), "the session replays without the client: {}", text(&replay));
    responses[1..].iter().map(|r| r["result"]["structuredContent"]["refund_id"].clone()).collect()
}

#[test]
fn the_same_refund_sent_twice_with_the_same_idempotency_key_is_charged_once() {
    let dir = tempfile::tempdir().unwrap();
    let keyed = refund_twice(dir.path(), json!({"agentsim/idempotency_key": "refund-A1001-1"}));
    assert_eq!(keyed, [json!("R9001"), json!("R9001")], "the second answer is the first refund's");
    let unkeyed = refund_twice(dir.path(), json!({}));
    assert_eq!(unkeyed, [json!("R9001"), json!("R9002")], "without a key, two refunds");

    let bad = request(
        2,
        "tools/call",
        json!({"name": "lookup_order", "arguments": {"order_id": "A1001"}, "_meta": {"agentsim/idempotency_key": 7}}),
    );
    let (responses, _, _) = session(&["--seed", "0"], &[request(1, "initialize", json!({})), bad]);
    assert_eq!(responses[1]["error"]["code"], -32602);
    assert!(responses[1]["error"]["message"].as_str().unwrap().contains("agentsim/idempotency_key"), "{responses:?}");
}

#[test]
fn only_jsonrpc_2_0_is_served_and_nothing_reaches_the_world_before_initialize() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("early.ron");
    let lookup = json!({"name": "lookup_order", "arguments": {"order_id": "A1001"}});
    let lines = vec![
        // Before initialize: refused, and not an action in the world.
        request(1, "tools/call", lookup.clone()),
        request(2, "tools/list", json!({})),
        request(3, "prompts/get", json!({"name": "task"})),
        request(4, "ping", json!({})),
        // Not JSON-RPC 2.0: refused whatever the method.
        json!({"jsonrpc": "1.0", "id": 5, "method": "initialize", "params": {}}).to_string(),
        json!({"id": 6, "method": "initialize", "params": {}}).to_string(),
        json!({"jsonrpc": 2.0, "id": 7, "method": "ping"}).to_string(),
        request(8, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}})),
        json!({"jsonrpc": "1.0", "id": 9, "method": "tools/call", "params": lookup}).to_string(),
        request(10, "ping", json!({})),
    ];
    let (r, stderr, ok) = session(&["--seed", "1", "--record", record.to_str().unwrap()], &lines);
    assert!(ok, "{stderr}");
    assert_eq!(r.len(), 10, "{r:?}");
    for (answer, id) in r[..3].iter().zip([1, 2, 3]) {
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&json!(id), &json!(-32002)), "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("initialize"), "{answer}");
    }
    assert_eq!(r[3]["result"], json!({}), "ping is answered before initialize");
    for (answer, id) in [(&r[4], 5), (&r[5], 6), (&r[6], 7), (&r[8], 9)] {
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&json!(id), &json!(-32600)), "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("`jsonrpc` must be \"2.0\""), "{answer}");
    }
    assert_eq!(r[7]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(r[9]["result"], json!({}));
    // No call reached the world, nor the recording.
    assert!(stderr.contains("tool calls 0 "), "{stderr}");
    assert!(!stderr.contains("lookup_order ->"), "{stderr}");
    let incident = std::fs::read_to_string(&record).unwrap();
    assert!(incident.contains("Replayed(") && !incident.contains("(\"action\", Str(\"call\"))"), "{incident}");
    let replay = agentsim(dir.path(), &["replay", "early.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
}

/// Starts `agentsim mcp ARGS` with piped stdin and stdout.
fn server(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .arg("mcp")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentsim starts")
}

/// Writes `line` to the server and reads its answer.
fn ask(child: &mut std::process::Child, stdout: &mut impl std::io::BufRead, line: &str) -> Value {
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

#[test]
fn a_sigterm_right_after_the_last_answer_still_judges_and_records_the_session() {
    use std::io::BufReader;
    let dir = tempfile::tempdir().unwrap();
    // An MCP stdio client's shutdown: close stdin, then SIGTERM; or SIGTERM alone.
    for close_stdin in [true, false] {
        let name = format!("term-{close_stdin}.ron");
        let record = dir.path().join(&name);
        let mut child = server(&["--seed", "1", "--record", record.to_str().unwrap()]);
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        ask(&mut child, &mut stdout, &request(1, "initialize", json!({})));
        let call = request(2, "tools/call", json!({"name": "get_customer", "arguments": {"customer_id": "C001"}}));
        assert_eq!(ask(&mut child, &mut stdout, &call)["result"]["isError"], false);
        if close_stdin {
            drop(child.stdin.take());
        }
        // SAFETY: `kill` has no memory preconditions; the child is not yet reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{:?}: {stderr}", output.status);
        assert!(stderr.contains("outcome:") && stderr.contains("tool calls 1 "), "{stderr}");
        let replay = agentsim(dir.path(), &["replay", &name], &[]);
        assert!(replay.status.success(), "{name}: {}", text(&replay));
    }
}

#[test]
fn a_session_a_budget_ended_is_on_disk_before_the_client_is_told() {
    use std::io::BufReader;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("ended.ron");
    let mut child = server(&["--seed", "3", "--record", record.to_str().unwrap()]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    ask(&mut child, &mut stdout, &request(0, "initialize", json!({})));
    // The scenario allows 40 turns: the 40th call ends the run.
    let call = |id| request(id, "tools/call", json!({"name": "lookup_order", "arguments": {"order_id": "A1001"}}));
    let mut id = 1;
    loop {
        let answer = ask(&mut child, &mut stdout, &call(id));
        if answer["result"]["content"][0]["text"].as_str().unwrap_or("").contains("has ended") {
            break;
        }
        id += 1;
        assert!(id < 100, "the budget ends the session: {answer}");
    }
    // Told, the client may be killed at once: the session is already recorded.
    assert!(record.is_file(), "recorded before the answer that says the session has ended");
    child.kill().unwrap();
    child.wait().unwrap();
    let replay = agentsim(dir.path(), &["replay", "ended.ron"], &[]);
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(String::from_utf8_lossy(&replay.stdout).contains("budget_exhausted"), "{}", text(&replay));
}

#[test]
fn say_to_user_writes_in_words_and_answers_with_the_reply_and_the_session_replays() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mcp/support_desk_text_client.py");
    let mut recorded = Vec::new();
    for name in ["a.ron", "b.ron"] {
        let args = [script, "--", env!("CARGO_BIN_EXE_agentsim"), "mcp", "--seed", "3", "--fault-scale", "0"];
        let output = Command::new("python3")
            .current_dir(dir.path())
            .args(args)
            .args(["--record", name])
            .output()
            .expect("python3 runs");
        let log = text(&output);
        assert!(output.status.success(), "{log}");
        // Seed 3's customer changes its mind when asked in words, then agrees.
        assert!(log.contains("say_to_user -> the user says: Actually, sorry"), "{log}");
        assert!(log.contains("outcome: success"), "{log}");
        assert!(log.contains("verdict: refunded 2450 cents on A1003 and told the customer"), "{log}");
        recorded.push(std::fs::read(dir.path().join(name)).unwrap());
    }
    assert_eq!(recorded[0], recorded[1], "the same seed and words record the same incident");
    let replay = agentsim(dir.path(), &["replay", "a.ron"], &[]);
    assert!(String::from_utf8_lossy(&replay.stdout).contains("PASS a.ron: success"), "{}", text(&replay));
    // Listed after the world's tools; its argument checked like any other.
    let lines = vec![
        request(0, "initialize", json!({})),
        request(1, "tools/list", json!({})),
        request(2, "tools/call", json!({"name": "say_to_user", "arguments": {}})),
        request(3, "tools/call", json!({"name": "say_to_user", "arguments": {"text": 5}})),
        request(4, "tools/call", json!({"name": "say_to_user", "arguments": {"text": "Which order is it?"}})),
    ];
    let (mut r, stderr, ok) = session(&["--seed", "3", "--fault-scale", "0"], &lines);
    assert!(ok, "{stderr}");
    r.remove(0);
    let tools = r[0]["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap()["name"], "say_to_user");
    assert_eq!(tools.last().unwrap()["inputSchema"]["required"], json!(["text"]));
    assert_eq!(r[1]["error"]["code"], -32602, "{:?}", r[1]);
    assert!(r[2]["error"]["message"].as_str().unwrap().contains("`text` must be a string"), "{:?}", r[2]);
    let reply = r[3]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(reply.contains("A1003"), "the customer answers the order asked for: {reply}");
    assert_eq!(r[3]["result"]["structuredContent"]["user_reply"], reply);
    assert_eq!(r[3]["result"]["isError"], false);
}
