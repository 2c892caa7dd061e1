# Ignores SIGTERM, reads an observation and never answers: only SIGKILL ends it.
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.readline()
time.sleep(3600)
