"""Episodes in the native module are suspended simulations on the caller's
thread: many can be open at once, any thread may step or drop them, and an
abandoned one is ended and freed (no warning, no leak, no crash)."""

import gc
import json
import threading

import pytest

import agentsim
from agentsim import _native

FINISH = json.dumps({"action": "finish", "outcome": "done"})


@pytest.mark.filterwarnings("error")
def test_open_episodes_step_on_any_thread_and_are_freed_when_abandoned():
    world = _native.World("support_desk", 1.0, None, None)
    episodes = [world.start(seed) for seed in range(300)]
    assert not any(e.done for e in episodes)
    first = json.loads(episodes[0].observation())
    assert first["seq"] == 1 and first["tools"], "the first observation lists the tools"

    def finish_some():
        for episode in episodes[:10]:
            episode.act(FINISH)

    thread = threading.Thread(target=finish_some)
    thread.start()
    thread.join()
    assert all(e.done for e in episodes[:10]) and not episodes[10].done
    assert json.loads(episodes[0].result_json())["outcome"] in ("success", "wrong_result", "gave_up")

    # Dropped suspended, some on another thread.
    moved = episodes[150:]
    del episodes[150:]
    thread = threading.Thread(target=lambda: moved.clear())
    thread.start()
    thread.join()
    del episodes
    gc.collect()

    # The freed stacks serve new episodes.
    result = agentsim.evaluate(lambda o: {"action": "finish", "outcome": "done"}, "support_desk", range(20), failures=0)
    assert len(result.rows) == 20


def test_without_tools_the_first_observation_leaves_them_to_the_caller():
    world = _native.World("support_desk", 1.0, None, None)
    assert "tools" not in json.loads(world.start(0, False, False).observation())
    assert json.loads(world.tools_json())[0]["name"]
