# Speaks a protocol version agentsim does not know.
import json, sys
sys.stdin.readline()
print(json.dumps({"protocol": "agentsim/9", "action": "idle"}), flush=True)
