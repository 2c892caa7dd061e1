"""Many sessions in one world from Python (docs/sessions.md): a named agent
sweeps a scenario of many sessions into the same files as the CLI; an agent
driven one step at a time is one session, and is refused with a message that
says what runs instead."""

import json
import subprocess

import pytest

import agentsim

RACE = "seeds/support_desk_race.ron"


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


def test_a_python_agent_is_one_session(root):
    def agent(observation):
        return {"action": "finish", "outcome": "done"}

    with pytest.raises(ValueError, match="runs 10 sessions in one world"):
        agentsim.evaluate(agent, str(root / RACE), range(1))
