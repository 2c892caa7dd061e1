"""The peer comparison's reference trajectory as a SimPy model.

The same model as benches/peer/reference.ron run with benches/peer/stack.ron
(README.md in this folder lists the correspondence line by line): a customer asks
for a refund; the agent looks the order up, asks the customer to confirm, issues
the refund and tells the customer. Every tool call fails with 503 with
probability 0.2; the refund API is a token bucket (2 tokens, one more every
15 s); a retry layer makes up to 4 attempts with exponential backoff and full
jitter, waiting at least Retry-After; the planner itself tries again after a
failure the layer gave up on; the run may send at most 6 tool calls.

Usage: python reference_simpy.py N [SEED]  -> prints "successes n seconds virtual_ms cpu_seconds"
"""

import random
import sys
import time

import simpy

P_503 = 0.2
TOOL_CALLS_MAX = 6
ATTEMPTS_MAX = 4
BASE_MS = 200
CAP_MS = 20_000
REFUND_CAPACITY = 2
REFUND_REFILL_MS = 15_000


class BudgetExhausted(Exception):
    """The run sent its last allowed tool call."""


class Bucket:
    """A token bucket, full at the first call, refilled one token per period."""

    def __init__(self, capacity, refill_ms):
        self.capacity, self.refill_ms = capacity, refill_ms
        self.tokens, self.refilled_at_ms = None, 0

    def take(self, now_ms):
        """None when a token was taken, else the Retry-After in ms."""
        if self.tokens is None:
            self.tokens, self.refilled_at_ms = self.capacity, now_ms
        earned = (now_ms - self.refilled_at_ms) // self.refill_ms
        if earned > 0:
            self.tokens = min(self.tokens + earned, self.capacity)
            self.refilled_at_ms += earned * self.refill_ms
        if self.tokens == 0:
            return self.refilled_at_ms + self.refill_ms - now_ms
        self.tokens -= 1
        return None


class Trajectory:
    def __init__(self, env, rng):
        self.env, self.rng = env, rng
        self.calls = 0
        self.refund_bucket = Bucket(REFUND_CAPACITY, REFUND_REFILL_MS)

    def think(self):
        """One model turn."""
        yield self.env.timeout(self.rng.randint(600, 2_400))

    def attempt(self, tool):
        """One tool call: (ok, retry_after_ms)."""
        if self.calls >= TOOL_CALLS_MAX:
            raise BudgetExhausted
        self.calls += 1
        failed_503 = self.rng.random() < P_503  # drawn for every call, as agentsim does
        retry_after = self.refund_bucket.take(self.env.now) if tool == "issue_refund" else None
        yield self.env.timeout(self.rng.randint(50, 250))
        return (retry_after is None and not failed_503), retry_after

    def call(self, tool):
        """A call through the retry layer, and the planner's own retries after it."""
        failures = 0
        while True:
            for retry in range(ATTEMPTS_MAX):
                ok, retry_after = yield from self.attempt(tool)
                if ok:
                    return
                if retry == ATTEMPTS_MAX - 1:
                    break
                ceiling = min(CAP_MS, BASE_MS * 2**retry)
                wait = self.rng.randint(0, ceiling)
                if retry_after is not None:
                    wait = max(wait, retry_after)
                yield self.env.timeout(wait)
            # The layer gave up: the planner sees the error, thinks, backs off.
            failures += 1
            yield from self.think()
            yield self.env.timeout(min(1_000 * 2 ** min(failures - 1, 5), 30_000))

    def run(self):
        yield from self.think()
        yield from self.call("lookup_order")
        yield from self.think()
        yield from self.call("send_message")  # ask the customer to confirm
        # The customer starts answering when the message arrives, while the agent
        # takes its turn (to decide to wait).
        answer_at_ms = self.env.now + self.rng.randint(4_000, 30_000)
        yield from self.think()
        yield self.env.timeout(max(0, answer_at_ms - self.env.now))
        yield from self.think()
        yield from self.call("issue_refund")
        yield from self.think()
        yield from self.call("send_message")  # tell the customer
        yield from self.think()
        return True


def one(rng):
    env = simpy.Environment()
    trajectory = Trajectory(env, rng)

    def process():
        try:
            return (yield from trajectory.run())
        except BudgetExhausted:
            return False

    proc = env.process(process())
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
