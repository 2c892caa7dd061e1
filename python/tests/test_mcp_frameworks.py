"""The MCP recipes of docs/mcp.md (examples/mcp/openai_agents_mcp.py and
langgraph_mcp.py, shown there verbatim) run as written against `agentsim mcp`,
each with a scripted model: they complete support_desk seeds that meet every
way a customer asks, every session replays, and a drift reaches the model (the
tool list re-read on notifications/tools/list_changed), which a client that
ignores the notification misses. The Agents SDK recipe runs twice: with the mcp
1.x of this venv (langchain-mcp-adapters pins it) and with the mcp 2.x that
`pip install openai-agents` brings by itself (a venv of its own)."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, assert_every_customer, require
from mcp_recipe_runs import drift_run, seeds_run

sys.path.insert(0, str(ROOT / "examples" / "mcp"))
sys.path.insert(0, str(ROOT / "python" / "tests"))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

FRAMEWORKS = ["openai-agents", "langgraph"]
#: Seeds 0-11 meet every (persona, opening) of support_desk's seeds 0-999: the
#: item of an order, a whole order, the vague customer who names no order, each
#: from a customer who is clear or changes their mind (asserted below).
SEEDS = range(12)
#: Fewer for the second venv: one of each.
SEEDS_MCP2 = [0, 1, 4, 8, 9]


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
    assert_every_customer(SEEDS)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    seeds_run(module, model, SEEDS, sessions)
    assert_all_succeed_and_replay(on_path, sessions, tmp_path / "out", SEEDS)


def assert_all_succeed_and_replay(cli, sessions, out, seeds):
    # summarize replays every recorded session (refusing one that diverges).
    done = subprocess.run([cli, "summarize", str(sessions), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trajectories"] == len(seeds)
    assert summary["outcomes"]["success"] == len(seeds), summary["outcomes"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("handled", [True, False], ids=["re-reads the list", "ignores the notification"])
def test_a_drift_reaches_the_model_only_when_the_client_re_reads_the_list(tmp_path, on_path, monkeypatch,
                                                                           framework, handled):
    module, model = recipe(framework)
    if not handled:
        # The same recipe with its notification test never matching: the cached
        # (Agents SDK) or loaded-once (LangGraph) list stays as it was.
        monkeypatch.setattr(module, "tool_list_changed", lambda message: False)
    run = drift_run(module, model, tmp_path)
    assert_drift_seen(run, handled)
    replay = subprocess.run([on_path, "replay", str(tmp_path / "s1.ron")], capture_output=True, text=True)
    assert replay.returncode == 0, replay.stdout + replay.stderr


def assert_drift_seen(run, handled=True):
    assert ", total_cents," in run["first"]["lookup_order"], run["first"]
    if handled:
        # A client that re-reads the list adapts: the model reads the new field.
        assert "total_amount_cents" in run["last"]["lookup_order"], run["last"]
        [(field, total)] = run["answers"]
        assert field == "total_amount_cents" and isinstance(total, int) and total > 0, run["answers"]
    else:
        # cache_tools_list=True alone hides the rename: the model reads a field that is gone.
        assert "total_amount_cents" not in run["last"]["lookup_order"], run["last"]
        assert [tuple(a) for a in run["answers"]] == [("total_cents", None)], run["answers"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_recipes_know_a_tool_list_change_in_both_shapes_of_mcp(framework):
    # mcp 1.x hands the message handler a ServerNotification around the
    # notification (its `.root`); mcp 2.x the notification itself. Both are
    # built here from this venv's mcp 1.x types: the 2.x shape is the bare
    # notification (the real mcp 2.x runs in the test below).
    module, _ = recipe(framework)
    from mcp import types

    changed = types.ToolListChangedNotification(method="notifications/tools/list_changed")
    other = types.ProgressNotification(method="notifications/progress",
                                       params=types.ProgressNotificationParams(progressToken=1, progress=0.5))
    assert module.tool_list_changed(types.ServerNotification(root=changed))
    assert module.tool_list_changed(changed)
    assert not module.tool_list_changed(types.ServerNotification(root=other))
    assert not module.tool_list_changed(other)
    assert not module.tool_list_changed(RuntimeError("a transport error, also handed to the handler"))


def mcp2_python():
    """The venv with only `pip install openai-agents` (and so the mcp 2.x it
    resolves to), pinned in requirements-agents-mcp2.txt; .ci/test builds it."""
    path = os.environ.get("AGENTSIM_AGENTS_MCP2_PYTHON") or str(ROOT / "target" / "agents-mcp2-venv" / "bin" / "python")
    if not os.path.exists(path):
        message = f"{path} is missing (bash .ci/test builds it from python/tests/requirements-agents-mcp2.txt)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def test_the_agents_sdk_recipe_with_the_mcp_that_openai_agents_installs(tmp_path, on_path):
    # The recipe as shown, under mcp 2.x: the drift reaches the model, and the
    # seeds (one of each customer) succeed and replay.
    assert_every_customer(SEEDS_MCP2)
    done = subprocess.run([mcp2_python(), str(ROOT / "python" / "tests" / "mcp_recipe_runs.py"), str(tmp_path),
                           *map(str, SEEDS_MCP2)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    run = json.loads(done.stdout.splitlines()[-1])
    assert run["mcp"].startswith("2."), run["mcp"]
    assert "AttributeError" not in done.stderr, done.stderr[-4000:]
    assert_drift_seen(run["drift"])
    assert_all_succeed_and_replay(on_path, tmp_path / "sessions", tmp_path / "out", SEEDS_MCP2)


@pytest.mark.parametrize("name", ["openai_agents_mcp.py", "langgraph_mcp.py"])
def test_docs_mcp_shows_the_recipes_verbatim(root, name):
    doc = (root / "docs" / "mcp.md").read_text()
    code = (root / "examples" / "mcp" / name).read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert code in blocks, f"docs/mcp.md must show examples/mcp/{name} verbatim in a ```python block"
