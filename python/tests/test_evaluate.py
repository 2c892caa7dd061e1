"""agentsim.evaluate: the files of `agentsim sweep`, for any concurrency."""

import asyncio
import json
import subprocess
import threading
import time

import pytest

import agentsim

COMMAND = "cmd:python3 examples/agents/support_desk_agent.py"


def files(folder):
    return {name: (folder / name).read_bytes() for name in ("trajectories.csv", "summary.json")}


def test_the_same_files_as_sweep_with_the_external_agent(tmp_path, cli, root, example_agent):
    # The example agent as a process per seed and in-process: the same rows and
    # summary, byte for byte (with the same label).
    subprocess.run(
        [cli, "sweep", "--agent", COMMAND, "--seeds", "0..30", "--out", str(tmp_path / "cli"), "--quiet"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    result = agentsim.evaluate(example_agent, "support_desk", range(30), out=tmp_path / "py", label=COMMAND)
    assert files(tmp_path / "py") == files(tmp_path / "cli")
    assert result.summary == json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert len(result.rows) == 30 and result.rows[0]["seed"] == 0


def flaky(observation, _state={}):
    """A deterministic function agent that fails in several ways."""
    now = observation["now_ms"]
    event = observation["event"]
    if event["kind"] == "user_message" and "content" in event:
        order = event["content"].get("order_id")
        if order:
            if now % 3 == 0:
                return {"action": "finish", "outcome": "gave_up"}
            return {"action": "call", "tool": "lookup_order", "args": {"order_id": order}}
    if now % 11 == 0:
        raise RuntimeError("the agent crashed")
    if now % 13 == 0:
        return {"action": "call", "tool": "no_such_tool"}
    return {"action": "finish", "outcome": "done"}


@pytest.mark.parametrize("agent_kind", ["function", "async", "class"])
def test_byte_identical_for_concurrency_1_and_4(tmp_path, agent_kind, example_agent):
    if agent_kind == "function":
        agent = flaky
    elif agent_kind == "async":

        async def agent(observation):
            await asyncio.sleep(0.001 * (observation["seq"] % 3))
            return flaky(observation)

    else:
        agent = example_agent
    outs = []
    for concurrency in (1, 4):
        out = tmp_path / f"c{concurrency}"
        agentsim.evaluate(
            agent, "support_desk", range(40), concurrency=concurrency, out=out, fault_scale=2.0, label="flaky"
        )
        outs.append(out)
    assert files(outs[0]) == files(outs[1])
    failures = sorted(p.name for p in (outs[0] / "failures").glob("*.ron")) if (outs[0] / "failures").exists() else []
    assert failures == sorted(p.name for p in (outs[1] / "failures").glob("*.ron")) if failures else True
    for name in failures:
        assert (outs[0] / "failures" / name).read_bytes() == (outs[1] / "failures" / name).read_bytes()


def test_failures_replay_without_python(tmp_path, cli, root):
    result = agentsim.evaluate(flaky, "support_desk", range(30), out=tmp_path, label="flaky")
    outcomes = {k for k, v in result.summary["outcomes"].items() if v and k != "success"}
    assert "agent_error" in outcomes and "gave_up" in outcomes
    assert result.summary["failures"]
    incidents = [str(tmp_path / name) for name in result.summary["failures"]]
    replay = subprocess.run([cli, "replay", *incidents], cwd=root, capture_output=True, text=True)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    # The exception's traceback is kept as a diagnostic.
    crashed = [r for r in result.rows if "external.error" in r["decisions"]]
    assert crashed


def test_every_episode_recorded_replays_without_python(tmp_path, cli, root, example_agent):
    result = agentsim.evaluate(example_agent, "support_desk", range(6), out=tmp_path, record_all=True, concurrency=2)
    incidents = sorted(str(p) for p in (tmp_path / "episodes").glob("seed*.ron"))
    assert len(incidents) == 6
    replay = subprocess.run([cli, "replay", *incidents], cwd=root, capture_output=True, text=True)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "6 passed" in replay.stdout
    assert result.summary["trajectories"] == 6


def test_without_out_only_the_result(example_agent):
    result = agentsim.evaluate(example_agent, "support_desk", 10)
    assert result.out is None
    assert result.summary["trajectories"] == 10
    assert 0.0 <= result.completion <= 1.0
    assert set(result.summary["completion"]) >= {"rate", "lo", "hi"}


def test_resume_continues_an_interrupted_evaluation(tmp_path, example_agent):
    whole = tmp_path / "whole"
    agentsim.evaluate(example_agent, "support_desk", range(25), out=whole, label="x", fault_scale=2.0)

    part = tmp_path / "part"

    class Stop(example_agent):
        started = 0

        def act(self, observation):
            if observation["seq"] == 1:
                Stop.started += 1
                if Stop.started > 12:
                    raise KeyboardInterrupt
            return super().act(observation)

    with pytest.raises(KeyboardInterrupt):
        agentsim.evaluate(Stop, "support_desk", range(25), out=part, label="x", fault_scale=2.0)
    summary = json.loads((part / "summary.json").read_text())
    assert summary["partial"]["done_until_seed"] == 12
    agentsim.evaluate(example_agent, "support_desk", range(25), out=part, label="x", fault_scale=2.0, resume=True)
    assert files(part) == files(whole)


def test_an_interrupted_async_evaluation_resumes_into_the_same_files(tmp_path, example_agent):
    whole = tmp_path / "whole"
    agentsim.evaluate(example_agent, "support_desk", range(20), out=whole, label="x")
    started = [0]

    class Stop:
        def __init__(self):
            self.inner = example_agent()

        async def act(self, observation):
            if observation["seq"] == 1:
                started[0] += 1
                if started[0] > 9:
                    raise KeyboardInterrupt
            await asyncio.sleep(0)
            return self.inner.act(observation)

    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        agentsim.evaluate(Stop, "support_desk", range(20), out=part, label="x", concurrency=3)
    summary = json.loads((part / "summary.json").read_text())
    assert summary["partial"]["done_until_seed"] < 20
    agentsim.evaluate(example_agent, "support_desk", range(20), out=part, label="x", resume=True, concurrency=2)
    assert files(part) == files(whole)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"seeds": range(5, 5)}, "seeds"),
        ({"seeds": range(0, 10, 2)}, "seeds"),
        ({"seeds": [1, 2]}, "seeds"),
        ({"concurrency": 0}, "concurrency"),
        ({"failures": -1}, "failures"),
        ({"scenario": "nope"}, "scenario"),
        ({"layers": "nope"}, "layers"),
        ({"resume": True}, "resume"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}"):
        agentsim.evaluate(flaky, **kwargs)


def test_something_that_is_not_an_agent_raises_value_error():
    with pytest.raises(ValueError, match="^agent"):
        agentsim.evaluate(5, "support_desk", range(3))


def test_the_sync_and_async_paths_write_the_same_files(tmp_path):
    async def async_flaky(observation):
        return flaky(observation)

    agentsim.evaluate(flaky, "support_desk", range(30), out=tmp_path / "sync", label="same")
    agentsim.evaluate(async_flaky, "support_desk", range(30), out=tmp_path / "async", label="same")
    assert files(tmp_path / "sync") == files(tmp_path / "async")
    names = sorted(p.name for p in (tmp_path / "sync" / "failures").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "async" / "failures").iterdir())


def test_resume_refuses_other_arguments(tmp_path, example_agent):
    agentsim.evaluate(example_agent, "support_desk", range(5), out=tmp_path, label="x")
    with pytest.raises(ValueError, match="resume"):
        agentsim.evaluate(example_agent, "support_desk", range(6), out=tmp_path, label="x", resume=True)


def test_a_scripted_world(root):
    scenario = str(root / "examples" / "worlds" / "helpdesk" / "helpdesk.ron")
    env = agentsim.Env(scenario, tasks="all")
    obs, info = env.reset(seed=0)
    assert obs["kind"] == "user_message"
    result = agentsim.evaluate(lambda o: {"action": "finish", "outcome": "gave_up"}, scenario, range(4))
    assert result.summary["trajectories"] == 4
    assert result.rows[0]["task"]


def test_a_synchronous_agent_that_does_not_wait_runs_on_the_calling_thread_at_any_concurrency(tmp_path):
    # A thread pool would cost a trivial agent 3 to 4 times its speed: raising
    # concurrency must not slow it down, and the files are the same bytes.
    threads = set()

    def agent(observation):
        threads.add(threading.get_ident())
        return flaky(observation)

    for concurrency in (1, 8):
        agentsim.evaluate(agent, "support_desk", range(60), concurrency=concurrency, out=tmp_path / f"c{concurrency}",
                          fault_scale=2.0, label="flaky")
    assert threads == {threading.get_ident()}
    assert files(tmp_path / "c1") == files(tmp_path / "c8")


def test_a_synchronous_agent_that_waits_runs_on_threads_into_the_same_files(tmp_path, example_agent):
    # An agent whose calls wait (here 3 ms of sleep; an LLM over HTTP) gains from
    # concurrency: once seen to wait, its episodes run on `concurrency` threads.
    threads = set()

    class Waiting(example_agent):
        def act(self, observation):
            threads.add(threading.get_ident())
            time.sleep(0.003)
            return super().act(observation)

    agentsim.evaluate(example_agent, "support_desk", range(16), out=tmp_path / "fast", label="x", fault_scale=2.0)
    agentsim.evaluate(Waiting, "support_desk", range(16), concurrency=4, out=tmp_path / "waits", label="x",
                      fault_scale=2.0)
    assert len(threads - {threading.get_ident()}) >= 2, "the waiting agent's episodes overlap on threads"
    assert files(tmp_path / "fast") == files(tmp_path / "waits")
    fast = sorted(p.name for p in (tmp_path / "fast" / "failures").glob("*.ron"))
    assert fast == sorted(p.name for p in (tmp_path / "waits" / "failures").glob("*.ron"))
    for name in fast:
        assert (tmp_path / "fast" / "failures" / name).read_bytes() == (tmp_path / "waits" / "failures" / name).read_bytes()


def test_an_interrupted_evaluation_on_threads_resumes_into_the_same_files(tmp_path, example_agent):
    whole = tmp_path / "whole"
    agentsim.evaluate(example_agent, "support_desk", range(20), out=whole, label="x")
    started = [0]

    class Stop(example_agent):
        def act(self, observation):
            time.sleep(0.002)
            if observation["seq"] == 1:
                started[0] += 1
                if started[0] > 10:
                    raise KeyboardInterrupt
            return super().act(observation)

    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        agentsim.evaluate(Stop, "support_desk", range(20), out=part, label="x", concurrency=3)
    summary = json.loads((part / "summary.json").read_text())
    assert summary["partial"]["done_until_seed"] < 20
    agentsim.evaluate(example_agent, "support_desk", range(20), out=part, label="x", resume=True, concurrency=2)
    assert files(part) == files(whole)


@pytest.mark.parametrize("waiting_s, computing_s, waits", [
    (0.0, 0.00001, False),   # a trivial agent: never slow, its CPU time never read
    (0.2, 0.001, True),      # an LLM over HTTP: waits
    (0.0, 0.005, False),     # a CPU-bound agent: slow, but threads would not help it
    (0.0008, 0.0001, False), # under 1 ms a call: on the calling thread
])
def test_pace_tells_an_agent_that_waits_from_one_that_computes(waiting_s, computing_s, waits):
    from agentsim.evaluate import _Pace

    clock = {"wall": 0.0, "cpu": 0.0, "cpu_reads": 0}

    def cpu():
        clock["cpu_reads"] += 1
        return clock["cpu"]

    def agent(observation):
        clock["wall"] += waiting_s + computing_s
        clock["cpu"] += computing_s

    pace = _Pace(wall=lambda: clock["wall"], cpu=cpu)
    for _ in range(40):
        pace.call(agent, None)
    assert pace.waits == waits
    if waiting_s + computing_s < _Pace.WAIT_S_MIN:
        assert clock["cpu_reads"] == 0, "a fast agent's calls read the wall clock only"
    else:
        assert clock["cpu_reads"] == 2 * _Pace.CALLS_MIN, "a slow agent's CPU time is read for CALLS_MIN calls"


def test_evaluate_async_runs_a_synchronous_agent_as_evaluate_does(tmp_path):
    threads = set()

    def agent(observation):
        threads.add(threading.get_ident())
        return flaky(observation)

    async def main():
        return await agentsim.evaluate_async(agent, "support_desk", range(30), concurrency=4, out=tmp_path / "a",
                                             fault_scale=2.0, label="flaky")

    asyncio.run(main())
    agentsim.evaluate(flaky, "support_desk", range(30), out=tmp_path / "e", fault_scale=2.0, label="flaky")
    assert len(threads) == 1 and threading.get_ident() not in threads, "one thread, off the event loop's"
    assert files(tmp_path / "a") == files(tmp_path / "e")


def test_the_package_is_typed_and_evaluate_s_options_are_written_once():
    import dataclasses
    import inspect
    from pathlib import Path

    package = Path(agentsim.__file__).parent
    assert (package / "py.typed").exists()
    stub = (package / "_native.pyi").read_text()
    # Every class and function the native module has is in its stub.
    for name in dir(agentsim._native):
        if not name.startswith("_"):
            assert f"class {name}" in stub or f"def {name}" in stub or f"{name}:" in stub, name
    fields = [f.name for f in dataclasses.fields(agentsim.EvaluateOptions)]
    assert fields == ["concurrency", "layers", "out", "fault_scale", "tasks", "failures", "resume", "label",
                      "shared", "record_all", "trials", "user", "llm_base_url", "llm_api_key_env", "cassette",
                      "cassette_mode"]
    # evaluate and evaluate_async take them as keywords, not as parameters of their own.
    for fn in (agentsim.evaluate, agentsim.evaluate_async):
        assert list(inspect.signature(fn).parameters) == ["agent", "scenario", "seeds", "options"]
    with pytest.raises(TypeError, match="'concurency'"):
        agentsim.evaluate(lambda o: {"action": "finish"}, "support_desk", range(1), concurency=2)


def test_a_function_that_returns_awaitables_runs_in_one_event_loop_per_episode():
    import asyncio

    loops = []  # the loops themselves, kept alive so that their ids stay distinct

    async def step(observation):
        loops.append(asyncio.get_running_loop())
        if observation["seq"] > 2:
            return {"action": "finish", "outcome": "done"}
        return {"action": "sleep", "until_ms": observation["now_ms"] + 10}

    def agent(observation):  # a plain function handing back coroutines
        return step(observation)

    result = agentsim.evaluate(agent, "support_desk", range(2))
    assert len(result.rows) == 2
    assert len(loops) == 6 and len({id(loop) for loop in loops}) == 2, "one loop per episode, not one per step"


def test_a_deeply_nested_action_ends_its_episode_not_the_evaluation():
    # Issue 46: json.dumps of an action nested 100,000 deep raised
    # RecursionError out of evaluate; now each such episode is agent_error,
    # saying why, and evaluate returns every row.
    def deep(observation):
        args = {"order_id": "A1001"}
        for _ in range(100_000):
            args = {"order_id": "A1001", "more": args}
        return {"action": "call", "tool": "lookup_order", "args": args}

    result = agentsim.evaluate(deep, "support_desk", range(3))
    assert [row["outcome"] for row in result.rows] == ["agent_error"] * 3
