# Answers with something that is not an action.
import sys
sys.stdin.readline()
print("I think I should look up the order first.", flush=True)
