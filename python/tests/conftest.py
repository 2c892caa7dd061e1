"""Shared fixtures: the repository root, the CLI binary and the example agent."""

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "agents"))


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    """The `agentsim` binary: $AGENTSIM_BIN, else built here (debug)."""
    path = os.environ.get("AGENTSIM_BIN")
    if path:
        return path
    subprocess.run(["cargo", "build", "--quiet", "--bin", "agentsim"], cwd=ROOT, check=True)
    return str(ROOT / "target" / "debug" / "agentsim")


class ExampleAgent:
    """examples/agents/support_desk_agent.py's policy behind `act`."""

    def __init__(self):
        import support_desk_agent

        self.agent = support_desk_agent.Agent()

    def act(self, observation):
        return self.agent.step(observation)


@pytest.fixture
def example_agent():
    return ExampleAgent


def require(module):
    """Imports `module`, a framework the test needs (.ci/test installs it, pinned):
    a failure under CI (env CI set), a visible skip elsewhere."""
    try:
        return __import__(module)
    except ImportError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install {module} (see .ci/test and python/tests/requirements-frameworks.txt): {e}")
        pytest.skip(f"{module} is not installed (pip install -r python/tests/requirements-frameworks.txt): {e}")


@functools.lru_cache(maxsize=None)
def _support_desk():
    import agentsim

    return agentsim.Env("support_desk", record=True)


@functools.lru_cache(maxsize=None)
def persona_and_opening(seed):
    """support_desk's customer in `seed`: its persona (the world's note) and how
    it opens (scripted_models.OPENINGS: `item`, `whole order` or `vague`)."""
    from scripted_models import opening_kind

    env = _support_desk()
    observation, _ = env.reset(seed=seed)
    env.step({"action": "finish", "outcome": "done"})
    return re.search(r"persona (\w+)", env.timeline()).group(1), opening_kind(observation["text"])


def assert_every_customer(seeds, of=range(1000)):
    """`seeds` meet every (persona, opening) that support_desk draws in `of`: a
    recipe test over them meets every way a customer asks."""
    wanted = {persona_and_opening(s) for s in of}
    met = {persona_and_opening(s) for s in seeds}
    assert met == wanted, f"seeds {list(seeds)} miss {sorted(wanted - met)}: choose seeds that meet them"
