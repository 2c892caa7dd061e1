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


def tau2_retail_data():
    """tau2-bench's retail folder (db.json, tasks.json, policy.md), which this
    repository does not hold: $AGENTSIM_TAU2_RETAIL, else `shared/tau2-retail`
    beside the checkout (as tests/tau2.rs and .ci/run look). Missing: a failure
    under CI, a visible skip elsewhere."""
    folder = Path(os.environ.get("AGENTSIM_TAU2_RETAIL") or ROOT.parent / "shared" / "tau2-retail")
    if all((folder / name).is_file() for name in ("db.json", "tasks.json", "policy.md")):
        return folder
    why = (f"no tau2-bench retail data at {folder} "
           "(set AGENTSIM_TAU2_RETAIL to a folder with db.json, tasks.json, policy.md)")
    if os.environ.get("CI"):
        pytest.fail(f"CI must have the tau2 data (see .ci/run): {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def tau2_retail(cli, tmp_path_factory):
    """(tau2's data folder, the folder `agentsim import-tau2` wrote from it), once per session."""
    data = tau2_retail_data()
    out = tmp_path_factory.mktemp("tau2") / "retail"
    done = subprocess.run([cli, "import-tau2", str(data), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return data, out
