# Prints its pid (different on every run) on several stderr lines, answers once,
# then crashes: its stderr must stay out of the digest and on one timeline line.
import json, os, sys
print(f"pid {os.getpid()}\nstarting", file=sys.stderr, flush=True)
sys.stdin.readline()
print(json.dumps({"protocol": "agentsim/1", "action": "call", "tool": "authenticate", "args": {}}), flush=True)
sys.stdin.readline()
print(f"pid {os.getpid()} gives up\n\x1b[31mred\x1b[0m", file=sys.stderr, flush=True)
sys.exit(3)
