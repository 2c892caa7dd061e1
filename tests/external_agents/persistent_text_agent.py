#!/usr/bin/env python3
"""The policy of examples/agents/text_agent.py (it talks to the customer with
`say`, reading only the customer's words) as a persistent agent: one process,
many episodes in flight, each with its own copy of the policy."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "agents"))
from text_agent import PROTOCOL, Agent  # noqa: E402

IN_FLIGHT = int(os.environ.get("PERSISTENT_IN_FLIGHT", "8"))


def main():
    hello = {"protocol": PROTOCOL, "type": "hello", "persistent": True, "episodes_in_flight": IN_FLIGHT}
    print(json.dumps(hello), flush=True)
    episodes = {}
    for line in sys.stdin:
        message = json.loads(line)
        episode = message.get("episode")
        if message.get("type") == "end":
            episodes.pop(episode, None)
            continue
        if message.get("seq") == 1:
            episodes[episode] = Agent()
        action = episodes[episode].step(message)
        action["protocol"] = PROTOCOL
        if episode is not None:
            action["episode"] = episode
        print(json.dumps(action), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
