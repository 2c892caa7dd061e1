"""Shared fixtures: the repository root, the CLI binary and the example agent."""

import os
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
