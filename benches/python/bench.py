"""Speed of Python agents: in-process (`agentsim.evaluate`, `agentsim.Env`)
against a process per seed (`sweep --agent cmd:`). Run after `pip install .`
(the optimised build) from the repository root:

    python benches/python/bench.py [--seeds N] [--cli target/release/agentsim]

Prints trajectories per second; BENCHMARKS.md records the numbers.
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


def rate(label, n, seconds, decisions=None):
    extra = f", {decisions / seconds:,.0f} decisions/s" if decisions else ""
    print(f"{label:<58} {n / seconds:>10,.0f} trajectories/s  ({n} in {seconds:.2f} s{extra})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20_000)
    parser.add_argument("--cli", default=None, help="an agentsim binary for the process-per-seed baseline")
    args = parser.parse_args()
    print(f"import agentsim: {IMPORT_S * 1000:.0f} ms")
    for concurrency in (1, 2, 8):
        t = time.perf_counter()
        r = agentsim.evaluate(trivial, "support_desk", range(args.seeds), concurrency=concurrency, failures=0)
        rate(f"evaluate, trivial agent, concurrency {concurrency}", args.seeds, time.perf_counter() - t)
    n = args.seeds // 4
    t = time.perf_counter()
    r = agentsim.evaluate(Example, "support_desk", range(n), failures=0)
    decisions = sum(row["turns"] for row in r.rows)
    rate("evaluate, examples/agents/support_desk_agent.py", n, time.perf_counter() - t, decisions)
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        agentsim.evaluate(Example, "support_desk", range(n), out=out, failures=3)
        rate("evaluate, the same, writing out/ and failures/", n, time.perf_counter() - t)
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
        m = 200
        with tempfile.TemporaryDirectory() as out:
            t = time.perf_counter()
            subprocess.run(
                [args.cli, "sweep", "--agent", "cmd:python3 examples/agents/support_desk_agent.py",
                 "--seeds", f"0..{m}", "--out", out, "--quiet", "--failures", "0"],
                cwd=ROOT, check=True, capture_output=True,
            )
            rate("sweep --agent cmd: (a process per seed), the example agent", m, time.perf_counter() - t)


if __name__ == "__main__":
    main()
