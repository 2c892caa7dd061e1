//! A model as the agent (`--agent llm:MODEL`), against a fake
//! OpenAI-compatible server on the loopback: recording a cassette, replaying
//! it offline to the same bytes on 1 and 4 threads, a missing answer, the
//! provider's own failures retried, and a pinned cassette key.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value as Json, json};

use crate::common::{agentsim, text};

/// Faults the fake server puts on the first request it sees of each episode
/// (its first request: two messages), once per distinct request.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// A 429 with `Retry-After: 0`.
    rate_limit: bool,
    /// A 500.
    server_error: bool,
    /// A tool call whose arguments are not JSON.
    malformed: bool,
}

/// A fake OpenAI-compatible server, answering with a scripted support_desk
/// agent (a function of the conversation, so the same request always gets the
/// same answer), started on 127.0.0.1:0 and stopped when dropped.
struct Fake {
    base_url: String,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Fake {
    fn start(faults: Faults) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let (requests, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let (count, stopping) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (count, seen) = (count.clone(), seen.clone());
                        std::thread::spawn(move || serve(stream, faults, &count, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Fake { base_url, requests, stop, thread: Some(thread) }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// Reads one request (headers, then `Content-Length` bytes) and answers it.
fn serve(stream: TcpStream, faults: Faults, count: &AtomicUsize, seen: &Mutex<BTreeSet<String>>) {
    stream.set_nonblocking(false).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    count.fetch_add(1, Ordering::SeqCst);
    let request: Json = serde_json::from_slice(&body).unwrap();
    let (status, extra, answer) = respond(&request, faults, seen);
    let text = answer.to_string();
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        text.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(text.as_bytes()));
}

/// The status line's rest, extra headers and body for `request`.
fn respond(request: &Json, faults: Faults, seen: &Mutex<BTreeSet<String>>) -> (&'static str, String, Json) {
    let messages = request["messages"].as_array().unwrap();
    let first_sight =
        |fault: &str| messages.len() == 2 && seen.lock().unwrap().insert(format!("{fault} {}", messages[1]["content"]));
    if faults.rate_limit && first_sight("429") {
        return ("429 Too Many Requests", "Retry-After: 0\r\n".into(), json!({"error": {"message": "slow down"}}));
    }
    if faults.server_error && first_sight("500") {
        return ("500 Internal Server Error", String::new(), json!({"error": {"message": "oops"}}));
    }
    let mut answer = script(messages);
    if faults.malformed && first_sight("malformed") {
        answer = json!({"tool_calls": [{"id": "bad", "type": "function",
            "function": {"name": "lookup_order", "arguments": "{\"order_id\": "}}]});
    }
    let chars: usize = messages.iter().map(|m| m.to_string().len()).sum();
    let body = json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "model": request["model"],
        "choices": [{"index": 0, "message": answer, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": chars / 4, "completion_tokens": 20, "total_tokens": chars / 4 + 20},
    });
    ("200 OK", String::new(), body)
}

/// The scripted agent: look the order up, propose the refund in words, refund
/// after a yes, tell the amount, end the conversation.
fn script(messages: &[Json]) -> Json {
    fn said<'a>(m: &'a Json, role: &str) -> Option<&'a str> {
        (m["role"] == role).then(|| m["content"].as_str().unwrap_or_default())
    }
    let user: Vec<&str> = messages.iter().filter_map(|m| said(m, "user")).collect();
    let Some(order_id) = user.iter().find_map(|t| order_id(t)) else {
        return say("Could you tell me your order number?");
    };
    let results = tool_results(messages);
    let order = results.iter().rev().find(|(name, r)| name == "lookup_order" && r["ok"] == true);
    let Some((_, order)) = order else { return call(messages, "lookup_order", json!({"order_id": order_id})) };
    let (item, amount) = item_and_amount(&user, &order["body"]);
    let money = format!("${}.{:02}", amount / 100, amount % 100);
    let last_refund = results.iter().rposition(|(name, _)| name == "issue_refund");
    let refunded = results.iter().any(|(name, r)| name == "issue_refund" && r["ok"] == true)
        || last_refund.is_some_and(|at| {
            // A refund that timed out may have been applied: the order says.
            results[at..].iter().any(|(name, r)| {
                name == "lookup_order" && r["ok"] == true && r["body"]["refunded_cents"].as_i64() >= Some(amount)
            })
        });
    if refunded {
        let told = messages.iter().filter_map(|m| said(m, "assistant")).any(|t| t.starts_with("I've refunded"));
        if told {
            return call(messages, "end_conversation", json!({"outcome": "done"}));
        }
        return say(&format!("I've refunded {money} on order {order_id}."));
    }
    if let Some(at) = last_refund
        && results[at].1["ok"] != true
        && !results[at..].iter().any(|(name, r)| name == "lookup_order" && r["ok"] == true)
    {
        return call(messages, "lookup_order", json!({"order_id": order_id}));
    }
    let proposed = messages.iter().rposition(|m| said(m, "assistant").is_some_and(|t| t.starts_with("Shall I")));
    let agreed = proposed.is_some_and(|at| {
        messages[at..].iter().filter_map(|m| said(m, "user")).any(|t| {
            let t = t.to_lowercase();
            ["yes", "correct", "go ahead", "ok", "sure", "right"].iter().any(|w| t.contains(w))
        })
    });
    if agreed {
        let args = json!({"order_id": order_id, "amount_cents": amount, "reason": "customer request"});
        return call(messages, "issue_refund", args);
    }
    say(&format!("Shall I refund the {item} from order {order_id}, {money}?"))
}

fn say(text: &str) -> Json {
    json!({"role": "assistant", "content": text})
}

fn call(messages: &[Json], name: &str, args: Json) -> Json {
    let id = format!("call_{}", messages.len());
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}
    ]})
}

/// Each tool result with the name of the function it answers.
fn tool_results(messages: &[Json]) -> Vec<(String, Json)> {
    let name_of = |id: &Json| {
        messages.iter().flat_map(|m| m["tool_calls"].as_array().into_iter().flatten()).find(|c| c["id"] == *id)
    };
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| {
            let name = name_of(&m["tool_call_id"])?["function"]["name"].as_str()?.to_string();
            Some((name, serde_json::from_str(m["content"].as_str()?).ok()?))
        })
        .collect()
}

fn order_id(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() == 5 && w.starts_with('A') && w[1..].chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
}

/// The item the customer named (or the whole order) and its amount.
fn item_and_amount(user: &[&str], order: &Json) -> (String, i64) {
    let items = order["items"].as_array().cloned().unwrap_or_default();
    for item in &items {
        let name = item["name"].as_str().unwrap_or_default();
        if user.iter().any(|t| t.contains(name)) {
            return (name.to_string(), item["price_cents"].as_i64().unwrap_or(0));
        }
    }
    ("whole order".into(), order["total_cents"].as_i64().unwrap_or(0))
}

/// `agentsim sweep` of support_desk with the fake model, into `out`.
fn sweep(dir: &Path, fake: Option<&Fake>, cassette: Option<(&str, &str)>, out: &str, threads: &str) -> String {
    let base_url = fake.map_or("http://127.0.0.1:9/v1".to_string(), |f| f.base_url.clone());
    let mut args = vec!["sweep", "support_desk", "--agent", "llm:fake", "--seeds", "0..12", "--out", out];
    args.extend(["--llm-base-url", &base_url]);
    if let Some((folder, mode)) = cassette {
        args.extend(["--cassette", folder, "--cassette-mode", mode]);
    }
    let output = agentsim(
        dir,
        &args,
        &[("RAYON_NUM_THREADS", threads), ("OPENAI_API_KEY", ""), ("AGENTSIM_LLM_BACKOFF_MS", "10")],
    );
    assert!(output.status.success(), "{}", text(&output));
    let read = |file: &str| std::fs::read_to_string(dir.join(out).join(file)).unwrap();
    read("trajectories.csv") + read("summary.json").as_str()
}

fn outcomes(csv_and_summary: &str) -> Vec<String> {
    let csv = csv_and_summary.split("\n{").next().unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header.iter().position(|c| *c == "outcome").unwrap();
    lines.map(|l| l.split(',').nth(column).unwrap().to_string()).collect()
}

#[test]
fn a_sweep_records_a_cassette_and_replays_it_offline_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(Faults::default());
    let recorded = sweep(dir.path(), Some(&fake), Some(("cassette", "record-missing")), "recorded", "4");
    assert!(fake.requests() > 12, "every episode asked the model: {} requests", fake.requests());
    let successes = outcomes(&recorded).iter().filter(|o| *o == "success").count();
    assert!(successes >= 6, "the scripted model completes most episodes: {:?}", outcomes(&recorded));
    assert!(recorded.contains("llm.answer="), "{recorded}");
    let entries = std::fs::read_dir(dir.path().join("cassette")).unwrap().count();
    assert!(entries > 12, "one file per request: {entries}");
    drop(fake);

    // The server is gone: the answers come from the cassette alone.
    let one = sweep(dir.path(), None, Some(("cassette", "replay")), "one", "1");
    let four = sweep(dir.path(), None, Some(("cassette", "replay")), "four", "4");
    assert_eq!(one, four, "the same bytes on 1 and 4 threads");
    assert_eq!(one, recorded, "the replay is the recording");
    // `run` replays a seed of the sweep from the same cassette, in words.
    let run = agentsim(
        dir.path(),
        &[
            "run",
            "support_desk",
            "--agent",
            "llm:fake",
            "--seed",
            "1",
            "--cassette",
            "cassette",
            "--cassette-mode",
            "replay",
        ],
        &[],
    );
    let timeline = text(&run);
    assert!(timeline.contains("agent says    Shall I refund the"), "{timeline}");
    assert!(timeline.contains("outcome: success"), "{timeline}");
    // Tokens are the answer's usage (the fake says 20 completion tokens), and
    // think time is the scenario's draw, the same as the oracle's on this seed.
    assert!(timeline.contains("model call: 192 prompt + 20 completion tokens, 869 ms"), "{timeline}");
}

#[test]
fn a_missing_answer_in_replay_ends_the_episode_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let output = agentsim(
        dir.path(),
        &["run", "support_desk", "--agent", "llm:fake", "--cassette", "empty", "--cassette-mode", "replay"],
        &[],
    );
    let all = text(&output);
    assert!(all.contains("outcome: agent_error"), "{all}");
    assert!(all.contains("the cassette has no answer for request"), "{all}");
    assert!(all.contains(&format!("empty{}", std::path::MAIN_SEPARATOR)) && all.contains(".json"), "{all}");
    assert!(all.contains("llm           error.missing_answer"), "{all}");
}

#[test]
fn provider_failures_are_retried_and_change_no_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let clean = Fake::start(Faults::default());
    let expected = sweep(dir.path(), Some(&clean), None, "clean", "4");
    drop(clean);
    let faults = Faults { rate_limit: true, server_error: true, malformed: true };
    let faulty = Fake::start(faults);
    let got = sweep(dir.path(), Some(&faulty), Some(("c", "record-missing")), "faulty", "4");
    assert_eq!(outcomes(&got), outcomes(&expected));
    // Three failed attempts before each episode's first answer: the provider's, not the world's.
    assert!(got.contains("\"llm.retry\""), "{got}");
    assert!(got.contains("llm.retry=3"), "{got}");
    drop(faulty);
    // The retries are part of the recording: the replay tells them again.
    let replayed = sweep(dir.path(), None, Some(("c", "replay")), "replayed", "1");
    assert_eq!(replayed, got);
}

#[test]
fn retries_that_run_out_end_the_episode_as_agent_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = agentsim(
        dir.path(),
        &["run", "support_desk", "--agent", "llm:fake", "--llm-base-url", "http://127.0.0.1:9/v1"],
        &[("AGENTSIM_LLM_BACKOFF_MS", "1")],
    );
    let all = text(&output);
    assert!(all.contains("outcome: agent_error"), "{all}");
    assert!(all.contains("on all 6 attempts: connection"), "{all}");
}

#[test]
fn the_cassette_key_of_a_fixed_request_is_pinned() {
    use agentsim_agents::llm::{LlmConfig, request};
    let prepared = crate::common::default_scenario();
    let mut config = LlmConfig::new("fake");
    config.system = "You help.".into();
    let messages = [json!({"role": "system", "content": "You help."}), json!({"role": "user", "content": "Hi"})];
    let body = request::body(&config, &messages, &request::tools(&prepared.catalog));
    assert_eq!(request::key(&body), "bac8dcd35c7315030deb9b454571504dd089adba292fea89dff59d2d44f65b01");
}

#[test]
fn a_stack_file_names_the_model_and_layers_wrap_it_as_they_wrap_a_preset() {
    let root = env!("CARGO_MANIFEST_DIR");
    let seeds = std::fs::read_to_string(format!("{root}/seeds/stacks/llm_resilient.ron")).unwrap();
    let stack = agentsim::spec::parse_stack(&seeds, "llm_resilient.ron").unwrap();
    assert!(matches!(stack.planner, agentsim_agents::PlannerSpec::Llm(ref c) if c.model == "gpt-4o-mini"));
    assert_eq!(stack.layers.len(), 4);

    let dir = tempfile::tempdir().unwrap();
    let layers = format!("{root}/seeds/stacks/resilient.ron");
    let file = seeds.replace("gpt-4o-mini", "fake");
    std::fs::write(dir.path().join("llm.ron"), file).unwrap();
    let fake = Fake::start(Faults::default());
    let run = |agent: &[&str], out: &str| {
        let mut args = vec!["sweep", "support_desk", "--seeds", "0..6", "--out", out];
        args.extend_from_slice(agent);
        args.extend(["--llm-base-url", &fake.base_url]);
        let output = agentsim(dir.path(), &args, &[("OPENAI_API_KEY", "")]);
        assert!(output.status.success(), "{}", text(&output));
        std::fs::read_to_string(dir.path().join(out).join("trajectories.csv")).unwrap()
    };
    let from_file = run(&["--agent", "llm.ron"], "file");
    let with_layers = run(&["--agent", "llm:fake", "--layers", &layers], "layers");
    assert_eq!(from_file, with_layers, "the same model behind the same layers");
    assert!(from_file.contains("idempotency"), "the layers acted: {from_file}");
}
