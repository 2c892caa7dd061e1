"""Framework recipes through agentsim.evaluate: an OpenAI Agents SDK agent and a
LangGraph agent (examples/frameworks/, shown verbatim in docs/python.md), each
driven by a scripted model (no network, no API key), over 20 support_desk seeds
that meet every way a customer asks."""

import os
import re
import sys

import pytest

from conftest import ROOT, assert_every_customer, require

sys.path.insert(0, str(ROOT / "examples" / "frameworks"))
sys.path.insert(0, str(ROOT / "python" / "tests"))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

#: They meet every (persona, opening) of seeds 0-999 (asserted in the test).
SEEDS = range(20)


def files(folder):
    return {name: (folder / name).read_bytes() for name in ("trajectories.csv", "summary.json")}


def recipe(framework):
    if framework == "openai-agents":
        require("agents")
        import openai_agents_evaluate as module
        from scripted_models import ScriptedAgentsModel as model
    else:
        require("langgraph")
        require("langchain")
        import langgraph_evaluate as module
        from scripted_models import ScriptedChatModel as model
    return module, model


@pytest.mark.parametrize("framework", ["openai-agents", "langgraph"])
def test_a_framework_agent_completes_support_desk_episodes(tmp_path, framework):
    module, model = recipe(framework)
    assert_every_customer(SEEDS)
    scripted = model()
    result = module.main(model=scripted, seeds=SEEDS, out=tmp_path / "c8")
    outcomes = {k: v for k, v in result.summary["outcomes"].items() if v}
    # Every episode is the framework's agent at work: none crashed (agent_error),
    # and the scripted policy solves the task through the faults.
    assert result.summary["trajectories"] == len(SEEDS)
    assert "agent_error" not in outcomes, outcomes
    assert outcomes.get("success", 0) >= 18, outcomes
    assert all(row["tool_calls"] >= 3 for row in result.rows), [row["tool_calls"] for row in result.rows]
    # The model saw the world's tools through the framework, and wait.
    assert {"lookup_order", "issue_refund", "send_message", "wait"} <= set(scripted.shown[0]), scripted.shown[0]
    # The framework runs as concurrent episodes, and the files do not depend on
    # how many were in flight.
    module.main(model=model(), seeds=SEEDS, out=tmp_path / "c1", concurrency=1)
    assert files(tmp_path / "c1") == files(tmp_path / "c8")


@pytest.mark.parametrize("name", ["openai_agents_evaluate.py", "langgraph_evaluate.py"])
def test_docs_python_shows_the_recipes_verbatim(root, name):
    doc = (root / "docs" / "python.md").read_text()
    code = (root / "examples" / "frameworks" / name).read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert code in blocks, f"docs/python.md must show examples/frameworks/{name} verbatim in a ```python block"


def test_tool_loop_answers_as_the_mcp_server_does(tmp_path):
    # No framework: a run() that calls the tools itself. Seed 1's first lookup
    # meets an injected 503; the reply to a message comes with it.
    import json

    import agentsim
    from agentsim.loop import ToolLoop

    seen = []

    async def run(session):
        assert "A1002" in session.task and "wait" in session.tools.names
        seen.append(json.loads(await session.call("lookup_order", {"order_id": "A1002"})))
        seen.append(json.loads(await session.call("lookup_order", '{"order_id": "A1002"}')))
        seen.append(json.loads(await session.call("send_message", {"customer_id": "C001", "kind": "ask"})))
        seen.append(json.loads(await session.call("wait", {"ms": 1000})))
        if session.calls == 4:
            raise RuntimeError("the framework crashed")

    result = agentsim.evaluate(ToolLoop(run), "support_desk", range(1, 2), out=tmp_path, label="loop")
    error = seen[0]["error"]
    assert (error["status"], error["retryable"], error["retry_after_ms"]) == (503, True, None)
    assert error["explanation"].startswith("HTTP 503 service unavailable: temporary, retryable"), error
    assert seen[1]["order_id"] == "A1002" and seen[1]["items"][0]["name"] == "keyboard"
    assert seen[2]["status"] == "sent" and seen[2]["user_reply"]["text"], seen[2]
    assert seen[3]["user_reply"] is None and seen[3]["now_ms"] > 0
    # An exception in run() is the episode's agent_error, with the reason.
    assert result.rows[0]["outcome"] == "agent_error", result.rows[0]
