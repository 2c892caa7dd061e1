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

/// Faults the fake server puts on the first request it sees of each episode's
/// agent and user (their first request: two messages), once per distinct request.
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
        |fault: &str| messages.len() == 2 && seen.lock().unwrap().insert(format!("{fault} {}", request["messages"]));
    if faults.rate_limit && first_sight("429") {
        return ("429 Too Many Requests", "Retry-After: 0\r\n".into(), json!({"error": {"message": "slow down"}}));
    }
    if faults.server_error && first_sight("500") {
        return ("500 Internal Server Error", String::new(), json!({"error": {"message": "oops"}}));
    }
    let tau2 = request["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|f| f["function"]["name"] == "find_user_id_by_name_zip"));
    let model = request["model"].as_str().unwrap_or_default();
    let mut answer = match request.get("tools") {
        Some(_) if tau2 => tau2_agent(messages),
        Some(_) => script(messages, model == "fake-terse"),
        None if model.starts_with("judge-") => judge(messages, model),
        None => customer(messages),
    };
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
/// after a yes, tell the amount, end the conversation. A `terse` agent (the
/// model `fake-terse`) closes as "Refund: $89.00, order A1002, keyboard.",
/// which the rules reader cannot decide (it never says the refund was done).
fn script(messages: &[Json], terse: bool) -> Json {
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
        let told = messages
            .iter()
            .filter_map(|m| said(m, "assistant"))
            .any(|t| t.starts_with("I've refunded") || t.starts_with("Refund:"));
        if told {
            return call(messages, "end_conversation", json!({"outcome": "done"}));
        }
        if terse {
            return say(&format!("Refund: {money}, order {order_id}, {item}."));
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

/// The scripted customer (a request without tools is the user's): states the
/// reason for the call from its instructions, gives its known info when asked,
/// agrees to a proposal, and ends with tau2's stop token once told it is done.
fn customer(messages: &[Json]) -> Json {
    let system = messages[0]["content"].as_str().unwrap_or_default();
    assert!(system.starts_with("# User Simulation Guidelines") && system.contains("<scenario>"), "{system}");
    let line_after = |heading: &str| {
        system.split(heading).nth(1).and_then(|rest| rest.lines().nth(1)).unwrap_or_default().trim().to_string()
    };
    let agent = messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default();
    let words = if agent == "Hi! How can I help you today?" {
        line_after("Reason for call:")
    } else if agent.starts_with("Shall I") {
        "Yes, please go ahead.".to_string()
    } else if agent.starts_with("I've refunded") || agent.starts_with("I found your account") {
        "Thank you, that's all. ###STOP###".to_string()
    } else if agent.contains('?') {
        let known = system.split("Known info:\n").nth(1).unwrap_or_default();
        let facts: Vec<String> = known
            .lines()
            .take_while(|l| l.starts_with("\t\t"))
            .map(|l| l.trim().replacen(": ", " is ", 1).replace('_', " "))
            .collect();
        format!("My {}.", facts.join(", my "))
    } else {
        "OK.".to_string()
    };
    json!({"role": "assistant", "content": words})
}

/// The scripted judge (a request without tools from a model named `judge-..`):
/// `judge-done` reads every message as the refund done with the customer's
/// facts (the amount in cents, the order and the item); `judge-not-done` as
/// not done; `judge-garbage` answers words that are not the JSON asked.
fn judge(messages: &[Json], model: &str) -> Json {
    let system = messages[0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("\"done\": true | false | null"), "{system}");
    let asked = messages[1]["content"].as_str().unwrap_or_default();
    let fact =
        |name: &str| asked.lines().find_map(|l| l.strip_prefix(&format!("- {name}: "))).unwrap_or_default().to_string();
    let amount = fact("amount");
    let (dollars, cents) = amount.trim_start_matches('$').split_once('.').unwrap_or(("0", "0"));
    let amount_cents = dollars.parse::<i64>().unwrap() * 100 + cents.parse::<i64>().unwrap();
    let words = match model {
        "judge-done" => {
            json!({"done": true, "amount_cents": amount_cents, "order_id": fact("order_id"), "item": fact("item")})
                .to_string()
        }
        "judge-not-done" => json!({"done": false, "amount_cents": null, "order_id": null, "item": null}).to_string(),
        _ => "I would say it was probably done.".to_string(),
    };
    json!({"role": "assistant", "content": words})
}

/// A tau2 retail agent that finds the customer by name and zip code, tells
/// them, and ends the conversation (it changes nothing: tasks whose gold
/// database is the initial one succeed, the others fail as tau2 judges them).
fn tau2_agent(messages: &[Json]) -> Json {
    let user: Vec<&str> =
        messages.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_str()).collect();
    let fact = |name: &str| {
        let said = format!("{name} is ");
        user.iter().find_map(|t| t.split(&said).nth(1)).map(|rest| rest.split([',', '.']).next().unwrap_or("").trim())
    };
    let found = tool_results(messages);
    if let Some((_, result)) = found.first() {
        if messages.last().is_some_and(|m| m["role"] == "user") {
            return call(messages, "end_conversation", json!({"outcome": "done"}));
        }
        return match result["ok"] == true {
            true => say(&format!("I found your account {}.", result["body"].as_str().unwrap_or("?"))),
            false => call(messages, "end_conversation", json!({"outcome": "gave_up", "reason": "not found"})),
        };
    }
    if let (Some(first), Some(last), Some(zip)) = (fact("first name"), fact("last name"), fact("zip")) {
        return call(messages, "find_user_id_by_name_zip", json!({"first_name": first, "last_name": last, "zip": zip}));
    }
    let asked = messages.iter().filter(|m| m["role"] == "assistant" && m["content"].is_string()).count();
    if asked >= 2 {
        return call(messages, "end_conversation", json!({"outcome": "gave_up", "reason": "no name and zip"}));
    }
    say("Could you tell me your first name, last name and zip code?")
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

#[test]
fn a_failing_episode_replays_and_shrinks_offline_from_its_incident() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(Faults::default());
    let recorded = sweep(dir.path(), Some(&fake), Some(("cassette", "record-missing")), "recorded", "4");
    drop(fake);
    // No server, no cassette: the incidents alone must do.
    std::fs::remove_dir_all(dir.path().join("cassette")).unwrap();
    let mut incidents: Vec<_> = std::fs::read_dir(dir.path().join("recorded/failures"))
        .expect("the sweep kept its failing seeds")
        .map(|e| e.unwrap().path())
        .collect();
    incidents.sort();
    assert!(!incidents.is_empty(), "{recorded}");
    for file in &incidents {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains("answers: ["), "the incident carries its answers: {text}");
        let digest = text.split("digest: \"").nth(1).unwrap().split('"').next().unwrap();
        let name = file.to_str().unwrap();
        let replayed = agentsim(dir.path(), &["replay", name], &[("OPENAI_API_KEY", "")]);
        let all = text_of(&replayed);
        assert!(replayed.status.success(), "{all}");
        assert!(all.contains(&format!("(digest {digest})")), "the recorded digest: {all}");
    }
    // `shrink` of an incident runs offline too, and its incident replays.
    let first = incidents[0].to_str().unwrap();
    let shrunk = agentsim(dir.path(), &["shrink", "--incident", first, "--out", "shrunk.ron"], &[]);
    assert!(shrunk.status.success(), "{}", text_of(&shrunk));
    let again = agentsim(dir.path(), &["replay", "shrunk.ron"], &[]);
    assert!(again.status.success(), "{}", text_of(&again));
}

fn text_of(output: &std::process::Output) -> String {
    text(output)
}

/// `agentsim sweep` of support_desk with the fake model as the agent and the
/// user, into `out`; the CSV and the summary.
fn sweep_both(dir: &Path, fake: Option<&Fake>, mode: &str, out: &str, threads: &str) -> String {
    sweep_both_with(dir, fake, mode, out, threads, &[])
}

/// [`sweep_both`] with more arguments.
fn sweep_both_with(dir: &Path, fake: Option<&Fake>, mode: &str, out: &str, threads: &str, more: &[&str]) -> String {
    let base_url = fake.map_or("http://127.0.0.1:9/v1".to_string(), |f| f.base_url.clone());
    let mut args = vec![
        "sweep",
        "support_desk",
        "--agent",
        "llm:fake",
        "--user",
        "llm:fake",
        "--seeds",
        "0..12",
        "--out",
        out,
        "--llm-base-url",
        &base_url,
        "--cassette",
        "both",
        "--cassette-mode",
        mode,
    ];
    args.extend_from_slice(more);
    let env = [("RAYON_NUM_THREADS", threads), ("OPENAI_API_KEY", ""), ("AGENTSIM_LLM_BACKOFF_MS", "10")];
    let output = agentsim(dir, &args, &env);
    assert!(output.status.success(), "{}", text(&output));
    let read = |file: &str| std::fs::read_to_string(dir.join(out).join(file)).unwrap();
    read("trajectories.csv") + read("summary.json").as_str()
}

#[test]
fn a_model_plays_the_user_records_and_replays_offline_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(Faults { rate_limit: false, server_error: false, malformed: false });
    let recorded = sweep_both(dir.path(), Some(&fake), "record", "recorded", "4");
    let successes = outcomes(&recorded).iter().filter(|o| *o == "success").count();
    assert!(successes >= 6, "the scripted model and customer complete most episodes: {:?}", outcomes(&recorded));
    assert!(recorded.contains("llm_user.answer="), "the user's requests are noted: {recorded}");
    // The user's requests are in the same cassette, under keys of their own.
    let entries: Vec<Json> = std::fs::read_dir(dir.path().join("both"))
        .unwrap()
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    let users = entries.iter().filter(|e| e["request"].get("tools").is_none()).count();
    assert!(users >= 12 && users < entries.len(), "{users} of {} entries are the user's", entries.len());
    drop(fake);

    let one = sweep_both(dir.path(), None, "replay", "one", "1");
    let four = sweep_both(dir.path(), None, "replay", "four", "4");
    assert_eq!(one, four, "the same bytes on 1 and 4 threads");
    assert_eq!(one, recorded, "the replay is the recording (64 episodes were in flight)");
    let in_flight = sweep_both_with(dir.path(), None, "replay", "in-flight", "1", &["--in-flight", "5"]);
    assert_eq!(in_flight, recorded, "the same bytes with 5 episodes in flight");

    // The user speaks the model's words; the world's user still judges.
    let run = agentsim(
        dir.path(),
        &[
            "run",
            "support_desk",
            "--agent",
            "llm:fake",
            "--user",
            "llm:fake",
            "--seed",
            "1",
            "--cassette",
            "both",
            "--cassette-mode",
            "replay",
        ],
        &[],
    );
    let timeline = text(&run);
    assert!(timeline.contains("Yes, please go ahead."), "{timeline}");
    assert!(timeline.contains("user_stopped"), "{timeline}");
    assert!(!timeline.contains("###STOP###"), "the stop token is not said: {timeline}");
}

#[test]
fn the_users_provider_failures_are_its_own_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let clean = Fake::start(Faults::default());
    let expected = sweep_both(dir.path(), Some(&clean), "record", "clean", "4");
    drop(clean);
    std::fs::remove_dir_all(dir.path().join("both")).unwrap();
    // The faults hit each episode's first request of the user (two messages: the
    // system prompt and the greeting) and of the agent.
    let faulty = Fake::start(Faults { rate_limit: true, server_error: true, malformed: false });
    let got = sweep_both(dir.path(), Some(&faulty), "record", "faulty", "4");
    assert_eq!(outcomes(&got), outcomes(&expected));
    assert!(got.contains("llm_user.retry=2"), "{got}");
    drop(faulty);
    let replayed = sweep_both(dir.path(), None, "replay", "replayed", "1");
    assert_eq!(replayed, got);
    // A user's answer missing in replay ends the episode, naming the user's model.
    std::fs::remove_dir_all(dir.path().join("both")).unwrap();
    std::fs::create_dir(dir.path().join("both")).unwrap();
    let run = agentsim(
        dir.path(),
        &[
            "run",
            "support_desk",
            "--agent",
            "llm:fake",
            "--user",
            "llm:fake",
            "--cassette",
            "both",
            "--cassette-mode",
            "replay",
        ],
        &[],
    );
    let all = text(&run);
    assert!(all.contains("outcome: agent_error"), "{all}");
    assert!(all.contains("the user's model failed: replay: the cassette has no answer"), "{all}");
    assert!(all.contains("llm_user      error.missing_answer"), "{all}");
}

/// The tau2 retail data, or `None` (after saying so) when it is missing and not
/// under CI (see tests/tau2.rs).
fn tau2_data() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("AGENTSIM_TAU2_RETAIL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tau2-retail"));
    if dir.join("db.json").is_file() && dir.join("tasks.json").is_file() && dir.join("policy.md").is_file() {
        return Some(dir);
    }
    crate::common::skip("llm on tau2 retail", &format!("no tau2-bench retail data at `{}`", dir.display()));
    None
}

/// docs/llm.md's done-when: `agentsim sweep retail/retail.ron --agent llm:MODEL
/// --user llm:MODEL --seeds A..B --trials K --cassette c/` gives tau2-style
/// results (Wilson intervals, pass^k, tau2's checks), and the same command
/// with the full cassette and no server gives the same bytes, on 1 and 4 threads.
#[test]
fn the_tau2_retail_sweep_with_models_replays_byte_for_byte_without_a_server() {
    let Some(data) = tau2_data() else { return };
    let dir = tempfile::tempdir().unwrap();
    let imported = agentsim(dir.path(), &["import-tau2", data.to_str().unwrap(), "--out", "retail"], &[]);
    assert!(imported.status.success(), "{}", text(&imported));
    let fake = Fake::start(Faults::default());
    let run = |base_url: &str, out: &str, threads: &str| {
        let args = [
            "sweep",
            "retail/retail.ron",
            "--agent",
            "llm:fake",
            "--user",
            "llm:fake",
            "--seeds",
            "0..4",
            "--trials",
            "2",
            "--cassette",
            "c",
            "--llm-base-url",
            base_url,
            "--out",
            out,
        ];
        let output = agentsim(dir.path(), &args, &[("RAYON_NUM_THREADS", threads), ("OPENAI_API_KEY", "")]);
        assert!(output.status.success(), "{}", text(&output));
        let read = |file: &str| std::fs::read_to_string(dir.path().join(out).join(file)).unwrap();
        (read("trajectories.csv"), read("summary.json"))
    };
    let (csv, summary) = run(&fake.base_url.clone(), "live", "4");
    let requests = fake.requests();
    drop(fake);
    let json: Json = serde_json::from_str(&summary).unwrap();
    let completion = &json["completion"];
    assert!(completion["low"].as_f64() <= completion["rate"].as_f64(), "a Wilson interval: {completion}");
    assert!(json["pass_k"].is_object(), "pass^k with --trials 2: {summary}");
    assert!(csv.contains("llm_user.answer=") && csv.contains("llm.answer="), "{csv}");
    assert!(csv.lines().count() == 9, "4 seeds of 2 trials: {csv}");
    assert!(requests > 12, "the agent and the user asked the server: {requests}");
    let outcomes: BTreeSet<&str> = csv.lines().skip(1).filter_map(|l| l.split(',').nth(2)).collect();
    assert!(outcomes.len() >= 2, "tasks are judged by tau2's databases: {outcomes:?}");

    // The same command, the server gone: the cassette answers, byte for byte.
    let offline = "http://127.0.0.1:9/v1";
    assert_eq!(run(offline, "one", "1"), (csv.clone(), summary.clone()), "on 1 thread");
    assert_eq!(run(offline, "four", "4"), (csv, summary), "on 4 threads");
}

#[test]
fn a_scenario_names_its_user_model_without_changing_its_world() {
    let source = include_str!("../seeds/support_desk.ron");
    let with_user = source.replacen(
        "    world: SupportDesk(",
        "    user: Llm(model: \"fake\", temperature: 0.5),\n    world: SupportDesk(",
        1,
    );
    let plain = agentsim_worlds::Scenario::parse(source, "support_desk.ron").unwrap();
    let voiced = agentsim_worlds::Scenario::parse(&with_user, "voiced.ron").unwrap();
    let agentsim_worlds::UserSpec::Llm(model) = &voiced.user else { panic!("a model as the user") };
    assert_eq!((model.model.as_str(), model.temperature), ("fake", Some(0.5)));
    assert_eq!(plain.key(), voiced.key(), "who plays the user is not part of the world's key");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.ron"), with_user.replace("Llm(model:", "Llm(modle:")).unwrap();
    let output = agentsim(dir.path(), &["run", "bad.ron"], &[]);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(2), "{all}");
    assert!(all.contains("bad.ron:") && all.contains("modle"), "{all}");
    let output = agentsim(dir.path(), &["run", "support_desk", "--user", "someone"], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("--user: expected `rules` or `llm:MODEL`, found `someone`"), "{}", text(&output));
}

/// What a [`Scripted`] server answers a request with: the status line's rest,
/// extra header lines, the body.
type Handler = dyn Fn(&str, &Json) -> (String, String, String) + Send + Sync;

/// A loopback server answering each request with a handler of its request
/// line and body; keeps the request lines it saw.
struct Scripted {
    base_url: String,
    lines: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Scripted {
    fn start(handler: Arc<Handler>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let (lines, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (seen, stopping) = (lines.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (seen, handler) = (seen.clone(), handler.clone());
                        std::thread::spawn(move || serve_scripted(stream, &*handler, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Scripted { base_url, lines, stop, thread: Some(thread) }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

fn serve_scripted(stream: TcpStream, handler: &Handler, seen: &Mutex<Vec<String>>) {
    stream.set_nonblocking(false).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut first, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" {
            break;
        }
        if first.is_empty() {
            first = line.trim_end().to_string();
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    seen.lock().unwrap().push(first.clone());
    let request: Json = serde_json::from_slice(&body).unwrap_or(Json::Null);
    let (status, extra, text) = handler(&first, &request);
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        text.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(text.as_bytes()));
}

/// The scripted support_desk model's answer to `request`, as a 200.
fn scripted_answer(request: &Json) -> (String, String, String) {
    let (status, extra, body) = respond(request, Faults::default(), &Mutex::new(BTreeSet::new()));
    (status.to_string(), extra, body.to_string())
}

/// `agentsim run support_desk --agent llm:fake --seed 1` against `base_url`,
/// with more arguments and environment; its stdout and stderr.
fn run_against(dir: &Path, base_url: &str, more: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut args = vec!["run", "support_desk", "--agent", "llm:fake", "--seed", "1", "--llm-base-url", base_url];
    args.extend_from_slice(more);
    let mut env = env.to_vec();
    env.push(("AGENTSIM_LLM_BACKOFF_MS", "1"));
    agentsim(dir, &args, &env)
}

#[test]
fn a_base_url_with_a_query_gets_the_path_before_the_query() {
    let dir = tempfile::tempdir().unwrap();
    let server = Scripted::start(Arc::new(|_, request| scripted_answer(request)));
    let base = format!("{}/v1/?api-version=2024-06-01", server.base_url);
    let output = run_against(dir.path(), &base, &[], &[("OPENAI_API_KEY", "")]);
    assert!(text(&output).contains("outcome: success"), "{}", text(&output));
    let lines = server.lines();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l == "POST /v1/chat/completions?api-version=2024-06-01 HTTP/1.1")
    );
}

#[test]
fn a_redirect_from_the_model_endpoint_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = Scripted::start(Arc::new(|_, request| scripted_answer(request)));
    let target = format!("{}/v1/chat/completions", elsewhere.base_url);
    let redirect = Scripted::start(Arc::new(move |_, _| {
        ("307 Temporary Redirect".into(), format!("Location: {target}\r\n"), "{}".into())
    }));
    let output = run_against(dir.path(), &format!("{}/v1", redirect.base_url), &[], &[("OPENAI_API_KEY", "")]);
    let all = text(&output);
    assert!(elsewhere.lines().is_empty(), "the other host was asked: {all}");
    assert!(all.contains("outcome: agent_error"), "{all}");
    assert!(all.contains("http 307") && all.contains("redirects are not followed"), "{all}");
    assert_eq!(redirect.lines().len(), 1, "a redirect is not retried: {all}");
}

#[test]
fn credentials_in_the_url_and_echoed_by_the_provider_are_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-live-0123456789abcdef";
    let echo = format!(
        "{{\"error\": {{\"message\": \"Incorrect API key provided: {key}. Authorization: Bearer {key}; url had key=qsecret\"}}, \"pad\": \"{}\"}}",
        "x".repeat(4000)
    );
    let server = Scripted::start(Arc::new(move |_, _| ("401 Unauthorized".into(), String::new(), echo.clone())));
    let port = server.base_url.trim_start_matches("http://").to_string();
    let base = format!("http://alice:pw-secret@{port}/v1?key=qsecret&api-version=1");
    let output = run_against(dir.path(), &base, &["--record", "incident.ron"], &[("OPENAI_API_KEY", key)]);
    let incident = std::fs::read_to_string(dir.path().join("incident.ron")).unwrap();
    let all = text(&output) + incident.as_str();
    assert!(all.contains("outcome: agent_error") && all.contains("http 401"), "{all}");
    for secret in [key, "pw-secret", "qsecret", "alice"] {
        assert!(!all.contains(secret), "`{secret}` was written: {all}");
    }
    assert!(all.contains("[redacted]"), "{all}");
    // The stored body is bounded: not the 4,000 bytes of padding.
    assert!(!all.contains(&"x".repeat(600)), "{all}");
}

#[test]
fn a_cassette_that_cannot_be_recorded_into_is_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(Faults::default());
    std::fs::write(dir.path().join("afile"), "not a folder").unwrap();
    for (cassette, mode) in [("afile", "record"), ("afile", "record-missing"), ("afile/sub", "record")] {
        let args = ["sweep", "support_desk", "--agent", "llm:fake", "--seeds", "0..3", "--out", "o"];
        let mut args = args.to_vec();
        args.extend(["--llm-base-url", &fake.base_url, "--cassette", cassette, "--cassette-mode", mode]);
        let output = agentsim(dir.path(), &args, &[("OPENAI_API_KEY", "")]);
        let all = text(&output);
        assert_eq!(output.status.code(), Some(2), "{cassette} {mode}: {all}");
        assert!(all.contains(&format!("--cassette {cassette}")), "{all}");
        assert_eq!(fake.requests(), 0, "no paid request is thrown away: {all}");
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("afile")).unwrap(), "not a folder");
}

/// A 200 whose assistant message says `padding` bytes of text and calls
/// `lookup_order` on A1002 (text beside a call stays in the conversation).
fn padded_call(padding: usize) -> (String, String, String) {
    let message = json!({"role": "assistant", "content": "x".repeat(padding), "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"A1002\"}"}}]});
    let body =
        json!({"choices": [{"index": 0, "message": message}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}});
    ("200 OK".into(), String::new(), body.to_string())
}

#[test]
fn what_an_answer_adds_and_what_a_request_sends_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // One answer larger than an answer may be: the run ends at once.
    let server = Scripted::start(Arc::new(|_, _| padded_call(300_000)));
    let output = run_against(dir.path(), &format!("{}/v1", server.base_url), &[], &[("OPENAI_API_KEY", "")]);
    let all = text(&output);
    assert!(all.contains("outcome: agent_error") && all.contains("error.too_large"), "{all}");
    assert!(all.contains("the model's answer is 300") && all.contains("256 KiB"), "{all}");
    assert_eq!(server.lines().len(), 1, "{all}");
    // Answers each within the bound, until the conversation is too large to send.
    let server = Scripted::start(Arc::new(|_, _| padded_call(240_000)));
    let output = run_against(dir.path(), &format!("{}/v1", server.base_url), &[], &[("OPENAI_API_KEY", "")]);
    let all = text(&output);
    assert!(all.contains("outcome: agent_error") && all.contains("error.too_large"), "{all}");
    assert!(all.contains("the request would be") && all.contains("4 MiB"), "{all}");
    assert!((15..=18).contains(&server.lines().len()), "{} requests: {all}", server.lines().len());
}

#[test]
fn an_answer_without_usage_is_said_to_be_estimated_in_the_trajectory_and_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    // The scripted model, its `usage` removed (after the user's words) or not a
    // count (after a tool's result).
    let server = Scripted::start(Arc::new(|_, request| {
        let (status, extra, body) = scripted_answer(request);
        let mut body: Json = serde_json::from_str(&body).unwrap();
        let last = request["messages"].as_array().unwrap().last().unwrap();
        if last["role"] == "user" {
            body.as_object_mut().unwrap().remove("usage");
        } else {
            body["usage"]["prompt_tokens"] = json!("many");
        }
        (status, extra, body.to_string())
    }));
    let base = format!("{}/v1", server.base_url);
    let output = run_against(dir.path(), &base, &[], &[("OPENAI_API_KEY", "")]);
    let all = text(&output);
    assert!(all.contains("llm           usage_estimated no `usage` in the answer"), "{all}");
    assert!(all.contains("llm           usage_estimated `usage.prompt_tokens` is not a count"), "{all}");
    let args =
        ["sweep", "support_desk", "--agent", "llm:fake", "--seeds", "0..2", "--out", "o", "--llm-base-url", &base];
    let output = agentsim(dir.path(), &args, &[("OPENAI_API_KEY", "")]);
    assert!(output.status.success(), "{}", text(&output));
    let summary: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["decisions"]["llm.usage_estimated"]["trajectories"], 2, "{summary}");
    let csv = std::fs::read_to_string(dir.path().join("o/trajectories.csv")).unwrap();
    assert!(csv.lines().skip(1).all(|row| row.contains("llm.usage_estimated=")), "{csv}");
}

/// `agentsim sweep support_desk --agent llm:fake-terse` (an agent whose
/// closings the rules reader cannot decide) with `more` arguments, against
/// `fake` (or no server); the CSV and the summary.
fn sweep_terse(dir: &Path, fake: Option<&Fake>, out: &str, threads: &str, more: &[&str]) -> String {
    let base_url = fake.map_or("http://127.0.0.1:9/v1".to_string(), |f| f.base_url.clone());
    let mut args = vec!["sweep", "support_desk", "--agent", "llm:fake-terse", "--seeds", "0..12", "--out", out];
    args.extend(["--fault-scale", "0", "--llm-base-url", &base_url]);
    args.extend_from_slice(more);
    let env = [("RAYON_NUM_THREADS", threads), ("OPENAI_API_KEY", ""), ("AGENTSIM_LLM_BACKOFF_MS", "1")];
    let output = agentsim(dir, &args, &env);
    assert!(output.status.success(), "{}", text(&output));
    let read = |file: &str| std::fs::read_to_string(dir.join(out).join(file)).unwrap();
    read("trajectories.csv") + read("summary.json").as_str()
}

#[test]
fn a_model_judge_reads_the_closings_the_rules_cannot_decide() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(Faults::default());
    // The rules alone: a closing "Refund: $89.00, order A1002, keyboard."
    // is uncertain, never success (the seeds whose scripted agent refunds).
    let rules = outcomes(&sweep_terse(dir.path(), Some(&fake), "rules", "2", &[]));
    let closed: Vec<usize> = (0..rules.len()).filter(|&i| rules[i] == "uncertain").collect();
    assert!(closed.len() >= 8 && !rules.contains(&"success".to_string()), "{rules:?}");
    // A judge that reads them as done with the customer's amount, order and
    // item: the customer was told, and those runs succeed; the others are
    // judged as before.
    let done = outcomes(&sweep_terse(dir.path(), Some(&fake), "done", "2", &["--judge", "llm:judge-done"]));
    for (i, outcome) in done.iter().enumerate() {
        let expected = if closed.contains(&i) { "success" } else { rules[i].as_str() };
        assert_eq!(outcome, expected, "seed {i}: {done:?} (rules alone: {rules:?})");
    }
    // Read as not done: the customer was never told, a wrong result.
    let not_done = outcomes(&sweep_terse(dir.path(), Some(&fake), "not-done", "2", &["--judge", "llm:judge-not-done"]));
    for (i, outcome) in not_done.iter().enumerate() {
        let expected = if closed.contains(&i) { "wrong_result" } else { rules[i].as_str() };
        assert_eq!(outcome, expected, "seed {i}: {not_done:?} (rules alone: {rules:?})");
    }
    // Its failing seeds replay offline from their incidents, which carry the
    // judge (the scenario's `judge`) and its answers.
    let failures = dir.path().join("not-done/failures");
    let mut incidents: Vec<_> = std::fs::read_dir(&failures).unwrap().map(|e| e.unwrap().path()).collect();
    incidents.sort();
    assert!(!incidents.is_empty());
    for file in incidents.iter().take(3) {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains("judge: Llm(") && text.contains("answers: ["), "{text}");
        let digest = text.split("digest: \"").nth(1).unwrap().split('"').next().unwrap();
        let replayed = agentsim(dir.path(), &["replay", file.to_str().unwrap()], &[("OPENAI_API_KEY", "")]);
        let all = text_of(&replayed);
        assert!(replayed.status.success() && all.contains(&format!("(digest {digest})")), "{all}");
    }
    // A judge that does not answer in the shape asked decides nothing.
    let garbage = outcomes(&sweep_terse(dir.path(), Some(&fake), "garbage", "2", &["--judge", "llm:judge-garbage"]));
    assert_eq!(garbage, rules, "an unreadable judge leaves the readings uncertain");
    // What the judge read is in the trajectory, in words.
    let run = agentsim(
        dir.path(),
        &[
            "run",
            "support_desk",
            "--agent",
            "llm:fake-terse",
            "--judge",
            "llm:judge-done",
            "--seed",
            "1",
            "--fault-scale",
            "0",
            "--llm-base-url",
            &fake.base_url,
        ],
        &[("OPENAI_API_KEY", "")],
    );
    let timeline = text(&run);
    assert!(timeline.contains("judged_reading") && timeline.contains("outcome: success"), "{timeline}");
    // A bad judge spec is a usage error.
    let bad = agentsim(dir.path(), &["run", "support_desk", "--judge", "gpt-4o", "--seed", "1"], &[]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("--judge: expected `rules` or `llm:MODEL`"), "{}", text(&bad));
}

#[test]
fn a_judged_sweep_records_and_replays_offline_to_the_same_bytes_on_1_and_4_threads() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(Faults::default());
    let cassette = ["--judge", "llm:judge-done", "--cassette", "judged", "--cassette-mode"];
    let record = [&cassette[..], &["record"]].concat();
    let recorded = sweep_terse(dir.path(), Some(&fake), "recorded", "4", &record);
    let successes = outcomes(&recorded).iter().filter(|o| *o == "success").count();
    assert!(successes >= 8, "{:?}", outcomes(&recorded));
    // The judge's requests are in the cassette, under keys of their own.
    let judged = std::fs::read_dir(dir.path().join("judged"))
        .unwrap()
        .map(|e| serde_json::from_str::<Json>(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap())
        .filter(|e| e["request"]["model"] == "judge-done")
        .count();
    // (one per distinct closing and customer: seeds that meet the same customer
    // ask the same request, answered once)
    assert!(judged >= 4, "the judge's answers are recorded: {judged}");
    drop(fake);

    // The server is gone: the agent's and the judge's answers come from the cassette.
    let replay = [&cassette[..], &["replay"]].concat();
    let one = sweep_terse(dir.path(), None, "one", "1", &replay);
    let four = sweep_terse(dir.path(), None, "four", "4", &replay);
    assert_eq!(one, four, "the same bytes on 1 and 4 threads");
    assert_eq!(one, recorded, "the replay is the recording");
}
