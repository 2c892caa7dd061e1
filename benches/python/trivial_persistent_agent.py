#!/usr/bin/env python3
"""The cheapest persistent agent (standard library only): greets, then finishes
every episode at its first observation. For the persistent-protocol benchmark
(benches/python/bench.py); `end` messages need no answer."""

import json
import sys


def main():
    hello = {"protocol": "agentsim/1", "type": "hello", "persistent": True, "episodes_in_flight": 64}
    out = sys.stdout
    out.write(json.dumps(hello) + "\n")
    out.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("type") == "end":
            continue
        episode = message["episode"]
        out.write(f'{{"protocol":"agentsim/1","action":"finish","outcome":"done","episode":{episode}}}\n')
        out.flush()


if __name__ == "__main__":
    main()
