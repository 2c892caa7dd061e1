#!/usr/bin/env python3
"""A persistent external agent: one process serves many episodes at once.

Run it with:
    agentsim sweep --agent "cmd:python3 examples/agents/persistent_agent.py" --seeds 0..2000

It speaks protocol agentsim/1 (docs/protocol.md) in its persistent form, using
only the standard library: its first line is a hello that opts in; then every
observation carries the `episode` it belongs to (observations of several
episodes interleave), every action names the episode it answers, and an `end`
message says an episode is over (no answer). Each episode gets its own copy of
the policy of support_desk_agent.py (beside this file), so episodes never share
state and the agent stays deterministic.

Run as a process per trajectory (`agentsim run`, or a sweep recording a failure
again), observations carry no `episode`: the agent then serves that one episode.
"""

import json
import sys

from support_desk_agent import PROTOCOL, Agent, log

# Episodes agentsim may keep in flight on this process at once. More keeps the
# pipe busy while the policy works; an agent that waits on an LLM would ask for
# more (each episode then waits on its own call).
EPISODES_IN_FLIGHT = 16


def main():
    hello = {"protocol": PROTOCOL, "type": "hello", "persistent": True, "episodes_in_flight": EPISODES_IN_FLIGHT}
    sys.stdout.write(json.dumps(hello) + "\n")
    sys.stdout.flush()
    episodes = {}
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("protocol") != PROTOCOL:
            log("unexpected protocol:", message.get("protocol"))
            return 1
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
        sys.stdout.write(json.dumps(action) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
