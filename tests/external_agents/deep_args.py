# Calls lookup_order with arguments nested DEPTH levels (argv[1]), then finishes.
import json, sys

depth = int(sys.argv[1])
args = {"order_id": "A1001"}
for _ in range(depth - 1):
    args = {"order_id": "A1001", "more": args}
sys.stdin.readline()
print(json.dumps({"protocol": "agentsim/1", "action": "call", "tool": "lookup_order", "args": args}), flush=True)
sys.stdin.readline()
print(json.dumps({"protocol": "agentsim/1", "action": "finish", "outcome": "done"}), flush=True)
