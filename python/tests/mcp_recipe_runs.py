"""Runs of the MCP recipes (examples/mcp/) with a scripted model, shared by
test_mcp_frameworks.py and by the run under the mcp version that
`pip install openai-agents` brings by itself (a venv of its own, without pytest
or agentsim's package: this file is run there as a script).

    python mcp_recipe_runs.py DIR SEED...    # prints one JSON line: mcp's version, the drift run, the seeds

It needs `agentsim` on PATH, as the recipes call it.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[2]
for folder in ("examples/mcp", "examples/agents", "python/tests"):
    if str(ROOT / folder) not in sys.path:
        sys.path.insert(0, str(ROOT / folder))


def early_drift(folder: Path) -> str:
    """support_desk with its drift (total_cents renamed total_amount_cents) at 1 s
    instead of 120 s: the session's first call crosses it."""
    text = (ROOT / "seeds" / "support_desk.ron").read_text()
    assert "at_ms: 120_000" in text
    path = Path(folder) / "early_drift.ron"
    path.write_text(text.replace("at_ms: 120_000", "at_ms: 1_000"))
    return str(path)


def total_reader(answers: List[Any]):
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


def drift_run(module, model_class, folder: Path) -> Dict[str, Any]:
    """Seed 1 of support_desk with the early drift, the total reader as the model:
    the descriptions it was shown first and last, and the totals it read."""
    answers: List[Any] = []
    scripted = model_class(total_reader(answers))
    asyncio.run(module.one_seed(1, model=scripted, scenario=early_drift(folder), record_dir=str(folder)))
    return {"first": scripted.shown[0], "last": scripted.shown[-1], "answers": answers}


def seeds_run(module, model_class, seeds, folder: Path) -> None:
    """One recorded session per seed (`s{seed}.ron` in `folder`), each with a
    fresh scripted model playing the example agent's policy."""
    for seed in seeds:
        asyncio.run(module.one_seed(seed, model=model_class(), record_dir=str(folder)))


def main(argv: List[str]) -> None:
    """The Agents SDK recipe under whatever mcp this interpreter has: the drift
    run in DIR/drift, the seeds' sessions in DIR/sessions; one JSON line out."""
    import openai_agents_mcp as module
    from scripted_models import ScriptedAgentsModel

    folder, seeds = Path(argv[0]), [int(s) for s in argv[1:]]
    (folder / "drift").mkdir(parents=True, exist_ok=True)
    (folder / "sessions").mkdir(parents=True, exist_ok=True)
    drift = drift_run(module, ScriptedAgentsModel, folder / "drift")
    seeds_run(module, ScriptedAgentsModel, seeds, folder / "sessions")
    print(json.dumps({"mcp": version("mcp"), "openai-agents": version("openai-agents"), "drift": drift}))


if __name__ == "__main__":
    main(sys.argv[1:])
