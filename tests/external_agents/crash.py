# Answers once (a call, so another observation follows), then crashes with a
# traceback on stderr.
import json, sys
sys.stdin.readline()
print(json.dumps({"protocol": "agentsim/1", "action": "call", "tool": "authenticate", "args": {}}), flush=True)
sys.stdin.readline()
raise RuntimeError("the agent fell over")
