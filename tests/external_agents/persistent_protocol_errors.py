# A persistent agent that breaks the persistent protocol itself: argv[1] is
# `bad_hello` (a hello with `episodes_in_flight` 0) or `no_episode` (a good hello,
# then answers that name no episode).
import json, sys

PROTOCOL = "agentsim/1"
MODE = sys.argv[1]
in_flight = 0 if MODE == "bad_hello" else 2
print(json.dumps({"protocol": PROTOCOL, "type": "hello", "persistent": True, "episodes_in_flight": in_flight}), flush=True)
for line in sys.stdin:
    if json.loads(line).get("type") == "end":
        continue
    print(json.dumps({"protocol": PROTOCOL, "action": "idle"}), flush=True)
