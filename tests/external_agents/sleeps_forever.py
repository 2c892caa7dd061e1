# Never reads its stdin and never answers: only a signal ends it. (Used only by
# the test that interrupts `agentsim run`, so the name is unique to it.)
import time
time.sleep(3600)
