"""Many sessions in one world from Python (docs/sessions.md): a named agent
sweeps a scenario of many sessions into the same files as the CLI; a Python
agent serves every session, a copy of it per session, into the same files as
a process per session; the step-by-step environment is one agent, and refuses
a scenario of many with a message that says what runs instead."""

import json
import subprocess

import pytest

import agentsim

RACE = "seeds/support_desk_race.ron"
COMMAND = "cmd:python3 examples/agents/support_desk_agent.py"


def files(folder):
    return {name: (folder / name).read_bytes() for name in ("trajectories.csv", "summary.json")}


def test_a_named_agent_sweeps_many_sessions_like_the_cli(tmp_path, cli, root):
    subprocess.run(
        [cli, "sweep", RACE, "--agent", "resilient", "--seeds", "0..4", "--out", str(tmp_path / "cli"), "--quiet"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    result = agentsim.evaluate("resilient", str(root / RACE), range(4), out=tmp_path / "py")
    summary = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert result.summary["sessions"] == summary["sessions"]
    assert result.summary["sessions"]["sessions"] == 40
    assert result.summary["digest"] == summary["digest"]


def test_a_python_agent_serves_every_session_like_a_process_per_session(tmp_path, cli, root, example_agent):
    # The CLI runs the example agent as a process per session; evaluate runs
    # a copy of it per session in this process: the same files, byte for byte.
    subprocess.run(
        [cli, "sweep", RACE, "--agent", COMMAND, "--seeds", "0..3", "--out", str(tmp_path / "cli"), "--quiet"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    result = agentsim.evaluate(example_agent, str(root / RACE), range(3), out=tmp_path / "py", label=COMMAND)
    assert files(tmp_path / "py") == files(tmp_path / "cli")
    assert result.summary["sessions"]["sessions"] == 30


def test_each_session_gets_its_own_copy_of_a_stateful_agent(root, example_agent):
    class OneSession(example_agent):
        """Refuses to serve two sessions: each copy must see one."""

        def act(self, observation):
            session = observation.get("session")
            assert session is not None, "a run of many sessions names each observation's session"
            self.session = getattr(self, "session", session)
            if self.session != session:
                raise RuntimeError(f"one agent served sessions {self.session} and {session}")
            return super().act(observation)

    result = agentsim.evaluate(OneSession(), str(root / RACE), range(2))
    assert result.summary["sessions"]["sessions"] == 20
    assert result.summary["outcomes"].get("agent_error", 0) == 0, result.summary["outcomes"]


def test_the_step_by_step_environment_is_one_session(root):
    env = agentsim.Env(str(root / RACE))
    with pytest.raises(ValueError, match="runs 10 sessions in one world"):
        env.reset(seed=0)
