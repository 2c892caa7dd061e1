#!/usr/bin/env python3
"""The peer comparison: the same reference trajectory in SimPy and in agentsim.

Creates a virtual environment with SimPy (benches/peer/.venv), builds agentsim in
release mode, runs both on the same number of trajectories, alternately, REPEATS
times, and prints the median time per trajectory of each, the ratio, and both
completion rates with Wilson 95% intervals, checking that each rate lies in the
other's interval (the same model must give the same answer). Exit 1 if not.

Usage: python3 benches/peer/run.py [TRAJECTORIES] [REPEATS]   (default 20000 3)
Both run on one thread: SimPy has no parallel mode, so the ratio is per core.
"""

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import venv

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(HERE, ".venv")
SIMPY = "simpy==4.1.2"
Z_95 = 1.959963984540054


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


def run_simpy(python, n):
    out = subprocess.run(
        [python, os.path.join(HERE, "reference_simpy.py"), str(n)], check=True, capture_output=True, text=True
    ).stdout.split()
    return int(out[0]), float(out[2]), int(out[3])


def run_agentsim(binary, n, out_dir):
    cmd = [
        binary, "sweep", os.path.join(HERE, "reference.ron"),
        "--agent", os.path.join(HERE, "stack.ron"),
        "--seeds", f"0..{n}", "--out", out_dir, "--quiet", "--failures", "0",
    ]
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    elapsed_s = time.perf_counter() - start
    with open(os.path.join(out_dir, "summary.json")) as f:
        summary = json.load(f)
    return summary["completion"]["count"], elapsed_s, summary["virtual_ms"]["mean"] * n


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    python = python_with_simpy()
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, "target", "release", "agentsim")
    simpy_s, agentsim_s = [], []
    with tempfile.TemporaryDirectory() as out_dir:
        for _ in range(repeats):  # alternate, so both see the same machine load
            simpy_ok, s, simpy_virtual_ms = run_simpy(python, n)
            simpy_s.append(s)
            agentsim_ok, s, agentsim_virtual_ms = run_agentsim(binary, n, out_dir)
            agentsim_s.append(s)
    simpy_us = statistics.median(simpy_s) / n * 1e6
    agentsim_us = statistics.median(agentsim_s) / n * 1e6
    s_lo, s_hi = wilson(simpy_ok, n)
    a_lo, a_hi = wilson(agentsim_ok, n)
    print(f"{n} trajectories each, median of {repeats} alternating runs, one thread")
    print(f"simpy     {simpy_us:9.2f} us/trajectory  completion {simpy_ok / n:.4f} [{s_lo:.4f}, {s_hi:.4f}]"
          f"  mean virtual time {simpy_virtual_ms / n / 1000:.1f} s")
    print(f"agentsim  {agentsim_us:9.2f} us/trajectory  completion {agentsim_ok / n:.4f} [{a_lo:.4f}, {a_hi:.4f}]"
          f"  mean virtual time {agentsim_virtual_ms / n / 1000:.1f} s  (whole process: CSV and summary written)")
    print(f"agentsim is {simpy_us / agentsim_us:.1f}x faster per trajectory (target: at least 100x)")
    agree = a_lo <= simpy_ok / n <= a_hi and s_lo <= agentsim_ok / n <= s_hi
    print("completion rates agree: each lies in the other's interval" if agree else "completion rates DISAGREE")
    sys.exit(0 if agree else 1)


if __name__ == "__main__":
    main()
