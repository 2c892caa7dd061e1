# Reads an observation and never answers.
import sys, time
sys.stdin.readline()
time.sleep(3600)
