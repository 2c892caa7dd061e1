"""The peer comparison's 10-call model as a SimPy model (benches/peer/README.md).

Ten tool calls in sequence; each attempt fails with 503 with probability 0.2
and takes Uniform(50, 250) ms either way; a failed attempt is retried up to 3
times after a wait uniform in [0, min(5000, 200 * 2^(n-1))] ms before retry n
(exponential backoff with full jitter); a call whose 4 attempts all fail ends
the trajectory, which fails. Every agent decision is one model turn of
Uniform(600, 2400) ms: reading the opening, each call's result, and the
failure it gives up on. A trajectory succeeds when all ten calls succeed.

One process (the agent) per trajectory, a timeout per think, latency and
backoff, a fresh environment per trajectory.

Usage: python ten_calls_simpy.py N [SEED]  -> prints "successes n seconds virtual_ms cpu_seconds"
"""

import random
import sys
import time

import simpy

CALLS = 10
P_503 = 0.2
ATTEMPTS_MAX = 4
BASE_MS = 200
CAP_MS = 5_000
LATENCY_MS = (50, 250)
THINK_MS = (600, 2_400)


def agent(env, rng):
    """One trajectory's agent: True when all ten calls succeeded."""
    yield env.timeout(rng.randint(*THINK_MS))  # reads the opening
    for _ in range(CALLS):
        attempt = 1
        while True:
            failed = rng.random() < P_503
            yield env.timeout(rng.randint(*LATENCY_MS))
            if not failed:
                break
            if attempt == ATTEMPTS_MAX:
                yield env.timeout(rng.randint(*THINK_MS))  # reads the failure, gives up
                return False
            yield env.timeout(rng.randint(0, min(CAP_MS, BASE_MS * 2 ** (attempt - 1))))
            attempt += 1
        yield env.timeout(rng.randint(*THINK_MS))  # reads the result, decides
    return True


def one(rng):
    env = simpy.Environment()
    proc = env.process(agent(env, rng))
    env.run()
    return proc.value, env.now


def main():
    n = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    start = time.perf_counter()
    start_cpu = time.process_time()
    successes = 0
    virtual_ms = 0
    for _ in range(n):
        ok, end_ms = one(rng)
        successes += ok
        virtual_ms += end_ms
    elapsed_s = time.perf_counter() - start
    cpu_s = time.process_time() - start_cpu
    print(successes, n, f"{elapsed_s:.6f}", virtual_ms, f"{cpu_s:.6f}")


if __name__ == "__main__":
    main()
