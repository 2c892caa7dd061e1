"""``evaluate("llm:MODEL", ...)``: a model as the agent and as the user, run by
the same Rust code as ``agentsim sweep --agent llm:MODEL --user llm:MODEL``,
against a loopback fake OpenAI-compatible server (the standard library's),
recorded in a cassette and replayed offline to the same results."""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import agentsim

GREETING = "Hi! How can I help you today?"


def _say(text):
    return {"role": "assistant", "content": text}


def _call(messages, name, args):
    call = {"id": f"call_{len(messages)}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _results(messages):
    """Each tool result with the name of the function it answers."""
    names = {c["id"]: c["function"]["name"] for m in messages for c in (m.get("tool_calls") or [])}
    return [(names.get(m["tool_call_id"]), json.loads(m["content"])) for m in messages if m["role"] == "tool"]


def agent(messages):
    """Looks the order up, proposes the refund in words, refunds after a yes,
    tells the amount, ends the conversation."""
    said = lambda role: [m["content"] or "" for m in messages if m["role"] == role]
    user, mine = said("user"), said("assistant")
    ids = [w for t in user for w in re.findall(r"\bA\d{4,5}\b", t)]
    if not ids:
        return _say("Could you tell me your order number?")
    order_id = ids[0]
    results = _results(messages)
    orders = [r for name, r in results if name == "lookup_order" and r.get("ok")]
    if not orders:
        return _call(messages, "lookup_order", {"order_id": order_id})
    order = orders[-1]["body"]
    item = next((i for i in order.get("items", []) if any(i["name"] in t for t in user)), None)
    amount = item["price_cents"] if item else order.get("total_cents", 0)
    money = f"${amount // 100}.{amount % 100:02}"
    if any(name == "issue_refund" and r.get("ok") for name, r in results):
        if any(t.startswith("I've refunded") for t in mine):
            return _call(messages, "end_conversation", {"outcome": "done"})
        return _say(f"I've refunded {money} on order {order_id}.")
    if any(name == "issue_refund" for name, _ in results):
        return _call(messages, "end_conversation", {"outcome": "gave_up", "reason": "the refund failed"})
    if mine and mine[-1].startswith("Shall I") and "yes" in user[-1].lower():
        return _call(messages, "issue_refund", {"order_id": order_id, "amount_cents": amount, "reason": "asked"})
    name = item["name"] if item else "whole order"
    return _say(f"Shall I refund the {name} from order {order_id}, {money}?")


def customer(messages):
    """States its reason, gives its known info, agrees, stops once told."""
    system = messages[0]["content"]
    assert system.startswith("# User Simulation Guidelines") and "<scenario>" in system
    heard = messages[-1]["content"]
    if heard == GREETING:
        return _say(system.split("Reason for call:\n")[1].splitlines()[0].strip())
    if heard.startswith("Shall I"):
        return _say("Yes, please go ahead.")
    if heard.startswith("I've refunded"):
        return _say("Thanks, that's all. ###STOP###")
    known = system.split("Known info:\n")[1].splitlines()
    facts = [line.strip().replace(": ", " is ", 1) for line in known if line.startswith("\t\t")]
    return _say("My " + ", my ".join(facts) + ".")


class _Fake(BaseHTTPRequestHandler):
    requests = 0
    lock = threading.Lock()

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with _Fake.lock:
            _Fake.requests += 1
        messages = request["messages"]
        message = agent(messages) if "tools" in request else customer(messages)
        body = json.dumps({"choices": [{"index": 0, "message": message}],
                           "usage": {"prompt_tokens": 50, "completion_tokens": 10}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_model_as_agent_and_user_records_and_replays_offline(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "")
    cassette = tmp_path / "cassette"
    before = _Fake.requests
    live = agentsim.evaluate("llm:fake", "support_desk", seeds=range(10), user="llm:fake", llm_base_url=fake,
                             cassette=cassette, cassette_mode="record", concurrency=8)
    assert _Fake.requests - before > 20, "the agent and the user asked the server"
    assert live.summary["outcomes"]["success"] >= 4, live.summary["outcomes"]
    assert len(live.rows) == 10 and all("llm_user.answer=" in r["decisions"] for r in live.rows)
    # No server needed: the cassette answers, on one thread or many, to the same results.
    offline = "http://127.0.0.1:9/v1"
    one = agentsim.evaluate("llm:fake", "support_desk", seeds=range(10), user="llm:fake", llm_base_url=offline,
                            cassette=cassette, cassette_mode="replay", concurrency=1)
    many = agentsim.evaluate("llm:fake", "support_desk", seeds=range(10), user="llm:fake", llm_base_url=offline,
                             cassette=cassette, cassette_mode="replay", concurrency=4, out=tmp_path / "out")
    assert one.summary["digest"] == live.summary["digest"] == many.summary["digest"]
    assert one.rows == live.rows
    assert (tmp_path / "out" / "trajectories.csv").read_text().count("\n") == 11
    assert [r["digest"] for r in many.rows] == [r["digest"] for r in live.rows]


def test_bad_model_options_name_their_field(tmp_path):
    with pytest.raises(ValueError, match="user: --user: expected `rules` or `llm:MODEL`"):
        agentsim.evaluate("llm:fake", "support_desk", seeds=range(2), user="someone")
    with pytest.raises(ValueError, match="cassette_mode"):
        agentsim.evaluate("llm:fake", "support_desk", seeds=range(2), cassette=tmp_path, cassette_mode="rewind")
    with pytest.raises(ValueError, match="user: only for an agent given by name"):
        agentsim.evaluate(lambda observation: {"action": "finish"}, "support_desk", seeds=range(2), user="llm:x")
