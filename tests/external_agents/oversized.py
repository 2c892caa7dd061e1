# Answers with a line far longer than agentsim accepts.
import sys
sys.stdin.readline()
sys.stdout.write('{"protocol":"agentsim/1","action":"idle","pad":"' + "x" * (3 << 20) + '"}\n')
sys.stdout.flush()
