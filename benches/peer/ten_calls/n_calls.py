#!/usr/bin/env python3
"""The 10-call model with N calls: `python3 n_calls.py N DIR` writes
DIR/n_calls_N.ron, and beside it the script the scenario names.

The same tool, faults, latencies and model as `ten_calls.ron`, with N gold
calls, and budgets and horizon that never bind, for measuring the cost per
event against the length of a trajectory (BENCHMARKS.md, "Cost per event
against the length of a trajectory"). Sweep it with `stack_retry.ron` (the
Retry layer without the circuit breaker: the oracle sends a call the layer gave
up on again, so every trajectory makes all N calls).
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    n, out_dir = int(sys.argv[1]), sys.argv[2]
    assert n >= 1, "at least one call"
    text = open(os.path.join(HERE, "ten_calls.ron")).read()
    head, rest = text.split("gold: [", 1)
    _, tail = rest.split("],", 1)
    gold = "".join(f'\n                    (tool: "call", args: {{"step": {i}}}),' for i in range(1, n + 1))
    text = head + "gold: [" + gold + "\n                ]," + tail
    replacements = [
        ('name: "peer_ten_calls"', f'name: "peer_n_calls_{n}"'),
        ('"maximum": 10', f'"maximum": {n}'),
        ("horizon_ms: 600_000", f"horizon_ms: {max(600_000, 200_000 * n)}"),
        (
            "budgets: (turns_max: 40, tool_calls_max: 40, tokens_max: 300_000, events_max: 2_000)",
            f"budgets: (turns_max: {20 * n + 40}, tool_calls_max: {20 * n + 40}, "
            f"tokens_max: 10_000_000_000, events_max: {100 * n + 2_000})",
        ),
    ]
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(os.path.join(HERE, "ten_calls.rhai"), out_dir)
    with open(os.path.join(out_dir, f"n_calls_{n}.ron"), "w") as out:
        out.write(text)


if __name__ == "__main__":
    main()
