#!/usr/bin/env python3
"""The peer comparison: the same models in SimPy and in agentsim, in one run.

Two models (benches/peer/README.md describes both and why every implementation
decides completion the same way):

- `ten_calls`: ten tool calls in sequence, 20% 503s, up to 3 retries with
  full-jitter exponential backoff. Run six ways: (a) SimPy; (b) agentsim with
  the world as files (`ten_calls/`), timed as the whole `agentsim sweep`
  process and again swept in process; (c) agentsim with the world as Rust code
  against the public API (`WorldBuilder` and the agent stack); (c') the same
  model written directly against the engine, a hand-written world and agent
  doing its own retries (the engine's own cost, the line comparable to SimPy's
  hand-written process); (d) a minimal Rust loop over a `BinaryHeap`, no
  engine (the practical limit). Each completion rate is checked against the
  closed form (1 - 0.2^4)^10 with a 99.9% Wilson interval.
- `refund`: the support_desk refund (`reference.ron`, `stack.ron`) against
  `reference_simpy.py`; the two rates must each lie in the other's 95% interval.

Creates a virtual environment with SimPy (benches/peer/.venv), builds agentsim
and the peer bench (`benches/peer/rust`) in the given profile, runs every
implementation on the same number of trajectories, REPEATS rounds, each round
running them in turn (the order rotated from round to round, so all see the
same machine load), one thread each, and prints the median time per trajectory
of each (CPU time, user and system, and wall clock), its speed relative to
SimPy in CPU time (other processes on a loaded machine do not enter it), and
the completion rates with Wilson intervals.
Exit 1 if a check of the completion rates fails.

Usage: python3 benches/peer/run.py [TRAJECTORIES] [REPEATS] [--model ten_calls|refund|all]
                                   [--profile release|dist|pgo]  (default 20000 3 all release)

`--profile pgo` builds with `deploy/build-pgo.sh --peer` (the `dist` profile
with profile-guided optimisation; binaries in target/pgo/dist).
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import venv

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(HERE, ".venv")
TEN_CALLS = os.path.join(HERE, "ten_calls")
SIMPY = "simpy==4.1.2"
Z_95 = 1.959963984540054
Z_999 = 3.290526731491926
# The 10-call model's completion rate: a call fails only when all 4 attempts
# fail, and a trajectory needs all 10 calls.
TEN_CALLS_CLOSED_FORM = (1 - 0.2**4) ** 10
# One thread everywhere: SimPy has no parallel mode, so ratios are per core.
ONE_THREAD = dict(os.environ, RAYON_NUM_THREADS="1")


def wilson(count, n, z=Z_95):
    p = count / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return centre - half, centre + half


def python_with_simpy():
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        venv.create(VENV, with_pip=True)
    if subprocess.run([python, "-c", "import simpy"], capture_output=True).returncode != 0:
        subprocess.run([python, "-m", "pip", "install", "--quiet", SIMPY], check=True)
    return python


def build(profile):
    """Builds `agentsim` and `peer-ten-calls`; returns the folder they are in."""
    if profile == "pgo":
        subprocess.run(["bash", os.path.join(ROOT, "deploy", "build-pgo.sh"), "--peer"], cwd=ROOT, check=True)
        return os.path.join(ROOT, "target", "pgo", "dist")
    for package, binary in [("agentsim-cli", "agentsim"), ("agentsim-peer", "peer-ten-calls")]:
        cmd = ["cargo", "build", "--profile", profile, "--quiet", "-p", package, "--bin", binary]
        subprocess.run(cmd, cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", profile)


class Side:
    """One implementation: how to run it, and what its runs came to."""

    def __init__(self, label, run):
        self.label, self.run = label, run
        self.seconds, self.cpu_seconds = [], []
        self.successes = None
        self.virtual_ms = None

    def measure(self, n):
        successes, seconds, virtual_ms, cpu_seconds = self.run(n)
        self.seconds.append(seconds)
        self.cpu_seconds.append(cpu_seconds)
        self.successes, self.virtual_ms = successes, virtual_ms

    def us_per_trajectory(self, n):
        """Wall clock."""
        return statistics.median(self.seconds) / n * 1e6

    def cpu_us_per_trajectory(self, n):
        return statistics.median(self.cpu_seconds) / n * 1e6


def printed_five(cmd):
    """Runs a command that prints `successes n seconds virtual_ms cpu_seconds`."""
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=ONE_THREAD).stdout.split()
    return int(out[0]), float(out[2]), int(out[3]), float(out[4])


def children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def agentsim_sweep(binary, scenario, stack, out_dir):
    """The whole `agentsim sweep` process (start-up, CSV and summary written), timed."""

    def run(n):
        cmd = [binary, "sweep", scenario, "--agent", stack, "--seeds", f"0..{n}", "--out", out_dir,
               "--quiet", "--failures", "0"]
        start, start_cpu = time.perf_counter(), children_cpu_s()
        subprocess.run(cmd, check=True, capture_output=True, env=ONE_THREAD)
        elapsed_s, cpu_s = time.perf_counter() - start, children_cpu_s() - start_cpu
        with open(os.path.join(out_dir, "summary.json")) as f:
            summary = json.load(f)
        return summary["completion"]["count"], elapsed_s, round(summary["virtual_ms"]["mean"] * n), cpu_s

    return run


def run_rounds(sides, n, repeats):
    for round_ in range(repeats):  # in turn, so all see the same machine load
        k = round_ % len(sides)
        for side in sides[k:] + sides[:k]:
            side.measure(n)


def report(title, sides, n, repeats, profile, limit=None):
    """Prints each side's costs and its speed against SimPy (the first side) and,
    when `limit` (the minimal loop) is given, its cost as a multiple of the
    limit's: a ratio between two compiled programs, which moves less with the
    machine's day than a ratio to the interpreter."""
    simpy_cpu_us = sides[0].cpu_us_per_trajectory(n)
    print(f"{title}: {n} trajectories each, median of {repeats} rounds (order rotated), one thread, "
          f"`{profile}` profile; us per trajectory in CPU time (the ratios') and wall clock")
    limit_head = f" {'this/loop':>9}" if limit else ""
    print(f"  {'':51} {'CPU us':>9} {'SimPy/this':>10}{limit_head} {'wall us':>9}  "
          f"{'completion [95% Wilson]':<26} mean virtual time")
    for side in sides:
        cpu_us = side.cpu_us_per_trajectory(n)
        lo, hi = wilson(side.successes, n)
        to_limit = f" {cpu_us / limit.cpu_us_per_trajectory(n):8.1f}x" if limit else ""
        print(f"  {side.label:51} {cpu_us:9.2f} {simpy_cpu_us / cpu_us:9.1f}x{to_limit} {side.us_per_trajectory(n):9.2f}  "
              f"{side.successes / n:.4f} [{lo:.4f}, {hi:.4f}]   {side.virtual_ms / n / 1000:.1f} s")


def ten_calls(python, target, n, repeats, profile, out_dir):
    peer = os.path.join(target, "peer-ten-calls")
    sides = [
        Side("(a) SimPy", lambda n: printed_five(
            [python, os.path.join(TEN_CALLS, "ten_calls_simpy.py"), str(n)])),
        Side("(b) agentsim, files: whole process", agentsim_sweep(
            os.path.join(target, "agentsim"), os.path.join(TEN_CALLS, "ten_calls.ron"),
            os.path.join(TEN_CALLS, "stack.ron"), out_dir)),
        Side("(b) agentsim, files: the sweep alone", lambda n: printed_five([peer, "scripted", str(n)])),
        Side("(c) agentsim, Rust builder + stack: the sweep alone", lambda n: printed_five([peer, "rust", str(n)])),
        Side("(c') agentsim, engine API: the sweep alone", lambda n: printed_five([peer, "engine", str(n)])),
        Side("(d) minimal Rust loop", lambda n: printed_five([peer, "loop", str(n)])),
    ]
    run_rounds(sides, n, repeats)
    report("10-call model", sides, n, repeats, profile, limit=sides[-1])
    closed = TEN_CALLS_CLOSED_FORM
    intervals = [(side.label, wilson(side.successes, n, Z_999)) for side in sides]
    misses = [label for label, (lo, hi) in intervals if not lo <= closed <= hi]
    if misses:
        print(f"  completion DISAGREES with the closed form {closed:.4f} (outside the 99.9% interval): "
              + ", ".join(misses))
    else:
        print(f"  completion agrees: the closed form {closed:.4f} lies in every 99.9% Wilson interval")
    return not misses


def refund(python, target, n, repeats, profile, out_dir):
    sides = [
        Side("(a) SimPy", lambda n: printed_five([python, os.path.join(HERE, "reference_simpy.py"), str(n)])),
        Side("agentsim, support_desk: whole process", agentsim_sweep(
            os.path.join(target, "agentsim"), os.path.join(HERE, "reference.ron"),
            os.path.join(HERE, "stack.ron"), out_dir)),
    ]
    run_rounds(sides, n, repeats)
    report("refund model", sides, n, repeats, profile)
    (s_ok, a_ok) = (sides[0].successes, sides[1].successes)
    s_lo, s_hi = wilson(s_ok, n)
    a_lo, a_hi = wilson(a_ok, n)
    agree = a_lo <= s_ok / n <= a_hi and s_lo <= a_ok / n <= s_hi
    print("  completion agrees: each rate lies in the other's 95% interval" if agree
          else "  completion DISAGREES: a rate lies outside the other's 95% interval")
    return agree


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectories", nargs="?", type=int, default=20_000)
    parser.add_argument("repeats", nargs="?", type=int, default=3)
    parser.add_argument("--model", choices=["ten_calls", "refund", "all"], default="all")
    parser.add_argument("--profile", choices=["release", "dist", "pgo"], default="release")
    args = parser.parse_args()
    if args.trajectories < 1 or args.repeats < 1:
        parser.error("TRAJECTORIES and REPEATS are at least 1")
    python = python_with_simpy()
    target = build(args.profile)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    agree = True
    with tempfile.TemporaryDirectory() as out_dir:
        if args.model in ("ten_calls", "all"):
            agree &= ten_calls(python, target, args.trajectories, args.repeats, args.profile, out_dir)
        if args.model in ("refund", "all"):
            agree &= refund(python, target, args.trajectories, args.repeats, args.profile, out_dir)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sys.exit(0 if agree else 1)


if __name__ == "__main__":
    main()
