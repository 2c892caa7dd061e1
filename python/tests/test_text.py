"""The text channel from Python: `say` through Env.step and evaluate, and
framework agents that talk to their customer in words (agentsim.loop's
langgraph_chat and agents_sdk_chat, examples/frameworks/*_text.py) driven by a
scripted model that plays examples/agents/text_agent.py from the conversation's
text (scripted_text_models.py), and over tau2-bench's retail tasks by one that
plays each task's gold in words (scripted_tau2_models.py)."""

import os
import re
import subprocess
import sys

import pytest

import agentsim
from agentsim.loop import is_farewell
from conftest import ROOT, require

sys.path.insert(0, str(ROOT / "examples" / "frameworks"))
sys.path.insert(0, str(ROOT / "python" / "tests"))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


def files(folder):
    return {name: (folder / name).read_bytes() for name in ("trajectories.csv", "summary.json")}


class TextAgent:
    """examples/agents/text_agent.py's policy behind `act`: it reads the
    customer's words only and answers with `say`."""

    def __init__(self):
        import text_agent

        self.agent = text_agent.Agent()

    def act(self, observation):
        event = dict(observation["event"])
        event.pop("content", None)  # the words only
        return self.agent.step({**observation, "event": event})


class WrongAmountAgent(TextAgent):
    """The text agent, but its closing tells the customer one cent more."""

    def act(self, observation):
        action = super().act(observation)
        if action["action"] == "say" and "refunded" in action["text"]:
            dollars, cents = re.search(r"\$(\d+)\.(\d\d)", action["text"]).groups()
            wrong = int(dollars) * 100 + int(cents) + 1
            action = {**action, "text": re.sub(r"\$\d+\.\d\d", f"${wrong // 100}.{wrong % 100:02d}", action["text"])}
        return action


def test_the_customer_answers_in_words_through_env_step():
    env = agentsim.Env("support_desk", fault_scale=0.0)
    obs, info = env.reset(seed=7)
    assert "A1005" in obs["text"]

    def say(text):
        obs, reward, terminated, truncated, info = env.step({"action": "say", "text": text})
        assert obs["kind"] == "user_message" and not terminated, obs
        return info["observation"]["event"]["text"]

    # A question gets what it asks; a wrong proposal is refused with the correction.
    assert "A1005" in say("What is your order number?")
    env.step(agentsim.observation.call("lookup_order", {"order_id": "A1005"}))
    refused = say("Shall I refund the office chair from order A1005, $24.00?")
    assert refused.startswith("No") and "$249.00" in refused, refused
    assert say("Shall I refund the office chair from order A1005, $249.00?").startswith("Yes")
    env.step(agentsim.observation.call("issue_refund", {"order_id": "A1005", "amount_cents": 24900, "reason": "asked"}))
    assert is_farewell(say("Done: I've refunded $249.00 on order A1005."))
    obs, reward, terminated, truncated, info = env.step({"action": "finish", "outcome": "done"})
    assert terminated and info["outcome"] == "success" and reward == 1.0, info
    with pytest.raises(ValueError, match="field `text`"):
        env.reset(seed=7)
        env.step({"action": "say"})


def test_a_text_agent_through_evaluate_is_byte_identical_at_concurrency_1_and_4(tmp_path):
    # Faults on: the text agent backs off, re-authenticates and verifies, in words.
    one = agentsim.evaluate(TextAgent, "support_desk", range(40), out=tmp_path / "c1", label="text")
    agentsim.evaluate(TextAgent, "support_desk", range(40), out=tmp_path / "c4", concurrency=4, label="text")
    assert files(tmp_path / "c1") == files(tmp_path / "c4")
    assert one.summary["outcomes"]["success"] >= 34, one.summary["outcomes"]


def test_a_wrong_amount_told_in_a_sentence_is_caught_and_replays(tmp_path, cli):
    result = agentsim.evaluate(WrongAmountAgent, "support_desk", range(7, 8), out=tmp_path, fault_scale=0.0,
                               label="wrong-amount")
    row = result.rows[0]
    assert row["outcome"] == "violation" and "told_wrong_value" in row["minefields"], row
    incident = tmp_path / "failures" / "violation_seed7.ron"
    replay = subprocess.run([cli, "replay", str(incident)], capture_output=True, text=True)
    assert replay.returncode == 0 and "PASS" in replay.stdout, replay.stdout + replay.stderr


def test_farewells():
    for text in ["Thanks.", "Finally. Thanks.", "Great, thank you!", "Thanks, that's all I needed.",
                 "Perfect, thanks for your help.", "Bye!"]:
        assert is_farewell(text), text
    for text in ["Yes, that's exactly right, please go ahead. Thank you so much!", "Thanks. The order is A1002.",
                 "Thanks. I'd like a refund for the blender from order A1003.", "OK.", "Thanks, but which order?",
                 "No, that's not right: the amount is $249.00."]:
        assert not is_farewell(text), text


def text_recipe(framework):
    if framework == "openai-agents":
        require("agents")
        import openai_agents_text as module
        from scripted_text_models import TextAgentsModel as model
    else:
        require("langgraph")
        require("langchain")
        import langgraph_text as module
        from scripted_text_models import TextChatModel as model
    return module, model


@pytest.mark.parametrize("framework", ["openai-agents", "langgraph"])
def test_a_framework_agent_that_talks_in_words_completes_support_desk(tmp_path, framework):
    module, model = text_recipe(framework)
    result = module.main(model=model(), seeds=range(20), out=tmp_path / "c8", fault_scale=0.0)
    assert result.summary["outcomes"]["success"] == 20, result.summary["outcomes"]
    assert all(row["tool_calls"] >= 2 for row in result.rows)
    module.main(model=model(), seeds=range(20), out=tmp_path / "c1", fault_scale=0.0, concurrency=1)
    assert files(tmp_path / "c1") == files(tmp_path / "c8")


@pytest.mark.skipif(not os.environ.get("CI") and not os.environ.get("AGENTSIM_LONG"),
                    reason="1,000 episodes of a scripted LangGraph agent take about 100 s: under CI or AGENTSIM_LONG=1")
def test_a_langgraph_agent_that_talks_in_words_completes_1000_support_desk_seeds():
    module, model = text_recipe("langgraph")
    result = module.main(model=model(), seeds=range(1000), out=None, fault_scale=0.0)
    # `agentsim sweep --fault-scale 0` (the resilient stack) completes 996 of these 1,000.
    assert result.summary["outcomes"]["success"] >= 996, result.summary["outcomes"]


@pytest.mark.parametrize("name", ["openai_agents_text.py", "langgraph_text.py"])
def test_docs_python_shows_the_text_recipes_verbatim(root, name):
    doc = (root / "docs" / "python.md").read_text()
    code = (root / "examples" / "frameworks" / name).read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert code in blocks, f"docs/python.md must show examples/frameworks/{name} verbatim in a ```python block"


def test_the_langgraph_mcp_recipe_talks_in_words_through_say_to_user(tmp_path, cli, monkeypatch):
    # examples/mcp/langgraph_mcp.py as written; the model speaks only through
    # say_to_user, whose result is the customer's reply in words.
    require("langgraph")
    require("langchain_mcp_adapters")
    import asyncio
    import json

    sys.path.insert(0, str(ROOT / "examples" / "mcp"))
    import langgraph_mcp
    from scripted_text_models import TextChatModel

    monkeypatch.setenv("PATH", os.path.dirname(os.path.abspath(cli)) + os.pathsep + os.environ["PATH"])
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for seed in range(4):
        asyncio.run(langgraph_mcp.one_seed(seed, model=TextChatModel(), record_dir=str(sessions)))
    done = subprocess.run([cli, "summarize", str(sessions), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr  # every session replays
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["outcomes"]["success"] == 4, summary["outcomes"]


# ---- tau2-bench retail in words (examples/frameworks/langgraph_tau2_text.py) ----------


def tau2_recipe():
    require("langgraph")
    require("langchain")
    import langgraph_tau2_text as module
    import scripted_tau2_models as models

    return module, models


def gold_hashes(root):
    """tau2's database after each task's gold actions (tests/tau2/retail_gold_hashes.txt): task id -> hash."""
    lines = (root / "tests" / "tau2" / "retail_gold_hashes.txt").read_text().splitlines()
    return dict(line.split()[:2] for line in lines if line.strip() and not line.startswith("#"))


def test_a_langgraph_agent_that_talks_in_words_completes_every_tau2_retail_task(tmp_path, tau2_retail, root):
    # As `oracle_text` does (tests/tau2.rs): every task, in words, ends in tau2's gold database.
    data, world = tau2_retail
    module, models = tau2_recipe()
    model = models.Tau2RetailChatModel(data)
    result = module.main(world=world, model=model, seeds=range(114), out=tmp_path / "c8", fault_scale=0.0)
    assert result.summary["outcomes"]["success"] == 114, result.summary["outcomes"]
    gold = gold_hashes(root)
    assert [row["state_hash"] for row in result.rows] == [gold[row["task"]] for row in result.rows]
    # Each of tau2's 176 gold writes was agreed in words first (a yes to every proposal, no refusal).
    assert sum(h.startswith(("Yes", "That's correct")) for h in model.heard) == 176
    assert not [h for h in model.heard if h.startswith(("No", "Not quite", "Hmm, no"))]
    # tau2's communicate_info, judged on the closing's words: said in all 36 tasks that have it.
    checks = result.summary["checks"]["overall"]
    assert (checks["communicate"]["passed"]["count"], checks["communicate"]["passed"]["n"]) == (36, 36)
    assert all(row["checks"].startswith("+db=pass") for row in result.rows)
    module.main(world=world, model=models.Tau2RetailChatModel(data), seeds=range(114), out=tmp_path / "c1",
                fault_scale=0.0, concurrency=1)
    assert files(tmp_path / "c1") == files(tmp_path / "c8")


def test_tau2_retail_s_customer_refuses_a_wrong_order_id_with_the_correction(tmp_path, tau2_retail, cli):
    # Task 0: the customer holds its order id; the first proposal is one digit off.
    data, world = tau2_retail
    module, models = tau2_recipe()
    model = models.WrongProposal(data)
    result = module.main(world=world, model=model, seeds=range(1), out=tmp_path, fault_scale=0.0, record_all=True)
    opening, refusal, *agreed = model.heard
    assert re.match(r"(No|Not quite|Hmm, no)\b", refusal) and "the order id is #W2378156" in refusal, refusal
    assert agreed and agreed[0].startswith(("Yes", "That's correct")), model.heard
    # The write, made after the corrected proposal was agreed, is tau2's gold.
    row = result.rows[0]
    assert row["outcome"] == "success" and row["state_hash"] == gold_hashes(ROOT)["0"], row
    incident = tmp_path / "episodes" / "seed0.ron"
    recorded = incident.read_text()
    # RON writes an apostrophe escaped (`that\'s`).
    assert "the order id is #W2378157" in recorded and refusal.replace("'", "\\'") in recorded
    replay = subprocess.run([cli, "replay", str(incident)], capture_output=True, text=True)
    assert replay.returncode == 0 and "PASS" in replay.stdout, replay.stdout + replay.stderr


@pytest.mark.skipif(not os.environ.get("CI") and not os.environ.get("AGENTSIM_LONG"),
                    reason="1,000 tau2 retail episodes of a scripted LangGraph agent take about 105 s: "
                    "under CI or AGENTSIM_LONG=1")
def test_a_langgraph_agent_that_talks_in_words_completes_1000_tau2_retail_seeds(tau2_retail):
    data, world = tau2_retail
    module, models = tau2_recipe()
    result = module.main(world=world, model=models.Tau2RetailChatModel(data), seeds=range(1000), out=None,
                         fault_scale=0.0)
    # `agentsim sweep retail.ron --agent oracle_text --fault-scale 0 --seeds 0..1000` completes all 1,000.
    assert result.summary["outcomes"]["success"] == 1000, result.summary["outcomes"]


def test_docs_tau2_shows_the_langgraph_recipe_verbatim(root):
    doc = (root / "docs" / "tau2.md").read_text()
    code = (root / "examples" / "frameworks" / "langgraph_tau2_text.py").read_text()
    assert code in re.findall(r"```python\n(.*?)```", doc, re.S), \
        "docs/tau2.md must show examples/frameworks/langgraph_tau2_text.py verbatim in a ```python block"
