# A persistent agent that greets, then never answers and never reads its stdin
# (a process stuck in a call that never returns): only a kill ends it.
import json, time

print(json.dumps({"protocol": "agentsim/1", "type": "hello", "persistent": True, "episodes_in_flight": 4}), flush=True)
time.sleep(3600)
