# Starts a long-lived child (the agent's own subprocess, like a shell that runs
# python without exec) that writes its pid to the file named by argv[1], then
# answers once and hangs: ending the trajectory must end the child too.
import json, subprocess, sys
subprocess.Popen(["sh", "-c", "echo $$ > " + sys.argv[1] + ".tmp && mv " + sys.argv[1] + ".tmp " + sys.argv[1] + " && exec sleep 600"])
# Answer only once the child is running, so that the trajectory cannot end (and
# the group be killed) before the child exists, however slow the machine.
import os, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
sys.stdin.readline()
print(json.dumps({"protocol": "agentsim/1", "action": "call", "tool": "authenticate", "args": {}}), flush=True)
sys.stdin.readline()
import time
time.sleep(600)
