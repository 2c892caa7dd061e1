"""The MCP recipes of docs/mcp.md (examples/mcp/openai_agents_mcp.py and
langgraph_mcp.py, shown there verbatim) run as written against `agentsim mcp`,
each with a scripted model: they complete support_desk seeds, every session
replays, and a drift reaches the model (the tool list re-read on
notifications/tools/list_changed), which a client that ignores the notification
misses."""

import asyncio
import json
import os
import re
import subprocess
import sys
import types

import pytest

from conftest import ROOT, require

sys.path.insert(0, str(ROOT / "examples" / "mcp"))
sys.path.insert(0, str(ROOT / "python" / "tests"))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

FRAMEWORKS = ["openai-agents", "langgraph"]
SEEDS = range(6)


@pytest.fixture
def on_path(cli, monkeypatch):
    """`agentsim` on PATH, as the recipes call it."""
    monkeypatch.setenv("PATH", os.path.dirname(os.path.abspath(cli)) + os.pathsep + os.environ["PATH"])
    return cli


def recipe(framework):
    """The recipe's module and its scripted model's class."""
    if framework == "openai-agents":
        require("agents")
        import openai_agents_mcp as module
        from scripted_models import ScriptedAgentsModel as model
    else:
        require("langgraph")
        require("langchain_mcp_adapters")
        import langgraph_mcp as module
        from scripted_models import ScriptedChatModel as model
    return module, model


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_documented_recipe_completes_seeds_and_every_session_replays(tmp_path, on_path, framework):
    module, model = recipe(framework)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for seed in SEEDS:
        asyncio.run(module.one_seed(seed, model=model(), record_dir=str(sessions)))
    # summarize replays every recorded session (refusing one that diverges).
    done = subprocess.run([on_path, "summarize", str(sessions), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["trajectories"] == len(SEEDS)
    assert summary["outcomes"]["success"] == len(SEEDS), summary["outcomes"]


def early_drift(tmp_path):
    """support_desk with its drift (total_cents renamed total_amount_cents) at 1 s
    instead of 120 s: the session's first call crosses it."""
    text = (ROOT / "seeds" / "support_desk.ron").read_text()
    assert "at_ms: 120_000" in text
    path = tmp_path / "early_drift.ron"
    path.write_text(text.replace("at_ms: 120_000", "at_ms: 1_000"))
    return str(path)


def total_reader(answers):
    """A scripted model that reports the order's total, read from the field the
    lookup_order description names (`Returns: ..., total_cents, ...`): a model
    working from a stale description reads a field that is gone."""
    from scripted_models import opening

    def policy(task, exchanges, tools):
        def answers_of(name):
            bodies = [json.loads(text.partition("\n")[0]) for tool, _, text in exchanges if tool == name]
            return [b for b in bodies if "error" not in b]

        customers, found = answers_of("get_customer"), answers_of("lookup_order")
        if not customers and len(exchanges) < 8:
            return "call", ("get_customer", {"customer_id": opening(task)["customer_id"]})
        if not found and len(exchanges) < 8:
            return "call", ("lookup_order", {"order_id": customers[-1]["order_ids"][0]})
        fields = re.search(r"Returns: (.*)\.", tools["lookup_order"]).group(1).split(", ")
        total = next(f for f in fields if f.startswith("total"))
        answers.append((total, found[-1].get(total) if found else None))
        return "final", f"The order's total is {answers[-1][1]}."

    return policy


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("handled", [True, False], ids=["re-reads the list", "ignores the notification"])
def test_a_drift_reaches_the_model_only_when_the_client_re_reads_the_list(tmp_path, on_path, monkeypatch,
                                                                           framework, handled):
    module, model = recipe(framework)
    if not handled:
        # The same recipe with its notification handler never matching: the
        # cached (Agents SDK) or loaded-once (LangGraph) list stays as it was.
        monkeypatch.setattr(module, "types", types.SimpleNamespace(
            ServerNotification=module.types.ServerNotification, ToolListChangedNotification=type("Never", (), {})))
    answers = []
    scripted = model(total_reader(answers))
    asyncio.run(module.one_seed(1, model=scripted, scenario=early_drift(tmp_path), record_dir=str(tmp_path)))
    assert ", total_cents," in scripted.shown[0]["lookup_order"], scripted.shown[0]
    if handled:
        # A client that re-reads the list adapts: the model reads the new field.
        assert "total_amount_cents" in scripted.shown[-1]["lookup_order"], scripted.shown[-1]
        [(field, total)] = answers
        assert field == "total_amount_cents" and isinstance(total, int) and total > 0, answers
    else:
        # cache_tools_list=True alone hides the rename: the model reads a field that is gone.
        assert "total_amount_cents" not in scripted.shown[-1]["lookup_order"], scripted.shown[-1]
        assert answers == [("total_cents", None)], answers
    replay = subprocess.run([on_path, "replay", str(tmp_path / "s1.ron")], capture_output=True, text=True)
    assert replay.returncode == 0, replay.stdout + replay.stderr


@pytest.mark.parametrize("name", ["openai_agents_mcp.py", "langgraph_mcp.py"])
def test_docs_mcp_shows_the_recipes_verbatim(root, name):
    doc = (root / "docs" / "mcp.md").read_text()
    code = (root / "examples" / "mcp" / name).read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert code in blocks, f"docs/mcp.md must show examples/mcp/{name} verbatim in a ```python block"
