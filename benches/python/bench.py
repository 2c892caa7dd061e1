"""Speed of Python agents: in-process (`agentsim.evaluate`, `agentsim.Env`)
against agents in other processes (`sweep --agent cmd:`, persistent or a
process per seed). Run after `pip install .` (the optimised build) from the
repository root:

    python benches/python/bench.py [--seeds N] [--cli target/release/agentsim]

Prints trajectories per second of wall-clock time and, for in-process runs, per
second of this process's CPU time (what an idle core would give; the two differ
on a loaded machine), start-up costs and the share of a trajectory spent in the
native module with the GIL held. BENCHMARKS.md records the numbers.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "agents"))

t0 = time.perf_counter()
import agentsim  # noqa: E402

IMPORT_S = time.perf_counter() - t0

import support_desk_agent  # noqa: E402


def trivial(observation):
    """The cheapest agent: finish at once (one decision per episode)."""
    return {"action": "finish", "outcome": "done"}


class Example:
    def __init__(self):
        self.agent = support_desk_agent.Agent()

    def act(self, observation):
        return self.agent.step(observation)


def rate(label, n, seconds, decisions=None, cpu=None):
    extra = f", {decisions / seconds:,.0f} decisions/s" if decisions else ""
    extra += f", {n / cpu:,.0f} per CPU-second" if cpu else ""
    print(f"{label:<58} {n / seconds:>10,.0f} trajectories/s  ({n} in {seconds:.2f} s{extra})")


def timed(f):
    wall, cpu = time.perf_counter(), time.process_time()
    result = f()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def startup_and_gil(n):
    """Start-up (a World, the first episode) and the time spent in the native
    module, which holds the GIL, per trajectory of the trivial agent."""
    from agentsim import _native

    t = time.perf_counter()
    world = _native.World("support_desk", 1.0, None, None)
    world_s = time.perf_counter() - t
    t = time.perf_counter()
    world.start(0, False, False).act('{"action": "finish", "outcome": "done"}')
    first_s = time.perf_counter() - t
    native = 0.0
    t_all = time.perf_counter()
    for seed in range(n):
        t = time.perf_counter()
        episode = world.start(seed, False, False)
        line = episode.observation()
        native += time.perf_counter() - t
        json.loads(line)
        action = json.dumps(trivial(None))
        t = time.perf_counter()
        episode.act(action)
        native += time.perf_counter() - t
    total = time.perf_counter() - t_all
    print(f"start-up: World('support_desk') {world_s * 1000:.1f} ms, first episode {first_s * 1e6:.0f} us")
    print(
        f"GIL: the native module (simulation, GIL held) {native / n * 1e6:.1f} us of {total / n * 1e6:.1f} us "
        f"per trajectory ({native / total:.0%}); the rest is Python (decoding, the agent, encoding)"
    )


def cli_sweep(label, cli, agent, seeds, threads="2"):
    """Times a sweep: wall clock, and the CPU time of agentsim and its agents."""
    import resource

    def children_cpu():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    with tempfile.TemporaryDirectory() as out:
        t, cpu = time.perf_counter(), children_cpu()
        subprocess.run(
            [cli, "sweep", "--agent", f"cmd:python3 {agent}", "--seeds", f"0..{seeds}", "--out", out,
             "--quiet", "--failures", "0", "-j", threads],
            cwd=ROOT, check=True, capture_output=True,
        )
        rate(label, seeds, time.perf_counter() - t, cpu=children_cpu() - cpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20_000)
    parser.add_argument("--cli", default=None, help="an agentsim binary for the process-per-seed baseline")
    args = parser.parse_args()
    print(f"import agentsim: {IMPORT_S * 1000:.0f} ms")
    startup_and_gil(args.seeds // 4)
    for concurrency in (1, 2, 8):
        r, wall, cpu = timed(lambda: agentsim.evaluate(
            trivial, "support_desk", range(args.seeds), concurrency=concurrency, failures=0))
        rate(f"evaluate, trivial agent, concurrency {concurrency}", args.seeds, wall, cpu=cpu)
    n = args.seeds // 4
    r, wall, cpu = timed(lambda: agentsim.evaluate(Example, "support_desk", range(n), failures=0))
    decisions = sum(row["turns"] for row in r.rows)
    rate("evaluate, examples/agents/support_desk_agent.py", n, wall, decisions, cpu=cpu)
    with tempfile.TemporaryDirectory() as out:
        _, wall, cpu = timed(lambda: agentsim.evaluate(Example, "support_desk", range(n), out=out, failures=3))
        rate("evaluate, the same, writing out/ and failures/", n, wall, cpu=cpu)
    env = agentsim.Env("support_desk")
    t = time.perf_counter()
    steps = 0
    for seed in range(n):
        agent = Example()
        obs, info = env.reset(seed=seed)
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(info["observation"]))
            steps += 1
            if terminated or truncated:
                break
    rate("Env reset/step loop, the example agent", n, time.perf_counter() - t, steps)
    if args.cli:
        trivial_agent = "benches/python/trivial_persistent_agent.py"
        cli_sweep("sweep, persistent, 1 seed (start-up: process, hello)", args.cli, trivial_agent, 1)
        cli_sweep("sweep, persistent protocol, trivial agent, -j 2", args.cli, trivial_agent, args.seeds)
        cli_sweep("sweep, persistent protocol, trivial agent, -j 1", args.cli, trivial_agent, args.seeds // 2, "1")
        cli_sweep("sweep, persistent protocol, example policy, -j 2", args.cli,
                  "examples/agents/persistent_agent.py", n)
        cli_sweep("sweep, a process per seed, the example agent, -j 2", args.cli,
                  "examples/agents/support_desk_agent.py", 200)


if __name__ == "__main__":
    main()
